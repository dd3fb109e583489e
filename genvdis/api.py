"""The Python API, for notebooks: load a config, run it, look at the results.

`genvdis run` and `genvdis plot` are thin layers over these functions, so a run started here
uses the same engine, checkpoints and files, and writes the same bytes, as the command line.
Heavy libraries are imported inside the functions: `import genvdis` stays cheap.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genvdis.errors import UserError
from genvdis.runresults import Results, open_results

__all__ = [
    "Results", "check_distinct_names", "check_distinct_panels", "check_run_options", "load_config",
    "open_results", "run", "run_study", "sweep",
]  # fmt: skip

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    import pandas as pd

    from genvdis.config.experiment import ExperimentConfig
    from genvdis.progress import Progress

RUN_OPTIONS = ("jobs", "backend", "scheduler", "progress", "force", "wait", "allow_imports")
WORKERS, PREFIXES = "a whole number of workers", "import prefixes"


def _path_arg(name: str, value: Any, what: str) -> None:
    """A str or Path argument; anything else is a one-line UserError naming it (not a
    TypeError from deep inside)."""
    if not isinstance(value, (str, os.PathLike)):
        raise UserError(f"{name}: give {what} as a path, not {type(value).__name__}")


def _mirror_arg(mirror: Any) -> str | None:
    """--mirror as a str: a URL or a folder, given as str or Path."""
    if mirror is None or isinstance(mirror, str):
        return mirror
    if isinstance(mirror, os.PathLike):
        return os.fspath(mirror)
    raise UserError(
        f"--mirror: give a URL or a folder as a str or Path, not {type(mirror).__name__}"
    )


# --------------------------------------------------------------------------- argument checks
# Each public function checks its arguments once, here, so that a wrong type is one line
# naming the argument, never a traceback from deep inside or a value silently misread.


def _whole(name: str, value: Any, what: str = "a whole number") -> int:
    """An integer argument as int: Python's or numpy's, not a bool (True is not 1 worker) and
    not a float (2.5 splits has no meaning; 2.0 is a slip worth a word)."""
    if not isinstance(value, bool) and type(value).__name__ not in ("bool", "bool_"):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise UserError(f"{name}: give {what}, not {type(value).__name__}")


def _optional_whole(name: str, value: Any) -> int | None:
    return None if value is None else _whole(name, value)


def _flag(name: str, value: Any) -> bool:
    """A real bool (numpy's too): "no" or 0 would be taken as true or false unseen, and
    `force` bypasses the bounds."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    raise UserError(f"{name}: give True or False, not {type(value).__name__}")


def _strings(name: str, value: Any, what: str, *, single: bool) -> list[str]:
    """A list (or tuple) of str, None for none. A lone str is one item if `single` (what
    vary="split=random" means), else refused (as a list, its letters would be read)."""
    if value is None:
        return []
    if isinstance(value, str):
        if single:
            return [value]
        raise UserError(f"{name}: give a list of {what}, not the str '{value}'")
    if not isinstance(value, list | tuple):
        raise UserError(f"{name}: give a list of {what}, not {type(value).__name__}")
    for item in value:
        if not isinstance(item, str):
            raise UserError(f"{name}: give a list of {what} (str), not one holding {item!r}")
    return list(value)


def _sources(name: str, value: Any) -> list[Any]:
    """One config or a list (tuple, iterator) of them, at least one; each checked by its
    user."""
    sources = list(value) if isinstance(value, list | tuple | Iterator) else [value]
    if not sources:
        raise UserError(f"{name}: the list is empty; give at least one config")
    return sources


def _run_options(
    jobs: Any = 1, backend: Any = "processes", scheduler: Any = None, progress: Any = None,
    force: Any = False, wait: Any = False, allow_imports: Any = (),
) -> dict[str, Any]:  # fmt: skip
    """`run`'s execution options checked and normalised (`sweep` passes them on to it)."""
    check_run_options(jobs=jobs, backend=backend, scheduler=scheduler, allow_imports=allow_imports)
    if progress is not None and not callable(progress):
        raise UserError(
            f"progress: give a callable (see genvdis.progress) or None, not "
            f"{type(progress).__name__}"
        )
    return {
        "jobs": _whole("--jobs", jobs, WORKERS), "backend": backend, "scheduler": scheduler,
        "progress": progress, "force": _flag("force", force), "wait": _flag("wait", wait),
        "allow_imports": tuple(_strings("--allow-import", allow_imports, PREFIXES, single=False)),
    }  # fmt: skip


def _passed_run_options(caller: str, options: dict[str, Any]) -> dict[str, Any]:
    """`run`'s options passed on by `caller` through its ``**options``: a key `run` does not
    take is named, not a TypeError."""
    unknown = [key for key in options if key not in RUN_OPTIONS]
    if unknown:
        raise UserError(f"{caller}: no argument '{unknown[0]}' (run's: {', '.join(RUN_OPTIONS)})")
    return _run_options(**options)


def load_config(source: str | Path) -> ExperimentConfig:
    """Read and validate a run config: a YAML file, or the name of a built-in one.

    Parameters
    ----------
    source : str or Path
        A config file's path; or, when no such file exists, the name of a built-in config
        (`genvdis configs` lists them: the 15 Figure 1 panels and the worked examples).

    Returns
    -------
    ExperimentConfig
        The validated config (frozen; ``config.with_overrides(splits=...)`` makes a copy).

    Raises
    ------
    UserError
        The file is missing or invalid, or the name is not a built-in one; the message
        names the file and the field.

    Examples
    --------
    >>> import genvdis
    >>> cfg = genvdis.load_config("pima")
    >>> cfg.dataset, cfg.size_grid[:4], cfg.splits
    ('pima', [10, 15, 20, 30], 1000)
    """
    from genvdis.config import builtin
    from genvdis.config import experiment as config

    _path_arg("config", source, "a config file or a built-in name")
    return config.load_config(builtin.resolve(source, "panel"))


def check_distinct_names(configs: Sequence[tuple[str, Any]]) -> None:
    """Configs run in one command each write ``<out>/<name>``: two different configs of one
    name would overwrite each other's results (the first lost, exit 0), so they are refused
    before anything runs. The same config twice is one run, found up to date the second time.

    Parameters
    ----------
    configs : sequence of (str, config)
        Each config (an `ExperimentConfig`, or a theory config) with what names it to the user
        (its file).

    Raises
    ------
    UserError
        Naming the two files and their shared name.
    """
    clash = _clash(configs, key=lambda config: config.name, same=lambda a, b: a == b)
    if clash:
        (first, _), (label, config) = clash
        raise UserError(
            f"{first} and {label}: both are named '{config.name}' and would write one "
            "results folder, the second run replacing the first; give them different names"
        )


def check_inputs_kept(source: str | Path, config: Any, out: str | Path) -> None:
    """A run writes config.yaml, errors.csv, summary.csv and manifest.json into
    ``<out>/<name>``: none of them may be the config file being run, or its data file (a
    config kept as ``results/tiny/config.yaml`` and run with ``--out results`` was replaced by
    the run's resolved config, its comments lost, exit 0).

    Parameters
    ----------
    source : str or Path
        The config's file (a built-in name is no file here: nothing to check).
    config : ExperimentConfig
        The config read from it.
    out : str or Path
        The results folder.

    Raises
    ------
    UserError
        Naming the file the run would overwrite and --out.
    """
    from genvdis.data.sources import source_of
    from genvdis.store import results

    run_dir = Path(out) / config.name
    inputs = {"the config file": Path(source)}
    inputs.update(source_of(config.dataset, config.data_dir).inputs())
    for name in (*results.OUTPUTS, results.MANIFEST):
        for what, path in inputs.items():
            with contextlib.suppress(OSError):  # either missing: nothing is overwritten
                if os.path.samefile(path, run_dir / name):
                    raise UserError(
                        f"--out {out}: the run would write {run_dir / name}, which is {what} "
                        f"itself; give another --out, or keep the file outside {run_dir}"
                    )


def check_distinct_panels(configs: Sequence[tuple[str, Any]]) -> None:
    """Figure 1 draws one run per `panel:` number: of two differently named configs with the
    same panel run in one command, the figure would show one and leave the other out without a
    word, so they are refused before anything runs.

    Parameters
    ----------
    configs : sequence of (str, config)
        Each config with what names it to the user (its file).

    Raises
    ------
    UserError
        Naming the two files and their shared panel.
    """
    clash = _clash(
        configs,
        key=lambda config: getattr(config, "panel", None),
        same=lambda a, b: a.name == b.name,
    )
    if clash:
        (first, _), (label, config) = clash
        raise UserError(
            f"{first} and {label}: both are panel {config.panel}, and Figure 1 draws one run per "
            "panel (the other would be left out); remove panel: from one of them"
        )


def _clash(
    configs: Sequence[tuple[str, Any]],
    key: Callable[[Any], Any],
    same: Callable[[Any, Any], bool],
) -> tuple[tuple[str, Any], tuple[str, Any]] | None:
    """The first two (label, config) with one `key` (None: no key) that are not `same`."""
    first: dict[Any, tuple[str, Any]] = {}
    for label, config in configs:
        value = key(config)
        if value is None:
            continue
        seen = first.setdefault(value, (label, config))
        if not same(seen[1], config):
            return seen, (label, config)
    return None


def check_run_options(
    *,
    jobs: int = 1,
    backend: str = "processes",
    scheduler: str | None = None,
    allow_imports: Iterable[str] = (),
) -> None:
    """Check how a run is to execute, before anything runs (`genvdis run` checks this before
    it reads any config). What a run computes (``splits``, ``seed``) is the config's to check:
    `run` validates those overrides with the config's own fields.

    Parameters
    ----------
    jobs, backend, scheduler, allow_imports
        As `run` takes them.

    Raises
    ------
    UserError
        For a value no run can take, naming the option as the command line spells it.

    Examples
    --------
    >>> from genvdis.api import check_run_options
    >>> check_run_options(jobs=2, backend="threading")
    >>> check_run_options(jobs=0)
    Traceback (most recent call last):
    genvdis.errors.UserError: --jobs must be >= 1
    """
    from genvdis._runtime import parallel as pool
    from genvdis.models import estimators

    pool.check_jobs(_whole("--jobs", jobs, WORKERS))
    if not isinstance(backend, str) or backend not in pool.BACKENDS:
        raise UserError(f"--backend must be one of {', '.join(pool.BACKENDS)}, not {backend!r}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise UserError(f"--scheduler: give an address as a str, not {type(scheduler).__name__}")
    if scheduler and backend != "dask":
        raise UserError("--scheduler needs --backend dask")
    prefixes = _strings("--allow-import", allow_imports, PREFIXES, single=False)
    if prefixes or os.environ.get(estimators.ALLOW_ENV):
        estimators.allowed_prefixes(prefixes)


def validate(configs: Iterable[str | Path], allow_imports: Iterable[str] = ()) -> Iterator[str]:
    """Check configs without fetching data or running, as `genvdis validate` does: the schema,
    a registered dataset's name, estimator entries (imported only within the allow-list) and a
    ``variants:`` block. Theory configs are recognised and checked as such.

    Parameters
    ----------
    configs : str or Path, or a list of them (not empty)
        YAML files, or built-in names.
    allow_imports : list of str
        Import prefixes estimator entries may use besides ``sklearn`` (a lone str is refused).

    Yields
    ------
    str
        One line per config as it checks: ``"<config>: ok (<name>, <n> sizes)"``.

    Raises
    ------
    UserError
        At the first config that does not check, in one line naming it and its field.

    Examples
    --------
    >>> from genvdis.api import validate
    >>> list(validate(["pima"]))
    ['pima: ok (pima, 13 sizes)']
    """
    from genvdis.config import builtin
    from genvdis.config.experiment import (
        VARIANTS_KEY,
        is_theory_config,
        parse_config,
        read_from,
        read_yaml,
    )
    from genvdis.config.theory import parse_theory_config
    from genvdis.config.variants import check_block
    from genvdis.experiment import engine
    from genvdis.models import estimators

    sources = _sources("configs", [configs] if isinstance(configs, str | os.PathLike) else configs)
    allow_imports = _strings("--allow-import", allow_imports, PREFIXES, single=False)
    for source in sources:
        _path_arg("configs", source, "a config file or a built-in name")
    checked: list[tuple[str, Any]] = []  # refused together as `run` does (a theory and a run
    # of one name would write one folder too)
    for path in sources:
        file = builtin.resolve(path)
        data = read_yaml(file)
        if is_theory_config(data):
            theory = parse_theory_config(data, str(path))
            checked.append((str(path), theory))
            check_distinct_names(checked)
            yield f"{path}: ok (theory {theory.name}, {len(theory.n)} values of n)"
            continue
        block = data.pop(VARIANTS_KEY, None) if isinstance(data, dict) else None
        config = read_from(parse_config(data, str(path)), file)
        checked.append((str(path), config))
        check_distinct_names(checked)
        check_distinct_panels(checked)
        try:
            _check_columns(config, file)
            estimators.check_config(config.models, tuple(allow_imports))
            engine.check_sizes_at_hand(config, file.parent)  # the m grid against the classes
        except UserError as error:
            raise UserError(f"{path}: {error}") from None
        n = check_block(config, block, path)
        more = f", {n} variants" if n else ""
        yield f"{path}: ok ({config.name}, {len(config.size_grid)} sizes{more})"


def _check_columns(config: ExperimentConfig, file: Path) -> None:
    """What `validate` can check of a config's data without reading or fetching it: a
    registered dataset's name and attribute names, a local table (a regular file, there):
    `Source.check_offline`, a relative path read from the config file's folder."""
    from genvdis.data.sources import source_of

    source_of(config.dataset, file.parent).check_offline(config.attributes)


def run(  # its length is the numpydoc docstring; the code is under 30 lines
    config: ExperimentConfig | str | Path,
    *,
    splits: int | None = None,
    seed: int | None = None,
    jobs: int = 1,
    out: str | Path = "results",
    backend: str = "processes",
    scheduler: str | None = None,
    mirror: str | None = None,
    progress: Progress | None = None,
    force: bool = False,
    wait: bool = False,
    allow_imports: Iterable[str] = (),
) -> Results:
    """Run (or resume, or find finished) one config's experiment, as `genvdis run` does.

    Parameters
    ----------
    config : ExperimentConfig, str or Path
        A config from `load_config`, or what `load_config` accepts (a path or a built-in name).
    splits, seed : int, optional
        Replace the config's number of splits per m, and its seed (Python or numpy integers;
        every integer argument takes both, never a bool or a float).
    jobs : int
        Parallel workers (capped at the cores; a run on processes estimated under 2
        CPU-seconds where they are forked, 4 on loky's, stays in this process, where it is
        over sooner).
    out : str or Path
        The results folder; the run writes ``<out>/<config name>/``.
    backend : {'processes', 'loky', 'threading', 'dask'}
        How the workers run (``processes``: forked from this process where that is safe,
        else loky's); ``scheduler`` is a dask scheduler's address (dask only).
    mirror : str, optional
        A base URL or folder replacing the UCI archive (default: ``$GENVDIS_MIRROR``).
    progress : callable, optional
        Told of the run's progress: called as ``progress(name, total_blocks)``, it returns a
        context manager giving a function of the blocks just finished (see
        `genvdis.progress`; ``genvdis.progress.rich_bar`` is the command line's bar). Default:
        nothing is shown; the API never prints.
    force, wait : bool
        True or False only (numpy's too): ``force="no"`` is refused, not taken as true.
        ``force``: run beyond the work, memory and size bounds, and on more workers than cores.
        ``wait``: if another run holds the run folder, wait for it instead of raising
        `UserError`.
    allow_imports : list of str
        Import prefixes (packages) that estimator entries may name besides ``sklearn``, as
        ``--allow-import`` (``$GENVDIS_ALLOW_IMPORTS`` adds more); see docs/config.md. A lone
        str is refused (its letters would be read as prefixes).

    Returns
    -------
    Results
        The finished run. Its CSVs are byte-identical to the command line's for the same
        config, splits and seed, whatever ``jobs`` and ``backend``.

    Examples
    --------
    >>> import genvdis
    >>> res = genvdis.run("pima", splits=20, out="results")
    >>> res.path.as_posix(), res.splits
    ('results/pima', 20)
    """
    from genvdis.config.experiment import ExperimentConfig
    from genvdis.experiment import engine

    options = _run_options(jobs, backend, scheduler, progress, force, wait, allow_imports)
    splits, seed = _optional_whole("splits", splits), _optional_whole("seed", seed)
    _path_arg("out", out, "the results folder")
    mirror = _mirror_arg(mirror)
    if not isinstance(config, ExperimentConfig):
        source, config = config, load_config(config)
        check_inputs_kept(source, config, out)
    config = config.with_overrides(splits=splits, seed=seed)
    run_dir = engine.run_experiment(
        config, Path(out), mirror=mirror, base_dir=config.data_dir, **options
    )
    return Results(run_dir)


def sweep(
    configs: ExperimentConfig | str | Path | list,
    *,
    vary: list[str] | None = None,
    variants: str | Path | None = None,
    splits: int | None = None,
    seed: int | None = None,
    out: str | Path = "results",
    mirror: str | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Run configs under variants of their settings, as `genvdis sweep` does (docs/sweeps.md).

    Parameters
    ----------
    configs : ExperimentConfig, str or Path, or a list (or tuple) of them, not empty
        As `run` takes one.
    vary : list of str, optional
        ``"KEY=V1,V2"`` items, as ``--vary`` takes them: their cross product. A lone str is
        one item (``vary="split=random"``).
    variants : str or Path, optional
        A YAML file holding a ``variants:`` block. Without it and `vary`, each config's own
        ``variants:`` block.
    splits, seed, out, mirror
        As `run` takes them; ``options`` are `run`'s jobs, backend, scheduler, progress,
        force, wait and allow_imports.

    Returns
    -------
    DataFrame
        The configs' rows of ``<out>/sensitivity.csv``: one per config and variant, the
        baseline first; each variant's files are in ``<out>/<name>/variants/<id>/``.

    Examples
    --------
    >>> import genvdis
    >>> table = genvdis.sweep("pima", vary=["split=random"], splits=20, out="results")
    >>> list(table["variant"])
    ['baseline', 'split=random']
    """
    from genvdis.config import builtin
    from genvdis.config.experiment import ExperimentConfig
    from genvdis.experiment import sweeps

    options = _passed_run_options("sweep", options)
    splits, seed = _optional_whole("splits", splits), _optional_whole("seed", seed)
    vary = _strings("vary", vary, "KEY=V1,V2 items", single=True)
    if variants is not None:
        _path_arg("variants", variants, "a variants file")
    _path_arg("out", out, "the results folder")
    mirror = _mirror_arg(mirror)
    sources = _sources("configs", configs)
    given = sweeps.given_variants(vary, variants, options["force"])
    named = []  # (where, config, path) of each source
    for source in sources:
        if not isinstance(source, ExperimentConfig):
            _path_arg("configs", source, "a config file or a built-in name")
        path = None if isinstance(source, ExperimentConfig) else builtin.resolve(source, "panel")
        config = source if path is None else load_config(source)
        config = config.with_overrides(splits=splits, seed=seed)
        named.append((str(config.name if path is None else source), config, path))
    check_distinct_names([(where, config) for where, config, _ in named])
    plans = [
        sweeps.plan_config(config, where, path, given, mirror, options["force"])
        for where, config, path in named
    ]
    return sweeps.run_sweeps(plans, Path(out), mirror=mirror, **options)


def run_study(
    configs: str | Path | Sequence[str | Path] | None = None,
    *,
    splits: int | None = None,
    seed: int | None = None,
    out: str | Path = "results",
    mirror: str | None = None,
    skip_invalid: bool = False,
    **options: Any,
) -> list[Results]:
    """Run many configs in one pool of workers, as `genvdis study` does (docs/usage.md).

    Parameters
    ----------
    configs : str or Path, or a list of them, optional
        Config files, folders of configs (their ``*.yaml`` files) or built-in names; each
        run goes into ``<out>/<name>/``. None: the built-in study, the Figure 1 panels into
        ``<out>/`` and every config of ``configs/study/`` into ``<out>/study/``.
    splits, seed, out, mirror
        As `run` takes them; ``options`` are `run`'s jobs, backend, scheduler, progress,
        force, wait and allow_imports.
    skip_invalid : bool
        Leave out, with a warning, a config that does not check (its schema, dataset, data or
        m grid), instead of refusing the whole study before it starts.

    Returns
    -------
    list of Results
        Every run, in the configs' order; each run's files are the bytes `run` writes for the
        same config, splits and seed.
    """
    from genvdis.experiment import study

    options = _passed_run_options("run_study", options)
    splits, seed = _optional_whole("splits", splits), _optional_whole("seed", seed)
    skip = _flag("skip_invalid", skip_invalid)
    _path_arg("out", out, "the results folder")
    mirror = _mirror_arg(mirror)
    if configs is None:
        entries = study.builtin_entries(Path(out))
    else:
        sources = _sources("configs", configs)
        for source in sources:
            _path_arg("configs", source, "a config file, a folder or a built-in name")
        entries = study.collect(sources, Path(out))
    loaded = []
    for entry in entries:
        config = study.checked(
            entry.source, skip, functools.partial(_study_config, entry, splits, seed)
        )
        if config is not None:
            loaded.append((entry.source, entry, config))
    for folder in sorted(
        {entry.out for _, entry, _ in loaded}
    ):  # one folder's runs: distinct names
        named = [(label, config) for label, entry, config in loaded if entry.out == folder]
        check_distinct_names(named)
        check_distinct_panels(named)
    done = study.run_study(loaded, mirror=mirror, skip=skip, **options)
    return [Results(path) for path in done]


def report_study(
    results: Sequence[Results], out: str | Path, *, jobs: int = 1, n_boot: int = 2000
) -> list[Path]:
    """The study's figures and reports over its runs, as `genvdis study` writes them after
    the runs: each results folder holding a run gets its figures (`genvdis plot`) and its
    REPORT.md, analysis.csv and explorer page (`genvdis report`); then the cross-dataset
    report (STUDY.md, study.csv, figures, study-explorer.html: docs/study.md) goes into
    `out`, with the verdicts under a sweep's variants where a folder holds its
    sensitivity.csv. Returns the files written."""
    from genvdis.config.resultnames import SENSITIVITY
    from genvdis.report.markdown import write_reports
    from genvdis.report.plotting import plot_folders
    from genvdis.report.study import write_study

    folders = list(dict.fromkeys(result.path.parent for result in results))
    written = list(plot_folders(folders, jobs=jobs))
    # the study's own folder is shown by its own explorer pages, not by the one above it
    written += [
        path for pair in write_reports(folders, jobs=jobs, apart=[Path(out)]) for path in pair
    ]
    sweeps = [folder for folder in folders if (folder / SENSITIVITY).is_file()]
    return written + list(write_study(folders, Path(out), sweeps=sweeps, n_boot=n_boot))


def study_report_folder(out: str | Path, builtin: bool) -> Path:
    """Where `genvdis study` writes its cross-dataset report: `out` for the configs it was
    given; for the built-in study, `<out>/study/`, beside the study's own datasets' runs and
    apart from the Figure 1 panels' (`run_study` with no configs)."""
    from genvdis.experiment import study

    return Path(out) / study.STUDY if builtin else Path(out)


def _study_config(entry: Any, splits: int | None, seed: int | None) -> ExperimentConfig:
    """A study's config, checked as `run` checks one: its file, the overrides, --out."""
    from genvdis.experiment import study
    from genvdis.store import results

    config = study.load(entry).with_overrides(splits=splits, seed=seed)
    results.prepare_output(entry.out, config.name)
    check_inputs_kept(entry.source, config, entry.out)
    return config


def run_theory(config: Any, out: str | Path = "results", **options: Any) -> Path:
    """Run one theory config (`genvdis theory`): genvdis.experiment.theory's run, with its
    figure drawn by the report layer (this layer joins the two). `options` are run_theory's
    jobs, splits, progress, force and wait; returns the theory's folder."""
    from genvdis.experiment import theory
    from genvdis.report import plotting

    return theory.run_theory(config, Path(out), figure=plotting.plot_theory, **options)
