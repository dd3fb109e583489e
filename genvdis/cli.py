"""The `genvdis` command line. It only parses options and delegates to the modules.

Exit codes: 0 ok, 2 bad input (config, data, options) or a machine problem the user can fix
(a full disk, a run folder in use), 1 internal error (a bug: please report).
"""

from __future__ import annotations

import functools
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from genvdis import __version__

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
Wait = Annotated[
    bool, typer.Option("--wait", help="If another run is using a run folder, wait for it.")
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Run beyond the work, memory and size bounds, and on more workers than cores.",
    ),
]


def _guarded(command):
    """Turn a UserError into one line + exit 2, and any other exception into one line + 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from genvdis.errors import UserError

        try:
            return command(*args, **kwargs)
        except UserError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            typer.echo("interrupted: finished blocks are kept; rerun to resume", err=True)
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as error:  # a bug, not the user's fault
            log.debug("internal error", exc_info=True)
            typer.echo(f"internal error: {type(error).__name__}: {error}", err=True)
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


def _start_run(jobs: int, quiet: bool) -> bool:
    """Checks and settings shared by `run` and `theory`; returns whether to show progress."""
    from genvdis.errors import UserError

    if jobs < 1:
        raise UserError("--jobs must be >= 1")
    if quiet:
        logging.getLogger().setLevel(logging.WARNING)
    return not quiet and sys.stderr.isatty()


@app.command()
@_guarded
def fetch(
    names: Annotated[list[str] | None, typer.Argument(help="Registered dataset names.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every registered dataset.")] = False,
    mirror: Mirror = None,
) -> None:
    """Download datasets (and their .names files) into the cache, checking each sha256."""
    from genvdis import datasets
    from genvdis import fetch as fetching
    from genvdis.errors import UserError

    chosen = list(datasets.REGISTRY) if all_ else list(names or [])
    if not chosen:
        raise UserError("name at least one dataset, or use --all")
    for name in chosen:
        paths = datasets.fetch_dataset(name, mirror=mirror, docs=True)
        typer.echo(f"{name}: {len(paths)} file(s) in {fetching.data_dir()}")


@app.command()
@_guarded
def run(
    configs: Annotated[list[Path], typer.Argument(help="YAML config files.")],
    splits: Splits = None,
    jobs: Jobs = 1,
    seed: Annotated[int | None, typer.Option(help="Random seed (default: config).")] = None,
    out: Out = Path("results"),
    backend: Annotated[str, typer.Option(help="loky, threading or dask.")] = "loky",
    scheduler: Annotated[
        str | None, typer.Option(help="dask scheduler address (default: a local cluster).")
    ] = None,
    mirror: Mirror = None,
    quiet: Quiet = False,
    wait: Wait = False,
    force: Force = False,
) -> None:
    """Run the protocol: S random splits per m, every model, errors and summary CSVs."""
    from genvdis import engine, planning
    from genvdis.config import load_config
    from genvdis.errors import UserError

    progress = _start_run(jobs, quiet)
    if backend not in {"loky", "threading", "dask"}:
        raise UserError(f"--backend must be loky, threading or dask, not '{backend}'")
    if splits is not None and splits < 1:
        raise UserError(f"--splits must be >= 1, not {splits}")
    if seed is not None and seed < 0:
        raise UserError(f"--seed must be >= 0, not {seed}")
    if scheduler and backend != "dask":
        raise UserError("--scheduler needs --backend dask")
    for path in configs:
        planning.check_config_file(path, force)
    loaded = [load_config(path).with_overrides(splits=splits, seed=seed) for path in configs]
    for path, config in zip(configs, loaded, strict=True):
        try:
            run_dir = engine.run_experiment(
                config, out, jobs=jobs, backend=backend, scheduler=scheduler, mirror=mirror,
                base_dir=path.parent, progress=progress, force=force, wait=wait,
            )  # fmt: skip
        except UserError as error:  # say which config, when several run in one go
            if str(error).startswith("--"):
                raise
            raise UserError(f"{path}: {error}") from None
        log.info("%s: wrote %s", config.name, run_dir)


@app.command()
@_guarded
def theory(
    configs: Annotated[list[Path], typer.Argument(help="Theory YAML configs.")],
    splits: Splits = None,
    jobs: Jobs = 1,
    out: Out = Path("results"),
    quiet: Quiet = False,
    wait: Wait = False,
    force: Force = False,
) -> None:
    """Sample complexity on synthetic data: m*(eps) vs n features, NB vs LR, with fits."""
    from genvdis import planning
    from genvdis.theory import load_theory_config, run_theory

    progress = _start_run(jobs, quiet)
    for path in configs:
        planning.check_config_file(path, force)
    for config in [load_theory_config(path) for path in configs]:
        root = run_theory(
            config, out, jobs=jobs, splits=splits, progress=progress, force=force, wait=wait
        )
        log.info("%s: wrote %s", config.name, root)


@app.command()
@_guarded
def plot(
    results_dir: Annotated[Path, typer.Argument(help="A results folder, or one run in it.")] = Path(
        "results"
    ),
) -> None:
    """Draw error vs. m for every run, and Figure 1 (3 x 5) when paper panels are there."""
    from genvdis.plotting import plot_results

    for path in plot_results(results_dir):
        typer.echo(str(path))


@app.command()
@_guarded
def report(
    results_dir: Annotated[Path, typer.Argument(help="The results folder.")] = Path("results"),
    boot: Annotated[int, typer.Option(help="Bootstrap resamples for the crossover.")] = 1000,
) -> None:
    """Crossovers, asymptotes and verdicts per run: REPORT.md and REPORT.html."""
    from genvdis import results
    from genvdis.report import write_report

    results.find_runs(results_dir)
    for path in write_report(results_dir, n_boot=boot):
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

    from genvdis import datasets

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
    configs: Annotated[list[Path], typer.Argument(help="YAML config files.")],
) -> None:
    """Check configs (run or theory; schema, dataset name) without fetching or running."""
    from genvdis import datasets
    from genvdis.config import is_theory_config, parse_config, read_yaml
    from genvdis.theory import parse_theory_config

    for path in configs:
        data = read_yaml(path)
        if is_theory_config(data):
            theory = parse_theory_config(data, str(path))
            typer.echo(f"{path}: ok (theory {theory.name}, {len(theory.n)} values of n)")
            continue
        config = parse_config(data, str(path))
        if isinstance(config.dataset, str):
            datasets.get_info(config.dataset)
        typer.echo(f"{path}: ok ({config.name}, {len(config.size_grid)} sizes)")


if __name__ == "__main__":  # pragma: no cover
    app()
