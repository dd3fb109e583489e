"""Multi-class targets (`target: {classes: ...}`) end to end, audited: the K-class models' error
counts against independent re-implementations on the same splits, what a run records about its
classes, and what the report says about a K-class run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.optimize import minimize
from scipy.special import logsumexp
from typer.testing import CliRunner

import genvdis
from genvdis.analysis import differences as an
from genvdis.cli import app
from genvdis.experiment.splits import draw_split
from genvdis.report.markdown import write_report
from genvdis.store import results
from tests.clichecks import assert_user_error
from tests.learningcurves import CROSSING, make_errors

LABELS = ["10", "2", "3"]  # coded 2 < 3 < 10: '2' is class 0, '3' class 1, '10' class 2


def _table(n: int = 120, seed: int = 1) -> pd.DataFrame:
    """Three classes with numeric labels, two continuous attributes and a discrete one."""
    rng = np.random.default_rng(seed)
    label = rng.choice(LABELS, n, p=[0.45, 0.35, 0.2])
    shift = {"10": 0.0, "2": 1.0, "3": -1.0}
    return pd.DataFrame(
        {
            "x1": np.array([rng.normal(shift[v]) for v in label]).round(3),
            "x2": (rng.normal(size=n) + (label == "2")).round(3),
            "colour": np.where(rng.uniform(size=n) < np.where(label == "3", 0.8, 0.3), "r", "b"),
            "label": label,
        }
    )


def _coded(table: pd.DataFrame):
    """The table coded here, without genvdis's preprocessing: continuous columns rescaled to
    [0, 1] with the table's min and max, the discrete one as 0/1 (its levels sorted), the classes
    in numeric order."""
    cont = table[["x1", "x2"]].to_numpy(float)
    cont = (cont - cont.min(axis=0)) / np.ptp(cont, axis=0)
    colour = (table["colour"] == "r").to_numpy(int)  # levels b < r
    y = table["label"].map({"2": 0, "3": 1, "10": 2}).to_numpy()
    return cont, colour, y


def _naive_bayes(cont, colour, y, train, test, K=3):
    """Gaussians with each feature's variance pooled over the classes (maximum likelihood,
    + 1e-9 x each feature's own variance over the training rows), Laplace-smoothed (l = 1)
    counts and prior."""
    c, d, t = cont[train], colour[train], y[train]
    mu = np.array([c[t == k].mean(axis=0) for k in range(K)])
    var = ((c - mu[t]) ** 2).sum(axis=0) / len(t)
    var = var + 1e-9 * c.var(axis=0)
    counts = np.bincount(t, minlength=K)
    scores = -0.5 * (((cont[test, None, :] - mu[None]) ** 2) / var).sum(axis=2)
    scores += np.log(counts + 1.0)
    for k in range(K):
        level = np.array([(d[t == k] == v).sum() for v in (0, 1)])
        scores[:, k] += np.log((level[colour[test]] + 1.0) / (counts[k] + 2.0))
    return scores


def _lda(cont, colour, y, train, test, K=3, epsilon=1e-4):
    Z = np.column_stack([cont, colour])
    Zt, t = Z[train], y[train]
    mu = np.array([Zt[t == k].mean(axis=0) for k in range(K)])
    units = np.abs(Zt - mu[t]).max(axis=0)  # epsilon relative to each feature (issue 30)
    units = np.where(units > 0, units, 1.0)
    cov = (Zt - mu[t]).T @ (Zt - mu[t]) / len(t) + epsilon * np.diag(units**2)
    P = np.linalg.inv(cov)
    prior = np.log(np.bincount(t, minlength=K))
    return np.column_stack(
        [Z[test] @ P @ mu[k] - 0.5 * mu[k] @ P @ mu[k] + prior[k] for k in range(K)]
    )


def _ridge(cont, colour, y, train, test, K=3, C=1.0):
    """Softmax with class 0's weights 0, penalised by |v|^2 / (2C) on every free weight but the
    intercepts, by L-BFGS."""
    Z = np.column_stack([cont, colour, np.ones(len(y))])
    Zt, t, D = Z[train], y[train], Z.shape[1]
    penalty = np.tile(np.r_[np.ones(D - 1), 0.0], K - 1) / C

    def loss(v):
        W = np.vstack([np.zeros(D), v.reshape(K - 1, D)])
        s = Zt @ W.T
        P = np.exp(s - logsumexp(s, axis=1, keepdims=True))
        P[np.arange(len(t)), t] -= 1
        value = (logsumexp(s, axis=1) - s[np.arange(len(t)), t]).sum() + 0.5 * penalty @ v**2
        return value, (P.T @ Zt)[1:].ravel() + penalty * v

    v = minimize(loss, np.zeros((K - 1) * D), jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 5000}).x  # fmt: skip
    return Z[test] @ np.vstack([np.zeros(D), v.reshape(K - 1, D)]).T


@pytest.mark.slow
def test_k_class_error_counts_match_independent_fits(tmp_path):
    """naive Bayes, LDA and (on separable training sets) the ridge fit of multinomial logistic
    regression: each split's errors in errors.csv are the argmax errors of the model written
    out here with numpy and scipy, on the same splits."""
    table = _table()
    table.to_csv(tmp_path / "three.csv", index=False)
    config = {
        "name": "three",
        "dataset": {"path": str(tmp_path / "three.csv"), "target": "label"},
        "target": {"classes": "all"},
        "models": ["naive_bayes", "lda", {"name": "logistic_regression", "separable": "ridge"}],
        "sizes": [4, 8],
        "splits": 8,
    }
    (tmp_path / "three.yaml").write_text(yaml.safe_dump(config))
    run = genvdis.run(tmp_path / "three.yaml", out=tmp_path / "out")
    errors = pd.read_csv(Path(run.path) / "errors.csv")
    cont, colour, y = _coded(table)
    checked = {"naive_bayes": 0, "lda": 0, "logistic_regression": 0}
    for row in errors.itertuples():
        train, test = draw_split(y, row.m, 0, row.split)
        if row.model == "logistic_regression" and not row.separable:
            continue  # the likelihood's fit: its own tests (tests/models/test_multiclass.py)
        fit = {"naive_bayes": _naive_bayes, "lda": _lda, "logistic_regression": _ridge}
        scores = fit[row.model](cont, colour, y, train, test)
        assert row.errors == (np.argmax(scores, axis=1) != y[test]).sum(), row
        checked[row.model] += 1
    assert checked["naive_bayes"] == checked["lda"] == 16 and checked["logistic_regression"] > 4


def test_class_groups_with_the_same_name_are_refused(tmp_path):
    """config.yaml counts each class's rows under its name, a group's labels joined by '+':
    the groups [a+b] and [a, b] had the one name, and class_counts recorded a single class of
    60 rows for two classes of 30 and 60."""
    rows = [("a+b", 0.0), ("a", 1.0), ("b", 2.0)] * 30
    pd.DataFrame(rows, columns=["label", "x"]).to_csv(tmp_path / "plus.csv", index=False)
    config = tmp_path / "plus.yaml"
    config.write_text(
        "name: plus\ndataset: {path: plus.csv, target: label}\n"
        'target: {classes: [["a+b"], [a, b]]}\nmodels: [naive_bayes]\nsizes: [5]\nsplits: 3\n'
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--quiet"])
    assert_user_error(result, "plus.yaml", "target.classes", "'a+b'", out=out)


def _report_of(tmp_path: Path, target: dict) -> str:
    """The report of a run on liver with this target (its errors made up)."""
    run = tmp_path / "liverk"
    run.mkdir()
    errors = make_errors(CROSSING, n_splits=30).assign(trajectories=0)
    config = dict(name="liverk", title="liver, three classes", n_rows=345, dataset="liver",
                  target=target, models=[{"name": an.NB}, {"name": an.LR}])  # fmt: skip
    results.write_results(run, errors, config, [an.NB, an.LR])  # as `genvdis run` leaves it
    return write_report(tmp_path, n_boot=20)[0].read_text()


def test_the_liver_note_is_not_printed_for_another_label(tmp_path):
    """The report's liver note says the panel's class is the `selector` field and the majority
    class's error is 0.420: printed under a run whose target is drinks in three classes, it
    named the wrong label and a wrong baseline."""
    groups = [["0.0", "0.5", "1.0", "2.0"], ["3.0", "4.0", "5.0"], ["6.0", "8.0", "10.0"]]
    text = _report_of(tmp_path, {"column": "drinks", "classes": groups})
    assert "selector" not in text and "McDermott" not in text


def test_the_liver_note_stays_for_the_selector_label(tmp_path):
    text = _report_of(tmp_path, {"column": None, "classes": "all"})
    assert "train/test selector, not a diagnosis" in text
