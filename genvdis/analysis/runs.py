"""The analysis of a results folder's runs: each run's differences.csv, shape.csv and fits.csv
(`analyse_run`), and the folder's analysis.csv and pairs.csv (`analyse_folders`), with the checks
that an analysis read back is still the analysis of the run beside it (`check_analysis`).
genvdis.analysis.differences computes the numbers; this module reads the runs (through
genvdis.store.runfiles) and writes the tables.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from genvdis._runtime import parallel
from genvdis.analysis import differences
from genvdis.analysis.differences import PanelAnalysis
from genvdis.config import resultnames
from genvdis.errors import UserError
from genvdis.store import results, runfiles

log = logging.getLogger(__name__)

PAIRS_FILE = resultnames.PAIRS


def check_analysis(run_dir: Path, summary: pd.DataFrame, row: dict[str, Any] | None) -> None:
    """A run's differences.csv and its row of analysis.csv beside it (`row`) are the analysis
    of the run as it was when a report (or a sweep) analysed it; a later rerun of that run
    (another seed, splits or sizes) leaves them describing numbers that are no longer there.
    Their model means and split counts must be those of the run's summary.csv (checked by
    its manifest), else a UserError names the stale file and how to analyse the run again."""
    means = runfiles.summary_means(summary)
    again = f"analyse it again with `genvdis report {run_dir.parent}`"
    if (run_dir.parent / "variants.csv").is_file():  # a sweep's variant: the sweep analyses it
        again = f"rerun its sweep, or {again}"

    def agrees(model: Any, m: Any, value: Any, splits: Any = None) -> bool:
        return runfiles.mean_agrees(means, model, m, value, splits, rtol=1e-9, atol=1e-12)

    path = run_dir / "differences.csv"
    try:
        diffs = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        diffs = pd.DataFrame({"a": ["?"]})  # not a table genvdis wrote
    if not diffs.empty:
        if not {"a", "b", "m", "n_splits", "mean_a", "mean_b"} <= set(diffs.columns):
            raise UserError(f"{path}: not a table genvdis wrote; {again}")
        grid = set(summary["m"][summary["model"] == str(diffs["a"].iloc[0])])
        if set(diffs["m"]) != grid or not all(
            agrees(d.a, d.m, d.mean_a, d.n_splits) and agrees(d.b, d.m, d.mean_b, d.n_splits)
            for d in diffs.itertuples()
        ):
            raise UserError(f"{path}: not the analysis of this run's summary.csv (the run was "
                            f"rerun after it was analysed); {again}")  # fmt: skip
    if row is not None:
        ends = {"min": row.get("m_min"), "max": row.get("m_max")}
        models = [m for m in str(row.get("models") or "").split(";") if m]
        if not all(
            agrees(model, ends[end], row.get(f"{model}_err_m_{end}"))
            for model in models
            for end in ends
        ):
            raise UserError(
                f"{run_dir.parent / 'analysis.csv'}: its row '{run_dir.name}' is not the analysis "
                f"of that run's summary.csv (the run was rerun after it was analysed); {again}"
            )


def read_analysis(results_dir: Path) -> pd.DataFrame:
    """analysis.csv as written; only empty cells are missing (so the verdict "n/a" survives)."""
    return pd.read_csv(
        results_dir / resultnames.ANALYSIS,
        dtype={"panel": "Int64", "n_rows": "Int64"},
        keep_default_na=False,
        na_values=[""],
    )


def analyse_run(run_dir: Path, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """One run's row of the results table (`differences.analyse_panel`); writes the tables that
    trace it (differences.csv, shape.csv, fits.csv) into the run's folder."""
    return _analyse_run(run_dir, n_boot, seed).row


def _analyse_run(run_dir: Path, n_boot: int, seed: int) -> PanelAnalysis:
    """`analyse_run` with the run's pairs (pairs.csv's rows) kept too."""
    run_dir = Path(run_dir)
    if not (run_dir / "errors.csv").exists():
        raise UserError(f"{run_dir / 'errors.csv'} not found")
    config = runfiles.read_panel_config(run_dir)  # its problems first: the run's own settings
    errors = runfiles.read_errors(run_dir)
    done = differences.analyse_panel(errors, config, run_dir.name, n_boot, seed)
    with results.writing(run_dir, "the analysis", results.AGAIN):
        for name, table in done.tables.items():
            results.atomic_write_csv(run_dir / name, table)
    return done


def analyse_folders(
    folders: list[Path], n_boot: int = 1000, seed: int = 0, jobs: int = 1
) -> list[pd.DataFrame]:
    """Every run with an errors.csv of every folder analysed, in one pool on up to `jobs`
    processes (each run's analysis is its own; one start-up, and the long runs of one folder
    overlap the other's), then each folder's analysis.csv (ordered by paper panel, then name)
    and pairs.csv in turn. Returns their tables, in `folders`' order."""

    runs = {Path(folder): _runs_to_analyse(Path(folder)) for folder in folders}
    items = list(dict.fromkeys(run for found in runs.values() for run in found))
    work = functools.partial(_analyse_run, n_boot=n_boot, seed=seed)
    done = parallel.map_ordered(work, items, jobs, cost=lambda p: (p / "errors.csv").stat().st_size)
    by_run = dict(zip(items, done, strict=True))
    return [_write_analysis(folder, [by_run[r] for r in found]) for folder, found in runs.items()]


def _runs_to_analyse(results_dir: Path) -> list[Path]:
    """The runs under `results_dir` with an errors.csv (a warning names those without)."""
    if not results_dir.is_dir():
        raise UserError(f"results folder {results_dir} not found")
    folders = sorted(p for p in results_dir.iterdir() if (p / "summary.csv").exists())
    summaries_only = [p.name for p in folders if not (p / "errors.csv").exists()]
    if summaries_only:  # e.g. a fresh clone: the committed results keep no per-split errors
        log.warning(
            "report leaves out %s: no errors.csv (rerun `genvdis run` on their configs)",
            ", ".join(summaries_only),
        )
    runs = sorted(p for p in results_dir.iterdir() if (p / "errors.csv").exists())
    if not runs:
        raise UserError(f"no panel with an errors.csv under {results_dir}")
    return runs


def _write_analysis(results_dir: Path, done: list[PanelAnalysis]) -> pd.DataFrame:
    """analysis.csv (and pairs.csv) of one folder from its runs' analyses."""
    table = differences.results_table([d.row for d in done])
    with results.writing(results_dir, "the analysis", results.AGAIN):
        results.atomic_write_csv(results_dir / resultnames.ANALYSIS, table)
        _write_pairs(results_dir, table, [row for d in done for row in d.pairs])
    return table


def _write_pairs(results_dir: Path, table: pd.DataFrame, rows: list[dict[str, Any]]) -> None:
    """pairs.csv, one row per panel and pair, in analysis.csv's panel order: written only when
    some panel has more than one pair (with one, analysis.csv holds its numbers already)."""
    path = results_dir / PAIRS_FILE
    pairs = pd.DataFrame(rows)
    if pairs.empty or not pairs["folder"].duplicated().any():
        path.unlink(missing_ok=True)  # a stale one would contradict analysis.csv
        return
    order = {folder: i for i, folder in enumerate(table["folder"])}
    pairs = pairs.sort_values("folder", key=lambda f: f.map(order), kind="stable")
    pairs["m_cross"] = pairs["m_cross"].astype("Int64")
    results.atomic_write_csv(path, pairs.reset_index(drop=True))


def read_pairs(results_dir: Path) -> pd.DataFrame | None:
    """pairs.csv as written, or None when no panel has more than one pair."""
    path = Path(results_dir) / PAIRS_FILE
    if not path.is_file():
        return None
    return pd.read_csv(path, keep_default_na=False, na_values=[""])
