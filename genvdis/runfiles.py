"""A run folder's files read back, for `genvdis plot` and `genvdis report`.

genvdis wrote them, but a user may have edited, truncated or replaced one since; each problem
is then a one-line UserError naming the file, never a pandas or YAML traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genvdis.config import NAME_PATTERN, drawable_title
from genvdis.errors import UserError
from genvdis.yamlfile import read_yaml

# What plot and report use of each file, and which of those columns are numbers.
SUMMARY_NEEDS = {"model": False, "m": True, "mean": True, "ci_low": True, "ci_high": True}
SUMMARY_NEEDS["frac_separable"] = True
ERRORS_NEEDS = {"model": False, "m": True, "split": True, "error": True}


def read_table(path: Path, needs: dict[str, bool]) -> pd.DataFrame:
    """A CSV genvdis wrote, with the columns `needs` names (True: finite numbers)."""
    try:
        table = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        first = (str(error).strip().splitlines() or ["empty file"])[0]
        raise UserError(f"{path}: not a table genvdis wrote ({first})") from None
    missing = [column for column in needs if column not in table.columns]
    if missing:
        raise UserError(f"{path}: no column '{missing[0]}' (not a table genvdis wrote)")
    if table.empty:
        raise UserError(f"{path}: no rows")
    for column in [c for c, numeric in needs.items() if numeric]:
        values = pd.to_numeric(table[column], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            row = int(np.argmax(bad))
            raise UserError(
                f"{path}: column '{column}' holds '{table[column].iloc[row]}' in row {row + 1}, "
                "not a finite number"
            )
        table[column] = values
    table["model"] = table["model"].astype(str)
    return table


def read_summary(run_dir: Path) -> pd.DataFrame:
    return read_table(run_dir / "summary.csv", SUMMARY_NEEDS)


def read_errors(run_dir: Path) -> pd.DataFrame:
    return read_table(run_dir / "errors.csv", ERRORS_NEEDS)


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml as a mapping ({} if there is none), its name a plain name (the
    figures are written to `<run>/<name>.png`) and its title one that can be drawn."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    config = read_yaml(path)
    if not isinstance(config, dict):
        return {}
    name = config.get("name", run_dir.name)
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise UserError(f"{path}: name: '{name}' is not a plain file name")
    try:
        drawable_title(config.get("title") if isinstance(config.get("title"), str) else None)
    except ValueError as error:
        raise UserError(f"{path}: title: {error}") from None
    return config
