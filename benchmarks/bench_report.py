"""`make report`'s command, `genvdis report results/examples/ results/ --jobs 2`, this checkout
against another one (--against), side by side, on two copies of a results folder.

    python benchmarks/bench_report.py --against ../main --results ../main/results [--repeat 3]

The results folder must hold the runs' errors.csv (the report analyses them; a fresh clone's
committed results keep none: `make panels examples` writes them). Each side gets a copy of
it in a temporary folder, made once; each round runs the command on both copies in turn (this
checkout's code, then the other's, on PYTHONPATH, this venv's libraries), so the machine's
load drifts over both alike. A figure is the CPU time of the whole command, its workers
included (user + system, from the children's rusage), and its wall time, each the minimum
over --repeat rounds. Then the two copies are compared file by file: the files whose bytes
differ are listed (REPORT.md and REPORT.html link docs/ by a path relative to each checkout,
so that link is set aside before they are compared).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_startup import children_cpu

HERE = Path(__file__).resolve().parents[1]
DOCS_LINK = re.compile(rb"(\.\./)+[A-Za-z0-9_./+-]*/docs/")


def _run(tree: Path, folder: Path, jobs: int) -> tuple[float, float]:
    """(CPU s, wall s) of `genvdis report examples/ . --jobs J` in `folder`, `tree`'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree), "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "genvdis", "report", "examples/", ".", "--jobs", str(jobs)]
    before, start = children_cpu(), time.perf_counter()
    subprocess.run(command, env=env, cwd=folder, check=True, capture_output=True)
    wall = time.perf_counter() - start
    return children_cpu() - before, wall


def _differing(a: Path, b: Path) -> list[str]:
    """Files under `a` whose bytes differ from `b`'s (or that `b` lacks), docs/ links aside."""
    out = []
    for path in sorted(a.rglob("*")):
        if not path.is_file():
            continue
        other = b / path.relative_to(a)
        if not other.is_file():
            out.append(f"{path.relative_to(a)} (only in this side's copy)")
        elif not filecmp.cmp(path, other, shallow=False):
            if path.name.startswith("REPORT."):
                same = DOCS_LINK.sub(b"DOCS/", path.read_bytes()) == DOCS_LINK.sub(
                    b"DOCS/", other.read_bytes()
                )
                if same:
                    continue
            out.append(str(path.relative_to(a)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sides = {"this": HERE, "other": args.against.resolve()}
    with tempfile.TemporaryDirectory() as tmp:
        copies = {}
        for name in sides:
            copies[name] = Path(tmp) / name
            shutil.copytree(args.results, copies[name], ignore=shutil.ignore_patterns(".*"))
        best = {name: (float("inf"), float("inf")) for name in sides}
        for round_ in range(args.repeat):
            for name, tree in sides.items():
                cpu, wall = _run(tree, copies[name], args.jobs)
                best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
                print(f"round {round_ + 1}, {name}: {cpu:.2f} CPU s, {wall:.2f} s wall")
        print(f"\n`genvdis report examples/ . --jobs {args.jobs}`, min of {args.repeat} rounds:")
        for name, tree in sides.items():
            print(f"  {name} ({tree}): {best[name][0]:.2f} CPU s, {best[name][1]:.2f} s wall")
        ratio = best["other"][0] / best["this"][0]
        print(f"  other / this: {ratio:.2f}x CPU, {best['other'][1] / best['this'][1]:.2f}x wall")
        differ = _differing(copies["this"], copies["other"])
        print(f"\nfiles that differ between the two sides' outputs: {len(differ)}")
        for name in differ:
            print(f"  {name}")


if __name__ == "__main__":
    main()
