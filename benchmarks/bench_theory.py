"""`genvdis theory configs/theory-*.yaml` (what `make theory` runs), this checkout against
another one (--against), side by side, in fresh processes: a run into an empty folder, then
the same command again on the finished folder (everything up to date).

    git worktree add ../theory-base 75f5d91
    python benchmarks/bench_theory.py --against ../theory-base [--repeat 2] [--jobs 2]

Each side keeps its own numba cache (NUMBA_CACHE_DIR, in the scratch folder) for the whole
benchmark: the first round compiles the kernels, so it is left out of the figures unless
--repeat is 1, and later rounds time runs from a warm cache, as `make all` runs theory after
the panels. Every figure is the minimum over the timed rounds of the wall time (and of the
CPU time of the processes), the rounds interleaving both sides so that the machine's load
drifts over both alike. At the end both sides' last folders are compared file by file
(`bench_post._differences`); a manifest.json in a theory folder itself (not in its n<...>
runs) is listed apart, as the older checkouts write none.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_post import HERE, _differences, _time  # noqa: E402

STEPS = ("run", "rerun")


def _command(tree: Path, folder: Path, jobs: int) -> list[str]:
    configs = sorted(str(p) for p in (tree / "configs").glob("theory-*.yaml"))
    cli = [sys.executable, "-m", "genvdis.cli", "theory", *configs]
    return [*cli, "--jobs", str(jobs), "--quiet", "--out", str(folder)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, the first one warms up")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sides = {"this": HERE, "against": args.against.resolve()}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-theory-") as scratch:
        for round_ in range(args.repeat):
            for side, tree in sides.items():
                os.environ["NUMBA_CACHE_DIR"] = str(Path(scratch) / f"numba-{side}")
                folder = Path(scratch) / side
                shutil.rmtree(folder, ignore_errors=True)
                for step in STEPS:
                    wall, cpu = _time([_command(tree, folder, args.jobs)], tree, Path(scratch))
                    print(f"  {side:8} {step:6} {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
                    if round_ > 0 or args.repeat == 1:
                        old = best.get((side, step), (float("inf"), float("inf")))
                        best[(side, step)] = (min(old[0], wall), min(old[1], cpu))
        changed = _differences(Path(scratch) / "this", Path(scratch) / "against")
        mine = Path(scratch) / "this"
        new = [p for p in changed if Path(p).name == "manifest.json" and Path(p).parents[1] == mine]
        timed = max(1, args.repeat - 1)
        print(f"min of {timed} rounds, --jobs {args.jobs}: against -> this (wall; CPU)")
        for step in STEPS:
            (tw, tc), (aw, ac) = best[("this", step)], best[("against", step)]
            print(f"{step:6} {aw:6.1f} s -> {tw:6.1f} s wall ({aw / tw:.2f}x); "
                  f"CPU {ac:.1f} -> {tc:.1f} ({ac / tc:.2f}x)")  # fmt: skip
        print("theory folders' own manifests (this side only):", ", ".join(new) or "none")
        other = [p for p in changed if p not in new]
        print("files that differ:", ", ".join(other) if other else "none")


if __name__ == "__main__":
    main()
