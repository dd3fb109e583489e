"""Logistic regression (maximum likelihood, optionally with a ridge) on S training sets at once,
by batched Newton.

The solver only needs a few products with each problem's design, so it is written against a
small "design" interface with three implementations:

- `Gathered`: each split's training rows copied out, X (S, m, d); products are batched
  matrix-vector products and one batched X^T W X. Best when m is small next to the data.
- `Masked`: every row of the data for every split, weighted 1 in its training set and 0
  elsewhere; products are single BLAS-3 calls on the shared data (the Hessians are one
  (S, n) x (n, d(d+1)/2) product with the rows' pairwise products). Best when the training
  sets cover much of the data (pima at m = 600 of 768): ~2x faster there (it pays from about
  m = 0.45 n on pima).
- `Sparse`: each split's training rows as indices into the data held sparse (CSR); products
  loop over nonzeros only (compiled). Best for wide one-hot data: adult's discrete attributes
  are 92 columns with 15 nonzeros a row, so a Hessian costs ~40x fewer multiplications.

All give the same fits (up to rounding): the choice is the caller's, by speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genvdis.streams import jit

# Newton stops on a decrement (twice the distance to the minimum) below DECREMENT_TOL, or
# after a full step taken from a decrement below QUADRATIC_TOL (see `newton_logistic`).
DECREMENT_TOL = 1e-9
QUADRATIC_TOL = 1e-7
CREEP_DECREMENT, CREEP_FACTOR = 1e-2, 4.0  # see "creeping" in `_newton_group`
SETTLED_STEP = 1e-4  # the quadratic stop also needs a step this small (relative to |beta|)
NEWTON_BYTES = 2**20  # a group of gathered problems whose design fits in a core's L2 cache


def _matvec(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(S, a, b) @ (S, b) -> (S, a): one batched BLAS call, much faster than einsum."""
    return np.matmul(M, v[:, :, None])[:, :, 0]


class Gathered:
    """Problem s fits rows X[s] (m, d) with labels t[s] (m,) in {0, 1}."""

    def __init__(self, X: np.ndarray, t: np.ndarray, XT: np.ndarray | None = None) -> None:
        self.X, self.t = X, t
        self.XT = np.ascontiguousarray(np.swapaxes(X, 1, 2)) if XT is None else XT

    @property
    def problems(self) -> int:
        return self.X.shape[0]

    @property
    def width(self) -> int:
        return self.X.shape[2]

    def take(self, rows: np.ndarray | slice) -> Gathered:
        return Gathered(self.X[rows], self.t[rows], self.XT[rows])

    def labels(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self.t if rows is None else self.t[rows]

    def weights_of(self, rows: np.ndarray | None = None) -> np.ndarray | None:
        return None

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return _matvec(self.X, beta)

    def gradient(self, residual: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        return _matvec(self.XT if rows is None else self.XT[rows], residual)

    def hessian(self, w: np.ndarray) -> np.ndarray:
        return (self.XT * w[:, None, :]) @ self.X


class Masked:
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

    def take(self, rows: np.ndarray | slice) -> Masked:
        return self.with_mask(self.mask[rows])

    def with_mask(self, mask: np.ndarray) -> Masked:
        """The same data and pairwise products for other problems (no recomputation)."""
        return Masked(self.X, self.y[0], mask, self.pairs)

    @staticmethod
    def pairs_bytes(n: int, d: int) -> int:
        """Memory of the pairwise products of n rows of width d."""
        return 8 * n * d * (d + 1) // 2

    def labels(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self.y

    def weights_of(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self.mask if rows is None else self.mask[rows]

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return beta @ self.XT

    def gradient(self, residual: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
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


class Sparse:
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

    def take(self, rows: np.ndarray | slice) -> Sparse:
        return Sparse(self.csr, self.d, self.idx[rows], self.t[rows])

    def labels(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self.t if rows is None else self.t[rows]

    def weights_of(self, rows: np.ndarray | None = None) -> np.ndarray | None:
        return None

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return _sparse_predictor(*self.csr, self.idx, np.ascontiguousarray(beta))

    def gradient(self, residual: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        idx = self.idx if rows is None else self.idx[rows]
        return _sparse_gradient(*self.csr, idx, np.ascontiguousarray(residual), self.d)

    def hessian(self, w: np.ndarray) -> np.ndarray:
        return _sparse_hessian(*self.csr, self.idx, np.ascontiguousarray(w), self.d)


Design = Gathered | Masked | Sparse


def _loss(
    design: Design, eta: np.ndarray, beta: np.ndarray, penalty: np.ndarray, rows=None
) -> tuple[np.ndarray, np.ndarray]:
    """The penalised negative log-likelihood at linear predictors eta (S, rows), and
    exp(-|eta|), from which the fitted probabilities follow without another exponential.
    log(1 + e^eta) = max(eta, 0) + log(1 + e^-|eta|): numpy's SIMD exp and log are ~20x
    faster than logaddexp, and dropping log1p's last bits for tiny e^-|eta| costs < 1e-16."""
    e = np.exp(-np.abs(eta))
    terms = np.maximum(eta, 0.0) + np.log(1.0 + e) - design.labels(rows) * eta
    weights = design.weights_of(rows)
    if weights is not None:
        terms *= weights
    return terms.sum(axis=1) + 0.5 * (penalty * beta**2).sum(axis=1), e


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
    maximum to converge to.

    Gathered problems are solved in groups small enough to stay in cache (out of cache each
    iteration is ~2x slower); problems are independent, so the grouping changes no result.
    """
    size = design.problems
    if isinstance(design, Gathered):
        size = max(1, NEWTON_BYTES // (8 * design.X.shape[1] * design.width))
    if design.problems <= size:
        return _newton_group(design, penalty, max_iter, tol, stop_if_separating, start)
    fits = [
        _newton_group(
            design.take(slice(g, g + size)), penalty, max_iter, tol, stop_if_separating,
            None if start is None else start[g : g + size],
        )
        for g in range(0, design.problems, size)
    ]  # fmt: skip
    return NewtonFit(
        np.concatenate([fit.beta for fit in fits]),
        np.concatenate([fit.separating for fit in fits]),
        np.concatenate([fit.margin_bound for fit in fits]),
    )


def _newton_group(
    design: Design,
    penalty: np.ndarray,
    max_iter: int,
    tol: float,
    stop_if_separating: bool,
    start: np.ndarray | None,
) -> NewtonFit:
    """`newton_logistic` on one group. Each iteration costs two products with the design, one
    X^T W X, one batched d x d solve, and one exponential and logarithm per row: the linear
    predictor of the accepted step is carried to the next iteration. The margin bound comes
    free with the last gradient: with lambda_i = |t_i - p_i|, A^T lambda is the likelihood's
    gradient X^T (t - p), ~0 at a maximum."""
    S, d = design.problems, design.width
    beta = np.zeros((S, d)) if start is None else np.array(start, dtype=float)
    separating = np.zeros(S, dtype=bool)
    bound = np.full(S, np.inf)
    rows, bw = np.arange(S), beta.copy()  # the problems not yet done, and their iterates
    eta = design.predictor(bw)
    loss, e = _loss(design, eta, bw, penalty)
    diag = np.diag(penalty)
    for _ in range(max_iter):
        weights, t = design.weights_of(), design.labels()
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        residual, w = t - p, p * (1.0 - p)
        if weights is not None:
            residual, w = residual * weights, w * weights
        grad = design.gradient(residual) - penalty * bw
        hess = design.hessian(w) + diag
        try:
            delta = np.linalg.solve(hess, grad[..., None])[..., 0]
        except np.linalg.LinAlgError:  # numerically singular: fall back to the pseudo-inverse
            delta = np.einsum("sde,se->sd", np.linalg.pinv(hess), grad)
        direction = design.predictor(delta)
        step = np.ones(rows.size)
        new_eta = eta + direction
        new_loss, new_e = _loss(design, new_eta, bw + delta, penalty)
        for _ in range(30):
            worse = np.flatnonzero(new_loss > loss + 1e-12 * np.abs(loss))
            if worse.size == 0:
                break
            step[worse] /= 2
            new_eta[worse] = eta[worse] + step[worse, None] * direction[worse]
            new_loss[worse], new_e[worse] = _loss(
                design, new_eta[worse], bw[worse] + step[worse, None] * delta[worse], penalty,
                worse,
            )  # fmt: skip
        # a step that lowers the loss by nothing after 30 halvings: stay (and stop, below)
        stuck = new_loss > loss + 1e-12 * np.abs(loss)
        if stuck.any():
            step[stuck] = 0.0
            new_eta[stuck], new_e[stuck], new_loss[stuck] = eta[stuck], e[stuck], loss[stuck]
        # Creeping: a full step taken, a small decrement, yet a large move. That is a direction
        # where the loss decays like e^-|w| (an attribute value seen in one class only) or a
        # far, flat maximum: Newton then gains ~1 in |w| per iteration. Longer steps are tried
        # while they lower the loss further, which only ever improves the iterate.
        decrement = np.einsum("sd,sd->s", grad, delta)
        relative = np.abs(delta).max(axis=1) / (1 + np.abs(bw + delta).max(axis=1))
        creeping = np.flatnonzero(
            (step == 1.0) & (decrement < CREEP_DECREMENT) & (relative > SETTLED_STEP)
        )
        for factor in (CREEP_FACTOR, CREEP_FACTOR**2):
            if creeping.size == 0:
                break
            longer_eta = eta[creeping] + factor * direction[creeping]
            longer_loss, longer_e = _loss(
                design, longer_eta, bw[creeping] + factor * delta[creeping], penalty, creeping
            )
            better = longer_loss < new_loss[creeping]
            creeping = creeping[better]
            step[creeping] = factor
            new_eta[creeping], new_e[creeping] = longer_eta[better], longer_e[better]
            new_loss[creeping] = longer_loss[better]
        moved = step[:, None] * delta
        bw += moved
        eta, e, loss = new_eta, new_e, new_loss
        change = np.abs(moved).max(axis=1) / (1 + np.abs(bw).max(axis=1))
        small, settled = change <= tol, change <= SETTLED_STEP
        # A quasi-separated direction (an attribute value seen in one class only) lets the
        # weights grow forever while the loss creeps down by e^-|w|: the decrement stops it.
        done = small | (decrement < DECREMENT_TOL) | ~np.isfinite(loss)
        done |= (decrement < QUADRATIC_TOL) & (step == 1.0) & settled
        if stop_if_separating:
            correct = (eta > 0) == (t > 0)
            if weights is not None:
                correct |= weights == 0
            split = correct.all(axis=1)
            separating[rows] = split
            done |= split
        beta[rows] = bw
        if not done.any():
            continue
        finished = np.flatnonzero(done)
        f_eta, f_e = eta[finished], e[finished]
        f_res = design.labels(finished) - np.where(f_eta >= 0, 1.0, f_e) / (1.0 + f_e)
        if weights is not None:
            f_res *= weights[finished]
        gradient = design.gradient(f_res, finished)
        bound[rows[finished]] = np.abs(gradient).sum(axis=1) / np.maximum(
            np.abs(f_res).sum(axis=1), 1e-300
        )
        keep = np.flatnonzero(~done)
        if keep.size == 0:
            break
        rows, design = rows[keep], design.take(keep)
        bw, eta, e, loss = bw[keep], eta[keep], e[keep], loss[keep]
    return NewtonFit(beta, separating, bound)
