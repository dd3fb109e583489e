"""The ten-digit example (multinomial logistic regression), end to end: this checkout against
another genvdis, side by side, as `bench_adult.py` does (same options), with this example, 200
splits per m and two workers as defaults.

    git worktree add /tmp/genvdis-before 75f5d91    # 0.6.0 (6b45a30: before Newton-CG)
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_softmax.py --against /tmp/genvdis-before \
        [--splits 200] [--jobs 2] [--repeat 3] [--fits] [CONFIG]

It prints the minimum over the interleaved rounds of the wall and CPU seconds of `genvdis run`,
their ratios, and whether errors.csv stayed byte for byte the same (else, per model and m, the
splits that changed and the move of the mean error in standard errors).

With --fits it times only the logistic-regression fits (`fit_batch`, one thread, in a fresh
process per checkout and round, the same splits): the CPU milliseconds a training set at each
m, the minimum over the rounds, and the ratio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import bench_adult

CONFIG = "configs/examples/optdigits-10class.yaml"


def _fit_times(config: str, splits: int) -> dict[int, float]:
    """CPU ms a training set of the config's logistic regression at each m, with the genvdis
    this process imports (a child process of `_compare_fits`)."""
    from genvdis.experiment import splits as drawing
    from genvdis.models.logistic.binary import LogisticRegression

    from _setup import load

    setup = load(config)
    model = next(m for m in setup.models if isinstance(m, LogisticRegression))
    Z, y, out = setup.encoded.reference, setup.encoded.y, {}
    for m in setup.config.size_grid:
        idx = drawing.draw_training_block(
            y, m, setup.protocol.seed, range(splits), setup.protocol.policy
        )
        start = time.process_time()
        model.fit_batch(Z, y, idx)
        out[m] = (time.process_time() - start) * 1000 / splits
    return out


def _compare_fits(config: str, splits: int, repeat: int, against: Path | None) -> None:
    """Each checkout's `_fit_times` in fresh processes, alternating; min per m, and ratios."""
    sides = {"this checkout": None} | ({"--against": against.resolve()} if against else {})
    best: dict[str, dict[str, float]] = {label: {} for label in sides}
    for _ in range(repeat):
        for label, code in sides.items():
            env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
            if code is not None:
                env["PYTHONPATH"] = str(code)
            command = [sys.executable, __file__, config, "--splits", str(splits), "--fit-times"]
            times = json.loads(subprocess.run(command, env=env, capture_output=True, check=True,
                                              text=True).stdout)  # fmt: skip
            for m, ms in times.items():
                best[label][m] = min(best[label].get(m, float("inf")), ms)
    print(f"{config}: logistic-regression fits, {splits} splits per m, min of {repeat} rounds,")
    print("CPU ms a training set (one thread)")
    for label, times in best.items():
        cells = "  ".join(f"{m}: {ms:6.2f}" for m, ms in times.items())
        print(f"  {label:14} total {sum(times.values()):7.2f}   {cells}")
    if against is not None:
        mine, theirs = best["this checkout"], best["--against"]
        ratios = "  ".join(f"{m}: {theirs[m] / mine[m]:.2f}" for m in mine)
        print(f"  ratio          total {sum(theirs.values()) / sum(mine.values()):.2f}x  {ratios}")


if __name__ == "__main__":
    if "--fit-times" in sys.argv or "--fits" in sys.argv:
        import argparse

        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("config", nargs="?", default=CONFIG)
        parser.add_argument("--against", type=Path)
        parser.add_argument("--splits", type=int, default=100)
        parser.add_argument("--repeat", type=int, default=3)
        parser.add_argument("--fits", action="store_true")
        parser.add_argument("--fit-times", action="store_true", help=argparse.SUPPRESS)
        args = parser.parse_args()
        if args.fit_times:
            print(json.dumps(_fit_times(args.config, args.splits)))
        else:
            _compare_fits(args.config, args.splits, args.repeat, args.against)
    else:
        bench_adult.main(CONFIG, splits=200, jobs=2)
