"""Arithmetic whose bits do not depend on the CPU: the products, reductions, factorisations
and elementwise exponentials and logarithms of every number that reaches a result.

numpy's `@`, `dot`, `matmul` and `linalg` (and numba's compiled np.dot, through scipy's
`cython_blas`) call OpenBLAS, which picks its kernel per CPU at load time (Haswell, Zen,
SkylakeX...): each kernel sums in its own order, so the same product differs in the last bits
from one CPU to the next, and a sampled hyperplane, which amplifies them, differed by up to 12
test errors (issue 30 §7). numpy's exp, log, power and arctan on float64 arrays take AVX-512
code on CPUs that have it and the C library's elsewhere, which differ in the last bit too.

Here every sum runs in an order fixed by the source: a plain loop, or four running sums side
by side (element i goes to sum i % 4, independent, so they pipeline), added in a fixed tree at
the end; products of matrices in tiles of such sums. Nothing uses fast-math's reassociation;
multiply-adds are fused (LLVM's contract, as in the other kernels), so the bits are the same
on every x86-64 CPU with FMA and AVX2 (Haswell and Zen on), whatever its vector width.
Exponentials, logarithms and powers are the C library's, called one element at a time from
compiled code: glibc picks its FMA versions on those CPUs, whatever their vector width
(docs/scaling.md: the guarantee and its limits).
"""

from __future__ import annotations

import numba
import numpy as np

from genvdis._runtime import kernelcache  # noqa: F401  (first: numba's cache folder, see there)

# Fused multiply-adds (no other fast-math), numpy's error model (a division by 0 is inf, no
# check): both named, as numba otherwise takes a callee's flags from its first caller.
jit = numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")


@jit
def dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum_i a_i b_i in a fixed order: four running sums side by side (element i to sum
    i % 4), added as (s0 + s1) + (s2 + s3), then the tail (n % 4 elements) in order."""
    n = a.size
    s0 = s1 = s2 = s3 = 0.0
    top = n - n % 4
    for i in range(0, top, 4):
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
    total = (s0 + s1) + (s2 + s3)
    for i in range(top, n):
        total += a[i] * b[i]
    return total


@jit
def _tile(a0, a1, b0, b1):  # noqa: ANN001, ANN202 (compiled)
    """`dot` of (a0, b0), (a0, b1), (a1, b0), (a1, b1) at once, each the same bits as `dot`
    alone: the four loaded rows serve four sums (a BLAS kernel's register tile, in `dot`'s
    order), which is what brings these products within ~2x of BLAS's."""
    n = a0.size
    p0 = p1 = p2 = p3 = q0 = q1 = q2 = q3 = 0.0
    r0 = r1 = r2 = r3 = t0 = t1 = t2 = t3 = 0.0
    top = n - n % 4
    for i in range(0, top, 4):
        x0, x1, x2, x3 = a0[i], a0[i + 1], a0[i + 2], a0[i + 3]
        y0, y1, y2, y3 = a1[i], a1[i + 1], a1[i + 2], a1[i + 3]
        u0, u1, u2, u3 = b0[i], b0[i + 1], b0[i + 2], b0[i + 3]
        v0, v1, v2, v3 = b1[i], b1[i + 1], b1[i + 2], b1[i + 3]
        p0 += x0 * u0
        p1 += x1 * u1
        p2 += x2 * u2
        p3 += x3 * u3
        q0 += x0 * v0
        q1 += x1 * v1
        q2 += x2 * v2
        q3 += x3 * v3
        r0 += y0 * u0
        r1 += y1 * u1
        r2 += y2 * u2
        r3 += y3 * u3
        t0 += y0 * v0
        t1 += y1 * v1
        t2 += y2 * v2
        t3 += y3 * v3
    P, Q = (p0 + p1) + (p2 + p3), (q0 + q1) + (q2 + q3)
    R, T = (r0 + r1) + (r2 + r3), (t0 + t1) + (t2 + t3)
    for i in range(top, n):
        P += a0[i] * b0[i]
        Q += a0[i] * b1[i]
        R += a1[i] * b0[i]
        T += a1[i] * b1[i]
    return P, Q, R, T


@jit
def cross_into(A: np.ndarray, B: np.ndarray, out: np.ndarray, symmetric: bool) -> None:
    """out = A B^T (A (p, n), B (q, n)): out_ij = `dot`(A_i, B_j), in 2 x 2 tiles. With
    `symmetric` (A B^T known symmetric, as X^T W X is), only tiles on and above the diagonal,
    then the upper triangle mirrored: exactly symmetric."""
    p, q = A.shape[0], B.shape[0]
    for i in range(0, p - p % 2, 2):
        first = i if symmetric else 0
        for j in range(first, q - q % 2, 2):
            out[i, j], out[i, j + 1], out[i + 1, j], out[i + 1, j + 1] = _tile(
                A[i], A[i + 1], B[j], B[j + 1]
            )
        if q % 2:
            out[i, q - 1] = dot(A[i], B[q - 1])
            out[i + 1, q - 1] = dot(A[i + 1], B[q - 1])
    if p % 2:
        for j in range(p - 1 if symmetric else 0, q):
            out[p - 1, j] = dot(A[p - 1], B[j])
    if symmetric:
        for i in range(p):
            for j in range(i):
                out[i, j] = out[j, i]


@jit
def products(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A_s B_s^T for each s (A (S, p, n), B (S, q, n)): (S, p, q), each entry a `dot`."""
    out = np.empty((A.shape[0], A.shape[1], B.shape[1]))
    for s in range(A.shape[0]):
        cross_into(A[s], B[s], out[s], False)
    return out


@jit
def rows_times(A: np.ndarray, B: np.ndarray, out: np.ndarray, symmetric: bool) -> None:
    """out = A @ B (A (p, n), B (n, q)): each entry sum_k a_ik b_kj over k in order, by
    rank-one updates of out's rows (vectorised across j, every b_kj loaded once for four
    rows). With `symmetric` (A @ B known symmetric, as X^T W X is), each block of four rows
    only from its first row's diagonal on, then the upper triangle mirrored: exactly
    symmetric, in about half the time."""
    p, n = A.shape
    q = B.shape[1]
    for i in range(p):
        for j in range(q):
            out[i, j] = 0.0
    i = 0
    while i + 4 <= p:
        first = i if symmetric else 0
        r0, r1, r2, r3 = out[i, first:], out[i + 1, first:], out[i + 2, first:], out[i + 3, first:]
        for k in range(n):
            a0, a1, a2, a3 = A[i, k], A[i + 1, k], A[i + 2, k], A[i + 3, k]
            b = B[k, first:]
            for j in range(b.size):
                bj = b[j]
                r0[j] += a0 * bj
                r1[j] += a1 * bj
                r2[j] += a2 * bj
                r3[j] += a3 * bj
        i += 4
    while i < p:
        first = i if symmetric else 0
        row = out[i, first:]
        for k in range(n):
            a, b = A[i, k], B[k, first:]
            for j in range(b.size):
                row[j] += a * b[j]
        i += 1
    if symmetric:
        for i in range(p):
            for j in range(i):
                out[i, j] = out[j, i]


@jit
def gram_row(B: np.ndarray, Bt: np.ndarray, j: int, out: np.ndarray) -> None:
    """Row j of B B^T (B (m, r), Bt its transpose (r, m)): out_i = sum_k b_jk b_ik over k in
    order, by updates across i (vectorised); the bits of `matmuls`(B, Bt)'s row j, and of
    its column j (the products commute)."""
    for i in range(out.size):
        out[i] = 0.0
    for k in range(B.shape[1]):
        b, column = B[j, k], Bt[k]
        for i in range(out.size):
            out[i] += b * column[i]


@jit
def matmuls(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A_s @ B_s for each s (A (S, p, n), B (S, n, q)): (S, p, q), each entry summed over n
    in order (`rows_times`; for a wide q: ~2x BLAS's time, where `products` is 3-6x)."""
    out = np.empty((A.shape[0], A.shape[1], B.shape[2]))
    for s in range(A.shape[0]):
        rows_times(A[s], B[s], out[s], False)
    return out


@jit
def gram(B: np.ndarray) -> np.ndarray:
    """B_s B_s^T (S, m, m) for each s (B (S, m, r)), exactly symmetric (`cross_into`)."""
    out = np.empty((B.shape[0], B.shape[1], B.shape[1]))
    for s in range(B.shape[0]):
        cross_into(B[s], B[s], out[s], True)
    return out


@jit
def matvecs(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A_s x_s for each s (A (S, p, n), x (S, n)): (S, p)."""
    S, p = A.shape[0], A.shape[1]
    out = np.empty((S, p))
    for s in range(S):
        for i in range(p):
            out[s, i] = dot(A[s, i], x[s])
    return out


@jit
def norms(x: np.ndarray) -> np.ndarray:
    """The Euclidean norm of each row of x (S, n)."""
    out = np.empty(x.shape[0])
    for s in range(x.shape[0]):
        out[s] = np.sqrt(dot(x[s], x[s]))
    return out


@jit
def _reflect(v: np.ndarray, tau: float, x: np.ndarray, k: int) -> None:
    """x <- (I - tau v v^T) x over coordinates k.. (v is 0 before k), its dot in order."""
    f = 0.0
    for j in range(k, x.shape[0]):
        f += v[j] * x[j]
    f *= tau
    for j in range(k, x.shape[0]):
        x[j] -= f * v[j]


@jit
def _reflect4(v: np.ndarray, tau: float, X: np.ndarray, i: int, k: int) -> None:
    """`_reflect` of rows i..i+3 of X at once, each the same bits as alone: the four dots
    are independent chains, each in `_reflect`'s order, that the CPU overlaps (one dot alone
    waits on each add before the next: its order is fixed, so it cannot be split)."""
    a, b, c, e = X[i], X[i + 1], X[i + 2], X[i + 3]
    fa = fb = fc = fe = 0.0
    for j in range(k, v.shape[0]):
        vj = v[j]
        fa += vj * a[j]
        fb += vj * b[j]
        fc += vj * c[j]
        fe += vj * e[j]
    fa *= tau
    fb *= tau
    fc *= tau
    fe *= tau
    for j in range(k, v.shape[0]):
        a[j] -= fa * v[j]
        b[j] -= fb * v[j]
        c[j] -= fc * v[j]
        e[j] -= fe * v[j]


@jit
def _reflect_rows(v: np.ndarray, tau: float, X: np.ndarray, start: int, k: int) -> None:
    """`_reflect` of each row of X from `start` on, four at a time (`_reflect4`)."""
    n = X.shape[0]
    i = start
    while i + 4 <= n:
        _reflect4(v, tau, X, i, k)
        i += 4
    for r in range(i, n):
        _reflect(v, tau, X[r], k)


@jit
def _reflector(x: np.ndarray, k: int, v: np.ndarray) -> float:
    """LAPACK's dlarfg for x[k:]: the reflector I - tau v v^T that takes x[k:] to beta e_k,
    beta = -sign(alpha) ||x[k:]|| (alpha = x_k, sign(+-0) = +1); v (zero before k, v_k = 1)
    written, tau returned: 0 where x[k + 1:] is all 0 (H = I), else in [1, 2]."""
    alpha = x[k]
    xnorm2 = 0.0
    for j in range(k + 1, x.size):
        xnorm2 += x[j] * x[j]
    for j in range(v.size):
        v[j] = 0.0
    v[k] = 1.0
    if xnorm2 == 0.0:
        return 0.0
    norm = np.sqrt(alpha * alpha + xnorm2)
    beta = -norm if alpha >= 0.0 else norm
    scale = 1.0 / (alpha - beta)
    for j in range(k + 1, x.size):
        v[j] = x[j] * scale
    return (beta - alpha) / beta


@jit
def row_space_bases(A: np.ndarray) -> np.ndarray:
    """An orthonormal basis of each A_s's row space (A (S, m, d), m < d): Q_s^T (S, m, d),
    the first m columns of the Q of A_s^T's Householder QR, with LAPACK's conventions (each
    reflector I - tau v v^T, v_k = 1, beta = -sign(alpha) ||x||), in fixed-order loops.
    Each reflector acts on every vector it applies to before the next one does (Q's columns
    too: column c gets H_c, ..., H_0 in that order, as Q e_c = H_0 ... H_c e_c), so the
    vectors' reflections run four side by side (`_reflect_rows`), each with the bits of its
    own sequence."""
    S, m, d = A.shape
    out = np.empty((S, m, d))
    V = np.empty((m, d))  # the reflectors' vectors, row k zero before k
    tau = np.empty(m)
    R = np.empty((m, d))  # A_s's rows: the columns of A_s^T, reflected in place
    for s in range(S):
        for i in range(m):
            for j in range(d):
                R[i, j] = A[s, i, j]
        for k in range(m):
            tau[k] = _reflector(R[k], k, V[k])
            if tau[k] != 0.0:  # else H_k = I: the later columns stay as they are
                _reflect_rows(V[k], tau[k], R, k + 1, k)  # the later columns of A_s^T
        Q = out[s]  # row c: Q e_c = H_0 H_1 ... H_c e_c, the reflectors from the last
        for c in range(m):
            for j in range(d):
                Q[c, j] = 0.0
            Q[c, c] = 1.0
        for k in range(m - 1, -1, -1):  # H_k = I too (tau 0): x - 0 v can turn -0.0 into
            _reflect_rows(V[k], tau[k], Q, k, k)  # +0.0, and Q's bits always had it
    return out


@jit
def solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X_s with A_s X_s = B_s for each s (A (S, d, d), B (S, d, k)), by Gaussian elimination
    with partial pivoting (LAPACK's dgesv's choices, in fixed-order loops); NaN where a pivot
    is exactly 0 (A_s numerically singular, where dgesv fails)."""
    S, d, k = B.shape
    out = np.empty((S, d, k))
    U, V = np.empty((d, d)), np.empty((d, k))
    for s in range(S):
        for i in range(d):
            for j in range(d):
                U[i, j] = A[s, i, j]
            for j in range(k):
                V[i, j] = B[s, i, j]
        singular = False
        for c in range(d):
            p = c
            for i in range(c + 1, d):
                if abs(U[i, c]) > abs(U[p, c]):
                    p = i
            if U[p, c] == 0.0 or not np.isfinite(U[p, c]):
                singular = True
                break
            if p != c:
                for j in range(d):
                    U[c, j], U[p, j] = U[p, j], U[c, j]
                for j in range(k):
                    V[c, j], V[p, j] = V[p, j], V[c, j]
            for i in range(c + 1, d):
                f = U[i, c] / U[c, c]
                for j in range(c + 1, d):
                    U[i, j] -= f * U[c, j]
                for j in range(k):
                    V[i, j] -= f * V[c, j]
        if singular:
            for i in range(d):
                for j in range(k):
                    out[s, i, j] = np.nan
            continue
        for j in range(k):
            for c in range(d - 1, -1, -1):
                total = V[c, j]
                for i in range(c + 1, d):
                    total -= U[c, i] * out[s, i, j]
                out[s, c, j] = total / U[c, c]
    return out


@jit
def spd_inverses(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of each symmetric positive definite A_s (S, d, d), by its Cholesky factor
    (LAPACK's potrf and potri's arithmetic, in fixed-order loops), column by column, the lower
    triangle mirrored: exactly symmetric. ok[s] False where a pivot is not positive (A_s not
    numerically definite); that inverse is left undefined."""
    S, d = A.shape[0], A.shape[1]
    out, ok = np.empty((S, d, d)), np.ones(S, dtype=np.bool_)
    L, y = np.zeros((d, d)), np.empty(d)
    for s in range(S):
        for j in range(d):
            for i in range(j, d):
                total = A[s, i, j]
                for k in range(j):
                    total -= L[i, k] * L[j, k]
                if i == j:
                    if not total > 0.0:  # NaN too
                        ok[s] = False
                        break
                    L[j, j] = np.sqrt(total)
                else:
                    L[i, j] = total / L[j, j]
            if not ok[s]:
                break
        if not ok[s]:
            continue
        for c in range(d):  # column c: L y = e_c, then L^T x = y
            for i in range(d):
                total = 1.0 if i == c else 0.0
                for k in range(i):
                    total -= L[i, k] * y[k]
                y[i] = total / L[i, i]
            for i in range(d - 1, -1, -1):
                total = y[i]
                for k in range(i + 1, d):
                    total -= L[k, i] * out[s, k, c]
                out[s, i, c] = total / L[i, i]
        for i in range(d):
            for j in range(i):
                out[s, j, i] = out[s, i, j]
    return out, ok


@jit
def _exp_into(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = np.exp(x[i])


@jit
def _log_into(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = np.log(x[i])


@jit
def _log1p_into(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = np.log(1.0 + x[i])


@jit
def _power_into(x: np.ndarray, y: float, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = x[i] ** y


def _each(kernel, x: np.ndarray, *args) -> np.ndarray:  # noqa: ANN001
    x = np.ascontiguousarray(x, dtype=float)
    out = np.empty(x.shape)
    kernel(x.reshape(-1), *args, out.reshape(-1))
    return out


def exp(x: np.ndarray) -> np.ndarray:
    """e^x elementwise, the C library's bits (not numpy's AVX-512 ones)."""
    return _each(_exp_into, x)


def log(x: np.ndarray) -> np.ndarray:
    """log x elementwise, the C library's bits (not numpy's AVX-512 ones)."""
    return _each(_log_into, x)


def log_one_plus(x: np.ndarray) -> np.ndarray:
    """log(1 + x) elementwise (1 + x rounded first, as numpy's np.log(1.0 + x))."""
    return _each(_log1p_into, x)


def power(x: np.ndarray, y: float) -> np.ndarray:
    """x ** y elementwise for a scalar y, the C library's bits (numpy's differ on AVX-512)."""
    return _each(_power_into, x, float(y))


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B for 2-d A (n, p) and B (p, q): each entry summed over p in order."""
    A = np.ascontiguousarray(A, dtype=float)
    B = np.ascontiguousarray(B, dtype=float)
    out = np.empty((A.shape[0], B.shape[1]))
    rows_times(A, B, out, False)
    return out
