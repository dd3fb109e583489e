"""Arithmetic whose bits do not depend on the CPU: the products, reductions, factorisations
and elementwise exponentials and logarithms of every number that reaches a result.

numpy's `@`, `dot`, `matmul` and `linalg` (and numba's compiled np.dot, through scipy's
`cython_blas`) call OpenBLAS, which picks its kernel per CPU at load time (Haswell, Zen,
SkylakeX...): each kernel sums in its own order, so the same product differs in the last bits
from one CPU to the next, and a sampled hyperplane, which amplifies them, differed by up to 12
test errors (issue 30 §7). numpy's exp, log, power and arctan on float64 arrays take AVX-512
code on CPUs that have it and the C library's elsewhere, which differ in the last bit too.

Here every sum runs in an order fixed by the source: a plain loop, or eight running sums side
by side (element i goes to sum i % 8, which LLVM vectorises as they are independent), added
in a fixed tree at the end. Nothing uses fast-math's reassociation; multiply-adds are fused
(LLVM's contract), as in the other kernels, so the bits are the same on every CPU with FMA
(x86-64 since Haswell and Zen, ARMv8), whatever its vector width. Exponentials, logarithms
and powers are the C library's (glibc: the same bits on every such CPU), called one element at
a time from compiled code (docs/scaling.md: the guarantee and its limits).
"""

from __future__ import annotations

import numba
import numpy as np

from genvdis import kernelcache  # noqa: F401  (first: numba's cache folder, see there)

# Fused multiply-adds (no other fast-math), numpy's error model (a division by 0 is inf, no
# check): both named, as numba otherwise takes a callee's flags from its first caller.
jit = numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")


@jit
def dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum_i a_i b_i in a fixed order: eight running sums (i mod 8), then
    ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), then the tail in order."""
    n = a.size
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    top = n - n % 8
    for i in range(0, top, 8):
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
        s4 += a[i + 4] * b[i + 4]
        s5 += a[i + 5] * b[i + 5]
        s6 += a[i + 6] * b[i + 6]
        s7 += a[i + 7] * b[i + 7]
    total = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    for i in range(top, n):
        total += a[i] * b[i]
    return total


@jit
def products(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A_s B_s^T for each s (A (S, p, n), B (S, q, n)): (S, p, q), each entry a `dot`."""
    S, p, q = A.shape[0], A.shape[1], B.shape[1]
    out = np.empty((S, p, q))
    for s in range(S):
        for i in range(p):
            for j in range(q):
                out[s, i, j] = dot(A[s, i], B[s, j])
    return out


@jit
def gram(B: np.ndarray) -> np.ndarray:
    """B_s B_s^T for each s (B (S, m, r)), computed on and above the diagonal and mirrored:
    exactly symmetric."""
    S, m = B.shape[0], B.shape[1]
    out = np.empty((S, m, m))
    for s in range(S):
        for i in range(m):
            for j in range(i, m):
                out[s, i, j] = out[s, j, i] = dot(B[s, i], B[s, j])
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
def row_space_bases(A: np.ndarray) -> np.ndarray:
    """An orthonormal basis of each A_s's row space (A (S, m, d), m < d): Q_s^T (S, m, d),
    the first m columns of the Q of A_s^T's Householder QR, with LAPACK's conventions (each
    reflector I - tau v v^T, v_k = 1, beta = -sign(alpha) ||x||), in fixed-order loops."""
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
            x = R[k]
            alpha = x[k]
            xnorm2 = 0.0
            for j in range(k + 1, d):
                xnorm2 += x[j] * x[j]
            for j in range(d):
                V[k, j] = 0.0
            if xnorm2 == 0.0:
                tau[k] = 0.0
                V[k, k] = 1.0
                continue
            norm = np.sqrt(alpha * alpha + xnorm2)
            beta = -norm if alpha >= 0.0 else norm
            tau[k] = (beta - alpha) / beta
            scale = 1.0 / (alpha - beta)
            V[k, k] = 1.0
            for j in range(k + 1, d):
                V[k, j] = x[j] * scale
            for i in range(k + 1, m):  # reflect the later columns of A_s^T (rows of R)
                row = R[i]
                f = 0.0
                for j in range(k, d):
                    f += V[k, j] * row[j]
                f *= tau[k]
                for j in range(k, d):
                    row[j] -= f * V[k, j]
        for c in range(m):  # Q e_c = H_0 H_1 ... H_{m-1} e_c, applied from the last
            q = out[s, c]
            for j in range(d):
                q[j] = 0.0
            q[c] = 1.0
            for k in range(min(c, m - 1), -1, -1):
                f = 0.0
                for j in range(k, d):
                    f += V[k, j] * q[j]
                f *= tau[k]
                for j in range(k, d):
                    q[j] -= f * V[k, j]
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


@jit
def _matmul_into(A: np.ndarray, B: np.ndarray, out: np.ndarray) -> None:
    for i in range(A.shape[0]):
        row = out[i]
        for j in range(row.size):
            row[j] = 0.0
        for k in range(A.shape[1]):
            a, b = A[i, k], B[k]
            for j in range(row.size):  # across the columns: vectorised, each sum in k order
                row[j] += a * b[j]


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B for 2-d A (n, p) and B (p, q): each entry summed over p in order."""
    A = np.ascontiguousarray(A, dtype=float)
    B = np.ascontiguousarray(B, dtype=float)
    out = np.empty((A.shape[0], B.shape[1]))
    _matmul_into(A, B, out)
    return out
