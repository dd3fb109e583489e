"""The separability decision (`hyperplanes.decide`, used by logistic regression) against a linear
program written here with scipy alone: its shortcuts may only ever reach the LP's answer.

A training set is separable when its L-infinity maximum margin, max t s.t. a_i . z >= t,
||z||_inf <= 1, exceeds MARGIN_TOL (docs/separable.md). `_lp` solves that LP directly.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import scipy.stats
from scipy.optimize import linprog

from genvdis._runtime import portable, streams
from genvdis._runtime.streams import stream_keys
from genvdis.config.experiment import load_config
from genvdis.data import sources as datasource
from genvdis.data.preprocessing import FeatureLayout, prepare
from genvdis.experiment import engine, scoring, splits
from genvdis.models.logistic.separable import _lp as lp
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic.softmax import constraint_rows
from genvdis.models.logistic_regression import (
    TRAJECTORIES,
    LogisticRegression,
)
from genvdis.models.naive_bayes import NaiveBayes, NaiveBayesSpec
from genvdis.models.registry import build_model
from tests.conftest import REPO

TOL = hyperplanes.MARGIN_TOL


def _lp(A: np.ndarray) -> tuple[float, np.ndarray]:
    """The maximum L-infinity margin t of rows A and a z reaching it (HiGHS, no genvdis code)."""
    m, d = A.shape
    result = linprog(
        np.r_[np.zeros(d), -1.0],
        A_ub=np.hstack([-A, np.ones((m, 1))]),
        b_ub=np.zeros(m),
        bounds=[(-1.0, 1.0)] * d + [(0.0, 1.0)],
        method="highs",
    )
    assert result.status == 0
    return float(result.x[-1]), result.x[:-1]


def _decide(X: np.ndarray, y: np.ndarray, beta: np.ndarray, separating: bool, bound: float):
    """`decide` on one training set (all of X, y), from a given "Newton fit" beta."""
    idx = np.arange(len(y))[None, :]
    return hyperplanes.decide(X, y, idx, beta[None], np.array([separating]), np.array([bound]))


# Three of each class in the unit square; the maximum margin 4/15 is reached at z below.
SQUARE_X = np.array([[0.1, 0.2], [0.1, 0.9], [0.2, 0.5], [0.8, 0.1], [0.9, 0.6], [0.7, 0.4]])
SQUARE_Y = np.array([0, 0, 0, 1, 1, 1])
SQUARE_Z = np.array([1.0, -1 / 3, -0.3])


def test_weights_that_are_all_zero_prove_nothing():
    """Gordan's bound needs weights lambda >= 0 that are not all 0: all-zero (or negative, or
    NaN) weights must give no bound at all, not 0/0 read as 0."""
    A = hyperplanes.signed_rows(SQUARE_X, SQUARE_Y)
    bounds = hyperplanes.margin_bound(
        np.stack([A] * 4), np.array([np.zeros(6), -np.ones(6), np.full(6, np.nan), np.ones(6)])
    )
    assert np.all(bounds[:3] == np.inf)
    t, _ = _lp(A)
    assert t == pytest.approx(4 / 15) and bounds[3] >= t


@pytest.mark.parametrize("scale", [1e4, 60.0])
def test_a_degenerate_certificate_on_a_separable_set_falls_through_to_the_lp(scale):
    """A "fit" far out along the max-margin direction makes the weights sigmoid(-A beta) either
    underflow to 0 (scale 1e4) or, once the far points are dropped, keep only the three
    support vectors, independent rows whose projection onto A^T lambda = 0 is 0 (scale 60).
    Both are all-zero weightings: the old code counted them as proofs of non-separability."""
    A = hyperplanes.signed_rows(SQUARE_X, SQUARE_Y)
    beta = scale * SQUARE_Z
    lam = 0.5 - 0.5 * np.tanh(0.5 * A @ beta)
    if scale == 1e4:
        assert np.all(lam == 0.0)
    else:
        support = lam >= 1e-3 * lam.max()
        assert support.sum() == 3 and np.linalg.matrix_rank(A[support]) == 3
    assert not hyperplanes.prove_inseparable(A[None], beta[None])[0]
    separable, start, from_lp = _decide(SQUARE_X, SQUARE_Y, beta, False, np.inf)
    assert separable[0] and from_lp[0]
    assert np.min(A @ start[0]) == pytest.approx(_lp(A)[0])  # the LP's max-margin solution


def test_a_degenerate_certificate_on_an_inseparable_set_falls_through_to_the_lp():
    """XOR, with a fit that gets only (1, 1) wrong: its weights keep that one point, whose
    projection is 0 (no proof). The LP must then say not separable."""
    X, y = np.array([[0.0, 0], [1, 1], [0, 1], [1, 0]]), np.array([0, 0, 1, 1])
    A = hyperplanes.signed_rows(X, y)
    beta = np.array([40.0, 40.0, -20.0])
    lam = 0.5 - 0.5 * np.tanh(0.5 * A @ beta)
    assert np.flatnonzero(lam >= 1e-6 * lam.max()).tolist() == [1]
    assert not hyperplanes.prove_inseparable(A[None], beta[None])[0]
    separable, _, from_lp = _decide(X, y, beta, False, np.inf)
    assert not separable[0] and not from_lp[0]
    assert _lp(A)[0] <= TOL


def test_a_newton_iterate_separating_by_less_than_the_threshold_is_no_proof():
    """One point of each class, 1e-8 apart: an iterate can separate them (with margin ~5e-9
    in the L-infinity normalisation), but the maximum margin is below MARGIN_TOL, so by the
    definition the set is not separable: the iterate must not decide it."""
    X, y = np.array([[0.0], [1e-8]]), np.array([0, 1])
    beta = np.array([2e8, -1.0])
    assert np.all(hyperplanes.signed_rows(X, y) @ beta > 0)
    separable, _, _ = _decide(X, y, beta, True, np.inf)
    assert not separable[0]
    assert _lp(hyperplanes.signed_rows(X, y))[0] <= TOL


def test_a_failed_lp_is_an_error_not_a_verdict(monkeypatch):
    """The LP is always feasible and bounded; if HiGHS still fails, that is raised rather than
    read as "not separable"."""

    class Failed:
        status, message = 4, "numerical difficulties"

    # HiGHS called directly reports no optimum either, so the LP goes to linprog; that is
    # imported when it solves (start-up cost), so patch it at the source
    monkeypatch.setattr(lp, "_direct", lambda A: None)
    monkeypatch.setattr(scipy.optimize, "linprog", lambda *args, **kwargs: Failed())
    with pytest.raises(RuntimeError, match="the separability LP failed: numerical difficulties"):
        hyperplanes.max_margin(hyperplanes.signed_rows(SQUARE_X, SQUARE_Y))


def _lp_problems(count: int) -> list[np.ndarray]:
    """Constraint rows of random training sets, both separable and not: inputs on a grid of
    tenths (exact zeros, ties, duplicate points: degenerate LPs, whose optimal vertex is not
    unique), labels from a noisy hyperplane, and some multi-class rows."""
    rng = np.random.default_rng(17)
    problems = []
    for i in range(count):
        m, d = int(rng.integers(4, 80)), int(rng.integers(1, 25))
        X = np.round(rng.uniform(size=(m, d)), 1)
        scores = X @ rng.normal(size=d) + rng.normal(size=m) * rng.choice([0.0, 0.1, 1.0])
        y = (scores > np.median(scores)).astype(int)
        if i % 5 == 4:
            problems.append(constraint_rows(X, rng.integers(0, 3, size=m), 3))
        else:
            problems.append(hyperplanes.signed_rows(X, y))
    return problems


def test_highs_called_directly_gives_linprogs_solution_bit_for_bit():
    """`lp.solve` skips linprog's Python but must hand HiGHS the same model and options: the
    optimum of these LPs is not unique, and any difference would show as another vertex (or
    other duals) on some of a few hundred degenerate problems."""
    problems = _lp_problems(300)
    separable = 0
    for A in problems:
        direct, reference = lp._direct(A), lp._by_linprog(A)
        assert direct is not None
        assert direct[0].tobytes() == reference[0].tobytes()
        assert direct[1].tobytes() == reference[1].tobytes()
        separable += direct[0][-1] > TOL
    assert 30 < separable < 270  # both answers are well represented


@pytest.mark.parametrize("change", ["missing", "different"])
def test_without_scipys_private_highs_api_the_lp_goes_to_linprog(monkeypatch, change):
    """Another scipy may not have the private bindings, or have others (here an option that
    no longer exists): `solve` must then call linprog and give its answer (here the same one
    as the bindings')."""
    problems = _lp_problems(20)
    expected = [lp.solve(A) for A in problems]
    if change == "missing":
        monkeypatch.setattr(lp, "_core", None)
    else:

        def renamed(core):
            raise AttributeError("'HighsOptions' object has no attribute 'presolve'")

        monkeypatch.setattr(lp, "_core", lp._MISSING)
        monkeypatch.setattr(lp, "_options", renamed)
    assert lp._direct(problems[0]) is None
    for A, (x, duals) in zip(problems, expected, strict=True):
        fallback = lp.solve(A)
        assert fallback[0].tobytes() == x.tobytes()
        assert fallback[1].tobytes() == duals.tobytes()


def _near_boundary(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """m points in [0, 1]^d labelled by a random hyperplane, with 1-3 points of each class
    moved to distance gap * U(1, 3) of it: a tiny margin (gap > 0), points on it (0), or
    across it (< 0). Tiny margins are where Newton stops on a huge fit that does not separate,
    and its certificates degenerate (as on liver at m = 15)."""
    m, d = int(rng.integers(6, 30)), int(rng.integers(1, 7))
    gap = float(rng.choice([1e-4, 1e-5, 3e-6, 1e-6, 0.0, -1e-3, -0.05, -0.2]))
    u, X = rng.normal(size=d), rng.uniform(size=(m, d))
    u /= np.linalg.norm(u)
    score = X @ u - np.median(X @ u)
    y = (score > 0).astype(np.int64)
    for cls, sign in ((0, -1.0), (1, 1.0)):
        near = np.flatnonzero(y == cls)[np.argsort(np.abs(score[y == cls]))]
        for i in near[: rng.integers(1, 4)]:
            X[i] -= (score[i] - sign * gap * rng.uniform(1, 3)) * u
    return X, y, gap


def test_decisions_equal_the_lp_on_random_problems_with_tiny_margins():
    """400 small problems, separable or not, many with margins of 1e-6 to 1e-3 (the regime
    where the old certificate went wrong, 3 times in these 400): logistic regression's verdict
    equals the LP's on every one, and where separable its fit separates the training set."""
    rng = np.random.default_rng(0)
    verdicts = []
    for _ in range(400):
        X, y, gap = _near_boundary(rng)
        A = hyperplanes.signed_rows(X, y)
        t, _ = _lp(A)
        assert not 0.5 * TOL < t < 2 * TOL  # no problem is ambiguous at the LP's precision
        model = LogisticRegression(FeatureLayout(X.shape[1]), separable="max_margin").fit(X, y)
        assert model.separable_ == (t > TOL), (X.tolist(), y.tolist(), gap)
        if model.separable_:
            assert np.all((2 * y - 1) * model.decision_function(X) > 0)
        verdicts.append(model.separable_)
    assert 50 < sum(verdicts) < 350  # both answers were exercised


def test_certificates_bracket_the_maximum_margin():
    """Weak duality, rounding included: for any z, the margin it achieves (`margin_of`) is at
    most the LP's maximum margin, and for any weights lambda >= 0 `margin_bound` is at least
    that maximum."""
    rng = np.random.default_rng(1)
    for _ in range(100):
        X, y, _ = _near_boundary(rng)
        A = hyperplanes.signed_rows(X, y)
        t, z = _lp(A)
        if t > TOL:
            assert hyperplanes.margin_of(A, z) == pytest.approx(t, abs=1e-9)
        zs = np.vstack([rng.normal(size=(20, A.shape[1])), z])
        assert np.all(hyperplanes.margin_of(np.stack([A] * 21), zs) <= t + 1e-9)
        weights = rng.exponential(size=(20, len(y))) * (rng.uniform(size=(20, len(y))) < 0.7)
        assert np.all(hyperplanes.margin_bound(np.stack([A] * 20), weights) >= t - 1e-9)


def test_liver_m15_split_266_is_separable(mirror_env):
    """A regression test: liver at m = 15, split 266 has maximum margin 2.4e-5, yet it was
    flagged non-separable (a projected weighting of all zeros counted as a proof)."""
    config = load_config(REPO / "configs" / "liver.yaml")
    data = prepare(datasource.load_data(config), config)
    encoded = scoring.EncodedData.from_prepared(data)
    models = [build_model(spec, data.layout) for spec in config.models]
    rows = engine.run_block(encoded, models, 15, range(266, 267), engine.Protocol.of(config))
    lr = rows[rows["model"] == "logistic_regression"].iloc[0]
    train, _ = splits.draw_split(encoded.y, 15, config.seed, 266, config.split)
    t, _ = _lp(hyperplanes.signed_rows(encoded.reference[train], encoded.y[train]))
    assert t == pytest.approx(2.39e-5, rel=0.01)
    assert lr["separable"]


# --- the sampler's mixing -----------------------------------------------------------------------


def _thin_5d() -> tuple[np.ndarray, np.ndarray]:
    """15 points in R^4 plus a bias, about 1 separating direction in 750 (as in test_models),
    and 1000 test points: the constraint rows of both."""
    rng = np.random.default_rng(18)
    X = rng.normal(size=(1015, 4))
    y = (X @ [1.0, -1.0, 0.5, 2.0] > 0).astype(int)
    return hyperplanes.signed_rows(X[:15], y[:15]), hyperplanes.signed_rows(X[15:], y[15:])


def _uniform_errors(A: np.ndarray, A_test: np.ndarray) -> np.ndarray:
    """Test errors of directions uniform on the sphere kept where they separate (rejection
    sampling: the sampler's target law, independently)."""
    rng = np.random.default_rng(1)
    kept = [u[np.all(u @ A.T > 0, axis=1)] for u in rng.standard_normal((8, 250_000, 5))]
    return np.mean(np.vstack(kept) @ A_test.T <= 0, axis=1)


def test_chains_from_a_corner_of_the_version_space_reach_the_uniform_law():
    """A start at a vertex of {A z >= 0, |z|_inf <= 1} (a random LP's solution), just inside:
    the start furthest from typical. After the default number of trajectories the test errors
    of 4000 chains' draws follow the uniform law (KS test against rejection sampling); after 3,
    the old default, they do not (p ~ 1e-14 here: issue 16 found p = 9e-6 on such starts)."""
    A, A_test = _thin_5d()
    corner = linprog(
        np.random.default_rng(4).normal(size=5), A_ub=-A, b_ub=np.zeros(15),
        bounds=[(-1, 1)] * 5, method="highs",
    ).x  # fmt: skip
    start = corner + 1e-3 * hyperplanes.max_margin(A)[1]
    assert np.all(A @ start > 0) and np.sum(A @ corner < 1e-9) >= 3  # on several walls
    reference = _uniform_errors(A, A_test)
    assert len(reference) > 2000
    chains = 4000

    def pvalue(trajectories: int) -> float:
        draws = sampler.sample_version_space(
            np.broadcast_to(A, (chains, *A.shape)).copy(), np.tile(start, (chains, 1)),
            trajectories, stream_keys(1, 15, range(chains), 1),
        )  # fmt: skip
        assert np.all(draws @ A.T > 0)
        return scipy.stats.ks_2samp(np.mean(draws @ A_test.T <= 0, axis=1), reference).pvalue

    assert pvalue(TRAJECTORIES) > 0.01
    assert pvalue(3) < 1e-6


def test_the_trajectories_are_used_and_recorded():
    """A fit records per split how many trajectories drew its hyperplane: under the default
    rule (`auto`) what each chain ran, between the rule's floor and cap; a fixed count where
    one is asked for; 0 where nothing is sampled."""
    layout = FeatureLayout(2)
    # the square plus two points outside it (separable), or plus two inside the other class's
    extra = np.array([[0.05, 0.5], [0.95, 0.5], [0.15, 0.5], [0.85, 0.3]])
    X, y = np.vstack([SQUARE_X, extra]), np.r_[SQUARE_Y, 0, 1, 1, 0]
    idx = np.array([[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 8, 9]])
    rule = sampler.UntilMixed()
    for model, used in [
        (LogisticRegression(layout), range(rule.floor + rule.after, rule.cap + 1)),
        (LogisticRegression(layout, mcmc_iterations=7), [7]),
        (LogisticRegression(layout, mcmc_iterations=TRAJECTORIES), [TRAJECTORIES]),
        (LogisticRegression(layout, separable="max_margin"), [0]),
        (build_model(NaiveBayesSpec(), layout), [0]),
    ]:
        fit = model.fit_batch(X, y, idx)
        assert fit.trajectories[0] in used and fit.trajectories[1] == 0
        assert fit.trajectories.dtype == np.int64
        assert fit.separable.tolist() == [model.name == "logistic_regression", False]


# --- the one-hot coding -------------------------------------------------------------------------

LEVELS = (3, 4, 2)


def test_reference_columns_drop_the_encodings_level():
    layout = FeatureLayout(2, LEVELS)
    full = list(range(11))
    assert FeatureLayout(2, LEVELS, "full").reference_columns().tolist() == full
    assert layout.reference_columns().tolist() == [0, 1, 3, 4, 6, 7, 8, 10]
    drop_last = FeatureLayout(2, LEVELS, "drop_last").reference_columns().tolist()
    assert drop_last == [0, 1, 2, 3, 5, 6, 7, 9]
    X = np.array([[0.5, 0.25, 2, 3, 1]])
    assert layout.onehot(X).tolist() == [[0.5, 0.25, 0, 0, 1, 0, 0, 0, 1, 0, 1]]
    assert layout.onehot(X, reference=True).tolist() == [[0.5, 0.25, 0, 1, 0, 0, 1, 1]]
    # the engine's reference-coded data are the same, row-major as the data (a column-major
    # copy changed the rounding of the Newton fits, and so committed curves)
    X = np.array([[0.5, 0.25, 2, 3, 1], [0.1, 0.3, 0, 0, 0]])
    for encoding in ("drop_first", "drop_last", "full"):
        coded = FeatureLayout(2, LEVELS, encoding)
        encoded = scoring.EncodedData.encode(X, np.array([1, 0]), coded)
        assert np.array_equal(encoded.reference, coded.onehot(X, reference=True))
        assert encoded.reference.flags.c_contiguous
        assert coded.onehot(X, reference=True).flags.c_contiguous
    with pytest.raises(ValueError, match="drop_first, drop_last, full"):
        FeatureLayout(0, LEVELS, "drop_middle")


def _run_coded(encoding: str, m: int, seed: int = 4) -> pd.DataFrame:
    """Naive Bayes and logistic regression on 600 rows of 3 noisy discrete attributes, with
    the given coding, through the engine (10 splits at m)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, 600) for k in LEVELS]).astype(float)
    score = X[:, 0] - 1.5 * (X[:, 1] == 2) + X[:, 2] - 1
    y = (rng.uniform(size=600) < 1 / (1 + np.exp(-2 * score))).astype(np.int64)
    layout = FeatureLayout(0, LEVELS, encoding)
    data = scoring.EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout)]
    return engine.run_block(data, models, m, range(10), engine.Protocol(1, "stratified", "rest"))


def test_maximum_likelihood_predictions_do_not_depend_on_the_coding():
    """Where the maximum exists (no split separable), which level is dropped, or none, changes
    the coefficients but not the fitted classifier: the same test errors on every split, for
    both models. Only the separable-set rules may depend on the coding."""
    runs = {encoding: _run_coded(encoding, 200) for encoding in ("drop_first", "drop_last", "full")}
    first = runs["drop_first"]
    assert not first["separable"].any() and (first["trajectories"] == 0).all()
    assert first["errors"].std() > 0
    for rows in runs.values():
        pd.testing.assert_frame_equal(rows, first)


def test_the_sampled_hyperplanes_depend_on_the_coding():
    """On separable training sets the uniform law on {A z > 0, |z| <= 1} is not invariant to
    the coding (issue 16), so the draws and their errors change with it; the separability
    verdicts do not."""
    first, last = _run_coded("drop_first", 8), _run_coded("drop_last", 8)
    assert first["separable"].sum() >= 5
    assert first["separable"].tolist() == last["separable"].tolist()
    lr = first["model"] == "logistic_regression"
    ran, separable = first.loc[lr, "trajectories"], first.loc[lr, "separable"]
    assert (ran[~separable] == 0).all() and ran[separable].between(15, 30).all()
    assert not first.loc[lr & first["separable"], "errors"].equals(
        last.loc[lr & last["separable"], "errors"]
    )


# --- the sampler's kernels, against the algorithm written step by step --------------------------


def _dot(row: list[float], x: list[float]) -> float:
    total = 0.0
    for a, b in zip(row, x, strict=True):
        total += a * b
    return total


def _plain_next_hit(c: list[float], v: list[float], last: int, rc: float, rs: float):
    """Whether a wall is met within the time left (cosine rc, sine rs), which, and the cosine
    and sine of the time to it (else rc, rs), skipping `last`, one wall at a time. Wall i is
    met at t_i = atan2(v_i, c_i) + pi/2. In front of every wall (c_i > 0) that is compared
    through the ratio k = v_i / c_i: t < time left iff k rs < -rc, and cos t = -k / sqrt(1 +
    k^2), sin t = 1 / sqrt(1 + k^2); with a wall behind, times are compared explicitly."""
    best_ratio, j_ratio, best_time, j_time = math.inf, -1, math.inf, -1
    for i in range(len(c)):
        if i != last and c[i] > 0.0 and v[i] / c[i] < best_ratio:
            best_ratio, j_ratio = v[i] / c[i], i
        elif i != last and not c[i] > 0.0:
            if math.atan2(v[i], c[i]) + math.pi / 2 < best_time:
                best_time, j_time = math.atan2(v[i], c[i]) + math.pi / 2, i
    if j_time >= 0:  # a wall behind
        first, j = best_time, j_time
        if j_ratio >= 0 and math.atan(best_ratio) + math.pi / 2 < first:
            first, j = math.atan(best_ratio) + math.pi / 2, j_ratio
        if first < math.atan2(rs, rc):
            return True, j, math.cos(first), math.sin(first)
        return False, -1, rc, rs
    if j_ratio < 0 or not rs > 0.0 or not best_ratio * rs < -rc:
        return False, -1, rc, rs
    k = best_ratio
    if abs(k) < 1e150:
        h = math.sqrt(1.0 + k * k)
        return True, j_ratio, -k / h, 1.0 / h
    return True, j_ratio, (-1.0 if k > 0 else 1.0), 1.0 / abs(k)


def _rotate(x: list[float], y: list[float], cos: float, sin: float):
    """(x cos + y sin, y cos - x sin), element by element."""
    pairs = list(zip(x, y, strict=True))
    return [a * cos + b * sin for a, b in pairs], [b * cos - a * sin for a, b in pairs]


def _plain_trajectory(B, G, w, p, rc, rs, max_bounces):
    """One trajectory as Pakman & Paninski's algorithm reads, one wall at a time, in plain
    Python floats: the wall values B w, B p; the first wall met; rotate; reflect off it
    through G. Times are rotations (cosine, sine); returns the time left's (1, 0 if none)."""
    m, r = len(B), len(w)
    c, v = [_dot(B[i], w) for i in range(m)], [_dot(B[i], p) for i in range(m)]
    last = -1
    for _ in range(max_bounces):
        hit, j, cos, sin = _plain_next_hit(c, v, last, rc, rs)
        w, p = _rotate(w, p, cos, sin)
        if not hit:
            return w, (1.0, 0.0)
        c, v = _rotate(c, v, cos, sin)
        rc, rs = rc * cos + rs * sin, rs * cos - rc * sin
        scale = 2.0 * v[j] / G[j][j]
        p = [p[k] - scale * B[j][k] for k in range(r)]
        v = [v[i] - scale * G[j][i] for i in range(m)]
        c[j], last = abs(c[j]), j
    return w, (rc, rs)


def _plain_chain(B, G, w, key: int, iterations: int) -> list[float]:
    """A chain of `_plain_trajectory`s: the warm-up (pi/2 at most) fixes the duration, a move
    off the cone through rounding is rejected (as `sample_version_space` documents)."""
    state = np.array([key], dtype=np.uint64)
    rc, rs = 0.0, 1.0
    for iteration in range(iterations):
        budget = sampler.WARMUP_BOUNCES * (1 if iteration == 0 else 20)
        p = [float(streams.next_normal(state)) for _ in w]
        proposal, left = _plain_trajectory(B, G, w, p, rc, rs, budget)
        if iteration == 0:
            travelled = math.pi / 2 - math.atan2(left[1], left[0])
            if travelled > 0:
                rc, rs = math.cos(travelled), math.sin(travelled)
        if all(_dot(row, proposal) > 0.0 for row in B):
            w = proposal
    return w


@pytest.mark.parametrize("problem", ["thin", "discrete"])
def test_the_chains_are_the_plain_algorithms_bit_for_bit(problem):
    """The compiled chains (walls summed side by side, rotation, reflection and the next
    wall's key in one vectorised pass, four running minima) make the same floating-point
    operations as the algorithm written one wall at a time: the same bits. "discrete" has
    repeated rows (as voting's), so walls just hit and their copies sit on or behind the
    wall through rounding and take the general formula."""
    if problem == "thin":
        A, _ = _thin_5d()
    else:
        rng = np.random.default_rng(5)
        X = rng.integers(0, 3, size=(60, 4)).astype(float)
        y = (X @ [1.0, -1.0, 0.5, 2.0] > 2.2).astype(int)
        A = hyperplanes.signed_rows(X, y)
        assert len(np.unique(A, axis=0)) < len(A)
    z0 = hyperplanes.max_margin(A)[1]
    Q, _ = np.linalg.qr(A.T)
    B = np.ascontiguousarray(A @ Q)
    G = portable.matmuls(B[None], B.T[None].copy())[0]  # the bits of the chains' rows of B B^T
    w0 = Q.T @ z0 * np.sqrt(B.shape[1]) / np.linalg.norm(Q.T @ z0)
    keys = stream_keys(3, len(A), range(6), 1)
    W, _, _, ran = sampler._chains(
        B[None].repeat(6, 0), np.ascontiguousarray(B.T)[None].repeat(6, 0),
        w0[None].repeat(6, 0), keys, 8, sampler.WARMUP_BOUNCES, A.shape[1], 0, 0.0, 0,
    )  # fmt: skip
    assert ran.tolist() == [8] * 6
    for s, key in enumerate(keys):
        plain = _plain_chain(B.tolist(), G.tolist(), w0.tolist(), int(key), 8)
        assert W[s].tolist() == plain
        assert np.all(B @ W[s] > 0)


def test_the_first_wall_is_the_first_of_the_smallest_keys():
    """`_least`, four running minima side by side, against one key at a time with `<`:
    ties (also +0 against -0) go to the lowest index, inf and nan are never chosen."""
    rng = np.random.default_rng(6)
    pool = np.array([-1.5, -0.0, 0.0, 0.25, 0.25, 2.0, np.inf, np.nan])
    for size in range(12):
        for _ in range(200):
            key = rng.choice(pool, size=size)
            best, expected = np.inf, -1
            for i, x in enumerate(key):
                if x < best:
                    best, expected = x, i
            assert sampler._least(key) == expected


def test_the_next_hit_is_found_as_one_wall_at_a_time_finds_it():
    """`_next_hit` (keys made in the vectorised pass, the walls behind scanned only when
    there are any) against `_plain_next_hit`, on wall values with ties, zeros of both signs
    and walls behind (c_i <= 0, which rounding leaves after a hit), with and without a wall
    to skip, and times left from 0 to pi/2: the same wall and rotation, bit for bit."""
    rng = np.random.default_rng(7)
    pool = np.array([-0.5, -1e-17, -0.0, 0.0, 1e-17, 0.5, 1.0, 2.0])
    times = np.array([0.0, 1e-9, 0.3, 1.0, np.pi / 2])
    for size in range(1, 10):
        for _ in range(300):
            c, v = rng.choice(pool, size=size), rng.choice(pool, size=size) - 0.25
            last = int(rng.integers(-1, size))
            left = rng.choice(times)
            rc, rs = float(np.cos(left)), float(np.sin(left))
            key = np.empty(size)
            behind = sampler._ratios(c, v, key)
            if last >= 0:
                behind -= not c[last] > 0.0
                key[last] = np.inf
            found = sampler._next_hit(c, v, key, last, behind, rc, rs)
            assert found == _plain_next_hit(c.tolist(), v.tolist(), last, rc, rs)


def test_a_hit_is_at_the_time_the_trigonometric_formulas_give():
    """The square-root form of the hit's cosine and sine is the rotation by
    t = arctan(v / c) + pi/2, and a wall is met exactly when t is below the time left."""
    rng = np.random.default_rng(8)
    for _ in range(2000):
        c, v = rng.uniform(0.01, 3.0), rng.normal(0.0, 3.0)
        left = rng.uniform(0.01, np.pi / 2)
        key = np.array([v / c])
        hit, j, cos, sin = sampler._next_hit(
            np.array([c]), np.array([v]), key, -1, 0, np.cos(left), np.sin(left)
        )
        t = np.arctan(v / c) + np.pi / 2
        if abs(t - left) > 1e-12:
            assert hit == (t < left)
        if hit:
            assert j == 0
            assert cos == pytest.approx(np.cos(t), abs=1e-14)
            assert sin == pytest.approx(np.sin(t), abs=1e-14)


@pytest.mark.parametrize("width", [1, 5, 7, 8, 9, 16, 63, 128, 129, 200, 300, 1100])
def test_widest_gives_numpys_row_sums_bit_for_bit(width):
    """The compiled pass sums each row in numpy's pairwise order: the same double as
    np.abs(Z).sum(axis=-1), so every bound built on it is unchanged."""
    rng = np.random.default_rng(width)
    Z = rng.standard_normal((300, width)) * np.exp(rng.uniform(-20, 20, size=(300, 1)))
    for layout in (Z, np.asfortranarray(Z), Z[:, ::-1]):  # the last two: numpy's own path
        assert hyperplanes.widest(layout) == 1.0 + float(np.abs(layout).sum(axis=-1).max())
    assert hyperplanes.widest(np.zeros((0, width))) == 1.0
    Z[7, 0] = np.nan
    assert np.isnan(hyperplanes.widest(Z))


def test_margins_on_the_data_are_certified_lower_bounds_of_the_exact_margins():
    """`_margins_on_data` against exact rational arithmetic: each split's certified margin is at
    most min_i a_i.z / ||z||_inf on its training rows, and short of it by rounding alone; it
    agrees with `margin_of` on the gathered rows; a NaN in z certifies nothing."""
    from fractions import Fraction

    rng = np.random.default_rng(3)
    Z, y = rng.uniform(-1, 1, size=(60, 4)), rng.integers(0, 2, size=60)
    idx = np.stack([rng.choice(60, 9, replace=False) for _ in range(30)])
    z = rng.standard_normal((30, 5))
    margins = hyperplanes._margins_on_data(Z, y, idx, z, hyperplanes.widest(Z))
    for s in range(30):
        exact = min(
            (2 * int(y[i]) - 1)
            * (sum(Fraction(a) * Fraction(b) for a, b in zip(Z[i], z[s, :-1], strict=True))
               + Fraction(z[s, -1]))
            for i in idx[s]
        ) / Fraction(np.abs(z[s]).max())  # fmt: skip
        assert margins[s] <= exact
        assert float(exact) - margins[s] < 1e-12
    gathered = hyperplanes.signed_rows(Z[idx], y[idx])
    assert np.allclose(margins, hyperplanes.margin_of(gathered, z), rtol=0, atol=1e-13)
    z[4, 2] = np.nan
    broken = hyperplanes._margins_on_data(Z, y, idx, z, hyperplanes.widest(Z))
    assert not broken[4] > TOL and np.array_equal(broken[:4], margins[:4])


# --- the proofs' projection from the smaller Gram matrix (`hyperplanes._projected`): a proof is a
# proof whatever weights it uses, so what is checked is that the weights are the ones meant, lambda
# minus its least-squares projection onto the support rows' column space (numpy's lstsq here)


def _reference(A: np.ndarray, lam: np.ndarray, support: np.ndarray) -> np.ndarray:
    """lam - A_s c with c minimising |lam - A_s c| (A_s: A's rows off the support zeroed),
    clipped at 0: the projection `prove_inseparable` always meant."""
    A_s = A * support[:, None]
    c = np.linalg.lstsq(A_s, lam * support, rcond=None)[0]
    return np.maximum(lam * support - A_s @ c, 0.0)


@pytest.mark.parametrize("m, d", [(12, 40), (60, 15), (30, 30)])
def test_the_projection_is_the_least_squares_one_from_either_gram_matrix(m, d):
    """Rows fewer or more than the nonzero columns (the p x p and q x q Gram matrices), some
    columns all 0 (absent one-hot levels), a rank-deficient repeat: numpy's answer."""
    rng = np.random.default_rng(m + d)
    A = np.where(rng.random((m, d)) < 0.3, 1.0, 0.0) * rng.choice([-1.0, 1.0], size=(m, 1))
    A[:, 3] = 0.0
    A[:, -1] = np.sign(A[:, 0] + 0.5)  # the intercept's +-1
    A[1] = A[0]
    lam = rng.random(m)
    support = rng.random(m) < 0.8
    lam = np.where(support, lam, 0.0)
    got = hyperplanes._projected(A, lam, support)
    assert np.all(got[~support] == 0.0)
    np.testing.assert_allclose(got, _reference(A, lam, support), atol=1e-10)
