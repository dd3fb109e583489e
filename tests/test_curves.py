"""Curve-shape tests, fit identifiability and family selection on curves whose answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genvdis.analysis import differences as an
from genvdis.analysis import fits, runs, shape
from genvdis.report.markdown import write_reports
from genvdis.store import results

GRID = np.array([10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 400, 600], dtype=float)


def per_split(curves: dict, grid=GRID, n_splits=400, noise=0.04, seed=0) -> pd.DataFrame:
    """Independent per-split errors around known mean curves (fresh draws at every m)."""
    rng = np.random.default_rng(seed)
    rows = [
        dict(model=model, m=int(m), split=s, n_test=100, errors=0, error=err, separable=False)
        for model, f in curves.items()
        for m in grid
        for s, err in enumerate(f(m) + rng.normal(0, noise, n_splits))
    ]
    return pd.DataFrame(rows)


def smooth(m):
    return 0.15 + 0.8 * m**-0.6


def stepped(m):
    """The smooth curve with a planted jump of 0.05 from m = 60 on (a net rise of 0.031
    from m = 40 to m = 60)."""
    return smooth(m) + 0.05 * (m >= 60)


# ----------------------------------------------------------------------- shape tests


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


# ----------------------------------------------------------------------- identifiability


M_SEM = np.full(len(GRID), 0.003)


def test_identifiable_power_law_recovers_its_asymptote():
    f = fits.fit_family(fits.POW3, GRID, 0.15 + 0.5 * GRID**-0.5, M_SEM)
    assert f["identifiable"] and f["why"] == ""
    assert f["a"] == pytest.approx(0.15, abs=1e-3)


def test_liver_style_curve_is_not_identifiable():
    """Still falling linearly in log m at the last point: the power law wants a < 0."""
    f = fits.fit_family(fits.POW3, GRID, 0.46 - 0.025 * np.log(GRID / 10), M_SEM)
    assert f["ok"] and not f["identifiable"]
    assert f["why"] == "a at its lower bound 0"


def test_breast_cancer_style_flat_noisy_curve_is_not_identifiable():
    rng = np.random.default_rng(0)
    f = fits.fit_family(fits.POW3, GRID, 0.30 + rng.normal(0, 0.004, len(GRID)), M_SEM)
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


# ----------------------------------------------------------------------- family selection


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
    y = curve(GRID) + rng.normal(0, 0.001, len(GRID))
    best, scores = fits.select_family(GRID, y, np.full(len(GRID), 0.001))
    assert best == family, scores


def test_each_family_fits_its_own_curve_exactly():
    for name, params in [
        (fits.POW3, (0.15, 0.8, 0.6)),
        (fits.EXP3, (0.12, 0.25, 5.0)),
        (fits.MMF4, (0.1, 250.0, 0.45, 1.2)),
    ]:
        y = fits.FAMILIES[name].func(GRID, GRID.max(), *params)
        f = fits.fit_family(name, GRID, y)
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
    fam, mx = fits.FAMILIES[name], float(GRID.max())
    jac = fam.jac(GRID, mx, *params)
    assert jac.shape == (len(GRID), len(params))
    for k, p in enumerate(params):
        h = 1e-6 * max(abs(p), 1e-3)
        up, down = list(params), list(params)
        up[k], down[k] = p + h, p - h
        numeric = (fam.func(GRID, mx, *up) - fam.func(GRID, mx, *down)) / (2 * h)
        scale = max(float(np.abs(numeric).max()), 1e-12)
        assert np.abs(jac[:, k] - numeric).max() <= 1e-6 * scale, (name, k)


# ----------------------------------------------------------------------- analysis and report


def _panel(root, name, dataset, errors):
    """A finished run's folder as `genvdis run` commits it (errors, summary, config.yaml and
    the manifest listing them): readers refuse a folder without its manifest."""
    d = root / name
    d.mkdir(parents=True)
    models = [{"name": x} for x in (an.NB, an.LR)]
    cfg = dict(name=name, title=name, panel=7, n_rows=345, dataset=dataset, models=models)
    if "trajectories" not in errors:
        errors = errors.assign(trajectories=0)
    results.write_results(d, errors, cfg, [an.NB, an.LR])
    return d


def test_report_flags_shapes_and_unidentifiable_asymptotes(tmp_path):
    errors = per_split(
        {an.NB: lambda m: 0.46 - 0.025 * np.log(m / 10), an.LR: stepped}, n_splits=300
    )
    _panel(tmp_path, "liver", "liver", errors)
    t = runs.analyse_folders([tmp_path], n_boot=20)[0].iloc[0]
    assert t[f"{an.NB}_asymptote_reason"] == "not identifiable: a at its lower bound 0"
    assert t[f"{an.LR}_asymptote_reason"] == ""
    assert t[f"{an.LR}_rises"] == "40→60" and t[f"{an.NB}_rises"] == ""
    assert t[f"{an.NB}_best_family"] in fits.FAMILIES
    saved = pd.read_csv(tmp_path / "analysis.csv", keep_default_na=False)
    assert saved.loc[0, f"{an.NB}_asymptote_reason"].startswith("not identifiable")
    fitted = pd.read_csv(tmp_path / "liver" / "fits.csv")
    assert len(fitted) == 6 and fitted.groupby("model")["best"].sum().tolist() == [1, 1]
    md, page = write_reports([tmp_path], n_boot=20)[0]
    text = md.read_text()
    assert "| 7 | liver | 345 | 10–600 |" in text
    assert "not identifiable: a at its lower bound 0" in text
    assert "## Curve shape" in text and "| logistic_regression | m = 40→60:" in text
    assert "| real |" in text
    assert "train/test selector, not a diagnosis" in text and "McDermott" in page.read_text()


def test_report_without_dataset_note_or_shape_findings(tmp_path):
    errors = per_split({an.NB: smooth, an.LR: lambda m: 0.1 + 0.9 * m**-0.5}, n_splits=100)
    _panel(tmp_path, "pima", "pima", errors)
    text = write_reports([tmp_path], n_boot=20)[0][0].read_text()
    assert "No curve rises or bends, even nominally." in text
    assert "McDermott" not in text


def test_short_grid_reports_no_fit_and_skips_held_out_selection(tmp_path):
    errors = per_split({an.NB: smooth, an.LR: smooth}, grid=np.array([10.0, 20, 40]), n_splits=50)
    _panel(tmp_path, "short", "short", errors)
    t = runs.analyse_folders([tmp_path], n_boot=10)[0].iloc[0]
    assert t[f"{an.NB}_asymptote_reason"] == "no fit: fewer than 4 points"
    assert t[f"{an.NB}_best_family"] == ""  # 3 points leave too few to hold 2 out
    text = write_reports([tmp_path], n_boot=10)[0][0].read_text()
    assert "no fit: fewer than 4 points" in text


def test_fit_that_never_converges_says_so(monkeypatch):
    monkeypatch.setattr(fits, "_levenberg_marquardt", lambda *args: None)
    f = fits.fit_family(fits.POW3, GRID, smooth(GRID), M_SEM)
    assert not f["ok"] and f["reason"] == "no start gave a finite fit"
    assert fits.select_family(GRID, smooth(GRID), M_SEM)[0] == ""
