"""Audit of estimator entries (genvdis/models/estimators.py): what a run does with an estimator
whose
predictions, labels or failures are not what genvdis expects. Each test is a bug that once gave
wrong numbers with exit code 0, run as a user runs it (the command line)."""

from __future__ import annotations

import sys
import textwrap

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from genvdis.cli import app

# `labelpkg`, a package of the user's own: majority-class classifiers whose predict gives the
# majority in another form. Only `Majority`, `Floats` and `Bools` give class codes.
LABEL_PACKAGE = """
import numpy as np

class Majority:
    def fit(self, X, y):
        self.majority_ = int(2 * np.sum(y) > len(y))
        return self
    def predict(self, X):
        return np.full(len(X), self.majority_)

class Floats(Majority):
    def predict(self, X):
        return super().predict(X).astype(float)

class Bools(Majority):
    def predict(self, X):
        return super().predict(X).astype(bool)

class Strings(Majority):
    def predict(self, X):
        return super().predict(X).astype(str)

class PlusMinus(Majority):
    def predict(self, X):
        return 2 * super().predict(X) - 1

class Probability(Majority):
    def predict(self, X):
        return np.where(super().predict(X) == 1, 0.7, 0.3)

class Abstains(Majority):
    def predict(self, X):
        predicted = super().predict(X).astype(float)
        predicted[-1] = np.nan
        return predicted
"""


@pytest.fixture
def label_package(tmp_path, monkeypatch):
    folder = tmp_path / "site" / "labelpkg"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(LABEL_PACKAGE))
    monkeypatch.syspath_prepend(str(folder.parent))
    yield folder
    for name in [n for n in sys.modules if n == "labelpkg" or n.startswith("labelpkg.")]:
        del sys.modules[name]


def run_entry(tmp_path, toy_config, write_toy, cls: str):
    models = f"models: [naive_bayes, {{name: est, estimator: labelpkg.{cls}}}]"
    config = write_toy(tmp_path, toy_config("sizes: [10, 40]", "splits: 4", "seed: 3", models))
    out = tmp_path / cls
    args = ["run", str(config), "--out", str(out), "--allow-import", "labelpkg", "-q"]
    return CliRunner().invoke(app, args), out / "toy"


@pytest.mark.parametrize(
    ("cls", "value"),
    [("Strings", "'0'"), ("PlusMinus", "-1"), ("Probability", "0.3"), ("Abstains", "nan")],
)
def test_predictions_that_are_not_class_codes_stop_the_run(
    tmp_path, toy_config, write_toy, label_package, cls, value
):
    """`predict(X) != y` counts a string, a -1/+1 label, a probability or a NaN wrong on every
    row: such a run wrote error 1.0 (or one too many errors) with exit code 0."""
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, cls)
    message = result.stderr.strip()
    assert result.exit_code == 2, result.output
    assert len(message.splitlines()) == 1, message
    assert message.startswith("error: ") and "models: 'est' failed at m=10, split 0: " in message
    assert f"predict gave {value}, not one of the class codes fit was given (0, 1)" in message
    assert not (run_dir / "summary.csv").exists()


@pytest.mark.parametrize("cls", ["Floats", "Bools"])
def test_class_codes_as_floats_or_booleans_count_as_the_codes(
    tmp_path, toy_config, write_toy, label_package, cls
):
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, cls)
    assert result.exit_code == 0, result.output
    _, plain = run_entry(tmp_path, toy_config, write_toy, "Majority")
    ours, theirs = (pd.read_csv(d / "errors.csv") for d in (run_dir, plain))
    assert ours["errors"].tolist() == theirs["errors"].tolist()


def test_an_edited_package_of_ones_own_is_run_again(tmp_path, toy_config, write_toy, label_package):
    """A package outside site-packages is edited without a new version: its source is in the
    fingerprint. Before, a rerun after an edit called the old run up to date (or kept the
    blocks the old code computed beside the new code's), exit 0."""
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, "Majority")
    assert result.exit_code == 0, result.output
    before = pd.read_csv(run_dir / "errors.csv")
    recorded = yaml.safe_load((run_dir / "config.yaml").read_text())["estimator_versions"]
    assert recorded["labelpkg"].startswith("unknown+source.")
    # the edit: the minority class instead of the majority
    source = label_package / "__init__.py"
    source.write_text(
        source.read_text().replace("2 * np.sum(y) > len(y)", "2 * np.sum(y) <= len(y)")
    )
    for name in [n for n in sys.modules if n == "labelpkg" or n.startswith("labelpkg.")]:
        del sys.modules[name]
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, "Majority")
    assert result.exit_code == 0, result.output
    after = pd.read_csv(run_dir / "errors.csv")
    est = after["model"] == "est"
    # the new code's numbers: each split's errors are the test rows of the other class
    assert (after.loc[est, "errors"] + before.loc[est, "errors"] == after.loc[est, "n_test"]).all()
    assert (after.loc[~est, "errors"] == before.loc[~est, "errors"]).all()  # naive Bayes
