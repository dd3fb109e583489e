"""The K-class CG's Hessian-vector products (`genvdis.models.logistic._softmax_cg`): the ten-digit
example's fits are made of their bits, so the compiled product must give numpy's composition
of the same fixed-order products bit for bit, and H v for the explicit Hessian."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis._runtime import portable
from genvdis.models.logistic._kernels import spd_inverses, weighted_grams
from genvdis.models.logistic._softmax_cg import _hessian_times


def _composed(XT, X, PT, penalty, v):  # noqa: ANN001, ANN202
    """H v by numpy passes between `portable.matmuls`: each product and sum rounded on its own."""
    PU = PT * portable.matmuls(v, XT)
    PU -= PT * PU.sum(axis=1, keepdims=True)
    out = portable.matmuls(PU, X)
    out += penalty * v
    return out


def _problems(S: int, K1: int, d: int, m: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (S, m, d))
    X[:, :, -1] = 1.0  # the intercept's column
    P = rng.dirichlet(np.ones(K1 + 1), (S, m))[:, :, :K1]
    penalty = np.append(rng.uniform(0.1, 2, d - 1), 0.0)
    v = rng.standard_normal((S, K1, d))
    XT = np.ascontiguousarray(np.swapaxes(X, 1, 2))
    return XT, X, np.ascontiguousarray(np.swapaxes(P, 1, 2)), penalty, v


@pytest.mark.parametrize(
    ("S", "K1", "d", "m"), [(3, 9, 65, 120), (4, 1, 3, 5), (5, 2, 7, 13), (2, 5, 33, 101)]
)
def test_hessian_times_is_the_composed_products_bits(S: int, K1: int, d: int, m: int) -> None:
    XT, X, PT, penalty, v = _problems(S, K1, d, m, seed=S * 100 + d)
    np.testing.assert_array_equal(
        _hessian_times(XT, X, PT, penalty, v), _composed(XT, X, PT, penalty, v)
    )


def test_hessian_times_is_the_explicit_hessian_times_v() -> None:
    """H = sum_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T + ridge, formed whole for one problem."""
    XT, X, PT, penalty, v = _problems(2, 3, 4, 9, seed=7)
    out = _hessian_times(XT, X, PT, penalty, v)
    for s in range(2):
        P = PT[s].T
        H = sum(
            np.kron(np.diag(p) - np.outer(p, p), np.outer(x, x))
            for p, x in zip(P, X[s], strict=True)
        ) + np.kron(np.eye(3), np.diag(penalty))
        np.testing.assert_allclose(out[s].ravel(), H @ v[s].ravel(), rtol=1e-12, atol=1e-12)


def test_hessian_times_takes_each_problems_own_ridge() -> None:
    """A ridge per problem (S, d) gives each problem the bits of its ridge passed alone."""
    XT, X, PT, _, v = _problems(4, 9, 65, 50, seed=11)
    own = np.random.default_rng(11).uniform(0.1, 3, (4, 65))
    together = _hessian_times(XT, X, PT, own, v)
    for s in range(4):
        alone = _hessian_times(XT[s : s + 1], X[s : s + 1], PT[s : s + 1], own[s], v[s : s + 1])
        np.testing.assert_array_equal(together[s], alone[0])


def _spd_blocks(S: int, m: int, d: int, seed: int) -> np.ndarray:
    """The preconditioner's kind of blocks: Y^T Y + a small ridge, Y's rows weighted."""
    rng = np.random.default_rng(seed)
    Y = rng.uniform(0, 1, (S, m, d)) * rng.uniform(0, 1, (S, m, 1))
    block = portable.matmuls(np.ascontiguousarray(np.swapaxes(Y, 1, 2)), Y)
    block[:, np.arange(d), np.arange(d)] += rng.uniform(0, 1e-3, d)
    return block


@pytest.mark.parametrize(
    ("S", "m", "d"),
    [(5, 500, 65), (6, 20, 65), (3, 5, 7), (2, 200, 33), (2, 3, 1), (2, 40, 2), (3, 40, 4)],
)
def test_spd_inverses_are_the_portable_ones_bits(S: int, m: int, d: int) -> None:
    """`_kernels.spd_inverses` skips only work whose result the portable one discards or
    whose terms are exact zeros, and pairs columns (odd and even d): the same inverse, bit
    for bit, over- and under-determined blocks alike (the latter definite only by the
    ridge)."""
    block = _spd_blocks(S, m, d, seed=S + m + d)
    expected, ok = portable.spd_inverses(block)
    got, got_ok = spd_inverses(block)
    np.testing.assert_array_equal(got_ok, ok)
    assert ok.all()
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(got @ block, np.broadcast_to(np.eye(d), block.shape), atol=1e-6)


def test_spd_inverses_flag_the_blocks_that_are_not_definite() -> None:
    block = _spd_blocks(4, 100, 12, seed=3)
    block[1] *= -1
    block[2, 5, 5] = np.nan
    expected, ok = portable.spd_inverses(block)
    got, got_ok = spd_inverses(block)
    np.testing.assert_array_equal(got_ok, [True, False, False, True])
    np.testing.assert_array_equal(got_ok, ok)
    np.testing.assert_array_equal(got[ok], expected[ok])


@pytest.mark.parametrize(("S", "m", "d"), [(3, 120, 65), (2, 7, 5), (2, 1, 3)])
def test_weighted_grams_are_the_portable_products_bits(S: int, m: int, d: int) -> None:
    Y = np.random.default_rng(m).standard_normal((S, m, d))
    expected = portable.matmuls(np.ascontiguousarray(np.swapaxes(Y, 1, 2)), Y)
    np.testing.assert_array_equal(weighted_grams(Y), expected)
