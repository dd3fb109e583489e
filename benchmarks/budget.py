"""Where `make all`'s CPU goes: every config it runs, one at a time, each in a fresh process
with one job, then `plot` and `report` over what they wrote, as a table sorted by CPU seconds.

    GENVDIS_MIRROR=../shared/uci python benchmarks/budget.py [--splits 1000] [--skip-theory]

The configs are the Makefile's own (its CONFIGS, EXAMPLES and THEORY lists, read from the
Makefile), run into a scratch folder. With one job a run does its work in its own process, so
its CPU seconds are its work plus one process's start-up, the same on any number of cores;
`make all` on N cores cannot take less wall time than their total over N. The table says
which runs a target for `make all` has to shrink (issue 17 asked for 120 s on 2 cores).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from bench_startup import _wall

ROOT = Path(__file__).resolve().parent.parent


def makefile_lists() -> dict[str, list[str]]:
    """The Makefile's CONFIGS, EXAMPLES and THEORY: its variables expanded as make would for
    these three (wildcards, filter-out, line continuations)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    found = dict(re.findall(r"^(CONFIGS|EXAMPLES|THEORY) := (.*)$", text, flags=re.M))
    theory = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("configs/theory-*.yaml"))
    panels = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("configs/*.yaml"))
    if set(found) != {"CONFIGS", "EXAMPLES", "THEORY"} or "filter-out" not in found["CONFIGS"]:
        sys.exit("the Makefile's CONFIGS, EXAMPLES or THEORY is not as this script reads it")
    return {
        "panels": [p for p in panels if p not in theory],
        "examples": found["EXAMPLES"].split(),
        "theory": theory,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=1000, help="splits per m (default 1000)")
    parser.add_argument("--skip-theory", action="store_true")
    args = parser.parse_args()
    genvdis = str(Path(sys.executable).with_name("genvdis"))
    lists = makefile_lists()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        for step, configs in lists.items():
            if step == "theory" and args.skip_theory:
                continue
            folder = out / "examples" if step == "examples" else out
            for config in configs:
                command = [genvdis, step if step == "theory" else "run", str(ROOT / config)]
                if step != "theory":
                    command += ["--splits", str(args.splits)]
                wall, cpu = _wall([*command, "--jobs", "1", "--out", str(folder), "-q"])
                rows.append((step, Path(config).stem, wall, cpu))
                print(f"  {step:9} {Path(config).stem:26} {wall:7.1f} s {cpu:7.1f} s CPU")
        for step in ("plot", "report"):
            wall, cpu = _wall([genvdis, step, str(out), str(out / "examples"), "--jobs", "1"])
            rows.append((step, "results/ and examples/", wall, cpu))
    total = sum(cpu for *_, cpu in rows)
    print(f"\nmake all's work, one job each, --splits {args.splits}, by CPU seconds:")
    print(f"{'step':9} {'what':26} {'wall':>8} {'CPU':>8} {'share':>7} {'cumul.':>7}")
    running = 0.0
    for step, what, wall, cpu in sorted(rows, key=lambda row: -row[3]):
        running += cpu
        print(
            f"{step:9} {what:26} {wall:7.1f}s {cpu:7.1f}s {cpu / total:7.1%} {running / total:7.1%}"
        )
    print(f"total CPU {total:.0f} s: on 2 cores, make all takes at least {total / 2:.0f} s")


if __name__ == "__main__":
    main()
