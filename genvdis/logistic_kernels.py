"""The compiled loops under Newton's method for logistic regression (`newton`) and its design
layouts (`layouts`): the loss terms, the products of each layout, and the small d x d solves.

The dense kernels loop over a problem's rows innermost, over contiguous memory, so LLVM
vectorises them; that needs the division's zero check off (numpy's error model: 1/0 is inf,
as in numpy) and lets it fuse multiply-adds. No other fast-math: NaN and inf keep their
meaning. Exponentials and logarithms stay in numpy, whose SIMD versions are several times
faster than numba's scalar ones (docs/scaling.md).
"""

from __future__ import annotations

import numba
import numpy as np

from genvdis.newton_solves import (
    BLOCKED_MIN,
    solve_coupled,
    solve_into,
    solve_sparse_in_place,
    solve_unblocked,
)
from genvdis.streams import jit

vector_jit = numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")


@vector_jit
def nll_terms(eta, t):
    """-|eta| (for numpy to exponentiate) and the loss terms that need no logarithm,
    max(eta, 0) - t eta, in one pass."""
    minus_abs, linear = np.empty(eta.shape), np.empty(eta.shape)
    for a in range(eta.shape[0]):
        for i in range(eta.shape[1]):
            v = eta[a, i]
            minus_abs[a, i] = -abs(v)
            linear[a, i] = max(v, 0.0) - t[a, i] * v
    return minus_abs, linear


@vector_jit
def shifted_terms(eta, direction, which, factor, t):
    """For problems which (positions): eta + factor * direction, and its `nll_terms`, in
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


def sum_nll(minus_abs: np.ndarray, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The negative log-likelihood from `nll_terms`, and exp(-|eta|) (in minus_abs' place)."""
    e = np.exp(minus_abs, out=minus_abs)
    return linear.sum(axis=1) + np.log(1.0 + e).sum(axis=1), e


LAMBERT_ITERATIONS = 12  # Newton's method in `log_lambert`: at rounding from its start by then


@jit
def log_lambert(a: float) -> float:
    """u with u + log u = a (u = W(e^a), Lambert's W): where an exponential decay meets a
    linear growth (`quasi_start`, `newton._creep`). Newton's method on f(u) = u + log u - a
    from a (a >= 1) or e^a, right of the root and less than 1 + u above 0 there: f is concave
    and rising, so every later iterate lies left of the root, positive, and rises to it.
    Below a = -30, u = e^a to rounding (and e^a may underflow to 0)."""
    if a < -30.0:
        return np.exp(a)
    u = a if a >= 1.0 else np.exp(a)
    for _ in range(LAMBERT_ITERATIONS):
        u -= (u + np.log(u) - a) / (1.0 + 1.0 / u)
    return u


@jit
def log_lamberts(a: np.ndarray) -> np.ndarray:
    """`log_lambert` of each of a."""
    out = np.empty(a.size)
    for k in range(a.size):
        out[k] = log_lambert(a[k])
    return out


@vector_jit
def separates(eta, t):
    """Whether each problem's predictor eta (S, n) classifies all its rows (labels t (S, n))
    correctly. A problem's check stops at its first mistake, within a few rows on all but
    (nearly) separable sets."""
    out = np.ones(eta.shape[0], dtype=np.bool_)
    for a in range(eta.shape[0]):
        for i in range(eta.shape[1]):
            if (eta[a, i] > 0) != (t[a, i] > 0):
                out[a] = False
                break
    return out


# --- the gathered layout: feature-major rows (d, m) per problem ---


@vector_jit
def _combine(x: np.ndarray, coef: np.ndarray, out: np.ndarray) -> None:
    """out = coef @ x for one feature-major design x (d, m)."""
    c = coef[0]
    for i in range(x.shape[1]):
        out[i] = c * x[0, i]
    for j in range(1, x.shape[0]):
        c = coef[j]
        for i in range(x.shape[1]):
            out[i] += c * x[j, i]


@vector_jit
def gathered_predictor(XT, problems, beta):
    """X beta for feature-major designs XT[problems] (S, d, m)."""
    out = np.empty((problems.size, XT.shape[2]))
    for a in range(problems.size):
        _combine(XT[problems[a]], beta[a], out[a])
    return out


@vector_jit
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


@vector_jit
def gathered_residuals(XT, problems, t, eta, e):
    """For `layouts.Design.residual_sums` on feature-major designs: the residuals t - p and X^T of
    them (problems and t, eta, e aligned)."""
    gradient, residual = np.empty((problems.size, XT.shape[1])), np.empty(eta.shape)
    for a in range(problems.size):
        for i in range(eta.shape[1]):
            residual[a, i] = t[a, i] - (1.0 if eta[a, i] >= 0 else e[a, i]) / (1.0 + e[a, i])
        gradient[a] = np.dot(XT[problems[a]], residual[a])
    return gradient, residual


@vector_jit
def gathered_step(XT, problems, t, eta, e, beta, penalty):
    """`layouts.Design.newton_step` for feature-major designs, up to the exponential and logarithm
    (the new predictors' `nll_terms` instead), one problem at a time so that its rows are
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
        singular[a] = solve_unblocked(hess[a], grad[a], delta[a])
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


# --- the sparse layout's products: loops over each training row's nonzeros ---


@jit
def dense_csr(X, ones):
    """The CSR arrays (indptr, indices, values; int64 indices) of X (n, d), with a last column
    of ones if `ones`: scipy's `csr_array` of it, nonzeros row by row, columns ascending, in
    one pass each to count and to copy (no (n, d + 1) copy of X, no scipy)."""
    n, d = X.shape
    indptr = np.zeros(n + 1, dtype=np.int64)
    for r in range(n):
        count = 1 if ones else 0
        for j in range(d):
            if X[r, j] != 0.0:
                count += 1
        indptr[r + 1] = indptr[r] + count
    indices, values = np.empty(indptr[n], dtype=np.int64), np.empty(indptr[n])
    for r in range(n):
        at = indptr[r]
        for j in range(d):
            if X[r, j] != 0.0:
                indices[at], values[at] = j, X[r, j]
                at += 1
        if ones:
            indices[at], values[at] = d, 1.0
    return indptr, indices, values


@jit
def stack_rows(indptr, indices, values, idx):
    """The CSR arrays of the rows idx (S, m) of a CSR matrix, stacked in that order: problem
    s's rows become rows s m to (s + 1) m - 1, held one after the other."""
    S, m = idx.shape
    ptr = np.zeros(S * m + 1, dtype=np.int64)
    for s in range(S):
        for i in range(m):
            r = idx[s, i]
            ptr[s * m + i + 1] = ptr[s * m + i] + indptr[r + 1] - indptr[r]
    out_indices, out_values = np.empty(ptr[-1], dtype=np.int64), np.empty(ptr[-1])
    for s in range(S):
        for i in range(m):
            r, at = idx[s, i], ptr[s * m + i]
            for a in range(indptr[r], indptr[r + 1]):
                out_indices[at], out_values[at] = indices[a], values[a]
                at += 1
    return ptr, out_indices, out_values


@jit
def sparse_predictor(indptr, indices, values, idx, beta):
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
def grouped_predictor(indptr, indices, values, group, first, groups, beta):
    """`sparse_predictor` computed once a group of identical rows (`row_groups`) and copied to
    its rows: the same sums, so the same bits, for half the rows at m = 3000 on adult."""
    S, m = group.shape
    out, value = np.empty((S, m)), np.empty(m)
    for s in range(S):
        for g in range(groups[s]):
            r = first[s, g]
            total = 0.0
            for a in range(indptr[r], indptr[r + 1]):
                total += values[a] * beta[s, indices[a]]
            value[g] = total
        for i in range(m):
            out[s, i] = value[group[s, i]]
    return out


@jit
def sparse_gradient(indptr, indices, values, idx, residual, d):
    S, m = idx.shape
    out = np.zeros((S, d))
    for s in range(S):
        for i in range(m):
            r, g = idx[s, i], residual[s, i]
            for a in range(indptr[r], indptr[r + 1]):
                out[s, indices[a]] += g * values[a]
    return out


@jit
def _hessian_into(indptr, indices, values, rows, w, unit, h):
    """h += X^T diag(w) X over CSR rows `rows`, upper triangle then mirrored (h zeroed by the
    caller). `unit`: every value is 1 (one-hot data), so the products by values, exact, are
    skipped (~25% of the time on adult (discrete); same bits)."""
    for i in range(rows.size):
        r, wi = rows[i], w[i]
        lo, hi = indptr[r], indptr[r + 1]
        for a in range(lo, hi):
            row = h[indices[a]]  # column indices ascend: upper triangle
            if unit:
                for b in range(a, hi):
                    row[indices[b]] += wi
            else:
                wa = wi * values[a]
                for b in range(a, hi):
                    row[indices[b]] += wa * values[b]
    for j in range(h.shape[0]):
        for k in range(j):
            h[j, k] = h[k, j]


@jit
def sparse_hessian(indptr, indices, values, idx, w, d, unit):
    S = idx.shape[0]
    out = np.zeros((S, d, d))
    for s in range(S):
        _hessian_into(indptr, indices, values, idx[s], w[s], unit, out[s])
    return out


@jit
def sparse_directions(indptr, indices, values, idx, w, penalty, grad, unit):
    """Newton's steps (X^T W X + diag(penalty))^-1 grad of S problems held as CSR rows idx,
    each built in one d x d buffer and solved there (`newton_solves.solve_coupled`): no
    (S, d, d) Hessians written and copied. singular[s] where a system is numerically singular
    (its step left 0 for the caller); the same bits as `sparse_hessian`, + diag(penalty) and
    `newton_solves.solve`."""
    S, d = grad.shape
    delta, singular = np.zeros((S, d)), np.zeros(S, dtype=np.bool_)
    h = np.empty((d, d))
    for s in range(S):
        h[:] = 0.0
        _hessian_into(indptr, indices, values, idx[s], w[s], unit, h)
        for j in range(d):
            h[j, j] += penalty[j]
        singular[s] = solve_coupled(h, grad[s], delta[s])
        if singular[s]:
            delta[s] = 0.0
    return delta, singular


# --- the sparse layout's steps eliminated sparsest first ---


def elimination_orders(
    indptr: np.ndarray, indices: np.ndarray, idx: np.ndarray, d: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each problem of CSR rows idx (S, m): the columns present in its rows, rarest first
    (ties by index; the intercept, in every row, last), then the absent ones, as order (S, d),
    with position (S, d) each column's place in it and present (S,) how many are present. On
    one-hot data a rare level's Hessian row is nonzero only at the few levels seen with it:
    eliminated first, it fills in little (minimum degree, approximately; `sparse_steps`).
    numpy sorts (a compiled stable sort costs seconds to compile)."""
    count = _column_counts(indptr, indices, idx, d)
    present = np.count_nonzero(count, axis=1)
    ranked = np.where(count > 0, count, np.iinfo(np.int64).max)  # the absent ones last
    order = np.argsort(ranked, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(d)[None, :], axis=1)
    return order, position, present


@jit
def _column_counts(indptr, indices, idx, d):
    """How many of each problem's rows idx (S, m) hold each column: (S, d)."""
    count = np.zeros((idx.shape[0], d), dtype=np.int64)
    for s in range(idx.shape[0]):
        for r in idx[s]:
            for a in range(indptr[r], indptr[r + 1]):
                count[s, indices[a]] += 1
    return count


@jit
def _same_row(indptr, indices, values, r, q):
    """Whether CSR rows r and q hold the same nonzeros."""
    if indptr[r + 1] - indptr[r] != indptr[q + 1] - indptr[q]:
        return False
    for a in range(indptr[r + 1] - indptr[r]):
        at, aq = indptr[r] + a, indptr[q] + a
        if indices[at] != indices[aq] or values[at] != values[aq]:
            return False
    return True


@jit
def row_groups(indptr, indices, values, idx):
    """Each problem's identical rows, grouped: group (S, m) each row's group, first (S, m) the
    groups' rows (their first `groups` (S,) entries), numbered in the order of their first
    rows (the Hessian then reads the rows in order, from cache). A hash table of the rows'
    column indices finds each row's group (a row joins one only if it holds the same
    nonzeros). On adult (discrete) 3000 rows make ~1500 groups, 1000 ~660."""
    S, m = idx.shape
    group, first = np.empty((S, m), dtype=np.int64), np.empty((S, m), dtype=np.int64)
    groups = np.zeros(S, dtype=np.int64)
    size, bits = 1, 0
    while size < 2 * m:
        size, bits = 2 * size, bits + 1
    table = np.empty(size, dtype=np.int64)  # a slot's group, or -1
    for s in range(S):
        table[:] = -1
        u = 0
        for i in range(m):
            r, key = idx[s, i], 17
            for a in range(indptr[r], indptr[r + 1]):
                key = key * 1000003 + indices[a]  # wraps around: a key, not a number
            slot = ((key * -7046029254386353131) >> (64 - bits)) & (size - 1)  # Fibonacci hash
            while table[slot] >= 0:  # a group's slot, or the next free one
                if _same_row(indptr, indices, values, r, first[s, table[slot]]):
                    break
                slot = (slot + 1) & (size - 1)
            if table[slot] < 0:
                table[slot], first[s, u] = u, r
                u += 1
            group[s, i] = table[slot]
        groups[s] = u
    return group, first, groups


@jit
def sparse_steps(
    indptr, indices, values, idx, w, penalty, grad, unit, order, position, present, group,
    first, groups,
):  # fmt: skip
    """`sparse_directions` with each problem's present columns eliminated in `order`
    (`elimination_orders`: sparsest first, each pivot's update on its row's nonzeros only,
    `newton_solves.solve_sparse_in_place`; panelled from BLOCKED_MIN unknowns on), the absent
    ones (the ridge alone) b_j / penalty_j, and the Hessian summed over groups of identical rows
    (`row_groups`: each group's weights added first, in row order). Another order of sums and
    of elimination than `sparse_directions`': the steps differ in their last bits."""
    S, d = grad.shape
    delta, singular = np.zeros((S, d)), np.zeros(S, dtype=np.bool_)
    full, buffer, rhs, y = np.empty((d, d)), np.empty(d * d), np.empty(d), np.empty(d)
    summed = np.empty(idx.shape[1])
    for s in range(S):
        k, at = present[s], order[s]
        for a in range(k, d):
            if penalty[at[a]] == 0.0:
                singular[s] = True
        if singular[s]:
            continue
        summed[: groups[s]] = 0.0
        for i in range(idx.shape[1]):
            summed[group[s, i]] += w[s, i]
        full[:] = 0.0
        _hessian_into(indptr, indices, values, first[s, : groups[s]], summed, unit, full)
        h = buffer[: k * k].reshape((k, k))
        for a in range(k):
            source = full[at[a]]
            for b in range(k):
                h[a, b] = source[at[b]]
            h[a, a] += penalty[at[a]]
            rhs[a] = grad[s, at[a]]
        if k >= BLOCKED_MIN:
            singular[s] = solve_into(h, rhs[:k], y[:k])
        else:
            singular[s] = solve_sparse_in_place(h, rhs[:k], y[:k])
        if singular[s]:
            continue
        for a in range(k):
            delta[s, at[a]] = y[a]
        for a in range(k, d):
            delta[s, at[a]] = grad[s, at[a]] / penalty[at[a]]
    return delta, singular
