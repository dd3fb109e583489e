"""Newton's d x d systems, one per problem: Gaussian elimination with partial pivoting,
compiled (`logistic_kernels` calls it inside its loops over problems).

Wide systems are eliminated in panels of PANEL columns with the updates of the columns right
of a panel delayed and applied a few pivots at a time: each entry still receives the same
updates a_ij -= f_ik u_kj, one k at a time, in increasing k, each rounded, and the pivots are
chosen from the same values, so the answer is the unblocked elimination's bit for bit; but a
row of the trailing matrix is read once a panel instead of once a pivot (on promoters' 172
coupled columns at m = 78, 1.3x faster; docs/scaling.md).

The gathered layout's compiled step (`logistic_kernels.gathered_step`, compiled with
contracted multiply-adds) calls `solve_unblocked` itself: LLVM inlines and fuses it there, and
the results are made of those fused bits, so it keeps that elimination as it was.
"""

from __future__ import annotations

import numba
import numpy as np

from genvdis._runtime import kernelcache  # noqa: F401  (first: numba's cache folder, see there)

# Multiply-adds fused (LLVM's contract, no other fast-math): a_ij - f u_kj rounds once. The
# eliminations always ran so (they were compiled as callees of `gathered_step`'s fused loops),
# and every result file is made of their bits; panelled or not, each update fuses alike. Both
# flags set here, as numba otherwise takes them from whichever caller compiles a function
# first (docs/scaling.md); numpy's error model changes no bit (every divisor is a nonzero
# pivot), it only spares the divisions their zero checks.
jit = numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")

# Columns per panel; systems narrower than BLOCKED_MIN are eliminated unblocked: there the
# matrix stays in cache and panels only add overhead (measured equal at 61-65 unknowns).
PANEL, BLOCKED_MIN = 16, 96


@jit
def _pivot(U: np.ndarray, v: np.ndarray, k: int) -> int:
    """Partial pivoting at step k: the row p >= k of column k's largest |entry| (the first of
    equals) swapped with row k, in U and v; p, or -1 (nothing swapped) where that entry is 0."""
    p = k
    for i in range(k + 1, v.size):
        if abs(U[i, k]) > abs(U[p, k]):
            p = i
    if U[p, k] == 0.0:
        return -1
    if p != k:
        for j in range(v.size):
            U[k, j], U[p, j] = U[p, j], U[k, j]
        v[k], v[p] = v[p], v[k]
    return p


@jit
def _eliminate_panel(U, v, F, k0, k1):
    """Elimination steps k0 .. k1 - 1 (pivot search, row swap, multipliers f_ik), updating
    columns below k1 and v only; f_ik goes to F[i, k - k0] (F's rows swap with U's). True
    where a pivot is exactly 0."""
    d = v.size
    for k in range(k0, k1):
        p = _pivot(U, v, k)
        if p < 0:
            return True
        for j in range(k - k0):
            F[k, j], F[p, j] = F[p, j], F[k, j]
        pivot_row = U[k, k + 1 : k1]
        for i in range(k + 1, d):
            f = U[i, k] / U[k, k]
            F[i, k - k0] = f
            if f != 0.0:  # a Hessian's rows are often 0 below a pivot: nothing to subtract
                row = U[i, k + 1 : k1]
                for j in range(pivot_row.size):  # 1-d views: LLVM vectorises this loop
                    row[j] -= f * pivot_row[j]
            v[i] -= f * v[k]
    return False


@jit
def _delayed_updates(U, F, i, k0, k_end, k1):
    """Row i's columns from k1 on: the updates by pivots k0 .. k_end - 1, in that order, four
    at a time where all four multipliers are nonzero (each subtraction still rounded on its
    own: no fused multiply-add), one at a time, skipping zeros, elsewhere."""
    row = U[i, k1:]
    k = k0
    while k < k_end:
        f = F[i, k - k0 : k_end - k0]
        if f.size >= 4 and f[0] != 0.0 and f[1] != 0.0 and f[2] != 0.0 and f[3] != 0.0:
            f0, f1, f2, f3 = f[0], f[1], f[2], f[3]
            p0, p1, p2, p3 = U[k, k1:], U[k + 1, k1:], U[k + 2, k1:], U[k + 3, k1:]
            for j in range(row.size):
                row[j] = (((row[j] - f0 * p0[j]) - f1 * p1[j]) - f2 * p2[j]) - f3 * p3[j]
            k += 4
            continue
        if f[0] != 0.0:
            pivot_row = U[k, k1:]
            for j in range(row.size):
                row[j] -= f[0] * pivot_row[j]
        k += 1


@jit
def _back_substitute(U: np.ndarray, v: np.ndarray, x: np.ndarray) -> None:
    """x with U x = v, U upper triangular (the elimination's), from the last unknown up."""
    for k in range(v.size - 1, -1, -1):
        total = v[k]
        for j in range(k + 1, v.size):
            total -= U[k, j] * x[j]
        x[k] = total / U[k, k]


@jit
def solve_into(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> bool:
    """`solve_unblocked`'s answer (bit for bit where both run without fused multiply-adds, as
    here), in panels for systems of BLOCKED_MIN unknowns or more (the module's docstring)."""
    d = b.size
    if d < BLOCKED_MIN:
        return solve_unblocked(A, b, x)
    U, v = A.copy(), b.copy()
    F = np.empty((d, PANEL))
    for k0 in range(0, d, PANEL):
        k1 = min(k0 + PANEL, d)
        if _eliminate_panel(U, v, F, k0, k1):
            return True
        if k1 < d:  # rows below k0 get the panel's updates right of it (pivot rows first)
            for i in range(k0 + 1, d):
                _delayed_updates(U, F, i, k0, min(i, k1), k1)
    _back_substitute(U, v, x)
    return False


@jit
def solve_unblocked(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> bool:
    """x with A x = b, by Gaussian elimination with partial pivoting (LAPACK's dgesv, without
    numpy's overhead per call, which exceeds a small system's work); True, and x untouched,
    where a pivot is exactly 0 (A is numerically singular), the case where LAPACK gives up."""
    d = b.size
    U, v = A.copy(), b.copy()
    for k in range(d):
        if _pivot(U, v, k) < 0:
            return True
        pivot_row = U[k, k + 1 :]
        for i in range(k + 1, d):
            f = U[i, k] / U[k, k]
            if f != 0.0:  # a Hessian's rows are often 0 below a pivot: nothing to subtract
                row = U[i, k + 1 :]
                for j in range(pivot_row.size):  # 1-d views: LLVM vectorises this loop
                    row[j] -= f * pivot_row[j]
            v[i] -= f * v[k]
    _back_substitute(U, v, x)
    return False


@jit
def solve_coupled(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> bool:
    """`solve_into`, eliminating only the coupled unknowns: those whose row of A has a nonzero
    off the diagonal. A decoupled unknown (a column absent from a training set: its Hessian row
    is the ridge alone) is b_k / A_kk; elimination leaves the others untouched by it (its
    multipliers are 0, and partial pivoting never picks its row), so the answer is the full
    elimination's, bit for bit, at (coupled / d)^3 of the cost: half the columns at m = 100 on
    adult (discrete)."""
    d = b.size
    # at[:k]: the coupled unknowns, ascending (np.flatnonzero(coupled), by a loop: a third of a
    # second less to compile on an empty cache)
    coupled, at, k = np.zeros(d, dtype=np.bool_), np.empty(d, dtype=np.int64), 0
    for i in range(d):
        for j in range(d):
            if j != i and A[i, j] != 0.0:
                coupled[i] = True
                at[k] = i
                k += 1
                break
    for i in range(d):
        if not coupled[i]:
            if A[i, i] == 0.0:
                return True
    sub, rhs, y = np.empty((k, k)), np.empty(k), np.empty(k)
    for i in range(k):
        rhs[i] = b[at[i]]
        for j in range(k):
            sub[i, j] = A[at[i], at[j]]
    if solve_into(sub, rhs, y):
        return True
    for i in range(d):
        if not coupled[i]:
            x[i] = b[i] / A[i, i]
    for i in range(k):
        x[at[i]] = y[i]
    return False


# A pivot row's nonzeros right of the pivot are taken one by one up to its dense tail, from
# where they make at least this share of the row (updated whole there: contiguous, vectorised).
DENSE_TAIL = 0.5


@jit
def _sparse_head(row: np.ndarray, start: int, cols: np.ndarray) -> tuple[int, int]:
    """The nonzeros of row[start:] before its dense tail (DENSE_TAIL), their columns in cols:
    (how many, where the tail begins). One pass from the end, without a branch on the entries
    (a select and conditional counts: the rows' patterns are irregular, and mispredicted
    branches were a third of a sparse elimination's time on adult (discrete)): every nonzero's
    column is noted, descending, with how many were seen where the tail begins; those after
    are the head's, in reverse."""
    d, tail, seen, at_tail = row.size, row.size, 0, 0
    for j in range(d - 1, start - 1, -1):  # the tail: the longest end at least DENSE_TAIL full
        cols[seen] = j
        seen += row[j] != 0.0
        longest = seen >= DENSE_TAIL * (d - j)
        tail = j if longest else tail
        at_tail = seen if longest else at_tail
    n, lo, hi = seen - at_tail, at_tail, seen - 1
    while lo < hi:  # the head's columns ascending, then moved to the front
        cols[lo], cols[hi] = cols[hi], cols[lo]
        lo, hi = lo + 1, hi - 1
    for a in range(n):
        cols[a] = cols[at_tail + a]
    return n, tail


@jit
def solve(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`solve_coupled` for each of S systems: x (S, d), and singular (S,)."""
    x, singular = np.zeros(b.shape), np.zeros(b.shape[0], dtype=np.bool_)
    for s in range(b.shape[0]):
        singular[s] = solve_coupled(A[s], b[s], x[s])
    return x, singular


def pseudo_inverse_steps(hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """H^+ g for each problem; no step (0) where H or g is not finite, which only an overflow
    makes: LAPACK's SVD may fail or never return on inf and NaN."""
    finite = np.isfinite(hess).all(axis=(1, 2)) & np.isfinite(grad).all(axis=1)
    if finite.all():
        return np.einsum("sde,se->sd", np.linalg.pinv(hess), grad)
    delta = np.zeros(grad.shape)
    delta[finite] = pseudo_inverse_steps(hess[finite], grad[finite])
    return delta


@jit
def solve_symmetric_in_place(U: np.ndarray, v: np.ndarray, x: np.ndarray) -> bool:
    """x with U x = v for a symmetric positive definite U (a ridge-penalised X^T W X), by
    symmetric elimination without pivoting (LDL^T, the multipliers read from the pivot row),
    in U's upper triangle and v themselves (scratch; the lower triangle is left as it was):
    half the updates of an LU elimination, no pivot search, no row swaps; each pivot row's
    update applied only where it is nonzero (subtracting f * 0 changes nothing, a zero's sign
    aside) up to its dense tail, and to the tail whole: on a system ordered sparsest first
    (`sparsest_first.elimination_orders`) little fills in before it. True, and x untouched,
    where a pivot is not positive (to rounding, the matrix is not positive definite): the
    caller then solves it with pivoting."""
    d = v.size
    cols, values = np.empty(d, dtype=np.int64), np.empty(d)
    for k in range(d):
        pivot = U[k, k]
        if not pivot > 0.0:  # NaN too
            return True
        n, tail = _sparse_head(U[k], k + 1, cols)
        for a in range(n):
            values[a] = U[k, cols[a]]
        pivot_tail = U[k, tail:]
        for a in range(n):  # the rows of the head's nonzeros: their columns from their own
            i = cols[a]
            f = values[a] / pivot
            target = U[i]
            for b in range(a, n):
                target[cols[b]] -= f * values[b]
            row = U[i, tail:]
            for j in range(pivot_tail.size):
                row[j] -= f * pivot_tail[j]
            v[i] -= f * v[k]
        for i in range(tail, d):  # the tail's rows: the tail from their own column
            f = U[k, i] / pivot
            if f == 0.0:
                continue
            row, pivot_row = U[i, i:], U[k, i:]
            for j in range(row.size):
                row[j] -= f * pivot_row[j]
            v[i] -= f * v[k]
    _back_substitute(U, v, x)
    return False
