"""The fixed-order row-space bases (`portable.row_space_bases`): LAPACK's answer, and the bits of
the one-reflection-at-a-time loop that every committed result was computed with."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from genvdis._runtime import portable


# portable's flags (fused multiply-adds, numpy's error model), not cached: a test module's
# kernel stays out of genvdis's kernel cache
@numba.njit(nogil=True, fastmath={"contract"}, error_model="numpy")
def _one_at_a_time(A):  # noqa: ANN001, ANN202 (compiled)
    """The loop as it was before the reflections ran four side by side (genvdis 0.10.0): each
    vector reflected alone, Q's columns one after another (the reflectors are `portable`'s:
    what changed is the order the reflections run in)."""
    S, m, d = A.shape
    out = np.empty((S, m, d))
    V, tau, R = np.empty((m, d)), np.empty(m), np.empty((m, d))
    for s in range(S):
        for i in range(m):
            for j in range(d):
                R[i, j] = A[s, i, j]
        for k in range(m):
            tau[k] = portable._reflector(R[k], k, V[k])
            if tau[k] == 0.0:
                continue
            for i in range(k + 1, m):
                portable._reflect(V[k], tau[k], R[i], k)
        for c in range(m):
            q = out[s, c]
            for j in range(d):
                q[j] = 0.0
            q[c] = 1.0
            for k in range(min(c, m - 1), -1, -1):
                portable._reflect(V[k], tau[k], q, k)
    return out


def _signed_rows(rng: np.random.Generator, S: int, m: int, d: int, kind: str) -> np.ndarray:
    """S sets of m signed rows in d columns: dense normals, or one-hot blocks with an intercept
    (promoters' kind of design: many exact zeros, repeated rows, columns never set)."""
    if kind == "dense":
        return rng.normal(size=(S, m, d))
    levels = 4
    blocks = (d - 1) // levels
    A = np.zeros((S, m, d))
    for s in range(S):
        for i in range(m):
            hot = rng.integers(0, levels - 1, size=blocks)  # the last level never occurs
            A[s, i, np.arange(blocks) * levels + hot] = 1.0
            A[s, i, -1] = 1.0
        if m > 1:
            A[s, 1] = A[s, 0]  # a repeated row
        A[s] *= rng.choice([-1.0, 1.0], size=(m, 1))
    return A


@pytest.mark.parametrize("kind", ["dense", "one-hot"])
@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8, 13, 30])
def test_the_bases_keep_the_bits_of_one_reflection_at_a_time(kind: str, m: int):
    """Four reflections side by side change no bit (signed zeros included) of any basis vector,
    for every remainder of m by four, on dense rows and on one-hot rows with exact zeros."""
    rng = np.random.default_rng(m)
    d = 41
    A = _signed_rows(rng, 3, m, d, kind)
    got, expected = portable.row_space_bases(A), _one_at_a_time(A)
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))


@pytest.mark.parametrize("kind", ["dense", "one-hot"])
def test_the_bases_are_lapacks_orthonormal_rows(kind: str):
    """Q_s^T is numpy's (LAPACK's dgeqrf and dorgqr) Q of A_s^T, transposed, to rounding and
    each row's sign (LAPACK takes sign(-0.0) = -1 for a reflector's pivot, this loop +1: a
    signed row's zeros are -0.0), with orthonormal rows and A_s's rows inside their span."""
    rng = np.random.default_rng(7)
    A = _signed_rows(rng, 4, 13, 41, kind)
    Qt = portable.row_space_bases(A)
    for s in range(len(A)):
        lapack = np.linalg.qr(A[s].T)[0].T
        signs = np.sign(np.sum(lapack * Qt[s], axis=1, keepdims=True))
        np.testing.assert_allclose(Qt[s], signs * lapack, atol=1e-12)
        np.testing.assert_allclose(Qt[s] @ Qt[s].T, np.eye(13), atol=1e-12)
        np.testing.assert_allclose(A[s] @ Qt[s].T @ Qt[s], A[s], atol=1e-12)
