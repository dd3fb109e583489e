"""Newton's two layouts side by side: training rows gathered, or indices into sparse data.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_layouts.py [--splits 100] [CONFIG...]

For the smallest and the largest m of each config's grid, runs `engine.run_block` on the same
splits with logistic regression's training sets gathered (`layouts.Gathered`) and sparse
(`layouts.Sparse`), alternately, and prints the best of `--repeats` times of each and which
one the engine's rule picks (sparse for designs of >= `SPARSE_MIN_WIDTH` columns with at most
`SPARSE_DENSITY` of them nonzero: `LogisticRegression.shared`). The rule's thresholds come
from these figures. Both layouts fit the same models; only rounding differs, so the numbers
are not compared here (tests/models/logistic/test_newton.py does).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from genvdis.experiment.engine import run_block
from genvdis.models.logistic import binary as logistic

from _setup import load

CONFIGS = [
    "configs/adult-discrete.yaml",
    "configs/breast-cancer.yaml",
    "configs/lymphography.yaml",
    "configs/promoters.yaml",
    "configs/voting.yaml",
    "configs/sonar.yaml",
]
FORCED = {"gathered": (np.inf, 0.0), "sparse": (0, 1.0)}  # (SPARSE_MIN_WIDTH, SPARSE_DENSITY)


def compare(path: str, splits: int, repeats: int) -> None:
    config, _, encoded, fitted, protocol = load(path)
    lr = next(f for f in fitted if isinstance(f, logistic.LogisticRegression))
    picked = "sparse" if lr.shared(encoded.reference, encoded.y).sparse else "gathered"
    width = encoded.reference.shape[1] + 1
    density = (np.count_nonzero(encoded.reference) + len(encoded.y)) / (len(encoded.y) * width)
    rule = logistic.SPARSE_MIN_WIDTH, logistic.SPARSE_DENSITY
    run_block(encoded, fitted, config.size_grid[0], range(1), protocol)  # compile, warm up
    for m in sorted({config.size_grid[0], config.size_grid[-1]}):
        seconds = dict.fromkeys(FORCED, float("inf"))
        try:
            for layout in list(FORCED) * repeats:  # alternately
                logistic.SPARSE_MIN_WIDTH, logistic.SPARSE_DENSITY = FORCED[layout]
                started = time.perf_counter()
                run_block(encoded, fitted, m, range(splits), protocol)
                seconds[layout] = min(seconds[layout], time.perf_counter() - started)
        finally:
            logistic.SPARSE_MIN_WIDTH, logistic.SPARSE_DENSITY = rule
        gathered, sparse = seconds["gathered"], seconds["sparse"]
        print(
            f"{config.name:16} width {width:3d} nonzero {density:4.0%}  m {m:5d}  "
            f"gathered {gathered * 1e3:7.1f} ms  sparse {sparse * 1e3:7.1f} ms  "
            f"sparse/gathered {sparse / gathered:5.2f}  rule: {picked}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=100, help="splits per m (default 100)")
    parser.add_argument("--repeats", type=int, default=3, help="times of each (default 3)")
    parser.add_argument("configs", nargs="*", default=CONFIGS, help="configs (default: 6)")
    args = parser.parse_args()
    with threadpool_limits(1):
        for path in args.configs:
            compare(path, args.splits, args.repeats)


if __name__ == "__main__":
    main()
