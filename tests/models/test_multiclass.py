"""K-class targets: each model against an independent computation (scikit-learn where it fits
the same model, a closed form or scipy where it does not), the separability decisions against
an LP written with scipy alone, K = 2 against the binary models, the argmax scoring and the
stratified K-class splits' invariants; and K-class runs end to end (error counts against
independent fits, refused class definitions).

Data are small and synthetic; X = [continuous columns | integer codes of discrete columns].
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.optimize import linprog, minimize
from scipy.special import logsumexp
from sklearn.covariance import EmpiricalCovariance
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.naive_bayes import CategoricalNB, GaussianNB
from typer.testing import CliRunner

import genvdis
from genvdis.cli import app
from genvdis.config.experiment import load_config
from genvdis.data.preprocessing import FeatureLayout, prepare
from genvdis.data.sources import load_data
from genvdis.errors import UserError
from genvdis.experiment import scoring as multiclass
from genvdis.experiment import splits
from genvdis.experiment.scoring import _count_argmax_errors as count_errors
from genvdis.experiment.splits import draw_split
from genvdis.models.lda import LDA, MultiLDA
from genvdis.models.logistic import _softmax_cg as softmax_cg
from genvdis.models.logistic import softmax
from genvdis.models.logistic.binary import standard_basis
from genvdis.models.logistic.separable import hyperplanes
from genvdis.models.logistic.softmax import (
    MultiLogisticRegression,
    centred,
    certified,
    cg_step,
    constraint_rows,
    design,
    margins,
    newton_softmax,
)
from genvdis.models.logistic_regression import LogisticRegression
from genvdis.models.naive_bayes import MultiNaiveBayes, NaiveBayes
from tests.clichecks import assert_user_error, raises_user_error

LEVELS = (3, 4, 2)


def _discrete(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.column_stack([rng.integers(0, k, n) for k in LEVELS]).astype(float)


def _softmax_labels(rng: np.random.Generator, scores: np.ndarray) -> np.ndarray:
    """Labels drawn from a softmax model on `scores` (n, K): overlapping classes."""
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return (rng.uniform(size=(len(p), 1)) > np.cumsum(p, axis=1)).sum(axis=1)


def _three_class(seed: int = 0, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    scores = np.column_stack([np.zeros(n), 1.5 * X[:, 0], X[:, 1] - X[:, 2]])
    return X, _softmax_labels(rng, scores)


# --- naive Bayes ---------------------------------------------------------------------------------


def test_discrete_naive_bayes_matches_categorical_nb():
    """Laplace l on every conditional (min_categories: an unseen level still counts) and on
    the class prior: class c's score against class 0 is scikit-learn's joint log-likelihood
    difference, for 4 classes."""
    rng = np.random.default_rng(1)
    X = _discrete(rng, 200)
    y = _softmax_labels(rng, np.column_stack([X[:, 0], X[:, 1], -X[:, 0], X[:, 2]]))
    train = X[:, 1] != 3  # level 3 of attribute 1 is only seen at test time
    Xtr, ytr = X[train], y[train]
    counts = np.bincount(ytr, minlength=4)
    assert counts.min() > 0 and (~train).sum() > 5
    ours = MultiNaiveBayes(FeatureLayout(0, LEVELS), laplace=0.5).fit(Xtr, ytr)
    prior = (counts + 0.5) / (len(ytr) + 4 * 0.5)
    ref = CategoricalNB(alpha=0.5, min_categories=np.array(LEVELS), class_prior=prior)
    joint = ref.fit(Xtr.astype(int), ytr).predict_joint_log_proba(X.astype(int))
    scores = ours.decision_function(X)
    np.testing.assert_allclose(scores, joint - joint[:, :1], atol=1e-10)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X.astype(int)))


def _pooled_gaussian_scores(Xtr: np.ndarray, ytr: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Shared-variance Gaussian naive Bayes by hand: log prior + sum of Gaussian log
    densities with class means and the variance pooled over classes (ML)."""
    K = ytr.max() + 1
    means = np.array([Xtr[ytr == c].mean(axis=0) for c in range(K)])
    var = ((Xtr - means[ytr]) ** 2).mean(axis=0)
    log_prior = np.log(np.bincount(ytr) / len(ytr))
    log_density = -((X[:, None, :] - means[None]) ** 2) / (2 * var) - 0.5 * np.log(2 * np.pi * var)
    joint = log_prior + log_density.sum(axis=2)
    return joint - joint[:, :1]


def test_gaussian_naive_bayes_matches_its_closed_form():
    X, y = _three_class(2)
    ours = MultiNaiveBayes(FeatureLayout(3), var_smoothing=0.0).fit(X[:150], y[:150])
    expected = _pooled_gaussian_scores(X[:150], y[:150], X)
    np.testing.assert_allclose(ours.decision_function(X), expected, rtol=1e-9, atol=1e-9)


def test_gaussian_naive_bayes_is_gaussiannb_when_class_variances_agree():
    """Where every class has the same per-feature variance (each class is a shifted copy of
    one point cloud) scikit-learn's class-specific variances are the pooled one."""
    rng = np.random.default_rng(3)
    cloud = rng.normal(size=(40, 4))
    shifts = rng.normal(scale=1.5, size=(3, 4))
    X = np.vstack([cloud + shift for shift in shifts])
    y = np.repeat(np.arange(3), 40)
    ours = MultiNaiveBayes(FeatureLayout(4), var_smoothing=0.0).fit(X, y)
    ref = GaussianNB(var_smoothing=0.0).fit(X, y)
    Xtest = rng.normal(scale=2.0, size=(200, 4))
    joint = ref.predict_joint_log_proba(Xtest)
    np.testing.assert_allclose(ours.decision_function(Xtest), joint - joint[:, :1], atol=1e-8)
    np.testing.assert_array_equal(ours.predict(Xtest), ref.predict(Xtest))


# --- LDA -----------------------------------------------------------------------------------------


class _Regularised(EmpiricalCovariance):
    """The ML covariance plus epsilon u_j^2 on the diagonal, u_j each feature's unit
    (genvdis's LDA regularisation: epsilon relative to each feature)."""

    def __init__(self, epsilon: float = 0.0, units: np.ndarray | None = None) -> None:
        super().__init__()
        self.epsilon, self.units = epsilon, units

    def fit(self, X, y=None):
        super().fit(X)
        self.covariance_ = self.covariance_ + self.epsilon * np.diag(self.units**2)
        return self


def _lda_units(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each feature's unit in genvdis's LDA: its largest distance from its class's mean."""
    means = np.stack([X[y == c].mean(axis=0) for c in range(y.max() + 1)])
    return np.abs(X - means[y]).max(axis=0)


@pytest.mark.parametrize("epsilon", [0.0, 0.3])
def test_lda_matches_scikit_learn(epsilon):
    """sklearn weights each class's covariance by its prior: with epsilon u_j^2 added to each
    it is the pooled covariance plus epsilon diag(u^2), genvdis's."""
    X, y = _three_class(4)
    units = _lda_units(X[:120], y[:120])
    estimator = _Regularised(epsilon, units)
    ours = MultiLDA(FeatureLayout(3), epsilon=epsilon).fit(X[:120], y[:120])
    ref = SkLDA(solver="lsqr", covariance_estimator=estimator).fit(X[:120], y[:120])
    decision = ref.decision_function(X)
    np.testing.assert_allclose(ours.decision_function(X), decision - decision[:, :1], atol=1e-9)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def test_lda_with_a_singular_covariance_names_epsilon():
    X = np.column_stack([np.arange(9.0) % 3, np.arange(9.0) % 3])  # collinear
    with raises_user_error("models: lda", "epsilon"):
        MultiLDA(FeatureLayout(2), epsilon=0.0).fit(X, np.arange(9) % 3)


# --- multinomial logistic regression -------------------------------------------------------------


def test_softmax_matches_unpenalised_multinomial_scikit_learn():
    """On non-separable training sets, the maximum-likelihood fit: sklearn's coefficients
    differenced against class 0 (its parametrisation has one free shift) to ~1e-5, and the
    same predictions."""
    X, y = _three_class(5, 400)
    rng = np.random.default_rng(5)
    idx = np.sort(np.stack([rng.choice(400, 150, replace=False) for _ in range(6)]), axis=1)
    model = MultiLogisticRegression(FeatureLayout(3), separable="max_margin")
    fit = model.fit_batch(X, y, idx)
    assert not fit.separable.any()
    for s in range(len(idx)):
        ref = SkLR(C=np.inf, tol=1e-12, max_iter=10_000).fit(X[idx[s]], y[idx[s]])
        np.testing.assert_allclose(fit.coef[s], ref.coef_ - ref.coef_[0], atol=1e-5)
        np.testing.assert_allclose(fit.intercept[s], ref.intercept_ - ref.intercept_[0], atol=1e-5)
        scores = X @ fit.coef[s].T + fit.intercept[s]
        np.testing.assert_array_equal(np.argmax(scores, axis=1), ref.predict(X))


def test_ridge_minimises_its_objective():
    """separable: ridge on a separable set: the minimiser of the NLL + |v|^2 / (2C) on the
    free classes' weights (not the intercepts), found here by scipy's BFGS."""
    X = np.random.default_rng(6).normal(size=(20, 3))
    y = np.argmax(np.column_stack([np.zeros(20), X[:, 0], X[:, 1] - X[:, 2]]), axis=1)  # separable
    C = 0.7
    fit = MultiLogisticRegression(FeatureLayout(3), separable="ridge", C=C).fit(X, y)
    assert fit.separable_

    def objective(flat: np.ndarray) -> float:
        V = flat.reshape(2, 4)
        scores = np.column_stack([np.zeros(len(y)), X @ V[:, :3].T + V[:, 3]])
        nll = (np.log(np.exp(scores).sum(axis=1)) - scores[np.arange(len(y)), y]).sum()
        return nll + (V[:, :3] ** 2).sum() / (2 * C)

    best = minimize(objective, np.zeros(8), method="BFGS", options={"gtol": 1e-10}).x
    ours = np.column_stack([fit.coef_[1:], fit.intercept_[1:]]).ravel()
    np.testing.assert_allclose(ours, best, atol=1e-5)


def _lp_margin(X: np.ndarray, y: np.ndarray, K: int) -> float:
    """The multi-class margin written out with scipy alone: max t such that
    (w_y - w_k) . (x, 1) / 2 >= t for every row and every other class k, |W| <= 1."""
    X1 = np.column_stack([X, np.ones(len(X))])
    d = X1.shape[1]
    rows = []
    for x, c in zip(X1, y, strict=True):
        for k in range(K):
            if k != c:
                a = np.zeros((K, d))
                a[c], a[k] = x / 2, -x / 2
                rows.append(np.append(-a.ravel(), 1.0))
    objective = np.zeros(K * d + 1)
    objective[-1] = -1.0
    bounds = [(-1, 1)] * (K * d) + [(0, 1)]
    return -linprog(objective, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), bounds=bounds).fun


def test_separable_toy_set_is_detected_and_an_overlapping_one_is_not():
    """Three corners of a triangle (each class its own corner region) are separable: both
    policies then classify every training row correctly. One more row, a class-1 point on a
    class-0 point, makes the set inseparable."""
    X = np.array([[0, 0], [1, 0], [0, 1], [0.1, 0.1], [0.8, 0.1], [0.1, 0.8]])
    y = np.array([0, 1, 2, 0, 1, 2])
    for policy in ("max_margin", "ridge"):
        fit = MultiLogisticRegression(FeatureLayout(2), separable=policy).fit(X, y)
        assert fit.separable_
        np.testing.assert_array_equal(fit.predict(X), y)
    assert _lp_margin(X, y, 3) > 1e-3
    X2, y2 = np.vstack([X, [0.0, 0.0]]), np.append(y, 1)
    assert (
        not MultiLogisticRegression(FeatureLayout(2), separable="max_margin").fit(X2, y2).separable_
    )
    assert _lp_margin(X2, y2, 3) < 1e-9


def _near_the_boundary(seed: int = 7) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """Small sets near the separable boundary (m rows in 3-D, 3 classes) and whether the
    independent LP finds them separable (margins clear of the 1e-7 threshold on both sides)."""
    rng = np.random.default_rng(seed)
    sets = []
    for _trial in range(40):
        m = int(rng.integers(6, 30))
        X = rng.normal(size=(m, 3))
        y = np.concatenate([np.arange(3), rng.integers(0, 3, m - 3)])
        truth = _lp_margin(X, y, 3)
        if not 1e-9 < truth < 1e-5:
            sets.append((X, y, truth > 1e-7))
    assert len(sets) > 30 and 5 < sum(s[2] for s in sets) < len(sets) - 5
    return sets


def test_separability_decisions_agree_with_the_lp_on_random_sets():
    """Every decision on sets near the boundary is the independent LP's."""
    model = MultiLogisticRegression(FeatureLayout(3), separable="max_margin")
    for X, y, separable in _near_the_boundary():
        assert model.fit(X, y).separable_ == separable


def _ridge_problems(seed: int, S: int, m: int, K: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """S training sets of m rows in 5-D, K overlapping classes (each present): design rows
    (S, m, 6) and labels (S, m)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(S * m, 5))
    y = _softmax_labels(rng, np.column_stack([np.zeros(S * m), 2 * Z[:, : K - 1]]))
    y[np.arange(0, S * m, m)[:, None] + np.arange(K)] = np.arange(K)
    return design(Z, np.arange(S * m).reshape(S, m)), y.reshape(S, m)


def test_conjugate_gradient_steps_reach_the_exact_steps_ridge_fit():
    """The ridge fit by Newton with preconditioned-CG steps is the one with factorised
    Hessians to 1e-10 (both converge to the unique minimiser), over strengths from weak to
    strong and sets from under- to over-determined."""
    for seed, m, strength in [(0, 4, 1.0), (1, 30, 1.0), (2, 200, 1.0), (3, 50, 1e-3), (4, 50, 30)]:
        X, y = _ridge_problems(seed, 5, m)
        exact = newton_softmax(X, y, 4, strength)[0]
        cg = newton_softmax(X, y, 4, strength, solver=cg_step)[0]
        np.testing.assert_allclose(cg, exact, rtol=0, atol=1e-10 * (1 + np.abs(exact).max()))


def test_conjugate_gradient_fit_does_not_depend_on_the_batch():
    """Each problem's CG stops on its own: a split's ridge fit is bit for bit the same fitted
    alone or among others (so results never depend on the group size or the workers)."""
    X, y = _ridge_problems(5, 6, 40)
    together = newton_softmax(X, y, 4, 1.0, solver=cg_step)[0]
    for s in (0, 3, 5):
        alone = newton_softmax(X[s : s + 1], y[s : s + 1], 4, 1.0, solver=cg_step)[0]
        np.testing.assert_array_equal(alone[0], together[s])


@pytest.mark.parametrize("solver", [cg_step, softmax.exact_step])
def test_each_problems_own_ridge_is_its_fit_alone(solver):
    """Ridge strengths per split (S, d - 1), as `_ridge_first` passes every split's own: each
    split's fit is bit for bit its fit alone with its strength, also where the problems stop
    at different iterations (strengths from weak to strong, some features badly scaled)."""
    X, y = _ridge_problems(7, 6, 40)
    X[::3, :, :-1] *= 10
    strength = np.random.default_rng(7).uniform(1e-3, 30, (6, 5))
    together = newton_softmax(X, y, 4, strength, solver=solver)[0]
    for s in range(6):
        alone = newton_softmax(X[s : s + 1], y[s : s + 1], 4, strength[s], solver=solver)[0]
        np.testing.assert_array_equal(alone[0], together[s])


def test_conjugate_gradient_packs_finished_problems_without_changing_a_step(monkeypatch):
    """Problems that need few CG iterations beside ones that need many: the finished ones are
    packed out (fewer problems iterate) and every step is bit for bit the one computed alone,
    and solves its Newton system to CG's goal (gradients ~1e-4: the floored one, 1e-6)."""
    X, y = _ridge_problems(6, 8, 60)
    X[::2, :, :-1] *= 20  # badly scaled features: many more iterations
    P = np.full(y.shape + (3,), 0.25)
    grad = 1e-4 * np.random.default_rng(6).normal(size=(8, 3, 6))
    penalty = np.array([1.0] * 5 + [0.0])
    sizes, pack = [], softmax_cg._Conjugate.pack

    def recording(self, live, out):
        sizes.append((live.size, int(live.sum())))
        return pack(self, live, out)

    monkeypatch.setattr(softmax_cg._Conjugate, "pack", recording)
    together = cg_step(X, P, penalty, grad)
    assert any(kept < softmax_cg._Conjugate.PACK_FRACTION * size for size, kept in sizes)
    for s in range(8):
        alone = cg_step(X[s : s + 1], P[s : s + 1], penalty, grad[s : s + 1])
        np.testing.assert_array_equal(alone[0], together[s])
        H = softmax._hessian(X[s : s + 1], P[s : s + 1], penalty)[0]
        residual = np.linalg.norm(H @ together[s].ravel() - grad[s].ravel())
        assert residual <= softmax_cg.FORCING_FLOOR * np.linalg.norm(grad[s]) * 1.01


def test_preconditioner_is_the_inverse_or_where_singular_the_pseudo_inverse():
    """Each split's block X^T diag(w) X + ridge inverted by its Cholesky factor, as LU does;
    a split whose weights w are all 0 (no ridge on the intercept: singular) gets the
    pseudo-inverse, and the others in its batch keep their inverses. The per-class scales are
    the ratios of the classes' weight totals, 1 where those are all 0."""
    X, _ = _ridge_problems(7, 3, 20)
    P = np.random.default_rng(7).dirichlet(np.ones(4), size=(3, 20))[:, :, 1:]
    P[1] = 0.0
    penalty = np.array([0.5] * 5 + [0.0])
    inverse = softmax_cg._preconditioner(X, P, penalty)
    for s in range(3):
        w = (P[s] * (1 - P[s])).mean(axis=1)
        block = X[s].T @ (w[:, None] * X[s]) + np.diag(penalty)
        expected = np.linalg.pinv(block) if s == 1 else np.linalg.inv(block)
        np.testing.assert_allclose(inverse[s], expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(inverse[s], inverse[s].T)
    scales = softmax_cg._class_scales(P)[:, :, 0]  # 1 / s_c: positive and finite, so SPD
    assert np.isfinite(scales).all() and (scales > 0).all() and (scales[1] == 1).all()
    totals = (P[0] * (1 - P[0])).sum(axis=0)
    np.testing.assert_allclose(1 / scales[0], totals / totals.mean(), rtol=1e-14)


def test_ridge_rule_decides_separability_as_the_lp_and_keeps_the_likelihood_elsewhere():
    """separable: ridge fits the ridge first and certifies from it: the decisions are still
    the independent LP's, also where the ridge fit (small C) misclassifies a training row of
    a separable set (that path is exercised); non-separable sets get the maximum-likelihood
    fit, bit for bit max_margin's, and separable ones the ridge fit."""
    ridge = MultiLogisticRegression(FeatureLayout(3), separable="ridge", C=0.05)
    plain = MultiLogisticRegression(FeatureLayout(3), separable="max_margin")
    missed = 0
    for X, y, separable in _near_the_boundary():
        fit = ridge.fit(X, y)
        assert fit.separable_ == separable
        V = np.concatenate([fit.coef_, fit.intercept_[:, None]], axis=1)[None, 1:]
        if separable:
            missed += not certified(design(X, np.arange(len(y))[None]), y[None], V)[0]
        else:
            other = plain.fit(X, y)
            np.testing.assert_array_equal(fit.coef_, other.coef_)
            np.testing.assert_array_equal(fit.intercept_, other.intercept_)
    assert missed > 0


def _exact_margin(X: np.ndarray, y: np.ndarray, W: np.ndarray) -> Fraction:
    """min over rows i and classes k != y_i of (W_y_i - W_k) . x_i / 2 / |W|_inf, exactly."""
    gaps = []
    for x, c in zip(X, y, strict=True):
        scores = [sum(Fraction(a) * Fraction(b) for a, b in zip(x, w, strict=True)) for w in W]
        gaps += [scores[c] - score for k, score in enumerate(scores) if k != c]
    return min(gaps) / 2 / max(Fraction(abs(w)) for w in W.ravel())


def test_margins_from_the_scores_bound_the_exact_margin_as_the_rows_do():
    """`margins` (from the scores X W^T) replaces `margin_of` on the constraint rows in the
    decision: it must stay a lower bound on the exact margin (computed in rationals here),
    also where the margin is 0 (a row repeated with another label) or tiny, and agree with
    the rows' bound to within the rounding allowance."""
    rng = np.random.default_rng(11)
    positive = 0
    for trial in range(24):
        m, D, K = int(rng.integers(3, 25)), int(rng.integers(1, 7)), int(rng.integers(2, 5))
        Z = rng.uniform(size=(m, D)) * 10.0 ** rng.integers(-3, 4)
        y = rng.integers(0, K, size=(2, m))
        V = rng.normal(size=(2, K - 1, D + 1)) * 10.0 ** rng.integers(-4, 5)
        if trial % 3 == 0:  # labels that V's weights separate (a positive margin)
            V[1] = V[0]
            X0 = design(Z, np.arange(m)[None])[0]
            y[:] = np.argmax(X0 @ centred(V[0]).T, axis=1)
        if trial % 3 == 1:
            Z[1], y[:, 1] = Z[0], (y[:, 0] + 1) % K  # the same point in two classes
        X = design(Z, np.tile(np.arange(m), (2, 1)))
        bounds = margins(X, y, V)
        for s in range(2):
            W = centred(V[s])
            exact = _exact_margin(X[s], y[s], W)
            rows = hyperplanes.margin_of(constraint_rows(X[s], y[s], K), W.ravel())
            assert Fraction(bounds[s]) <= exact and Fraction(float(rows)) <= exact
            allowance = 1e-12 * np.abs(X[s]).sum(axis=1).max()
            assert abs(bounds[s] - rows) <= allowance
            positive += bounds[s] > 0
    assert positive >= 8


def test_constraint_rows_give_the_binary_margin_for_two_classes():
    """For K = 2 the rows are +-(x, 1)/2 on (w_0, w_1): with W = (-w/2, w/2) they give
    y_signed (x, 1) . w / 2 ... = the binary constraint a_i . w scaled by 1/2 per side."""
    rng = np.random.default_rng(8)
    X1 = np.column_stack([rng.normal(size=(5, 2)), np.ones(5)])
    y = np.array([0, 1, 1, 0, 1])
    w = rng.normal(size=3)
    A = constraint_rows(X1, y, 2)
    signed = (2 * y - 1)[:, None] * X1
    np.testing.assert_allclose(A @ np.concatenate([-w / 2, w / 2]), signed @ w / 2)


def test_sample_is_refused_for_more_than_two_classes():
    X, y = _three_class(9, 30)
    with pytest.raises(
        UserError, match=r"^models: logistic_regression: separable: sample .*binary"
    ):
        MultiLogisticRegression(FeatureLayout(3)).fit(X, y)


# --- K = 2: the binary models ------------------------------------------------------------------


def _binary_mixed(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray, FeatureLayout]:
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.uniform(size=(n, 2)), _discrete(rng, n)])
    score = 3 * X[:, 0] - 2 * X[:, 1] + X[:, 2] - 1
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-score))).astype(np.int64)
    return X, y, FeatureLayout(2, LEVELS)


@pytest.mark.parametrize(
    "binary, multi, params",
    [
        (NaiveBayes, MultiNaiveBayes, {}),
        (LDA, MultiLDA, {}),
        (LogisticRegression, MultiLogisticRegression, {}),
        (LogisticRegression, MultiLogisticRegression, {"separable": "ridge", "C": 0.5}),
    ],
)
@pytest.mark.parametrize("m", [12, 150])
def test_two_classes_predict_as_the_binary_model(binary, multi, params, m):
    """A K-class fit on a binary target has class 0's score 0 and class 1's the binary
    log-odds (m = 12 is separable: the ridge fit is the binary one too), so it predicts the
    same class on every row and makes the same separability decision."""
    X, y, layout = _binary_mixed(10)
    ones, zeros = np.flatnonzero(y == 1)[: m // 2], np.flatnonzero(y == 0)[: m - m // 2]
    rows = np.sort(np.concatenate([ones, zeros]))
    if m == 12 and binary is LogisticRegression and not params:
        params = {"separable": "max_margin"}
    ours = multi(layout, **params).fit(X[rows], y[rows])
    ref = binary(layout, **params).fit(X[rows], y[rows])
    assert ours.separable_ == ref.separable_ == (m == 12 and binary is LogisticRegression)
    assert not ours.coef_[0].any() and ours.intercept_[0] == 0
    if params.get("separable") != "max_margin":
        np.testing.assert_allclose(ours.coef_[1], ref.coef_, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    else:  # LP optima need not be unique (on this set two are): the same maximum margin
        Z = ref.encode(X[rows])
        standard, shift, scale = standard_basis(Z, np.arange(m)[None, :])
        sign = 2 * y[rows] - 1
        margins = []
        for w, b in ((ours.coef_[1], ours.intercept_[1]), (ref.coef_, ref.intercept_)):
            z = np.append(w * scale[0], b + w @ shift[0])  # in the standard basis
            margins.append((sign * (standard @ z[:-1] + z[-1])).min() / np.abs(z).max())
        assert margins[0] > 0.01 and margins[0] == pytest.approx(margins[1], rel=1e-9)


# --- scoring -------------------------------------------------------------------------------------


def test_count_errors_is_the_argmax_error_with_ties_to_the_lowest_class():
    """Against a direct loop; a classifier with all scores equal predicts class 0 everywhere,
    one with classes 1 and 2 tied on top predicts 1."""
    rng = np.random.default_rng(11)
    n, K, D = 50, 3, 2
    Z1 = np.column_stack([rng.normal(size=(n, D)), np.ones(n)])
    y = rng.integers(0, K, n)
    train = np.sort(np.stack([rng.choice(n, 10, replace=False) for _ in range(2)]), axis=1)
    coef = rng.normal(size=(6, K, D + 1))
    coef[4] = 0.0  # every score 0: class 0
    coef[5] = 0.0
    coef[5, 1:, -1] = 1.0  # classes 1 and 2 tied at 1: class 1
    errors = count_errors(Z1, y, coef, train)
    for l in range(6):  # noqa: E741
        test = np.setdiff1d(np.arange(n), train[l % 2])
        predicted = np.argmax(Z1[test] @ coef[l].T, axis=1)
        assert errors[l] == (predicted != y[test]).sum()
    test4, test5 = (np.setdiff1d(np.arange(n), train[s]) for s in (0, 1))
    assert errors[4] == (y[test4] != 0).sum() and errors[5] == (y[test5] != 1).sum()
    mask = np.zeros((2, n), dtype=bool)
    mask[:, :7] = True
    expected = [(np.argmax(Z1[:7] @ c.T, axis=1) != y[:7]).sum() for c in coef]
    np.testing.assert_array_equal(count_errors(Z1, y, coef, train, mask), expected)


def test_count_errors_in_chunks_of_rows_counts_as_at_once(monkeypatch):
    """Scores computed a few rows at a time (the masks sliced with them) give the counts of
    the one-pass argmax over every row."""
    rng = np.random.default_rng(12)
    n, K, D, S = 40, 4, 3, 3
    Z1 = np.column_stack([rng.normal(size=(n, D)), np.ones(n)])
    y = rng.integers(0, K, n)
    train = np.sort(np.stack([rng.choice(n, 8, replace=False) for _ in range(S)]), axis=1)
    coef = rng.normal(size=(2 * S, K, D + 1))
    mask = rng.random((S, n)) < 0.5
    expected = [
        ((np.argmax(Z1 @ c.T, axis=1) != y) & mask[k % S]).sum() for k, c in enumerate(coef)
    ]
    monkeypatch.setattr(multiclass, "ARGMAX_BYTES", 8 * 2 * S * K * 7)  # 7 rows a chunk
    np.testing.assert_array_equal(count_errors(Z1, y, coef, train, mask), expected)


def test_count_errors_refuses_weights_that_are_not_finite():
    coef = np.zeros((2, 3, 2))
    coef[1, 2, 0] = np.nan
    with pytest.raises(ArithmeticError, match=r"classifiers \[1\]"):
        count_errors(np.ones((4, 2)), np.zeros(4, dtype=int), coef, np.zeros((1, 1), dtype=int))


# --- splits --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "m, sizes", [(10, (50, 30, 20)), (4, (1000, 2, 2, 2)), (7, (3, 3, 1)), (30, (10, 10, 10))]
)
def test_stratified_counts_are_proportional_with_one_of_each(m, sizes):
    counts = splits._training_counts(m, sizes)
    sizes = np.array(sizes)
    assert counts.sum() == m and (counts >= 1).all() and (counts <= sizes).all()
    quota = m * sizes / sizes.sum()
    free = (counts > 1) & (counts < sizes)  # not held at a bound
    assert (np.abs(counts - quota)[free] < 1).all()


def test_stratified_counts_refuse_an_m_below_the_class_count():
    with raises_user_error("sizes", "m=2", "3"):
        splits._training_counts(2, (5, 5, 5))


def _labels(sizes: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(len(sizes)), sizes))


@pytest.mark.parametrize("policy", ["stratified", "random"])
def test_k_class_splits_keep_every_class_and_do_not_depend_on_the_block(policy):
    y = _labels((60, 25, 10, 5))
    train = splits.draw_training_block(y, 8, 3, range(40), policy)
    later = splits.draw_training_block(y, 8, 3, range(20, 40), policy)
    np.testing.assert_array_equal(train[20:], later)
    assert (np.diff(train, axis=1) > 0).all()  # sorted, distinct
    for row in train:
        counts = np.bincount(y[row], minlength=4)
        assert (counts >= 1).all()
        if policy == "stratified":
            np.testing.assert_array_equal(counts, splits._training_counts(8, (60, 25, 10, 5)))


def test_k_class_fixed_test_sets_are_disjoint_from_training():
    y = _labels((30, 20, 10))
    for split in range(10):
        train, test = splits.draw_split(y, 9, seed=1, split=split, test=15)
        assert len(test) == 15 and not set(train) & set(test)
        assert (np.bincount(y[train], minlength=3) >= 1).all()


def test_two_class_draws_are_the_binary_splits_of_version_0_4():
    """The K-class kernel draws binary splits as genvdis 0.4 did (its binary-only kernel gave
    this digest): binary results stay byte-identical."""
    y = np.random.default_rng(2).permutation(np.repeat([0, 1], [70, 30]))
    digest = hashlib.sha256()
    for m, test, policy in (
        (10, "rest", "stratified"), (25, 40, "stratified"), (10, "rest", "random"),
        (60, 20, "random"), (90, "rest", "stratified"),
    ):  # fmt: skip
        train, mask = splits.draw_block(y, m, 5, range(3, 40), policy, test)
        digest.update(train.tobytes())
        digest.update(mask.tobytes())
    assert digest.hexdigest() == (
        "2e5fd4acf549015b46c584c789064c141dbd48fe38f82dafc636ba76acb7f071"
    )


def test_two_class_sample_draws_a_separating_hyperplane_from_its_stream():
    """K = 2 with `sample`: the binary version space's sampler, from the split's own stream:
    the draw separates the training rows, and the same stream gives the same draw."""
    X, y, layout = _binary_mixed(12)
    rows = np.sort(np.concatenate([np.flatnonzero(y == 1)[:6], np.flatnonzero(y == 0)[:6]]))
    draws = [
        MultiLogisticRegression(layout).fit(X[rows], y[rows], random_state=seed)
        for seed in (4, 4, 5)
    ]
    assert all(d.separable_ for d in draws)
    for d in draws:
        np.testing.assert_array_equal(d.predict(X[rows]), y[rows])
    np.testing.assert_array_equal(draws[0].coef_, draws[1].coef_)
    assert not np.array_equal(draws[0].coef_, draws[2].coef_)


# --- K-class runs end to end: each split's error counts against independent fits ---


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
    checked = {"naive_bayes": 0, "lda": 0, "logistic_regression": 0, "majority": 0}
    for row in errors.itertuples():
        train, test = draw_split(y, row.m, 0, row.split)
        if row.model == "logistic_regression" and not row.separable:
            continue  # the likelihood's fit: its own tests above
        fit = {"naive_bayes": _naive_bayes, "lda": _lda, "logistic_regression": _ridge,
               "majority": _majority}  # fmt: skip
        scores = fit[row.model](cont, colour, y, train, test)
        assert row.errors == (np.argmax(scores, axis=1) != y[test]).sum(), row
        checked[row.model] += 1
    assert checked["naive_bayes"] == checked["lda"] == checked["majority"] == 16
    assert checked["logistic_regression"] > 4


def _majority(cont, colour, y, train, test) -> np.ndarray:
    """The baseline every run adds: the training set's most frequent class on every test row
    (ties: the lowest), as one score per class."""
    scores = np.zeros((len(test), int(y.max()) + 1))
    scores[:, np.argmax(np.bincount(y[train], minlength=scores.shape[1]))] = 1.0
    return scores


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


# --- K-class targets end to end: a class emptied or alone, runs against direct fits, refusals ---


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


def test_a_class_emptied_by_filtering_is_named(three):
    """'mid' rows all have a missing attribute: dropped, and the class with them."""
    table = pd.read_csv(three.parent / "three.csv")
    table.loc[table.label == "mid", "x1"] = np.nan
    table.to_csv(three.parent / "three.csv", index=False)
    config = load_config(three)
    with raises_user_error("target.classes", "'mid'"):
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
    with raises_user_error("target.classes", "'low'"):
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
