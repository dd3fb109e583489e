"""The Python API, for notebooks: load a config, run it, look at the results.

`genvdis run` and `genvdis plot` are thin layers over these functions, so a run started here
uses the same engine, checkpoints and files, and writes the same bytes, as the command line.
Heavy libraries are imported inside the functions: `import genvdis` stays cheap.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genvdis.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import pandas as pd
    from matplotlib.axes import Axes

    from genvdis.config import ExperimentConfig
    from genvdis.progress import Progress

BACKENDS = ("loky", "threading", "dask")


def load_config(source: str | Path) -> ExperimentConfig:
    """Read and validate a run config: a YAML file, or the name of a built-in one.

    Parameters
    ----------
    source : str or Path
        A config file's path; or, when no such file exists, the name of a built-in config
        (`genvdis configs` lists them: the 15 Figure 1 panels).

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
    from genvdis import builtin, config

    return config.load_config(builtin.resolve(source, "panel"))


def check_run_options(
    *,
    jobs: int = 1,
    backend: str = "loky",
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
    from genvdis import estimators

    if jobs < 1:
        raise UserError("--jobs must be >= 1")
    if backend not in BACKENDS:
        raise UserError(f"--backend must be loky, threading or dask, not '{backend}'")
    if scheduler and backend != "dask":
        raise UserError("--scheduler needs --backend dask")
    if allow_imports or os.environ.get(estimators.ALLOW_ENV):
        estimators.allowed_prefixes(allow_imports)


def validate(configs: Iterable[str | Path], allow_imports: Iterable[str] = ()) -> Iterator[str]:
    """Check configs without fetching data or running, as `genvdis validate` does: the schema,
    a registered dataset's name, estimator entries (imported only within the allow-list) and a
    ``variants:`` block. Theory configs are recognised and checked as such.

    Parameters
    ----------
    configs : str or Path, each
        YAML files, or built-in names.
    allow_imports : str, each
        Import prefixes estimator entries may use besides ``sklearn``.

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
    from genvdis import builtin, datasets, estimators
    from genvdis.config import VARIANTS_KEY, is_theory_config, parse_config, read_yaml
    from genvdis.theoryconfig import parse_theory_config
    from genvdis.variants import check_block

    for path in configs:
        data = read_yaml(builtin.resolve(path))
        if is_theory_config(data):
            theory = parse_theory_config(data, str(path))
            yield f"{path}: ok (theory {theory.name}, {len(theory.n)} values of n)"
            continue
        block = data.pop(VARIANTS_KEY, None) if isinstance(data, dict) else None
        config = parse_config(data, str(path))
        if isinstance(config.dataset, str):
            datasets.get_info(config.dataset)
        try:
            estimators.check_config(config, tuple(allow_imports))
        except UserError as error:
            raise UserError(f"{path}: {error}") from None
        n = check_block(config, block, path)
        more = f", {n} variants" if n else ""
        yield f"{path}: ok ({config.name}, {len(config.size_grid)} sizes{more})"


def run(
    config: ExperimentConfig | str | Path,
    *,
    splits: int | None = None,
    seed: int | None = None,
    jobs: int = 1,
    out: str | Path = "results",
    backend: str = "loky",
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
        Replace the config's number of splits per m, and its seed.
    jobs : int
        Parallel workers.
    out : str or Path
        The results folder; the run writes ``<out>/<config name>/``.
    backend : {'loky', 'threading', 'dask'}
        How the workers run; ``scheduler`` is a dask scheduler's address (dask only).
    mirror : str, optional
        A base URL or folder replacing the UCI archive (default: ``$GENVDIS_MIRROR``).
    progress : callable, optional
        Told of the run's progress: called as ``progress(name, total_blocks)``, it returns a
        context manager giving a function of the blocks just finished (see
        `genvdis.progress`; ``genvdis.progress.rich_bar`` is the command line's bar). Default:
        nothing is shown; the API never prints.
    force : bool
        Run beyond the work, memory and size bounds, and on more workers than cores.
    wait : bool
        If another run holds the run folder, wait for it instead of raising `UserError`.
    allow_imports : iterable of str
        Import prefixes (packages) that estimator entries may name besides ``sklearn``, as
        ``--allow-import`` (``$GENVDIS_ALLOW_IMPORTS`` adds more); see docs/config.md.

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
    from genvdis import engine
    from genvdis.config import ExperimentConfig

    check_run_options(jobs=jobs, backend=backend, scheduler=scheduler, allow_imports=allow_imports)
    if not isinstance(config, ExperimentConfig):
        config = load_config(config)
    config = config.with_overrides(splits=splits, seed=seed)
    run_dir = engine.run_experiment(
        config, Path(out), jobs=jobs, backend=backend, scheduler=scheduler, mirror=mirror,
        base_dir=config.data_dir, progress=progress, force=force, wait=wait,
        allow_imports=tuple(allow_imports),
    )  # fmt: skip
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
    configs : ExperimentConfig, str or Path, or a list of them
        As `run` takes one.
    vary : list of str, optional
        ``"KEY=V1,V2"`` items, as ``--vary`` takes them: their cross product.
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
    from genvdis import builtin, sweeps
    from genvdis.config import ExperimentConfig

    checked = ("jobs", "backend", "scheduler", "allow_imports")
    check_run_options(**{k: options[k] for k in checked if k in options})
    sources = configs if isinstance(configs, list) else [configs]
    given = sweeps.given_variants(list(vary or []), variants)
    plans = []
    for source in sources:
        path = None if isinstance(source, ExperimentConfig) else builtin.resolve(source, "panel")
        config = source if path is None else load_config(source)
        config = config.with_overrides(splits=splits, seed=seed)
        where = str(config.name if path is None else source)
        plans.append(sweeps.plan_config(config, where, path, given, mirror))
    return sweeps.run_sweeps(plans, Path(out), mirror=mirror, **options)


def open_results(path: str | Path) -> Results:
    """The results of a finished run, from its folder (one that holds summary.csv).

    Parameters
    ----------
    path : str or Path
        A run folder, ``<out>/<name>``.

    Returns
    -------
    Results

    Examples
    --------
    >>> import genvdis
    >>> _ = genvdis.run("pima", splits=20, out="results")
    >>> res = genvdis.open_results("results/pima")
    >>> res.name, res.models
    ('pima', ['naive_bayes', 'logistic_regression'])
    """
    return Results(path)


class Results:
    """A finished run's folder, read on demand: summary, per-split errors, statistics, figure.

    Parameters
    ----------
    path : str or Path
        The run folder (``<out>/<name>``, holding summary.csv and config.yaml).

    Examples
    --------
    >>> import genvdis
    >>> res = genvdis.run("pima", splits=20, out="results")
    >>> res
    Results('results/pima': pima, 2 models, 13 sizes, 20 splits per m)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not (self.path / "summary.csv").is_file():
            raise UserError(f"no finished run (summary.csv) in {self.path}")

    def __repr__(self) -> str:
        sizes = len(self.config.get("sizes") or [])
        return (
            f"Results('{self.path.as_posix()}': {self.name}, {len(self.models)} models, "
            f"{sizes} sizes, {self.splits} splits per m)"
        )

    @cached_property
    def config(self) -> dict[str, Any]:
        """The config as run (config.yaml): with the version, data checksums, n, classes."""
        from genvdis.runfiles import read_run_config

        return read_run_config(self.path)

    @property
    def name(self) -> str:
        """The run's name (its folder's, when config.yaml lacks one)."""
        return str(self.config.get("name") or self.path.name)

    @property
    def splits(self) -> int | None:
        """Random splits per m."""
        return self.config.get("splits")

    @property
    def models(self) -> list[str]:
        """The models, in the config's order."""
        from genvdis.runfiles import read_panel_config

        return read_panel_config(self.path)["models"]

    @cached_property
    def summary(self) -> pd.DataFrame:
        """summary.csv: per model and m, the mean error over splits and its 95% interval.

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> list(res.summary.columns)
        ['model', 'm', 'n_splits', 'mean', 'std', 'sem', 'ci_low', 'ci_high', 'frac_separable',
         'warnings']
        """
        from genvdis.runfiles import read_summary

        return read_summary(self.path)

    @cached_property
    def errors(self) -> pd.DataFrame:
        """errors.csv: one row per model, m and split (test errors, error rate, separable).

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> len(res.errors) == 2 * 13 * 20  # models x sizes x splits
        True
        """
        from genvdis.runfiles import read_errors

        path = self.path / "errors.csv"
        if not path.is_file():  # the committed results keep only summaries
            raise UserError(f"{path} not found: rerun `genvdis run` on this config to make it")
        return read_errors(self.path)

    def _pair(self, a: str | None, b: str | None) -> tuple[str, str]:
        from genvdis import analysis

        if a is not None and b is not None:
            return a, b
        pair = analysis.choose_pair(self.models)
        if pair is None:
            raise UserError(f"{self.name}: no logistic regression and generative model to compare")
        return a or pair[0], b or pair[1]

    def differences(
        self, a: str | None = None, b: str | None = None, level: float = 0.95
    ) -> pd.DataFrame:
        """Paired differences error(a) - error(b) per m, with t intervals (as in the report).

        Parameters
        ----------
        a, b : str, optional
            Model names; default: logistic regression minus naive Bayes (or the run's other
            generative model).
        level : float
            The intervals' confidence level.

        Returns
        -------
        DataFrame
            Columns m, mean_diff, sem, ci_low, ci_high, n_splits; a negative difference
            means ``a`` makes fewer errors.

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> diffs = res.differences()
        >>> list(diffs["m"][:3]), bool(diffs["mean_diff"].iloc[-1] < 0)
        ([10, 15, 20], True)
        """
        from genvdis import analysis

        a, b = self._pair(a, b)
        return analysis.paired_differences(self.errors, a, b, level)

    def crossover(
        self,
        a: str | None = None,
        b: str | None = None,
        n_boot: int = 1000,
        seed: int = 0,
        level: float = 0.95,
    ) -> dict[str, Any]:
        """The m from which ``a`` stays better than ``b``, with a bootstrap interval over splits.

        Parameters
        ----------
        a, b : str, optional
            Model names, as in `differences`.
        n_boot, seed, level
            Bootstrap resamples, their seed, and the interval's level (the report's defaults).

        Returns
        -------
        dict
            ``m_cross`` (grid m, None if the curves do not cross), ``m_cross_interp``
            (interpolated in log m), ``ci_low``, ``ci_high``, ``frac_no_cross`` (share of
            resamples without a crossover) and ``n_boot``; see docs/analysis.md.

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> cross = res.crossover()
        >>> cross["m_cross"], cross["ci_low"] <= cross["m_cross_interp"] <= cross["ci_high"]
        (80, True)
        """
        from genvdis import analysis

        a, b = self._pair(a, b)
        return analysis.crossover(self.errors, a, b, n_boot=n_boot, seed=seed, level=level)

    def plot(self, ax: Axes | None = None) -> Axes:
        """The learning curves: on ``ax``, or on a new figure, the one `genvdis plot` saves.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (e.g. one panel of your own grid); default: a new figure.

        Returns
        -------
        matplotlib Axes

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> ax = res.plot()
        >>> ax.get_title(), [t.get_text() for t in ax.get_legend().get_texts()]
        ('pima', ['naive Bayes', 'logistic regression'])
        """
        from genvdis import plotting

        return plotting.run_axes(self.summary, {"name": self.name, **self.config}, ax)
