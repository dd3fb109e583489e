"""A run folder's files read back, for `genvdis plot`, `genvdis report`, the analysis
(genvdis.analysis.runs) and the API.

genvdis wrote them, but a user may have edited, truncated or replaced one since; each problem
is then a one-line UserError naming the file, never a pandas or YAML traceback. Every file
written here is written atomically (`results.atomic_write_text`).
"""

from __future__ import annotations

import copy
import hashlib
import io
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genvdis.config._yaml import read_yaml
from genvdis.config.experiment import NAME_PATTERN, check_pairs, drawable_title
from genvdis.errors import UserError
from genvdis.store import results

# What plot and report use of each file, and which of those columns are numbers.
SUMMARY_NEEDS = {"model": False, "m": True, "mean": True, "ci_low": True, "ci_high": True}
SUMMARY_NEEDS["frac_separable"] = True
ERRORS_NEEDS = {"model": False, "m": True, "split": True, "error": True}


def read_table(
    path: Path, needs: dict[str, bool], data: bytes | None = None, exact: tuple[str, ...] = ()
) -> pd.DataFrame:
    """A CSV genvdis wrote, with the columns `needs` names (True: finite numbers); parsed from
    `data`, its bytes as read already, if given. The `exact` columns are parsed by Python's
    float, which gives back the very double that was written (pandas' own parser need not)."""
    try:
        source = path if data is None else io.BytesIO(data)
        table = pd.read_csv(source, dtype=dict.fromkeys(exact, str))
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
        table[column] = values if column not in exact else _exact(table[column])
    table["model"] = table["model"].astype(str)
    return table


def read_summary(run_dir: Path) -> pd.DataFrame:
    return _read_checked(run_dir / "summary.csv", SUMMARY_NEEDS)


def read_errors(run_dir: Path, checked: bool = True) -> pd.DataFrame:
    """errors.csv, each error the very double the run held (`read_table`'s `exact`), checked
    against the run's manifest; `checked=False` for the engine's resume, which has verified
    the file against the run's fingerprint itself (`results.verify`) and rebuilds the other
    files from it, so that their absence is not an error there."""
    path = run_dir / "errors.csv"
    if not checked:
        errors = pd.read_csv(path, dtype={"error": str})
        errors["error"] = _exact(errors["error"])
        return errors
    return _read_checked(path, ERRORS_NEEDS, exact=("error",))


def _exact(column: pd.Series) -> pd.Series:
    return column.map(float).astype(np.float64)


def _read_checked(path: Path, needs: dict[str, bool], exact: tuple[str, ...] = ()) -> pd.DataFrame:
    """A run's numbers, read once: the bytes parsed are the bytes checked against its manifest
    (a rerun that commits between a read and a second read for the check would pass an
    earlier run's numbers as the folder's)."""
    data = path.read_bytes()
    table = read_table(path, needs, data, exact)
    results.check_manifest(path, hashlib.sha256(data).hexdigest())
    return table


def summary_means(summary: pd.DataFrame) -> dict[tuple[str, Any], tuple[float, Any]]:
    """summary.csv's (mean, n_splits) by (model, m), the first row of each: what a file that
    records a run's means is checked against (a dict: a report checks thousands of means)."""
    first = summary.drop_duplicates(["model", "m"])
    splits = first["n_splits"] if "n_splits" in first.columns else [None] * len(first)
    rows = zip(first["model"], first["m"], first["mean"].tolist(), splits, strict=True)
    return {(str(model), m): (mean, n) for model, m, mean, n in rows}


def mean_agrees(
    means: dict[tuple[str, Any], tuple[float, Any]], model: Any, m: Any, value: Any,
    splits: Any = None, rtol: float = 1e-5, atol: float = 1e-8,
) -> bool:  # fmt: skip
    """Whether a recorded mean (and split count) of `model` at `m` is the run's, `means`
    being its `summary_means`, within np.isclose's tolerance; False where the run has no such
    row or the value is missing."""
    if pd.isna(m) or pd.isna(value):
        return False
    found = means.get((str(model), m))
    if found is None:
        return False
    mean, n_splits = found
    if splits is not None and (n_splits is None or n_splits != splits):
        return False
    value = float(value)
    return mean == value or (math.isfinite(value) and abs(mean - value) <= atol + rtol * abs(value))


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml as a mapping, its name a plain name (the figures are written to
    `<run>/<name>.png`) and its title one that can be drawn, checked against the run's
    manifest (`results.check_manifest`): an edited n_rows, panel or splits is not the run's.
    The bytes checked are the bytes parsed; a report reads one run's config in several
    places, so each text is parsed once (`_parsed`) and every caller gets its own copy."""
    path = run_dir / results.CONFIG
    data = path.read_bytes() if path.is_file() else None
    digest = hashlib.sha256(data).hexdigest() if data is not None else None
    config = _parsed(path, data, digest) if data is not None else None
    if isinstance(config, dict):
        _check_names(config, run_dir, path)
    results.check_manifest(path, digest)
    return copy.deepcopy(config) if isinstance(config, dict) else {}


_PARSED: dict[str, Any] = {}  # config.yaml's content by the sha256 of its bytes
_PARSED_MAX = 4096  # a study's runs and their variants, a few hundred, fit many times over


def _parsed(path: Path, data: bytes, digest: str) -> Any:
    """`read_yaml` of bytes whose sha256 is `digest`, parsed once per process."""
    if digest not in _PARSED:
        parsed = read_yaml(path, data)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[digest] = parsed
    return _PARSED[digest]


def _check_names(config: dict[str, Any], run_dir: Path, path: Path) -> None:
    """config.yaml's name and title: what a figure's file and title are made of."""
    name = config.get("name", run_dir.name)
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise UserError(f"{path}: name: '{name}' is not a plain file name")
    try:
        drawable_title(config.get("title") if isinstance(config.get("title"), str) else None)
    except ValueError as error:
        raise UserError(f"{path}: title: {error}") from None


def read_panel_config(run_dir: Path) -> dict[str, Any]:
    """The keys the analysis needs from config.yaml, with the folder name standing in when it
    lacks them (or holds something else than the numbers where numbers belong)."""
    cfg = read_run_config(run_dir)
    name = str(cfg.get("name") or run_dir.name)
    models = cfg.get("models") if isinstance(cfg.get("models"), list) else []
    names = [str(x["name"]) for x in models if isinstance(x, dict) and "name" in x]
    panel, n_rows = cfg.get("panel"), cfg.get("n_rows")
    return dict(
        name=name,
        title=str(cfg.get("title") or name),
        panel=panel if isinstance(panel, int) else None,
        n_rows=n_rows if isinstance(n_rows, int) else None,
        models=names,
        dataset=str(cfg.get("dataset") or ""),
        compare=_pairs_of(cfg.get("compare"), names, run_dir / "config.yaml"),
    )


def _pairs_of(compare: Any, models: list[str], path: Path) -> list[tuple[str, str]] | None:
    """config.yaml's `compare` as (first, second) pairs; None (the default pairs) when it has
    none. It may be edited after the run (it changes no number of the run), so it is checked
    as a config's is: a pair naming a model the run does not have would be left out unsaid."""
    if compare is None:
        return None
    if not isinstance(compare, list) or not compare:
        raise UserError(f"{path}: compare: must be a list of pairs [first, second]; fix it, or "
                        "remove compare: for the default pairs")  # fmt: skip
    named = [list(map(str, pair)) if isinstance(pair, list) else pair for pair in compare]
    try:
        check_pairs(named, models)
    except ValueError as problem:
        raise UserError(f"{path}: compare: {problem}; each pair is two different models "
                        "of the run, given once") from None  # fmt: skip
    return [(first, second) for first, second in named]
