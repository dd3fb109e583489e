"""Curve-shape tests: does a learning curve significantly rise, or bend the wrong way?

LCDB 1.1 (Yan, Mohr & Viering 2025) found many learning curves non-monotone or non-convex.
Here each curve is tested step by step on its per-m means. Splits at different m are
independent draws, so every test is a two-sample (Welch) test on a linear contrast of
independent means, and the p-values of one panel are Holm-corrected together. The method
and its limits are in docs/analysis.md ("Curve shape").
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05
RISE, BEND = "rise", "non-convex"
SHAPE_COLUMNS = [
    "model",
    "test",
    "m_from",
    "m_at",
    "m_to",
    "estimate",
    "se",
    "df",
    "p",
    "p_holm",
    "significant",
]


def contrast_test(coef: np.ndarray, mean: np.ndarray, var: np.ndarray, n: np.ndarray):
    """One-sided Welch test that sum(coef * true mean) > 0, from independent sample means.

    var is each sample's variance and n its size; the degrees of freedom are
    Welch-Satterthwaite's. Returns (estimate, se, df, p). With se = 0 (every split gave the
    same error at each m) the estimate is exact: p = 0 if it is > 0, else 1. A variance that
    is unknown (NaN: one split at that m) leaves the test undone: se, df and p are NaN.
    """
    est = math.fsum(coef * mean)  # exactly rounded: no BLAS kernel's summation order
    parts = coef**2 * var / n
    v = float(parts.sum())
    if math.isnan(v):
        return est, math.nan, math.nan, math.nan
    if v <= 0 or not math.isfinite(v):
        return est, 0.0, math.inf, 0.0 if est > 0 else 1.0
    denom = float(np.sum(parts**2 / np.maximum(n - 1, 1)))
    df = v**2 / denom if denom > 0 else math.inf
    se = math.sqrt(v)
    return est, se, df, float(stats.t.sf(est / se, df))


def _second_difference(m: np.ndarray) -> np.ndarray:
    """Coefficients on (y0, y1, y2) of slope(1,2) - slope(0,1) on the m scale, negated, so
    that a positive contrast means the curve bends down (it is concave there)."""
    h0, h1 = m[1] - m[0], m[2] - m[1]
    return -np.array([1 / h0, -(1 / h0 + 1 / h1), 1 / h1])


def curve_tests(curve: pd.DataFrame) -> list[dict[str, Any]]:
    """Rise tests for every pair m_i < m_j (a slow climb over many steps shows up between
    distant m even when no single step is significant), bend tests for consecutive triples.

    `curve` has columns m, mean, std, n (one row per m, any order) for one model.
    """
    c = curve.sort_values("m")
    m = c["m"].to_numpy(dtype=float)
    mean = c["mean"].to_numpy(dtype=float)
    # one split at an m has no variance (std NaN): not 0, which would make any step exact
    var = np.where(c["n"].to_numpy() > 1, c["std"].to_numpy(dtype=float) ** 2, math.nan)
    n = c["n"].to_numpy(dtype=float)
    rows = []
    for i, j in itertools.combinations(range(len(m)), 2):
        s = [i, j]
        est, se, df, p = contrast_test(np.array([-1.0, 1.0]), mean[s], var[s], n[s])
        rows.append(_row(RISE, m[i], math.nan, m[j], est, se, df, p))
    for i in range(1, len(m) - 1):
        s = slice(i - 1, i + 2)
        est, se, df, p = contrast_test(_second_difference(m[s]), mean[s], var[s], n[s])
        rows.append(_row(BEND, m[i - 1], m[i], m[i + 1], est, se, df, p))
    return rows


def _row(test, m_from, m_at, m_to, est, se, df, p) -> dict[str, Any]:
    return dict(test=test, m_from=int(m_from), m_at=m_at, m_to=int(m_to), estimate=est,
                se=se, df=df, p=p)  # fmt: skip


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control, any dependence), over
    the tests that have a p-value; a NaN (a test that could not be made) stays NaN."""
    p = np.asarray(p, dtype=float)
    out = np.full(len(p), math.nan)
    done = np.flatnonzero(~np.isnan(p))
    k = len(done)
    if k == 0:
        return out
    order = np.argsort(p[done], kind="stable")
    adj = np.maximum.accumulate((k - np.arange(k)) * p[done][order])
    out[done[order]] = np.minimum(adj, 1.0)
    return out


def shape_tests(curves: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Every rise and bend test of every model's curve in one panel, Holm-corrected together.

    `curves` has columns model, m, mean, std, n (as `differences.model_curves` gives).
    """
    rows = []
    for model, c in curves.groupby("model", sort=False):
        rows += [dict(model=model, **r) for r in curve_tests(c)]
    table = pd.DataFrame(rows, columns=SHAPE_COLUMNS[:-2])
    table["p_holm"] = holm(table["p"].to_numpy())
    table["significant"] = table["p_holm"] < alpha
    table["m_at"] = table["m_at"].astype("Int64")
    return table[SHAPE_COLUMNS]


def flags(table: pd.DataFrame, model: str, test: str) -> str:
    """The significant findings of one kind for one curve: for rises the most significant
    pair "m_from→m_to" (all pairs are in shape.csv), for bends every m_at joined by ";";
    empty when there are none."""
    t = table[(table["model"] == model) & (table["test"] == test) & table["significant"]]
    if t.empty:
        return ""
    if test == RISE:
        top = t.sort_values(["p", "m_from", "m_to"], kind="stable").iloc[0]
        return f"{int(top['m_from'])}→{int(top['m_to'])}"
    return ";".join(str(int(x)) for x in t["m_at"])
