"""How far a regeneration moved the committed results: every errors.csv of one results tree
against another's, in standard errors of the mean.

    python benchmarks/compare_results.py OLD_RESULTS NEW_RESULTS [--show 1.0]

For example, after a change that alters the numbers' bits (a new sampler, another elimination
order), with the previous commit checked out in a worktree:
`python benchmarks/compare_results.py /work/wt/base/results results`. For every run folder
(errors.csv) present in both trees, and every model and m, it counts the splits whose error
count changed and the shift of the mean error in standard errors of the mean (the old
errors' standard deviation over the splits / sqrt(splits), as summary.csv's `sem`). It prints
one line per folder (the largest shift) and a line for each (model, m) shifted by more than
--show standard errors, then the overall largest shift.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def shifts(before: Path, after: Path) -> pd.DataFrame:
    """Per model and m of one run folder: the splits compared, how many changed, the mean
    error before and after and the shift in standard errors of the mean."""
    old, new = pd.read_csv(before / "errors.csv"), pd.read_csv(after / "errors.csv")
    both = old.merge(new, on=["model", "m", "split"], suffixes=("_before", "_after"))
    rows = []
    for (model, m), group in both.groupby(["model", "m"], sort=False):
        sem = group["error_before"].std(ddof=1) / len(group) ** 0.5
        shift = group["error_after"].mean() - group["error_before"].mean()
        rows.append(
            {
                "model": model,
                "m": int(m),
                "splits": len(group),
                "changed": int((group["errors_before"] != group["errors_after"]).sum()),
                "before": group["error_before"].mean(),
                "after": group["error_after"].mean(),
                "shift_se": shift / sem if sem > 0 else (0.0 if shift == 0 else float("inf")),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--show", type=float, default=1.0, help="list shifts above this (SE)")
    args = parser.parse_args()
    largest, where = 0.0, ""
    for errors in sorted(args.old.rglob("errors.csv")):
        folder = errors.parent.relative_to(args.old)
        if not (args.new / folder / "errors.csv").is_file():
            print(f"{folder}: not in {args.new}")
            continue
        table = shifts(args.old / folder, args.new / folder)
        changed = int(table["changed"].sum())
        top = table["shift_se"].abs().max()
        print(f"{str(folder):55} {changed:6} splits changed  largest shift {top:5.2f} SE")
        for row in table[table["shift_se"].abs() > args.show].itertuples():
            print(
                f"    {row.model:22} m = {row.m:5}  {row.changed:4} of {row.splits} changed  "
                f"{row.before:.5f} -> {row.after:.5f}  ({row.shift_se:+.2f} SE)"
            )
        if top > largest:
            largest, where = top, str(folder)
    print(f"largest shift: {largest:.2f} standard errors ({where})")


if __name__ == "__main__":
    main()
