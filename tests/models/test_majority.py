"""The majority-class baseline (genvdis/models/majority.py): known answers, scikit-learn's
DummyClassifier(strategy="most_frequent") on the same splits, and a run of three models
through the CLI, its plot, its report and its explorer."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyClassifier
from typer.testing import CliRunner

from genvdis._runtime.streams import stream_keys
from genvdis.cli import app
from genvdis.experiment.engine import Protocol, run_block
from genvdis.experiment.scoring import EncodedData, count_errors
from genvdis.experiment.splits import draw_block, draw_training_block
from genvdis.models import registry
from genvdis.models.base import FeatureLayout
from genvdis.models.majority import Majority, MultiMajority, majority_classes, majority_errors


def test_it_predicts_the_most_frequent_training_class_whatever_the_row():
    layout = FeatureLayout(2)
    X = np.array([[0.1, 0.9], [0.5, 0.5], [0.9, 0.1], [0.3, 0.3]])
    assert (Majority(layout).fit(X, [1, 1, 0, 1]).predict(X) == 1).all()
    assert (Majority(layout).fit(X, [0, 1, 0, 0]).predict(X) == 0).all()
    three = MultiMajority(layout).fit(X, [2, 1, 2, 0])
    assert (three.predict(X) == 2).all()
    assert (MultiMajority(layout).fit(X, [0, 1, 2, 0]).predict(X) == 0).all()


def test_ties_go_to_the_smallest_class_code():
    layout, X = FeatureLayout(1), np.arange(6.0)[:, None]
    assert (Majority(layout).fit(X[:4], [1, 0, 1, 0]).predict(X) == 0).all()
    assert (MultiMajority(layout).fit(X, [2, 1, 2, 1, 0, 0]).predict(X) == 0).all()
    assert (MultiMajority(layout).fit(X, [2, 1, 2, 1, 0, 3]).predict(X) == 1).all()
    idx = np.array([[0, 1, 2, 3], [2, 3, 4, 5]])
    np.testing.assert_array_equal(majority_classes(np.array([1, 0, 2, 2, 1, 1]), idx, 3), [2, 1])


def test_it_is_registered_as_a_baseline_with_both_forms():
    info = registry.model_info("majority")
    assert info.family == "baseline" and info.binary is Majority
    assert info.multiclass is MultiMajority
    assert registry.builtin_names()[-1] == "majority"  # after the paper's models and LDA


@pytest.mark.parametrize("K", [2, 4])
def test_its_errors_are_dummy_most_frequent_s_on_the_same_splits(K):
    rng = np.random.default_rng(K)
    n, layout = 90, FeatureLayout(2, (3,))
    X = np.column_stack([rng.random((n, 2)), rng.integers(0, 3, n)])
    y = rng.choice(K, n, p=np.linspace(1, 2, K) / np.linspace(1, 2, K).sum())
    data, protocol = EncodedData.encode(X, y, layout), Protocol(5, "random", "rest")
    model = Majority(layout) if K == 2 else MultiMajority(layout)
    frame = run_block(data, [model], 11, range(12), protocol)
    train = draw_training_block(y, 11, protocol.seed, range(12), protocol.policy)
    for s, rows in enumerate(train):
        test = np.setdiff1d(np.arange(n), rows)
        dummy = DummyClassifier(strategy="most_frequent").fit(X[rows], y[rows])
        assert frame["errors"].iloc[s] == (dummy.predict(X[test]) != y[test]).sum()


def test_three_models_run_plot_report_and_explore_through_the_cli(tmp_path, write_toy, toy_config):
    config = write_toy(
        tmp_path / "cfg",
        toy_config(
            "models: [naive_bayes, logistic_regression, majority]",
            "sizes: [10, 20]",
            "splits: 4",
        ),
    )
    out = tmp_path / "out"
    runner = CliRunner()
    for args in (["run", config, "--out", out, "--quiet"], ["plot", out], ["report", out]):
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, result.output
    summary = pd.read_csv(out / "toy" / "summary.csv")
    assert set(summary["model"]) == {"naive_bayes", "logistic_regression", "majority"}
    page = (out / "explorer.html").read_text()
    data = json.loads(re.search(r'id="explorer-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    styles = {m["name"]: m for m in data["models"]}
    assert styles["majority"]["label"] == "majority class" and styles["majority"]["short"] == "Maj"
    assert "majority" in (out / "REPORT.md").read_text()


@pytest.mark.parametrize("K", [2, 3])
@pytest.mark.parametrize("test", ["rest", 25])
def test_its_counted_errors_are_its_scored_classifiers(K, test):
    """The engine counts the baseline's errors from the labels (`majority_errors`): the counts of
    scoring its fitted classifiers (`count_errors`), on every other row or a test set."""
    rng = np.random.default_rng(7 + K)
    n, layout = 80, FeatureLayout(3)
    X, y = rng.random((n, 3)), rng.choice(K, n, p=np.linspace(2, 1, K) / np.linspace(2, 1, K).sum())
    data = EncodedData.encode(X, y, layout)
    if test == "rest":
        train, mask = draw_training_block(y, 9, 4, range(30), "random"), None
    else:
        train, mask = draw_block(y, 9, 4, range(30), "random", test)
    model = Majority(layout) if K == 2 else MultiMajority(layout)
    fit = model.fit_batch(data.onehot, y, train, stream_keys(4, 9, range(30), stream=1))
    scored = count_errors(data, data.as_onehot(fit, False), train, mask)
    counted = majority_errors(y, train, mask)
    np.testing.assert_array_equal(counted, scored)
    assert len(set(majority_classes(y, train, K))) > 1  # splits whose majority differs
