"""adult (discrete), end to end: this checkout against another genvdis, side by side.

    git worktree add /tmp/genvdis-before a2fe8d4
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_adult.py --against /tmp/genvdis-before \
        [--splits 1000] [--repeat 3] [CONFIG]

Each round runs `genvdis run CONFIG --splits S --jobs J` (defaults: adult-discrete, 1 job) once
with each code, in fresh processes and fresh output folders, the two alternating so that the
machine's load drifts over both alike; the other checkout is imported in this one's place
through PYTHONPATH (same interpreter and libraries). It prints the minimum over the rounds of
the wall and CPU seconds (CPU is steadier when other work shares the machine), their ratios,
and then what changed in errors.csv: for each model and m whose errors differ, the splits
that changed and the shift of the mean error in standard errors of the mean. Without
--against it times this checkout alone.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import tempfile
from pathlib import Path

import pandas as pd
from bench_startup import _genvdis, _wall

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


def _changes(before: Path, after: Path) -> list[str]:
    """Lines saying, per model and m, how many splits' errors changed and by how many
    standard errors of the mean the mean error moved."""
    old, new = pd.read_csv(before / "errors.csv"), pd.read_csv(after / "errors.csv")
    both = old.merge(new, on=["model", "m", "split"], suffixes=("_before", "_after"))
    lines = []
    for (model, m), group in both.groupby(["model", "m"]):
        changed = int((group["errors_before"] != group["errors_after"]).sum())
        if not changed:
            continue
        sem = group["error_before"].std(ddof=1) / len(group) ** 0.5
        shift = group["error_after"].mean() - group["error_before"].mean()
        lines.append(
            f"  {model:20} m = {m:5}  {changed:4} splits changed  mean "
            f"{group['error_before'].mean():.5f} -> {group['error_after'].mean():.5f}"
            f"  ({shift / sem:+.2f} SE)"
        )
    return lines


def main(config: str = "configs/adult-discrete.yaml", splits: int = 1000, jobs: int = 1) -> None:
    """The comparison; bench_softmax.py runs it with its own defaults."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=config)
    parser.add_argument("--against", type=Path, help="the root of another genvdis checkout")
    parser.add_argument("--splits", type=int, default=splits, help=f"per m (default {splits})")
    parser.add_argument("--jobs", type=int, default=jobs, help=f"workers (default {jobs})")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, min taken (default 3)")
    args = parser.parse_args()
    sides = {"this checkout": None}
    if args.against is not None:
        sides["--against"] = args.against.resolve()
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
