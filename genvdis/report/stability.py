"""The report's stability section: per swept panel, whether its verdict holds under the
sweep's variants, read from `<out>/sensitivity.csv` (genvdis.analysis.sensitivity writes it).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from genvdis.analysis.sensitivity import SENSITIVITY, read_sensitivity
from genvdis.config.variants import BASELINE, VARIANTS_DIR
from genvdis.errors import UserError
from genvdis.report._format import Block, fmt_int, is_missing
from genvdis.store import runfiles


def stability_blocks(results_dir: Path) -> list[Block]:
    """The stability section: per panel, the baseline's verdict, how many variants keep it,
    which change it, and the crossover's range; nothing if no sweep was run."""
    table = read_sensitivity(results_dir)
    if table is None or table.empty:
        return []
    check_folders(Path(results_dir), table)
    header = ["#", "panel", "splits", "baseline verdict", "variants keeping it"]
    header += ["variants changing it", "crossover m over the variants", "not run"]
    rows, steady = [], 0
    for name, group in table.groupby("name", sort=False):
        row, holds = _stability_row(str(name), group)
        rows.append(row)
        steady += holds
    panels = "panel" if len(rows) == 1 else "panels"
    text = (
        f"Each panel run again under other readings of the protocol (`genvdis sweep`, "
        f"docs/sweeps.md; the numbers are in `{SENSITIVITY}`). The verdict holds under every "
        f"variant in {steady} of {len(rows)} {panels}. A variant that gives the baseline's "
        "design on a panel, or another variant's (e.g. a missing-value policy where nothing is "
        "missing), is not run again; nor is one that leaves too few rows for the panel's m "
        "grid. Both are only counted in the last column."
    )
    return [Block("h2", text="Stability under the sweep's variants"), Block("p", text=text),
            Block("table", header=header, rows=rows)]  # fmt: skip


def check_folders(results_dir: Path, table: pd.DataFrame) -> None:
    """Each row that ran must hold the numbers of its variant's folder, where that folder is
    (`<name>/variants/<id>`, or the one it is the same as): a later sweep of the panel that
    did not finish (killed, or stopped by an error) reruns some folders and leaves the rows
    of the earlier one. Its split count and its generative model's mean errors at the ends
    of the grid are compared with the folder's summary.csv (checked by its manifest)."""
    for row in table[table["not_run"] == ""].itertuples():
        folder = results_dir / str(row.name) / VARIANTS_DIR / (row.same_as or str(row.variant))
        if not (folder / "summary.csv").is_file():
            continue  # a copied sensitivity.csv, or folders removed: nothing to contradict
        means = runfiles.summary_means(runfiles.read_summary(folder))
        agree = all(n_splits == row.n_splits for _, n_splits in means.values())
        for end in ("m_min", "m_max") if row.gen_model else ():
            m, value = getattr(row, end), getattr(row, f"nb_err_{end}")
            m = -1 if is_missing(m) else int(m)
            agree &= runfiles.mean_agrees(means, row.gen_model, m, value)
        if not agree:
            raise UserError(
                f"{results_dir / SENSITIVITY}: panel '{row.name}', variant '{row.variant}': not "
                f"the numbers of {folder} (a later sweep of the panel did not finish); rerun "
                "the panel's sweep"
            )


def _stability_row(name: str, group: pd.DataFrame) -> tuple[list[str], bool]:
    baseline = group[group["variant"] == BASELINE]
    if baseline.empty:
        raise UserError(f"{SENSITIVITY}: panel '{name}' has no baseline row; rerun its sweep")
    base = baseline.iloc[0]
    repeats = (group["same_as"] != "") | (group["not_run"] != "")
    others = group[(group["variant"] != BASELINE) & ~repeats]  # each design once
    flips = others[~others["verdict"].eq(base["verdict"])]
    changing = "; ".join(f"`{v.variant}`: {v.verdict}" for v in flips.itertuples()) or "none"
    row = [
        fmt_int(base["panel"]), name, fmt_int(base["n_splits"]), str(base["verdict"]),
        f"{len(others) - len(flips)} of {len(others)}", changing,
        _cross_range(pd.concat([baseline.iloc[:1], others])),
        str(int(repeats.sum())),
    ]  # fmt: skip
    return row, flips.empty


def _cross_range(rows: pd.DataFrame) -> str:
    """Min–max of the interpolated crossover, and how many of the rows have none."""
    crossed = rows["m_cross_interp"].dropna()
    none = len(rows) - len(crossed)
    tail = f" (none in {none})" if none and len(crossed) else ""
    if crossed.empty:
        return "none"
    low, high = float(crossed.min()), float(crossed.max())
    span = f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}–{high:.0f}"
    return span + tail if not is_missing(low) else "none"
