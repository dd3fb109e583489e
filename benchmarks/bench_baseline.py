"""What the majority-class baseline every run adds costs the engine, side by side in one run.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_baseline.py [--splits 50] [CONFIG...]

For each config, the engine (`engine.run_block`, one process, like `--jobs 1`) runs the config's
whole grid at S splits per m twice, interleaved, REPEATS times: with the config's models, and
with them plus the baseline (`engine.with_baseline`, as `run_experiment` adds it). It prints
the minimum CPU seconds of each and their ratio, and checks that the other models' rows are
the same numbers either way. On a shared machine that ratio moves by several percent from run
to run, so it also prints the baseline's own work over the grid, timed alone (its fit and its
count, `majority.majority_errors`, on the same splits) as a share of the plain run's.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from genvdis._runtime.streams import stream_keys
from genvdis.experiment.engine import run_block, with_baseline
from genvdis.experiment.splits import draw_training_block
from genvdis.models.majority import majority_errors

from _setup import load

CONFIGS = ["configs/pima.yaml", "configs/adult-discrete.yaml", "configs/sick.yaml"]
REPEATS = 5


def grid_cpu(setup, models, splits: int) -> tuple[float, pd.DataFrame]:
    """CPU seconds of the engine over the config's grid, and its rows."""
    started = time.process_time()
    frames = [
        run_block(setup.encoded, models, m, range(splits), setup.protocol)
        for m in setup.config.size_grid
    ]
    return time.process_time() - started, pd.concat(frames, ignore_index=True)


def baseline_cpu(setup, baseline, splits: int) -> float:
    """CPU seconds of the baseline's own work over the grid: its fit and its count."""
    y, config, block = setup.encoded.y, setup.config, range(splits)
    seconds = 0.0
    for m in config.size_grid:
        train = draw_training_block(y, m, config.seed, block, config.split)
        keys = stream_keys(config.seed, m, block, stream=1)
        started = time.process_time()
        baseline.fit_batch(setup.encoded.onehot, y, train, keys)
        majority_errors(y, train, None)
        seconds += time.process_time() - started
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", default=CONFIGS)
    parser.add_argument("--splits", type=int, default=50)
    args = parser.parse_args()
    print(f"CPU s over each grid at {args.splits} splits per m, min of {REPEATS} interleaved")
    print(f"{'config':<28}{'models':>10}{'+ baseline':>12}{'ratio':>8}{'its own':>10}{'share':>8}")
    for path in args.configs:
        setup = load(path)
        plus = with_baseline(setup.models, setup.data, {})
        m0 = setup.config.size_grid[0]
        run_block(setup.encoded, plus, m0, range(1), setup.protocol)  # compile, warm up
        plain_s, plus_s, own_s = [], [], []
        for _ in range(REPEATS):
            own_s.append(baseline_cpu(setup, plus[-1], args.splits))
            seconds, plain = grid_cpu(setup, setup.models, args.splits)
            plain_s.append(seconds)
            seconds, added = grid_cpu(setup, plus, args.splits)
            plus_s.append(seconds)
        others = added[added["model"] != "majority"].reset_index(drop=True)
        pd.testing.assert_frame_equal(others, plain)
        a, b, own = min(plain_s), min(plus_s), min(own_s)
        print(
            f"{setup.config.name:<28}{a:>10.2f}{b:>12.2f}{b / a:>8.3f}{own:>10.3f}{own / a:>8.1%}"
        )


if __name__ == "__main__":
    main()
