"""How the verdicts move under a sweep's variants: `<out>/sensitivity.csv` and the report's
stability table.

Each variant's folder is analysed by `runfiles.analyse_run`, the function the report uses
(so its verdict and crossover are the report's, and its differences.csv, shape.csv and
fits.csv are written beside its CSVs); a variant recorded as the same design as another
takes that one's numbers. sensitivity.csv holds one row per panel x variant and keeps the
rows of panels swept before: a new sweep of a panel replaces that panel's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from genvdis.config.variants import BASELINE, VARIANTS_DIR
from genvdis.errors import UserError
from genvdis.report._format import Block, fmt_int, is_missing
from genvdis.store import lock as runlock
from genvdis.store import names as resultnames
from genvdis.store import results, runfiles

if TYPE_CHECKING:
    from genvdis.experiment.sweeps import Planned

SENSITIVITY = resultnames.SENSITIVITY
SENSITIVITY_LOCK = ".sensitivity.lock"  # held while sensitivity.csv is read and rewritten
COLUMNS = [
    "name", "panel", "variant", "changed", "same_as", "not_run", "n_splits", "verdict",
    "keeps_verdict", "m_cross", "m_cross_interp", "m_cross_ci_low", "m_cross_ci_high",
    "frac_no_cross",
    "gen_model", "m_min", "m_max", "nb_err_m_min", "lr_err_m_min", "nb_err_m_max",
    "lr_err_m_max",
]  # fmt: skip
NOT_RUN = "not run"
CROSS = ["m_cross", "m_cross_interp", "m_cross_ci_low", "m_cross_ci_high", "frac_no_cross"]


def panel_rows(planned: list[Planned], out: Path, n_boot: int = 1000) -> pd.DataFrame:
    """One row per variant of one config's sweep (the baseline first)."""
    analysed: dict[str, dict[str, Any]] = {}
    rows = []
    for item in planned:
        if item.not_run:
            rows.append(_not_run_row(item))
            continue
        if item.same_as is None:
            analysed[item.variant.id] = runfiles.analyse_run(out / item.folder, n_boot=n_boot)
        row = analysed[item.same_as or item.variant.id]
        gen, disc = row.get("gen_model"), row.get("disc_model")
        rows.append(
            dict(
                name=item.config.name, panel=item.config.panel, variant=item.variant.id,
                changed=item.changed, same_as=item.same_as or "", not_run="",
                n_splits=item.config.splits, verdict=row["verdict"], keeps_verdict=None,
                **{key: row[key] for key in CROSS}, gen_model=gen or "",
                m_min=row["m_min"], m_max=row["m_max"],
                nb_err_m_min=row.get(f"{gen}_err_m_min"), lr_err_m_min=row.get(f"{disc}_err_m_min"),
                nb_err_m_max=row.get(f"{gen}_err_m_max"), lr_err_m_max=row.get(f"{disc}_err_m_max"),
            )
        )  # fmt: skip
    table = pd.DataFrame(rows, columns=COLUMNS)
    ran = table["not_run"] == ""
    table["keeps_verdict"] = (table["verdict"] == table["verdict"].iloc[0]).where(ran, pd.NA)
    table["m_cross"] = table["m_cross"].astype("Int64")
    return table


def _not_run_row(item: Planned) -> dict[str, Any]:
    """A variant that does not apply to the panel's data: why, and no numbers."""
    return dict(
        name=item.config.name, panel=item.config.panel, variant=item.variant.id,
        changed=item.changed, same_as="", not_run=item.not_run, n_splits=item.config.splits,
        verdict=NOT_RUN,
    )  # fmt: skip


def read_sensitivity(results_dir: Path) -> pd.DataFrame | None:
    """sensitivity.csv as written (None if there is none); only empty cells are missing."""
    path = Path(results_dir) / SENSITIVITY
    if not path.is_file():
        return None
    try:
        text = {"changed": str, "same_as": str, "not_run": str}
        table = pd.read_csv(
            path, keep_default_na=False, na_values=[""], dtype={"panel": "Int64", **text}
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError):
        raise UserError(
            f"{path}: not a table genvdis wrote; delete it and rerun the sweep"
        ) from None
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise UserError(f"{path}: no column '{missing[0]}'; delete it and rerun the sweep")
    table["m_cross"] = table["m_cross"].astype("Int64")
    text = ["changed", "same_as", "not_run"]
    table[text] = table[text].fillna("")
    return table


def update(out: Path, rows: pd.DataFrame) -> Path:
    """Write sensitivity.csv: these rows, replacing any earlier rows of the same panel. One
    update at a time (a lock beside it, waited for): two sweeps of different panels into one
    folder that read it at once would each write back the rows they read, losing the other's."""
    path = Path(out) / SENSITIVITY
    with runlock.hold(Path(out), wait=True, name=SENSITIVITY_LOCK):
        old = read_sensitivity(out)
        if old is not None:
            keep = old[~old["name"].isin(set(rows["name"]))]
            rows = pd.concat([keep, rows], ignore_index=True)
        rows = rows.sort_values(["panel", "name"], na_position="last", kind="stable")
        with results.writing(Path(out), SENSITIVITY):
            results.atomic_write_csv(path, rows[COLUMNS].reset_index(drop=True))
    return path


# --------------------------------------------------------------------------- the report's table


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
        agree = bool((means["n_splits"] == row.n_splits).all())
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
