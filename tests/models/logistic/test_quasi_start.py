"""Newton on one-hot training sets with pure levels: the start
(`genvdis.models.logistic._quasi_start`), the
ridge's stopping point of a pure level and which weights the start moves; the exponential
creep (`newton._exponential_length`) and its Lambert solver; that the fit from the start,
creeping so, is the same minimum as from 0 in fewer iterations; that separable sets are fitted
from 0; and that the compiled CSR builder gives scipy's arrays."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csr_array

from genvdis.data.preprocessing import FeatureLayout
from genvdis.models.logistic import _kernels as logistic_kernels
from genvdis.models.logistic import _newton as newton
from genvdis.models.logistic import _quasi_start as quasi_start
from genvdis.models.logistic._layouts import Sparse
from genvdis.models.logistic._newton import newton_logistic
from genvdis.models.logistic.binary import TINY_RIDGE, LogisticRegression, _design, _Shared

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


def _training_sets(seed: int, m: int, S: int):
    """`_codes_data` (400 rows), S training sets of m rows, the model, the sparse layout's
    shared data and the pure-level start of the sets."""
    Z, y = _codes_data(seed, 400)
    rng = np.random.default_rng(seed + 1)
    idx = np.stack([np.sort(rng.choice(len(y), m, replace=False)) for _ in range(S)])
    model, shared = LogisticRegression(LAYOUT), _sparse(Z)
    return Z, y, idx, model, shared, model._pure_level_start(Z, _design(Z, y, idx, shared))


def test_the_ridge_stops_a_pure_level_where_its_loss_decay_meets_the_ridge():
    """t e^t = n / lambda: the minimiser of n log(1 + e^-t) + lambda t^2 / 2 up to e^-t
    against 1 (~1e-7 relative at t ~ 16)."""
    for n in (1.0, 7.0, 300.0):
        t = quasi_start._ridge_stop(n, TINY_RIDGE)
        assert abs(t * np.exp(t) * TINY_RIDGE / n - 1) < 1e-12
        slope = -n / (1 + np.exp(t)) + TINY_RIDGE * t
        assert abs(slope) < 1e-6 * TINY_RIDGE * t


@pytest.mark.slow
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
    """Where every level has rows of both classes, the start is 0: the fit is Newton's from 0."""
    Z, y = _codes_data(1, 300)
    y[:] = np.arange(len(y)) % 2
    Z[:] = LAYOUT.onehot(np.column_stack([np.arange(300) // 2 % k for k in (3, 4, 2)]), True)
    model = LogisticRegression(LAYOUT)
    idx = np.arange(300)[None, :]
    shared = _sparse(Z)
    assert model._pure_level_start(Z, _design(Z, y, idx, shared)) is None


def _iterations(monkeypatch) -> list[int]:
    """A list whose last entry counts the problem-iterations of Newton from now on."""
    counts = [0]
    counted = newton._newton_update

    def counting(active, penalty):
        counts[-1] += active.coef.shape[0]
        return counted(active, penalty)

    monkeypatch.setattr(newton, "_newton_update", counting)
    return counts


def test_log_lambert_solves_u_plus_log_u():
    """u + log u = a to rounding, from a = -700 (u = e^a, near underflow) to 700."""
    a = np.array([-700.0, -31.0, -5.0, -1.0, 0.0, 0.5, 1.0, 3.0, 18.4, 50.0, 700.0])
    u = logistic_kernels.log_lamberts(a)
    assert u[0] == np.exp(-700.0)
    np.testing.assert_allclose(u[1:] + np.log(u[1:]), a[1:], rtol=1e-14, atol=1e-14)
    assert u[4] == pytest.approx(0.5671432904097838, rel=1e-15)  # the omega constant


def test_the_exponential_length_is_a_pure_levels_one_step_minimum():
    """One column seen in one class only (n rows, no intercept): along Newton's step the loss
    is n log(1 + e^-(w + L delta)) + lambda (w + L delta)^2 / 2, from w = 8. The modelled
    length lands within 0.01 of that line's minimum (the model's e^-L is the loss's decay up
    to 1 - p ~ e^-8), which Newton's step and the plain creep's (x4, x16) miss by units."""
    n, lam = 5, TINY_RIDGE
    X = np.ones((n, 1))
    design = Sparse(Sparse.from_dense(X), 1, np.arange(n)[None, :], np.ones((1, n)))
    penalty = np.array([lam])
    active = newton._setup(design, penalty, np.array([[8.0]]))
    step = newton._newton_update(active, penalty)
    length = newton._exponential_length(active, step, np.array([0]), penalty)[0]
    w, delta = 8.0, step.delta[0, 0]
    target = quasi_start._ridge_stop(n, lam)  # the minimum itself, up to e^-t against 1
    assert abs(w + length * delta - target) < 0.01
    assert min(abs(w + f * delta - target) for f in (1, 4, 16)) > 2


def test_from_the_start_newton_finds_the_same_minimum_in_fewer_iterations(monkeypatch):
    """The ridge makes the loss strictly convex: from 0 with the plain creep, and from the
    pure-level start with the exponential one, Newton stops at the same minimum (to its
    tolerance: gradient ~0 at both), the second in fewer iterations in all (counted)."""
    Z, y, idx, model, shared, start = _training_sets(2, m=150, S=8)
    assert start is not None and (np.abs(start) > 10).any(axis=1).all()
    penalty = np.full(7, TINY_RIDGE)
    penalty[-1] = 0.0
    iterations = _iterations(monkeypatch)
    plain = newton_logistic(_design(Z, y, idx, shared), penalty).beta
    iterations.append(0)
    fast = newton_logistic(_design(Z, y, idx, shared), penalty, start=start,
                           exponential_creep=True).beta  # fmt: skip
    assert iterations[1] < iterations[0]
    for beta in (plain, fast):
        for s, rows in enumerate(idx):
            A, t = np.column_stack([Z[rows], np.ones(len(rows))]), y[rows]
            residual = t - 1 / (1 + np.exp(-(A @ beta[s])))
            assert np.abs(A.T @ residual - penalty * beta[s]).max() < 1e-6
    np.testing.assert_allclose(fast, plain, rtol=0, atol=1e-3 * np.abs(plain).max())


def test_separable_sets_are_fitted_from_zero_as_before():
    """A separable training set stops on a separating iterate, where the sampler starts: the
    pure-level start and the exponential creep would change which one, so such sets are fitted
    again from 0 with the plain creep: the first fit's are those of the plain fit, bit for bit."""
    Z, y, small, model, shared, start = _training_sets(4, m=8, S=20)
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
