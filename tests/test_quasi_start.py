"""Newton's start on one-hot training sets with pure levels (`genvdis.quasi_start`): the
ridge's stopping point of a pure level, which weights the start moves, that the fit from it is
the same minimum as from 0 in fewer iterations, that separable sets are fitted from 0 as
before, and that the compiled CSR builder gives scipy's arrays."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array

from genvdis import newton, quasi_start
from genvdis.layouts import Sparse
from genvdis.logistic import TINY_RIDGE, LogisticRegression, _design, _Shared
from genvdis.newton import newton_logistic
from genvdis.preprocessing import FeatureLayout

LAYOUT = FeatureLayout(n_continuous=0, levels=(3, 4, 2))  # drop_first: columns 0-1, 2-4, 5


def _codes_data(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference-coded one-hot rows of LAYOUT's three attributes with noisy labels, in which
    level 2 of the first attribute (column 1) is positive-only and the reference level of the
    second (no column of 2-4) negative-only."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in LAYOUT.levels])
    y = (rng.uniform(size=n) < 0.5).astype(np.int64)
    y[codes[:, 0] == 2] = 1
    y[codes[:, 1] == 0] = 0
    y[(codes[:, 0] == 2) & (codes[:, 1] == 0)] = 1
    codes[(codes[:, 0] == 2) & (codes[:, 1] == 0), 1] = 1  # no row both: a pure level each
    return LAYOUT.onehot(codes, reference=True), y


def _sparse(Z: np.ndarray) -> _Shared:
    """The sparse layout's shared data (LAYOUT's 7 columns are below the width that picks it)."""
    return _Shared(sparse=Sparse.from_dense(Z, ones=True))


def test_the_ridge_stops_a_pure_level_where_its_loss_decay_meets_the_ridge():
    """t e^t = n / lambda: the minimiser of n log(1 + e^-t) + lambda t^2 / 2 up to e^-t
    against 1 (~1e-7 relative at t ~ 16)."""
    for n in (1.0, 7.0, 300.0):
        t = quasi_start._ridge_stop(n, TINY_RIDGE)
        assert abs(t * np.exp(t) * TINY_RIDGE / n - 1) < 1e-12
        slope = -n / (1 + np.exp(t)) + TINY_RIDGE * t
        assert abs(slope) < 1e-6 * TINY_RIDGE * t


def test_the_start_moves_the_pure_levels_rows_only():
    """Column 1 (positive-only) starts at +t(n); the second attribute's reference level
    (negative-only) moves the intercept by -t and that attribute's columns by +t: the start's
    predictor is +t on column 1's rows, -t on the reference rows, 0 on every other row."""
    Z, y = _codes_data(0, 200)
    idx = np.arange(len(y))[None, :]
    groups = quasi_start.attribute_groups(LAYOUT)
    np.testing.assert_array_equal(groups[0], [0, 2, 5])
    np.testing.assert_array_equal(groups[1], [2, 5, 6])
    csr = Sparse.from_dense(Z, ones=True)
    start = quasi_start.pure_level_start(csr, idx, y[idx], groups, 7, TINY_RIDGE)[0]
    pure, reference = Z[:, 1] == 1, Z[:, 2:5].sum(axis=1) == 0
    up = quasi_start._ridge_stop(pure.sum(), TINY_RIDGE)
    down = quasi_start._ridge_stop(reference.sum(), 3 * TINY_RIDGE)
    predictor = Z @ start[:-1] + start[-1]
    np.testing.assert_allclose(predictor[pure], up)
    np.testing.assert_allclose(predictor[reference], -down)
    np.testing.assert_allclose(predictor[~pure & ~reference], 0.0, atol=1e-12)


def test_no_pure_level_no_start():
    """Where every level has rows of both classes, the start is 0 (the fit is as before)."""
    Z, y = _codes_data(1, 300)
    y[:] = np.arange(len(y)) % 2
    Z[:] = LAYOUT.onehot(np.column_stack([np.arange(300) // 2 % k for k in (3, 4, 2)]), True)
    model = LogisticRegression(LAYOUT)
    idx = np.arange(300)[None, :]
    shared = _sparse(Z)
    assert model._pure_level_start(Z, y, idx, shared) is None


def test_from_the_start_newton_finds_the_same_minimum_in_fewer_iterations(monkeypatch):
    """The ridge makes the loss strictly convex: from 0 and from the pure-level start Newton
    stops at the same minimum (to its tolerance: gradient ~0 at both), the start taking
    fewer iterations in all (counted, not timed)."""
    Z, y = _codes_data(2, 400)
    rng = np.random.default_rng(3)
    idx = np.stack([np.sort(rng.choice(len(y), 150, replace=False)) for _ in range(8)])
    model = LogisticRegression(LAYOUT)
    shared = _sparse(Z)
    start = model._pure_level_start(Z, y, idx, shared)
    assert start is not None and (np.abs(start) > 10).any(axis=1).all()
    penalty = np.full(7, TINY_RIDGE)
    penalty[-1] = 0.0
    iterations = []
    counted = newton._newton_update

    def counting(active, penalty):
        iterations[-1] += active.coef.shape[0]
        return counted(active, penalty)

    monkeypatch.setattr(newton, "_newton_update", counting)
    fits = []
    for first in (None, start):
        iterations.append(0)
        fits.append(newton_logistic(_design(Z, y, idx, shared), penalty, start=first).beta)
    assert iterations[1] < iterations[0]
    for beta in fits:
        for s, rows in enumerate(idx):
            A, t = np.column_stack([Z[rows], np.ones(len(rows))]), y[rows]
            residual = t - 1 / (1 + np.exp(-(A @ beta[s])))
            assert np.abs(A.T @ residual - penalty * beta[s]).max() < 1e-6
    np.testing.assert_allclose(fits[1], fits[0], rtol=0, atol=1e-3 * np.abs(fits[0]).max())


def test_separable_sets_are_fitted_from_zero_as_before():
    """A separable training set stops on a separating iterate, where the sampler starts: the
    pure-level start would change which one, so such sets are fitted again from 0, and the
    first fit is the one from 0 bit for bit."""
    Z, y = _codes_data(4, 400)
    rng = np.random.default_rng(5)
    small = np.stack([np.sort(rng.choice(len(y), 8, replace=False)) for _ in range(20)])
    model = LogisticRegression(LAYOUT)
    shared = _sparse(Z)
    start = model._pure_level_start(Z, y, small, shared)
    design = _design(Z, y, small, shared)
    first = model._first_fit(design, start, shared)
    plain = model._newton(design, TINY_RIDGE, stop=True)
    assert first.separating.any() and start[first.separating].any()
    for field in ("beta", "separating", "margin_bound"):
        kept = getattr(first, field)[first.separating]
        np.testing.assert_array_equal(kept, getattr(plain, field)[first.separating])


def test_the_compiled_csr_is_scipys():
    """`Sparse.from_dense` (a compiled pass) gives scipy's CSR arrays of X, or of [X 1],
    as int64, whatever the values (negative, NaN) and with empty rows."""
    rng = np.random.default_rng(6)
    X = rng.integers(-1, 2, (60, 9)) * rng.uniform(size=(60, 9))
    X[3], X[5, 2] = 0.0, np.nan
    for ones in (False, True):
        scipy = csr_array(np.column_stack([X, np.ones(60)]) if ones else X)
        ours = Sparse.from_dense(X, ones)
        expected = (scipy.indptr, scipy.indices, scipy.data)
        for array, reference in zip(ours, expected, strict=True):
            assert array.dtype in (np.int64, np.float64)
            np.testing.assert_array_equal(array, reference)
