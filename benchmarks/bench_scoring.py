"""Scoring's two first passes side by side: the BLAS product over every column, or sums over
each row's nonzeros (`scoring.SparseRows`).

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_scoring.py [--splits 200] [CONFIG...]

Fits every model of each config on the same splits, at the smallest and the largest m of its
grid (`engine.run_block`, whose classifiers are kept), then counts their test errors with
`scoring.count_errors` both ways, alternately, best of `--repeats`, one thread, and checks that
the counts are equal (they must be: every value either pass cannot decide is decided in double
precision). The density rule (`SparseRows.MAX_DENSITY`) comes from these figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from genvdis._runtime import tuning
from genvdis.experiment import engine, scoring

from _setup import load

CONFIGS = [
    "configs/adult-discrete.yaml",
    "configs/breast-cancer.yaml",
    "configs/lymphography.yaml",
    "configs/promoters.yaml",
    "configs/voting.yaml",
    "configs/sick.yaml",
]


def classifiers_of(path: str, splits: int) -> tuple[str, scoring.EncodedData, list]:
    """The config's data and, per m, the classifiers and training rows its block scored."""
    config, _, encoded, models, protocol = load(path)
    kept = []
    count = engine.count_errors

    def keep(data, classifiers, train, test_mask=None, ties=None):
        kept.append((classifiers, train, test_mask, ties))
        return count(data, classifiers, train, test_mask, ties)

    engine.count_errors = keep
    try:
        for m in sorted({config.size_grid[0], config.size_grid[-1]}):
            engine.run_block(encoded, models, m, range(splits), protocol)
    finally:
        engine.count_errors = count
    return config.name, encoded, kept


def compare(path: str, splits: int, repeats: int) -> None:
    name, encoded, kept = classifiers_of(path, splits)
    if encoded.sparse is None:
        every = scoring.SparseRows.of_any(encoded.scoring)
        sparse_data, dense_data = dataclasses.replace(encoded, sparse=every), encoded
    else:
        sparse_data, dense_data = encoded, dataclasses.replace(encoded, sparse=None)
    density = sparse_data.sparse.column.size / encoded.scoring.size
    rule = "sparse" if encoded.sparse is not None else "dense"
    for classifiers, train, test_mask, ties in kept:
        seconds = {"dense": np.inf, "sparse": np.inf}
        counts = {}
        with tuning.one_thread():
            for way, data in [("dense", dense_data), ("sparse", sparse_data)] * repeats:
                started = time.perf_counter()
                counts[way] = scoring.count_errors(data, classifiers, train, test_mask, ties)
                seconds[way] = min(seconds[way], time.perf_counter() - started)
        same = np.array_equal(counts["dense"], counts["sparse"])
        print(
            f"{name:16} nonzero {density:4.0%}  m {train.shape[1]:5d}  K {classifiers.shape[0]:4d}"
            f"  dense {seconds['dense'] * 1e3:7.1f} ms  sparse {seconds['sparse'] * 1e3:7.1f} ms"
            f"  dense/sparse {seconds['dense'] / seconds['sparse']:5.2f}  rule: {rule}"
            f"  counts {'equal' if same else 'DIFFER'}"
        )
        if not same:
            raise SystemExit(f"{name}: the two passes' counts differ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=200, help="splits per m (default 200)")
    parser.add_argument("--repeats", type=int, default=5, help="best of (default 5)")
    parser.add_argument("configs", nargs="*", default=CONFIGS, help="configs (default: 6)")
    args = parser.parse_args()
    for path in args.configs:
        compare(path, args.splits, args.repeats)


if __name__ == "__main__":
    main()
