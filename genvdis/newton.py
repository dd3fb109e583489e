"""Logistic regression (maximum likelihood, optionally with a ridge) on S training sets at once,
by batched Newton.

The solver only needs a few products with each problem's design, so it is written against a
small design interface (`Design`, a Protocol) with three implementations:

- `Gathered`: each split's training rows copied out, feature-major (S, d, m); a compiled
  kernel takes each problem's Newton step in one visit to its rows (one pass scales them, one
  BLAS product gives X^T W X and the gradient, one pass after the solve gives the new linear
  predictors). Best when m is small next to the data.
- `Masked`: every row of the data for every split, weighted 1 in its training set and 0
  elsewhere; products are single BLAS-3 calls on the shared data (the Hessians are one
  (S, n) x (n, d(d+1)/2) product with the rows' pairwise products). Best when the training
  sets cover much of the data (pima at m = 600 of 768): ~2x faster there (it pays from about
  m = 0.45 n on pima).
- `Sparse`: each split's training rows as indices into the data held sparse (CSR); products
  loop over nonzeros only (compiled). Best for wide one-hot data: adult's discrete attributes
  are 92 columns with 15 nonzeros a row, so a Hessian costs ~40x fewer multiplications.

All give the same fits (up to rounding): the choice is the caller's, by speed.

The solver's iteration is cut into named steps, as scikit-learn's `NewtonSolver` is:
`_setup`, `_newton_update` (gradient, Hessian and solve), `_line_search`, `_creep`,
`_take_step`, `_check_convergence`, and `_retire` (margin bounds; finished problems dropped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numba
import numpy as np

from genvdis.streams import jit

# Newton stops on a decrement (twice the distance to the minimum) below DECREMENT_TOL, or
# after a full step taken from a decrement below QUADRATIC_TOL (see `newton_logistic`).
DECREMENT_TOL = 1e-9
QUADRATIC_TOL = 1e-7
CREEP_DECREMENT, CREEP_FACTOR = 1e-2, 4.0  # see "creeping" in `_newton_group`
SETTLED_STEP = 1e-4  # the quadratic stop also needs a step this small (relative to |beta|)
# The line search: a step may raise the loss by rounding (LOSS_SLACK of it, relative), no more;
# one still raising it after MAX_HALVINGS halvings (to ~1e-9 of Newton's) is not taken.
LOSS_SLACK, MAX_HALVINGS = 1e-12, 30
BOUND_FLOOR = 1e-300  # the margin bound divides by sum |t - p|, floored here (never 0 / 0)
# Gathered problems per group: larger groups share each iteration's fixed cost (~0.1 ms of
# Python) over more problems, smaller ones stay in cache; 4 MB of design measured fastest.
NEWTON_BYTES = 4 * 2**20


class Design(Protocol):
    """S logistic problems' training data, as `newton_logistic` reads it; `Gathered`,
    `Masked` and `Sparse` lay it out differently. `which` (problem positions, or all where
    None) selects problems; eta (S, n) are linear predictors X beta, e = exp(-|eta|)."""

    @property
    def problems(self) -> int:
        """S, the number of problems."""

    @property
    def width(self) -> int:
        """d, the coefficients of a problem (the intercept's included)."""

    def take(self, which: np.ndarray | slice) -> Design:
        """Problems `which` only, sharing the data (no copy of a design)."""

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        """The labels t in {0, 1}: a row per problem, or one row (1, n) all problems share."""

    def weights_of(self, which: np.ndarray | None = None) -> np.ndarray | None:
        """Each problem's row weights (S, n), or None where every row counts once."""

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        """X beta (S, n), for coefficients beta (S, d)."""

    def nll(
        self, eta: np.ndarray, which: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The negative log-likelihood (S,) at eta, and e."""

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """gradient, Newton step delta, X delta, and at beta + delta: eta, nll and e."""

    def advance(
        self, eta: np.ndarray, delta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """X delta, and at eta + X delta: eta, the negative log-likelihood and e."""

    def residual_sums(
        self, eta: np.ndarray, e: np.ndarray, which: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """X^T r and sum |r| (r = t - p, weighted) for problems which: the margin bound's."""


class _Products:
    """`Design`'s methods from three products, `predictor`, `gradient` (X^T r) and `hessian`
    (X^T W X), with `labels` and `weights_of`. `Gathered` has no `gradient`
    or `hessian`: it overrides the two methods that use them with compiled kernels."""

    def derivatives(self, eta: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The log-likelihood's gradient X^T (t - p) and the Hessian X^T W X of its negative,
        at linear predictors eta with e = exp(-|eta|)."""
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        residual, w = self.labels() - p, p * (1.0 - p)
        weights = self.weights_of()
        if weights is not None:
            residual, w = residual * weights, w * weights
        return self.gradient(residual), self.hessian(w)

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """From iterates beta (S, d) with linear predictors eta (e = exp(-|eta|)): the penalised
        log-likelihood's gradient g, the Newton step H^-1 g, and what `advance` gives for it."""
        score, hess = self.derivatives(eta, e)
        grad = score - penalty * beta
        delta = _newton_direction(hess + np.diag(penalty), grad)
        return (grad, delta, *self.advance(eta, delta))

    def residual_sums(
        self, eta: np.ndarray, e: np.ndarray, which: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For problems `which` (positions): X^T r and sum |r|, r = t - p the (weighted)
        residual at linear predictors eta with e = exp(-|eta|); what the margin bound is made
        of."""
        residual = self.labels(which) - np.where(eta >= 0, 1.0, e) / (1.0 + e)
        weights = self.weights_of(which)
        if weights is not None:
            residual *= weights
        return self.gradient(residual, which), np.abs(residual).sum(axis=1)

    def advance(
        self, eta: np.ndarray, delta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A full step delta (S, d) from linear predictors eta: the change X delta, the new
        predictors, the negative log-likelihood there and its exp(-|eta|)."""
        direction = self.predictor(delta)
        new_eta = eta + direction
        nll, e = self.nll(new_eta)
        return direction, new_eta, nll, e

    def nll(
        self, eta: np.ndarray, which: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The negative log-likelihood at linear predictors eta (S, n), and exp(-|eta|), from
        which the fitted probabilities follow without another exponential.
        log(1 + e^eta) = max(eta, 0) + log(1 + e^-|eta|): numpy's SIMD exp and log are ~20x
        faster than logaddexp, and dropping log1p's last bits for tiny e^-|eta| costs < 1e-16."""
        t, weights = self.labels(which), self.weights_of(which)
        if weights is None:
            return _sum_nll(*_nll_terms(eta, t))
        e = np.exp(-np.abs(eta))
        terms = (np.maximum(eta, 0.0) + np.log(1.0 + e) - t * eta) * weights
        return terms.sum(axis=1), e


# The kernels below loop over a problem's rows innermost, over contiguous memory, so LLVM
# vectorises them; that needs the division's zero check off (numpy's error model: 1/0 is inf,
# as in numpy) and lets it fuse multiply-adds. No other fast-math: NaN and inf keep their
# meaning. Exponentials and logarithms stay in numpy, whose SIMD versions cost ~1 ns a number
# against ~6 ns for numba's scalar ones.
_vector_jit = numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")


@_vector_jit
def _nll_terms(eta, t):
    """-|eta| (for numpy to exponentiate) and the loss terms that need no logarithm,
    max(eta, 0) - t eta, in one pass."""
    minus_abs, linear = np.empty(eta.shape), np.empty(eta.shape)
    for a in range(eta.shape[0]):
        for i in range(eta.shape[1]):
            v = eta[a, i]
            minus_abs[a, i] = -abs(v)
            linear[a, i] = max(v, 0.0) - t[a, i] * v
    return minus_abs, linear


@_vector_jit
def _shifted_terms(eta, direction, which, factor, t):
    """For problems which (positions): eta + factor * direction, and its `_nll_terms`, in
    one pass."""
    shifted = np.empty((which.size, eta.shape[1]))
    minus_abs, linear = np.empty(shifted.shape), np.empty(shifted.shape)
    for a in range(which.size):
        r, f = which[a], factor[a]
        for i in range(eta.shape[1]):
            v = eta[r, i] + f * direction[r, i]
            shifted[a, i] = v
            minus_abs[a, i] = -abs(v)
            linear[a, i] = max(v, 0.0) - t[a, i] * v
    return shifted, minus_abs, linear


def _sum_nll(minus_abs: np.ndarray, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The negative log-likelihood from `_nll_terms`, and exp(-|eta|) (in minus_abs' place)."""
    e = np.exp(minus_abs, out=minus_abs)
    return linear.sum(axis=1) + np.log(1.0 + e).sum(axis=1), e


@_vector_jit
def _separates(eta, t, weights):
    """Whether each problem's predictor eta (S, n) classifies all its rows correctly (rows of
    weight 0 aside; labels t (S or 1, n)). A problem's check stops at its first mistake,
    within a few rows on all but (nearly) separable sets."""
    out = np.ones(eta.shape[0], dtype=np.bool_)
    for a in range(eta.shape[0]):
        ta = t[a if t.shape[0] > 1 else 0]
        for i in range(eta.shape[1]):
            if (eta[a, i] > 0) != (ta[i] > 0) and (weights is None or weights[a, i] != 0):
                out[a] = False
                break
    return out


@_vector_jit
def _combine(x: np.ndarray, coef: np.ndarray, out: np.ndarray) -> None:
    """out = coef @ x for one feature-major design x (d, m)."""
    c = coef[0]
    for i in range(x.shape[1]):
        out[i] = c * x[0, i]
    for j in range(1, x.shape[0]):
        c = coef[j]
        for i in range(x.shape[1]):
            out[i] += c * x[j, i]


@_vector_jit
def _gathered_predictor(XT, problems, beta):
    """X beta for feature-major designs XT[problems] (S, d, m)."""
    out = np.empty((problems.size, XT.shape[2]))
    for a in range(problems.size):
        _combine(XT[problems[a]], beta[a], out[a])
    return out


@_vector_jit
def _scaled_rows(x, t, eta, e, scaled, w):
    """For one feature-major design x (d, m): scaled[:d] = x w and scaled[d] = t - p, with p
    and w = p (1 - p) from eta and e = exp(-|eta|). With q = 1 / (1 + e), p is q or e q (eta
    >= 0 or not) and w = e q^2, which keeps its relative accuracy where p is near 1."""
    d, m = x.shape
    residual = scaled[d]
    for i in range(m):
        q = 1.0 / (1.0 + e[i])
        below = e[i] * q
        w[i] = below * q
        residual[i] = t[i] - (q if eta[i] >= 0 else below)
    for j in range(d):
        for i in range(m):
            scaled[j, i] = x[j, i] * w[i]


@_vector_jit
def _gathered_residuals(XT, problems, t, eta, e):
    """For `_Products.residual_sums` on feature-major designs: the residuals t - p and X^T of
    them (problems and t, eta, e aligned)."""
    gradient, residual = np.empty((problems.size, XT.shape[1])), np.empty(eta.shape)
    for a in range(problems.size):
        for i in range(eta.shape[1]):
            residual[a, i] = t[a, i] - (1.0 if eta[a, i] >= 0 else e[a, i]) / (1.0 + e[a, i])
        gradient[a] = np.dot(XT[problems[a]], residual[a])
    return gradient, residual


@_vector_jit
def _gathered_step(XT, problems, t, eta, e, beta, penalty):
    """`_Products.newton_step` for feature-major designs, up to the exponential and logarithm
    (the new predictors' `_nll_terms` instead), one problem at a time so that its rows are
    fetched once and reused from cache: one pass scales them, one BLAS product gives
    [X^T W X; (t - p)^T X], a pass after the solve gives X delta and the new predictors.
    singular[s] where H is numerically singular: the caller then takes the step (hess is
    returned for it); that problem's other outputs are left 0."""
    S, d, m = problems.size, XT.shape[1], XT.shape[2]
    grad, delta = np.empty((S, d)), np.zeros((S, d))
    hess, singular = np.empty((S, d, d)), np.zeros(S, dtype=np.bool_)
    direction, new_eta = np.empty((S, m)), np.empty((S, m))
    minus_abs, linear = np.empty((S, m)), np.empty((S, m))
    scaled, w = np.empty((d + 1, m)), np.empty(m)
    for a in range(S):
        x = XT[problems[a]]
        _scaled_rows(x, t[a], eta[a], e[a], scaled, w)
        both = np.dot(scaled, x.T)
        for j in range(d):
            grad[a, j] = both[d, j] - penalty[j] * beta[a, j]
            hess[a, j] = both[j]
            hess[a, j, j] += penalty[j]
        singular[a] = _solve_into(hess[a], grad[a], delta[a])
        if singular[a]:
            direction[a], new_eta[a], minus_abs[a], linear[a] = 0.0, 0.0, 0.0, 0.0
            continue
        _combine(x, delta[a], direction[a])
        for i in range(m):
            v = eta[a, i] + direction[a, i]
            new_eta[a, i] = v
            minus_abs[a, i] = -abs(v)
            linear[a, i] = max(v, 0.0) - t[a, i] * v
    return grad, delta, singular, hess, direction, new_eta, minus_abs, linear


class Gathered(_Products):
    """Problem s fits rows X[s] (m, d) with labels t[s] (m,) in {0, 1}.

    The rows are held feature-major, XT (S, d, m), for the compiled kernels, and `take` keeps
    them in place (it only narrows `problems`, the problems' positions in XT): dropping
    converged problems copies no design."""

    def __init__(self, X: np.ndarray, t: np.ndarray) -> None:
        self._hold(np.ascontiguousarray(np.swapaxes(X, 1, 2)), t, np.arange(len(t)))

    @classmethod
    def feature_major(
        cls, XT: np.ndarray, t: np.ndarray, problems: np.ndarray | None = None
    ) -> Gathered:
        """The design of rows already held feature-major, XT (S, d, m) C-contiguous; problems
        (S',) says which of them (all by default) with labels t (S', m)."""
        design = cls.__new__(cls)
        design._hold(XT, t, np.arange(len(t)) if problems is None else problems)
        return design

    def _hold(self, XT: np.ndarray, t: np.ndarray, problems: np.ndarray) -> None:
        self.XT, self.t, self.problems_at = XT, t, problems

    @property
    def problems(self) -> int:
        return self.problems_at.size

    @property
    def width(self) -> int:
        return self.XT.shape[1]

    @property
    def m(self) -> int:
        """Training rows per problem."""
        return self.XT.shape[2]

    def take(self, which: np.ndarray | slice) -> Gathered:
        return Gathered.feature_major(self.XT, self.t[which], self.problems_at[which])

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        return self.t if which is None else self.t[which]

    def weights_of(self, which: np.ndarray | None = None) -> np.ndarray | None:
        return None

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return _gathered_predictor(self.XT, self.problems_at, np.ascontiguousarray(beta))

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """`_Products.newton_step`, compiled (`_gathered_step`)."""
        grad, delta, singular, hess, direction, new_eta, minus_abs, linear = _gathered_step(
            self.XT, self.problems_at, self.t, eta, e, np.ascontiguousarray(beta), penalty
        )
        nll, new_e = _sum_nll(minus_abs, linear)
        if singular.any():  # rare: the pseudo-inverse's step, and the generic products
            at = np.flatnonzero(singular)
            delta[at] = _pseudo_inverse_steps(hess[at], grad[at])
            direction[at], new_eta[at], nll[at], new_e[at] = self.take(at).advance(
                eta[at], delta[at]
            )
        return grad, delta, direction, new_eta, nll, new_e

    def residual_sums(
        self, eta: np.ndarray, e: np.ndarray, which: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        at = self.problems_at[which]
        gradient, residual = _gathered_residuals(self.XT, at, self.t[which], eta, e)
        return gradient, np.abs(residual).sum(axis=1)


class Masked(_Products):
    """Problem s fits every row of X (n, d), weighted mask[s] (n,) in {0, 1}; labels y (n,)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, mask: np.ndarray, pairs=None) -> None:
        self.X, self.y, self.mask = X, y.astype(float)[None, :], mask
        self.XT = np.ascontiguousarray(X.T)
        d = X.shape[1]
        self.j, self.k = np.triu_indices(d)
        self.pairs = X[:, self.j] * X[:, self.k] if pairs is None else pairs  # (n, d(d+1)/2)

    @property
    def problems(self) -> int:
        return self.mask.shape[0]

    @property
    def width(self) -> int:
        return self.X.shape[1]

    def take(self, which: np.ndarray | slice) -> Masked:
        return self.with_mask(self.mask[which])

    def with_mask(self, mask: np.ndarray) -> Masked:
        """The same data and pairwise products for other problems (no recomputation)."""
        return Masked(self.X, self.y[0], mask, self.pairs)

    @staticmethod
    def pairs_bytes(n: int, d: int) -> int:
        """Memory of the pairwise products of n rows of width d."""
        return 8 * n * d * (d + 1) // 2

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        return self.y

    def weights_of(self, which: np.ndarray | None = None) -> np.ndarray:
        return self.mask if which is None else self.mask[which]

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return beta @ self.XT

    def gradient(self, residual: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        return residual @ self.X

    def hessian(self, w: np.ndarray) -> np.ndarray:
        flat = w @ self.pairs
        hess = np.empty((w.shape[0], self.width, self.width))
        hess[:, self.j, self.k] = flat
        hess[:, self.k, self.j] = flat
        return hess


@jit
def _sparse_predictor(indptr, indices, values, idx, beta):
    S, m = idx.shape
    out = np.zeros((S, m))
    for s in range(S):
        for i in range(m):
            r = idx[s, i]
            total = 0.0
            for a in range(indptr[r], indptr[r + 1]):
                total += values[a] * beta[s, indices[a]]
            out[s, i] = total
    return out


@jit
def _sparse_gradient(indptr, indices, values, idx, residual, d):
    S, m = idx.shape
    out = np.zeros((S, d))
    for s in range(S):
        for i in range(m):
            r, g = idx[s, i], residual[s, i]
            for a in range(indptr[r], indptr[r + 1]):
                out[s, indices[a]] += g * values[a]
    return out


@jit
def _sparse_hessian(indptr, indices, values, idx, w, d):
    S, m = idx.shape
    out = np.zeros((S, d, d))
    for s in range(S):
        h = out[s]
        for i in range(m):
            r, wi = idx[s, i], w[s, i]
            for a in range(indptr[r], indptr[r + 1]):
                wa, ca = wi * values[a], indices[a]
                for b in range(a, indptr[r + 1]):  # column indices ascend: upper triangle
                    h[ca, indices[b]] += wa * values[b]
        for j in range(d):
            for k in range(j):
                h[j, k] = h[k, j]
    return out


class Sparse(_Products):
    """Problem s fits rows idx[s] (m,) of a sparse X (n, d) held as CSR (indptr, indices,
    values, column indices ascending in each row); labels t[s] (m,)."""

    def __init__(self, csr: tuple[np.ndarray, np.ndarray, np.ndarray], d: int,
                 idx: np.ndarray, t: np.ndarray) -> None:  # fmt: skip
        self.csr, self.d, self.idx, self.t = csr, d, idx, t

    @classmethod
    def from_dense(cls, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The CSR arrays of a dense X (n, d)."""
        rows, cols = np.nonzero(X)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
        return indptr.astype(np.int64), cols.astype(np.int64), X[rows, cols]

    @property
    def problems(self) -> int:
        return self.idx.shape[0]

    @property
    def width(self) -> int:
        return self.d

    def take(self, which: np.ndarray | slice) -> Sparse:
        return Sparse(self.csr, self.d, self.idx[which], self.t[which])

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        return self.t if which is None else self.t[which]

    def weights_of(self, which: np.ndarray | None = None) -> np.ndarray | None:
        return None

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return _sparse_predictor(*self.csr, self.idx, np.ascontiguousarray(beta))

    def gradient(self, residual: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        idx = self.idx if which is None else self.idx[which]
        return _sparse_gradient(*self.csr, idx, np.ascontiguousarray(residual), self.d)

    def hessian(self, w: np.ndarray) -> np.ndarray:
        return _sparse_hessian(*self.csr, self.idx, np.ascontiguousarray(w), self.d)


def _along(
    design: Design, eta: np.ndarray, direction: np.ndarray, which: np.ndarray, factor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For problems which (positions), predictors eta + factor * direction (a trial step),
    the negative log-likelihood there and exp(-|eta|)."""
    t, weights = design.labels(which), design.weights_of(which)
    if weights is None:
        shifted, minus_abs, linear = _shifted_terms(eta, direction, which, factor, t)
        return (shifted, *_sum_nll(minus_abs, linear))
    shifted = eta[which] + factor[:, None] * direction[which]
    return (shifted, *design.nll(shifted, which))


def _penalty(beta: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    return 0.5 * ((beta * beta) @ penalty)


@jit
def _solve_into(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> bool:
    """x with A x = b, by Gaussian elimination with partial pivoting (LAPACK's dgesv, without
    numpy's ~1 us a call); True, and x untouched, where a pivot is exactly 0 (A is
    numerically singular), the case where LAPACK gives up."""
    d = b.size
    U, v = A.copy(), b.copy()
    for k in range(d):
        p = k
        for i in range(k + 1, d):
            if abs(U[i, k]) > abs(U[p, k]):
                p = i
        if U[p, k] == 0.0:
            return True
        if p != k:
            for j in range(d):
                U[k, j], U[p, j] = U[p, j], U[k, j]
            v[k], v[p] = v[p], v[k]
        for i in range(k + 1, d):
            f = U[i, k] / U[k, k]
            for j in range(k + 1, d):
                U[i, j] -= f * U[k, j]
            v[i] -= f * v[k]
    for k in range(d - 1, -1, -1):
        total = v[k]
        for j in range(k + 1, d):
            total -= U[k, j] * x[j]
        x[k] = total / U[k, k]
    return False


@jit
def _solve(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_solve_into` for each of S systems: x (S, d), and singular (S,)."""
    x, singular = np.zeros(b.shape), np.zeros(b.shape[0], dtype=np.bool_)
    for s in range(b.shape[0]):
        singular[s] = _solve_into(A[s], b[s], x[s])
    return x, singular


def _pseudo_inverse_steps(hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """H^+ g for each problem; no step (0) where H or g is not finite, which only an overflow
    makes: LAPACK's SVD may fail or never return on inf and NaN."""
    finite = np.isfinite(hess).all(axis=(1, 2)) & np.isfinite(grad).all(axis=1)
    if finite.all():
        return np.einsum("sde,se->sd", np.linalg.pinv(hess), grad)
    delta = np.zeros(grad.shape)
    delta[finite] = _pseudo_inverse_steps(hess[finite], grad[finite])
    return delta


def _newton_direction(hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """The Newton steps H^-1 g; the pseudo-inverse's where H is numerically singular."""
    delta, singular = _solve(hess, grad)
    if singular.any():
        delta[singular] = _pseudo_inverse_steps(hess[singular], grad[singular])
    return delta


@dataclass
class NewtonFit:
    """S logistic fits: the coefficients, which problems stopped on a separating iterate, and
    for each a bound on its training set's maximum margin (see `hyperplanes.margin_bound`)."""

    beta: np.ndarray
    separating: np.ndarray
    margin_bound: np.ndarray


def newton_logistic(
    design: Design,
    penalty: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-8,
    stop_if_separating: bool = False,
    start: np.ndarray | None = None,
    stop_unseparated_after: int | None = None,
) -> NewtonFit:
    """Batched Newton-Raphson (IRLS) with backtracking, for S problems at once.

    penalty (d,): ridge weights (0 for the intercept); start (S, d): the first iterate (zeros
    by default). Converged problems are dropped; a step that does not lower the loss is
    halved, so every problem converges (the loss is strictly convex). A problem stops when its
    step is below `tol`, when its Newton decrement is below DECREMENT_TOL, or after a full step
    taken from a decrement below QUADRATIC_TOL that moved it by less than SETTLED_STEP: Newton
    converges quadratically there, so that step leaves a decrement of ~1e-14 (no iteration is
    spent confirming it; the step-size condition keeps a flat valley from passing for
    convergence). A problem whose full steps move it far while the decrement is tiny is
    creeping along a direction where the loss decays like e^-|w| (quasi-separation): it tries
    steps CREEP_FACTOR and CREEP_FACTOR^2 times longer, kept only if they lower the loss. With
    `stop_if_separating`, a problem also stops as soon as its iterate classifies every training
    point correctly: that iterate proves the set separable, and the likelihood then has no
    maximum to converge to. With `stop_unseparated_after` = k, problems whose k-th iterate
    does not classify every training point correctly stop there (for warm starts, see
    `models.LogisticRegression._warm_start`).

    Gathered problems are solved in groups small enough to stay in cache (out of cache each
    iteration is ~2x slower); problems are independent, so the grouping changes no result.
    """
    size = design.problems
    if isinstance(design, Gathered):
        size = max(1, NEWTON_BYTES // (8 * design.m * design.width))
    rules = StopRules(max_iter, tol, stop_if_separating, stop_unseparated_after)
    if design.problems <= size:
        return _newton_group(design, penalty, rules, start)
    fits = [
        _newton_group(
            design.take(slice(g, g + size)), penalty, rules,
            None if start is None else start[g : g + size],
        )
        for g in range(0, design.problems, size)
    ]  # fmt: skip
    return NewtonFit(
        np.concatenate([fit.beta for fit in fits]),
        np.concatenate([fit.separating for fit in fits]),
        np.concatenate([fit.margin_bound for fit in fits]),
    )


@dataclass(frozen=True)
class StopRules:
    """When a problem stops (see `newton_logistic`): max_iter iterations, a relative move below
    tol, a separating iterate (stop_if_separating), or a k-th iterate that does not separate
    (stop_unseparated_after = k)."""

    max_iter: int = 100
    tol: float = 1e-8
    stop_if_separating: bool = False
    stop_unseparated_after: int | None = None


@dataclass
class _Active:
    """The problems of a group not yet done: their indices in the group (`problems`), their
    iterates `coef`, linear predictors `eta` and e = exp(-|eta|), penalised losses, design."""

    problems: np.ndarray
    coef: np.ndarray
    eta: np.ndarray
    e: np.ndarray
    loss: np.ndarray
    design: Design

    def keep(self, kept: np.ndarray) -> _Active:
        """The problems at positions `kept` only."""
        return _Active(
            self.problems[kept], self.coef[kept], self.eta[kept], self.e[kept],
            self.loss[kept], self.design.take(kept),
        )  # fmt: skip


@dataclass
class _Step:
    """One iteration's step for the active problems: the gradient, the Newton direction delta
    and its change of the linear predictors X delta, the decrement g . delta, the largest
    |delta_j|, the length taken (a multiple of delta: 1 for Newton's step, 0 for none) and
    the linear predictors, exp(-|eta|) and penalised loss where it leads."""

    grad: np.ndarray
    delta: np.ndarray
    direction: np.ndarray
    decrement: np.ndarray
    longest: np.ndarray
    length: np.ndarray
    eta: np.ndarray
    e: np.ndarray
    loss: np.ndarray


def _setup(design: Design, penalty: np.ndarray, start: np.ndarray) -> _Active:
    """Every problem of the group active, from iterates `start` (copied)."""
    coef = start.copy()
    eta = design.predictor(coef)
    loss, e = design.nll(eta)
    loss += _penalty(coef, penalty)
    return _Active(np.arange(design.problems), coef, eta, e, loss, design)


def _newton_update(active: _Active, penalty: np.ndarray) -> _Step:
    """The gradient, Hessian and Newton step of every active problem (sklearn's
    `update_gradient_hessian` and `inner_solve` in one: `Gathered` fuses them), full length."""
    grad, delta, direction, eta, nll, e = active.design.newton_step(
        active.eta, active.e, active.coef, penalty
    )
    loss = nll + _penalty(active.coef + delta, penalty)
    decrement = np.einsum("sd,sd->s", grad, delta)
    longest = np.abs(delta).max(axis=1)
    return _Step(grad, delta, direction, decrement, longest, np.ones(grad.shape[0]), eta, e, loss)


def _line_search(active: _Active, step: _Step, penalty: np.ndarray) -> None:
    """Backtracking: halve each step whose loss exceeds the current one (by more than
    rounding, LOSS_SLACK relative), at most MAX_HALVINGS times; a step that still does not
    lower the loss is not taken (length 0: the problem then stops, `_check_convergence`)."""
    ceiling = active.loss + LOSS_SLACK * np.abs(active.loss)
    for _ in range(MAX_HALVINGS):
        worse = np.flatnonzero(step.loss > ceiling)
        if worse.size == 0:
            break
        step.length[worse] /= 2
        _try_lengths(active, step, worse, step.length[worse], penalty, into=step)
    stuck = step.loss > ceiling
    if stuck.any():
        step.length[stuck] = 0.0
        step.eta[stuck], step.e[stuck], step.loss[stuck] = (
            active.eta[stuck], active.e[stuck], active.loss[stuck]
        )  # fmt: skip


def _try_lengths(
    active: _Active, step: _Step, which: np.ndarray, length: np.ndarray, penalty: np.ndarray,
    into: _Step | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """For active problems `which`, steps of `length` times delta: the linear predictors, the
    penalised loss and exp(-|eta|) there (written into `into`'s, if given)."""
    eta, loss, e = _along(active.design, active.eta, step.direction, which, length)
    loss += _penalty(active.coef[which] + length[:, None] * step.delta[which], penalty)
    if into is not None:
        into.eta[which], into.loss[which], into.e[which] = eta, loss, e
    return eta, loss, e


def _creep(active: _Active, step: _Step, penalty: np.ndarray) -> None:
    """Creeping: a full step taken, a small decrement, yet a large move. That is a direction
    where the loss decays like e^-|w| (an attribute value seen in one class only) or a far,
    flat maximum: Newton then gains ~1 in |w| per iteration. Steps CREEP_FACTOR and
    CREEP_FACTOR^2 times longer are tried while they lower the loss further, which only ever
    improves the iterate."""
    relative = step.longest / (1 + np.abs(active.coef + step.delta).max(axis=1))
    creeping = np.flatnonzero(
        (step.length == 1.0) & (step.decrement < CREEP_DECREMENT) & (relative > SETTLED_STEP)
    )
    for factor in (CREEP_FACTOR, CREEP_FACTOR**2):
        if creeping.size == 0:
            break
        longer = np.full(creeping.size, factor)
        longer_eta, longer_loss, longer_e = _try_lengths(active, step, creeping, longer, penalty)
        better = longer_loss < step.loss[creeping]
        creeping = creeping[better]
        step.length[creeping] = factor
        step.eta[creeping], step.e[creeping] = longer_eta[better], longer_e[better]
        step.loss[creeping] = longer_loss[better]


def _take_step(active: _Active, step: _Step) -> None:
    """Move the active problems by their steps (predictors and losses were computed there)."""
    active.coef += step.length[:, None] * step.delta
    active.eta, active.e, active.loss = step.eta, step.e, step.loss


def _check_convergence(
    active: _Active, step: _Step, rules: StopRules, iteration: int, separating: np.ndarray
) -> np.ndarray:
    """Which active problems stop after the step just taken (the rules of `newton_logistic`);
    records in `separating` (by group index) whose iterate now separates, if asked."""
    weights, t = active.design.weights_of(), active.design.labels()
    change = step.length * step.longest / (1 + np.abs(active.coef).max(axis=1))  # relative
    small, settled = change <= rules.tol, change <= SETTLED_STEP
    # A quasi-separated direction (an attribute value seen in one class only) lets the
    # weights grow forever while the loss creeps down by e^-|w|: the decrement stops it.
    done = small | (step.decrement < DECREMENT_TOL) | ~np.isfinite(active.loss)
    done |= (step.decrement < QUADRATIC_TOL) & (step.length == 1.0) & settled
    if rules.stop_if_separating:
        split = _separates(active.eta, t, weights)
        separating[active.problems] = split
        done |= split
    if iteration == rules.stop_unseparated_after:
        done |= ~_separates(active.eta, t, weights)
    return done


def _retire(active: _Active, done: np.ndarray, bound: np.ndarray) -> _Active | None:
    """Record the margin bounds (by group index) of the problems `done`, and drop them; None
    when none is left. The bound comes free with the last gradient: with lambda_i =
    |t_i - p_i|, A^T lambda is the likelihood's gradient X^T (t - p), ~0 at a maximum."""
    finished = np.flatnonzero(done)
    gradient, total = active.design.residual_sums(
        active.eta[finished], active.e[finished], finished
    )
    bound[active.problems[finished]] = np.abs(gradient).sum(axis=1) / np.maximum(total, BOUND_FLOOR)
    kept = np.flatnonzero(~done)
    return active.keep(kept) if kept.size else None


def _newton_group(
    design: Design, penalty: np.ndarray, rules: StopRules, start: np.ndarray | None
) -> NewtonFit:
    """`newton_logistic` on one group. Each iteration costs two products with the design, one
    X^T W X, one batched d x d solve, and one exponential and logarithm per row: the linear
    predictor of the accepted step is carried to the next iteration."""
    S, d = design.problems, design.width
    beta = np.zeros((S, d)) if start is None else np.array(start, dtype=float)
    separating = np.zeros(S, dtype=bool)
    bound = np.full(S, np.inf)
    active: _Active | None = _setup(design, penalty, beta)
    for iteration in range(1, rules.max_iter + 1):
        step = _newton_update(active, penalty)
        _line_search(active, step, penalty)
        _creep(active, step, penalty)
        _take_step(active, step)
        done = _check_convergence(active, step, rules, iteration, separating)
        beta[active.problems] = active.coef
        if done.any():
            active = _retire(active, done, bound)
            if active is None:
                break
    return NewtonFit(beta, separating, bound)
