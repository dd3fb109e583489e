"""Configs that parsed and ran with exit 0 while a setting was silently changed or ignored:
each case here ran before its fix and gave wrong or altered numbers (or dropped rows) without
a word. Each test asserts what the user cares about: the run's numbers and rows, or one
`error:` line naming the config field and saying what to do.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from genvdis.cli import app
from tests.clichecks import assert_user_error

TINY = ("sizes: [10, 20]", "splits: 4")


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def run(config: Path, out: Path, *extra: str):
    return invoke("run", str(config), "--out", str(out), "--quiet", *extra)


# --- numbers YAML 1.1 reads otherwise than they look ------------------------------------------


@pytest.mark.parametrize(
    ("line", "text", "value"),
    [
        ("splits: 010", "'010'", "8"),  # ran 8 splits
        ("sizes: [020, 40]", "'020'", "16"),  # ran m = 16
        ("seed: 1:05", "'1:05'", "65"),  # ran seed 65
    ],
)
def test_a_number_read_as_octal_or_base_60_is_refused(
    tmp_path, toy_config, write_toy, line, text, value
):
    """PyYAML reads YAML 1.1: a leading 0 is octal and colons are base 60. Such a config ran
    with exit 0 on numbers other than those written, and config.yaml recorded those."""
    key = line.split(":")[0]
    lines = [x for x in TINY if not x.startswith(key)]
    config = write_toy(tmp_path, toy_config(*lines, line))
    message = assert_user_error(run(config, tmp_path / "out"), "config.yaml", text, value)
    assert f"line {config.read_text().splitlines().index(line) + 1}" in message
    assert not (tmp_path / "out" / "toy").exists()
    assert_user_error(invoke("validate", str(config)), text)


def test_numbers_that_read_as_they_look_still_load(tmp_path, toy_config, write_toy):
    """0, digits with underscores, hex, and quoted text are left alone."""
    from genvdis.config.experiment import load_config

    lines = ("sizes: [10, 0x14]", "splits: 1_0", "seed: 0", "title: '010'")
    loaded = load_config(write_toy(tmp_path, toy_config(*lines)))
    assert (loaded.size_grid, loaded.splits, loaded.seed, loaded.title) == ([10, 20], 10, 0, "010")


# --- panel: one run per Figure 1 panel ---------------------------------------------------------


def test_two_configs_of_one_panel_in_one_run_are_refused(tmp_path, toy_config, write_toy):
    """`genvdis run a.yaml b.yaml`, both `panel: 3`: both ran (exit 0), and Figure 1 drew only
    one of them as panel 3, the other left out without a word."""
    first = write_toy(tmp_path, toy_config(*TINY, "panel: 3"), "a.yaml")
    text = toy_config(*TINY, "panel: 3", replace={"name: toy": "name: other"})
    second = write_toy(tmp_path, text, "b.yaml")
    result = invoke("run", str(first), str(second), "--out", str(tmp_path / "out"), "--quiet")
    assert_user_error(result, "a.yaml", "b.yaml", "panel 3", "remove panel:")
    assert not (tmp_path / "out").exists()
    # the same config twice is one run, and other panels are fine
    third = write_toy(tmp_path, text.replace("panel: 3", "panel: 4"), "c.yaml")
    result = invoke("run", str(first), str(first), str(third), "--out", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output


def test_two_runs_of_one_panel_in_a_folder_are_refused_by_plot(tmp_path, toy_config, write_toy):
    """Two commands, each one config with `panel: 3`, into one folder: `genvdis plot` drew one
    of them as Figure 1's panel 3 (the one sorted last), the other left out without a word."""
    first = write_toy(tmp_path, toy_config(*TINY, "panel: 3"), "a.yaml")
    text = toy_config(*TINY, "panel: 3", replace={"name: toy": "name: other"})
    second = write_toy(tmp_path, text, "b.yaml")
    out = tmp_path / "out"
    for config in (first, second):
        assert run(config, out).exit_code == 0
    message = assert_user_error(invoke("plot", str(out)), "panel 3", "toy", "other")
    assert "move one of them" in message
    assert not list(out.rglob("*.png"))  # refused before anything is drawn
    # with the second out of panel 3, both runs are drawn and Figure 1 holds the first
    second.write_text(text.replace("panel: 3", "panel: 4"))
    assert run(second, out).exit_code == 0
    assert invoke("plot", str(out)).exit_code == 0
    assert {p.name for p in out.rglob("*.png")} == {"toy.png", "other.png", "figure1.png"}


# --- sizes: a range of one size ------------------------------------------------------------------


def test_a_size_range_of_one_value_that_ignores_stop_is_refused(tmp_path, toy_config, write_toy):
    """`sizes: {start: 10, stop: 200, num: 1}` ran m = 10 alone (exit 0): stop was ignored."""
    text = toy_config("sizes: {start: 10, stop: 200, num: 1}", "splits: 4")
    assert_user_error(invoke("validate", str(write_toy(tmp_path, text))), "sizes", "num")
    same = toy_config("sizes: {start: 10, stop: 10, num: 1}", "splits: 4")
    assert invoke("validate", str(write_toy(tmp_path, same))).exit_code == 0


# --- compare: each pair once -------------------------------------------------------------------


def test_a_compare_pair_given_twice_is_refused(tmp_path, toy_config, write_toy):
    """The pair was analysed twice: two identical rows in pairs.csv and in the report."""
    pairs = "compare: [[naive_bayes, lda], [lda, naive_bayes], [naive_bayes, lda]]"
    text = toy_config(*TINY, "models: [naive_bayes, lda]", pairs)
    message = assert_user_error(invoke("validate", str(write_toy(tmp_path, text))), "compare")
    assert "pair 3 ['naive_bayes', 'lda'] repeats pair 1" in message


# --- YAML merge keys ------------------------------------------------------------------------------


def test_a_second_merge_key_in_one_mapping_is_a_duplicate_key(tmp_path, toy_config, write_toy):
    """`<<: {splits: 5}` then `<<: {splits: 7}`: PyYAML let the second win (7 splits, exit 0)
    where any other key given twice is refused. One merge, overridden by the mapping's own keys,
    and a list of merges, still load."""
    from genvdis.config.experiment import load_config

    two = toy_config("sizes: [10]", "<<: {splits: 5}", "<<: {splits: 7}")
    message = assert_user_error(invoke("validate", str(write_toy(tmp_path, two))), "'<<'")
    assert "lines 5 and 6" in message and "<<: [*a, *b]" in message
    one = toy_config("sizes: [10]", "<<: {splits: 5, seed: 3}", "splits: 7")
    loaded = load_config(write_toy(tmp_path, one))
    assert (loaded.splits, loaded.seed) == (7, 3)
    merges = toy_config("sizes: [10]", "<<: [{splits: 5}, {seed: 2}]")
    loaded = load_config(write_toy(tmp_path, merges))
    assert (loaded.splits, loaded.seed) == (5, 2)


def test_a_key_two_merged_mappings_both_give_is_refused(tmp_path, toy_config, write_toy):
    """`<<: [{splits: 5}, {splits: 6}]`: YAML says the first wins; PyYAML let the second win
    (6 splits, exit 0), or the first when the two key strings happened to be one object."""
    from genvdis.config.experiment import load_config

    both = toy_config("sizes: [10]", "<<: [{splits: 5}, {splits: 6, seed: 2}]")
    message = assert_user_error(invoke("validate", str(write_toy(tmp_path, both))), "'splits'")
    assert "line 5" in message and "two mappings" in message
    # the mapping's own key settles it; the same mapping merged twice gives one value
    own = toy_config("sizes: [10]", "<<: [{splits: 5}, {splits: 6, seed: 2}]", "splits: 8")
    assert load_config(write_toy(tmp_path, own)).splits == 8
    models = "models: [&lr {name: logistic_regression, separable: ridge}, {<<: [*lr, *lr], C: 2.0}]"
    twice = toy_config("sizes: [10]", "splits: 4", models)
    assert_user_error(invoke("validate", str(write_toy(tmp_path, twice))), "each model may appear")


# --- settings that nothing reads ----------------------------------------------------------------


def test_a_run_says_which_settings_change_nothing(tmp_path, toy_config, write_toy):
    """`C: 5` under `separable: sample` (C is the ridge rule's) and `bins: 7` without
    `discretize` were ignored without a word. They still run (a sweep varies them on purpose),
    with the same bytes, and the run now says so, naming each field."""
    models = "models: [naive_bayes, {name: logistic_regression, C: 5, mcmc_iterations: 30}]"
    text = toy_config(*TINY, models, "preprocessing: {bins: 7, strategy: quantile}")
    result = invoke("run", str(write_toy(tmp_path / "a", text)), "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "changes nothing" in line]
    assert lines == [
        "toy: preprocessing.bins: 7 acts only under continuous: discretize: it changes nothing",
        "toy: models.logistic_regression.C: 5.0 acts only under separable: ridge, not sample: "
        "it changes nothing",
    ]
    plain = invoke(
        "run", str(write_toy(tmp_path / "b", toy_config(*TINY))), "--out", str(tmp_path / "b")
    )
    assert "changes nothing" not in plain.stderr
    errors = [(tmp_path / x / "toy" / "errors.csv").read_bytes() for x in "ab"]
    assert errors[0] == errors[1]


@pytest.mark.parametrize(
    ("estimator", "kind"),
    [
        ("sklearn.svm.OneClassSVM", "an outlier detector"),
        ("sklearn.mixture.GaussianMixture", "a density estimator"),
        ("sklearn.cluster.KMeans", "a clusterer"),
    ],
)
def test_an_estimator_of_another_kind_is_named_in_words(
    tmp_path, toy_config, write_toy, estimator, kind
):
    text = toy_config(*TINY, f"models: [naive_bayes, {{name: other, estimator: {estimator}}}]")
    result = invoke("validate", str(write_toy(tmp_path, text)))
    assert_user_error(result, "models: 'other'", f"{kind}, not a classifier")


def test_random_state_true_is_refused(tmp_path, toy_config, write_toy):
    """`random_state: true` passed as an integer (True is 1 to Python and scikit-learn): every
    split got the fixed seed 1, where left out each split gets its own."""
    params = "{n_estimators: 5, random_state: true}"
    model = f"{{name: rf, estimator: sklearn.ensemble.RandomForestClassifier, params: {params}}}"
    text = toy_config(*TINY, f"models: [naive_bayes, {model}]")
    result = invoke("validate", str(write_toy(tmp_path, text)))
    assert_user_error(result, "models.1.params", "random_state must be an integer")


# --- splits: one split has no standard error ---------------------------------------------------


@pytest.mark.parametrize("where", ["file", "option"])
def test_one_split_is_refused(tmp_path, toy_config, write_toy, where):
    """A one-split run wrote std = sem = 0 and an interval [mean, mean] to summary.csv: a
    certainty it does not have (there is no standard error, interval or paired test)."""
    lines = ("sizes: [10, 20]", "splits: 1" if where == "file" else "splits: 4")
    config = write_toy(tmp_path, toy_config(*lines))
    extra = ("--splits", "1") if where == "option" else ()
    message = assert_user_error(run(config, tmp_path / "out", *extra), "splits", "equal to 2")
    assert message.startswith("error: --splits 1: ") == (where == "option")
    assert not (tmp_path / "out" / "toy").exists()
