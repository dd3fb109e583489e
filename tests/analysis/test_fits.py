"""Parametric learning-curve fits (genvdis/analysis/fits.py): identifiability and held-out family
selection on curves whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from genvdis.analysis import fits
from tests.learningcurves import SHAPE_GRID, smooth

M_SEM = np.full(len(SHAPE_GRID), 0.003)


def test_identifiable_power_law_recovers_its_asymptote():
    f = fits.fit_family(fits.POW3, SHAPE_GRID, 0.15 + 0.5 * SHAPE_GRID**-0.5, M_SEM)
    assert f["identifiable"] and f["why"] == ""
    assert f["a"] == pytest.approx(0.15, abs=1e-3)


def test_liver_style_curve_is_not_identifiable():
    """Still falling linearly in log m at the last point: the power law wants a < 0."""
    f = fits.fit_family(fits.POW3, SHAPE_GRID, 0.46 - 0.025 * np.log(SHAPE_GRID / 10), M_SEM)
    assert f["ok"] and not f["identifiable"]
    assert f["why"] == "a at its lower bound 0"


def test_breast_cancer_style_flat_noisy_curve_is_not_identifiable():
    rng = np.random.default_rng(0)
    f = fits.fit_family(fits.POW3, SHAPE_GRID, 0.30 + rng.normal(0, 0.004, len(SHAPE_GRID)), M_SEM)
    assert f["ok"] and not f["identifiable"] and f["why"]


def test_interval_wider_than_the_curve_is_not_identifiable():
    fam = fits.FAMILIES[fits.POW3]
    fit = dict(params=(0.2, 1.0, 0.5), a_se=0.03)
    assert fits.identifiability(fam, fit, curve_range=0.1) == (
        "95% interval width 0.118 exceeds the curve's range 0.100"
    )
    assert fits.identifiability(fam, fit, curve_range=0.2) == ""
    assert "c at its upper bound 3" == fits.identifiability(
        fam, dict(params=(0.2, 1.0, 3.0), a_se=0.001), 0.2
    )


@pytest.mark.parametrize(
    "family,curve",
    [
        (fits.POW3, lambda m: 0.15 + 0.8 * m**-0.6),
        (fits.EXP3, lambda m: 0.12 + 0.25 * np.exp(-m / 120)),
        (fits.MMF4, lambda m: fits._mmf4(m, 0.1, 100.0**1.2, 0.45, 1.2)),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selection_picks_the_generating_family(family, curve, seed):
    rng = np.random.default_rng(seed)
    y = curve(SHAPE_GRID) + rng.normal(0, 0.001, len(SHAPE_GRID))
    best, scores = fits.select_family(SHAPE_GRID, y, np.full(len(SHAPE_GRID), 0.001))
    assert best == family, scores


def test_each_family_fits_its_own_curve_exactly():
    for name, params in [
        (fits.POW3, (0.15, 0.8, 0.6)),
        (fits.EXP3, (0.12, 0.25, 5.0)),
        (fits.MMF4, (0.1, 250.0, 0.45, 1.2)),
    ]:
        y = fits.FAMILIES[name].func(SHAPE_GRID, SHAPE_GRID.max(), *params)
        f = fits.fit_family(name, SHAPE_GRID, y)
        assert f["a"] == pytest.approx(params[0], abs=2e-3), name
        assert f["rmse"] < 1e-4, name


@pytest.mark.parametrize(
    "name,params",
    [
        (fits.POW3, (0.15, 0.8, 0.6)),
        (fits.POW3, (0.0, 3.0, 2.5)),
        (fits.EXP3, (0.12, 0.25, 5.0)),
        (fits.EXP3, (0.3, 2.0, 400.0)),
        (fits.MMF4, (0.1, 250.0, 0.45, 1.2)),
        (fits.MMF4, (0.4, 1e-3, 0.9, 0.05)),
    ],
)
def test_each_familys_jacobian_is_its_derivative(name, params):
    """The analytic Jacobian curve_fit is given agrees with central differences of the
    family's own function, column by column, at a typical and an extreme point."""
    fam, mx = fits.FAMILIES[name], float(SHAPE_GRID.max())
    jac = fam.jac(SHAPE_GRID, mx, *params)
    assert jac.shape == (len(SHAPE_GRID), len(params))
    for k, p in enumerate(params):
        h = 1e-6 * max(abs(p), 1e-3)
        up, down = list(params), list(params)
        up[k], down[k] = p + h, p - h
        numeric = (fam.func(SHAPE_GRID, mx, *up) - fam.func(SHAPE_GRID, mx, *down)) / (2 * h)
        scale = max(float(np.abs(numeric).max()), 1e-12)
        assert np.abs(jac[:, k] - numeric).max() <= 1e-6 * scale, (name, k)


def test_fit_that_never_converges_says_so(monkeypatch):
    monkeypatch.setattr(fits, "_levenberg_marquardt", lambda *args: None)
    f = fits.fit_family(fits.POW3, SHAPE_GRID, smooth(SHAPE_GRID), M_SEM)
    assert not f["ok"] and f["reason"] == "no start gave a finite fit"
    assert fits.select_family(SHAPE_GRID, smooth(SHAPE_GRID), M_SEM)[0] == ""


# ------------------------------------------------------------------ the same bits, faster
# fits._levenberg_marquardt saves Python calls (one pass for the normal equations, a rejected
# step's equations kept); these plain versions, step by step, are what it must equal bit for bit


def _reference_lm(fam, m, err, sigma, p0):
    """fits._levenberg_marquardt as plainly as it can be written: one step at a time."""
    mx = float(m.max())
    w = np.ones_like(m) if sigma is None else 1.0 / sigma
    lower, upper = np.asarray(fam.lower, float), np.asarray(fam.upper, float)
    p = np.clip(p0, lower, np.minimum(upper, 1e12))

    def residuals(q: np.ndarray) -> tuple[np.ndarray, float]:
        with np.errstate(all="ignore"):
            r = (err - fam.func(m, mx, *q)) * w
        return r, math.fsum(r * r) if np.all(np.isfinite(r)) else math.inf

    r, chi2 = residuals(p)
    if not math.isfinite(chi2):
        return None
    damping, n = 1e-3, len(p)
    for _ in range(fits._MAX_STEPS):
        with np.errstate(all="ignore"):
            J = fam.jac(m, mx, *p) * w[:, None]
        if not np.all(np.isfinite(J)):
            return None
        A, g = _reference_equations(J, r)
        # a parameter on a bound that the descent direction pushes out of it stays there
        # (an active set): clipping its step instead would stall the others' steps
        held = [
            (p[i] <= lower[i] and g[i] < 0) or (p[i] >= upper[i] and g[i] > 0) for i in range(n)
        ]
        free = [i for i in range(n) if not held[i]]
        step = _reference_solve(
            [[A[i][j] + (damping * A[i][i] if i == j else 0.0) for j in free] for i in free],
            [g[i] for i in free],
        ) if free else None  # fmt: skip
        trial = None
        if step is not None:
            trial = p.copy()
            trial[free] += np.asarray(step)
            trial = np.clip(trial, lower, upper)
        r_trial, chi2_trial = (r, math.inf) if trial is None else residuals(trial)
        if chi2_trial < chi2:
            small = np.all(np.abs(trial - p) <= 1e-12 * (np.abs(p) + 1e-12))
            flat = chi2 - chi2_trial <= 1e-15 * chi2
            p, r, chi2, damping = trial, r_trial, chi2_trial, max(damping / 10.0, 1e-12)
            if small or flat:
                break
        else:
            damping *= 10.0
            if damping > 1e16:
                break
    with np.errstate(all="ignore"):
        J = fam.jac(m, mx, *p) * w[:, None]
    A, _ = _reference_equations(J, r)
    inverse = fits._inverse(A) if np.all(np.isfinite(J)) else None
    dof = len(m) - n
    pcov = np.full((n, n), np.inf) if inverse is None else np.asarray(inverse)
    if sigma is None and inverse is not None:
        pcov = pcov * (chi2 / dof if dof > 0 else np.inf)
    return p, pcov, chi2


def _reference_equations(J: np.ndarray, r: np.ndarray) -> tuple[list[list[float]], list[float]]:
    """J^T J and J^T r, each entry an exactly rounded sum (math.fsum): no summation order."""
    cols = J.T
    A = [[math.fsum(cols[i] * cols[j]) for j in range(len(cols))] for i in range(len(cols))]
    return A, [math.fsum(col * r) for col in cols]


def _reference_solve(A: list[list[float]], b: list[float]) -> list[float] | None:
    """A x = b by Gaussian elimination with partial pivoting (a few unknowns); None when a
    pivot vanishes."""
    n = len(b)
    M = [list(row) + [b[i]] for i, row in enumerate(A)]
    for k in range(n):
        pivot = max(range(k, n), key=lambda i: abs(M[i][k]))
        if not math.isfinite(M[pivot][k]) or abs(M[pivot][k]) <= 1e-300:
            return None
        M[k], M[pivot] = M[pivot], M[k]
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            for j in range(k, n + 1):
                M[i][j] -= f * M[k][j]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        x[i] = (M[i][n] - math.fsum(M[i][j] * x[j] for j in range(i + 1, n))) / M[i][i]
    return x


WIGGLE = np.sin(np.arange(len(SHAPE_GRID)) * 1.7)
CURVES = {
    "power law, sems": (0.15 + 0.5 * SHAPE_GRID**-0.5 + 0.003 * WIGGLE, M_SEM),
    "still falling, no sems": (0.46 - 0.025 * np.log(SHAPE_GRID / 10), None),  # a on its bound
    "flat, uneven sems": (0.30 + 0.004 * WIGGLE, 0.004 + 0.002 * np.cos(np.arange(13))),
    "zero at the end": (np.maximum(0.2 - 0.04 * np.log(SHAPE_GRID / 10), 0.0), M_SEM),
}


@pytest.mark.parametrize("curve", list(CURVES))
def test_fits_are_bit_for_bit_those_of_the_plain_steps(curve, monkeypatch):
    err, sem = CURVES[curve]
    table = fits.fits_table(_curves(err, sem))
    scores = {name: fits.holdout_score(name, SHAPE_GRID, err, sem) for name in fits.FAMILIES}
    monkeypatch.setattr(fits, "_levenberg_marquardt", _reference_lm)
    assert table.to_csv() == fits.fits_table(_curves(err, sem)).to_csv()
    for name in fits.FAMILIES:
        assert repr(scores[name]) == repr(fits.holdout_score(name, SHAPE_GRID, err, sem))


def _curves(err, sem) -> pd.DataFrame:
    sem = np.full(len(err), np.nan) if sem is None else sem
    return pd.DataFrame(dict(model="naive_bayes", m=SHAPE_GRID, mean=err, sem=sem))


def test_normal_equations_are_each_entry_summed_exactly():
    J, r = np.random.default_rng(0).normal(size=(13, 4)) * [1, 1e3, 1e-3, 7], np.arange(13.0)
    assert fits._normal_equations(J, r) == _reference_equations(J, r)
    A, g = fits._normal_equations(J, r)
    assert np.allclose(A, J.T @ J, rtol=1e-12) and np.allclose(g, J.T @ r, rtol=1e-12)
    assert fits._solve(A, g) == _reference_solve(A, g)
    assert np.allclose(fits._solve(A, g), np.linalg.solve(A, g), rtol=1e-9)
    assert fits._solve([[0.0, 1.0], [0.0, 1.0]], [1.0, 1.0]) is None  # singular
