"""The numbers a run writes, against independent re-implementations on the same splits.

Each test writes a small table, runs a config through the Python API (the same engine and files
as `genvdis run`), and recomputes every split's test errors in errors.csv from the models'
definitions (docs/config.md, /work/shared/PAPER.md) with numpy, exact integer arithmetic or
scikit-learn. Only the splits are taken from genvdis (`splits.draw_split`, a pure function of
seed, m and split index); the table is read, coded and rescaled here, independently of
genvdis's preprocessing."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA
from sklearn.linear_model import LogisticRegression as SkLR

import genvdis
from genvdis.experiment.splits import draw_split

KINDS = "{g: continuous, h: continuous, k: continuous}"


def _table(seed: int = 1, n: int = 120) -> pd.DataFrame:
    """A small table: three discrete attributes with rare levels (absent from many small
    training sets), an imbalanced target (one positive row in a training set of m = 3..5),
    and three continuous ones, one of them (k) mostly a single value."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(size=n) < 0.2
    return pd.DataFrame(
        {
            "a": rng.choice(["p", "q", "r", "s"], size=n, p=[0.6, 0.3, 0.07, 0.03]),
            "b": np.where(rng.uniform(size=n) < 0.7 + 0.2 * y, "u", "v"),
            "c": rng.choice(["x", "y", "z"], size=n),
            "g": (rng.normal(size=n) + y).round(3),
            "h": (rng.normal(size=n) * 5 + 2 * y).round(3),
            "k": np.where(rng.uniform(size=n) < 0.9, 0.0, rng.normal(size=n)).round(3),
            "label": np.where(y, "pos", "neg"),
        }
    )


def _run(
    tmp_path: Path, frame: pd.DataFrame, body: str, name: str = "t", kinds: str = KINDS
) -> pd.DataFrame:
    """errors.csv of a run of the config `body` (YAML lines after name and dataset) on
    `frame`, written as data.csv."""
    frame.to_csv(tmp_path / "data.csv", index=False)
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        f"name: {name}\n"
        f"dataset: {{path: {tmp_path / 'data.csv'}, target: label, kinds: {kinds}}}\n" + body
    )
    genvdis.run(config, out=tmp_path / "out")
    return pd.read_csv(tmp_path / "out" / name / "errors.csv")


def _codes(frame: pd.DataFrame, names: list[str]) -> tuple[np.ndarray, list[int]]:
    """Each discrete attribute's values coded 0..k-1 (k counted on the whole table)."""
    codes = [pd.Categorical(frame[c].astype(str)).codes for c in names]
    return np.column_stack(codes).astype(np.int64), [int(c.max()) + 1 for c in codes]


def _rescaled(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    X = frame[names].to_numpy(float)
    return (X - X.min(0)) / np.ptp(X, axis=0)


def _exact_nb_positive(codes, ks, y, train) -> tuple[np.ndarray, np.ndarray]:
    """Discrete naive Bayes with l = 1 in exact integer arithmetic (PAPER.md: p(x_i = v | b) =
    (#{x_i = v, y = b} + 1) / (#{y = b} + k), the prior (#{y = b} + 1) / (m + 2)): for every
    row, whether its log-odds is > 0, and whether it is exactly 0 (a tie)."""
    yt = y[train]
    n1 = int(yt.sum())
    n0 = len(yt) - n1
    pos = np.full(len(y), n1 + 1, dtype=object)
    neg = np.full(len(y), n0 + 1, dtype=object)
    for j, k in enumerate(ks):
        c1 = np.bincount(codes[train][yt == 1, j], minlength=k) + 1
        c0 = np.bincount(codes[train][yt == 0, j], minlength=k) + 1
        pos = pos * c1[codes[:, j]].astype(object) * (n0 + k)
        neg = neg * c0[codes[:, j]].astype(object) * (n1 + k)
    return (pos > neg).astype(bool), (pos == neg).astype(bool)


def _assert_discrete_count(errors: int, positive, tie, y, test, where) -> int:
    """errors is the exact rule's count, a tied row (log-odds exactly 0) predicted negative
    (`test_exact_ties_are_decided_by_the_documented_rule`). Returns the ties."""
    assert errors == (positive != y)[test].sum(), where
    return int(tie[test].sum())


def _gaussian_nb_log_odds(X, y, train) -> np.ndarray:
    """Continuous naive Bayes (PAPER.md): class means, one variance per feature shared by the
    classes (maximum likelihood: the within-class sum of squares over m), floored at 1e-9 x
    the largest (docs/config.md's var_smoothing) + 1e-12, the prior n1 / n0."""
    Xt, yt = X[train], y[train]
    mu1, mu0 = Xt[yt == 1].mean(0), Xt[yt == 0].mean(0)
    within = ((Xt[yt == 1] - mu1) ** 2).sum(0) + ((Xt[yt == 0] - mu0) ** 2).sum(0)
    var = within / len(train)
    var = var + 1e-9 * var.max() + 1e-12
    log_odds = (-((X - mu1) ** 2) + (X - mu0) ** 2) / (2 * var)
    return log_odds.sum(1) + np.log(yt.sum() / (len(yt) - yt.sum()))


def _lda_scores(X, y, train, epsilon, K=2) -> np.ndarray:
    """Normal discriminant analysis: class means, the pooled within-class covariance (over m)
    plus epsilon u_j^2 on its diagonal (u_j: attribute j's largest distance from its class's
    mean, so that epsilon is relative to each attribute, issue 30), the class priors; one score
    per class."""
    Xt, yt = X[train], y[train]
    mu = np.array([Xt[yt == c].mean(0) for c in range(K)])
    cov = sum((Xt[yt == c] - mu[c]).T @ (Xt[yt == c] - mu[c]) for c in range(K)) / len(train)
    units = np.abs(Xt - mu[yt]).max(axis=0)
    units = np.where(units > 0, units, 1.0)
    inv = np.linalg.inv(cov + epsilon * np.diag(units**2))
    return np.column_stack(
        [X @ inv @ mu[c] - mu[c] @ inv @ mu[c] / 2 + np.log((yt == c).mean()) for c in range(K)]
    )


def _splits(errors: pd.DataFrame, model: str):
    for row in errors[errors.model == model].itertuples():
        yield row, int(row.m), int(row.split)


# --- naive Bayes ------------------------------------------------------------------------------


def test_discrete_naive_bayes_with_absent_levels_and_a_single_positive_row(tmp_path):
    """Laplace smoothing over every level of the table: a level absent from a training set
    still has probability 1 / (#{y = b} + k) in each class, whatever the test row; m = 3 and 5
    hold a single positive row. Every split's count is the exact rule's."""
    frame = _table()
    errors = _run(
        tmp_path, frame,
        "attributes: discrete\ntarget: {positive: [pos]}\nmodels: [naive_bayes]\n"
        "sizes: [3, 5, 10, 30]\nsplits: 25\n",
    )  # fmt: skip
    codes, ks = _codes(frame, ["a", "b", "c"])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    absent = 0
    for row, m, s in _splits(errors, "naive_bayes"):
        train, test = draw_split(y, m, 0, s)
        positive, tie = _exact_nb_positive(codes, ks, y, train)
        assert not tie[test].any()  # this table has none: every count is decided exactly
        assert row.n_test == len(test) == len(y) - m
        assert row.errors == (positive[test] != y[test]).sum(), (m, s)
        absent += any(len(np.unique(codes[train, j])) < k for j, k in enumerate(ks))
    assert absent > 40  # the case the test is about


def test_continuous_naive_bayes_shares_its_variance_and_ignores_a_constant_attribute(tmp_path):
    """Shared-variance Gaussians (not GaussianNB's per-class variances), on [0, 1]-rescaled
    attributes; k is constant in many training sets (its weight must then be 0) and m = 3, 5
    hold one positive row."""
    frame = _table()
    errors = _run(
        tmp_path, frame,
        "attributes: continuous\ntarget: {positive: [pos]}\nmodels: [naive_bayes]\n"
        "sizes: [3, 5, 10, 30]\nsplits: 25\n",
    )  # fmt: skip
    X = _rescaled(frame, ["g", "h", "k"])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    constant = 0
    for row, m, s in _splits(errors, "naive_bayes"):
        train, test = draw_split(y, m, 0, s)
        wrong = (_gaussian_nb_log_odds(X, y, train) > 0) != y
        assert row.errors == wrong[test].sum(), (m, s)
        constant += np.ptp(X[train, 2]) == 0
    assert constant > 20


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
def test_discretize_bins_on_every_kept_row_then_counts_as_discrete(tmp_path, strategy):
    """`continuous: discretize`: bin edges from every row kept (before any split, as the
    rescaling), each attribute's k the bins that hold a row; then discrete naive Bayes."""
    frame = _table(seed=4)
    errors = _run(
        tmp_path, frame,
        "attributes: continuous\ntarget: {positive: [pos]}\nmodels: [naive_bayes]\n"
        f"preprocessing: {{continuous: discretize, bins: 4, strategy: {strategy}}}\n"
        "sizes: [5, 20]\nsplits: 20\n",
    )  # fmt: skip
    binned = {}
    for name in ("g", "h", "k"):
        values = frame[name].to_numpy(float)
        if strategy == "quantile":
            edges = np.quantile(values, [0.25, 0.5, 0.75])
        else:
            edges = values.min() + np.ptp(values) * np.array([0.25, 0.5, 0.75])
        binned[name] = np.digitize(values, np.unique(edges))  # right edge into the upper bin
    codes, ks = _codes(pd.DataFrame(binned), ["g", "h", "k"])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    for row, m, s in _splits(errors, "naive_bayes"):
        train, test = draw_split(y, m, 0, s)
        positive, tie = _exact_nb_positive(codes, ks, y, train)
        _assert_discrete_count(row.errors, positive, tie, y, test, (m, s))


@pytest.mark.parametrize("missing", ["impute", "category"])
def test_missing_values_are_imputed_or_a_level_of_their_own(tmp_path, missing):
    """`impute`: a continuous attribute's mean and a discrete one's most frequent value, over
    every labelled row; `category`: a missing discrete value is the level '?', counted in k
    (rows missing a continuous value are dropped)."""
    frame = _table(seed=5)
    rng = np.random.default_rng(6)
    for name in ("a", "c", "g"):
        frame.loc[rng.uniform(size=len(frame)) < 0.1, name] = np.nan
    errors = _run(
        tmp_path, frame,
        f"attributes: [a, c, g]\ntarget: {{positive: [pos]}}\nmissing: {missing}\n"
        "models: [naive_bayes]\nsizes: [10, 40]\nsplits: 20\n",
    )  # fmt: skip
    if missing == "impute":
        kept = frame.assign(
            a=frame.a.fillna(frame.a.mode()[0]),
            c=frame.c.fillna(frame.c.mode()[0]),
            g=frame.g.fillna(frame.g.mean()),
        )
    else:
        kept = frame[frame.g.notna()].assign(a=frame.a.fillna("?"), c=frame.c.fillna("?"))
        kept = kept.reset_index(drop=True)
    codes, ks = _codes(kept, ["a", "c"])
    g = _rescaled(kept, ["g"])[:, 0]
    y = (kept.label == "pos").to_numpy().astype(np.int64)
    for row, m, s in _splits(errors, "naive_bayes"):
        train, test = draw_split(y, m, 0, s)
        # mixed naive Bayes adds the two parts' log-odds; the prior is smoothed (l = 1)
        gaussian = _gaussian_nb_log_odds(g[:, None], y, train)
        gaussian -= np.log(y[train].sum() / (m - y[train].sum()))
        discrete = np.zeros(len(y))
        for j, k in enumerate(ks):
            for b, sign in ((1, 1), (0, -1)):
                in_b = train[y[train] == b]
                counts = np.bincount(codes[in_b, j], minlength=k)
                discrete += sign * np.log((counts + 1) / (len(in_b) + k))[codes[:, j]]
        n1 = y[train].sum()
        log_odds = gaussian + discrete + np.log((n1 + 1) / (m - n1 + 1))
        assert row.errors == ((log_odds > 0) != y)[test].sum(), (m, s)


# --- the one-hot coding -----------------------------------------------------------------------


def test_the_coding_leaves_naive_bayes_alone_and_logistic_regression_where_its_fit_is_unique(
    tmp_path,
):
    """drop_first, drop_last and full give naive Bayes the same counts on every split, and
    logistic regression the same counts wherever its maximum is unique (every level in the
    training set, in both classes): there they equal scikit-learn's unpenalised fit."""
    frame = _table(seed=7, n=200)
    frame["label"] = np.where(
        np.random.default_rng(8).uniform(size=len(frame)) < 0.35 + 0.2 * (frame.b == "u"),
        "pos", "neg",
    )  # fmt: skip
    runs = {
        coding: _run(
            tmp_path, frame,
            "attributes: [b, c]\ntarget: {positive: [pos]}\n"
            f"preprocessing: {{encoding: {coding}}}\nsizes: [40, 120]\nsplits: 15\n",
            name=coding,
        ).set_index(["model", "m", "split"])
        for coding in ("drop_first", "drop_last", "full")
    }  # fmt: skip
    first = runs["drop_first"]
    for coding in ("drop_last", "full"):
        pd.testing.assert_series_equal(
            first.loc["naive_bayes"].errors, runs[coding].loc["naive_bayes"].errors
        )
    codes, ks = _codes(frame, ["b", "c"])
    X = np.hstack([np.eye(k)[codes[:, j]][:, 1:] for j, k in enumerate(ks)])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    checked = 0
    for (m, s), row in first.loc["logistic_regression"].iterrows():
        train, test = draw_split(y, m, 0, s)
        both = [
            len(np.unique(codes[train][y[train] == b, j])) == k
            for j, k in enumerate(ks) for b in (0, 1)
        ]  # fmt: skip
        if row.separable or not all(both):  # a level absent, or seen in one class only
            continue
        reference = SkLR(C=np.inf, tol=1e-10, max_iter=10000).fit(X[train], y[train])
        wrong = (reference.decision_function(X) > 0) != y
        for coding in runs:
            assert runs[coding].loc[("logistic_regression", m, s)].errors == wrong[test].sum()
        checked += 1
    assert checked > 20


# --- LDA, more than two classes, splits ----------------------------------------------------


@pytest.mark.filterwarnings("ignore:Only one sample available")  # scikit-learn, m = 5
def test_lda_is_scikit_learns_linear_discriminant_analysis(tmp_path):
    """`lda` with epsilon 0 is scikit-learn's LinearDiscriminantAnalysis (lsqr, no shrinkage:
    the pooled within-class covariance, priors from the training set); with the default
    epsilon, that covariance plus 1e-4 on its diagonal."""
    frame = _table(seed=9)
    errors = _run(
        tmp_path, frame,
        "attributes: [g, h]\ntarget: {positive: [pos]}\n"
        "models: [{name: lda, epsilon: 0}, naive_bayes, {name: lda_eps, estimator: "
        "sklearn.discriminant_analysis.LinearDiscriminantAnalysis, params: {solver: lsqr}}]\n"
        "sizes: [5, 30]\nsplits: 20\n",
    )  # fmt: skip
    X = _rescaled(frame, ["g", "h"])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    for row, m, s in _splits(errors, "lda"):
        train, test = draw_split(y, m, 0, s)
        reference = SkLDA(solver="lsqr").fit(X[train], y[train])
        assert row.errors == (reference.predict(X) != y)[test].sum(), (m, s)
        scores = _lda_scores(X, y, train, 0.0)
        assert row.errors == (scores.argmax(1) != y)[test].sum(), (m, s)
    estimator = errors[errors.model == "lda_eps"].errors.to_numpy()
    np.testing.assert_array_equal(errors[errors.model == "lda"].errors.to_numpy(), estimator)


def test_three_classes_count_argmax_errors_on_fixed_test_sets(tmp_path):
    """`classes: all` (labels sorted), `split: random`, `test: 30`: every training set holds
    each class, the 30 test rows are disjoint from it; naive Bayes (variance pooled over the
    three classes) and LDA (epsilon 1e-4) are counted as the argmax of their class scores."""
    rng = np.random.default_rng(10)
    y = rng.choice([0, 1, 2], size=90, p=[0.5, 0.35, 0.15])
    frame = pd.DataFrame(
        {
            "g": (rng.normal(size=90) + y).round(3),
            "h": (rng.normal(size=90) - 0.5 * y).round(3),
            "label": np.array(["c0", "c1", "c2"])[y],
        }
    )
    errors = _run(
        tmp_path, frame,
        "target: {classes: all}\nmodels: [naive_bayes, lda]\nsizes: [3, 6, 20]\nsplits: 20\n"
        "split: random\ntest: 30\n", kinds="{g: continuous, h: continuous}",
    )  # fmt: skip
    X = _rescaled(frame, ["g", "h"])
    for row in errors.itertuples():
        train, test = draw_split(y, row.m, 0, row.split, "random", 30)
        assert set(y[train]) == {0, 1, 2} and not set(train) & set(test)
        assert row.n_test == len(test) == 30
        if row.model == "lda":
            scores = _lda_scores(X, y, train, 1e-4, K=3)
        else:
            mu = np.array([X[train][y[train] == c].mean(0) for c in range(3)])
            within = sum(((X[train][y[train] == c] - mu[c]) ** 2).sum(0) for c in range(3))
            var = within / row.m  # floored by 1e-9 x each attribute's own variance (issue 30)
            var = var + 1e-9 * X[train].var(axis=0)
            scores = np.column_stack(
                [-((X - mu[c]) ** 2 / (2 * var)).sum(1) + np.log((y[train] == c).mean())
                 for c in range(3)]
            )  # fmt: skip
        assert row.errors == (scores.argmax(1) != y)[test].sum(), (row.model, row.m, row.split)


@pytest.mark.parametrize("policy", ["stratified", "random"])
def test_training_sets_hold_both_classes_and_stratified_ones_keep_the_proportions(policy):
    """PAPER.md: at least one example of each class in every training set. `stratified`: the
    positive class's share round(m n1 / n) (at least 1, at most m - 1), every split;
    `random`: uniform m-subsets, so that share varies."""
    y = np.array([1] * 22 + [0] * 98)
    shares = {}
    for m in (2, 3, 10, 50, 117):  # 117: the largest m leaving a test row of each class
        positives = [y[draw_split(y, m, 0, s, policy)[0]].sum() for s in range(40)]
        assert min(positives) >= 1 and max(positives) <= m - 1
        shares[m] = set(positives)
        if policy == "stratified":
            assert shares[m] == {int(np.clip(round(m * 22 / 120), 1, m - 1))}
    if policy == "random":
        assert len(shares[50]) > 3


@pytest.mark.parametrize("test", ["rest", 25])
def test_fixed_and_rest_test_sets_are_disjoint_from_training(tmp_path, test):
    """`test: rest` tests on every other row (n_test = n - m), `test: 25` on 25 rows drawn from
    the others; the counts are those of the rows draw_split returns."""
    frame = _table(seed=11)
    errors = _run(
        tmp_path, frame,
        f"attributes: [g, h]\ntarget: {{positive: [pos]}}\nmodels: [naive_bayes]\n"
        f"sizes: [4, 60]\nsplits: 15\ntest: {test}\n",
    )  # fmt: skip
    X = _rescaled(frame, ["g", "h"])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    for row, m, s in _splits(errors, "naive_bayes"):
        train, rows = draw_split(y, m, 0, s, "stratified", test)
        assert not set(train) & set(rows)
        assert row.n_test == len(rows) == (len(y) - m if test == "rest" else 25)
        wrong = (_gaussian_nb_log_odds(X, y, train) > 0) != y
        assert row.errors == wrong[rows].sum(), (m, s)


def test_exact_ties_are_decided_by_the_documented_rule(tmp_path):
    """A log-odds exactly 0 predicts negative (docs/config.md: positive where > 0; K classes:
    the lowest class). Discrete naive Bayes' log-odds is a sum of logs of rationals: where it
    is 0 in exact arithmetic, genvdis's double-precision sum is 0 or +-1e-16 by rounding, so
    a tied row is predicted either way. Attributes with 2, 3 and 4 values, balanced classes,
    m = 2 (one row of each class): many test rows tie."""
    rng = np.random.default_rng(12)
    n = 12
    frame = pd.DataFrame(
        {
            "a": rng.choice(["p", "q"], size=n),
            "b": rng.choice(["u", "v", "w"], size=n),
            "c": rng.choice(["x", "y", "z", "t"], size=n),
            "label": ["pos", "neg"] * (n // 2),
        }
    )
    errors = _run(
        tmp_path, frame,
        "target: {positive: [pos]}\nmodels: [naive_bayes]\nsizes: [2]\nsplits: 60\n", kinds="{}",
    )  # fmt: skip
    codes, ks = _codes(frame, ["a", "b", "c"])
    y = (frame.label == "pos").to_numpy().astype(np.int64)
    ties = 0
    for row, m, s in _splits(errors, "naive_bayes"):
        train, test = draw_split(y, m, 0, s)
        positive, tie = _exact_nb_positive(codes, ks, y, train)
        ties += _assert_discrete_count(row.errors, positive, tie, y, test, (m, s))
    assert ties > 0


def _tie_table(seed: int, n: int, levels: tuple[int, ...], classes: int = 2) -> pd.DataFrame:
    """Discrete attributes with `levels` values each, labels c0.. (balanced): small training
    sets of such tables tie often."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {f"a{j}": rng.choice([f"v{v}" for v in range(k)], size=n) for j, k in enumerate(levels)}
    )
    frame["label"] = [f"c{i % classes}" for i in range(n)]
    return frame


@pytest.mark.parametrize(
    ("levels", "test"),
    [((2, 3, 4), "rest"), ((2, 3, 4), "10"), ((5, 6, 7, 3), "rest"), ((5, 6, 7, 3), "10")],
)
def test_discrete_naive_bayes_counts_are_exact_at_m_2_to_6(tmp_path, levels, test):
    """Every split's count equals exact integer arithmetic, ties predicted negative, at m = 2
    to 6, testing on every other row (the training rows' errors taken off a count over all
    rows) or on 10 drawn rows; (5, 6, 7, 3) levels make the one-hot rows sparse enough for
    scoring's sparse pass, (2, 3, 4) take the dense one."""
    frame = _tie_table(14, 16, levels)
    names = [f"a{j}" for j in range(len(levels))]
    errors = _run(
        tmp_path, frame,
        "target: {positive: [c1]}\nmodels: [naive_bayes]\nsizes: [2, 3, 4, 5, 6]\n"
        f"splits: 40\ntest: {test}\n", kinds="{}",
    )  # fmt: skip
    codes, ks = _codes(frame, names)
    y = (frame.label == "c1").to_numpy().astype(np.int64)
    ties = dict.fromkeys(range(2, 7), 0)
    for row, m, s in _splits(errors, "naive_bayes"):
        train, rows = draw_split(y, m, 0, s, "stratified", test if test == "rest" else 10)
        positive, tie = _exact_nb_positive(codes, ks, y, train)
        ties[m] += _assert_discrete_count(row.errors, positive, tie, y, rows, (m, s))
    assert sum(t > 0 for t in ties.values()) >= 3, ties


def test_ties_count_exactly_where_the_continuous_part_is_zero(tmp_path):
    """Mixed data: where the continuous attribute is constant in the training set, its weight
    and share of the intercept are exactly 0, the log-odds is the discrete one, and its ties
    are predicted negative (elsewhere a real-valued part makes an exact tie a null event)."""
    frame = _tie_table(15, 16, (2, 3, 4))
    frame["k"] = np.where(np.arange(16) % 8 == 0, 1.0, 0.0)
    errors = _run(
        tmp_path, frame,
        "target: {positive: [c1]}\nmodels: [naive_bayes]\nsizes: [2, 3, 4]\nsplits: 60\n",
        kinds="{k: continuous}",
    )  # fmt: skip
    codes, ks = _codes(frame, ["a0", "a1", "a2"])
    y = (frame.label == "c1").to_numpy().astype(np.int64)
    ties = checked = 0
    for row, m, s in _splits(errors, "naive_bayes"):
        train, test = draw_split(y, m, 0, s)
        if np.ptp(frame.k.to_numpy()[train]) > 0:
            continue
        positive, tie = _exact_nb_positive(codes, ks, y, train)
        ties += _assert_discrete_count(row.errors, positive, tie, y, test, (m, s))
        checked += 1
    assert checked > 60 and ties > 0


def _exact_nb_classes(codes, ks, y, train, K) -> tuple[np.ndarray, np.ndarray]:
    """K-class discrete naive Bayes, l = 1, in exact rational arithmetic: each row's class
    (the largest score, ties to the lowest class), and whether the top score is tied."""
    yt, Xt = y[train], codes[train]
    scores = []
    for c in range(K):
        n_c = int((yt == c).sum())
        score = [Fraction(n_c + 1)] * len(y)
        for j, k in enumerate(ks):
            counts = np.bincount(Xt[yt == c, j], minlength=k) + 1
            odds = [Fraction(int(counts[x]), n_c + k) for x in codes[:, j]]
            score = [v * w for v, w in zip(score, odds, strict=True)]
        scores.append(score)
    scores = np.array(scores, dtype=object).T  # (n, K)
    top = scores.max(axis=1)
    best = np.array([list(r).index(t) for r, t in zip(scores, top, strict=True)])
    tied = (scores == top[:, None]).sum(axis=1) > 1
    return best, tied


def test_three_class_discrete_naive_bayes_ties_go_to_the_lowest_class(tmp_path):
    """K = 3, discrete attributes, m = 3 to 6: every count equals exact rational arithmetic,
    a top score tied with another class's going to the lowest class."""
    frame = _tie_table(16, 18, (2, 3, 4), classes=3)
    errors = _run(
        tmp_path, frame,
        "target: {classes: all}\nmodels: [naive_bayes]\nsizes: [3, 4, 5, 6]\nsplits: 40\n"
        "split: random\ntest: 8\n", kinds="{}",
    )  # fmt: skip
    codes, ks = _codes(frame, ["a0", "a1", "a2"])
    y = pd.Categorical(frame.label).codes.astype(np.int64)
    ties = 0
    for row in errors.itertuples():
        train, test = draw_split(y, row.m, 0, row.split, "random", 8)
        best, tied = _exact_nb_classes(codes, ks, y, train, 3)
        assert row.errors == (best != y)[test].sum(), (row.m, row.split)
        ties += tied[test].sum()
    assert ties > 0


def test_continuous_naive_bayes_does_not_depend_on_the_attributes_units(tmp_path):
    """Shared-variance Gaussian naive Bayes is unchanged by a per-attribute affine map
    (docs/datasets.md), so `continuous: none` and `rescale` should count the same errors. The
    variance floor was var_smoothing x the largest variance, added to every attribute's
    variance: in raw units (an attribute in the 1e5s, as adult's fnlwgt) that floor swamped the
    variance of an attribute in small units. It is now relative to each attribute (issue 30)."""
    frame = _table(seed=13, n=300)
    frame["g"] = (frame.g * 1e5).round(0)
    frame["h"] = frame.h / 100
    body = (
        "attributes: [g, h]\ntarget: {positive: [pos]}\nmodels: [naive_bayes]\n"
        "preprocessing: {continuous: %s}\nsizes: [20, 200]\nsplits: 20\n"
    )
    rescaled = _run(tmp_path, frame, body % "rescale", name="rescaled")
    raw = _run(tmp_path, frame, body % "none", name="raw")
    np.testing.assert_array_equal(raw.errors.to_numpy(), rescaled.errors.to_numpy())
