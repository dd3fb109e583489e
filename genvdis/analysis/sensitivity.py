"""How the verdicts move under a sweep's variants: `<out>/sensitivity.csv` (the report's
stability table, genvdis.report.stability, reads it).

Each variant's folder is analysed by `runs.analyse_run`, the function the report uses
(so its verdict and crossover are the report's, and its differences.csv, shape.csv and
fits.csv are written beside its CSVs); a variant recorded as the same design as another
takes that one's numbers. sensitivity.csv holds one row per panel x variant and keeps the
rows of panels swept before: a new sweep of a panel replaces that panel's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from genvdis.analysis import runs
from genvdis.config import resultnames
from genvdis.errors import UserError
from genvdis.store import lock, results

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


class Planned(Protocol):
    """What the table needs of one planned variant (genvdis.experiment.sweeps.Planned): the
    sweep builds them, this layer below only reads them."""

    variant: Any  # its .id names the variant
    config: Any  # an ExperimentConfig: name, panel, splits
    same_as: str | None
    changed: str
    not_run: str

    @property
    def folder(self) -> str: ...


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
            analysed[item.variant.id] = runs.analyse_run(out / item.folder, n_boot=n_boot)
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
    with lock.hold(Path(out), wait=True, name=SENSITIVITY_LOCK):
        old = read_sensitivity(out)
        if old is not None:
            keep = old[~old["name"].isin(set(rows["name"]))]
            rows = pd.concat([keep, rows], ignore_index=True)
        rows = rows.sort_values(["panel", "name"], na_position="last", kind="stable")
        with results.writing(Path(out), SENSITIVITY):
            results.atomic_write_csv(path, rows[COLUMNS].reset_index(drop=True))
    return path
