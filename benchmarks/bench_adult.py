"""adult (discrete), end to end: this checkout against another genvdis, side by side.

    git worktree add /tmp/genvdis-before a2fe8d4
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_adult.py --against /tmp/genvdis-before \
        [--splits 1000] [--repeat 3] [--iterations] [CONFIG]

Each round runs `genvdis run CONFIG --splits S --jobs J` (defaults: adult-discrete, 1 job) once
with each code, in fresh processes and fresh output folders, the two alternating so that the
machine's load drifts over both alike; the other checkout is imported in this one's place
through PYTHONPATH (same interpreter and libraries). It prints the minimum over the rounds of
the wall and CPU seconds (CPU is steadier when other work shares the machine), their ratios,
and then what changed in errors.csv: for each model and m whose errors differ, the splits
that changed and the shift of the mean error in standard errors of the mean. Without
--against it times this checkout alone.

With --iterations it times nothing: it prints, for each m, the Newton iterations a split of
the logistic-regression fits (separable splits' refits included) of each checkout, counted
in a fresh process per checkout on the same splits.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_startup import _genvdis, _wall
from compare_results import shifts

ROOT = Path(__file__).resolve().parent.parent


def _timed(
    config: str, splits: int, out: Path, code: Path | None, jobs: int = 1
) -> tuple[float, float]:
    """`genvdis run` with this checkout's code, or with `code`'s imported in its place."""
    saved = os.environ.get("PYTHONPATH")
    if code is not None:
        os.environ["PYTHONPATH"] = str(code)
    try:
        return _wall(_genvdis(config, splits, jobs, out))
    finally:
        os.environ.pop("PYTHONPATH", None)
        if saved is not None:
            os.environ["PYTHONPATH"] = saved


def _count_iterations(config: str, splits: int) -> dict[int, float]:
    """Newton iterations a split per m of the config's logistic regression, with the genvdis
    this process imports (run in a child process: see `_iterations`)."""
    from genvdis.experiment import splits as drawing
    from genvdis.models.logistic import _newton as newton
    from genvdis.models.logistic.binary import LogisticRegression

    from _setup import load

    setup = load(config)
    model = next(m for m in setup.models if isinstance(m, LogisticRegression))
    counted, count = newton._newton_update, [0]

    def counting(active, penalty):
        count[0] += active.coef.shape[0]
        return counted(active, penalty)

    newton._newton_update = counting
    out = {}
    for m in setup.config.size_grid:
        idx = drawing.draw_training_block(
            setup.encoded.y, m, setup.protocol.seed, range(splits), setup.protocol.policy
        )
        count[0] = 0
        model.fit_batch(setup.encoded.reference, setup.encoded.y, idx)
        out[m] = count[0] / splits
    return out


def _iterations(config: str, splits: int, code: Path | None) -> dict[int, float]:
    """`_count_iterations` in a child process that imports `code`'s genvdis (or this one's)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(code)] * (code is not None) + [str(ROOT / "benchmarks")]
    ))  # fmt: skip
    child = [sys.executable, __file__, config, "--splits", str(splits), "--count-iterations"]
    answer = subprocess.run(child, env=env, check=True, capture_output=True, text=True)
    return {int(m): n for m, n in json.loads(answer.stdout.splitlines()[-1]).items()}


def _print_iterations(config: str, splits: int, sides: dict[str, Path | None]) -> None:
    counts = {label: _iterations(config, splits, code) for label, code in sides.items()}
    print(f"{config}: Newton iterations a split, {splits} splits per m")
    print("      m  " + "  ".join(f"{label:>14}" for label in counts))
    for m in next(iter(counts.values())):
        print(f"  {m:5}  " + "  ".join(f"{c[m]:14.2f}" for c in counts.values()))


def _changes(before: Path, after: Path) -> list[str]:
    """Lines saying, per model and m, how many splits' errors changed and by how many
    standard errors of the mean the mean error moved (`compare_results.shifts`)."""
    table = shifts(before, after)
    return [
        f"  {row.model:20} m = {row.m:5}  {row.changed:4} splits changed (by <= {row.most} "
        f"errors)  mean {row.before:.5f} -> {row.after:.5f}  ({row.shift_se:+.3f} SE)"
        for row in table[table["changed"] > 0].itertuples()
    ]


def main(config: str = "configs/adult-discrete.yaml", splits: int = 1000, jobs: int = 1) -> None:
    """The comparison; bench_softmax.py runs it with its own defaults."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=config)
    parser.add_argument("--against", type=Path, help="the root of another genvdis checkout")
    parser.add_argument("--splits", type=int, default=splits, help=f"per m (default {splits})")
    parser.add_argument("--jobs", type=int, default=jobs, help=f"workers (default {jobs})")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, min taken (default 3)")
    parser.add_argument("--iterations", action="store_true", help="count Newton's iterations")
    parser.add_argument("--count-iterations", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count_iterations:  # the child process of `_iterations`
        print(json.dumps(_count_iterations(args.config, args.splits)))
        return
    sides = {"this checkout": None}
    if args.against is not None:
        sides["--against"] = args.against.resolve()
    if args.iterations:
        _print_iterations(args.config, args.splits, sides)
        return
    name = Path(args.config).stem
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for label, code in sides.items():  # data and numba caches, untimed
            _timed(args.config, 10, scratch / f"warm-{len(label)}", code, args.jobs)
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in sides}
        for n in range(args.repeat):
            for k, (label, code) in enumerate(sides.items()):
                out = scratch / f"{k}-{n}"
                times[label].append(_timed(args.config, args.splits, out, code, args.jobs))
        best = {label: [min(r[i] for r in runs) for i in (0, 1)] for label, runs in times.items()}
        print(f"{args.config}, {args.splits} splits per m, --jobs {args.jobs}", end=", ")
        print(f"min of {args.repeat} rounds")
        for label, (wall, cpu) in best.items():
            print(f"  {label:14} wall {wall:7.2f} s  cpu {cpu:7.2f} s")
        if args.against is not None:
            ratio = [best["--against"][i] / best["this checkout"][i] for i in (0, 1)]
            print(f"  this checkout: {ratio[0]:.2f}x as fast (wall), {ratio[1]:.2f}x (cpu)")
            before, after = scratch / "1-0" / name, scratch / "0-0" / name
            if filecmp.cmp(before / "errors.csv", after / "errors.csv", shallow=False):
                print("errors.csv: byte for byte the same")
            else:
                print("errors.csv changed:", *_changes(before, after), sep="\n")


if __name__ == "__main__":
    main()
