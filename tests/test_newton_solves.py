"""The d x d solves under Newton's method (`genvdis.newton_solves`): the panelled elimination
of wide systems must be the textbook elimination bit for bit, since Newton's iterates (and so
every result file) are made of its answers."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis import newton_solves


def _textbook(A: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Gaussian elimination with partial pivoting, one pivot at a time over whole rows (numpy
    rounds f * u and then the difference, as the compiled loops do); None on a zero pivot."""
    U, v = A.copy(), b.copy()
    d = b.size
    for k in range(d):
        p = k + int(np.argmax(np.abs(U[k:, k])))
        if U[p, k] == 0.0:
            return None
        U[[k, p]], v[[k, p]] = U[[p, k]], v[[p, k]]
        for i in range(k + 1, d):
            f = U[i, k] / U[k, k]
            if f != 0.0:
                U[i, k + 1 :] -= f * U[k, k + 1 :]
            v[i] -= f * v[k]
    x = np.zeros(d)
    for k in range(d - 1, -1, -1):
        total = v[k]
        for j in range(k + 1, d):
            total -= U[k, j] * x[j]
        x[k] = total / U[k, k]
    return x


def _one_hot_hessian(rng: np.random.Generator, d: int, m: int, levels: int = 4) -> np.ndarray:
    """A ridge-penalised X^T W X (d x d) of m one-hot rows (rank <= m, much below d), as
    promoters' are; columns beyond the last whole attribute are absent (the ridge alone)."""
    attributes = (d - 1) // levels
    X = np.zeros((m, d))
    X[:, -1] = 1.0
    columns = np.arange(attributes) * levels + rng.integers(levels, size=(m, attributes))
    X[np.arange(m)[:, None], columns] = 1.0
    w = rng.uniform(0.01, 0.25, size=m)
    return (X.T * w) @ X + 1e-8 * np.eye(d)


@pytest.mark.parametrize("d", [3, 40, newton_solves.BLOCKED_MIN, 131, 10 * newton_solves.PANEL + 3])
def test_panelled_elimination_is_the_textbook_one_bit_for_bit(d):
    """Dense, sparse-with-exact-zeros and low-rank one-hot systems, on both sides of
    BLOCKED_MIN: the same x, byte for byte, as the one-pivot-at-a-time elimination."""
    rng = np.random.default_rng(d)
    dense = rng.normal(size=(d, d))
    sparse = dense * (rng.uniform(size=(d, d)) < 0.2) + np.diag(rng.uniform(1e-9, 1e-8, d))
    systems = [dense, sparse]
    if d > 10:
        systems.append(_one_hot_hessian(rng, d, m=d // 3))
    for A in systems:
        b = rng.normal(size=d)
        x = np.zeros(d)
        assert not newton_solves.solve_into(A, b, x)
        expected = _textbook(A, b)
        assert x.tobytes() == expected.tobytes()
        np.testing.assert_allclose(A @ x, b, rtol=1e-6, atol=1e-6 * np.abs(b).max())


def test_a_zero_pivot_in_a_later_panel_is_singular():
    """A column of zeros beyond the first panel: no pivot there, the system is reported
    singular and x is left untouched, as LAPACK would give up."""
    d = newton_solves.BLOCKED_MIN + 10
    rng = np.random.default_rng(3)
    A = rng.normal(size=(d, d))
    A[:, 2 * newton_solves.PANEL + 5] = 0.0
    x = np.full(d, 7.0)
    assert newton_solves.solve_into(A, rng.normal(size=d), x)
    assert (x == 7.0).all()
