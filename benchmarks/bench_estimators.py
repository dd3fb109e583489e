"""The estimator path's overhead: `engine.run_block` on an estimator entry vs. a bare per-split
loop of the same estimator on the same splits, side by side in one process.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_estimators.py [--splits 100] [--repeat 5]
        [CONFIG...]

For each estimator entry of each config (default: configs/examples/gnb-vs-svm.yaml) and the
engine's blocks of splits at every m:
- bare: what a user would write: the block's training rows drawn (`splits`), then per split a
  fresh estimator (with the split's random_state if the engine gives one), fit on the
  training rows, predict on the others, wrong predictions counted;
- genvdis: `engine.run_block` with the entry alone: the same, plus the warnings captured and
  counted, single-threaded BLAS and the block's rows assembled into a table, minus
  scikit-learn's parameter and finiteness checks after each block's first split
  (`estimators.checked_once`): the ratio can be below 1.
Each side runs `--repeat` times, alternating, and the minimum of its CPU time is kept
(time.process_time: this process's own seconds, which other processes on a shared machine
disturb far less than wall-clock time; BLAS is single-threaded on both sides). It prints both
times and the ratio, checks the error counts are equal, and exits 1 if the overhead is above
10%.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from genvdis._runtime.tuning import one_thread
from genvdis.config.sections import EstimatorSpec
from genvdis.experiment import splits
from genvdis.experiment.engine import run_block
from genvdis.experiment.planning import plan_tasks
from genvdis.models import estimators

from _setup import load

CONFIGS = ["configs/examples/gnb-vs-svm.yaml"]
BOUND = 1.10


def bare_loop(model, encoded, protocol, plan) -> list[int]:
    """Every split's wrong predictions, the way one would write it by hand."""
    X, y, counts = model.design(encoded.onehot), encoded.y, []
    for m, block in plan:
        train = splits.draw_training_block(y, m, protocol.seed, block, protocol.policy)
        states = estimators.random_states(protocol.seed, m, block)
        for s in range(len(block)):
            test = np.ones(len(y), dtype=bool)
            test[train[s]] = False
            fitted = model.make(states[s]).fit(X[train[s]], y[train[s]])
            counts.append(int(np.count_nonzero(fitted.predict(X[test]) != y[test])))
    return counts


def engine_path(model, encoded, protocol, plan) -> list[int]:
    return [
        e for m, block in plan for e in run_block(encoded, [model], m, block, protocol)["errors"]
    ]


def compare(path: str, n_splits: int, repeat: int) -> bool:
    setup = load(path)
    config, encoded = setup.config, setup.encoded
    width = encoded.width
    plan = plan_tasks(config.size_grid, n_splits, config.block_size, width, len(encoded.y))
    ok = True
    for spec in [s for s in config.models if isinstance(s, EstimatorSpec)]:
        model = estimators.build(spec, setup.data.layout, estimators.allowed_prefixes())
        times = {"bare": [], "genvdis": []}
        answers = {}
        for _ in range(repeat):
            for side, run in (("bare", bare_loop), ("genvdis", engine_path)):
                with one_thread(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the bare loop's own warnings
                    started = time.process_time()
                    answers[side] = run(model, encoded, setup.protocol, plan)
                    times[side].append(time.process_time() - started)
        bare, ours = min(times["bare"]), min(times["genvdis"])
        same = answers["bare"] == answers["genvdis"]
        ratio = ours / bare
        ok &= same and ratio <= BOUND
        print(
            f"{config.name:>12} {spec.name:>8} ({spec.estimator}): {n_splits} splits x "
            f"{len(config.size_grid)} sizes  bare {bare:7.3f} s  genvdis {ours:7.3f} s  "
            f"ratio {ratio:5.3f}  errors {'identical' if same else 'DIFFER'}"
        )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", default=CONFIGS)
    parser.add_argument("--splits", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each side; min kept")
    args = parser.parse_args()
    ok = all([compare(path, args.splits, args.repeat) for path in args.configs])
    print(f"overhead bound: ratio <= {BOUND:.2f}: {'met' if ok else 'NOT met'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
