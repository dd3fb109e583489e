"""The d x d solves under Newton's method (`genvdis.models.logistic._solves`): Newton's iterates,
and so
every result file, are made of their bits, so the elimination must be exactly the textbook one
with fused multiply-adds, and the panelled elimination of wide systems exactly the unblocked."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from genvdis.models.logistic import _solves as newton_solves


def _minus_product(c: float, a: float, b: float) -> float:
    """c - a b rounded once (a fused multiply-add), exactly: by rational arithmetic."""
    return float(Fraction(c) - Fraction(a) * Fraction(b))


def _back_substitution(U: np.ndarray, v: np.ndarray) -> np.ndarray:
    """x with U x = v (U's upper triangle), from the last unknown up, each update rounded once."""
    d = v.size
    x = np.zeros(d)
    for k in range(d - 1, -1, -1):
        total = v[k]
        for j in range(k + 1, d):
            total = _minus_product(total, U[k, j], x[j])
        x[k] = total / U[k, k]
    return x


def _textbook(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Gaussian elimination with partial pivoting, one pivot at a time, each update
    u_ij - f u_kj (and the right-hand side's, and the back-substitution's) rounded once."""
    U, v = A.copy(), b.copy()
    d = b.size
    for k in range(d):
        p = k + int(np.argmax(np.abs(U[k:, k])))
        U[[k, p]], v[[k, p]] = U[[p, k]], v[[p, k]]
        for i in range(k + 1, d):
            f = U[i, k] / U[k, k]
            if f != 0.0:
                for j in range(k + 1, d):
                    U[i, j] = _minus_product(U[i, j], f, U[k, j])
            v[i] = _minus_product(v[i], f, v[k])
    return _back_substitution(U, v)


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


def _assert_solves(A: np.ndarray, x: np.ndarray, b: np.ndarray) -> None:
    """A backward-stable solution: residual within a few d eps |A| |x| (the one-hot systems'
    ridge of 1e-8 makes them too ill-conditioned for a forward error bound)."""
    scale = b.size * np.finfo(float).eps * np.abs(A).max() * np.abs(x).max()
    assert np.abs(A @ x - b).max() <= 100 * scale + 1e-12 * np.abs(b).max()


def _systems(d: int) -> list[np.ndarray]:
    """A dense system, a sparse one with exact zeros below pivots, and a one-hot Hessian."""
    rng = np.random.default_rng(d)
    dense = rng.normal(size=(d, d))
    sparse = dense * (rng.uniform(size=(d, d)) < 0.2) + np.diag(rng.uniform(1e-9, 1e-8, d))
    return [dense, sparse, _one_hot_hessian(rng, d, m=d // 3)]


@pytest.mark.parametrize("d", [5, 13, 30])
def test_the_elimination_is_the_textbook_one_with_fused_updates(d):
    """Bit for bit the elimination whose updates round once (what the compiled loops, built
    with contracted multiply-adds, compute), and a solution of the system."""
    for A in _systems(d):
        b = np.random.default_rng(1).normal(size=d)
        x = np.zeros(d)
        assert not newton_solves.solve_into(A, b, x)
        assert x.tobytes() == _textbook(A, b).tobytes()
        _assert_solves(A, x, b)


@pytest.mark.parametrize("d", [newton_solves.BLOCKED_MIN, 131, 10 * newton_solves.PANEL + 3])
def test_panelled_elimination_is_the_unblocked_one_bit_for_bit(d):
    """Wide systems, eliminated in panels with delayed updates: the same x, byte for byte, as
    the one-pivot-at-a-time elimination, and a solution of the system."""
    for A in _systems(d):
        b = np.random.default_rng(2).normal(size=d)
        x, unblocked = np.zeros(d), np.zeros(d)
        assert not newton_solves.solve_into(A, b, x)
        assert not newton_solves.solve_unblocked(A, b, unblocked)
        assert x.tobytes() == unblocked.tobytes()
        _assert_solves(A, x, b)


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


def _rare_levels_hessian(rng: np.random.Generator, d: int, m: int) -> np.ndarray:
    """`_one_hot_hessian` with skewed levels, as adult's are (a few common ones, many rare),
    its unknowns ordered rarest first as `sparsest_first.elimination_orders` orders them."""
    attributes, levels = (d - 1) // 6, 6
    X = np.zeros((m, d))
    X[:, -1] = 1.0
    chosen = rng.choice(levels, p=[0.6, 0.2, 0.1, 0.05, 0.03, 0.02], size=(m, attributes))
    X[np.arange(m)[:, None], np.arange(attributes) * levels + chosen] = 1.0
    X = X[:, np.argsort(X.sum(axis=0), kind="stable")]
    X = X[:, X.any(axis=0)]
    w = rng.uniform(0.01, 0.25, size=m)
    return (X.T * w) @ X + 1e-8 * np.eye(X.shape[1])


def _textbook_symmetric(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Symmetric elimination without pivoting (LDL^T) in the upper triangle: at pivot k, each
    row i > k takes f = u_ki / u_kk (the pivot row's entry, by symmetry) and u_ij - f u_kj for
    j >= i; every update, the right-hand side's and the back-substitution's rounded once."""
    U, v = A.copy(), b.copy()
    d = b.size
    for k in range(d):
        for i in range(k + 1, d):
            f = U[k, i] / U[k, k]
            if f != 0.0:
                for j in range(i, d):
                    U[i, j] = _minus_product(U[i, j], f, U[k, j])
                v[i] = _minus_product(v[i], f, v[k])
    return _back_substitution(U, v)


@pytest.mark.parametrize(
    "d, m", [(13, 5), (31, 40), (61, 200), pytest.param(91, 30, marks=pytest.mark.slow)]
)
def test_the_symmetric_elimination_is_the_textbook_ldlt_bit_for_bit(d, m):
    """`solve_symmetric_in_place` on ridge-penalised one-hot Hessians (rarest first, as
    Newton's sparsest-first steps give it) and on a dense positive definite matrix: byte for
    byte the textbook LDL^T with fused updates, whatever the lower triangle holds (it reads
    the upper one only), and a solution of the system."""
    rng = np.random.default_rng(d * m)
    B = rng.normal(size=(d, d))
    for A in [_rare_levels_hessian(rng, d, m), _one_hot_hessian(rng, d, m), B @ B.T]:
        k = A.shape[0]
        b = rng.normal(size=k)
        U, x = np.triu(A) + np.tril(rng.normal(size=A.shape), -1), np.zeros(k)
        assert not newton_solves.solve_symmetric_in_place(U, b.copy(), x)
        assert x.tobytes() == _textbook_symmetric(A, b).tobytes()
        _assert_solves(A, x, b)


def test_the_symmetric_elimination_gives_up_on_a_pivot_that_is_not_positive():
    """A matrix that is not positive definite (a negative or a zero pivot, or NaN): True, x
    untouched, for the caller to solve it with pivoting instead."""
    rng = np.random.default_rng(5)
    A = _rare_levels_hessian(rng, 31, 40)
    indefinite = A.copy()
    indefinite[7, 7] = -indefinite[7, 7]
    twin = A.copy()  # two unpenalised unknowns always together: singular
    twin[:, 0], twin[0] = twin[:, 1], twin[1]
    nan = A.copy()
    nan[3, 3] = np.nan
    for U in (indefinite, twin, nan):
        x = np.full(A.shape[0], 7.0)
        assert newton_solves.solve_symmetric_in_place(U, rng.normal(size=A.shape[0]), x)
        assert (x == 7.0).all()


def test_a_rows_sparse_head_and_dense_tail_are_as_defined():
    """`_sparse_head`: the tail begins at the smallest j whose end row[j:] is at least
    DENSE_TAIL nonzero (the row's end if none), and the head lists the nonzero columns from
    `start` to it, ascending; on rows of every density, and on all-zero and all-nonzero ones."""
    rng = np.random.default_rng(6)
    rows = [rng.normal(size=40) * (rng.uniform(size=40) < p) for p in (0.05, 0.3, 0.6, 0.9)]
    rows += [np.zeros(40), np.ones(40)]
    for row in rows:
        for start in (0, 1, 17, 39, 40):
            cols = np.full(40, -1)
            n, tail = newton_solves._sparse_head(row, start, cols)
            full = [
                j for j in range(start, 40)
                if np.count_nonzero(row[j:]) >= newton_solves.DENSE_TAIL * (40 - j)
            ]  # fmt: skip
            assert tail == (min(full) if full else 40)
            head = [j for j in range(start, tail) if row[j] != 0.0]
            assert n == len(head) and list(cols[:n]) == head
