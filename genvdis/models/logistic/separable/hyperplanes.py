"""Linear separability: whether a training set can be split by a hyperplane, decided exactly.

On a linearly separable training set, unregularised logistic regression has no maximum. Ng &
Jordan then picked a separating hyperplane at random with an MCMC sampler
(`genvdis.models.logistic.separable.sampler`).
The version space is V = {z = (w, b) : a_i . z > 0 for all i, ||z|| <= 1}, with
a_i = s_i (x_i, 1) and s_i = +-1 the label.

Whether a training set is separable at all is a linear program's answer (`max_margin`);
`decide` usually reaches it without the LP, through certificates of that answer that are
checked with their rounding error bounded, so a shortcut never decides wrongly
(docs/separable.md).
"""

from __future__ import annotations

import numpy as np

from genvdis._runtime.jit import jit
from genvdis.models.logistic.separable import _lp as lp

# A training set is called separable when its L-infinity maximum margin exceeds this: the LP
# below is the definition, and every shortcut in `decide` is a certificate of its answer.
MARGIN_TOL = 1e-7
# Splits whose constraint rows are built at once when certifying: bounds the memory.
CHUNK_BYTES = 32 * 2**20


def _gamma(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u): a sum of n products computed in floating point, in
    any order, is off by at most gamma_n times the sum of the products' absolute values."""
    unit = np.finfo(float).eps / 2
    return n * unit / (1 - n * unit)


def signed_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """a_i = s_i (x_i, 1): the constraint rows of the version space (last axis gets the 1)."""
    ones = np.ones(X.shape[:-1] + (1,))
    sign = (2.0 * y - 1.0)[..., None]
    return sign * np.concatenate([X, ones], axis=-1)


def widest(Z: np.ndarray) -> float:
    """1 + max_i ||z_i||_1 over the rows of Z: bounds ||a_i||_1 for every constraint row.
    Compiled for 2-d double rows in C order, with numpy's own pairwise summation (the very
    bits of np.abs(Z).sum(axis=-1)) and no n x d temporary; numpy's for the rest (whose order
    of summation differs)."""
    if Z.size == 0:
        return 1.0
    if Z.ndim == 2 and Z.dtype == np.float64 and Z.flags.c_contiguous:
        return 1.0 + _widest_rows(Z, _pairwise_plan(0, Z.shape[1]))
    return 1.0 + float(np.abs(Z).sum(axis=-1).max())


def _pairwise_plan(start: int, n: int) -> np.ndarray:
    """numpy's pairwise summation of n terms (numpy's loops_utils.h) as a postfix program:
    rows (start, length) sum a piece of at most 128 terms, rows (-1, -1) add the last two
    sums. numpy splits more than 128 terms into halves at a multiple of 8."""
    if n <= 128:
        return np.array([[start, n]], dtype=np.int64)
    half = n // 2 - (n // 2) % 8
    add = np.array([[-1, -1]], dtype=np.int64)
    return np.vstack([_pairwise_plan(start, half), _pairwise_plan(start + half, n - half), add])


@jit
def _widest_rows(Z: np.ndarray, plan: np.ndarray) -> float:
    """max_i sum_k |Z[i, k]|, each row summed as `plan` says (at least one row); NaN if a
    row's sum is. Not recursive: numba's cache cannot load recursive functions."""
    stack, top = np.empty(plan.shape[0]), -np.inf
    for i in range(Z.shape[0]):
        depth = 0
        for step in range(plan.shape[0]):
            if plan[step, 0] >= 0:
                stack[depth] = _piece_abs_sum(Z[i], plan[step, 0], plan[step, 1])
                depth += 1
            else:
                depth -= 1
                stack[depth - 1] += stack[depth]
        if stack[0] > top or stack[0] != stack[0]:
            top = stack[0]
            if top != top:
                break
    return top


@jit
def _piece_abs_sum(row: np.ndarray, start: int, n: int) -> float:
    """sum |row[start:start + n]|, n <= 128, as numpy sums it: below 8 terms one by one, else
    in 8 running sums, added pairwise, then the terms beyond a multiple of 8 one by one."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += abs(row[i])
        return total
    a, b, c, d = abs(row[start]), abs(row[start + 1]), abs(row[start + 2]), abs(row[start + 3])
    e, f, g, h = abs(row[start + 4]), abs(row[start + 5]), abs(row[start + 6]), abs(row[start + 7])
    end = start + n - n % 8
    for i in range(start + 8, end, 8):
        a, b, c, d = a + abs(row[i]), b + abs(row[i + 1]), c + abs(row[i + 2]), d + abs(row[i + 3])
        e, f = e + abs(row[i + 4]), f + abs(row[i + 5])
        g, h = g + abs(row[i + 6]), h + abs(row[i + 7])
    total = ((a + b) + (c + d)) + ((e + f) + (g + h))
    for i in range(end, start + n):
        total += abs(row[i])
    return total


def certify(lowest: np.ndarray, z: np.ndarray, row_norm: np.ndarray | float) -> np.ndarray:
    """min_i a_i.z / ||z||_inf, from the computed min_i a_i.z, lowered by its rounding: a sum of
    d products is off by at most gamma_d ||a_i||_1 ||z||_inf, row_norm bounding ||a_i||_1."""
    g = _gamma(z.shape[-1] + 4)
    scale = np.abs(z).max(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = lowest / scale
    return np.where(scale > 0, ratio - g * np.abs(ratio) - g * (1 + g) * row_norm, -np.inf)


def margin_of(A: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A lower bound, rounding included, on the L-infinity margin min_i a_i.z / ||z||_inf that
    z achieves (A (..., m, d), z (..., d)); -inf for z = 0. Above MARGIN_TOL it proves the set
    separable in the LP's sense."""
    lowest = np.einsum("...md,...d->...m", A, z).min(axis=-1)
    return certify(lowest, z, np.abs(A).sum(axis=-1).max(axis=-1))


def _margins_on_data(
    Z: np.ndarray, y: np.ndarray, idx: np.ndarray, z: np.ndarray, row_norm: float
) -> np.ndarray:
    """`margin_of` for the training sets idx (S, m) of (Z, y), with z (S, d), row_norm bounding
    every ||a_i||_1 (`widest`): each training row's product computed once, where it is read,
    with no copy of the training sets' rows (nor of the data's products with every z)."""
    sign = 2.0 * np.asarray(y, dtype=float) - 1.0
    Z, z = np.ascontiguousarray(Z, dtype=float), np.ascontiguousarray(z, dtype=float)
    return certify(_lowest_on_data(Z, sign, np.ascontiguousarray(idx), z), z, row_norm)


@jit
def _lowest_on_data(Z: np.ndarray, sign: np.ndarray, idx: np.ndarray, z: np.ndarray) -> np.ndarray:
    """min_j sign_i (Z[i] . z_s[:-1] + z_s[-1]), i = idx[s, j], for each split s; NaN if a
    product is (as numpy's min). Its rounding is the one `certify` allows for: a sum of d
    products in any order."""
    S, m, d = idx.shape[0], idx.shape[1], Z.shape[1]
    out = np.empty(S)
    for s in range(S):
        lowest = np.inf
        for j in range(m):
            i = idx[s, j]
            total = 0.0
            for k in range(d):
                total += Z[i, k] * z[s, k]
            value = sign[i] * (total + z[s, d])
            if value < lowest or value != value:
                lowest = value
                if value != value:
                    break
        out[s] = lowest
    return out


def margin_bound(A: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """An upper bound on the L-infinity max margin from any weights lambda >= 0, not all 0
    (Gordan): for ||z||_inf <= 1, min_i a_i.z <= lambda.A z / sum(lambda) <= ||A^T lambda||_1 /
    sum(lambda). A (..., m, d), weights (..., m). The weights are scaled to a maximum of 1 (no
    underflow) and the bound covers the rounding of A^T lambda; weights that are all 0, negative
    or not finite prove nothing: inf. With lambda_i = sigmoid(-a_i.beta) at the logistic MLE,
    A^T lambda is the likelihood's gradient (~0), so a bound <= MARGIN_TOL proves
    non-separability without an LP."""
    weights = np.asarray(weights, dtype=float)
    top = weights.max(axis=-1, keepdims=True)
    valid = (top[..., 0] > 0) & np.isfinite(top[..., 0]) & (weights.min(axis=-1) >= 0)
    lam = weights / np.where(valid[..., None], top, 1.0)
    gradient = np.einsum("...md,...m->...d", A, lam)
    spread = np.einsum("...m,...m->...", lam, np.abs(A).sum(axis=-1))
    g = _gamma(A.shape[-2] + A.shape[-1] + 4)
    numerator = (np.abs(gradient).sum(axis=-1) + g * spread) * (1 + g) ** 2
    total = np.where(valid, lam.sum(axis=-1), 1.0)  # >= 1 where valid
    return np.where(valid, numerator / (total * (1 - g)), np.inf)


def newton_bound(bound: np.ndarray, Z: np.ndarray, row_norm: float) -> np.ndarray:
    """Newton's margin bounds (`newton.NewtonFit.margin_bound`: ||A^T r||_1 / sum |r| with the
    residuals r of its last iterate, on data Z) made rigorous: plus the rounding of A^T r, summed
    over at most all n rows of Z. Valid where that iterate misclassifies a point (a residual of
    at least 1/2: no underflow matters), i.e. where Newton did not stop on a separating one.
    row_norm: `widest(Z)`."""
    g = _gamma(Z.shape[0] + Z.shape[1] + 5)
    return (bound + g * row_norm) * (1 + g) ** 2


def max_margin(A: np.ndarray) -> tuple[bool, np.ndarray]:
    """Solve max t s.t. A z >= t, -1 <= z <= 1 (an LP, HiGHS: `lp.solve`). Separable iff
    t > MARGIN_TOL; then z is the maximum-margin hyperplane in the L-infinity normalisation.
    The answer is certified from both of the LP's solutions: the primal z by the margin it
    achieves (`margin_of`), the dual's weights by `margin_bound`. Only if the maximum margin
    lies within the solver's tolerance of MARGIN_TOL does neither settle it, and the LP's t
    decides."""
    x, duals = lp.solve(A)
    z, t = x[:-1], x[-1]
    achieved = float(margin_of(A, z))
    if achieved > MARGIN_TOL:
        return True, z
    if margin_bound(A, np.maximum(-duals, 0.0)) <= MARGIN_TOL:
        return False, z
    return bool(t > MARGIN_TOL and achieved > 0), z


def prove_inseparable(A: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Which of the S sets {A_s z > 0} are proven empty by `margin_bound`, with weights built
    from a logistic fit beta (S, d): where the set overlaps, lambda = sigmoid(-A beta) makes the
    likelihood's gradient A^T lambda ~ 0. Under quasi-complete separation the fit drifts off to
    infinity and the gradient shrinks slowly, so more weightings are tried: lambda with its
    vanishing weights (the separated points) zeroed, at three thresholds, and each of those
    projected onto A^T lambda = 0 within its support (`_projected`). Any lambda >= 0, not all
    0, gives a valid bound, and `margin_bound` proves nothing from weights that are all 0 (the
    projection can clip every weight away), so this only saves linear programs; it never
    decides wrongly."""
    lam = 0.5 - 0.5 * np.tanh(0.5 * np.einsum("smd,sd->sm", A, beta))  # sigmoid(-A beta)
    proven = margin_bound(A, lam) <= MARGIN_TOL
    for threshold in (1e-6, 1e-3, 1e-2):
        rest = np.flatnonzero(~proven)
        if rest.size == 0:
            break
        A_r, lam_r = A[rest], lam[rest]
        support = lam_r >= threshold * lam_r.max(axis=1, keepdims=True)
        lam_r = np.where(support, lam_r, 0.0)
        projected = np.stack([_projected(A_r[i], lam_r[i], support[i]) for i in range(rest.size)])
        proven[rest] = (margin_bound(A_r, lam_r) <= MARGIN_TOL) | (
            margin_bound(A_r, projected) <= MARGIN_TOL
        )
    return proven


def _projected(A: np.ndarray, lam: np.ndarray, support: np.ndarray) -> np.ndarray:
    """lam (zero off `support`) minus its least-squares projection onto the column space of A's
    support rows B (lam's part with B^T lam = 0), clipped at 0. Only B's nonzero columns
    matter, and the projector comes from the smaller Gram matrix, p x p (B B^T) or q x q
    (B^T B) for p rows and q nonzero columns (one-hot data at small m: 91 columns, tens of
    rows), its pseudo-inverse from `eigh` (numpy's `pinv(hermitian=True)` cutoff)."""
    rows = np.flatnonzero(support)
    B = A[rows]
    B = B[:, np.flatnonzero(B.any(axis=0))]
    part = lam[rows]
    if B.shape[0] <= B.shape[1]:  # B B^T's range is B's column space: its projector is G G^+
        gram = B @ B.T
        values, vectors = np.linalg.eigh(gram)
        kept = vectors[:, np.abs(values) > _PINV_RCOND * np.abs(values).max(initial=0.0)]
        along = kept @ (kept.T @ part)
    else:
        along = B @ (np.linalg.pinv(B.T @ B, hermitian=True) @ (B.T @ part))
    out = np.zeros(lam.shape)
    out[rows] = np.maximum(part - along, 0.0)
    return out


_PINV_RCOND = 1e-15  # numpy's pinv default: eigenvalues below it times the largest count as 0


def has_conflicting_duplicates(X: np.ndarray, y: np.ndarray) -> bool:
    """Two identical inputs with different labels: a cheap, exact proof of non-separability."""
    _, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    labels_per_row = np.zeros((inverse.max() + 1, 2), dtype=bool)
    labels_per_row[inverse, y.astype(int)] = True
    return bool(labels_per_row.all(axis=1).any())


def _chunks(splits: np.ndarray, m: int, width: int) -> list[np.ndarray]:
    """`splits` in pieces whose constraint rows (m x width each) fit in CHUNK_BYTES."""
    size = max(1, CHUNK_BYTES // (8 * m * width))
    return [splits[i : i + size] for i in range(0, splits.size, size)]


def decide(
    Z: np.ndarray, y: np.ndarray, idx: np.ndarray, beta: np.ndarray, separating: np.ndarray,
    bound: np.ndarray, row_norm: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Which training sets (Z[idx[s]], y[idx[s]]) are separable: the LP's answer (`max_margin`),
    reached by certificates of it where they exist. From a Newton fit (`newton.NewtonFit`:
    beta (S, d), separating, bound), for each split: an iterate that separates with a margin
    above MARGIN_TOL (`margin_of`) proves yes; Newton's own bound (`newton_bound`), the
    weightings of `prove_inseparable` or two identical inputs with different labels prove no;
    the rest go to the LP. Returns separable (S,), a start (S, d) for the sampler (a certified
    separating z where separable: Newton's iterate or the LP's), and which starts are the LP's.
    row_norm: `widest(Z)`, if the caller has it (a batch's groups share one data set).
    """

    def rows(s: np.ndarray | int) -> np.ndarray:
        return signed_rows(Z[idx[s]], y[idx[s]])

    m, width = idx.shape[1], Z.shape[1] + 1
    separable, start = separating.copy(), beta.copy()
    from_lp = np.zeros(len(idx), dtype=bool)
    claimed = np.flatnonzero(separating)
    row_norm = widest(Z) if row_norm is None else row_norm
    margins = _margins_on_data(Z, y, idx[claimed], beta[claimed], row_norm)
    separable[claimed] = margins > MARGIN_TOL
    thin = claimed[~separable[claimed]]  # Newton's bound is no certificate where it separated
    unproven = ~separating & ~(newton_bound(bound, Z, row_norm) <= MARGIN_TOL)
    undecided = np.union1d(np.flatnonzero(unproven), thin)
    for part in _chunks(undecided, m, width):
        proven = prove_inseparable(rows(part), beta[part])
        for s in part[~proven]:
            if has_conflicting_duplicates(Z[idx[s]], y[idx[s]]):
                continue
            separable[s], z = max_margin(rows(s))
            if separable[s]:
                start[s], from_lp[s] = z, True
    return separable, start, from_lp
