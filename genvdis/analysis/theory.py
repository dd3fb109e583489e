"""The theory's numbers: from one n's per-split errors, each model's m*(eps), the smallest grid
m from which the mean error stays within eps of the model's asymptotic error, with a bootstrap
interval over splits; least-squares fits of m* against log n and n; and the exact asymptote.
genvdis.experiment.theory runs the experiment and writes the tables; docs/theory.md.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from genvdis._runtime import portable
from genvdis.config.theory import TheoryConfig
from genvdis.data import synthetic

SAMPLE_COMPLEXITY_COLUMNS = ["n", "model", "epsilon", "m_star", "ci_low", "ci_high"]
SAMPLE_COMPLEXITY_COLUMNS += ["asymptotic_error", "reference_error"]
FIT_COLUMNS = ["model", "epsilon", "form", "a", "b", "r2"]


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
    """Least squares y = a + b x, and R^2 (NaN with fewer than 3 points or constant y), in
    closed form with exactly rounded sums: the same bits on every CPU and BLAS kernel."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3:
        return math.nan, math.nan, math.nan
    # the normal equations about the means, every sum exactly rounded (math.fsum): polyfit's
    # LAPACK least squares sums in the order of the CPU's BLAS kernel, and moved the last bits
    x_bar, y_bar = math.fsum(x) / len(x), math.fsum(y) / len(y)
    dx, dy = x - x_bar, y - y_bar
    sxx = math.fsum(dx * dx)
    b = math.fsum(dx * dy) / sxx if sxx > 0 else math.nan
    a = y_bar - b * x_bar
    total = math.fsum(dy * dy)
    r2 = 1 - math.fsum((y - (a + b * x)) ** 2) / total if total > 0 else math.nan
    return float(a), float(b), float(r2)


FORMS = {"log n": portable.log, "n": lambda n: np.asarray(n, float)}


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
        rows.append([model, eps, "power", *fit_line(portable.log(n), portable.log(star))])
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def asymptote_row(
    config: TheoryConfig, n: int, drawn: tuple[np.ndarray, np.ndarray] | None = None
) -> dict:
    """The exact asymptotic error at n, and the Bayes rule's error on the drawn rows: what the
    mean test error converges to on this finite pool (test sets are the pool minus the training
    rows), off the exact value by the pool's sampling noise, sd ~ sqrt(p (1 - p) / n_rows).
    `drawn`: the rows (`synthetic.draw`), if the caller has them."""
    spec = config.dataset(n)
    error, method = synthetic.asymptotic_error(spec)
    params = synthetic.parameters(spec)
    X, y = synthetic.draw(spec) if drawn is None else drawn
    pool = float(np.mean((synthetic.bayes_log_odds(params, X) > 0) != y))
    k = synthetic.n_informative(spec)
    return {"n": n, "informative": k, "asymptotic_error": error, "method": method,
            "pool_bayes_error": pool}  # fmt: skip
