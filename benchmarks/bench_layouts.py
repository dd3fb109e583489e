"""Newton's two dense layouts side by side, where the engine has to choose between them.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_layouts.py [--splits 250] [CONFIG...]

For every m of each config's grid that covers at least `MASKED_FRACTION` of the data, runs
`engine.run_block` on the same splits with the training sets gathered (`newton.Gathered`) and
masked (`newton.Masked`), alternately, and prints the best of `--repeats` times of each and
which one the engine's rule (`LogisticRegression._layout`) picks. The rule's width threshold,
`MASKED_MIN_WIDTH`, comes from these figures. Both layouts fit the same models; only rounding
differs, so the numbers are not compared here (tests/test_models.py does).
"""

from __future__ import annotations

import argparse
import time

from threadpoolctl import threadpool_limits

from genvdis import models
from genvdis.engine import run_block

from _setup import load

CONFIGS = [
    "configs/liver.yaml",
    "configs/pima.yaml",
    "configs/boston.yaml",
    "configs/ionosphere.yaml",
    "configs/optdigits-2v3.yaml",
]


def compare(path: str, splits: int, repeats: int) -> None:
    config, _, encoded, fitted, protocol = load(path)
    logistic = next(f for f in fitted if isinstance(f, models.LogisticRegression))
    n, width = len(encoded.y), encoded.width
    rule, chosen = models.MASKED_FRACTION, models.MASKED_MIN_WIDTH
    run_block(encoded, fitted, config.size_grid[0], range(1), protocol)  # compile, warm up
    for m in [m for m in config.size_grid if m >= rule * n]:
        seconds = {"gathered": float("inf"), "masked": float("inf")}
        for layout, fraction in (("gathered", 2.0), ("masked", 0.0)) * repeats:  # alternately
            models.MASKED_FRACTION, models.MASKED_MIN_WIDTH = fraction, 0
            started = time.perf_counter()
            run_block(encoded, fitted, m, range(splits), protocol)
            seconds[layout] = min(seconds[layout], time.perf_counter() - started)
        models.MASKED_FRACTION, models.MASKED_MIN_WIDTH = rule, chosen
        picked = logistic._layout(n, m, width)
        gathered, masked = seconds["gathered"], seconds["masked"]
        print(
            f"{config.name:16} width {width:3d}  m {m:5d} ({m / n:.2f} n)  "
            f"gathered {gathered * 1e3:7.1f} ms  masked {masked * 1e3:7.1f} ms  "
            f"masked/gathered {masked / gathered:5.2f}  rule: {picked}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=250, help="splits per m (default 250)")
    parser.add_argument("--repeats", type=int, default=5, help="times of each (default 5)")
    parser.add_argument("configs", nargs="*", default=CONFIGS, help="configs (default: 5)")
    args = parser.parse_args()
    with threadpool_limits(1):
        for path in args.configs:
            compare(path, args.splits, args.repeats)


if __name__ == "__main__":
    main()
