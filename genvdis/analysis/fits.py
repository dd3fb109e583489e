"""Parametric learning-curve fits, an identifiability check, and held-out model selection.

Three families from the learning-curve literature (Viering & Loog 2022; LCDB): the power law
a + b m^-c, the exponential a + b exp(-c m / m_max) and the 4-parameter MMF
(a b + g m^d) / (b + m^d). Every family reports its asymptote (the error as m -> infinity)
as `a`. An asymptote is only printed as a number when the fit pins it down; docs/analysis.md
says why and how the family is chosen.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from genvdis._runtime import portable

POW3, EXP3, MMF4 = "pow3", "exp3", "mmf4"
N_HOLDOUT = 2  # the largest m values kept out of the fit when choosing the family
_AT_BOUND = 1e-6  # relative distance to a bound that counts as "on the bound"


def _pow3(m: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    return a + b * portable.power(m, -c)


def _mmf4(m: np.ndarray, a: float, b: float, g: float, d: float) -> np.ndarray:
    """MMF with the asymptote first: err(0) = g, err(inf) = a."""
    md = portable.power(m, d)
    return (g * b + a * md) / (b + md)


# Each family's derivatives by its parameters, one column each: a fit would otherwise
# estimate them by finite differences, one more evaluation per parameter at every step (the
# larger part of a report's fitting time) and only to about half the digits.


def _pow3_jac(m: np.ndarray, mx: float, a: float, b: float, c: float) -> np.ndarray:
    mc = portable.power(m, -c)
    return np.column_stack([np.ones_like(m), mc, -b * mc * portable.log(m)])


def _exp3(m: np.ndarray, mx: float, a: float, b: float, c: float) -> np.ndarray:
    return a + b * portable.exp(-c * m / mx)


def _exp3_jac(m: np.ndarray, mx: float, a: float, b: float, c: float) -> np.ndarray:
    e = portable.exp(-c * m / mx)
    return np.column_stack([np.ones_like(m), e, -b * e * m / mx])


def _mmf4_jac(m: np.ndarray, mx: float, a: float, b: float, g: float, d: float) -> np.ndarray:
    md = portable.power(m, d)
    den = b + md
    slope = md * (g - a) / den**2  # d/db; d/dd is b (a - g) md log(m) / den^2
    return np.column_stack([md / den, slope, b / den, -b * slope * portable.log(m)])


@dataclass(frozen=True)
class Family:
    """A curve family: its function of (m, m_max, params) and that function's Jacobian by
    the params (an array with a column per param), bounds and starting points."""

    name: str
    func: Callable[..., np.ndarray]
    jac: Callable[..., np.ndarray]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    starts: Callable[[np.ndarray, np.ndarray], list[tuple[float, ...]]]


def _pow3_starts(m: np.ndarray, err: np.ndarray) -> list[tuple[float, ...]]:
    """A few starts spanning plausible asymptotes and exponents; the best fit wins."""
    lo = float(np.clip(err.min(), 0.0, 1.0))
    first = float(err[np.argmin(m)])
    starts = []
    for a0 in (lo, 0.9 * lo, max(lo - 0.5 * (first - lo), 0.0)):
        for c0 in (0.5, 1.0, 0.25):
            b0 = max(first - a0, 1e-3) * float(m.min()) ** c0
            starts.append((a0, b0, c0))
    return starts


def _exp3_starts(m: np.ndarray, err: np.ndarray) -> list[tuple[float, ...]]:
    lo, first = float(np.clip(err.min(), 0.0, 1.0)), float(err[np.argmin(m)])
    return [(a0, max(first - a0, 1e-3), c0) for a0 in (lo, 0.9 * lo) for c0 in (1.0, 5.0, 20.0)]


def _mmf4_starts(m: np.ndarray, err: np.ndarray) -> list[tuple[float, ...]]:
    lo, first = float(np.clip(err.min(), 0.0, 1.0)), float(err[np.argmin(m)])
    mid = float(np.median(m))
    g0 = min(max(first, lo), 1.0)
    return [(a0, mid**d0, g0, d0) for a0 in (lo, 0.9 * lo) for d0 in (0.5, 1.0, 2.0)]


FAMILIES = {
    POW3: Family(
        POW3,
        lambda m, mx, a, b, c: _pow3(m, a, b, c),
        _pow3_jac,
        (0, 0, 1e-3),
        (1, np.inf, 3),
        _pow3_starts,
    ),
    EXP3: Family(EXP3, _exp3, _exp3_jac, (0, 0, 1e-3), (1, np.inf, 1e3), _exp3_starts),
    MMF4: Family(
        MMF4,
        lambda m, mx, a, b, g, d: _mmf4(m, a, b, g, d),
        _mmf4_jac,
        (0, 1e-9, 0, 1e-2),
        (1, np.inf, 1, 10),
        _mmf4_starts,
    ),
}


def nan_fit(family: str, n: int, reason: str) -> dict[str, Any]:
    """The result of a fit that could not be made: ok=False, NaN numbers, the reason."""
    return dict(
        family=family,
        ok=False,
        params=(),
        a=math.nan,
        a_se=math.nan,
        b=math.nan,
        c=math.nan,
        rmse=math.nan,
        r2=math.nan,
        n_points=n,
        reason=reason,
        identifiable=False,
        why="",
    )


def clean_sigma(sem: np.ndarray | None, n: int) -> np.ndarray | None:
    """Usable weights: zero/NaN sems (e.g. error exactly 0 on every split) get the smallest
    positive sem, so one point cannot get infinite weight; None when nothing is usable."""
    if sem is None:
        return None
    s = np.asarray(sem, dtype=float)
    good = np.isfinite(s) & (s > 0)
    if s.shape != (n,) or not good.any():
        return None
    return np.where(good, s, s[good].min())


def fit_family(
    family: str, m: np.ndarray, err: np.ndarray, sem: np.ndarray | None = None
) -> dict[str, Any]:
    """Weighted least-squares fit of one family, best of several starts, never raising.

    `a_se` takes the sems as absolute errors, inflated by the reduced chi-square when the
    curve misfits more than the sems allow. `identifiable` / `why` say whether `a` means
    anything (see `identifiability`).
    """
    fam = FAMILIES[family]
    m, err = np.asarray(m, dtype=float), np.asarray(err, dtype=float)
    sigma = clean_sigma(sem, len(m))
    keep = np.isfinite(m) & np.isfinite(err) & (m > 0)
    m, err = m[keep], err[keep]
    sigma = sigma[keep] if sigma is not None else None
    n_par = len(fam.lower)
    if len(m) < n_par + 1:
        return nan_fit(family, len(m), f"fewer than {n_par + 1} points")
    try:
        best = _best_start(fam, m, err, sigma)
    except Exception as exc:  # a fit must never break an analysis run
        return nan_fit(family, len(m), f"error: {exc}")
    if best is None:
        return nan_fit(family, len(m), "no start gave a finite fit")
    return _fit_result(fam, m, err, sigma, *best)


def _best_start(fam: Family, m, err, sigma):
    """The fit from each of the family's starts (`_levenberg_marquardt`), the least chi^2's.
    Returns (popt, pcov, chi2), or None when no start gives a finite fit."""
    best = None
    for p0 in dict.fromkeys(fam.starts(m, err)):  # a start given twice ends where it did
        fit = _levenberg_marquardt(fam, m, err, sigma, np.asarray(p0, float))
        if fit is not None and (best is None or fit[2] < best[2]):
            best = fit
    return best


_MAX_STEPS = 1000  # Levenberg-Marquardt iterations from one start (most need 10-60)


def _levenberg_marquardt(
    fam: Family, m, err, sigma, p0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Weighted least squares from p0 by Levenberg-Marquardt, each step clipped to the
    family's bounds, and the covariance as curve_fit gives it (inv(J^T J), times chi2 / dof
    unless sigma is absolute). Every sum is exactly rounded (math.fsum) and the small systems
    are solved by a Gaussian elimination of our own: scipy's curve_fit solves with LAPACK,
    whose BLAS kernel, chosen per CPU, moved its optimum by up to 4e-7 (relative) from one
    machine to another. Returns (popt, pcov, chi2), or None if the fit is not finite.

    A report makes thousands of these fits (tens to hundreds of steps each), so a step costs
    as few Python calls as it can: one errstate for the whole fit, the normal equations' sums
    in one pass (`_normal_equations`), and none of them again after a rejected step (about
    half the steps), which leaves p, so J, as they were. Each number is the same operation
    on the same operands as in a plain step, so the fit has the same bits
    (tests/analysis/test_fits.py holds the plain steps and compares).
    """
    mx = float(m.max())
    w = np.ones_like(m) if sigma is None else 1.0 / sigma
    w_column = w[:, None]
    lower, upper = np.asarray(fam.lower, float), np.asarray(fam.upper, float)
    low, high = lower.tolist(), upper.tolist()
    p = np.clip(p0, lower, np.minimum(upper, 1e12))
    n = len(p)
    with np.errstate(all="ignore"):

        def residuals(q: np.ndarray) -> tuple[np.ndarray, float]:
            r = (err - fam.func(m, mx, *q)) * w
            return r, math.fsum((r * r).tolist()) if np.isfinite(r).all() else math.inf

        r, chi2 = residuals(p)
        if not math.isfinite(chi2):
            return None
        damping, moved = 1e-3, True
        for _ in range(_MAX_STEPS):
            if moved:  # a rejected step leaves p, so J, the equations and the active set, as is
                J = fam.jac(m, mx, *p) * w_column
                if not np.isfinite(J).all():
                    return None
                A, g = _normal_equations(J, r)
                # a parameter on a bound that the descent direction pushes out of it stays
                # there (an active set): clipping its step instead would stall the others'
                at = p.tolist()
                free = [
                    i for i in range(n)
                    if not ((at[i] <= low[i] and g[i] < 0) or (at[i] >= high[i] and g[i] > 0))
                ]  # fmt: skip
                g_free = [g[i] for i in free]
            step = _solve(
                [[A[i][j] + (damping * A[i][i] if i == j else 0.0) for j in free] for i in free],
                g_free,
            ) if free else None  # fmt: skip
            if step is None:
                chi2_trial = math.inf
            else:
                trial = p.copy()
                trial[free] += np.asarray(step)
                trial = np.clip(trial, lower, upper)
                r_trial, chi2_trial = residuals(trial)
            moved = chi2_trial < chi2
            if moved:
                to = trial.tolist()
                small = all(
                    abs(t - q) <= 1e-12 * (abs(q) + 1e-12) for t, q in zip(to, at, strict=True)
                )
                flat = chi2 - chi2_trial <= 1e-15 * chi2
                p, r, chi2, damping = trial, r_trial, chi2_trial, max(damping / 10.0, 1e-12)
                if small or flat:
                    break
            else:
                damping *= 10.0
                if damping > 1e16:
                    break
        J = fam.jac(m, mx, *p) * w_column
    A, _ = _normal_equations(J, r)
    inverse = _inverse(A) if np.isfinite(J).all() else None
    dof = len(m) - n
    pcov = np.full((n, n), np.inf) if inverse is None else np.asarray(inverse)
    if sigma is None and inverse is not None:
        pcov = pcov * (chi2 / dof if dof > 0 else np.inf)
    return p, pcov, chi2


def _normal_equations(J: np.ndarray, r: np.ndarray) -> tuple[list[list[float]], list[float]]:
    """J^T J and J^T r, each entry an exactly rounded sum (math.fsum): no summation order.
    The products of every pair of columns (each pair once: J^T J is symmetric, and x y is
    y x exactly) and of each column with r are made in one array operation, and summed as
    plain floats."""
    n = J.shape[1]
    rows, cols = _PAIRS.get(n) or _PAIRS.setdefault(n, np.triu_indices(n))
    products = np.concatenate([J[:, rows] * J[:, cols], J * r[:, None]], axis=1)
    sums = [math.fsum(column) for column in products.T.tolist()]
    A = [[0.0] * n for _ in range(n)]
    for k, (i, j) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
        A[i][j] = A[j][i] = sums[k]
    return A, sums[len(rows) :]


_PAIRS: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # n -> the (i, j) with i <= j


def _solve(A: list[list[float]], b: list[float]) -> list[float] | None:
    """A x = b by Gaussian elimination with partial pivoting (a few unknowns); None when a
    pivot vanishes. The pivot is the first row of the largest magnitude."""
    n = len(b)
    M = [[*row, b[i]] for i, row in enumerate(A)]
    for k in range(n):
        pivot, largest = k, abs(M[k][k])
        for i in range(k + 1, n):
            if abs(M[i][k]) > largest:
                pivot, largest = i, abs(M[i][k])
        if not math.isfinite(M[pivot][k]) or largest <= 1e-300:
            return None
        M[k], M[pivot] = M[pivot], M[k]
        top = M[k][k:]
        for i in range(k + 1, n):
            row = M[i]
            f = row[k] / top[0]
            row[k:] = [x - f * y for x, y in zip(row[k:], top, strict=True)]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        row = M[i]
        x[i] = (row[n] - math.fsum([row[j] * x[j] for j in range(i + 1, n)])) / row[i]
    return x


def _inverse(A: list[list[float]]) -> list[list[float]] | None:
    n = len(A)
    columns = [_solve(A, [1.0 if i == j else 0.0 for i in range(n)]) for j in range(n)]
    if any(c is None for c in columns):
        return None
    return [[columns[j][i] for j in range(n)] for i in range(n)]


def _fit_result(fam: Family, m, err, sigma, popt, pcov, chi2) -> dict[str, Any]:
    resid = err - fam.func(m, float(m.max()), *popt)
    dof = max(len(m) - len(popt), 1)
    var_a = float(pcov[0, 0]) if np.isfinite(pcov[0, 0]) else math.nan
    if sigma is not None:
        var_a *= max(1.0, chi2 / dof)
    ss_tot = float(np.sum((err - err.mean()) ** 2))
    out = dict(
        family=fam.name,
        ok=True,
        params=tuple(float(p) for p in popt),
        a=float(popt[0]),
        a_se=math.sqrt(var_a) if var_a >= 0 else math.nan,
        b=float(popt[1]),
        c=float(popt[2]),
        rmse=float(np.sqrt(np.mean(resid**2))),
        r2=1 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else math.nan,
        n_points=len(m),
        reason="",
    )
    why = identifiability(fam, out, float(err.max() - err.min()))
    out.update(identifiable=not why, why=why)
    return out


def identifiability(fam: Family, fit: dict[str, Any], curve_range: float) -> str:
    """Why the asymptote of a converged fit means nothing, or "" when it is pinned down.

    A parameter on its bound means the optimum lies outside the allowed region (the data ask
    for a negative asymptote, say), and the reported se ignores the bound. An interval wider
    than the whole range the curve covers says nothing the curve itself does not.
    """
    names = {POW3: "abc", EXP3: "abc", MMF4: "abgd"}[fam.name]
    for name, p, lo, hi in zip(names, fit["params"], fam.lower, fam.upper, strict=True):
        if abs(p - lo) <= _AT_BOUND * max(1.0, abs(lo)):
            return f"{name} at its lower bound {lo:g}"
        if np.isfinite(hi) and abs(p - hi) <= _AT_BOUND * max(1.0, abs(hi)):
            return f"{name} at its upper bound {hi:g}"
    se = fit["a_se"]
    if not math.isfinite(se):
        return "the asymptote's standard error is undefined"
    if 2 * 1.96 * se > curve_range:
        return f"95% interval width {2 * 1.96 * se:.3f} exceeds the curve's range {curve_range:.3f}"
    return ""


def holdout_score(
    family: str, m: np.ndarray, err: np.ndarray, sem: np.ndarray | None, n_out: int = N_HOLDOUT
) -> float:
    """RMSE on the `n_out` largest m of a fit made without them (NaN if it cannot be made).

    Extrapolating to larger m is what an asymptote does, so this scores a family on the
    task it is used for, not on how closely it follows the points it was fitted to.
    """
    order = np.argsort(np.asarray(m, dtype=float))
    m, err = np.asarray(m, dtype=float)[order], np.asarray(err, dtype=float)[order]
    sem = None if sem is None else np.asarray(sem, dtype=float)[order]
    cut = len(m) - n_out
    fit = fit_family(family, m[:cut], err[:cut], None if sem is None else sem[:cut])
    if not fit["ok"]:
        return math.nan
    pred = FAMILIES[family].func(m[cut:], float(m[:cut].max()), *fit["params"])
    return float(np.sqrt(np.mean((err[cut:] - pred) ** 2)))


def select_family(
    m: np.ndarray, err: np.ndarray, sem: np.ndarray | None = None
) -> tuple[str, dict[str, float]]:
    """The family with the lowest held-out RMSE ("" when none could be scored), and every
    family's score. Ties go to the family listed first (the fewer parameters)."""
    scores = {name: holdout_score(name, m, err, sem) for name in FAMILIES}
    usable = {k: v for k, v in scores.items() if math.isfinite(v)}
    best = min(usable, key=lambda k: usable[k]) if usable else ""
    return best, scores


def not_identifiable(fit: pd.Series) -> str:
    """ "" when the power-law asymptote is a usable number, else why it is not."""
    if not fit["ok"]:
        return f"no fit: {fit['reason']}"
    return "" if fit["identifiable"] else f"not identifiable: {fit['reason']}"


def fits_table(curves: pd.DataFrame) -> pd.DataFrame:
    """Every family fitted to every model's curve: parameters, identifiability, held-out RMSE
    and which family wins (written as <panel>/fits.csv)."""
    rows = []
    for model, c in curves.groupby("model", sort=True):
        c = c.sort_values("m")
        m, y, se = (c[k].to_numpy(dtype=float) for k in ("m", "mean", "sem"))
        best, scores = select_family(m, y, se)
        for name in FAMILIES:
            f = fit_family(name, m, y, se)
            rows.append(
                dict(model=model, family=name, ok=f["ok"], asymptote=f["a"],
                     asymptote_se=f["a_se"], params=" ".join(f"{p:.6g}" for p in f["params"]),
                     rmse=f["rmse"], identifiable=f["identifiable"],
                     reason=f["why"] or f["reason"], holdout_rmse=scores[name],
                     best=name == best)
            )  # fmt: skip
    return pd.DataFrame(rows)
