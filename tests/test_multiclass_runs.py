"""Multi-class targets end to end: the config's `target.classes`, the labels' codes, and runs
(error counts against a direct fit per split, block-size independence, refusals)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.config.experiment import load_config, parse_config
from genvdis.config.sections import TargetSpec
from genvdis.data.preprocessing import make_labels, prepare
from genvdis.data.sources import load_data
from genvdis.errors import UserError
from genvdis.experiment import splits
from genvdis.models.lda import MultiLDA
from genvdis.models.logistic.softmax import MultiLogisticRegression
from genvdis.models.naive_bayes import MultiNaiveBayes

CONFIG = """\
name: three
dataset: {path: three.csv, target: label}
target: {classes: all}
models: [naive_bayes, lda, {name: logistic_regression, separable: ridge}]
sizes: [6, 20]
splits: 6
block_size: 4
"""


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """A 3-class table (labels 'high', 'low', 'mid'), and its config."""
    rng = np.random.default_rng(0)
    n = 90
    x = rng.normal(size=(n, 2))
    colour = rng.choice(["red", "green"], n)
    score = np.column_stack([x[:, 0], -x[:, 0], x[:, 1] + (colour == "red")])
    label = np.array(["high", "low", "mid"])[np.argmax(score + rng.gumbel(size=(n, 3)), axis=1)]
    pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "colour": colour, "label": label}).to_csv(
        tmp_path / "three.csv", index=False
    )
    (tmp_path / "three.yaml").write_text(CONFIG)
    return tmp_path / "three.yaml"


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


def test_all_classes_are_coded_in_numeric_order_or_text_order():
    numbers = pd.Series(["10", " 9", "2", None, "9"])
    codes = make_labels(numbers, TargetSpec(classes="all"))
    np.testing.assert_array_equal(codes.to_numpy(), [2, 1, 0, np.nan, 1])
    words = pd.Series(["b", "a", "10", "c"])
    np.testing.assert_array_equal(make_labels(words, TargetSpec(classes="all")), [2, 1, 0, 3])


def test_groups_merge_labels_and_drop_the_rest():
    labels = pd.Series(["a", "b", "c", "d", "a"])
    codes = make_labels(labels, TargetSpec(classes=[["c"], ["a", "b"]]))
    np.testing.assert_array_equal(codes, [1, 1, 0, np.nan, 1])
    with pytest.raises(UserError, match=r"^target.classes: label 'z' does not occur"):
        make_labels(labels, TargetSpec(classes=[["a"], ["z"]]))


def test_a_class_emptied_by_filtering_is_named(three):
    """'mid' rows all have a missing attribute: dropped, and the class with them."""
    table = pd.read_csv(three.parent / "three.csv")
    table.loc[table.label == "mid", "x1"] = np.nan
    table.to_csv(three.parent / "three.csv", index=False)
    config = load_config(three)
    with pytest.raises(UserError, match=r"^target.classes: class 'mid' is empty after filtering"):
        prepare(load_data(config, base_dir=three.parent), config)


def _run(config: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--quiet", *extra])


def test_a_three_class_run_counts_argmax_errors_split_by_split(three, tmp_path):
    """Each model's errors.csv count is its own K-class fit on the split's training rows,
    scored by argmax on every other row; config.yaml counts the classes by name; the bytes do
    not depend on the block size."""
    result = _run(three, tmp_path / "out")
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "out" / "three"
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    config = load_config(three)
    data = prepare(load_data(config, base_dir=three.parent), config)
    assert data.class_names == ["high", "low", "mid"]
    assert resolved["class_counts"] == dict(
        zip(data.class_names, np.bincount(data.y).tolist(), strict=True)
    )
    errors = pd.read_csv(run_dir / "errors.csv")
    models = [MultiNaiveBayes(data.layout), MultiLDA(data.layout),
              MultiLogisticRegression(data.layout, separable="ridge")]  # fmt: skip
    for m in (6, 20):
        train = splits.draw_training_block(data.y, m, 0, range(6))
        for model in models:
            got = errors[(errors.model == model.name) & (errors.m == m)].errors.to_numpy()
            for s in range(6):
                rest = np.setdiff1d(np.arange(len(data.y)), train[s])
                fitted = model.fit(data.X[train[s]], data.y[train[s]])
                assert got[s] == (fitted.predict(data.X[rest]) != data.y[rest]).sum()
    three.write_text(CONFIG.replace("block_size: 4", "block_size: 5"))
    again = _run(three, tmp_path / "again")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "again" / "three" / "errors.csv").read_bytes() == (
        run_dir / "errors.csv"
    ).read_bytes()


@pytest.mark.parametrize(
    "replace, fragment",
    [
        ({"{name: logistic_regression, separable: ridge}": "logistic_regression"},
         "separable: sample is for binary targets only (this one has 3 classes)"),
        ({"sizes: [6, 20]": "sizes: [2, 20]"}, "sizes: m=2 cannot hold one example of each class"),
    ],
)  # fmt: skip
def test_refusals_are_one_line_with_exit_2_before_any_work(three, tmp_path, replace, fragment):
    text = three.read_text()
    for old, new in replace.items():
        text = text.replace(old, new)
    three.write_text(text)
    result = _run(three, tmp_path / "out")
    message = result.stderr.strip()
    assert result.exit_code == 2 and len(message.splitlines()) == 1, result.output
    assert message.startswith("error: ") and fragment in message
    assert not (tmp_path / "out" / "three" / "errors.csv").exists()


def test_all_classes_of_a_single_label_are_refused(three):
    table = pd.read_csv(three.parent / "three.csv")
    table["label"] = "low"
    table.to_csv(three.parent / "three.csv", index=False)
    config = load_config(three)
    with pytest.raises(UserError, match=r"^target.classes: the data have a single class, 'low'"):
        prepare(load_data(config, base_dir=three.parent), config)


def test_an_estimator_entry_scores_k_classes_on_the_same_splits(three, tmp_path):
    """A scikit-learn entry beside the K-class built-ins: fitted on the same training rows,
    its errors are its own predictions' on the rest (GaussianNB needs no random state)."""
    from sklearn.naive_bayes import GaussianNB

    three.write_text(
        CONFIG.replace(
            "models: [naive_bayes, lda, {name: logistic_regression, separable: ridge}]",
            "attributes: continuous\nmodels: [naive_bayes, "
            "{name: gnb, estimator: sklearn.naive_bayes.GaussianNB}]",
        )
    )
    result = _run(three, tmp_path / "out")
    assert result.exit_code == 0, result.output
    errors = pd.read_csv(tmp_path / "out" / "three" / "errors.csv")
    config = load_config(three)
    data = prepare(load_data(config, base_dir=three.parent), config)
    train = splits.draw_training_block(data.y, 20, 0, range(6))
    got = errors[(errors.model == "gnb") & (errors.m == 20)].errors.to_numpy()
    for s in range(6):
        rest = np.setdiff1d(np.arange(len(data.y)), train[s])
        fitted = GaussianNB().fit(data.X[train[s]], data.y[train[s]])
        assert got[s] == (fitted.predict(data.X[rest]) != data.y[rest]).sum()
