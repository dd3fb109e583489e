"""The theory, measured: how many examples naive Bayes and logistic regression need as the
number of features n grows (Ng & Jordan: O(log n) for naive Bayes, O(n) for logistic
regression).

A theory config names a synthetic distribution (genvdis.synthetic) and a grid of n. For each n
it builds an ordinary `ExperimentConfig` and runs the ordinary engine into `<out>/<name>/n<n>/`;
then, from the per-split errors, it finds each model's m*(eps): the smallest grid m from which
on the mean error stays within eps of the model's asymptotic error (the Bayes error, known
exactly), with a bootstrap interval over splits. It writes `sample_complexity.csv`, least-
squares fits of m* = a + b log n and m* = a + b n (`fits.csv`), and a figure. See docs/theory.md.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, ValidationInfo, field_validator

from genvdis import planning, results, runlock, synthetic
from genvdis.config import (
    MAX_BOOT,
    MIN_BOOT,
    ExperimentConfig,
    LogisticRegressionSpec,
    ModelList,
    NaiveBayesSpec,
    RunName,
    Seed,
    StrictModel,
    SyntheticDataset,
    Title,
    read_yaml,
    validate_mapping,
)
from genvdis.errors import UserError

log = logging.getLogger(__name__)

SAMPLE_COMPLEXITY_COLUMNS = ["n", "model", "epsilon", "m_star", "ci_low", "ci_high"]
SAMPLE_COMPLEXITY_COLUMNS += ["asymptotic_error", "reference_error"]
FIT_COLUMNS = ["model", "epsilon", "form", "a", "b", "r2"]


class MGrid(StrictModel):
    """m = start * 2^(j / per_doubling), j = 0, 1, ... up to max(stop * n, min_stop): one
    geometric sequence for every n (only its end depends on n), so m* is comparable across n."""

    start: int = Field(default=10, ge=2, description="smallest m (the same for every n)")
    stop: float = Field(gt=0, description="largest m, as a multiple of n")
    min_stop: int = Field(default=0, ge=0, description="largest m is at least this")
    per_doubling: int = Field(default=2, ge=1, le=12, description="grid points per doubling")

    def values(self, n: int) -> list[int]:
        stop = max(self.stop * n, self.min_stop, self.start)
        steps = int(math.floor(self.per_doubling * math.log2(stop / self.start) + 1e-9))
        grid = self.start * 2.0 ** (np.arange(steps + 1) / self.per_doubling)
        return sorted({int(round(v)) for v in grid})


class TheoryConfig(StrictModel):
    """One sample-complexity experiment: a synthetic family, an n grid, an m grid per n."""

    name: RunName
    title: Title = None
    kind: Literal["binary", "gaussian"]
    n: list[int] = Field(min_length=1, description="numbers of features")
    informative: float = Field(default=0.5, gt=0, le=1)
    effect: float = Field(gt=0)
    n_rows: int = Field(default=100_000, ge=100, description="rows drawn; test = the rest")
    m: list[int] | MGrid
    splits: int = Field(default=100, ge=2)
    epsilon: list[float] = Field(min_length=1)
    seed: Seed = 0
    models: ModelList = Field(
        default_factory=lambda: [NaiveBayesSpec(), LogisticRegressionSpec()], min_length=1
    )
    boot: int = Field(
        default=1000, ge=MIN_BOOT, le=MAX_BOOT, description="bootstrap resamples for m* intervals"
    )
    reference: Literal["pool", "exact"] = Field(
        default="pool",
        description="m* is measured against the Bayes rule's error on the drawn rows (pool) or "
        "the exact Bayes error",
    )
    block_size: int | None = Field(default=None, ge=1, description="default: the engine's")

    @field_validator("models", mode="after")
    @classmethod
    def _known_asymptote(cls, value: list) -> list:
        names = [m.name for m in value]
        if len(set(names)) != len(names):
            raise ValueError(f"each model may appear once, got {names}")
        other = [n for n in names if n not in {"naive_bayes", "logistic_regression"}]
        if other:
            raise ValueError(
                f"'{other[0]}': the asymptotic error is known only for naive_bayes and "
                "logistic_regression"
            )
        return value

    @field_validator("n", mode="after")
    @classmethod
    def _n(cls, value: list[int]) -> list[int]:
        if min(value) < 1 or len(set(value)) != len(value):
            raise ValueError("each n must be a distinct number of features >= 1")
        return sorted(value)

    @field_validator("effect", mode="after")
    @classmethod
    def _effect(cls, value: float, info: ValidationInfo) -> float:
        if info.data.get("kind") == "binary" and value >= 1:
            raise ValueError("a binary effect is p1 - p0 and must be < 1")
        return value

    @field_validator("m", mode="after")
    @classmethod
    def _m(cls, value: list[int] | MGrid, info: ValidationInfo) -> list[int] | MGrid:
        if isinstance(value, list) and (not value or min(value) < 2):
            raise ValueError("needs sizes m >= 2")
        ns, rows = info.data.get("n"), info.data.get("n_rows")
        if ns and rows:
            largest = max(value.values(n)[-1] for n in ns) if isinstance(value, MGrid) else 0
            largest = max(largest, *value) if isinstance(value, list) else largest
            if largest >= rows - 10:
                raise ValueError(f"the largest m ({largest}) leaves too few of n_rows = {rows}")
        return value

    @field_validator("epsilon", mode="after")
    @classmethod
    def _epsilon(cls, value: list[float]) -> list[float]:
        if min(value) <= 0 or max(value) >= 0.5:
            raise ValueError("each epsilon must be in (0, 0.5)")
        return sorted(set(value))

    def m_grid(self, n: int) -> list[int]:
        """The training-set sizes run at n features."""
        return self.m.values(n) if isinstance(self.m, MGrid) else sorted(set(self.m))

    def dataset(self, n: int) -> SyntheticDataset:
        return SyntheticDataset(
            kind=self.kind, n_features=n, informative=self.informative, n_rows=self.n_rows,
            effect=self.effect, seed=self.seed,
        )  # fmt: skip

    @property
    def display_title(self) -> str:
        return self.title or self.name


def parse_theory_config(data: Any, source: str = "config") -> TheoryConfig:
    """A theory config from an already-loaded mapping."""
    return validate_mapping(TheoryConfig, data, source)


def load_theory_config(path: str | Path) -> TheoryConfig:
    """Read and validate a theory config."""
    data = read_yaml(path)
    return parse_theory_config(data, str(path))


def experiment_config(config: TheoryConfig, n: int, splits: int | None = None) -> ExperimentConfig:
    """The ordinary experiment run at n features: the whole rest of the rows is the test set."""
    splits = splits or config.splits
    return ExperimentConfig.model_validate(
        dict(
            name=f"n{n}",
            title=f"{config.display_title}: n = {n} features",
            dataset={"synthetic": config.dataset(n).model_dump()},
            target={"positive": ["1"]},
            models=[m.model_dump() for m in config.models],
            sizes=config.m_grid(n),
            splits=splits,
            split="random",
            test="rest",
            seed=config.seed,
            block_size=config.block_size,
        )
    )


# --- m*(eps) -----------------------------------------------------------------------------------


def first_stable(within: np.ndarray) -> np.ndarray:
    """Index of the first grid point from which `within` is True to the end, along the last
    axis; -1 where the last point is not within."""
    tail = np.flip(np.cumprod(np.flip(within, axis=-1), axis=-1), axis=-1).astype(bool)
    first = np.argmax(tail, axis=-1)
    return np.where(tail[..., -1], first, -1)


def m_star(sizes: np.ndarray, mean_error: np.ndarray, asymptote: float, eps: float) -> float:
    """The smallest grid m at which the mean error is within eps of the asymptote and stays
    within for every larger grid m; NaN if it is not within at the largest m."""
    index = int(first_stable(np.abs(np.asarray(mean_error) - asymptote) <= eps))
    return float(sizes[index]) if index >= 0 else math.nan


def m_star_interval(
    sizes: np.ndarray,
    errors: np.ndarray,
    asymptote: float,
    eps: float,
    boot: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """95% percentile-bootstrap interval of m*: splits resampled with replacement at each m
    (errors is (K sizes, S splits)). A resample that never gets within counts as +inf."""
    K, S = errors.shape
    picks = rng.integers(0, S, size=(boot, K, S))
    means = np.take_along_axis(np.broadcast_to(errors, (boot, K, S)), picks, axis=2).mean(axis=2)
    index = first_stable(np.abs(means - asymptote) <= eps)
    values = np.where(index >= 0, np.asarray(sizes, float)[index], np.inf)
    low, high = np.quantile(values, [0.025, 0.975], method="inverted_cdf")
    return float(low), float(high)


def sample_complexity(
    errors: pd.DataFrame,
    n: int,
    asymptote: float,
    epsilons: list[float],
    boot: int = 1000,
    seed: int = 0,
    reference: float | None = None,
) -> pd.DataFrame:
    """Rows (n, model, epsilon, m_star, ci_low, ci_high, asymptotic_error, reference_error)
    from one run's errors.csv. m* is measured against `reference` (default: the asymptote)."""
    reference = asymptote if reference is None else reference
    rows = []
    for model, frame in errors.groupby("model", sort=False):
        table = frame.pivot(index="m", columns="split", values="error").sort_index()
        sizes, matrix = table.index.to_numpy(), table.to_numpy()
        for eps in epsilons:
            rng = np.random.default_rng([seed, n, int(round(eps * 1e6))])
            low, high = m_star_interval(sizes, matrix, reference, eps, boot, rng)
            star = m_star(sizes, matrix.mean(axis=1), reference, eps)
            rows.append([n, model, eps, star, low, high, asymptote, reference])
    return pd.DataFrame(rows, columns=SAMPLE_COMPLEXITY_COLUMNS)


# --- fits ------------------------------------------------------------------------------------


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least squares y = a + b x, and R^2 (NaN with fewer than 3 points or constant y)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3:
        return math.nan, math.nan, math.nan
    b, a = np.polyfit(x, y, 1)
    total = ((y - y.mean()) ** 2).sum()
    r2 = 1 - ((y - (a + b * x)) ** 2).sum() / total if total > 0 else math.nan
    return float(a), float(b), float(r2)


FORMS = {"log n": np.log, "n": lambda n: np.asarray(n, float)}
SHORT = {"naive_bayes": "NB", "logistic_regression": "LR"}


def fit_forms(table: pd.DataFrame) -> pd.DataFrame:
    """For each model and epsilon, over the n where m* was reached within the grid: m* = a +
    b log n ('log n'), m* = a + b n ('n'), and log m* = a + b log n ('power': b is the
    exponent of n, about 1 for O(n), about 0 for O(log n) or bounded)."""
    rows = []
    for (model, eps), group in table.groupby(["model", "epsilon"], sort=False):
        done = group[np.isfinite(group["m_star"])]
        n, star = done["n"].to_numpy(float), done["m_star"].to_numpy(float)
        for form, transform in FORMS.items():
            rows.append([model, eps, form, *fit_line(transform(n), star)])
        rows.append([model, eps, "power", *fit_line(np.log(n), np.log(star))])
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


# --- the figure ------------------------------------------------------------------------------


def plot_theory(
    table: pd.DataFrame, fits: pd.DataFrame, stem: Path, title: str, caption: str = ""
) -> list[Path]:
    """m* vs n (log x), one panel per epsilon: naive Bayes solid, logistic regression dashed,
    95% bootstrap bars, and both least-squares fits (log n dotted, n dash-dot) with R^2."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    from genvdis.plotting import STYLES, plt, save_figure

    epsilons = sorted(table["epsilon"].unique())
    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.4 * len(epsilons), 4.2), squeeze=False)
    ns = np.sort(table["n"].unique())
    grid = np.geomspace(ns.min(), ns.max(), 100)
    finite_high = np.where(np.isfinite(table["ci_high"]), table["ci_high"], np.nan)
    top = np.nanmax(np.concatenate([finite_high, table["m_star"].to_numpy(float)]))
    for ax, eps in zip(axes[0], epsilons, strict=True):
        for model, curve in table[table["epsilon"] == eps].groupby("model", sort=False):
            style = STYLES.get(model, {"linestyle": "-.", "label": model})
            star = curve["m_star"].to_numpy(float)
            high = np.where(np.isfinite(curve["ci_high"]), curve["ci_high"], top)
            yerr = np.vstack([star - curve["ci_low"], high - star])
            ax.errorbar(
                curve["n"], star, yerr=np.where(np.isfinite(yerr), yerr, 0), marker="o",
                capsize=3, **style,
            )  # fmt: skip
            chosen = fits[(fits["model"] == model) & (fits["epsilon"] == eps)]
            for form, line in (("log n", ":"), ("n", "-.")):
                row = chosen[chosen["form"] == form]
                if len(row) and np.isfinite(row["a"].iloc[0]):
                    a, b, r2 = row[["a", "b", "r2"]].iloc[0]
                    label = f"{SHORT.get(model, model)}: a + b·{form}, R² = {r2:.2f}"
                    ax.plot(
                        grid, a + b * FORMS[form](grid), linestyle=line, linewidth=1, alpha=0.8,
                        color=style.get("color"), label=label,
                    )  # fmt: skip
        ax.set_xscale("log")
        ax.set_xticks(ns)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("n (number of features)")
        ax.set_ylabel(f"m* (examples to get within {eps:g} of the asymptotic error)", fontsize=8)
        ax.set_title(f"ε = {eps:g}", fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=11)
    if caption:
        fig.text(0.5, 0.0, caption, ha="center", va="top", fontsize=7, color="0.3")
    fig.tight_layout()
    return save_figure(fig, stem)


# --- the experiment --------------------------------------------------------------------------


def asymptote_row(config: TheoryConfig, n: int) -> dict:
    """The exact asymptotic error at n, and the Bayes rule's error on the drawn rows: what the
    mean test error converges to on this finite pool (test sets are the pool minus the training
    rows), off the exact value by the pool's sampling noise, sd ~ sqrt(p (1 - p) / n_rows)."""
    spec = config.dataset(n)
    error, method = synthetic.asymptotic_error(spec)
    params = synthetic.parameters(spec)
    X, y = synthetic.sample(params, spec.n_rows, np.random.default_rng([spec.seed, 1]))
    pool = float(np.mean((synthetic.bayes_log_odds(params, X) > 0) != y))
    k = synthetic.n_informative(spec)
    return {"n": n, "informative": k, "asymptotic_error": error, "method": method,
            "pool_bayes_error": pool}  # fmt: skip


def run_theory(
    config: TheoryConfig | str | Path,
    out_dir: Path = Path("results"),
    *,
    jobs: int = 1,
    splits: int | None = None,
    progress: bool = True,
    force: bool = False,
    wait: bool = False,
) -> Path:
    """Run every n through the engine, then write sample_complexity.csv, fits.csv,
    asymptotes.csv and the figure into `<out>/<name>/`; returns that folder. The folder is
    locked while it runs; `force` and `wait` are the engine's."""
    if not isinstance(config, TheoryConfig):
        config = load_theory_config(config)
    if splits is not None and splits < 2:
        raise UserError("--splits must be >= 2 (the bootstrap resamples splits)")
    root = results.prepare_output(out_dir, config.name)
    planning.check_synthetic(config.n_rows, max(config.n), config.kind, force)
    with runlock.hold(root, wait):
        return _run_theory(config, root, jobs, splits, progress, force)


def _run_theory(
    config: TheoryConfig, root: Path, jobs: int, splits: int | None, progress: bool, force: bool
) -> Path:
    """`run_theory` once its folder is locked."""
    from genvdis import engine

    started = time.perf_counter()
    tables, asymptotes = [], []
    for n in config.n:
        experiment = experiment_config(config, n, splits)
        run_dir = engine.run_experiment(experiment, root, jobs=jobs, progress=progress, force=force)
        row = asymptote_row(config, n)
        asymptotes.append(row)
        errors = pd.read_csv(run_dir / "errors.csv")
        exact, pool = row["asymptotic_error"], row["pool_bayes_error"]
        reference = pool if config.reference == "pool" else exact
        tables.append(
            sample_complexity(errors, n, exact, config.epsilon, config.boot, config.seed, reference)
        )
        log.info("%s: n = %d done (%.0f s so far)", config.name, n, time.perf_counter() - started)
    table = pd.concat(tables, ignore_index=True)
    fits = fit_forms(table)
    with results.writing(root, "the sample complexity"):
        results.atomic_write_csv(root / "sample_complexity.csv", table)
        results.atomic_write_csv(root / "fits.csv", fits)
        results.atomic_write_csv(root / "asymptotes.csv", pd.DataFrame(asymptotes))
    used = splits or config.splits
    caption = (
        f"{used} random splits per m, test set: the other rows of {config.n_rows}; bars: 95% "
        "bootstrap intervals over splits;\nasymptotic error: the Bayes error, "
        + (
            "measured as the Bayes rule's error on the same rows. "
            if config.reference == "pool"
            else "exact. "
        )
        + "m* missing: not within eps at the largest m run."
    )
    plot_theory(table, fits, root / config.name, config.display_title, caption)
    log.info("%s: wrote %s in %.0f s", config.name, root, time.perf_counter() - started)
    return root
