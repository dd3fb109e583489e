"""What `make all` does after the runs: `genvdis theory`, `genvdis plot` and `genvdis report`,
this checkout against another one (--against), side by side, in fresh processes.

    git worktree add ../post-base 064f926
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_post.py --against ../post-base \\
        --results results [--repeat 2] [--jobs 2] [--skip-theory]

--results is a results folder whose runs keep their errors.csv (after `make panels
examples`: the committed results keep none, and the report then has nothing to analyse),
with an examples/ folder in it. Each round copies it to a scratch folder per side, then times
on each side in turn: `theory` (configs/theory-*.yaml into a fresh folder), `plot` of the
folder and its examples/, `report` of examples/ then of the folder, as the Makefile runs
them (one command for both folders where the checkout's CLI takes several). This checkout
gets `--jobs`; the other side gets it only if its CLI takes it. Every figure is the minimum
over --repeat rounds of the wall time (and of the CPU time of the processes), the rounds
interleaving both sides so that the machine's load drifts over both alike. At the end both
sides' folders are compared file by file: they must be the same bytes, save REPORT.md/html's
link to docs/analysis.md (a path relative to each checkout), left out of their comparison.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STEPS = ("theory", "plot", "report")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _help(tree: Path, command: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-m", "genvdis.cli", command, "--help"],
        env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(),
    ).stdout  # fmt: skip


def _takes_jobs(tree: Path, command: str) -> bool:
    return "--jobs" in _help(tree, command)


def _commands(tree: Path, folder: Path, jobs: int) -> dict[str, list[list[str]]]:
    """Each step's commands, as the Makefile runs them, for the checkout at `tree`."""
    cli = [sys.executable, "-m", "genvdis.cli"]
    theory = sorted(str(p) for p in (HERE / "configs").glob("theory-*.yaml"))
    extra = {c: ["--jobs", str(jobs)] if _takes_jobs(tree, c) else [] for c in STEPS}
    examples = folder / "examples"
    plots, reports = [str(folder), str(examples)], [str(examples), str(folder)]
    if _takes_folders(tree):  # one command for both folders, as the Makefile runs it
        plots, reports = [plots], [reports]
    else:
        plots, reports = [[p] for p in plots], [[p] for p in reports]
    return {
        "theory": [
            [*cli, "theory", *theory, "--jobs", str(jobs), "--quiet", "--out", str(folder / "th")]
        ],
        "plot": [[*cli, "plot", *p, *extra["plot"]] for p in plots],
        "report": [[*cli, "report", *p, *extra["report"]] for p in reports],
    }


def _takes_folders(tree: Path) -> bool:
    """Whether the checkout's plot and report take several folders (older ones take one)."""
    return "results_dirs" in _help(tree, "report")


def _time(commands: list[list[str]], tree: Path, where: Path) -> tuple[float, float]:
    """Wall and CPU time of the commands, run in `where`: `python -m` puts the working folder
    first on sys.path, so run in a checkout it would import that checkout's genvdis."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu, start = _cpu(), time.perf_counter()
    for command in commands:
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=where)
    return time.perf_counter() - start, _cpu() - cpu


def _differences(a: Path, b: Path) -> list[str]:
    """Files that differ between the two folders (or are in one only), recursively."""
    out: list[str] = []
    compare = filecmp.dircmp(a, b)
    out += [str(a / x) for x in compare.left_only + compare.right_only]
    for name in compare.common_files:
        if name.startswith("REPORT."):
            same = _unlinked(a / name) == _unlinked(b / name)
        else:
            same = filecmp.cmp(a / name, b / name, shallow=False)
        if not same:
            out.append(str(a / name))
    for name in compare.common_dirs:
        out += _differences(a / name, b / name)
    return out


def _unlinked(path: Path) -> str:
    """A report's text without its link's target to docs/analysis.md (relative to the
    checkout that wrote it, so it differs between two checkouts)."""
    return re.sub(r'[("][^\s("]*docs/analysis\.md', "", path.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-theory", action="store_true")
    args = parser.parse_args()
    steps = [s for s in STEPS if not (s == "theory" and args.skip_theory)]
    sides = {"this": HERE, "against": args.against.resolve()}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-post-") as scratch:
        for _ in range(args.repeat):
            for side, tree in sides.items():
                folder = Path(scratch) / side
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(args.results, folder)
                commands = _commands(tree, folder, args.jobs)
                for step in steps:
                    wall, cpu = _time(commands[step], tree, Path(scratch))
                    old = best.get((side, step), (float("inf"), float("inf")))
                    best[(side, step)] = (min(old[0], wall), min(old[1], cpu))
                    print(f"  {side:8} {step:7} {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
        changed = _differences(Path(scratch) / "this", Path(scratch) / "against")
        _print(best, steps, args)
        print("files that differ:", ", ".join(changed) if changed else "none")


def _print(best: dict, steps: list[str], args: argparse.Namespace) -> None:
    print(f"min of {args.repeat} rounds, --jobs {args.jobs}: against / this (wall; CPU)")
    total = {"this": [0.0, 0.0], "against": [0.0, 0.0]}
    for step in steps:
        (tw, tc), (aw, ac) = best[("this", step)], best[("against", step)]
        for side, (w, c) in (("this", (tw, tc)), ("against", (aw, ac))):
            total[side][0] += w
            total[side][1] += c
        print(
            f"{step:7} {aw:6.1f} s -> {tw:6.1f} s wall ({aw / tw:.2f}x); CPU {ac:.1f} -> {tc:.1f}"
        )
    (tw, tc), (aw, ac) = total["this"], total["against"]
    print(f"{'all':7} {aw:6.1f} s -> {tw:6.1f} s wall ({aw / tw:.2f}x); CPU {ac:.1f} -> {tc:.1f}")


if __name__ == "__main__":
    main()
