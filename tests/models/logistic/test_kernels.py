"""The compiled Newton step of the gathered layout (`genvdis.models.logistic._kernels`): every
binary fit is made of its bits, so its X^T W X must be exactly the fixed-order products'
(`portable.cross_into` for narrow designs, `portable.rows_times` for wide ones), and its
step the elimination's of that system."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis._runtime import portable
from genvdis.models.logistic import _kernels as logistic_kernels
from genvdis.models.logistic import _solves as newton_solves


@pytest.mark.parametrize(("d", "m"), [(9, 30), (7, 101), (40, 57), (65, 203)])
def test_gathered_step_is_the_fixed_order_products(d: int, m: int) -> None:
    rng = np.random.default_rng(d * 1000 + m)
    S = 4
    XT = rng.uniform(0, 1, (S + 2, d, m))
    XT[:, -1] = 1.0
    problems = np.array([5, 0, 3, 2])  # out of order, some designs unused
    t = (rng.uniform(size=(S, m)) < 0.4).astype(float)
    eta = rng.normal(0, 2, (S, m))
    e = np.exp(-np.abs(eta))
    beta = rng.normal(0, 0.1, (S, d))
    penalty = np.append(np.full(d - 1, 1e-3), 0.0)
    grad, delta, singular, hess, *_ = logistic_kernels.gathered_step(
        XT, problems, t, eta, e, beta, penalty
    )
    assert not singular.any()
    for a, p in enumerate(problems):
        x = XT[p]
        q = 1.0 / (1.0 + e[a])
        w = e[a] * q * q
        expected = np.empty((d, d))
        if d < logistic_kernels.WIDE_DESIGN:
            portable.cross_into(x * w, x, expected, True)
        else:
            portable.rows_times(x * w, np.ascontiguousarray(x.T), expected, True)
        expected[np.arange(d), np.arange(d)] += penalty
        np.testing.assert_array_equal(hess[a], expected)
        residual = t[a] - np.where(eta[a] >= 0, q, e[a] * q)
        np.testing.assert_allclose(
            grad[a], x @ residual - penalty * beta[a], rtol=1e-12, atol=1e-12
        )
        step = np.zeros(d)
        assert not newton_solves.solve_unblocked(hess[a], grad[a], step)
        np.testing.assert_array_equal(delta[a], step)
