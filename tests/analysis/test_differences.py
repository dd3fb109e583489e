"""The statistics of analysis.py on synthetic learning curves whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genvdis.analysis import differences as an
from genvdis.analysis import fits
from tests.learningcurves import CROSSING, GRID, TRUE_CROSS, make_errors


@pytest.fixture(scope="module")
def crossing_errors():
    return make_errors(CROSSING)


def exact(means_by_m: dict[int, float]) -> pd.DataFrame:
    """Two splits with identical differences: the mean is known exactly, the sem is 0."""
    rows = []
    for m, d in means_by_m.items():
        for s in range(2):
            rows += [
                dict(model=an.LR, m=m, split=s, error=0.3 + d),
                dict(model=an.NB, m=m, split=s, error=0.3),
            ]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------- paired differences


def test_paired_differences_matches_hand_computation():
    lr = [0.30, 0.10, 0.50]
    nb = [0.20, 0.05, 0.30]  # differences 0.10, 0.05, 0.20
    rows = [dict(model=an.LR, m=10, split=s, error=e) for s, e in enumerate(lr)]
    rows += [dict(model=an.NB, m=10, split=s, error=e) for s, e in enumerate(nb)]
    d = an.paired_differences(pd.DataFrame(rows))
    assert list(d.columns) == an.DIFF_COLUMNS
    diffs = np.array([0.10, 0.05, 0.20])
    sem = diffs.std(ddof=1) / math.sqrt(3)
    half = stats.t.ppf(0.975, 2) * sem
    row = d.iloc[0]
    assert row["mean_diff"] == pytest.approx(diffs.mean())
    assert row["sem"] == pytest.approx(sem)
    assert row["ci_low"] == pytest.approx(diffs.mean() - half)
    assert row["ci_high"] == pytest.approx(diffs.mean() + half)
    assert row["n_splits"] == 3


def test_pairing_removes_shared_split_variation(crossing_errors):
    d = an.paired_differences(crossing_errors)
    # Unpaired, the sem would include the shared sd 0.05 twice: sqrt(2*(.05^2+.03^2)/200)
    unpaired = math.sqrt(2 * (0.05**2 + 0.03**2) / 200)
    paired = math.sqrt(2 * 0.03**2 / 200)
    assert d["sem"].median() == pytest.approx(paired, rel=0.2)
    assert d["sem"].max() < unpaired * 0.7
    assert list(d["m"]) == GRID


# ----------------------------------------------------------------------- crossover


def test_crossover_found_between_the_right_grid_points(crossing_errors):
    c = an.crossover(crossing_errors, n_boot=500)
    assert c["m_cross"] == 20
    assert 15 < c["m_cross_interp"] < 20
    assert c["ci_low"] <= TRUE_CROSS <= c["ci_high"]
    assert c["ci_high"] - c["ci_low"] < 3
    assert c["frac_no_cross"] == 0.0


def test_crossover_is_deterministic_given_seed(crossing_errors):
    assert an.crossover(crossing_errors, n_boot=200, seed=3) == an.crossover(
        crossing_errors, n_boot=200, seed=3
    )


def test_crossover_must_hold_for_good():
    # + - + - - : the first sign change is undone, the crossover is the later one
    c = an.crossover(exact({5: 0.1, 10: -0.1, 20: 0.05, 40: -0.05, 80: -0.1}), n_boot=0)
    assert c["m_cross"] == 40
    assert c["m_cross_interp"] == pytest.approx(math.sqrt(20 * 40))  # midway in log m


def test_no_crossover_when_it_ends_positive_or_never_was_positive():
    assert an.crossover(exact({5: 0.1, 10: -0.1, 20: 0.05}), n_boot=0)["m_cross"] is None
    assert an.crossover(exact({5: -0.1, 10: -0.2, 20: -0.3}), n_boot=0)["m_cross"] is None
    # zero is not "LR better": ending at exactly 0 is no crossover
    assert an.crossover(exact({5: 0.1, 10: -0.1, 20: 0.0}), n_boot=0)["m_cross"] is None


def test_no_crossover_reports_none_and_bootstrap_fraction():
    e = make_errors({an.LR: lambda m: 0.3, an.NB: lambda m: 0.2}, n_splits=50)
    c = an.crossover(e, n_boot=200)
    assert c["m_cross"] is None and c["ci_low"] is None
    assert c["frac_no_cross"] == 1.0


# ----------------------------------------------------------------------- verdict


def test_verdict_two_regimes(crossing_errors):
    assert an.verdict(an.paired_differences(crossing_errors)) == an.TWO_REGIMES


@pytest.mark.parametrize(
    ("lr", "nb", "expected"),
    [
        (0.30, 0.20, an.NB_BETTER),
        (0.20, 0.30, an.LR_BETTER),
        (0.25, 0.25, an.NOT_DISTINGUISHABLE),
    ],
)
def test_verdict_constant_gaps(lr, nb, expected):
    e = make_errors(
        {an.LR: lambda m: lr, an.NB: lambda m: nb}, grid=[10, 20, 40, 80], n_splits=50, seed=2
    )
    assert an.verdict(an.paired_differences(e)) == expected


def test_verdict_order_matters():
    def table(sig):  # sig: +1 NB better, -1 LR better, 0 neither, per m
        return pd.DataFrame(
            [
                dict(m=m, mean_diff=s * 0.1, ci_low=s * 0.1 - 0.05, ci_high=s * 0.1 + 0.05)
                for m, s in zip([10, 20, 40, 80], sig, strict=True)
            ]
        )

    assert an.verdict(table([1, 0, -1, -1])) == an.TWO_REGIMES
    assert an.verdict(table([-1, 1, 0, 0])) == an.MIXED
    assert an.verdict(table([1, -1, 1, -1])) == an.MIXED
    assert an.verdict(table([0, 1, 1, 0])) == an.NB_BETTER
    assert an.verdict(table([0, 0, 0, 0])) == an.NOT_DISTINGUISHABLE


# ----------------------------------------------------------------------- power-law fit


def test_fit_recovers_known_asymptote():
    rng = np.random.default_rng(0)
    m = np.array([10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120], dtype=float)
    sem = np.full(m.shape, 0.002)
    err = 0.15 + 1.0 * m**-0.5 + rng.normal(0, 0.002, m.shape)
    fit = fits.fit_family(fits.POW3, m, err, sem)
    assert fit["ok"]
    assert fit["a"] == pytest.approx(0.15, abs=0.015)
    assert fit["c"] == pytest.approx(0.5, abs=0.1)
    assert 0 < fit["a_se"] < 0.02
    assert abs(fit["a"] - 0.15) < 4 * fit["a_se"]
    assert fit["r2"] > 0.99


def test_fit_unweighted_exact_curve():
    m = np.array([5, 10, 20, 50, 100, 200], dtype=float)
    fit = fits.fit_family(fits.POW3, m, 0.15 + m**-0.5, None)
    assert fit["a"] == pytest.approx(0.15, abs=1e-4)
    assert fit["b"] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    ("m", "err"),
    [
        (np.array([10.0, 20, 40]), np.array([0.3, 0.2, 0.1])),  # too few points
        (np.array([10.0, 20, 40, 80]), np.array([np.nan, 0.2, np.nan, 0.1])),
    ],
)
def test_fit_fails_softly(m, err):
    fit = fits.fit_family(fits.POW3, m, err, None)
    assert fit["ok"] is False
    assert math.isnan(fit["a"])


def test_fit_survives_zero_sems():
    m = np.array([10.0, 20, 40, 80, 160])
    err = 0.05 + 2 * m**-1.0
    sem = np.array([0.01, 0.01, 0.0, np.nan, 0.0])
    fit = fits.fit_family(fits.POW3, m, err, sem)
    assert fit["ok"] and fit["a"] == pytest.approx(0.05, abs=0.01)
