"""Named comparisons (`compare:`): which pairs a run compares, their numbers in analysis.csv,
pairs.csv, differences.csv, the report and the API, and every model's line in the figure."""

from __future__ import annotations

import shutil

import matplotlib
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import genvdis
from genvdis.analysis import differences as analysis
from genvdis.cli import app
from genvdis.config.experiment import parse_config
from genvdis.report import plotting
from tests.conftest import REPO

matplotlib.use("Agg")

GNB = "{name: gnb, estimator: sklearn.naive_bayes.GaussianNB}"
MODELS = f"models: [naive_bayes, {GNB}, logistic_regression]"
GRID = ("sizes: [10, 20, 40, 80]", "splits: 12", "seed: 5")
PAIRS = [("gnb", "naive_bayes"), ("naive_bayes", "logistic_regression")]
COMPARE = "compare: [[gnb, naive_bayes], [naive_bayes, logistic_regression]]"


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    "models, compare, pairs",
    [
        (["naive_bayes", "logistic_regression"], None, [("naive_bayes", "logistic_regression")]),
        (["lda", "naive_bayes", "logistic_regression"], None, [(analysis.NB, analysis.LR)]),
        (["lda", "svm", "logistic_regression"], None, [("lda", "logistic_regression")]),
        (["svm", "gnb", "naive_bayes"], None, [("svm", "gnb"), ("svm", "naive_bayes")]),
        (["naive_bayes"], None, []),
        (["a", "b", "c"], [["c", "a"], ["b", "c"]], [("c", "a"), ("b", "c")]),
        (["a", "b"], [["a", "gone"], ["b", "a"]], [("b", "a")]),  # pairs that ran, only
    ],
)
def test_the_pairs_compared(models, compare, pairs):
    """compare: when given; else the paper's pair; else every other model against the first."""
    assert analysis.choose_pairs(models, compare) == pairs


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
    config = write_toy(tmp_path, toy_config(*GRID, MODELS, f"compare: {compare}"))
    for command in (["validate"], ["run", "--out", tmp_path / "out"]):
        result = invoke(*command, config)
        text = result.stderr.strip()
        assert result.exit_code == 2 and len(text.splitlines()) == 1, result.output
        assert text.startswith("error: ") and message in text, text
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def compared(tmp_path_factory, toy_config, write_toy):
    """A toy run of naive_bayes, GaussianNB and LR comparing two named pairs, reported."""
    folder = tmp_path_factory.mktemp("compare")
    config = write_toy(folder, toy_config(*GRID, MODELS, COMPARE))
    assert invoke("run", config, "--out", folder / "out", "-q").exit_code == 0
    assert invoke("report", folder / "out").exit_code == 0
    return folder / "out"


def test_each_pair_s_numbers_are_the_analysis_functions_own(compared):
    """pairs.csv, differences.csv and analysis.csv hold, for every named pair (second minus
    first), exactly what paired_differences and crossover give on the run's errors."""
    errors = pd.read_csv(compared / "toy" / "errors.csv")
    pairs = pd.read_csv(compared / "pairs.csv")
    assert list(zip(pairs["first"], pairs["second"], strict=True)) == PAIRS
    stacked = pd.read_csv(compared / "toy" / "differences.csv")
    for (first, second), row in zip(PAIRS, pairs.itertuples(), strict=True):
        diffs = analysis.paired_differences(errors, second, first)
        cross = analysis.crossover(errors, second, first)
        mine = stacked[(stacked["a"] == second) & (stacked["b"] == first)]
        pd.testing.assert_frame_equal(
            mine[analysis.DIFF_COLUMNS].reset_index(drop=True), diffs, check_dtype=False
        )
        assert row.diff_m_max == pytest.approx(diffs["mean_diff"].iloc[-1], abs=1e-15)
        assert row.frac_no_cross == pytest.approx(cross["frac_no_cross"])
        assert pd.isna(row.m_cross) if cross["m_cross"] is None else row.m_cross == cross["m_cross"]
        assert row.verdict == analysis.named_verdict(analysis.verdict(diffs), first, second)
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
    assert res.crossover() == analysis.crossover(res.errors, second, first)


def test_one_pair_per_panel_writes_no_pairs_csv(compared, tmp_path):
    """With one pair per panel (the 15 paper panels), analysis.csv says it all; a stale
    pairs.csv is removed so it cannot contradict it."""
    out = tmp_path / "out"
    shutil.copytree(compared, out)
    config = out / "toy" / "config.yaml"
    settings = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**settings, "compare": [["gnb", "naive_bayes"]]}))
    assert invoke("report", out).exit_code == 0
    assert not (out / "pairs.csv").exists()
    assert "pairs compared" not in (out / "REPORT.md").read_text()


def test_the_figure_draws_every_model_in_its_own_style(compared):
    ax = genvdis.open_results(compared / "toy").plot()
    lines = ax.get_lines()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["naive Bayes", "gnb", "logistic regression"]  # names from the config
    styles = {(ln.get_linestyle(), ln.get_color(), ln.get_marker()) for ln in lines}
    assert len(lines) == 3 and len(styles) == 3
    nb, lr = lines[0], lines[2]
    assert (nb.get_linestyle(), lr.get_linestyle()) == ("-", "--")
    others = ["gnb", "svm", "qda"]
    drawn = [plotting.model_style(m, others) for m in others]
    assert len({(s["color"], s["marker"]) for s in drawn}) == 3
    assert drawn == [plotting.model_style(m, others) for m in others]  # by position
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize("run", ["pima", "examples/ionosphere-three-models"])
def test_the_committed_figures_are_what_the_code_draws(tmp_path, run):
    """NB solid, LR dashed, LDA dotted as before: the committed figures stay byte-identical."""
    source = REPO / "results" / run
    folder = tmp_path / source.name
    folder.mkdir()
    for name in ("summary.csv", "config.yaml", "manifest.json"):
        shutil.copy(source / name, folder / name)
    for path in plotting.plot_run(folder):
        assert path.read_bytes() == (source / path.name).read_bytes(), path.name
