"""Where the engine's time goes: each stage's share of a run, from cProfile.

    GENVDIS_MIRROR=../shared/uci python benchmarks/profile_engine.py [--splits 250] [CONFIG...]

Runs every m of each config's grid through `engine.run_block` (one process, as one worker) and
prints, per config, the seconds spent in each stage: drawing the splits, naive Bayes, the
logistic-regression Newton fits, the separability proofs (certificates and LPs), the
version-space sampler, scoring the test rows, and the rest (bookkeeping). Profiling slows the
Python-level parts a little; the shares, not the totals, are the point.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

from threadpoolctl import threadpool_limits

from genvdis.experiment.engine import run_block
from genvdis.experiment.planning import plan_tasks

from _setup import load

CONFIGS = ["configs/pima.yaml", "configs/adult-continuous.yaml"]
# stage -> (file suffix, function name) whose cumulative time is the stage's
STAGES = {
    "draw splits": [("splits.py", "_draw")],
    "naive Bayes": [("naive_bayes.py", "class_sums")],
    "LR: gathering rows": [
        ("binary.py", "_rows_feature_major"),
        ("binary.py", "_standard_rows"),
    ],
    "LR: Newton": [("_newton.py", "newton_logistic")],
    "separability proofs": [
        ("hyperplanes.py", "prove_inseparable"),
        ("hyperplanes.py", "max_margin"),
        ("hyperplanes.py", "has_conflicting_duplicates"),
    ],
    "sampler": [("sampler.py", "draw")],  # sample_version_space calls it too
    "scoring": [("scoring.py", "count_errors")],
}


def profile(path: str, splits: int) -> None:
    config, _, encoded, models, protocol = load(path)
    tasks = plan_tasks(config.size_grid, splits, None, encoded.width, len(encoded.y))
    run_block(encoded, models, config.size_grid[0], range(1), protocol)  # compile and warm up
    profiler = cProfile.Profile()
    with threadpool_limits(1):
        profiler.enable()
        for m, block in tasks:
            run_block(encoded, models, m, block, protocol)
        profiler.disable()
    stats = pstats.Stats(profiler).stats
    total = max(cum for (_, _, name), (_, _, _, cum, _) in stats.items() if name == "run_block")
    print(f"{config.name}: {total:.2f} s for {len(config.size_grid)} sizes x {splits} splits")
    accounted = 0.0
    for stage, functions in STAGES.items():
        seconds = sum(
            cum
            for (file, _, name), (_, _, _, cum, _) in stats.items()
            if any(file.endswith(suffix) and name == fn for suffix, fn in functions)
        )
        accounted += seconds
        print(f"  {stage:22} {seconds:7.2f} s  {seconds / total:6.1%}")
    rest = total - accounted
    print(f"  {'the rest':22} {rest:7.2f} s  {rest / total:6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=250, help="splits per m (default 250)")
    parser.add_argument("configs", nargs="*", default=CONFIGS, help="configs (default: 2)")
    args = parser.parse_args()
    for path in args.configs:
        profile(path, args.splits)


if __name__ == "__main__":
    main()
