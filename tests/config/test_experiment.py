"""Config validation: a valid config round-trips, and every mistake is a one-line UserError
that names the file and the field, as the user wrote it in the YAML; no setting is silently
changed or ignored (YAML 1.1 numbers, merge keys, settings a model does not read)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.config.experiment import load_config, parse_config
from genvdis.config.sections import SizeRange, TargetSpec
from genvdis.errors import UserError
from genvdis.models.lda import LDASpec
from genvdis.models.logistic_regression import LogisticRegressionSpec
from genvdis.models.naive_bayes import NaiveBayesSpec
from tests.clichecks import assert_user_error, raises_user_error
from tests.conftest import REPO

FULL = {
    "name": "pima-full",
    "title": "pima, every option",
    "panel": 1,
    "dataset": "pima",
    "attributes": "continuous",
    "target": {"positive": ["1"], "negative": ["0"]},
    "missing": "impute",
    "preprocessing": {"continuous": "discretize", "bins": 4, "strategy": "uniform"},
    "models": [
        {"name": "naive_bayes", "laplace": 0.5, "var_smoothing": 1e-6},
        {"name": "logistic_regression", "separable": "ridge", "C": 2.0, "mcmc_iterations": 5},
        {"name": "lda", "epsilon": 0.001},
    ],
    "sizes": {"start": 10, "stop": 300, "num": 6, "spacing": "log"},
    "splits": 50,
    "split": "random",
    "test": 100,
    "seed": 7,
    "block_size": 10,
}


def _write(tmp_path: Path, data: object, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def test_full_config_round_trips(tmp_path):
    config = load_config(_write(tmp_path, FULL))
    assert config.models == [
        NaiveBayesSpec(laplace=0.5, var_smoothing=1e-6),
        LogisticRegressionSpec(separable="ridge", C=2.0, mcmc_iterations=5),
        LDASpec(epsilon=0.001),
    ]
    assert config.target.negative == ["0"] and config.test == 100 and config.split == "random"
    assert config.preprocessing.bins == 4
    # dump -> YAML -> load gives the same config, and so does parse of the dump.
    dumped = config.model_dump(mode="json")
    assert load_config(_write(tmp_path, dumped, "again.yaml")) == config
    assert parse_config(dumped) == config
    assert config.with_overrides() == config


def test_the_worked_example_config_loads():
    config = load_config(REPO / "configs" / "pima.yaml")
    assert config.name == "pima" and config.splits == 1000
    assert [m.name for m in config.models] == ["naive_bayes", "logistic_regression"]
    assert config.size_grid[0] >= 2


BASE = {"name": "t", "dataset": "pima", "target": {"positive": ["1"]}, "sizes": [10, 20]}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"bogus": 1}, "bogus", "unknown key"),
        ({"target": {"positive": ["1"], "colour": "red"}}, "target.colour", "unknown key"),
        ({"models": [{"name": "lda", "eps": 1}]}, "models.0.eps", "unknown key"),
        ({"splits": "many"}, "splits", "integer"),
        ({"seed": -1}, "seed", "greater than or equal to 0"),
        ({"sizes": [1, 10]}, "sizes", ">= 2"),
        ({"sizes": []}, "sizes", "at least one"),
        ({"sizes": {"start": 1, "stop": 10, "num": 3}}, "sizes.start", "greater than or equal"),
        ({"sizes": {"start": 20, "stop": 10, "num": 3}}, "sizes", "'stop' must be >= 'start'"),
        ({"target": {"positive": ["1"], "threshold": {"value": 3}}}, "target", "exactly one"),
        ({"target": {"threshold": {}, "negative": ["0"]}}, "target", "'negative'"),
        ({"models": ["naive_bayes", "naive_bayes"]}, "models", "once"),
        ({"models": ["naive_bayes", {"name": "logistic_regression", "separable": "x"}]},
         "models.1.separable", "'sample', 'max_margin' or 'ridge'"),
        ({"models": [{"name": "naive_bayes", "laplace": 0}]}, "models.0.laplace", "greater"),
        ({"preprocessing": {"encoding": "last"}}, "preprocessing.encoding",
         "'drop_first', 'drop_last' or 'full'"),
        ({"models": ["svm"]}, "models.0", "svm"),
        ({"models": []}, "models", "at least 1"),
        ({"test": 0}, "test", "positive number"),
        ({"dataset": {"path": "x.csv"}}, "dataset.target", "required"),
        ({"dataset": {"synthetic": {"kind": "gaussian"}}}, "dataset.synthetic.n_features",
         "required"),
    ],
)  # fmt: skip
def test_mistakes_name_the_file_and_the_field(tmp_path, change, field, words):
    path = _write(tmp_path, {**BASE, **change})
    with pytest.raises(UserError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}: "), message
    assert words in message and "\n" not in message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: t\nsizes: [10, 20\n", "malformed YAML at line"),
        ("name: t\n  sizes: 3\n", "malformed YAML at line 2"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("", "must be a YAML mapping"),
    ],
)
def test_unreadable_yaml_is_a_user_error_naming_the_file(tmp_path, text, words):
    path = _write(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ") and words in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_user_error(tmp_path):
    with raises_user_error("nope.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_yaml_is_never_executed(tmp_path):
    path = _write(tmp_path, "!!python/object/apply:os.system ['echo pwned']\n")
    with raises_user_error(path.name, "YAML"):
        load_config(path)


@pytest.mark.parametrize(
    ("sizes", "grid"),
    [
        ({"start": 10, "stop": 100, "num": 5}, [10, 18, 32, 56, 100]),  # log: ratio 10^(1/4)
        ({"start": 10, "stop": 100, "num": 4, "spacing": "linear"}, [10, 40, 70, 100]),
        ({"start": 2, "stop": 4, "num": 10}, [2, 3, 4]),  # rounding collapses duplicates
        ({"start": 25, "stop": 25, "num": 3}, [25]),
        ([40, 10, 20, 10], [10, 20, 40]),  # a list: sorted, unique
    ],
)
def test_size_grids(sizes, grid):
    config = parse_config({**BASE, "sizes": sizes})
    assert config.size_grid == grid
    if isinstance(sizes, dict):
        assert isinstance(config.sizes, SizeRange)


def test_model_name_shorthand_and_default_models():
    short = parse_config({**BASE, "models": ["naive_bayes", "logistic_regression"]})
    assert short.models == [NaiveBayesSpec(), LogisticRegressionSpec()]
    assert short.models[0].laplace == 1.0 and short.models[1].separable == "sample"
    assert parse_config(BASE).models == short.models  # the paper's pair is the default
    mixed = parse_config({**BASE, "models": ["lda", {"name": "naive_bayes", "laplace": 2}]})
    assert mixed.models == [LDASpec(), NaiveBayesSpec(laplace=2.0)]


def test_with_overrides_revalidates():
    config = parse_config(BASE)
    changed = config.with_overrides(splits=20, seed=3, block_size=None)
    assert (changed.splits, changed.seed, changed.block_size) == (20, 3, config.block_size)
    assert config.splits == 1000  # the original is untouched
    with pytest.raises(UserError, match="splits"):
        config.with_overrides(splits=0)
    with pytest.raises(UserError, match="seed"):
        config.with_overrides(seed=-1)


# --- configs that would run with a setting silently changed or ignored: refused, or said ---


TINY = ("sizes: [10, 20]", "splits: 4")


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def run(config: Path, out: Path, *extra: str):
    return invoke("run", str(config), "--out", str(out), "--quiet", *extra)


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


def test_a_size_range_of_one_value_that_ignores_stop_is_refused(tmp_path, toy_config, write_toy):
    """`sizes: {start: 10, stop: 200, num: 1}` ran m = 10 alone (exit 0): stop was ignored."""
    text = toy_config("sizes: {start: 10, stop: 200, num: 1}", "splits: 4")
    assert_user_error(invoke("validate", str(write_toy(tmp_path, text))), "sizes", "num")
    same = toy_config("sizes: {start: 10, stop: 10, num: 1}", "splits: 4")
    assert invoke("validate", str(write_toy(tmp_path, same))).exit_code == 0


def test_a_compare_pair_given_twice_is_refused(tmp_path, toy_config, write_toy):
    """The pair was analysed twice: two identical rows in pairs.csv and in the report."""
    pairs = "compare: [[naive_bayes, lda], [lda, naive_bayes], [naive_bayes, lda]]"
    text = toy_config(*TINY, "models: [naive_bayes, lda]", pairs)
    message = assert_user_error(invoke("validate", str(write_toy(tmp_path, text))), "compare")
    assert "pair 3 ['naive_bayes', 'lda'] repeats pair 1" in message


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


@pytest.mark.parametrize("value", ["fast", "0", "2.5", "'7'"])
def test_mcmc_iterations_is_auto_or_a_whole_number(tmp_path, toy_config, write_toy, value):
    """The sampler's length is `auto` (each chain until it has mixed) or a fixed count >= 1;
    anything else is one line naming the field and the value."""
    models = f"models: [naive_bayes, {{name: logistic_regression, mcmc_iterations: {value}}}]"
    config = write_toy(tmp_path, toy_config(*TINY, models))
    message = assert_user_error(invoke("validate", str(config)), "models.1.mcmc_iterations")
    assert message.endswith(
        ": should be auto or a whole number >= 1, not "
        + repr({"fast": "fast", "0": 0, "2.5": 2.5, "'7'": "7"}[value])
    )


def test_a_run_says_which_settings_change_nothing(tmp_path, toy_config, write_toy):
    """`C: 5` under `separable: sample` (C is the ridge rule's) and `bins: 7` without
    `discretize` change nothing. They run (a sweep varies them on purpose), with the same
    bytes, and the run says so, naming each field, so that no setting is ignored unseen."""
    models = "models: [naive_bayes, {name: logistic_regression, C: 5, mcmc_iterations: auto}]"
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


# --- target.classes: all, or groups of labels, as text ---


def _target(**fields: object) -> TargetSpec:
    return parse_config({"name": "t", "dataset": "pima", "target": fields, "sizes": [10]}).target


def test_classes_are_all_or_groups_of_labels_as_text():
    assert _target(classes="all").classes == "all"
    assert _target(classes=[1, [2, 3], "x"]).classes == [["1"], ["2", "3"], ["x"]]


@pytest.mark.parametrize(
    "fields, fragment",
    [
        ({"classes": "all", "positive": ["1"]}, "exactly one of 'positive' (labels), 'threshold'"),
        ({"classes": [["a", "b"], ["b"]]}, "label 'b' is in more than one class"),
        ({"classes": [["a"]]}, "at least two classes"),
        ({"classes": "all", "negative": ["0"]}, "'negative' goes with 'positive'"),
    ],
)
def test_bad_classes_are_refused_by_name(fields, fragment):
    with pytest.raises(UserError, match=r"^config: target") as caught:
        _target(**fields)
    assert fragment in str(caught.value)


def test_a_binary_target_is_written_as_before():
    """No `classes` key in a binary config's dump: its config.yaml and fingerprint are
    unchanged."""
    dumped = parse_config({"name": "t", "dataset": "pima", "target": {"positive": ["1"]},
                           "sizes": [10]}).model_dump(mode="json")  # fmt: skip
    assert list(dumped["target"]) == ["column", "positive", "negative", "threshold"]
