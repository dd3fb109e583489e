"""The sampler's stopping rule (`sampler.UntilMixed`): each chain stops when its own statistic
says it has mixed. Known answers for the rule, the compiled chains against the rule written in
plain Python (bit for bit), a draw that depends on its own problem alone, and the law from the
hardest start. The chains themselves are tested in test_hyperplanes.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from scipy.optimize import linprog

from genvdis._runtime import portable, streams
from genvdis._runtime.streams import stream_keys
from genvdis.models.base import FeatureLayout
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic_regression import (
    TRAJECTORIES,
    LogisticRegression,
    LogisticRegressionSpec,
)
from tests.models.logistic.separable.test_hyperplanes import (
    SQUARE_X,
    SQUARE_Y,
    _dot,
    _plain_trajectory,
    _thin_5d,
    _uniform_errors,
)


def _lag1(x: np.ndarray) -> float:
    """The lag-1 autocorrelation about the series' mean, written independently of `_mixed`."""
    dev = x - x.mean()
    return float(np.dot(dev[:-1], dev[1:]) / np.dot(dev, dev))


def test_mixed_known_answers():
    """n trajectories are enough when n >= effective (1 + rho) / (1 - rho): a chain that has
    not moved, or drifts steadily away from its start, is not mixed; an alternating one is."""
    history = np.ones(31)
    assert not sampler._mixed(history, 30, 10.0)  # never moved: nothing measured
    drift = np.linspace(1.0, 0.0, 31)  # a steady drift from the start: rho near 1
    assert _lag1(drift) > 0.85 and not sampler._mixed(drift, 30, 10.0)
    alternating = np.r_[1.0, np.tile([-0.5, 0.5], 15)]  # rho near -1: tau near 0
    assert sampler._mixed(alternating, 10, 10.0)
    # random series against the formula computed with numpy, on both sides of the threshold
    rng = np.random.default_rng(3)
    verdicts = []
    for _ in range(300):
        n = int(rng.integers(10, 60))
        x = np.r_[1.0, np.cumsum(rng.normal(size=n)) * rng.uniform(0, 1) + rng.normal(size=n)]
        rho = _lag1(x)
        expected = n * (1 - rho) >= 10.0 * (1 + rho)
        if abs(n * (1 - rho) - 10.0 * (1 + rho)) > 1e-9:
            assert sampler._mixed(x, n, 10.0) == expected
            verdicts.append(expected)
    assert 0.1 < np.mean(verdicts) < 0.9  # both answers were tested


def _plain_chain_until_mixed(B, G, w, key: int, rule: sampler.UntilMixed):
    """`test_hyperplanes._plain_chain` with the stopping rule in plain Python floats: the
    cosine to the start after every trajectory, the AR(1) time from its lag-1
    autocorrelation, and `after` trajectories past the first n >= floor with
    n (1 - rho) >= effective (1 + rho)."""
    state = np.array([key], dtype=np.uint64)
    start, history = list(w), [1.0]
    rc, rs = 0.0, 1.0
    stop = rule.cap
    for iteration in range(rule.cap):
        budget = sampler.WARMUP_BOUNCES * (1 if iteration == 0 else 20)
        p = [float(streams.next_normal(state)) for _ in w]
        proposal, left = _plain_trajectory(B, G, w, p, rc, rs, budget)
        if iteration == 0:
            travelled = math.pi / 2 - math.atan2(left[1], left[0])
            if travelled > 0:
                rc, rs = math.cos(travelled), math.sin(travelled)
        if all(_dot(row, proposal) > 0.0 for row in B):
            w = proposal
        n = iteration + 1
        if n == stop:
            return w, n
        if stop < rule.cap:
            continue
        history.append(_dot(w, start) / math.sqrt(_dot(w, w) * _dot(start, start)))
        if n >= rule.floor:
            mean = 0.0
            for x in history:
                mean += x
            mean /= n + 1
            var = lag = 0.0
            for x in history:
                var += (x - mean) * (x - mean)
            for a, b in zip(history[:-1], history[1:], strict=True):
                lag += (a - mean) * (b - mean)
            rho = lag / var
            if var > 0 and rho < 1 and n * (1 - rho) >= rule.effective * (1 + rho):
                stop = min(n + rule.after, rule.cap)
                if n == stop:
                    return w, n
    return w, rule.cap


def test_the_compiled_rule_is_the_plain_rule_bit_for_bit():
    """The compiled chains stop where the rule written in plain Python stops, with the same
    bits, from a corner of a thin version space (where chains run long) and from its centre."""
    A, _ = _thin_5d()
    Q, _ = np.linalg.qr(A.T)
    B = np.ascontiguousarray(A @ Q)
    G = portable.matmuls(B[None], B.T[None].copy())[0]
    rule = sampler.UntilMixed(floor=4, cap=40, effective=10.0)
    ran_all = []
    for z0 in (_corner(A), hyperplanes.max_margin(A)[1]):
        w0 = Q.T @ z0 * np.sqrt(B.shape[1]) / np.linalg.norm(Q.T @ z0)
        keys = stream_keys(3, len(A), range(8), 1)
        W, _, _, ran = sampler._chains(
            B[None].repeat(8, 0), np.ascontiguousarray(B.T)[None].repeat(8, 0),
            w0[None].repeat(8, 0), keys, rule.cap, sampler.WARMUP_BOUNCES, A.shape[1],
            rule.floor, rule.effective, rule.after,
        )  # fmt: skip
        for s, key in enumerate(keys):
            plain, n = _plain_chain_until_mixed(B.tolist(), G.tolist(), w0.tolist(), int(key), rule)
            assert (W[s].tolist(), int(ran[s])) == (plain, n)
        ran_all.extend(ran.tolist())
    assert (
        min(ran_all) >= rule.floor + rule.after and len(set(ran_all)) > 3
    )  # the rule really decided


def _corner(A: np.ndarray) -> np.ndarray:
    """A vertex of {A z >= 0, |z|_inf <= 1} moved 1e-3 inside: the hardest start."""
    corner = linprog(
        np.random.default_rng(4).normal(size=A.shape[1]), A_ub=-A, b_ub=np.zeros(len(A)),
        bounds=[(-1, 1)] * A.shape[1], method="highs",
    ).x  # fmt: skip
    return corner + 1e-3 * hyperplanes.max_margin(A)[1]


def test_a_draw_depends_on_its_own_problem_alone():
    """Under the rule a problem's draw and trajectories are the same whichever problems share
    its batch, in whatever order (the rule reads the chain's own statistic only), and a fixed
    length is `sample_version_space` exactly."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 6))
    A = np.stack([hyperplanes.signed_rows(X[:m], (X[:m, 0] > 0.2 * s).astype(int))
                  for s, m in zip(range(6), [8, 12, 20, 40, 10, 30], strict=True)
                  for m in [12]])  # fmt: skip
    z0 = np.stack([hyperplanes.max_margin(a)[1] for a in A])
    keys = stream_keys(5, 12, range(6), 1)
    whole, ran = sampler.draw(A, z0, keys, sampler.UntilMixed())
    assert ran.min() >= 15 and ran.max() <= 30 and len(set(ran.tolist())) > 1
    for part in ([3], [5, 0, 2], [1, 4, 3, 2]):
        z, n = sampler.draw(A[part], z0[part], keys[part], sampler.UntilMixed())
        np.testing.assert_array_equal(z, whole[part])
        np.testing.assert_array_equal(n, ran[part])
    fixed, n = sampler.draw(A, z0, keys, sampler.Fixed(7))
    np.testing.assert_array_equal(fixed, sampler.sample_version_space(A, z0, 7, keys))
    assert n.tolist() == [7] * 6


def test_the_rule_reaches_the_uniform_law_from_a_corner():
    """From a vertex of the thin 5-D version space (the start furthest from typical), the test
    errors of 4000 chains' draws under the rule follow the uniform law (KS against rejection
    sampling, as the fixed 30 trajectories do in test_hyperplanes.py), as from the
    maximum-margin hyperplane, the centre."""
    A, A_test = _thin_5d()
    reference = _uniform_errors(A, A_test)
    chains = 4000
    for start in (_corner(A), hyperplanes.max_margin(A)[1]):
        draws, ran = sampler.draw(
            np.broadcast_to(A, (chains, *A.shape)).copy(), np.tile(start, (chains, 1)),
            stream_keys(1, 15, range(chains), 1), sampler.UntilMixed(),
        )  # fmt: skip
        assert np.all(draws @ A.T > 0)
        errors = np.mean(draws @ A_test.T <= 0, axis=1)
        assert scipy.stats.ks_2samp(errors, reference).pvalue > 0.01
        assert ran.min() >= 15


def test_the_config_chooses_the_rule_or_a_fixed_count():
    """`mcmc_iterations` is `auto` (the rule) by default or a whole number >= 1, with one
    message for anything else; a fit records each split's trajectories."""
    assert LogisticRegressionSpec().mcmc_iterations == "auto"
    assert sampler.UntilMixed().cap == TRAJECTORIES  # the rule's cap: the validated count
    layout = FeatureLayout(2)
    assert isinstance(LogisticRegression(layout)._chain_length(), sampler.UntilMixed)
    assert LogisticRegression(layout, mcmc_iterations=7)._chain_length() == sampler.Fixed(7)
    for bad in ("fast", 0, -3, 2.5, True, "7", None):
        with pytest.raises(ValueError) as caught:
            LogisticRegression(layout, mcmc_iterations=bad)
        assert str(caught.value) == (
            f"mcmc_iterations: Value error, should be auto or a whole number >= 1, not {bad!r}"
        )
    idx = np.arange(6)[None, :]
    fit = LogisticRegression(layout).fit_batch(SQUARE_X, SQUARE_Y, idx, np.array([3], np.uint64))
    assert fit.separable.tolist() == [True] and 15 <= fit.trajectories[0] <= 30
