"""How far a regeneration moved the committed results: every errors.csv of one results tree
against another's, in standard errors of the mean.

    python benchmarks/compare_results.py OLD_RESULTS NEW_RESULTS [--show 1.0]

For example, after a change that alters the numbers' bits (a new sampler, another elimination
order), with the previous commit checked out in a worktree:
`python benchmarks/compare_results.py /work/wt/base/results results`. For every run folder
(errors.csv) present in both trees, and every model and m, it counts the splits whose error
count changed and the shift of the mean error in standard errors of the mean (the old
errors' standard deviation over the splits / sqrt(splits), as summary.csv's `sem`), and the
same shift in standard errors of the paired differences (their standard deviation /
sqrt(splits)): a t statistic, about N(0, 1) when the change draws each split's answer anew
from the same law (a sampler's draws re-randomised), so about 5% of them beyond 2 and the
largest of a few hundred near 3; against the curve's own standard error such a change moves a
mean by up to about sqrt(2) of it (the draw's variance within a split counted twice). It
prints one line per folder (the largest shifts) and a line for each (model, m) whose paired t
exceeds --show, then the distribution of the paired t over every (model, m) that changed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def shifts(before: Path, after: Path) -> pd.DataFrame:
    """Per model and m of one run folder: the splits compared, how many changed and by at most
    how many errors, the mean error before and after, the shift in standard errors of the
    mean and the paired t."""
    old, new = pd.read_csv(before / "errors.csv"), pd.read_csv(after / "errors.csv")
    both = old.merge(new, on=["model", "m", "split"], suffixes=("_before", "_after"))
    rows = []
    for (model, m), group in both.groupby(["model", "m"]):
        sem = group["error_before"].std(ddof=1) / len(group) ** 0.5
        paired = (group["error_after"] - group["error_before"]).std(ddof=1) / len(group) ** 0.5
        shift = group["error_after"].mean() - group["error_before"].mean()
        rows.append(
            {
                "model": model,
                "m": int(m),
                "splits": len(group),
                "changed": int((group["errors_before"] != group["errors_after"]).sum()),
                "most": int((group["errors_after"] - group["errors_before"]).abs().max()),
                "before": group["error_before"].mean(),
                "after": group["error_after"].mean(),
                "shift_se": _ratio(shift, sem),
                "paired_t": _ratio(shift, paired),
            }
        )
    return pd.DataFrame(rows)


def _ratio(shift: float, scale: float) -> float:
    return shift / scale if scale > 0 else (0.0 if shift == 0 else float("inf"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--show", type=float, default=2.5, help="list paired t above this")
    args = parser.parse_args()
    every = []
    for errors in sorted(args.old.rglob("errors.csv")):
        folder = errors.parent.relative_to(args.old)
        if not (args.new / folder / "errors.csv").is_file():
            print(f"{folder}: not in {args.new}")
            continue
        table = shifts(args.old / folder, args.new / folder)
        changed = int(table["changed"].sum())
        top, top_t = table["shift_se"].abs().max(), table["paired_t"].abs().max()
        print(
            f"{str(folder):48} {changed:6} splits changed  largest shift {top:5.2f} SE, "
            f"paired t {top_t:5.2f}"
        )
        for row in table[table["paired_t"].abs() > args.show].itertuples():
            print(
                f"    {row.model:22} m = {row.m:5}  {row.changed:4} of {row.splits} changed  "
                f"{row.before:.5f} -> {row.after:.5f}  "
                f"({row.shift_se:+.2f} SE, t {row.paired_t:+.2f})"
            )
        every.append(table[table["changed"] > 0].assign(folder=str(folder)))
    moved = pd.concat(every) if every else pd.DataFrame(columns=["paired_t", "shift_se"])
    t = moved["paired_t"].abs()
    print(
        f"{len(moved)} (model, m) changed: paired |t| > 2 for {int((t > 2).sum())} "
        f"({(t > 2).mean():.1%}), > 3 for {int((t > 3).sum())}, largest {t.max():.2f}; "
        f"largest shift {moved['shift_se'].abs().max():.2f} SE of the curve"
    )


if __name__ == "__main__":
    main()
