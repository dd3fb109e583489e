"""The K-class CG's Hessian-vector products (`genvdis.models.logistic._softmax_cg`): the ten-digit
example's fits are made of their bits, so the compiled product must give numpy's composition
of the same fixed-order products bit for bit, and H v for the explicit Hessian."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis._runtime import portable
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
