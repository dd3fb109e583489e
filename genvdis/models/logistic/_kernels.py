"""The compiled loops under Newton's method for logistic regression (`newton`) and its design
layouts (`layouts`): the loss terms, the products of each layout, and the small d x d solves.

The dense kernels loop over a problem's rows innermost, over contiguous memory, so LLVM
vectorises them; that needs the division's zero check off (numpy's error model: 1/0 is inf,
as in numpy) and lets it fuse multiply-adds. No other fast-math: NaN and inf keep their
meaning. Every sum runs in a fixed order (`portable.dot`, not BLAS), and exponentials and
logarithms are the C library's, called here, not numpy's (whose AVX-512 versions give other
bits): the same bits on every CPU with FMA (issue 30 §7, docs/scaling.md).
"""

from __future__ import annotations

import numba
import numpy as np

from genvdis._runtime.jit import jit
from genvdis._runtime.portable import cross_into, dot, rows_times
from genvdis.models.logistic._solves import solve_coupled, solve_unblocked

# Columns from which `gathered_step` forms X^T W X by rank-one row updates rather than dots
# (measured: dots ~BLAS's time at d = 10, updates 1.4x faster than dots at d = 65)
WIDE_DESIGN = 32

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


@vector_jit
def _exp_log1p(x, logs):
    """x = exp(x) in place, logs = log(1 + exp(x)): the C library's bits (numpy's exp and log
    take AVX-512 code where the CPU has it, whose last bits differ: issue 30 §7)."""
    for a in range(x.shape[0]):
        for i in range(x.shape[1]):
            e = np.exp(x[a, i])
            x[a, i] = e
            logs[a, i] = np.log(1.0 + e)


def sum_nll(minus_abs: np.ndarray, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The negative log-likelihood from `nll_terms`, and exp(-|eta|) (in minus_abs' place)."""
    logs = np.empty(minus_abs.shape)
    _exp_log1p(minus_abs, logs)
    return linear.sum(axis=1) + logs.sum(axis=1), minus_abs


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
        x = XT[problems[a]]
        for j in range(x.shape[0]):  # fixed-order sums, not BLAS's (`portable`)
            gradient[a, j] = dot(x[j], residual[a])
    return gradient, residual


@vector_jit
def gathered_step(XT, problems, t, eta, e, beta, penalty):
    """`layouts.Design.newton_step` for feature-major designs, up to the exponential and logarithm
    (the new predictors' `nll_terms` instead), one problem at a time so that its rows are
    fetched once and reused from cache: one pass scales them, fixed-order sums
    (`portable.cross_into` or `rows_times`, not BLAS) give X^T W X and (t - p)^T X, a pass
    after the solve gives X delta and the new predictors.
    singular[s] where H is numerically singular: the caller then takes the step (hess is
    returned for it); that problem's other outputs are left 0."""
    S, d, m = problems.size, XT.shape[1], XT.shape[2]
    grad, delta = np.empty((S, d)), np.zeros((S, d))
    hess, singular = np.empty((S, d, d)), np.zeros(S, dtype=np.bool_)
    direction, new_eta = np.empty((S, m)), np.empty((S, m))
    minus_abs, linear = np.empty((S, m)), np.empty((S, m))
    scaled, w, g = np.empty((d + 1, m)), np.empty(m), np.empty((1, d))
    xr = np.empty((m, d) if d >= WIDE_DESIGN else (0, 0))
    for a in range(S):
        x = XT[problems[a]]
        _scaled_rows(x, t[a], eta[a], e[a], scaled, w)
        # fixed-order sums (`portable`), not BLAS's, whose order is the CPU's (issue 30 §7):
        # X^T W X, exactly symmetric, and (t - p)^T X; narrow designs by dots over the rows
        # (long loops), wide ones by rank-one updates of H's rows (which then are long)
        if d < WIDE_DESIGN:
            cross_into(scaled[:d], x, hess[a], True)
            for j in range(d):
                g[0, j] = dot(scaled[d], x[j])
        else:
            for j in range(d):  # the rows, row-major
                for i in range(m):
                    xr[i, j] = x[j, i]
            rows_times(scaled[:d], xr, hess[a], True)
            rows_times(scaled[d:], xr, g, False)
        for j in range(d):
            grad[a, j] = g[0, j] - penalty[j] * beta[a, j]
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
def hessian_into(indptr, indices, values, rows, w, unit, h):
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
        hessian_into(indptr, indices, values, idx[s], w[s], unit, out[s])
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
        hessian_into(indptr, indices, values, idx[s], w[s], unit, h)
        for j in range(d):
            h[j, j] += penalty[j]
        singular[s] = solve_coupled(h, grad[s], delta[s])
        if singular[s]:
            delta[s] = 0.0
    return delta, singular


# --- the K-class ridge fit's Hessian-vector products (`softmax_cg`) ---


@jit
def softmax_hessian_times(XT, X, PT, penalty, v):
    """`softmax_cg._hessian_times`, one split at a time: U = V X^T and (P U - P sum_k P U) X
    by `portable.rows_times` (each entry a sum over k in order), the weighting between them in
    a (K - 1, m) buffer that stays in cache, no temporaries. Compiled without contraction (`jit`,
    not `vector_jit`): each product and sum of the weighting rounds on its own, as numpy's
    PT * U, its sum over the classes in class order, PT times that and the difference do, so
    the bits are those of numpy's passes between the products (`portable.rows_times` names
    its own flags: its sums stay fused). penalty (S, d): each problem's ridge."""
    S, K1, d = v.shape
    m = XT.shape[2]
    out = np.empty((S, K1, d))
    PU, total = np.empty((K1, m)), np.empty(m)
    for s in range(S):
        rows_times(v[s], XT[s], PU, False)  # U = V X^T
        p = PT[s]
        for c in range(K1):
            for i in range(m):
                PU[c, i] = p[c, i] * PU[c, i]
        for i in range(m):
            total[i] = PU[0, i]
        for c in range(1, K1):
            for i in range(m):
                total[i] = total[i] + PU[c, i]
        for c in range(K1):
            for i in range(m):
                PU[c, i] = PU[c, i] - p[c, i] * total[i]
        o = out[s]
        rows_times(PU, X[s], o, False)
        for c in range(K1):
            for j in range(d):
                o[c, j] = o[c, j] + penalty[s, j] * v[s, c, j]
    return out


@vector_jit
def spd_inverses(A):
    """`portable.spd_inverses`, the same bits in about a quarter of its time (the CG
    preconditioner's 65 x 65 inverse per split and Newton step). Every sum keeps its terms
    and their order; what changes is the work around them: each column c solves L y = e_c
    from row c on (y is exactly +0 above c, and those products leave every sum's bits as
    they are: L is finite where the factor is definite), L^T x = y only up to row c (the
    rows above are the upper triangle, which the mirror overwrites), L^T read row-wise, and
    two columns' (and the factor's two rows') sums run side by side, independent chains the
    CPU overlaps. Fused multiply-adds (`vector_jit`), as `portable`'s: without them the bits
    differ."""
    S, d = A.shape[0], A.shape[1]
    out, ok = np.empty((S, d, d)), np.ones(S, dtype=np.bool_)
    L, LT = np.zeros((d, d)), np.zeros((d, d))
    y1, y2, x1, x2 = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    for s in range(S):
        for j in range(d):  # portable's factor, two rows' sums side by side below the pivot
            total = A[s, j, j]
            for k in range(j):
                total -= L[j, k] * L[j, k]
            if not total > 0.0:  # NaN too
                ok[s] = False
                break
            L[j, j] = np.sqrt(total)
            i = j + 1
            while i + 1 < d:
                t1, t2 = A[s, i, j], A[s, i + 1, j]
                for k in range(j):
                    t1 -= L[i, k] * L[j, k]
                    t2 -= L[i + 1, k] * L[j, k]
                L[i, j], L[i + 1, j] = t1 / L[j, j], t2 / L[j, j]
                i += 2
            if i < d:
                t1 = A[s, i, j]
                for k in range(j):
                    t1 -= L[i, k] * L[j, k]
                L[i, j] = t1 / L[j, j]
        if not ok[s]:
            continue
        for i in range(d):
            for k in range(i + 1):
                LT[k, i] = L[i, k]
        c = 0
        while c + 1 < d:  # columns c and c + 1 side by side: two independent chains
            y1[c] = 1.0 / L[c, c]
            for i in range(c + 1, d):
                t1 = 1.0 if i == c else 0.0
                t2 = 1.0 if i == c + 1 else 0.0
                t1 -= L[i, c] * y1[c]
                for k in range(c + 1, i):
                    t1 -= L[i, k] * y1[k]
                    t2 -= L[i, k] * y2[k]
                y1[i], y2[i] = t1 / L[i, i], t2 / L[i, i]
            for i in range(d - 1, c, -1):
                t1, t2 = y1[i], y2[i]
                for k in range(i + 1, d):
                    t1 -= LT[i, k] * x1[k]
                    t2 -= LT[i, k] * x2[k]
                x1[i], x2[i] = t1 / L[i, i], t2 / L[i, i]
            t1 = y1[c]
            for k in range(c + 1, d):
                t1 -= LT[c, k] * x1[k]
            x1[c] = t1 / L[c, c]
            for i in range(c, d):
                out[s, i, c] = x1[i]
                out[s, c, i] = x1[i]
            for i in range(c + 1, d):
                out[s, i, c + 1] = x2[i]
                out[s, c + 1, i] = x2[i]
            c += 2
        if c < d:
            for i in range(c, d):
                total = 1.0 if i == c else 0.0
                for k in range(c, i):
                    total -= L[i, k] * y1[k]
                y1[i] = total / L[i, i]
            for i in range(d - 1, c - 1, -1):
                total = y1[i]
                for k in range(i + 1, d):
                    total -= LT[i, k] * x1[k]
                x1[i] = total / L[i, i]
            for i in range(c, d):
                out[s, i, c] = x1[i]
                out[s, c, i] = x1[i]
    return out, ok


@jit
def weighted_grams(Y):
    """Y_s^T Y_s (S, d, d) for Y (S, m, d): `portable.matmuls`(Y^T, Y)'s bits (each entry
    summed over the rows in order; the products commute, so the mirrored half is the same
    sum), from the diagonal on (`portable.rows_times`' symmetric mode), no transposed copy
    passed in."""
    S, m, d = Y.shape
    out, YT = np.empty((S, d, d)), np.empty((d, m))
    for s in range(S):
        for i in range(m):
            for j in range(d):
                YT[j, i] = Y[s, i, j]
        rows_times(YT, Y[s], out[s], True)
    return out
