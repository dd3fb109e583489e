"""Parametric learning-curve fits (genvdis/analysis/fits.py): identifiability and held-out family
selection on curves whose answer is known."""

from __future__ import annotations

import numpy as np
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
