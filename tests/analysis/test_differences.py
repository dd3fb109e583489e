"""The statistics of genvdis/analysis/differences.py (paired differences, crossovers, verdicts)
on synthetic learning curves whose answer is known, and named comparisons (`compare:`) from the
config to analysis.csv, pairs.csv, the report, the API and the figure."""

from __future__ import annotations

import math
import shutil

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

import genvdis
from genvdis.analysis import differences as an
from genvdis.analysis import fits, runs
from genvdis.cli import app
from genvdis.config.experiment import parse_config
from genvdis.errors import UserError
from genvdis.report import plotting
from genvdis.report.markdown import write_reports
from tests.learningcurves import (
    CROSS_LR,
    CROSS_NB,
    CROSSING,
    GRID,
    RUN_GRID,
    TRUE_CROSS,
    explorer_data,
    make_errors,
    run_errors,
    write_run,
)

matplotlib.use("Agg")  # the figure of `compare:` runs is drawn in this process


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


# --- the crossover of one split, verdicts on named pairs, a compare edited into config.yaml ---


def test_the_crossover_of_one_split_has_no_bootstrap_interval():
    """Resampling one split gives that split every time: the interval was the point itself
    ([261.4, 261.4] on pima) and no resample lacked a crossover, as if the crossover were
    exact. With one split the interval and frac_no_cross are missing; the crossover stays."""
    errors = run_errors({an.NB: CROSS_NB, an.LR: CROSS_LR}, n_splits=1)
    cross = an.crossover(errors, n_boot=200)
    diffs = an.paired_differences(errors)
    d = diffs.set_index("m")["mean_diff"]
    assert d[RUN_GRID[0]] > 0 and d[RUN_GRID[-1]] < 0  # the curves cross on this split
    assert cross["m_cross"] is not None
    assert cross["ci_low"] is None and cross["ci_high"] is None
    assert cross["frac_no_cross"] is None


def test_the_crossover_of_two_splits_keeps_its_bootstrap():
    errors = run_errors({an.NB: CROSS_NB, an.LR: CROSS_LR}, n_splits=2)
    cross = an.crossover(errors, n_boot=200)
    assert cross["n_boot"] == 200 and cross["frac_no_cross"] is not None


def test_the_all_panels_row_shows_the_errors_of_the_pair_it_compares(tmp_path):
    """A run whose first `compare:` pair is not (NB, LR): the row's crossover and verdict are
    that pair's (lda - NB here), but its "LR" columns showed logistic regression's errors, as
    if the crossover were LR's (committed results/examples: gnb-vs-svm shows LR's 0.368 and
    0.226 beside gnb's crossover 359.2, where LR's own is 75.8)."""
    curves = {an.NB: CROSS_NB, an.LR: CROSS_LR, "lda": lambda m: 0.15 + 1.5 / m}
    write_run(tmp_path, "pair", curves, n_splits=20, compare=[[an.NB, "lda"], [an.NB, an.LR]])
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["disc_model"]) == (an.NB, "lda")
    text = (tmp_path / "REPORT.md").read_text()
    table = text.split("## All panels")[1].split("## Method")[0]
    cells = [c.strip() for c in table.strip().splitlines()[2].strip("|").split("|")]
    lr_at_min = f"{row[f'{an.LR}_err_m_min']:.3f}"
    lda_at_min = f"{row['lda_err_m_min']:.3f}"
    assert lr_at_min != lda_at_min
    assert lda_at_min in cells[5]  # "LR @ m_min": the pair's second model, lda


def test_a_verdict_on_a_pair_in_other_roles_names_the_better_model(tmp_path):
    """`compare: [[logistic_regression, naive_bayes]]` with logistic regression better at every
    m: analysis.csv keeps the verdict in the paper's roles ("NB" = the pair's first model, here
    LR); the report and the explorer must name the better model ("logistic_regression better"),
    never print those roles as they are ("NB better throughout") beside a table that says the
    opposite."""
    curves = {an.NB: CROSS_NB, an.LR: lambda m: 0.15}
    write_run(tmp_path, "reversed", curves, n_splits=20, compare=[[an.LR, an.NB]])
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["disc_model"], row["verdict"]) == (an.LR, an.NB, an.NB_BETTER)
    text = (tmp_path / "REPORT.md").read_text()
    assert an.NB_BETTER not in text and an.LR_BETTER not in text
    assert "Verdict: **logistic_regression better throughout**" in text
    table = text.split("## All panels")[1].split("## Method")[0]
    assert table.strip().splitlines()[2].endswith("| logistic_regression better throughout |")
    run = explorer_data(tmp_path)["panels"][0]["runs"][0]
    assert run["verdict"] == "logistic_regression better throughout"


def test_the_paper_pairs_verdicts_keep_the_paper_words(tmp_path):
    write_run(tmp_path, "paper", {an.NB: CROSS_NB, an.LR: lambda m: 0.15}, n_splits=20)
    write_reports([tmp_path])[0]
    assert "Verdict: **LR better throughout**" in (tmp_path / "REPORT.md").read_text()
    assert explorer_data(tmp_path)["panels"][0]["runs"][0]["verdict"] == an.LR_BETTER


def test_an_lda_run_without_naive_bayes_is_not_called_nb_better(tmp_path):
    """models [lda, logistic_regression]: the pair is (lda, LR); its verdict is lda's."""
    write_run(tmp_path, "lda", {"lda": CROSS_NB, an.LR: lambda m: 0.9}, n_splits=20)
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["verdict"]) == ("lda", an.NB_BETTER)
    text = (tmp_path / "REPORT.md").read_text()
    assert (
        "Verdict: **lda better throughout**" in text
        and an.NB_BETTER not in text.split("## Comparison with the paper")[0]
    )


@pytest.mark.parametrize(
    "compare, message",
    [
        ([[an.NB, "logistic_regresion"]], "compare: pair 1: 'logistic_regresion' is not in"),
        ([[an.NB, an.LR], [an.NB, "svm"]], "compare: pair 2: 'svm' is not in models"),
        ([[an.NB, an.LR], an.NB], "compare: pair 2 'naive_bayes' must name two different"),
        ([[an.NB, an.NB]], "compare: pair 1 ['naive_bayes', 'naive_bayes'] must name two"),
        ([[an.LR, an.NB], [an.LR, an.NB]], "compare: pair 2 ['logistic_regression', 'naive_"),
        ("naive_bayes", "compare: must be a list of pairs [first, second]"),
    ],
)
def test_a_compare_edited_into_config_yaml_is_checked_as_a_configs(tmp_path, compare, message):
    """config.yaml's `compare:` may be edited after a run (it changes no number of the run), so
    the report checks it as a config's: a pair naming a model the run does not have, or a
    malformed one, stops the report with the config's own message naming the file, rather
    than being dropped (a verdict of 'n/a' with exit 0) or replaced by the default pairs."""
    run = write_run(tmp_path, "edited", {an.NB: CROSS_NB, an.LR: CROSS_LR}, n_splits=5)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "compare": compare}))
    with pytest.raises(UserError) as raised:
        write_reports([tmp_path])[0]
    text = str(raised.value)
    assert text.startswith(f"{run / 'config.yaml'}: {message}")
    assert "\n" not in text and not (tmp_path / "analysis.csv").exists()


def test_a_valid_edited_compare_is_analysed(tmp_path):
    run = write_run(tmp_path, "edited", {an.NB: CROSS_NB, an.LR: CROSS_LR}, n_splits=5)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "compare": [[an.LR, an.NB]]}))
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["disc_model"]) == (an.LR, an.NB)


# --- named comparisons (`compare:`): which pairs a run compares, their numbers in analysis.csv,
# pairs.csv, differences.csv, the report and the API, and every model's line in the figure


GNB = "{name: gnb, estimator: sklearn.naive_bayes.GaussianNB}"


MODELS = f"models: [naive_bayes, {GNB}, logistic_regression]"


COMPARE_GRID = ("sizes: [10, 20, 40, 80]", "splits: 12", "seed: 5")


PAIRS = [("gnb", "naive_bayes"), ("naive_bayes", "logistic_regression")]


COMPARE = "compare: [[gnb, naive_bayes], [naive_bayes, logistic_regression]]"


def _invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    "models, compare, pairs",
    [
        (["naive_bayes", "logistic_regression"], None, [("naive_bayes", "logistic_regression")]),
        (["lda", "naive_bayes", "logistic_regression"], None, [(an.NB, an.LR)]),
        (["lda", "svm", "logistic_regression"], None, [("lda", "logistic_regression")]),
        (["svm", "gnb", "naive_bayes"], None, [("svm", "gnb"), ("svm", "naive_bayes")]),
        (["naive_bayes"], None, []),
        (["a", "b", "c"], [["c", "a"], ["b", "c"]], [("c", "a"), ("b", "c")]),
        (["a", "b"], [["a", "gone"], ["b", "a"]], [("b", "a")]),  # pairs that ran, only
    ],
)
def test_the_pairs_compared(models, compare, pairs):
    """compare: when given; else the paper's pair; else every other model against the first."""
    assert an.choose_pairs(models, compare) == pairs


def test_a_config_without_compare_is_written_as_before(toy_config):
    """No `compare` key in the dump (so the fingerprint of an existing run is unchanged);
    a given one is kept."""
    plain = parse_config(yaml.safe_load(toy_config("sizes: [10]")))
    assert "compare" not in plain.model_dump(mode="json")
    assert "compare" not in plain.with_overrides(splits=3).model_dump(mode="json")
    named = parse_config(yaml.safe_load(toy_config("sizes: [10]", MODELS, COMPARE)))
    assert named.model_dump(mode="json")["compare"] == [list(p) for p in PAIRS]


@pytest.mark.parametrize(
    "compare, message",
    [
        ("[[naive_bayes, svm]]", "compare: pair 1: 'svm' is not in models (naive_bayes, gnb"),
        ("[[gnb, naive_bayes], [gnb, gnb]]", "compare: pair 2 ['gnb', 'gnb'] must name two"),
        ("[[gnb]]", "compare: pair 1 ['gnb'] must name two different models"),
        ("[gnb, naive_bayes]", "compare.0: Input should be a valid list"),
        ("[]", "compare: List should have at least 1 item"),
    ],
)
def test_a_bad_compare_is_one_line_naming_the_field(
    tmp_path, toy_config, write_toy, compare, message
):
    config = write_toy(tmp_path, toy_config(*COMPARE_GRID, MODELS, f"compare: {compare}"))
    for command in (["validate"], ["run", "--out", tmp_path / "out"]):
        result = _invoke(*command, config)
        text = result.stderr.strip()
        assert result.exit_code == 2 and len(text.splitlines()) == 1, result.output
        assert text.startswith("error: ") and message in text, text
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def compared(tmp_path_factory, toy_config, write_toy):
    """A toy run of naive_bayes, GaussianNB and LR comparing two named pairs, reported."""
    folder = tmp_path_factory.mktemp("compare")
    config = write_toy(folder, toy_config(*COMPARE_GRID, MODELS, COMPARE))
    assert _invoke("run", config, "--out", folder / "out", "-q").exit_code == 0
    assert _invoke("report", folder / "out").exit_code == 0
    return folder / "out"


def test_each_pair_s_numbers_are_the_analysis_functions_own(compared):
    """pairs.csv, differences.csv and analysis.csv hold, for every named pair (second minus
    first), exactly what paired_differences and crossover give on the run's errors."""
    errors = pd.read_csv(compared / "toy" / "errors.csv")
    pairs = pd.read_csv(compared / "pairs.csv")
    assert list(zip(pairs["first"], pairs["second"], strict=True)) == PAIRS
    stacked = pd.read_csv(compared / "toy" / "differences.csv")
    for (first, second), row in zip(PAIRS, pairs.itertuples(), strict=True):
        diffs = an.paired_differences(errors, second, first)
        cross = an.crossover(errors, second, first)
        mine = stacked[(stacked["a"] == second) & (stacked["b"] == first)]
        pd.testing.assert_frame_equal(
            mine[an.DIFF_COLUMNS].reset_index(drop=True), diffs, check_dtype=False
        )
        assert row.diff_m_max == pytest.approx(diffs["mean_diff"].iloc[-1], abs=1e-15)
        assert row.frac_no_cross == pytest.approx(cross["frac_no_cross"])
        assert pd.isna(row.m_cross) if cross["m_cross"] is None else row.m_cross == cross["m_cross"]
        assert row.verdict == an.named_verdict(an.verdict(diffs), first, second)
    assert len(stacked) == 2 * 4  # two pairs x four sizes
    table = pd.read_csv(compared / "analysis.csv")
    assert (table.loc[0, "gen_model"], table.loc[0, "disc_model"]) == PAIRS[0]  # the first pair
    assert table.loc[0, "diff_m_min"] == pytest.approx(pairs.loc[0, "diff_m_min"], abs=1e-15)


def test_the_report_has_a_table_of_every_pair(compared):
    text = (compared / "REPORT.md").read_text()
    assert "2 pairs compared, differences second − first, traced in `pairs.csv`" in text
    assert "| `gnb` | `naive_bayes` |" in text
    assert "| `naive_bayes` | `logistic_regression` |" in text
    assert "| m | gnb | naive_bayes | naive_bayes − gnb |" in text  # a differences table each
    assert "| m | naive_bayes | logistic_regression | logistic_regression − naive_bayes |" in text


def test_the_api_gives_every_pair(compared):
    res = genvdis.open_results(compared / "toy")
    assert res.pairs == PAIRS
    table = res.comparisons()
    written = pd.read_csv(compared / "pairs.csv").drop(columns=["folder", "name"])
    pd.testing.assert_frame_equal(table, written, check_dtype=False)
    first, second = PAIRS[0]
    pd.testing.assert_frame_equal(res.differences(), res.differences(second, first))
    assert res.crossover() == an.crossover(res.errors, second, first)


def test_one_pair_per_panel_writes_no_pairs_csv(compared, tmp_path):
    """With one pair per panel (the 15 paper panels), analysis.csv says it all; a stale
    pairs.csv is removed so it cannot contradict it."""
    out = tmp_path / "out"
    shutil.copytree(compared, out)
    config = out / "toy" / "config.yaml"
    settings = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**settings, "compare": [["gnb", "naive_bayes"]]}))
    assert _invoke("report", out).exit_code == 0
    assert not (out / "pairs.csv").exists()
    assert "pairs compared" not in (out / "REPORT.md").read_text()


def test_the_figure_draws_every_model_in_its_own_style(compared):
    ax = genvdis.open_results(compared / "toy").plot()
    lines = ax.get_lines()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # names from the config, then the baseline every run adds
    assert labels == ["naive Bayes", "gnb", "logistic regression", "majority class"]
    styles = {(ln.get_linestyle(), ln.get_color(), ln.get_marker()) for ln in lines}
    assert len(lines) == 4 and len(styles) == 4
    nb, lr, majority = lines[0], lines[2], lines[3]
    assert (nb.get_linestyle(), lr.get_linestyle()) == ("-", "--")
    # the baseline: a thin grey line under the models' lines
    assert majority.get_color() == "tab:gray"
    assert majority.get_linewidth() < min(ln.get_linewidth() for ln in lines[:3])
    assert majority.get_zorder() < min(ln.get_zorder() for ln in lines[:3])
    others = ["gnb", "svm", "qda"]
    drawn = [plotting.model_style(m, others) for m in others]
    assert len({(s["color"], s["marker"]) for s in drawn}) == 3
    assert drawn == [plotting.model_style(m, others) for m in others]  # by position
    matplotlib.pyplot.close("all")


# ----------------------------------------------------------------------- the majority baseline


def flat_splits(curves: dict, grid=(10, 20, 40, 80), n_splits: int = 3) -> pd.DataFrame:
    """Per-split errors whose differences between models are the same on every split (each
    split shifts every model alike): every paired difference is known exactly, its sem 0."""
    rows = [
        dict(model=model, m=m, split=s, n_test=100, errors=0, error=f(m) + 0.01 * s,
             separable=False, trajectories=0)
        for m in grid
        for s in range(n_splits)
        for model, f in curves.items()
    ]  # fmt: skip
    return pd.DataFrame(rows)


PANEL = dict(name="p", title="p", panel=None, n_rows=500, dataset="d", models=[an.NB, an.LR])
# sick's shape (issue 32): naive Bayes above the majority class's 0.062 at every m, logistic
# regression down to it only: two regimes between two models that never beat the guess
SICK = {an.NB: lambda m: 0.068, an.LR: lambda m: 0.062 + 0.3 / m, an.MAJORITY: lambda m: 0.062}


def test_a_pair_never_below_the_baseline_is_no_better_than_the_majority_class():
    errors = flat_splits(SICK)
    assert an.verdict(an.paired_differences(errors)) == an.TWO_REGIMES  # the pair alone
    done = an.analyse_panel(errors, PANEL, "p", n_boot=20)
    assert done.row["verdict"] == an.NO_BETTER
    assert done.row[f"{an.NB}{an.BEATS}"] is None and done.row[f"{an.LR}{an.BEATS}"] is None
    assert done.row[f"{an.MAJORITY}_err_m_max"] == pytest.approx(0.072)  # 0.062 + split mean
    against = done.tables[an.BASELINE_FILE]
    assert list(against.columns) == an.BASELINE_COLUMNS and not against["beats"].any()
    nb = against[against["model"] == an.NB]
    assert nb["mean_diff"].to_numpy() == pytest.approx([0.006] * 4)
    assert [p["verdict"] for p in done.pairs] == [an.NO_BETTER]


@pytest.mark.parametrize(
    ("nb", "verdict", "nb_from"),
    [
        (0.2, an.TWO_REGIMES, 10),  # both beat it: NB from the first m, LR from m = 20 on
        (0.35, an.LR_BETTER, None),  # LR alone beats it: the pair's verdict stands
    ],
)
def test_the_smallest_m_where_each_model_beats_the_baseline(nb, verdict, nb_from):
    curves = {an.NB: lambda m: nb, an.LR: lambda m: 0.1 + 2 / m, an.MAJORITY: lambda m: 0.25}
    done = an.analyse_panel(flat_splits(curves), PANEL, "p", n_boot=20)
    assert done.row["verdict"] == verdict
    # LR - majority = -0.15 + 2/m: +0.05 at m = 10, below 0 from m = 20 on
    assert done.row[f"{an.LR}{an.BEATS}"] == 20
    assert done.row[f"{an.NB}{an.BEATS}"] == nb_from
    against = done.tables[an.BASELINE_FILE]
    assert against.loc[against["model"] == an.LR, "beats"].tolist() == [False, True, True, True]


def test_a_significant_difference_is_the_verdicts_own_test():
    """Beats at m = the paired t interval of model - majority lies below 0: a gap of one sem
    does not beat it, a gap of several does (noisy splits, the paired test of the verdicts)."""
    rng = np.random.default_rng(3)
    rows = []
    for m, gap in ((10, -0.002), (20, -0.05)):
        for s in range(30):
            shared = rng.normal(0.3, 0.05)
            rows += [
                dict(model=an.MAJORITY, m=m, split=s, error=shared),
                dict(model=an.NB, m=m, split=s, error=shared + gap + rng.normal(0, 0.03)),
            ]
    against = an.baseline_differences(pd.DataFrame(rows), [an.NB, an.MAJORITY])
    expected = an.paired_differences(pd.DataFrame(rows), an.NB, an.MAJORITY)
    assert against["ci_high"].tolist() == expected["ci_high"].tolist()
    assert against["beats"].tolist() == [False, True]
    assert an.beats_from(against) == {an.NB: 20}


def test_a_run_without_baseline_rows_keeps_its_verdict_and_has_no_baseline_columns():
    curves = {k: v for k, v in SICK.items() if k != an.MAJORITY}
    done = an.analyse_panel(flat_splits(curves), PANEL, "p", n_boot=20)
    assert done.row["verdict"] == an.TWO_REGIMES
    assert not any(k.endswith(an.BEATS) for k in done.row)
    assert an.BASELINE_FILE not in done.tables


def test_the_baseline_is_in_no_default_pair_fit_or_shape_test():
    models = ["lda", an.MAJORITY, "gnb"]
    assert an.choose_pairs(models) == [("lda", "gnb")]
    assert an.choose_pairs([an.NB, an.LR, an.MAJORITY]) == [(an.NB, an.LR)]
    assert an.choose_pairs(models, [["lda", an.MAJORITY]]) == [("lda", an.MAJORITY)]  # named
    done = an.analyse_panel(flat_splits(SICK), PANEL, "p", n_boot=20)
    assert an.MAJORITY not in set(done.tables["fits.csv"]["model"])
    assert an.MAJORITY not in set(done.tables["shape.csv"]["model"])
    assert not any(k.startswith(f"{an.MAJORITY}_") and k.endswith("_asymptote") for k in done.row)


def test_analysis_csv_and_the_report_show_the_baseline(tmp_path):
    """analysis.csv: the baseline's errors and each model's first m as whole numbers (empty:
    never); REPORT.md: its column, the verdict and its count."""
    from tests.learningcurves import write_panel

    write_panel(tmp_path, "sick", "sick", 14, flat_splits(SICK), [an.NB, an.LR])
    curves = {an.NB: lambda m: 0.2, an.LR: lambda m: 0.1 + 2 / m, an.MAJORITY: lambda m: 0.25}
    write_panel(tmp_path, "pima", "pima", 1, flat_splits(curves), [an.NB, an.LR])
    (table,) = runs.analyse_folders([tmp_path], n_boot=20)
    text = (tmp_path / "analysis.csv").read_text()
    header, pima, sick = text.splitlines()
    beats = header.split(",").index(f"{an.LR}{an.BEATS}")
    assert pima.split(",")[beats] == "20" and sick.split(",")[beats] == ""
    assert table["verdict"].tolist() == [an.TWO_REGIMES, an.NO_BETTER]
    write_reports([tmp_path], reanalyse=False)
    report = (tmp_path / "REPORT.md").read_text()
    assert "| majority class @ m_max | beats majority from m (NB / LR) | verdict |" in report
    assert "| 0.260 | 10 / 20 | two regimes |" in report  # 0.25 + the splits' mean shift
    assert "| 0.072 | never / never | no better than the majority class |" in report
    assert f"| {an.NO_BETTER} | 1 |" in report
    assert "`naive_bayes` beats it at no m; `logistic_regression` beats it at no m" in report
