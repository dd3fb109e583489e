"""A run folder's files read back, for `genvdis plot`, `genvdis report` and the API, and the
analysis files written from them (`analyse_results`).

genvdis wrote them, but a user may have edited, truncated or replaced one since; each problem
is then a one-line UserError naming the file, never a pandas or YAML traceback. Every file
written here is written atomically (`results.atomic_write_text`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from genvdis.config._yaml import read_yaml
from genvdis.config.experiment import NAME_PATTERN, check_pairs, drawable_title
from genvdis.errors import UserError
from genvdis.store import lock as runlock
from genvdis.store import names as resultnames
from genvdis.store import results

if TYPE_CHECKING:
    from genvdis.analysis.differences import PanelAnalysis

log = logging.getLogger(__name__)

# What plot and report use of each file, and which of those columns are numbers.
SUMMARY_NEEDS = {"model": False, "m": True, "mean": True, "ci_low": True, "ci_high": True}
SUMMARY_NEEDS["frac_separable"] = True
ERRORS_NEEDS = {"model": False, "m": True, "split": True, "error": True}
PAIRS_FILE = resultnames.PAIRS


def read_table(path: Path, needs: dict[str, bool], data: bytes | None = None) -> pd.DataFrame:
    """A CSV genvdis wrote, with the columns `needs` names (True: finite numbers); parsed from
    `data`, its bytes as read already, if given."""
    try:
        table = pd.read_csv(path if data is None else io.BytesIO(data))
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
    return _read_checked(run_dir / "summary.csv", SUMMARY_NEEDS)


def read_errors(run_dir: Path) -> pd.DataFrame:
    return _read_checked(run_dir / "errors.csv", ERRORS_NEEDS)


def _read_checked(path: Path, needs: dict[str, bool]) -> pd.DataFrame:
    """A run's numbers, read once: the bytes parsed are the bytes checked against its manifest
    (a rerun that commits between a read and a second read for the check would pass an
    earlier run's numbers as the folder's)."""
    data = path.read_bytes()
    table = read_table(path, needs, data)
    check_manifest(path, hashlib.sha256(data).hexdigest())
    return table


def check_manifest(path: Path, sha256: str | None = None) -> None:
    """The one check of a run's folder before any of its files is used (by plot, report, the
    explorer and the API; `genvdis run` checks it likewise, `results.verify`): its
    manifest.json must list every file a run writes, and each file have the bytes listed
    (config.yaml: but for its compare:, `results.check_files`). A file edited or replaced
    since, a manifest edited or removed (`run` finds no finished run there, so no reader
    may use it as one), or a later run killed before its commit ended (its mark,
    `results.COMMITTING`: files of two runs) would put numbers or settings that are not the
    run's in a figure, a report or the API. Only errors.csv may be absent (the committed
    results keep none): nothing is read from it then. `path`: the file about to be used;
    `sha256`: of its bytes as read (default: the file's now)."""
    run_dir = path.parent
    if (run_dir / results.COMMITTING).exists():
        if runlock.in_use(run_dir):
            raise UserError(
                f"{run_dir}: a run is writing its results now; run this command again "
                "when it has finished"
            )
        raise UserError(
            f"{run_dir}: its last run was stopped while writing its results, so its files "
            "may be of two runs; rerun that run to finish it"
        )
    manifest_path = run_dir / results.MANIFEST
    try:
        manifest = results.read_manifest(run_dir)
    except FileNotFoundError:
        raise UserError(
            f"{run_dir}: no {results.MANIFEST}, so no finished run (its run did not finish, or "
            "the file was removed); rerun the run"
        ) from None
    except results.DamagedManifest as problem:
        raise UserError(
            f"{manifest_path}: damaged ({problem}); rerun the run to rewrite it"
        ) from None
    read = {path.name: sha256} if sha256 is not None else {}
    problems = results.check_files(run_dir, manifest, read)
    if problems.get("errors.csv") == "missing":
        del problems["errors.csv"]
    if not problems:
        return
    if path.name in problems and results.output_sha256(path) == manifest.files[path.name]:
        raise UserError(  # the bytes read were not these: a rerun committed meanwhile
            f"{path}: a run wrote its folder while it was read; run this command again (once "
            "no run writes there)"
        )
    name = path.name if path.name in problems else next(iter(problems))
    why = problems[name]
    if why == "missing":
        raise UserError(
            f"{run_dir / name}: missing ({results.MANIFEST} lists it); rerun the run to rewrite it"
        )
    raise UserError(
        f"{run_dir / name}: changed since its run wrote it ({results.MANIFEST} lists other "
        "bytes); rerun the run to rewrite it"
    )


def summary_means(summary: pd.DataFrame) -> pd.DataFrame:
    """summary.csv by (model, m): what a file that records a run's means is checked against."""
    return summary.drop_duplicates(["model", "m"]).set_index(["model", "m"])


def mean_agrees(
    means: pd.DataFrame, model: Any, m: Any, value: Any, splits: Any = None,
    rtol: float = 1e-5, atol: float = 1e-8,
) -> bool:  # fmt: skip
    """Whether a recorded mean (and split count) of `model` at `m` is the run's, `means`
    being its `summary_means`; False where the run has no such row or the value is missing."""
    key = (str(model), m)
    if key not in means.index or pd.isna(value):
        return False
    if splits is not None and means.loc[key, "n_splits"] != splits:
        return False
    return bool(np.isclose(means.loc[key, "mean"], float(value), rtol=rtol, atol=atol))


def check_analysis(run_dir: Path, summary: pd.DataFrame, row: dict[str, Any] | None) -> None:
    """A run's differences.csv and its row of analysis.csv beside it (`row`) are the analysis
    of the run as it was when a report (or a sweep) analysed it; a later rerun of that run
    (another seed, splits or sizes) leaves them describing numbers that are no longer there.
    Their model means and split counts must be those of the run's summary.csv (checked by
    its manifest), else a UserError names the stale file and how to analyse the run again."""
    means = summary_means(summary)
    again = f"analyse it again with `genvdis report {run_dir.parent}`"
    if (run_dir.parent / "variants.csv").is_file():  # a sweep's variant: the sweep analyses it
        again = f"rerun its sweep, or {again}"

    def agrees(model: Any, m: Any, value: Any, splits: Any = None) -> bool:
        return mean_agrees(means, model, m, value, splits, rtol=1e-9, atol=1e-12)

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


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml as a mapping, its name a plain name (the figures are written to
    `<run>/<name>.png`) and its title one that can be drawn, checked against the run's
    manifest (`check_manifest`): an edited n_rows, panel or splits is not the run's."""
    path = run_dir / results.CONFIG
    config = read_yaml(path) if path.is_file() else None
    if isinstance(config, dict):
        _check_names(config, run_dir, path)
    check_manifest(path)
    return config if isinstance(config, dict) else {}


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


def read_analysis(results_dir: Path) -> pd.DataFrame:
    """analysis.csv as written; only empty cells are missing (so the verdict "n/a" survives)."""
    return pd.read_csv(
        results_dir / resultnames.ANALYSIS,
        dtype={"panel": "Int64", "n_rows": "Int64"},
        keep_default_na=False,
        na_values=[""],
    )


def analyse_run(run_dir: Path, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """One run's row of the results table (`analysis.analyse_panel`); writes the tables that
    trace it (differences.csv, shape.csv, fits.csv) into the run's folder."""
    return _analyse_run(run_dir, n_boot, seed).row


def _analyse_run(run_dir: Path, n_boot: int, seed: int) -> PanelAnalysis:
    """`analyse_run` with the run's pairs (pairs.csv's rows) kept too."""
    from genvdis.analysis import differences as analysis

    run_dir = Path(run_dir)
    if not (run_dir / "errors.csv").exists():
        raise UserError(f"{run_dir / 'errors.csv'} not found")
    config = read_panel_config(run_dir)  # its problems first: the run's own settings
    done = analysis.analyse_panel(read_errors(run_dir), config, run_dir.name, n_boot, seed)
    with results.writing(run_dir, "the analysis", results.AGAIN):
        for name, table in done.tables.items():
            results.atomic_write_csv(run_dir / name, table)
    return done


def analyse_results(
    results_dir: Path, n_boot: int = 1000, seed: int = 0, jobs: int = 1
) -> pd.DataFrame:
    """Every run under `results_dir` with an errors.csv analysed (on up to `jobs` processes:
    each run's analysis is its own), and the table of them written as analysis.csv (ordered
    by paper panel, then name)."""
    return analyse_folders([results_dir], n_boot, seed, jobs)[0]


def analyse_folders(
    folders: list[Path], n_boot: int = 1000, seed: int = 0, jobs: int = 1
) -> list[pd.DataFrame]:
    """`analyse_results` for several results folders at once: every run of every folder in
    one pool (one start-up, and the long runs of one folder overlap the other's), then each
    folder's analysis.csv (and pairs.csv) in turn. Returns their tables, in `folders`' order."""
    from genvdis.experiment import _pool as pool

    runs = {Path(folder): _runs_to_analyse(Path(folder)) for folder in folders}
    items = list(dict.fromkeys(run for found in runs.values() for run in found))
    work = functools.partial(_analyse_run, n_boot=n_boot, seed=seed)
    done = pool.map_ordered(work, items, jobs, cost=lambda p: (p / "errors.csv").stat().st_size)
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
    from genvdis.analysis import differences as analysis

    table = analysis.results_table([d.row for d in done])
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
