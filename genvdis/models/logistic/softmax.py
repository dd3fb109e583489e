"""Multinomial (softmax) logistic regression for K classes, on S training sets at once.

The model is reference-coded: class 0's score is 0, class c's is v_c . (x, 1), so the K - 1
free weight vectors are identifiable and for K = 2 the model is the binary logistic regression
(`logistic.LogisticRegression`), with the same vanishing ridge (`logistic.TINY_RIDGE`).

It is fit by batched Newton with backtracking: each iteration, for every split, the gradient
X^T (T - P), the Hessian (one BLAS-3 product for the cross terms sum_i (p_i x_i)(p_i x_i)^T,
K - 1 more for the diagonal blocks) and a dense solve in (K - 1)(D + 1) unknowns.

Separable training sets (some W gives every row its own class the strictly largest score) are
decided as in the binary case (`hyperplanes.decide`, docs/separable.md): by certificates of an
LP's answer, never a heuristic. The constraint rows are a_ik = (e_y_i - e_k) (x) (x_i, 1) / 2,
one for each row i and each other class k, on the full weights W (K, D + 1); the LP is
`hyperplanes.max_margin` on them (max t, a_ik . W >= t, |W| <= 1), whose margin for K = 2 is
the binary one. A Newton iterate that separates certifies "yes" by the margin it achieves
(`margins`: `hyperplanes.margin_of`'s bound, rounding included, from the scores); Gordan's
bound with weights lambda_ik = p_ik (the probability of the wrong class k: then A^T lambda is
the likelihood's gradient, ~0 at the maximum) certifies "no" (`hyperplanes.margin_bound`); the
LP decides the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from genvdis._runtime import portable
from genvdis.errors import UserError
from genvdis.models.base import BatchFit, MultiModel, n_classes
from genvdis.models.logistic._newton import DECREMENT_TOL, LOSS_SLACK, MAX_HALVINGS
from genvdis.models.logistic._softmax_cg import cg_step
from genvdis.models.logistic.binary import (
    MAX_PENALTY,
    TINY_RIDGE,
    LogisticRegression,
    standard_basis,
    to_data_basis,
)  # fmt: skip
from genvdis.models.logistic.separable import hyperplanes, sampler

# a Newton step's solver: (X, free classes' P, ridge, gradient) -> H^-1 gradient
Solver = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
FIT_BYTES = 16 * 2**20  # a group's per-row Hessian factors, splits x m x (K - 1)(D + 1)
# Newton steps on the likelihood from the ridge fit, looking for separating weights (on the
# ten digits one or two steps find them wherever the ridge fit does not separate)
SEPARATING_STEPS = 8


def design(Z: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The training rows idx (S, m) of Z with a last column of ones: (S, m, D + 1)."""
    X = Z[idx]
    return np.concatenate([X, np.ones(X.shape[:2] + (1,))], axis=2)


def full_scores(X: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Every class's scores (S, m, K) for reference-coded weights V (S, K - 1, d)."""
    scores = portable.products(X, np.ascontiguousarray(V))  # fixed-order sums, not BLAS
    return np.concatenate([np.zeros(scores.shape[:2] + (1,)), scores], axis=2)


def _loss(
    X: np.ndarray, y: np.ndarray, V: np.ndarray, penalty: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The penalised negative log-likelihood (S,) and the class probabilities (S, m, K)."""
    scores = full_scores(X, V)
    top = scores.max(axis=2, keepdims=True)
    shifted = portable.exp(scores - top)
    total = shifted.sum(axis=2, keepdims=True)
    log_norm = (top + portable.log(total))[..., 0]
    own = np.take_along_axis(scores, y[:, :, None], axis=2)[..., 0]
    nll = (log_norm - own).sum(axis=1) + 0.5 * _ridge_terms(V, penalty)
    return nll, shifted / total


def _ridge_terms(V: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """sum_kd v_kd^2 penalty_d (S,) for one penalty (d,) or each problem's own (S, d): one
    einsum either way, whose sums run over k, then d, for each problem alone (the same bits
    for a problem fitted alone or in a batch: tests/models/test_multiclass.py)."""
    if penalty.ndim == 1:
        return np.einsum("skd,skd,d->s", V, V, penalty)
    return np.einsum("skd,skd,sd->s", V, V, penalty)


def _problems(penalty: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The penalty of the problems which: a shared one (d,) as it is, per-problem rows (S, d)
    taken."""
    return penalty if penalty.ndim == 1 else penalty[which]


def separates(X: np.ndarray, y: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Whether each split's weights give every training row's own class the strictly largest
    score (S,)."""
    scores = full_scores(X, V)
    own = np.take_along_axis(scores, y[:, :, None], axis=2)
    np.put_along_axis(scores, y[:, :, None], -np.inf, axis=2)
    return (own[..., 0] > scores.max(axis=2)).all(axis=1)


def _hessian(X: np.ndarray, P: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """The negative log-likelihood's Hessians (S, (K-1) d, (K-1) d), free classes' P (S, m, K-1):
    blocks X^T diag(p_c delta_ck - p_c p_k) X, plus the ridge on the diagonal."""
    S, m, d = X.shape
    k = P.shape[2]
    B = (P[:, :, :, None] * X[:, :, None, :]).reshape(S, m, k * d)
    H = -portable.matmuls(np.ascontiguousarray(np.swapaxes(B, 1, 2)), B)  # not BLAS
    XT = np.swapaxes(X, 1, 2)
    for c in range(k):
        block = portable.matmuls(XT * P[:, None, :, c], X)
        H[:, c * d : (c + 1) * d, c * d : (c + 1) * d] += block
    H[:, np.arange(k * d), np.arange(k * d)] += np.tile(penalty, (1, k) if penalty.ndim == 2 else k)
    return H


def _solve(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """H^-1 g for each problem; least squares (the pseudo-inverse's step) where H is
    numerically singular. Decided problem by problem, so a step never depends on which other
    problems share the batch."""
    out = portable.solve(H, g[..., None])[..., 0]  # not LAPACK's: its bits depend on the CPU
    for s in np.flatnonzero(~np.isfinite(out).all(axis=1) & np.isfinite(H).all(axis=(1, 2))):
        out[s] = _solve_one(H[s], g[s])  # singular: LAPACK's least squares (only then)
    return out


def _solve_one(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(H, g)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(H, g, rcond=None)[0]


def exact_step(X: np.ndarray, P: np.ndarray, penalty: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Newton's step H^-1 grad (S, K - 1, d), H formed and factorised: for the (nearly)
    unpenalised fits, whose Hessian may be close to singular."""
    flat = _solve(_hessian(X, P, penalty), grad.reshape(len(grad), -1))
    return flat.reshape(grad.shape)


def newton_softmax(
    X: np.ndarray, y: np.ndarray, K: int, strength: float | np.ndarray, max_iter: int = 100,
    tol: float = 1e-8, stop_if_separating: bool = False, solver: Solver = exact_step,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Reference-coded weights V (S, K - 1, d) maximising each split's penalised likelihood
    (ridge `strength` on every weight but the intercepts: one for all, one per column,
    (d - 1,), or each split's own, (S, d - 1)), and which splits stopped on a separating
    iterate (with `stop_if_separating`: the likelihood then has no maximum).

    A step that raises the loss by more than rounding is halved, up to MAX_HALVINGS times (then
    not taken, and the problem stops). A problem stops after a step smaller than tol (relative
    to its weights) or whose Newton decrement was below DECREMENT_TOL: convergence is quadratic
    there, so the step taken leaves a decrement of ~1e-18."""
    S, m, d = X.shape
    if np.ndim(strength) == 2:  # each split's own: (S, d)
        penalty = np.concatenate([np.asarray(strength, dtype=float), np.zeros((S, 1))], axis=1)
    else:
        penalty = np.append(np.broadcast_to(strength, (d - 1,)), 0.0)
    V = np.zeros((S, K - 1, d)) if start is None else start.copy()
    target = (y[:, :, None] == np.arange(1, K)).astype(float)
    separating = np.zeros(S, dtype=bool)
    active = np.arange(S)
    loss, P = _loss(X, y, V, penalty)
    for _ in range(max_iter):
        Xa = X if active.size == S else X[active]  # read only: no copy while all are active
        ya, Va, pa = y[active], V[active], _problems(penalty, active)
        residual = np.ascontiguousarray(np.swapaxes(target[active] - P[:, :, 1:], 1, 2))
        ridge = pa if pa.ndim == 1 else pa[:, None, :]
        grad = portable.matmuls(residual, Xa) - ridge * Va  # not BLAS: `portable`
        delta = solver(Xa, P[:, :, 1:], pa, grad)
        decrement = np.einsum(
            "sp,sp->s", grad.reshape(active.size, -1), delta.reshape(active.size, -1)
        )
        length = np.ones(active.size)
        new_loss, new_P = _loss(Xa, ya, Va + delta, pa)
        ceiling = loss + LOSS_SLACK * np.abs(loss)
        for _ in range(MAX_HALVINGS):
            worse = np.flatnonzero(new_loss > ceiling)
            if worse.size == 0:
                break
            length[worse] /= 2
            moved = Va[worse] + length[worse, None, None] * delta[worse]
            new_loss[worse], new_P[worse] = _loss(Xa[worse], ya[worse], moved, _problems(pa, worse))
        stuck = new_loss > ceiling
        length[stuck] = 0.0
        new_loss[stuck], new_P[stuck] = loss[stuck], P[stuck]
        V[active] = Va = Va + length[:, None, None] * delta
        step = length * np.abs(delta).max(axis=(1, 2)) / (1 + np.abs(Va).max(axis=(1, 2)))
        done = stuck | (step <= tol) | (decrement < DECREMENT_TOL) | ~np.isfinite(new_loss)
        if stop_if_separating:
            separating[active] = split = separates(Xa, ya, Va)
            done |= split
        active, loss, P = active[~done], new_loss[~done], new_P[~done]
        if active.size == 0:
            break
    return V, separating


def constraint_rows(X: np.ndarray, y: np.ndarray, K: int) -> np.ndarray:
    """a_ik = (e_y_i - e_k) (x) x_i / 2 for each row i of X (m, d) and each class k != y_i,
    in that order: (m (K - 1), K d), on the full weights W (K, d) flattened. For K = 2 the
    margin they define, max min a . W over |W| <= 1, is the binary one (W = (-w/2, w/2))."""
    m, d = X.shape
    others = np.array([[k for k in range(K) if k != c] for c in range(K)], dtype=np.int64)
    rows = np.zeros((m, K - 1, K, d))
    i, j = np.arange(m)[:, None], np.arange(K - 1)[None, :]
    rows[i, j, y[:, None]] = X[:, None, :] / 2
    rows[i, j, others[y]] = -X[:, None, :] / 2
    return rows.reshape(m * (K - 1), K * d)


def wrong_class_weights(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """lambda_ik = p_ik for each row i and class k != y_i, in `constraint_rows`' order."""
    K = P.shape[1]
    others = np.array([[k for k in range(K) if k != c] for c in range(K)], dtype=np.int64)
    return np.take_along_axis(P, others[y], axis=1).ravel()


def centred(V: np.ndarray) -> np.ndarray:
    """Full weights (..., K, d) with class 0's at 0 and V's (..., K - 1, d) after, each
    coordinate shifted by its midrange over classes: the same classifier, smallest |W|_inf."""
    W = np.concatenate([np.zeros(V.shape[:-2] + (1, V.shape[-1])), V], axis=-2)
    return W - (W.max(axis=-2, keepdims=True) + W.min(axis=-2, keepdims=True)) / 2


def decide(
    X: np.ndarray, y: np.ndarray, K: int, V: np.ndarray, separating: np.ndarray
) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """Which training sets (X[s], y[s]) are separable, the LP's answer (see the module's
    docstring), and the LP's maximum-margin W (K, d) for those it solved (None elsewhere)."""
    separable = np.zeros(len(X), dtype=bool)
    claimed = np.flatnonzero(separating)
    separable[claimed] = margins(X[claimed], y[claimed], V[claimed]) > hyperplanes.MARGIN_TOL
    solutions: list[np.ndarray | None] = [None] * len(X)
    P = _loss(X, y, V, np.zeros(X.shape[2]))[1]
    for s in np.flatnonzero(~separable):
        A = constraint_rows(X[s], y[s], K)
        bound = hyperplanes.margin_bound(A, wrong_class_weights(P[s], y[s]))
        if not separating[s] and bound <= hyperplanes.MARGIN_TOL:
            continue
        separable[s], z = hyperplanes.max_margin(A)
        solutions[s] = z.reshape(K, -1)
    return separable, solutions


def margins(X: np.ndarray, y: np.ndarray, V: np.ndarray) -> np.ndarray:
    """A lower bound, rounding included, on the margin the classifiers V (S, K - 1, d) achieve
    on their training sets (S,): `hyperplanes.margin_of` on the rows `constraint_rows` with the
    weights `centred(V)`, from the scores X W^T instead of those rows (9 m x 650 on the ten
    digits). A row's product a_ik . W is half the gap between two scores, each a sum of d
    products: their rounding, and the gap's, stay below gamma_(d+1) ||x_i||_1 ||W||_inf, within
    the bound `hyperplanes.certify` applies for a sum of K d products, which is kept."""
    W = centred(V)
    scores = np.einsum("smd,skd->smk", X, W)
    gaps = np.take_along_axis(scores, y[:, :, None], axis=2) - scores
    np.put_along_axis(gaps, y[:, :, None], np.inf, axis=2)
    lowest = gaps.min(axis=(1, 2)) / 2
    row_norm = np.abs(X).sum(axis=2).max(axis=1)  # ||a_ik||_1 = ||x_i||_1 (both halves)
    return hyperplanes.certify(lowest, W.reshape(len(W), W.shape[1] * W.shape[2]), row_norm)


def certified(X: np.ndarray, y: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Which training sets (X[s], y[s]) the classifiers V (S, K - 1, d) prove separable (S,):
    any weights that separate do, the ridge fit's included; False proves nothing."""
    proven = separates(X, y, V)
    chosen = np.flatnonzero(proven)
    proven[chosen] = margins(X[chosen], y[chosen], V[chosen]) > hyperplanes.MARGIN_TOL
    return proven


class MultiLogisticRegression(MultiModel, LogisticRegression):
    """Multinomial logistic regression by maximum likelihood (no penalty but the vanishing
    ridge); on separable training sets, `separable` as for the binary model: `max_margin` takes
    the LP's maximum-margin W, `ridge` the fit penalised by |v|^2 / (2C) on the K - 1 free
    classes' weights (for K = 2 the binary ridge), `sample` is for binary targets only."""

    shares = None  # its fits build their own designs: nothing of the binary model's `shared`

    def check_classes(self, n_classes: int) -> None:
        """`separable: sample` draws from a binary version space: refused for more classes."""
        if self.separable == "sample" and n_classes > 2:
            raise UserError(
                f"models: logistic_regression: separable: sample is for binary targets only "
                f"(this one has {n_classes} classes); use separable: max_margin or ridge"
            )

    def _group_size(self, Z: np.ndarray, idx: np.ndarray) -> int:
        return max(1, FIT_BYTES // (8 * idx.shape[1] * (Z.shape[1] + 1)))

    def fit_batch(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray | None = None
    ) -> BatchFit:
        K = n_classes(y)
        self.check_classes(K)
        if keys is None:
            keys = np.zeros(idx.shape[0], dtype=np.uint64)
        size = max(1, self._group_size(Z, idx) // max(1, K - 1))
        return self._in_groups(Z, y, idx, keys, size=size)

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        """In each training set's standard basis (`logistic.standard_basis`, as the binary
        model: the vanishing ridge, the stopping rules and the separability LP's margin are
        then unit-free), mapped back to the data's basis; the binary version space is sampled
        in the data's basis (`LogisticRegression._apply_policy`)."""
        yt, K = y[idx], n_classes(y)
        standard, shift, scale = standard_basis(Z, idx)
        X = np.concatenate([standard.reshape(idx.shape + (-1,)), np.ones(idx.shape + (1,))], 2)
        trajectories = np.zeros(len(idx), dtype=np.int64)  # the sampler's, per split
        if self.separable == "ridge":
            V, separable = self._ridge_first(X, yt, K, scale)
            V = _to_data_basis(V, shift, scale)
        else:
            V, separable, solutions = self._likelihood(X, yt, K)
            chosen = np.flatnonzero(separable)
            if chosen.size and self.separable == "max_margin":
                for s in chosen:
                    W = solutions[s]
                    if W is None:
                        W = hyperplanes.max_margin(constraint_rows(X[s], yt[s], K))[1]
                        W = W.reshape(K, -1)
                    V[s] = W[1:] - W[0]
            start = [_binary_start(V[s, 0], solutions[s]) for s in chosen]
            V = _to_data_basis(V, shift, scale)
            if chosen.size and self.separable == "sample":  # K = 2: the binary version space
                rows = hyperplanes.signed_rows(Z[idx[chosen]], yt[chosen])
                z0 = to_data_basis(np.stack(start), shift[chosen], scale[chosen])
                z0 /= np.abs(z0).max(axis=1, keepdims=True)  # its norm must not overflow
                V[chosen, 0], trajectories[chosen] = sampler.draw(
                    rows, z0, keys[chosen], self._chain_length()
                )
        coef = np.concatenate([np.zeros((len(idx), 1, X.shape[2])), V], axis=1)
        return BatchFit(coef[:, :, :-1], coef[:, :, -1], separable, trajectories)

    def _likelihood(
        self, X: np.ndarray, y: np.ndarray, K: int
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None]]:
        """The maximum-likelihood fit (Newton, stopped on a separating iterate), which sets
        are separable, and the LP's weights where it was solved (`decide`)."""
        V, separating = newton_softmax(
            X, y, K, TINY_RIDGE, self.max_iter, self.tol, stop_if_separating=True
        )
        separable, solutions = decide(X, y, K, V, separating)
        return V, separable, solutions

    def _ridge_first(
        self, X: np.ndarray, y: np.ndarray, K: int, scale: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """separable: ridge. The ridge fit (strongly convex: Newton with conjugate-gradient
        steps) comes first: where it separates its training set it proves the set separable
        and is the answer. Elsewhere, up to SEPARATING_STEPS Newton steps on the likelihood
        from it, stopped on separating weights, which prove it too. Only the sets left get
        the maximum-likelihood fit from 0 and `decide`, as under the other rules, and keep
        that fit where they are not separable. X is in the standard basis, scale (S, D) its
        ranges: the ridge |w|^2 / (2C) on the data's weights w = w' / scale is each split's
        own penalty (1/C) / scale^2 on w' (capped at `logistic.MAX_PENALTY`)."""
        penalty = np.minimum(1.0 / self.C / scale**2, MAX_PENALTY)
        # every split's fit in one batch, each with its own penalty: the bits of each fitted
        # alone (no step depends on the batch), without a split's Python and numpy calls
        ridge = newton_softmax(X, y, K, penalty, self.max_iter, solver=cg_step)[0]
        separable = certified(X, y, ridge)
        rest = np.flatnonzero(~separable)
        if rest.size:
            steps = min(self.max_iter, SEPARATING_STEPS)
            V = newton_softmax(
                X[rest], y[rest], K, TINY_RIDGE, steps, self.tol, True, cg_step, ridge[rest]
            )[0]
            separable[rest] = certified(X[rest], y[rest], V)
            rest = np.flatnonzero(~separable)
        if rest.size:
            V, separable[rest], _ = self._likelihood(X[rest], y[rest], K)
            ridge[rest] = np.where(separable[rest, None, None], ridge[rest], V)
        return ridge, separable


def _to_data_basis(V: np.ndarray, shift: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Reference-coded weights V (S, K - 1, d) on standard bases (shifts and ranges (S, D)) as
    the same classifiers on the data (`logistic.to_data_basis`, class by class)."""
    w = V[:, :, :-1] / scale[:, None, :]
    b = V[:, :, -1] - np.einsum("skd,sd->sk", w, shift)
    return np.concatenate([w, b[:, :, None]], axis=2)


def _binary_start(v: np.ndarray, solution: np.ndarray | None) -> np.ndarray:
    """A separating start for the sampler: the separating Newton iterate, or the LP's W."""
    return v if solution is None else solution[1] - solution[0]


__all__ = [
    "MultiLogisticRegression", "certified", "cg_step", "constraint_rows", "decide",
    "exact_step", "newton_softmax",
]  # fmt: skip
