"""Each model against an independent computation on the same data: scikit-learn where it fits
the same model, a closed form by hand where it does not (shared-variance Gaussian naive Bayes),
and rejection sampling for the random separating hyperplane; and the error counts a whole run
writes, recomputed from the models' definitions on the same splits.

Data are small and synthetic; X = [continuous columns | integer codes of discrete columns].
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog
from sklearn.base import clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.naive_bayes import CategoricalNB

import genvdis
from genvdis._runtime.streams import stream_keys
from genvdis.config.experiment import parse_config
from genvdis.data.preprocessing import FeatureLayout
from genvdis.experiment.splits import draw_split
from genvdis.models.base import BatchFit
from genvdis.models.lda import LDA
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic_regression import LogisticRegression
from genvdis.models.naive_bayes import NaiveBayes
from genvdis.models.registry import build_model

LEVELS = (3, 4, 2)


def _discrete(rng: np.random.Generator, n: int, levels: tuple[int, ...] = LEVELS) -> np.ndarray:
    return np.column_stack([rng.integers(0, k, n) for k in levels]).astype(float)


def _onehot_full(X: np.ndarray, levels: tuple[int, ...]) -> np.ndarray:
    """One-hot of integer codes, written independently of FeatureLayout.onehot."""
    return np.hstack([np.eye(k)[X[:, j].astype(int)] for j, k in enumerate(levels)])


def _noisy_labels(rng: np.random.Generator, score: np.ndarray) -> np.ndarray:
    """Labels from a logistic model on `score`: overlapping classes, so the MLE exists."""
    return (rng.uniform(size=score.shape) < 1 / (1 + np.exp(-score))).astype(np.int64)


def _separates(model, X: np.ndarray, y: np.ndarray) -> bool:
    return bool(np.all((2 * y - 1) * model.decision_function(X) > 0))


# --- naive Bayes --------------------------------------------------------------------------------


def test_discrete_naive_bayes_matches_categorical_nb_with_smoothed_prior():
    """Laplace l=1 on every conditional and on the class prior (the paper's eq. 1), including
    a level that never occurs in the training set: the same log-odds as scikit-learn."""
    rng = np.random.default_rng(0)
    X = _discrete(rng, 120)
    y = _noisy_labels(rng, X[:, 0] - X[:, 1] + 0.5)
    train = X[:, 1] != 3  # level 3 of attribute 1 is only ever seen at test time
    assert (~train).sum() > 5
    Xtr, ytr = X[train], y[train]
    m, n1 = len(ytr), int(ytr.sum())
    n0 = m - n1

    ours = NaiveBayes(FeatureLayout(0, LEVELS), laplace=1.0).fit(Xtr, ytr)
    prior = [(n0 + 1) / (m + 2), (n1 + 1) / (m + 2)]
    ref = CategoricalNB(alpha=1.0, min_categories=np.array(LEVELS), class_prior=prior)
    ref.fit(Xtr.astype(int), ytr)

    joint = ref.predict_joint_log_proba(X.astype(int))
    log_odds = joint[:, 1] - joint[:, 0]
    np.testing.assert_allclose(ours.decision_function(X), log_odds, rtol=1e-10, atol=1e-10)
    post = ref.predict_log_proba(X.astype(int))
    np.testing.assert_allclose(ours.decision_function(X), post[:, 1] - post[:, 0], atol=1e-10)
    clear = np.abs(log_odds) > 1e-9  # sklearn breaks exact ties towards class 0
    np.testing.assert_array_equal(ours.predict(X)[clear], ref.predict(X.astype(int))[clear])
    # The unseen level has a finite, smoothed weight: log((0+1)/(n1+4)) - log((0+1)/(n0+4)).
    unseen = ours.coef_[LEVELS[0] + 3]
    assert unseen == pytest.approx(np.log((n0 + 4) / (n1 + 4)), rel=1e-12)


def _gaussian_log_odds(Xtr: np.ndarray, ytr: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Shared-variance Gaussian naive Bayes, closed form: class means, pooled ML variance."""
    mu1, mu0 = Xtr[ytr == 1].mean(axis=0), Xtr[ytr == 0].mean(axis=0)
    resid = Xtr - np.where(ytr[:, None] == 1, mu1, mu0)
    var = (resid**2).sum(axis=0) / len(ytr)
    terms = ((X - mu0) ** 2 - (X - mu1) ** 2) / (2 * var)
    return terms.sum(axis=1) + np.log(ytr.sum() / (len(ytr) - ytr.sum()))


def test_gaussian_naive_bayes_matches_closed_form_and_ignores_a_constant_feature():
    rng = np.random.default_rng(1)
    n = 80
    X = rng.uniform(size=(n, 4))
    y = _noisy_labels(rng, 4 * X[:, 0] - 3 * X[:, 1] + X[:, 3] - 1)
    X[:, 2] = 0.3  # constant: variance 0, kept finite by the floor
    Xtr, ytr, Xte = X[:37], y[:37], rng.uniform(size=(50, 4))

    ours = NaiveBayes(FeatureLayout(4), var_smoothing=0.0).fit(Xtr, ytr)
    informative = [0, 1, 3]
    expected = _gaussian_log_odds(Xtr[:, informative], ytr, Xte[:, informative])
    got = ours.decision_function(Xte)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(ours.predict(Xte), (expected > 0).astype(int))
    # The constant feature does not vote, even where a test row has another value there.
    assert ours.coef_[2] == 0.0

    # The default floor (1e-9 of the largest variance) moves nothing visibly.
    default = NaiveBayes(FeatureLayout(4)).fit(Xtr, ytr)
    np.testing.assert_allclose(default.decision_function(Xte), expected, rtol=1e-6, atol=1e-6)
    assert default.coef_[2] == 0.0


def test_mixed_naive_bayes_adds_the_two_parts():
    """With both kinds, the log-odds is the Gaussian part plus the categorical part; the prior
    is counted once (Laplace-smoothed, as for discrete data)."""
    rng = np.random.default_rng(2)
    n = 90
    Xc, Xd = rng.uniform(size=(n, 2)), _discrete(rng, n)
    y = _noisy_labels(rng, 3 * Xc[:, 0] - Xd[:, 2] - 0.5)
    X = np.hstack([Xc, Xd])
    mixed = NaiveBayes(FeatureLayout(2, LEVELS)).fit(X, y)
    cont = NaiveBayes(FeatureLayout(2)).fit(Xc, y)
    disc = NaiveBayes(FeatureLayout(0, LEVELS)).fit(Xd, y)
    n1 = y.sum()
    expected = cont.decision_function(Xc) - np.log(n1 / (n - n1)) + disc.decision_function(Xd)
    np.testing.assert_allclose(mixed.decision_function(X), expected, rtol=1e-10, atol=1e-10)


# --- logistic regression ----------------------------------------------------------------------


def test_logistic_regression_matches_sklearn_unpenalised_on_continuous_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = _noisy_labels(rng, X @ [1.5, -1.0, 0.5] + 0.3)
    Xtr, ytr, Xte = X[:200], y[:200], X[200:]
    ours = LogisticRegression(FeatureLayout(3)).fit(Xtr, ytr)
    ref = SkLR(C=np.inf, tol=1e-10, max_iter=10000).fit(Xtr, ytr)
    assert not ours.separable_
    np.testing.assert_allclose(ours.coef_, ref.coef_[0], rtol=1e-4)
    assert ours.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-4)
    np.testing.assert_array_equal(ours.predict(Xte), ref.predict(Xte))


def test_logistic_regression_matches_sklearn_on_one_hot_discrete_data():
    """genvdis uses reference coding, sklearn the full one-hot: different coefficients, the
    same fitted log-odds (the likelihood's maximiser is unique in function space)."""
    rng = np.random.default_rng(4)
    levels = (3, 3, 2)
    X = _discrete(rng, 400, levels)
    y = _noisy_labels(rng, X[:, 0] - 1.2 * X[:, 1] + 0.8 * X[:, 2] - 0.2)
    Xtr, ytr = X[:300], y[:300]
    ours = LogisticRegression(FeatureLayout(0, levels)).fit(Xtr, ytr)
    ref = SkLR(C=np.inf, tol=1e-10, max_iter=10000).fit(_onehot_full(Xtr, levels), ytr)
    assert not ours.separable_
    Z = _onehot_full(X, levels)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(Z), atol=1e-4)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(Z))


def _separable_clusters(rng: np.random.Generator, n: int = 20) -> tuple[np.ndarray, np.ndarray]:
    X = rng.normal(scale=0.5, size=(n, 2))
    y = np.arange(n) % 2
    X[y == 1] += 2.5
    return X, y


@pytest.mark.parametrize("policy", ["sample", "max_margin", "ridge"])
def test_separable_training_set_is_detected_and_separated(policy):
    rng = np.random.default_rng(5)
    X, y = _separable_clusters(rng)
    model = LogisticRegression(FeatureLayout(2), separable=policy).fit(X, y)
    assert model.separable_
    assert np.all(np.isfinite(model.coef_))
    if policy != "ridge":
        assert _separates(model, X, y)


def test_ridge_policy_equals_sklearn_l2_logistic_regression():
    """On separable data the 'ridge' fallback is sklearn's L2 model at the same C: penalty
    ||w||^2 / (2C) on the weights, none on the intercept (lbfgs leaves it unpenalised)."""
    rng = np.random.default_rng(6)
    X, y = _separable_clusters(rng)
    for C in (0.1, 1.0, 10.0):
        ours = LogisticRegression(FeatureLayout(2), separable="ridge", C=C).fit(X, y)
        ref = SkLR(C=C, tol=1e-12, max_iter=10000).fit(X, y)
        np.testing.assert_allclose(ours.coef_, ref.coef_[0], rtol=1e-5)
        assert ours.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-5)


def test_sampled_hyperplanes_are_random_and_reproducible():
    rng = np.random.default_rng(7)
    X, y = _separable_clusters(rng)
    layout = FeatureLayout(2)
    a = LogisticRegression(layout).fit(X, y, random_state=1)
    b = LogisticRegression(layout).fit(X, y, random_state=1)
    c = LogisticRegression(layout).fit(X, y, random_state=2)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)
    assert _separates(a, X, y) and _separates(c, X, y)


# --- LDA ----------------------------------------------------------------------------------------


def test_lda_matches_sklearn_lsqr_without_shrinkage():
    """epsilon = 0: the ML pooled covariance, which is what sklearn's lsqr solver uses too
    (class covariances /n_k weighted by the class priors n_k/m)."""
    rng = np.random.default_rng(8)
    cov = np.array([[1.0, 0.4, 0.0], [0.4, 1.0, -0.3], [0.0, -0.3, 0.5]])
    X = rng.multivariate_normal(np.zeros(3), cov, size=300)
    y = (np.arange(300) % 3 == 0).astype(np.int64)
    X[y == 1] += [0.8, -0.5, 0.4]
    Xtr, ytr, Xte = X[:200], y[:200], X[200:]
    ours = LDA(FeatureLayout(3), epsilon=0.0).fit(Xtr, ytr)
    ref = SkLDA(solver="lsqr", shrinkage=None).fit(Xtr, ytr)
    np.testing.assert_allclose(ours.coef_, ref.coef_[0], rtol=1e-8)
    assert ours.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-8)
    np.testing.assert_array_equal(ours.predict(Xte), ref.predict(Xte))


def test_lda_epsilon_keeps_a_rank_deficient_covariance_invertible():
    """m < number of features: the pooled covariance is singular; epsilon makes it solvable."""
    rng = np.random.default_rng(9)
    X, y = rng.normal(size=(6, 10)), np.array([0, 1, 0, 1, 0, 1])
    model = LDA(FeatureLayout(10), epsilon=1e-4).fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    np.testing.assert_array_equal(model.predict(X), y)  # 6 points in 10-D: fitted exactly


# --- batching -----------------------------------------------------------------------------------


def _batch_problem():
    """6 random training sets (mostly not separable) and 2 drawn from points far from the
    true boundary, relabelled by it (separable), over mixed continuous/discrete data."""
    rng = np.random.default_rng(10)
    n, levels = 120, (3, 2)
    X = np.hstack([rng.uniform(size=(n, 2)), _discrete(rng, n, levels)])
    score = 4 * X[:, 0] - 2 * X[:, 1] + X[:, 2] - 1
    y = _noisy_labels(rng, score)
    idx = np.stack([np.sort(rng.choice(n, 40, replace=False)) for _ in range(6)])
    clear = np.flatnonzero(np.abs(score) > 0.5)
    y[clear] = (score[clear] > 0).astype(int)
    idx = np.vstack([idx, [np.sort(rng.choice(clear, 40, replace=False)) for _ in range(2)]])
    return X, y, FeatureLayout(2, levels), idx


MODEL_CASES = [
    ("naive_bayes", lambda lay: NaiveBayes(lay)),
    ("lda", lambda lay: LDA(lay)),
    ("lr_max_margin", lambda lay: LogisticRegression(lay, separable="max_margin")),
    ("lr_ridge", lambda lay: LogisticRegression(lay, separable="ridge")),
    ("lr_sample", lambda lay: LogisticRegression(lay, separable="sample")),
]


@pytest.mark.parametrize(("label", "make"), MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_fit_batch_equals_separate_fits(label, make):
    """Fitting S training sets at once gives the S classifiers that S `fit` calls give.
    (Sampled hyperplanes on separable sets are random draws: those must only separate.)"""
    X, y, layout, idx = _batch_problem()
    model = make(layout)
    keys = stream_keys(0, 40, range(len(idx)), stream=1)
    batch = model.fit_batch(model.encode(X), y, idx, keys)
    if label.startswith("lr_"):
        assert batch.separable[-2:].all() and not batch.separable[:-2].all()
    for s, rows in enumerate(idx):
        single = make(layout).fit(X[rows], y[rows])
        assert single.separable_ == batch.separable[s]
        if label == "lr_sample" and batch.separable[s]:
            margins = (2 * y[rows] - 1) * (
                model.encode(X[rows]) @ batch.coef[s] + batch.intercept[s]
            )
            assert np.all(margins > 0)
            continue
        np.testing.assert_allclose(batch.coef[s], single.coef_, rtol=1e-7, atol=1e-9)
        assert batch.intercept[s] == pytest.approx(single.intercept_, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize(("label", "make"), MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_a_splits_fit_is_the_same_bits_in_any_batch(label, make):
    """Each training set is fitted in its own standard basis (`logistic.standard_basis`), with
    its own units (naive Bayes, LDA): a split's classifier, sampled ones included, is the same
    bits whichever splits share its batch, so results do not depend on blocks or workers."""
    X, y, layout, idx = _batch_problem()
    model = make(layout)
    Z = model.encode(X)
    keys = stream_keys(0, 40, range(len(idx)), stream=1)
    batch = model.fit_batch(Z, y, idx, keys)
    for s in range(len(idx)):
        alone = model.fit_batch(Z, y, idx[s : s + 1], keys[s : s + 1])
        assert np.array_equal(alone.coef[0], batch.coef[s]), s
        assert alone.intercept[0] == batch.intercept[s] and alone.separable[0] == batch.separable[s]


# --- parameter validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: NaiveBayes(FeatureLayout(0, (2,)), laplace=0.0),
        lambda: NaiveBayes(FeatureLayout(0, (2,)), laplace=-1.0),
        lambda: NaiveBayes(FeatureLayout(2), laplace=-1.0),
        lambda: NaiveBayes(FeatureLayout(2), var_smoothing=-1e-3),
        lambda: LDA(FeatureLayout(2), epsilon=-1e-4),
        lambda: LogisticRegression(FeatureLayout(2), C=0.0),
        lambda: LogisticRegression(FeatureLayout(2), C=-1.0),
        lambda: LogisticRegression(FeatureLayout(2), separable="newton"),
        lambda: LogisticRegression(FeatureLayout(2), mcmc_iterations=0),
        lambda: LogisticRegression(FeatureLayout(2), tol=0.0),
        lambda: LogisticRegression(FeatureLayout(2), max_iter=0),
    ],
)
def test_bad_parameters_are_rejected_at_construction(build):
    with pytest.raises(ValueError):
        build()


def test_build_model_passes_the_config_parameters():
    config = parse_config(
        {
            "name": "t",
            "dataset": "pima",
            "target": {"positive": ["1"]},
            "sizes": [10],
            "models": [
                {"name": "naive_bayes", "laplace": 2.0},
                {"name": "logistic_regression", "separable": "ridge", "C": 0.5},
                {"name": "lda", "epsilon": 0.01},
            ],
        }
    )
    nb, lr, lda = (build_model(spec, FeatureLayout(1, (2,))) for spec in config.models)
    assert isinstance(nb, NaiveBayes) and nb.laplace == 2.0
    assert isinstance(lr, LogisticRegression) and (lr.separable, lr.C) == ("ridge", 0.5)
    assert isinstance(lda, LDA) and lda.epsilon == 0.01


# --- scikit-learn's estimator protocol; models shared by threads -------------------------------


@pytest.mark.parametrize(("label", "make"), MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_clone_rebuilds_an_unfitted_model_that_fits_the_same(label, make):
    """`sklearn.base.clone` works on every model: the same parameters in a new, unfitted
    object, whose fit gives the original's coefficients bit for bit."""
    X, y, layout, idx = _batch_problem()
    model = make(layout).fit(X[idx[0]], y[idx[0]])
    copy = clone(model)
    assert copy is not model and copy.get_params() == model.get_params()
    assert not hasattr(copy, "coef_")
    copy.fit(X[idx[0]], y[idx[0]])
    np.testing.assert_array_equal(copy.coef_, model.coef_)
    assert copy.intercept_ == model.intercept_


def test_set_params_checks_values_as_the_constructor_does():
    model = LogisticRegression(FeatureLayout(2))
    assert model.set_params(C=0.5, separable="ridge") is model
    assert (model.C, model.separable) == (0.5, "ridge")
    with pytest.raises(ValueError, match="^C: Input should be greater than 0$"):
        model.set_params(C=-1.0)
    with pytest.raises(ValueError, match="no parameter penalty"):
        model.set_params(penalty="l1")


def _layout_cases(model: LogisticRegression) -> list[tuple[np.ndarray, ...]]:
    """fit_batch arguments (Z, y, idx, keys) for the sparse layout (wide one-hot data) and for
    the gathered one (training sets covering most of 20 continuous columns)."""
    rng = np.random.default_rng(20)
    n, levels = 100, (5,) * 5
    codes = _discrete(rng, n, levels)
    sparse_Z = FeatureLayout(0, levels).onehot(codes, reference=True)
    dense_Z = rng.uniform(size=(n, 20))
    cases = []
    for Z, m in ((sparse_Z, 50), (dense_Z, 70)):
        y = _noisy_labels(rng, 3 * (Z[:, 0] - Z[:, 1]))
        idx = np.stack([np.sort(rng.choice(n, m, replace=False)) for _ in range(6)])
        cases.append((Z, y, idx, stream_keys(2, n, range(6), stream=1)))
    assert model.shared(*cases[0][:2]).sparse is not None
    assert model.shared(*cases[1][:2]).sparse is None
    return cases


@pytest.mark.parametrize("coding", [pytest.param("sparse", marks=pytest.mark.slow), "dense"])
def test_the_engine_builds_what_batches_share_once_a_run_to_the_same_fits(coding):
    """`engine.run_block` builds LogisticRegression.shared on a run's first block and keeps it
    with the data: every later block reuses it, and every block's rows (errors, separable
    flags) are those of a block fitted with its own, built afresh."""
    import dataclasses

    from genvdis.experiment.engine import Protocol, run_block
    from genvdis.experiment.scoring import EncodedData

    rng = np.random.default_rng(21)
    levels = (5,) * 5 if coding == "sparse" else ()
    layout = FeatureLayout(0 if levels else 20, levels)
    X = _discrete(rng, 300, levels) if levels else rng.uniform(size=(300, 20))
    y = _noisy_labels(rng, 3 * (layout.onehot(X)[:, 0] - layout.onehot(X)[:, 1]))
    data = EncodedData.encode(X, y, layout)
    model, protocol = LogisticRegression(layout), Protocol(3, "stratified", "rest")
    shared, key = None, ("logistic", True)  # reference-coded data
    for m, block in ((10, range(0, 8)), (60, range(8, 14)), (10, range(14, 20))):
        frame = run_block(data, [model], m, block, protocol)
        alone = run_block(dataclasses.replace(data), [model], m, block, protocol)
        assert frame.equals(alone)
        shared = shared or data.derived[key]
        assert list(data.derived) == [key] and data.derived[key] is shared
    assert (shared.sparse is not None) == (coding == "sparse")
    assert frame["separable"].any()  # m = 10: the proofs' row-norm bound was used


def test_naive_bayes_one_hot_csr_is_built_once_a_run_to_the_same_errors(monkeypatch):
    """Naive Bayes declares `shares`: the engine builds the data's one-hot CSR on a run's first
    block (`NaiveBayes.shared`) and every later block reads it, where it was built once a
    block; every block's errors are those of a block given fresh data, binary and K-class."""
    import dataclasses

    from genvdis.experiment.engine import Protocol, run_block
    from genvdis.experiment.scoring import ROWS_KEY, EncodedData
    from genvdis.models import naive_bayes as models
    from genvdis.models.naive_bayes import MultiNaiveBayes

    built = []
    real = models.dense_csr
    monkeypatch.setattr(models, "dense_csr", lambda *a: built.append(1) or real(*a))
    rng = np.random.default_rng(22)
    layout = FeatureLayout(0, (5,) * 6)
    X = _discrete(rng, 120, layout.levels)
    for model, y in ((NaiveBayes(layout), rng.integers(0, 2, 120)),
                     (MultiNaiveBayes(layout), rng.integers(0, 3, 120))):  # fmt: skip
        data, protocol = EncodedData.encode(X, y, layout), Protocol(3, "stratified", "rest")
        built.clear()
        for m, block in ((60, range(0, 8)), (80, range(8, 14)), (60, range(14, 20))):
            frame = run_block(data, [model], m, block, protocol)
            fresh = dataclasses.replace(data)  # nothing derived yet: builds its own
            assert frame.equals(run_block(fresh, [model], m, block, protocol))
        assert len(built) == 1 + 3  # once for the run's three blocks, once for each fresh copy
        # besides the K-class scoring rows (`scoring.ROWS_KEY`), kept alike
        assert [k for k in data.derived if k != ROWS_KEY] == [("naive_bayes", False)]
        assert data.derived["naive_bayes", False][0].size == len(y) + 1  # the CSR, not empty


def test_threads_sharing_one_model_fit_as_it_does_alone():
    """The threading backend shares model objects between threads: one LogisticRegression
    fitting sparse-layout and gathered-layout batches in several threads at once gives each
    batch the fit it gives alone, and keeps no state from the calls."""
    model = LogisticRegression(FeatureLayout(0))  # fit_batch takes encoded data
    cases = _layout_cases(model)
    alone = [model.fit_batch(*case) for case in cases]
    state = dict(vars(model))
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: model.fit_batch(*cases[i % 2]), range(12)))
    for i, fit in enumerate(together):
        for field in BatchFit.FIELDS:
            np.testing.assert_array_equal(getattr(fit, field), getattr(alone[i % 2], field))
    assert vars(model) == state


# --- the version-space sampler ------------------------------------------------------------------


def _rejection_errors(A: np.ndarray, A_test: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Test error of directions uniform on the sphere, kept where they separate the training
    set. The version space cut by the ball is a cone, so this is the law the sampler targets."""
    rng = np.random.default_rng(seed)
    errors = []
    for _ in range(0, n, 250_000):
        U = rng.standard_normal((250_000, A.shape[1]))
        U = U[np.all(U @ A.T > 0, axis=1)]
        errors.append(np.mean(U @ A_test.T <= 0, axis=1))
    return np.concatenate(errors)


def _sampler_errors(X: np.ndarray, y: np.ndarray, A_test: np.ndarray, chains: int) -> np.ndarray:
    """Test error of the hyperplane logistic regression draws on the separable set (X, y), from
    `chains` independent chains (one draw each, as S splits of one batch), default settings."""
    model = LogisticRegression(FeatureLayout(X.shape[1]), separable="sample")
    idx = np.tile(np.arange(len(y)), (chains, 1))
    fit = model.fit_batch(model.encode(X), y, idx, stream_keys(0, len(y), range(chains), 1))
    assert fit.separable.all()
    Z = np.column_stack([fit.coef, fit.intercept])
    A = hyperplanes.signed_rows(X, y)
    assert np.all(Z @ A.T > 0), "a draw violates a constraint"
    assert np.all(np.linalg.norm(Z, axis=1) <= 1 + 1e-12), "a draw leaves the unit ball"
    assert len(np.unique(Z.round(12), axis=0)) == chains, "chains returned the same draw"
    return np.mean(Z @ A_test.T <= 0, axis=1)


def _compare(sampled: np.ndarray, reference: np.ndarray) -> None:
    se = np.hypot(sampled.std() / np.sqrt(len(sampled)), reference.std() / np.sqrt(len(reference)))
    diff = sampled.mean() - reference.mean()
    assert len(reference) > 1000
    assert abs(diff) < 4 * se, (
        f"sampler mean test error {sampled.mean():.4f} vs rejection {reference.mean():.4f} "
        f"({diff / se:+.1f} standard errors)"
    )


def test_sampler_matches_rejection_sampling_in_2d():
    """x in R^2 plus a bias: a 3-D version space from 6 separable points."""
    rng = np.random.default_rng(11)
    X = np.array([[0.0, 0.0], [1.0, 0.2], [0.3, 1.0], [2.0, 2.0], [2.5, 1.2], [1.4, 2.6]])
    y = np.array([0, 0, 0, 1, 1, 1])
    X_test = rng.uniform(-1, 4, size=(400, 2))
    y_test = (X_test.sum(axis=1) + 0.3 * rng.normal(size=400) > 2.2).astype(int)
    A, A_test = hyperplanes.signed_rows(X, y), hyperplanes.signed_rows(X_test, y_test)
    sampled = _sampler_errors(X, y, A_test, chains=4000)
    reference = _rejection_errors(A, A_test, 500_000, seed=1)
    assert sampled.std() > 0.01, "every chain gave a hyperplane of the same test error"
    _compare(sampled, reference)


def test_sampler_matches_rejection_sampling_in_a_thin_5d_version_space():
    """15 points in R^4 plus a bias: about 1 direction in 750 separates them."""
    rng = np.random.default_rng(18)
    X = rng.normal(size=(1015, 4))
    y = (X @ [1.0, -1.0, 0.5, 2.0] > 0).astype(int)
    A, A_test = hyperplanes.signed_rows(X[:15], y[:15]), hyperplanes.signed_rows(X[15:], y[15:])
    sampled = _sampler_errors(X[:15], y[:15], A_test, chains=4000)
    reference = _rejection_errors(A, A_test, 2_000_000, seed=1)
    _compare(sampled, reference)


def test_sampler_matches_rejection_sampling_with_fewer_points_than_dimensions():
    """4 points in R^4 plus a bias: the constraints leave one direction free."""
    rng = np.random.default_rng(15)
    X = rng.normal(size=(404, 4))
    y = (X @ [1.0, -1.0, 0.5, 2.0] > 0).astype(int)
    A, A_test = hyperplanes.signed_rows(X[:4], y[:4]), hyperplanes.signed_rows(X[4:], y[4:])
    sampled = _sampler_errors(X[:4], y[:4], A_test, chains=4000)
    reference = _rejection_errors(A, A_test, 250_000, seed=1)
    _compare(sampled, reference)


# --- separability -------------------------------------------------------------------------------


def _gordan_separable(A: np.ndarray) -> bool:
    """Independent of max_margin: by Gordan's theorem, {A z > 0} is empty iff some lambda >= 0,
    sum 1, has A^T lambda = 0. An LP feasibility problem on the alternative system."""
    m = A.shape[0]
    eq = np.vstack([A.T, np.ones((1, m))])
    rhs = np.concatenate([np.zeros(A.shape[1]), [1.0]])
    result = linprog(np.zeros(m), A_eq=eq, b_eq=rhs, bounds=[(0, None)] * m, method="highs")
    return result.status == 2  # infeasible alternative: separable


def test_known_separability_answers():
    xor_X, xor_y = np.array([[0.0, 0], [1, 1], [0, 1], [1, 0]]), np.array([0, 0, 1, 1])
    assert not hyperplanes.max_margin(hyperplanes.signed_rows(xor_X, xor_y))[0]
    rng = np.random.default_rng(14)
    X, y = _separable_clusters(rng)
    ok, z = hyperplanes.max_margin(hyperplanes.signed_rows(X, y))
    assert ok and np.all(hyperplanes.signed_rows(X, y) @ z > 0)
    dup_X, dup_y = np.array([[0.0, 1], [2, 3], [0, 1]]), np.array([0, 1, 1])
    assert hyperplanes.has_conflicting_duplicates(dup_X, dup_y)
    assert not hyperplanes.has_conflicting_duplicates(dup_X, np.array([1, 0, 1]))
    assert not hyperplanes.max_margin(hyperplanes.signed_rows(dup_X, dup_y))[0]
    # Logistic regression reports the same verdicts.
    assert not LogisticRegression(FeatureLayout(2)).fit(xor_X, xor_y).separable_
    assert not LogisticRegression(FeatureLayout(2)).fit(dup_X, dup_y).separable_


def test_max_margin_agrees_with_gordan_alternative_on_random_sets():
    rng = np.random.default_rng(15)
    verdicts = []
    for _ in range(150):
        m = int(rng.integers(3, 10))
        X, y = rng.normal(size=(m, 2)), rng.integers(0, 2, m)
        A = hyperplanes.signed_rows(X, y)
        ours = bool(hyperplanes.max_margin(A)[0])
        assert ours == _gordan_separable(A), (X, y)
        verdicts.append(ours)
    assert 10 < sum(verdicts) < 140  # both answers were exercised


def test_sampler_with_a_short_warm_up_still_targets_the_uniform_law():
    """In thin version spaces the warm-up trajectory is cut by its bounce budget and its length
    becomes the chain's fixed trajectory duration. Forcing that (a budget of 3 bounces) on the
    thin 5-D case must leave the law unchanged: only mixing per trajectory is slower."""
    rng = np.random.default_rng(18)
    X = rng.normal(size=(1015, 4))
    y = (X @ [1.0, -1.0, 0.5, 2.0] > 0).astype(int)
    A, A_test = hyperplanes.signed_rows(X[:15], y[:15]), hyperplanes.signed_rows(X[15:], y[15:])
    chains = 4000
    separable, start = hyperplanes.max_margin(A)
    assert separable
    draws = sampler.sample_version_space(
        np.broadcast_to(A, (chains, *A.shape)).copy(),
        np.tile(start, (chains, 1)),
        iterations=12,
        keys=stream_keys(1, 15, range(chains), 1),
        warmup_bounces=3,
    )
    assert np.all(np.einsum("md,sd->sm", A, draws) > 0), "a draw violates a constraint"
    sampled = np.mean(draws @ A_test.T <= 0, axis=1)
    reference = _rejection_errors(A, A_test, 2_000_000, seed=1)
    _compare(sampled, reference)


# --- logistic regression on nearly separated data ----------------------------------------------


def test_a_far_maximum_is_the_vanishing_ridge_fit():
    """Nearly separated data: the MLE exists but is steep and far, the likelihood flat around
    it. The fit is the documented one, the maximum of likelihood - 1e-8 |w'|^2 / 2 with w' the
    weights of the standard basis (x in [0, 1] over the training rows, `logistic.standard_basis`):
    scikit-learn's L2 fit with C = 1e8 (its Newton solver at tol 1e-12) on that basis, mapped
    back, is the reference."""
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(size=400))
    y = (x > 0.5).astype(int)
    edge = int(np.searchsorted(x, 0.5))
    y[edge - 1], y[edge] = 1, 0  # the two points nearest the boundary swapped: overlap, barely
    X = x[:, None]
    ours = LogisticRegression(FeatureLayout(1)).fit(X, y)
    assert not ours.separable_
    low, width = X.min(), X.max() - X.min()
    reference = SkLR(C=1e8, solver="newton-cholesky", tol=1e-12, max_iter=1000)
    reference.fit((X - low) / width, y)
    coef, intercept = (
        reference.coef_[0] / width,
        reference.intercept_[0] - reference.coef_[0, 0] * low / width,
    )
    assert abs(coef[0]) > 300  # a steep, far maximum
    np.testing.assert_allclose(ours.coef_, coef, rtol=1e-6)
    assert ours.intercept_ == pytest.approx(intercept, rel=1e-6)


def test_naive_bayes_sums_refuse_a_label_outside_the_classes():
    """A binary model handed a third class (a K-class config's labels) must fail, not write
    past its arrays (it once aborted the process with corrupted memory)."""
    from genvdis.models.naive_bayes import class_sums

    Z = np.arange(12, dtype=float).reshape(6, 2)
    idx = np.array([[0, 1, 2, 3, 4, 5]])
    counts, *_ = class_sums(Z, np.array([0, 1, 0, 1, 0, 1]), idx, 2)
    assert counts.tolist() == [[3.0, 3.0]]
    for labels in ([0, 1, 2, 1, 0, 1], [0, 1, -1, 1, 0, 1]):
        with pytest.raises(ValueError, match="outside 0..K-1"):
            class_sums(Z, np.array(labels), idx, 2)
    counts, *_ = class_sums(Z, np.array([0, 1, 2, 1, 0, 2]), idx, 2, 3)
    assert counts.tolist() == [[2.0, 2.0, 2.0]]


def test_naive_bayes_sums_from_the_one_hot_nonzeros_are_the_same_bits():
    """Where the splits read more rows than the data has, the one-hot sums come from the
    data's nonzeros (CSR); they must equal the row-by-row pass bit for bit, continuous
    columns alongside."""
    from genvdis.models import naive_bayes as models

    rng = np.random.default_rng(3)
    layout = FeatureLayout(2, (6, 5, 8))
    X = np.column_stack(
        [rng.normal(size=(200, 2))] + [rng.integers(0, k, 200) for k in layout.levels]
    )
    Z, y = layout.onehot(X), rng.integers(0, 3, 200)
    idx = np.array([rng.choice(200, size=120, replace=False) for _ in range(8)])
    assert idx.size >= 2 * len(Z)  # the CSR pass
    empty = np.empty(0, dtype=np.int64)
    by_rows = models._class_sums(Z, y, idx, 2, 3, empty, empty, np.empty(0))
    for got, want in zip(models.class_sums(Z, y, idx, 2, 3), by_rows, strict=True):
        assert np.array_equal(got, want)
    assert by_rows[1][:, :, 2:].sum() == idx.size * len(layout.levels)


# --- the numbers a run writes (the Python API, errors.csv), recomputed from the models' definitions
# on the same splits: smoothing, shared variances, discretizing, missing values, coding, ties


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
    `frame`, written as data.csv; the config's models' rows (the majority-class baseline every
    run adds is checked in tests/models/test_majority.py)."""
    frame.to_csv(tmp_path / "data.csv", index=False)
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        f"name: {name}\n"
        f"dataset: {{path: {tmp_path / 'data.csv'}, target: label, kinds: {kinds}}}\n" + body
    )
    genvdis.run(config, out=tmp_path / "out")
    errors = pd.read_csv(tmp_path / "out" / name / "errors.csv")
    return errors[errors["model"] != "majority"].reset_index(drop=True)


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
    (docs/datasets.md), so `continuous: none` and `rescale` should count the same errors. So
    the variance floor is relative to each attribute: var_smoothing x the largest variance
    added to every attribute's would, in raw units (an attribute in the 1e5s, as adult's
    fnlwgt), swamp the variance of an attribute in small units."""
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
