"""A finished run's folder for the Python API: `open_results` and the `Results` it returns
(also what `genvdis.run` returns), reading the run's files on demand.

Re-exported by genvdis.api and genvdis, so ``genvdis.Results`` and ``from genvdis.api import
Results`` both work. Heavy libraries are imported inside the methods: `import genvdis` stays
cheap.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genvdis.errors import UserError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes


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


def _check_statistics(level: Any = 0.95, n_boot: Any = 1000, seed: Any = 0) -> None:
    """The statistics' options, as the report takes them: a bad one is a one-line UserError
    naming it, not a traceback nor intervals of NaN or None."""
    from genvdis.config.experiment import MAX_BOOT, MIN_BOOT
    from genvdis.config.sections import MAX_SEED

    def whole(value: Any) -> bool:  # numpy's integers too, as the API's arguments take them
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    number = isinstance(level, numbers.Real) and not isinstance(level, bool)
    if not (number and 0 < level < 1):
        raise UserError(
            f"level: give a confidence level between 0 and 1 (like 0.95), not {level!r}"
        )
    if not (whole(n_boot) and MIN_BOOT <= n_boot <= MAX_BOOT):
        raise UserError(
            f"n_boot: give a whole number from {MIN_BOOT} to {MAX_BOOT}, not {n_boot!r}"
        )
    if not (whole(seed) and 0 <= seed <= MAX_SEED):
        raise UserError(f"seed: give a whole number >= 0, not {seed!r}")


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
        if not isinstance(path, (str, os.PathLike)):
            raise UserError(f"path: give the run folder as a path, not {type(path).__name__}")
        self.path = Path(path)
        if not (self.path / "summary.csv").is_file():
            raise UserError(f"no finished run (summary.csv) in {self.path}")
        self._read: dict[str, tuple[tuple[int, ...] | None, Any]] = {}

    def _cached(self, file: str, reader: Any) -> Any:
        """`reader(self.path)`, read again whenever `file` changed since (a later run on the
        folder rewrites its files: what was read before must not mix with what is read
        after)."""
        try:
            stat = (self.path / file).stat()
            stamp: tuple[int, ...] | None = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except OSError:
            stamp = None
        if file in self._read and stamp is not None and self._read[file][0] == stamp:
            return self._read[file][1]
        value = reader(self.path)
        self._read[file] = (stamp, value)
        return value

    def __repr__(self) -> str:
        sizes = len(self.config.get("sizes") or [])
        return (
            f"Results('{self.path.as_posix()}': {self.name}, {len(self.models)} models, "
            f"{sizes} sizes, {self.splits} splits per m)"
        )

    @property
    def config(self) -> dict[str, Any]:
        """The config as run (config.yaml): with the version, data checksums, n, classes."""
        from genvdis.store.runfiles import read_run_config

        return self._cached("config.yaml", read_run_config)

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
        from genvdis.store.runfiles import read_panel_config

        return read_panel_config(self.path)["models"]

    @property
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
        from genvdis.store.runfiles import read_summary

        return self._cached("summary.csv", read_summary)

    @property
    def errors(self) -> pd.DataFrame:
        """errors.csv: one row per model, m and split (test errors, error rate, separable).

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> len(res.errors) == 3 * 13 * 20  # (2 models + the majority class) x sizes x splits
        True
        """
        from genvdis.store.runfiles import read_errors

        path = self.path / "errors.csv"
        if not path.is_file():  # the committed results keep only summaries
            raise UserError(f"{path} not found: rerun `genvdis run` on this config to make it")
        return self._cached("errors.csv", read_errors)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The comparisons, as (first, second) pairs whose differences are second - first:
        the config's ``compare``, else the paper's pair (naive Bayes, logistic regression)
        when the run has it, else every other model against the first (docs/analysis.md).

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> res.pairs
        [('naive_bayes', 'logistic_regression')]
        """
        from genvdis.analysis import differences as analysis
        from genvdis.store.runfiles import read_panel_config

        config = read_panel_config(self.path)
        return analysis.choose_pairs(config["models"], config["compare"])

    def comparisons(self, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """One row per pair of `pairs`: its verdict, crossover and differences at the
        smallest and largest m, as the report and pairs.csv give them.

        Parameters
        ----------
        n_boot, seed
            The crossover's bootstrap resamples and their seed (the report's defaults).

        Returns
        -------
        DataFrame
            Columns first, second, m_cross, m_cross_interp, m_cross_ci_low, m_cross_ci_high,
            frac_no_cross, diff_m_min (with its ci_low, ci_high), diff_m_max (likewise) and
            verdict (in the pair's model names); differences are second - first.

        Examples
        --------
        >>> import genvdis
        >>> res = genvdis.run("pima", splits=20, out="results")
        >>> res.comparisons()[["first", "second", "m_cross", "verdict"]]
                 first               second  m_cross      verdict
        0  naive_bayes  logistic_regression       80  two regimes
        """
        import pandas as pd

        from genvdis.analysis import differences as analysis

        _check_statistics(n_boot=n_boot, seed=seed)
        rows, _ = analysis.comparisons(self.errors, self.pairs, n_boot, seed)
        table = pd.DataFrame(rows, columns=analysis.comparisons_columns())
        numbers = [c for c in table.columns if c not in ("first", "second", "verdict")]
        table[numbers] = table[numbers].apply(pd.to_numeric)
        return table.astype({"m_cross": "Int64"})

    def _pair(self, a: str | None, b: str | None) -> tuple[str, str]:
        """(a, b) as given, else the first pair's (second, first): a - b is its difference.
        One model given: the other is the first pair's model that is not it."""
        if a is None or b is None:
            if not self.pairs:
                raise UserError(f"{self.name}: no pair of models to compare")
            first, second = self.pairs[0]
            if a is None and b is None:
                a, b = second, first
            elif a is None:
                a = second if b != second else first
            else:
                b = first if a != first else second
        models = list(dict.fromkeys(self.errors["model"].astype(str)))  # what the numbers hold
        for arg, model in (("a", a), ("b", b)):
            if model not in models:
                raise UserError(
                    f"{arg}: no model '{model}' in {self.name} (its models: {', '.join(models)})"
                )
        if a == b:
            raise UserError(f"a and b: both are '{a}'; compare two different models")
        return a, b

    def differences(
        self, a: str | None = None, b: str | None = None, level: float = 0.95
    ) -> pd.DataFrame:
        """Paired differences error(a) - error(b) per m, with t intervals (as in the report).

        Parameters
        ----------
        a, b : str, optional
            Model names; default: the first pair of `pairs`, its second model minus its first
            (logistic regression minus naive Bayes in the paper's panels).
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
        from genvdis.analysis import differences as analysis

        _check_statistics(level=level)
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
        from genvdis.analysis import differences as analysis

        _check_statistics(level=level, n_boot=n_boot, seed=seed)
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
        ('pima', ['naive Bayes', 'logistic regression', 'majority class'])
        """
        from genvdis.report import plotting

        return plotting.run_axes(self.summary, {"name": self.name, **self.config}, ax)
