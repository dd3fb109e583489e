"""The batched Newton solver (`genvdis.newton`) on its own: its three design layouts agree, its
fits are the likelihood's stationary points with the margin bound as defined, its stop rules
mean what they say, and grouping problems changes no bit.

Data are small and synthetic (noisy labels: the maximum likelihood exists)."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis import newton
from genvdis.newton import Gathered, Masked, Sparse, newton_logistic


def _problems(seed: int, n: int, coef: list[float], S: int, m: int, zero_column: bool = False):
    """Data X (n, d) with an intercept column last (and a column of zeros before it), labels
    drawn from a logistic model with coefficients coef on the uniform columns, and S training
    sets idx (S, m) with their 0/1 masks (S, n)."""
    rng = np.random.default_rng(seed)
    U = rng.uniform(size=(n, len(coef)))
    columns = [U, np.zeros((n, 1))] if zero_column else [U]
    X = np.column_stack([*columns, np.ones(n)])
    score = U @ coef - 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-score))).astype(np.int64)
    idx = np.stack([np.sort(rng.choice(n, m, replace=False)) for _ in range(S)])
    mask = np.zeros((S, n))
    mask[np.arange(S)[:, None], idx] = 1.0
    return X, y, idx, mask


def test_masked_sparse_and_gathered_designs_give_the_same_fits():
    """The three ways of laying out S training sets (rows copied out, all rows weighted 0/1,
    row indices into sparse data) are one solver: same coefficients, same separability."""
    X, y, idx, mask = _problems(11, 90, [3.0, -2.0, 1.0], S=7, m=40)
    penalty = np.zeros(4)
    gathered = newton_logistic(
        Gathered(X[idx], y[idx].astype(float)), penalty, stop_if_separating=True
    )
    masked = newton_logistic(Masked(X, y, mask), penalty, stop_if_separating=True)
    X[np.random.default_rng(0).uniform(size=X.shape) < 0.3] = 0.0  # zeros for sparse to skip
    gathered_zeros = newton_logistic(Gathered(X[idx], y[idx].astype(float)), penalty)
    sparse = newton_logistic(
        Sparse(Sparse.from_dense(X), X.shape[1], idx, y[idx].astype(float)), penalty
    )
    np.testing.assert_allclose(masked.beta, gathered.beta, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(masked.separating, gathered.separating)
    np.testing.assert_allclose(sparse.beta, gathered_zeros.beta, rtol=1e-7, atol=1e-9)


def test_singular_hessians_take_the_pseudo_inverse_step_in_every_layout():
    """A feature that is 0 in every row, unpenalised, makes every Hessian exactly singular: the
    compiled gathered step hands those problems to the pseudo-inverse, as the generic (masked)
    path does, and the two agree, with weight 0 on that feature."""
    X, y, idx, mask = _problems(12, 60, [3.0, -2.0], S=4, m=30, zero_column=True)
    penalty = np.zeros(4)
    gathered = newton_logistic(Gathered(X[idx], y[idx].astype(float)), penalty)
    masked = newton_logistic(Masked(X, y, mask), penalty)
    np.testing.assert_allclose(gathered.beta, masked.beta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gathered.margin_bound, masked.margin_bound, rtol=1e-6, atol=1e-12)
    assert np.all(gathered.beta[:, 2] == 0.0)


def test_fits_are_stationary_and_their_margin_bounds_are_as_defined():
    """Each fit zeroes the penalised likelihood's gradient X^T (t - p) - penalty * beta, and
    its margin bound is ||X^T r||_1 / sum |r| at the fit (r = t - p), both computed here in
    plain numpy from the returned coefficients."""
    X, y, idx, _ = _problems(13, 200, [4.0, -3.0, 2.0], S=6, m=80)
    penalty = np.array([0.5, 0.5, 0.5, 0.0])
    fit = newton_logistic(Gathered(X[idx], y[idx].astype(float)), penalty)
    for s, rows in enumerate(idx):
        A, t = X[rows], y[rows]
        r = t - 1 / (1 + np.exp(-(A @ fit.beta[s])))
        gradient = A.T @ r - penalty * fit.beta[s]
        np.testing.assert_allclose(gradient, 0.0, atol=1e-8)
        bound = np.abs(A.T @ r).sum() / np.abs(r).sum()
        assert fit.margin_bound[s] == pytest.approx(bound, rel=1e-6, abs=1e-12)
    assert not fit.separating.any()


def test_stopping_unseparated_problems_after_k_iterations_is_k_iterations():
    """`stop_unseparated_after=k` stops a problem whose k-th iterate does not separate its
    set exactly where `max_iter=k` does: same iterate, bit for bit."""
    X, y, idx, _ = _problems(14, 150, [3.0, -2.0], S=5, m=100)
    design, penalty = Gathered(X[idx], y[idx].astype(float)), np.zeros(3)
    for k in (1, 2, 3):
        early = newton_logistic(design, penalty, stop_unseparated_after=k)
        capped = newton_logistic(design, penalty, max_iter=k)
        np.testing.assert_array_equal(early.beta, capped.beta)
    converged = newton_logistic(design, penalty)
    assert not np.array_equal(converged.beta, newton_logistic(design, penalty, max_iter=1).beta)


def test_solving_in_groups_changes_no_bit(monkeypatch):
    """Gathered problems are solved in groups sized to stay in cache; problems are
    independent, so groups of one give the very bits one group gives."""
    X, y, idx, _ = _problems(15, 120, [3.0, -2.0, 1.0], S=9, m=50)
    design, penalty = Gathered(X[idx], y[idx].astype(float)), np.full(4, 1e-8)
    whole = newton_logistic(design, penalty, stop_if_separating=True)
    monkeypatch.setattr(newton, "NEWTON_BYTES", 8 * 50 * 4)  # one problem a group
    grouped = newton_logistic(design, penalty, stop_if_separating=True)
    for field in ("beta", "separating", "margin_bound"):
        np.testing.assert_array_equal(getattr(grouped, field), getattr(whole, field))
