"""Curve-shape tests (genvdis/analysis/shape.py): contrasts, Holm's correction, and rises and
bends found on curves whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genvdis.analysis import differences as an
from genvdis.analysis import runs, shape
from genvdis.report.markdown import write_reports
from tests.learningcurves import CROSS_LR, RISING, per_split, run_errors, smooth, stepped, write_run


def test_contrast_test_is_welchs_t_test():
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.30, 0.05, 50), rng.normal(0.32, 0.08, 80)
    mean = np.array([x.mean(), y.mean()])
    var = np.array([x.var(ddof=1), y.var(ddof=1)])
    est, se, df, p = shape.contrast_test(np.array([-1.0, 1.0]), mean, var, np.array([50, 80]))
    ref = stats.ttest_ind(y, x, equal_var=False, alternative="greater")
    assert est == pytest.approx(y.mean() - x.mean())
    assert p == pytest.approx(ref.pvalue, rel=1e-9)
    assert df == pytest.approx(ref.df, rel=1e-9)


def test_contrast_test_with_zero_variance_is_exact():
    assert shape.contrast_test(np.array([-1.0, 1.0]), np.zeros(2), np.zeros(2), np.ones(2) * 5)[
        3
    ] == pytest.approx(1.0)
    assert shape.contrast_test(np.array([-1.0, 1.0]), np.array([0, 0.1]), np.zeros(2), np.ones(2))[
        3
    ] == pytest.approx(0.0)


def test_holm_known_answer():
    adj = shape.holm(np.array([0.01, 0.04, 0.03, 0.005]))
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert shape.holm(np.array([0.5, 0.9])) == pytest.approx([1.0, 1.0])


def test_planted_step_is_flagged_and_smooth_curve_is_not():
    curves = an.model_curves(per_split({"stepped": stepped, "smooth": smooth}))
    table = shape.shape_tests(curves)
    rises = table[(table["test"] == shape.RISE) & table["significant"]]
    assert set(rises["model"]) == {"stepped"}
    assert shape.flags(table, "stepped", shape.RISE) == "40→60"  # the planted step
    assert (rises["m_from"] < 60).all() and (rises["m_to"] >= 60).all()
    assert shape.flags(table, "smooth", shape.RISE) == ""
    assert shape.flags(table, "smooth", shape.BEND) == ""
    # the curve bends the wrong way (slope falls) at the top of the step
    assert "60" in shape.flags(table, "stepped", shape.BEND).split(";")


def test_slow_climb_is_found_between_distant_m():
    """Boston-like: +0.001 per step, no single step significant, the climb is."""
    grid = np.array([20, 40, 60, 80, 100, 150, 200, 250, 300, 380], dtype=float)

    def nb(m):
        return 0.20 + 0.001 * np.searchsorted(grid, m)

    climb = per_split({"nb": nb}, grid=grid, n_splits=1000, noise=0.04)
    table = shape.shape_tests(an.model_curves(climb))
    rise = table[table["test"] == shape.RISE]
    steps = rise[rise["m_to"] == rise["m_from"].map(dict(zip(grid[:-1], grid[1:], strict=True)))]
    assert not steps["significant"].any()
    assert rise["significant"].any()


# --- curves of one split per m (no variance, nothing to test) beside curves of many ---


def test_a_curve_of_one_split_per_m_has_no_significant_shape_finding(tmp_path):
    """With one split per m a curve's variance is unknown: no rise or bend can be tested,
    where one split was counted as zero variance and every step up came out significant
    (p = 0, "real" in the report)."""
    run = write_run(tmp_path, "single", {an.NB: RISING, an.LR: CROSS_LR}, n_splits=1)
    table = runs.analyse_folders([tmp_path], n_boot=50)[0]
    shapes = pd.read_csv(run / "shape.csv")
    assert not shapes["significant"].any()
    assert shapes["p"].isna().all() and shapes["p_holm"].isna().all()
    row = table.iloc[0]
    assert (row[f"{an.NB}_rises"], row[f"{an.NB}_nonconvex"]) == ("", "")
    write_reports([tmp_path])[0]
    text = (tmp_path / "REPORT.md").read_text()
    assert "| real |" not in text and "p 0," not in text


def test_a_rise_with_many_splits_is_still_found_and_its_p_unchanged():
    """The control for the test above: a curve with many splits still has its rise found, with
    the p-value its contrast gives."""
    curves = an.model_curves(run_errors({an.NB: RISING}, n_splits=30))
    table = shape.shape_tests(curves)
    assert shape.flags(table, an.NB, shape.RISE) == "20→40"
    step = table[(table["m_from"] == 20) & (table["m_to"] == 40)].iloc[0]
    assert step["p"] < 1e-6 and step["significant"]


def test_holm_adjusts_over_the_tests_that_could_be_made():
    """A test without a p-value (no variance) is not one of the family Holm corrects for."""
    adj = shape.holm(np.array([0.01, math.nan, 0.02]))
    assert adj[[0, 2]] == pytest.approx([0.02, 0.02])
    assert math.isnan(adj[1])
