"""Newton's step for the multinomial ridge fit (`softmax.newton_softmax`'s solver under
`separable: ridge`) by preconditioned conjugate gradients on many problems at once: no
(K - 1)(D + 1) square Hessian, only Hessian-vector products, O(m d K) each (docs/scaling.md,
"The ten-digit example, again").

The ridge problem is strongly convex, so CG converges; each problem stops on its own and
finished ones are packed out, so a problem's step never depends on the batch it is in.
"""

from __future__ import annotations

import numpy as np

from genvdis._runtime import portable
from genvdis.models.logistic._kernels import softmax_hessian_times, spd_inverses, weighted_grams

# CG's relative residual never asked below this: a step's error is then ~1e-6 of a step that
# is already tiny (the fit's quadratic term dominates), and the last steps stop ~20% sooner
FORCING_FLOOR = 1e-6


def _hessian_times(
    XT: np.ndarray, X: np.ndarray, PT: np.ndarray, penalty: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """H v (S, K - 1, d) without H: sum_i (p_ic u_ic - p_ic sum_k p_ik u_ik) x_i, u_i = V x_i,
    plus the ridge; O(m d K) per split instead of H's O(m d^2 K^2). Class-major: XT (S, d, m)
    a contiguous copy of X (S, m, d) and PT (S, K - 1, m). One compiled pass per split
    (`logistic_kernels.softmax_hessian_times`): its two products are fixed-order sums, not
    BLAS's, whose order is the CPU's (issue 30 §7), and the weighting between them stays in
    cache (1.15-1.3x numpy's passes between the products on the ten-digit example,
    `bench_newton_floor.py`; the same bits). penalty: one (d,) or each problem's (S, d)."""
    return softmax_hessian_times(XT, X, PT, _each_problem(penalty, len(v)), v)


def _each_problem(penalty: np.ndarray, S: int) -> np.ndarray:
    """The ridge as one row per problem (S, d), contiguous and writable (one compiled
    signature), from a shared one (d,) or (S, d)."""
    if penalty.ndim == 2:
        return np.ascontiguousarray(penalty)
    return np.tile(penalty, (S, 1))


def _preconditioner(X: np.ndarray, P: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """The inverse (S, d, d) of X^T diag(w) X + ridge (d,) or (S, d), w_i the mean over the
    free classes of p_ic (1 - p_ic): H's diagonal blocks averaged into one, shared by the
    classes. (Measured on optdigits: 1.4 to 4 times as fast as the K - 1 blocks themselves,
    whose forming and inverting cost more than the extra CG iterations save; a Kronecker
    factor for the classes' coupling, A (x) that block, saved no iterations.)"""
    Y = X * np.sqrt((P * (1 - P)).mean(axis=2, keepdims=True))
    block = weighted_grams(Y)  # Y^T Y: `portable.matmuls`' bits, from the diagonal on
    d = X.shape[2]
    block[:, np.arange(d), np.arange(d)] += penalty
    # by its Cholesky factor (`portable.spd_inverses`' bits in a third of its work); the
    # pseudo-inverse where it is not numerically definite (every w 0 in floating point, no
    # ridge on the intercept: LAPACK's, whose bits depend on the CPU, but only in that
    # degenerate case)
    inverse, definite = spd_inverses(block)
    for s in np.flatnonzero(~definite):
        inverse[s] = np.linalg.pinv(block[s], hermitian=True)
    return inverse


def _class_scales(P: np.ndarray) -> np.ndarray:
    """1 / s_c (S, K - 1, 1): class c's diagonal block X^T diag(p_c (1 - p_c)) X is
    approximated by s_c times the shared one, s_c the ratio of its weights' total to the
    shared weights' (1 where class c's total is 0). ~10% fewer CG iterations on optdigits."""
    totals = (P * (1 - P)).sum(axis=1)  # (S, K - 1)
    shared = totals.mean(axis=1, keepdims=True)
    ratio = np.divide(totals, shared, out=np.ones_like(totals), where=(totals > 0) & (shared > 0))
    return (1.0 / ratio)[:, :, None]


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each problem's inner product (S,) of a and b (S, K - 1, d)."""
    return np.einsum("skd,skd->s", a, b)


class _Conjugate:
    """The CG state of the problems still iterating, packed: when fewer than PACK_FRACTION of
    the packed ones are live, the live ones are copied together, so finished problems cost no
    products (each problem's arithmetic is its own: packing changes no bit of its step)."""

    PACK_FRACTION = 0.75
    FIELDS = (
        "index", "X", "XT", "PT", "penalty", "inverse", "scale", "goal", "residual", "step",
        "direction", "rz",
    )  # fmt: skip

    def __init__(
        self, X: np.ndarray, P: np.ndarray, penalty: np.ndarray, grad: np.ndarray,
        goal: np.ndarray,
    ) -> None:  # fmt: skip
        self.index = np.flatnonzero(_dot(grad, grad) > 0)
        whole = self.index.size == len(X)  # X and P are only read: no copies then
        self.X, P = (X, P) if whole else (X[self.index], P[self.index])
        self.XT = np.ascontiguousarray(np.swapaxes(self.X, 1, 2))
        self.PT = np.ascontiguousarray(np.swapaxes(P, 1, 2))
        self.penalty = _each_problem(penalty, len(X))[self.index]
        self.inverse, self.scale = _preconditioner(self.X, P, self.penalty), _class_scales(P)
        self.goal, self.residual = goal[self.index], grad[self.index]
        self.step = np.zeros_like(self.residual)
        self.direction = self.precondition(self.residual)
        self.rz = _dot(self.residual, self.direction)

    def precondition(self, residual: np.ndarray) -> np.ndarray:
        """The preconditioner's inverse times residual (S, K - 1, d): the shared block's
        (symmetric: one product per split), class c's rows divided by its scale."""
        return portable.matmuls(residual, self.inverse) * self.scale

    def iterate(self, live: np.ndarray) -> np.ndarray:
        """One CG iteration of every packed problem (the finished ones' steps unchanged):
        which are still live."""
        Hd = _hessian_times(self.XT, self.X, self.PT, self.penalty, self.direction)
        curve = _dot(self.direction, Hd)
        live = live & (curve > 0)
        alpha = np.where(live, self.rz / np.where(live, curve, 1.0), 0.0)[:, None, None]
        self.step += alpha * self.direction
        self.residual -= alpha * Hd
        live &= np.sqrt(_dot(self.residual, self.residual)) > self.goal
        z = self.precondition(self.residual)
        rz = _dot(self.residual, z)
        beta = np.where(live, rz / np.where(live, self.rz, 1.0), 0.0)[:, None, None]
        self.direction, self.rz = z + beta * self.direction, rz
        return live

    def pack(self, live: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write the steps into out (S, K - 1, d); keep only the live problems if fewer than
        PACK_FRACTION are. Which of those kept are live."""
        out[self.index] = self.step
        if live.sum() >= self.PACK_FRACTION * live.size:
            return live
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[live])
        return np.ones(self.index.size, dtype=bool)


def cg_step(X: np.ndarray, P: np.ndarray, penalty: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Newton's step H^-1 grad (S, K - 1, d) by preconditioned conjugate gradients, for the
    ridge fit (strongly convex; penalty (d,) or each problem's (S, d)): iterations of
    O(m d K), stopped at a residual below max(min(0.1, |grad|^2), FORCING_FLOOR) |grad| (a
    forcing term that keeps Newton quadratic until the steps are ~1e-5 of the weights, tight
    enough that the fit agrees with `exact_step`'s to ~1e-10, as with no floor) or after
    (K - 1) d iterations. Each problem stops on its own: its step never depends on the batch."""
    norm = np.sqrt(_dot(grad, grad))
    goal = np.maximum(np.minimum(0.1, norm**2), FORCING_FLOOR) * norm
    state = _Conjugate(X, P, penalty, grad, goal)
    out = np.zeros_like(grad)
    live = np.ones(state.index.size, dtype=bool)
    for _ in range(grad[0].size):
        if not live.any():
            break
        live = state.iterate(live)
        if not live.all():
            live = state.pack(live, out)
    out[state.index] = state.step
    return out


__all__ = ["FORCING_FLOOR", "cg_step"]
