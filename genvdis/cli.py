"""The `genvdis` command line. It only parses options and delegates to the modules.

Exit codes: 0 ok, 2 bad input (config, data, options) or a machine problem the user can fix
(a full disk, a run folder in use), 1 internal error (a bug: please report).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from genvdis._version import __version__

app = typer.Typer(
    help="Naive Bayes vs. logistic regression learning curves (Ng & Jordan, 2001).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
log = logging.getLogger("genvdis")

Mirror = Annotated[
    str | None,
    typer.Option(
        "--mirror", envvar="GENVDIS_MIRROR", help="Base URL or local folder replacing the UCI base."
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar; errors only.")]
Jobs = Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers.")]
Splits = Annotated[int | None, typer.Option(help="Splits per m (default: config).")]
Out = Annotated[Path, typer.Option(help="Results folder.")]
RunConfigs = Annotated[
    list[str], typer.Argument(help="YAML config files, or built-in names (genvdis configs).")
]
AllowImport = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-import",
        help="Let estimator entries import from this package too (besides sklearn); repeatable.",
    ),
]
Wait = Annotated[
    bool, typer.Option("--wait", help="If another run is using a run folder, wait for it.")
]
SeedOption = Annotated[int | None, typer.Option("--seed", help="Random seed (default: config).")]
Backend = Annotated[
    str,
    typer.Option(help="processes (forked where safe, else loky), loky, threading or dask."),
]
Scheduler = Annotated[
    str | None, typer.Option(help="dask scheduler address (default: a local cluster).")
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Run beyond the work, memory and size bounds, and on more workers than cores "
        "(or than a short run would use).",
    ),
]


def _one_line(message: str) -> str:
    """A message as one line: the line breaks it quotes (a data cell that a stray '"' ran
    across lines, a label with a newline) written as \\n and \\r."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def _guarded(command):
    """Turn a UserError into one line + exit 2, and any other exception into one line + 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from genvdis.errors import UserError

        try:
            return command(*args, **kwargs)
        except UserError as error:
            typer.echo(f"error: {_one_line(str(error))}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: finished blocks are kept; rerun to resume", err=True)
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as error:  # a bug, not the user's fault
            log.debug("internal error", exc_info=True)
            typer.echo(f"internal error: {type(error).__name__}: {_one_line(str(error))}", err=True)
            raise typer.Exit(1) from None

    return wrapper


def _print_version(value: bool) -> None:
    """Eager, so that `genvdis --version` works without a command."""
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log details.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """genvdis: reproduce Ng & Jordan's Figure 1, and run its protocol on your own data."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)  # main() may run more than once in a process (tests)
    root.addHandler(_StderrHandler(verbose))
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.captureWarnings(True)  # Python warnings are log lines too: --quiet hides them


class _StderrHandler(logging.StreamHandler):
    """Log lines on whatever sys.stderr is now; other libraries' chatter (dask's INFO lines,
    matplotlib's) only from WARNING up, unless --verbose."""

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass

    def filter(self, record: logging.LogRecord) -> bool:
        ours = record.name == "genvdis" or record.name.startswith("genvdis.")
        return ours or self.verbose or record.levelno >= logging.WARNING


def _start_run(quiet: bool):
    """The logging level for `run` and `theory`; returns the progress bar to show (None: no
    bar, with --quiet or when stderr is not a terminal)."""
    if quiet:  # errors only: no progress, no notices, no warnings
        logging.getLogger().setLevel(logging.ERROR)
    if quiet or not sys.stderr.isatty():
        return None
    from genvdis.progress import rich_bar

    return rich_bar


def _headless() -> None:
    """Figures are only saved: the Agg backend needs no display (chosen here, not on import
    of genvdis.report.plotting, so that notebooks keep theirs)."""
    import matplotlib

    matplotlib.use("Agg")


@app.command()
@_guarded
def fetch(
    names: Annotated[list[str] | None, typer.Argument(help="Registered dataset names.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every registered dataset.")] = False,
    mirror: Mirror = None,
) -> None:
    """Download datasets (and their .names files) into the cache, checking each sha256."""
    from genvdis.data import fetch as fetching
    from genvdis.data import uci as datasets
    from genvdis.errors import UserError

    for name in names or []:  # checked with --all too: a misspelt name is not skipped
        datasets.get_info(name)
    chosen = list(datasets.REGISTRY) if all_ else list(names or [])
    if not chosen:
        raise UserError("name at least one dataset, or use --all")
    for name in chosen:
        paths = datasets.fetch_dataset(name, mirror=mirror, docs=True)
        typer.echo(f"{name}: {len(paths)} file(s) in {fetching.data_dir()}")


@contextlib.contextmanager
def _of_config(path: str) -> Iterator[None]:
    """A UserError inside said of the config at `path` (an option's, `--...`, as is): which
    config, when several run in one go."""
    from genvdis.errors import UserError

    try:
        yield
    except UserError as error:
        if str(error).startswith("--"):
            raise
        raise UserError(f"{path}: {error}") from None


def _load_engine() -> None:
    """Import the engine and its libraries with the garbage collector paused
    (`tuning.collector_paused`): ~45 ms of a run's start."""
    from genvdis._runtime import tuning

    with tuning.collector_paused():
        from genvdis.experiment import engine  # noqa: F401


@app.command()
@_guarded
def run(
    configs: RunConfigs,
    splits: Splits = None,
    jobs: Jobs = 1,
    seed: SeedOption = None,
    out: Out = Path("results"),
    backend: Backend = "processes",
    scheduler: Scheduler = None,
    mirror: Mirror = None,
    quiet: Quiet = False,
    wait: Wait = False,
    force: Force = False,
    allow_import: AllowImport = None,
) -> None:
    """Run the protocol: S random splits per m, every model, errors and summary CSVs."""
    _load_engine()
    from genvdis import api
    from genvdis._runtime import parallel as pool
    from genvdis.store import results

    progress = _start_run(quiet)
    options = dict(jobs=jobs, backend=backend, scheduler=scheduler)
    options["allow_imports"] = allow_import or ()
    api.check_run_options(**options)  # --splits and --seed: checked by the config, as overrides
    loaded = [api.load_config(path).with_overrides(splits=splits, seed=seed) for path in configs]
    named = [(str(path), config) for path, config in zip(configs, loaded, strict=True)]
    api.check_distinct_names(named)  # before anything runs
    api.check_distinct_panels(named)
    for path, config in named:  # --out, and no theory's folder of a config's name
        with _of_config(path):
            results.prepare_output(out, config.name)
            api.check_inputs_kept(path, config, out)
    with pool.local_cluster_kept():  # --backend dask: one LocalCluster for all the configs
        for path, config in zip(configs, loaded, strict=True):
            before = _manifest_stamp(out / config.name)
            with _of_config(path):
                done = api.run(
                    config, out=out, mirror=mirror, progress=progress, force=force, wait=wait,
                    **options,
                )  # fmt: skip
            if before is None or _manifest_stamp(done.path) != before:  # else: "up to date"
                log.info("%s: wrote %s", config.name, done.path)


def _manifest_stamp(run_dir: Path) -> tuple[int, int] | None:
    """The run folder's manifest file (inode, mtime): a run that wrote anything committed a
    new one (written, then renamed into place); one found up to date left it as it was."""
    from genvdis.store.results import MANIFEST

    try:
        found = (run_dir / MANIFEST).stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


@app.command()
@_guarded
def sweep(
    configs: RunConfigs,
    vary: Annotated[
        list[str] | None,
        typer.Option(
            "--vary",
            help="KEY=V1,V2: a config key (dotted, or separable, laplace, continuous, bins) and "
            "its values; several --vary: their cross product.",
        ),
    ] = None,
    variants: Annotated[
        Path | None, typer.Option(help="A YAML file with a variants: block (docs/sweeps.md).")
    ] = None,
    splits: Splits = None,
    jobs: Jobs = 1,
    seed: SeedOption = None,
    out: Out = Path("results"),
    backend: Backend = "processes",
    scheduler: Scheduler = None,
    mirror: Mirror = None,
    quiet: Quiet = False,
    wait: Wait = False,
    force: Force = False,
    allow_import: AllowImport = None,
) -> None:
    """Run configs under variants of their settings: <out>/<name>/variants/, sensitivity.csv."""
    _load_engine()
    from genvdis import api

    table = api.sweep(
        configs, vary=vary, variants=variants, splits=splits, seed=seed, out=out, mirror=mirror,
        jobs=jobs, backend=backend, scheduler=scheduler, progress=_start_run(quiet),
        force=force, wait=wait, allow_imports=allow_import or (),
    )  # fmt: skip
    log.info("wrote %s: %d variants", out / "sensitivity.csv", len(table))


@app.command()
@_guarded
def study(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Config files, folders of configs, or built-in names (default: the built-in "
            "study: the Figure 1 panels and configs/study/).",
            show_default=False,
        ),
    ] = None,
    splits: Splits = None,
    jobs: Jobs = 1,
    seed: SeedOption = None,
    out: Out = Path("results"),
    backend: Backend = "processes",
    scheduler: Scheduler = None,
    mirror: Mirror = None,
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid",
            help="Leave out, with a warning, a config that does not check (default: refuse "
            "the study before it starts).",
        ),
    ] = False,
    quiet: Quiet = False,
    wait: Wait = False,
    force: Force = False,
    allow_import: AllowImport = None,
) -> None:
    """Run many configs in one pool of workers: each into <out>/<name>/, as `run` writes it."""
    _load_engine()
    from genvdis import api

    done = api.run_study(
        paths or None, splits=splits, seed=seed, out=out, mirror=mirror,
        skip_invalid=skip_invalid, jobs=jobs, backend=backend, scheduler=scheduler,
        progress=_start_run(quiet), force=force, wait=wait, allow_imports=allow_import or (),
    )  # fmt: skip
    _headless()
    for path in api.report_study(done, api.study_report_folder(out, not paths), jobs=jobs):
        typer.echo(str(path))


@app.command()
@_guarded
def theory(
    configs: Annotated[
        list[str], typer.Argument(help="Theory YAML configs, or built-in names (genvdis configs).")
    ],
    splits: Splits = None,
    jobs: Jobs = 1,
    out: Out = Path("results"),
    quiet: Quiet = False,
    wait: Wait = False,
    force: Force = False,
) -> None:
    """Sample complexity on synthetic data: m*(eps) vs n features, NB vs LR, with fits."""
    _load_engine()
    from genvdis import api
    from genvdis.config import builtin
    from genvdis.config.theory import load_theory_config
    from genvdis.store.results import prepare_output

    progress = _start_run(quiet)
    api.check_run_options(jobs=jobs)
    _headless()
    loaded = [load_theory_config(builtin.resolve(path, "theory")) for path in configs]
    loaded = [config.with_overrides(splits=splits) for config in loaded]
    api.check_distinct_names(list(zip(configs, loaded, strict=True)))  # before anything runs
    for path, config in zip(configs, loaded, strict=True):  # --out, and no run's folder there
        with _of_config(path):
            prepare_output(out, config.name, "theory")
    for config in loaded:
        # run_theory says itself what it did: "wrote <dir> in N s", or "up to date (<dir>)"
        api.run_theory(config, out, jobs=jobs, progress=progress, force=force, wait=wait)


@app.command()
@_guarded
def plot(
    results_dirs: Annotated[
        list[Path] | None,
        typer.Argument(help="Results folders, or runs (default: results).", show_default=False),
    ] = None,
    jobs: Jobs = 1,
) -> None:
    """Draw error vs. m for every run, and Figure 1 (3 x 5) when paper panels are there."""
    _headless()
    from genvdis._runtime import parallel as pool
    from genvdis.report.plotting import plot_folders

    pool.check_jobs(jobs)
    for path in plot_folders(results_dirs or [Path("results")], jobs=jobs):
        typer.echo(str(path))


def _check_boot(boot: int) -> None:
    """--boot within the bounds the statistics take, checked before any folder is read."""
    from genvdis.config.experiment import MAX_BOOT, MIN_BOOT
    from genvdis.errors import UserError

    if not MIN_BOOT <= boot <= MAX_BOOT:
        raise UserError(f"--boot must be from {MIN_BOOT} to {MAX_BOOT}, not {boot}")


@app.command()
@_guarded
def report(
    results_dirs: Annotated[
        list[Path] | None,
        typer.Argument(help="The results folders (default: results).", show_default=False),
    ] = None,
    boot: Annotated[int, typer.Option(help="Bootstrap resamples for the crossover.")] = 1000,
    serve: Annotated[
        bool, typer.Option("--serve", help="Then serve the folder on 127.0.0.1 until Ctrl-C.")
    ] = False,
    port: Annotated[int, typer.Option(help="Port for --serve (0: any free port).")] = 8000,
    jobs: Jobs = 1,
) -> None:
    """Crossovers, asymptotes and verdicts per run: REPORT.md, REPORT.html, explorer.html."""
    from genvdis._runtime import parallel as pool
    from genvdis.errors import UserError
    from genvdis.report import explorer
    from genvdis.report.markdown import write_reports
    from genvdis.store import results

    folders = results_dirs or [Path("results")]
    _check_boot(boot)
    if serve and len(folders) > 1:
        raise UserError(f"--serve serves one results folder, not {len(folders)}")
    pool.check_jobs(jobs)
    for results_dir in folders:
        results.find_runs(results_dir)
    server = explorer.make_server(folders[0], port) if serve else None
    written = write_reports(folders, n_boot=boot, jobs=jobs)
    for (md, page), results_dir in zip(written, folders, strict=True):
        for path in [md, page, explorer.page_path(results_dir)]:
            typer.echo(str(path))
    if server is not None:
        explorer.serve(server, say=typer.echo)


@app.command("study-report")
@_guarded
def study_report(
    results_dirs: Annotated[
        list[Path], typer.Argument(help="Analysed results folders (`genvdis report` them first).")
    ],
    out: Annotated[Path, typer.Option(help="The folder to write the study's files into.")],
    sweep: Annotated[
        list[Path] | None,
        typer.Option(
            help="A sweep's folder with sensitivity.csv (repeatable).", show_default=False
        ),
    ] = None,
    boot: Annotated[int, typer.Option(help="Bootstrap resamples over datasets.")] = 2000,
) -> None:
    """The cross-dataset report: study.csv, STUDY.md, STUDY.html, figures, study-explorer.html."""
    _headless()
    from genvdis.report.study import write_study

    _check_boot(boot)
    for path in write_study(results_dirs, out, sweeps=sweep or (), n_boot=boot):
        typer.echo(str(path))


@app.command("datasets")
@_guarded
def list_datasets(
    counts: Annotated[
        bool, typer.Option("--counts", help="Also load each one: rows and classes (fetches).")
    ] = False,
    mirror: Mirror = None,
) -> None:
    """The registered datasets: features by kind, files, licence (and rows, classes)."""
    from rich.console import Console
    from rich.table import Column, Table

    from genvdis.data import uci as datasets

    names = Column("name", no_wrap=True, min_width=max(map(len, datasets.REGISTRY)))
    table = Table(names, "rows", "continuous", "discrete", "classes", "source files", "licence")
    for row in datasets.dataset_table().itertuples():
        rows = classes = "-"
        if counts:
            facts = datasets.summarize(datasets.load_registered(row.name, mirror=mirror))
            rows, classes = str(facts["rows"]), str(facts["classes"])
        table.add_row(
            row.name, rows, str(row.continuous), str(row.discrete), classes, row.files, row.licence
        )
    Console().print(table)
    typer.echo(f"Cite: {datasets.UCI_CITATION}")


@app.command()
@_guarded
def validate(
    configs: Annotated[
        list[str], typer.Argument(help="YAML config files, or built-in names (genvdis configs).")
    ],
    allow_import: AllowImport = None,
) -> None:
    """Check configs (run or theory; schema, dataset name, estimators, variants) without
    fetching or running."""
    from genvdis import api

    for line in api.validate(configs, allow_imports=allow_import or ()):
        typer.echo(line)


@app.command("configs")
@_guarded
def list_configs() -> None:
    """The built-in configs: the 15 Figure 1 panels, the worked examples and the theory
    experiments."""
    from rich.console import Console
    from rich.table import Column, Table

    from genvdis.config import builtin

    shipped = builtin.builtin_configs()
    names = Column("name", no_wrap=True, min_width=max(len(c.name) for c in shipped))
    table = Table(names, "kind", "panel", "dataset", "title")
    for config in shipped:
        panel = str(config.panel) if config.panel else "-"
        table.add_row(config.name, config.kind, panel, config.dataset, config.title)
    Console().print(table)
    typer.echo(
        f"`genvdis run NAME` (panels, examples), `genvdis theory NAME`; files: {builtin.folder()}"
    )


@app.command()
@_guarded
def init(
    table: Annotated[
        Path | None, typer.Argument(help="Your CSV (.tsv: tab-separated), with a header.")
    ] = None,
    target: Annotated[str | None, typer.Option(help="The label column's name.")] = None,
    dataset: Annotated[
        str | None,
        typer.Option(help="A registered dataset instead of a table (`genvdis datasets`)."),
    ] = None,
    positive: Annotated[
        list[str] | None,
        typer.Option(help="The positive class's label, repeated for several (default: inferred)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="The config to write (default: ./<table or dataset>.yaml)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing config.")] = False,
    mirror: Annotated[
        str | None, typer.Option(help="With --dataset: a mirror of the UCI archive.")
    ] = None,
) -> None:
    """Write a commented starter config for your own table, or for a registered dataset
    (--dataset): kinds, classes, an m grid."""
    from genvdis.starter import write_init

    path = write_init(
        table, target, dataset=dataset, positive=positive, output=output, force=force,
        mirror=mirror,
    )  # fmt: skip
    typer.echo(f"wrote {path}: read its comments, then `genvdis run {path}`")


@app.command()
@_guarded
def suite(
    suite_file: Annotated[
        Path, typer.Argument(help="A suite file, e.g. configs/suites/openml-cc18-binary.yaml.")
    ],
    out: Annotated[
        Path | None, typer.Option(help="The folder to write one config per dataset into.")
    ] = None,
    cost: Annotated[
        bool, typer.Option(help="Estimate the runs from the suite's sizes instead (offline).")
    ] = False,
    splits: Annotated[int, typer.Option(help="Splits per m for --cost.", min=1)] = 1000,
    force: Annotated[bool, typer.Option(help="Overwrite configs already written.")] = False,
) -> None:
    """Write a config for each dataset of an OpenML suite (fetched once, then cached), by
    `genvdis init`'s rules; then run them, e.g. `genvdis run <folder>/*.yaml`."""
    from genvdis import starter
    from genvdis.errors import UserError

    if cost:
        costs = starter.suite_cost(starter.read_suite(suite_file), splits)
        for item in costs:
            e = item.entry
            typer.echo(
                f"{e.name:<34} {e.rows:>6} rows {e.features:>5} attributes "
                f"{len(item.sizes):>3} sizes {item.cpu_seconds / 60:9.1f} CPU min"
            )
        total = sum(item.cpu_seconds for item in costs) / 3600
        typer.echo(f"total at {splits} splits: {total:.1f} CPU hours (estimated, doubled)")
        return
    if out is None:
        raise UserError("--out: give the folder to write the configs into (or --cost)")
    for path, written in starter.write_suite(suite_file, out, force=force):
        typer.echo(f"{'wrote' if written else 'kept'} {path}")


if __name__ == "__main__":  # pragma: no cover
    app()
