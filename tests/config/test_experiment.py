"""Config validation: a valid config round-trips, and every mistake is a one-line UserError
that names the file and the field, as the user wrote it in the YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genvdis.config.experiment import load_config, parse_config
from genvdis.config.sections import SizeRange
from genvdis.errors import UserError
from genvdis.models.lda import LDASpec
from genvdis.models.logistic_regression import LogisticRegressionSpec
from genvdis.models.naive_bayes import NaiveBayesSpec
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
    with pytest.raises(UserError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_yaml_is_never_executed(tmp_path):
    path = _write(tmp_path, "!!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(UserError, match="malformed YAML"):
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
