"""Each model against an independent computation on the same data: scikit-learn where it fits
the same model, a closed form by hand where it does not (shared-variance Gaussian naive Bayes),
and rejection sampling for the random separating hyperplane.

Data are small and synthetic; X = [continuous columns | integer codes of discrete columns].
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.base import clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.naive_bayes import CategoricalNB

from genvdis._runtime.streams import stream_keys
from genvdis.config.experiment import parse_config
from genvdis.data.preprocessing import FeatureLayout
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
