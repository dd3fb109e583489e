"""The batched Newton solver (`genvdis.models.logistic._newton`) on its own: its two design layouts
agree, its
fits are the likelihood's stationary points with the margin bound as defined, its stop rules
mean what they say, and grouping problems changes no bit.

Data are small and synthetic (noisy labels: the maximum likelihood exists), except in the
last test, a regression test on adult (discrete)."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis.config.experiment import load_config
from genvdis.data.preprocessing import prepare
from genvdis.data.sources import load_data
from genvdis.experiment import engine, splits
from genvdis.models.logistic import _kernels as logistic_kernels
from genvdis.models.logistic import _layouts as layouts
from genvdis.models.logistic import _solves as newton_solves
from genvdis.models.logistic import _sparsest_first as sparsest_first
from genvdis.models.logistic._layouts import Gathered, Sparse
from genvdis.models.logistic._newton import newton_logistic
from genvdis.models.logistic.binary import TINY_RIDGE
from genvdis.models.registry import build_model
from tests.conftest import REPO


def _problems(seed: int, n: int, coef: list[float], S: int, m: int, zero_column: bool = False):
    """Data X (n, d) with an intercept column last (and a column of zeros before it), labels
    drawn from a logistic model with coefficients coef on the uniform columns, and S training
    sets idx (S, m)."""
    rng = np.random.default_rng(seed)
    U = rng.uniform(size=(n, len(coef)))
    columns = [U, np.zeros((n, 1))] if zero_column else [U]
    X = np.column_stack([*columns, np.ones(n)])
    score = U @ coef - 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-score))).astype(np.int64)
    idx = np.stack([np.sort(rng.choice(n, m, replace=False)) for _ in range(S)])
    return X, y, idx


def _both_layouts(X: np.ndarray, y: np.ndarray, idx: np.ndarray, penalty: np.ndarray, **rules):
    """The fits of the training sets idx laid out gathered and sparse."""
    t = y[idx].astype(float)
    gathered = newton_logistic(Gathered(X[idx], t), penalty, **rules)
    sparse = newton_logistic(Sparse(Sparse.from_dense(X), X.shape[1], idx, t), penalty, **rules)
    return gathered, sparse


def test_sparse_and_gathered_designs_give_the_same_fits():
    """The two ways of laying out S training sets (rows copied out, row indices into sparse
    data) are one solver: same coefficients, separability and margin bounds, one of the sets
    separable (m = 6) and stopped on a separating iterate."""
    X, y, idx = _problems(11, 90, [3.0, -2.0, 1.0], S=7, m=40)
    X[np.random.default_rng(0).uniform(size=X.shape) < 0.3] = 0.0  # zeros for sparse to skip
    for sets in (idx, idx[:, :6]):
        gathered, sparse = _both_layouts(X, y, sets, np.zeros(4), stop_if_separating=True)
        np.testing.assert_allclose(sparse.beta, gathered.beta, rtol=1e-7, atol=1e-9)
        np.testing.assert_array_equal(sparse.separating, gathered.separating)
        np.testing.assert_allclose(sparse.margin_bound, gathered.margin_bound, rtol=1e-6, atol=1e-9)
    assert gathered.separating.any() and not gathered.separating.all()


def test_singular_hessians_take_the_pseudo_inverse_step_in_every_layout():
    """A feature that is 0 in every row, unpenalised, makes every Hessian exactly singular: the
    compiled gathered step hands those problems to the pseudo-inverse, as the generic (sparse)
    path does, and the two agree, with weight 0 on that feature."""
    X, y, idx = _problems(12, 60, [3.0, -2.0], S=4, m=30, zero_column=True)
    gathered, sparse = _both_layouts(X, y, idx, np.zeros(4))
    np.testing.assert_allclose(gathered.beta, sparse.beta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gathered.margin_bound, sparse.margin_bound, rtol=1e-6, atol=1e-12)
    assert np.all(gathered.beta[:, 2] == 0.0)


def test_sparse_design_holds_the_nonzeros_of_the_dense_data():
    """`Sparse.from_dense` (scipy's CSR, as int64): rebuilding X from its arrays gives X back,
    with no stored zeros and column indices ascending in each row, as the kernels assume."""
    X, _, _ = _problems(16, 40, [1.0, 2.0, 3.0], S=1, m=2, zero_column=True)
    X[np.random.default_rng(1).uniform(size=X.shape) < 0.4] = 0.0
    indptr, indices, values = Sparse.from_dense(X)
    assert indptr.dtype == indices.dtype == np.int64 and values.size == np.count_nonzero(X)
    rebuilt = np.zeros(X.shape)
    for r in range(X.shape[0]):
        row = slice(indptr[r], indptr[r + 1])
        assert (np.diff(indices[row]) > 0).all()
        rebuilt[r, indices[row]] = values[row]
    np.testing.assert_array_equal(rebuilt, X)


def test_fits_are_stationary_and_their_margin_bounds_are_as_defined():
    """Each fit zeroes the penalised likelihood's gradient X^T (t - p) - penalty * beta, and
    its margin bound is ||X^T r||_1 / sum |r| at the fit (r = t - p), both computed here in
    plain numpy from the returned coefficients."""
    X, y, idx = _problems(13, 200, [4.0, -3.0, 2.0], S=6, m=80)
    penalty = np.array([0.5, 0.5, 0.5, 0.0])
    fit = newton_logistic(Gathered(X[idx], y[idx].astype(float)), penalty)
    for s, rows in enumerate(idx):
        A, t = X[rows], y[rows]
        r = t - 1 / (1 + np.exp(-(A @ fit.beta[s])))
        gradient = A.T @ r - penalty * fit.beta[s]
        np.testing.assert_allclose(gradient, 0.0, atol=1e-8)
        bound = np.abs(A.T @ r).sum() / np.abs(r).sum()
        assert fit.margin_bound[s] == pytest.approx(bound, rel=1e-6, abs=1e-12)
    assert not fit.separating.any()


def test_stopping_unseparated_problems_after_k_iterations_is_k_iterations():
    """`stop_unseparated_after=k` stops a problem whose k-th iterate does not separate its
    set exactly where `max_iter=k` does: same iterate, bit for bit."""
    X, y, idx = _problems(14, 150, [3.0, -2.0], S=5, m=100)
    design, penalty = Gathered(X[idx], y[idx].astype(float)), np.zeros(3)
    for k in (1, 2, 3):
        early = newton_logistic(design, penalty, stop_unseparated_after=k)
        capped = newton_logistic(design, penalty, max_iter=k)
        np.testing.assert_array_equal(early.beta, capped.beta)
    converged = newton_logistic(design, penalty)
    assert not np.array_equal(converged.beta, newton_logistic(design, penalty, max_iter=1).beta)


def test_solving_in_groups_changes_no_bit(monkeypatch):
    """Gathered problems are solved in groups sized to stay in cache; problems are
    independent, so groups of one give the very bits one group gives."""
    X, y, idx = _problems(15, 120, [3.0, -2.0, 1.0], S=9, m=50)
    design, penalty = Gathered(X[idx], y[idx].astype(float)), np.full(4, 1e-8)
    whole = newton_logistic(design, penalty, stop_if_separating=True)
    monkeypatch.setattr(layouts, "GROUP_BYTES", 8 * 50 * 4)  # one problem a group
    grouped = newton_logistic(design, penalty, stop_if_separating=True)
    for field in ("beta", "separating", "margin_bound"):
        np.testing.assert_array_equal(getattr(grouped, field), getattr(whole, field))


def test_sparse_rows_copied_out_give_the_same_bits():
    """`Sparse.gather` (each problem's rows copied out next to each other) reads the same
    nonzeros as row indices into the data: the very same fits, bit for bit."""
    X, y, idx = _problems(17, 90, [3.0, -2.0, 1.0], S=6, m=40)
    X[np.random.default_rng(2).uniform(size=X.shape) < 0.4] = 0.0
    csr, t, penalty = Sparse.from_dense(X), y[idx].astype(float), np.full(4, 1e-8)
    by_index = newton_logistic(Sparse(csr, 4, idx, t), penalty, stop_if_separating=True)
    copied = newton_logistic(Sparse.gather(csr, 4, idx, t), penalty, stop_if_separating=True)
    for field in ("beta", "separating", "margin_bound"):
        np.testing.assert_array_equal(getattr(copied, field), getattr(by_index, field))


def test_eliminating_only_coupled_unknowns_is_the_full_elimination():
    """Hessians of one-hot designs with levels absent from a training set: those unknowns'
    rows are the ridge alone. Solving the coupled ones only gives the full elimination's
    answer bit for bit (and numpy's to rounding); a decoupled zero pivot is singular."""
    rng = np.random.default_rng(18)
    S, d = 20, 12
    rows = rng.normal(size=(S, 30, d)) * (rng.uniform(size=(S, 1, d)) < 0.6)
    A = np.einsum("smd,sme->sde", rows, rows) + 1e-8 * np.eye(d)
    b = rng.normal(size=(S, d))
    x, singular = newton_solves.solve(A, b)
    assert not singular.any()
    for s in range(S):
        full = np.zeros(d)
        assert not newton_solves.solve_into(A[s], b[s], full)
        np.testing.assert_array_equal(x[s], full)
    np.testing.assert_allclose(x, np.linalg.solve(A, b[..., None])[..., 0], rtol=1e-6)
    A[0, 0] = 0.0  # unpenalised and absent: no unknown to solve for
    A[0, 0, 1:] = A[0, 1:, 0] = 0.0
    assert newton_solves.solve(A, b)[1][0]


def test_adult_discrete_fits_are_the_likelihoods_minima(mirror_env):
    """A regression test: adult (discrete) at m = 2000, split 80 was left far from its
    minimum (gradient 48, loss 941 against 686) after 100 iterations started from a fit on
    200 of its rows. Sparse designs start from their pure levels (`quasi_start`) and creep by
    the exponential model: every fit of splits 75-84 zeroes the penalised likelihood's
    gradient."""
    config = load_config(REPO / "configs" / "adult-discrete.yaml")
    data = prepare(load_data(config), config)
    encoded = engine.EncodedData.from_prepared(data)
    model = build_model(config.models[1], data.layout)
    idx = splits.draw_training_block(encoded.y, 2000, config.seed, range(75, 85), config.split)
    fit = model.fit_batch(encoded.reference, encoded.y, idx)
    for s, rows in enumerate(idx):
        A, t = encoded.reference[rows], encoded.y[rows]
        eta = A @ fit.coef[s] + fit.intercept[s]
        residual = t - 1 / (1 + np.exp(-eta))
        gradient = np.append(A.T @ residual - TINY_RIDGE * fit.coef[s], residual.sum())
        assert np.abs(gradient).max() < 1e-6


def test_fused_sparse_steps_are_the_hessians_solved_bit_for_bit():
    """`logistic_kernels.sparse_directions` builds each Hessian in one buffer, skipping the
    products by values where all are 1 (one-hot data), and solves it there: the same bits as
    the (S, d, d) Hessians + diag(penalty) solved by `_solve`, for one-hot and for general
    values; a numerically singular system (an unpenalised column absent from a training set)
    gets the pseudo-inverse's step through `Sparse.directions`."""
    rng = np.random.default_rng(19)
    X = (rng.uniform(size=(120, 6)) < 0.4).astype(float)
    X[:, -1] = 1.0
    idx = np.stack([np.sort(rng.choice(120, 50, replace=False)) for _ in range(5)])
    w, grad = rng.uniform(0, 0.25, size=(5, 50)), rng.normal(size=(5, 6))
    penalty = np.append(np.full(5, 1e-8), 0.0)
    for values in (X, X * rng.normal(size=X.shape)):
        csr = Sparse.from_dense(values)
        unit = bool((csr[2] == 1.0).all())
        assert unit == (values is X)
        hess = logistic_kernels.sparse_hessian(*csr, idx, w, 6, False)
        expected, singular = newton_solves.solve(hess + np.diag(penalty), grad)
        assert not singular.any()
        delta, singular = logistic_kernels.sparse_directions(*csr, idx, w, penalty, grad, unit)
        np.testing.assert_array_equal(delta, expected)
        assert not singular.any()
    design = Sparse(Sparse.from_dense(X), 6, idx, np.zeros((5, 50)))
    zero = penalty.copy()
    zero[0] = 0.0
    design.idx[0] = np.flatnonzero(X[:, 0] == 0)[:50]  # column 0 absent from problem 0
    delta = design.directions(w, zero, grad)
    hess = design.hessian(w) + np.diag(zero)
    np.testing.assert_allclose(delta[0], np.linalg.pinv(hess[0]) @ grad[0])


def _sparsest_first(X: np.ndarray, idx: np.ndarray, unit: bool = True) -> tuple:
    """`layouts.Sparse.sparsest_first`'s plan for rows idx of X, with the elimination orders'
    positions and the groups' first rows."""
    csr = Sparse.from_dense(X)
    _, position, _ = sparsest_first.elimination_orders(csr[0], csr[1], idx, X.shape[1])
    _, first, _ = sparsest_first.row_groups(*csr, idx)
    return sparsest_first.plan(csr, idx, X.shape[1], unit), position, first


def _grouped_system(X, idx, s, w, penalty, plan, first):
    """Problem s's Hessian + diag(penalty) summed over its groups of identical rows (each
    group's weights added first, in row order; `logistic_kernels.sparse_hessian`'s sums),
    reordered to its present unknowns in elimination order."""
    csr = Sparse.from_dense(X)
    u = plan.groups[s]
    summed = np.zeros(u)
    np.add.at(summed, plan.group[s], w[s])  # in row order
    hess = logistic_kernels.sparse_hessian(*csr, first[None, s, :u], summed[None], X.shape[1], True)
    at = plan.order[s, : plan.present[s]]
    return (hess[0] + np.diag(penalty))[np.ix_(at, at)], at


def test_sparsest_first_steps_are_the_reordered_systems_solved_bit_for_bit():
    """`sparsest_first.sparse_steps`: identical rows grouped (`row_groups`: as many groups as
    distinct rows, each row's group holding its very nonzeros), each group's weights summed in
    row order; each problem's present columns ordered rarest first (the intercept, in every
    row, last; absent columns after them, `elimination_orders`); that Hessian of the groups +
    diag(penalty), reordered, gives the very bits summed straight in the reordered
    coordinates (`group_nonzeros`, with the intercept's column copied from the diagonal, and
    without, where a row lacks the last column), and solved by `solve_symmetric_in_place`; an
    absent column's step is its gradient over its ridge, and the steps solve the full
    systems. An unpenalised absent column is singular (the caller's pseudo-inverse then)."""
    rng = np.random.default_rng(23)
    X = np.zeros((200, 13))
    X[np.arange(200), rng.choice(6, p=[0.5, 0.3, 0.1, 0.05, 0.03, 0.02], size=200)] = 1.0
    X[np.arange(200), 6 + rng.choice(6, p=[0.7, 0.2, 0.05, 0.03, 0.02, 0.0], size=200)] = 1.0
    X[:, -1] = 1.0
    idx = np.stack([np.sort(rng.choice(200, 40, replace=False)) for _ in range(6)])
    w, grad = rng.uniform(0.01, 0.25, size=(6, 40)), rng.normal(size=(6, 13))
    penalty = np.append(np.full(12, 1e-8), 0.0)
    no_intercept = X.copy()
    no_intercept[::7, -1] = 0.0  # some rows without the last column
    for data in (X, no_intercept):
        plan, position, first = _sparsest_first(data, idx)
        delta, singular, unsolved = sparsest_first.sparse_steps(
            w, penalty, grad, True, *plan.for_steps
        )
        assert not singular.any() and not unsolved.any()
        order, present, group, groups = plan[1:5]
        hess = logistic_kernels.sparse_hessian(*Sparse.from_dense(data), idx, w, 13, True)
        for s in range(6):
            u = groups[s]
            assert u == len(np.unique(data[idx[s]], axis=0)) < 40
            assert np.array_equal(data[first[s, group[s]]], data[idx[s]])
            counts = data[idx[s]].sum(axis=0)
            k = present[s]
            assert k == np.count_nonzero(counts)
            assert data is not X or order[s, k - 1] == 12  # in every row: the intercept last
            assert np.all(np.diff(counts[order[s, :k]]) >= 0) and np.all(counts[order[s, k:]] == 0)
            assert np.all(position[s, order[s]] == np.arange(13))
            system, at = _grouped_system(data, idx, s, w, penalty, plan, first)
            x = np.zeros(k)
            assert not newton_solves.solve_symmetric_in_place(system, grad[s, at].copy(), x)
            assert delta[s, at].tobytes() == x.tobytes()
            absent = order[s, k:]
            assert delta[s, absent].tobytes() == (grad[s, absent] / penalty[absent]).tobytes()
            np.testing.assert_allclose(
                (hess[s] + np.diag(penalty)) @ delta[s], grad[s], rtol=1e-6, atol=1e-9
            )
    plan, position, _ = _sparsest_first(X, idx)
    order, present = plan.order, plan.present
    assert present.min() < 13  # some problem has an absent column
    s = int(np.argmin(present))
    zero = penalty.copy()
    zero[order[s, -1]] = 0.0
    _, singular, _ = sparsest_first.sparse_steps(w, zero, grad, True, *plan.for_steps)
    assert singular[s]
    assert np.array_equal(singular, position[:, order[s, -1]] >= present)  # where it is absent


def test_sparsest_first_steps_pivot_where_a_system_is_not_positive_definite():
    """Two unpenalised columns that are always equal make each system singular: the symmetric
    elimination gives up (`sparse_steps` says so, unsolved, its step left 0), and the design's
    step is `sparse_directions`' (elimination with pivoting), its bits, or the
    pseudo-inverse's where that finds the system singular; the general values' path (not
    one-hot) solves its systems too."""
    rng = np.random.default_rng(31)
    X = np.zeros((120, 9))
    X[np.arange(120), rng.integers(4, size=120)] = 1.0
    X[:, 4] = X[:, 0]  # column 4 is column 0
    X[np.arange(120), 5 + rng.integers(3, size=120)] = 1.0
    X[:, -1] = 1.0
    idx = np.stack([np.sort(rng.choice(120, 50, replace=False)) for _ in range(4)])
    w, grad = rng.uniform(0.01, 0.25, size=(4, 50)), rng.normal(size=(4, 9))
    penalty = np.zeros(9)
    plan, _, first = _sparsest_first(X, idx)
    delta, singular, unsolved = sparsest_first.sparse_steps(w, penalty, grad, True, *plan.for_steps)
    assert unsolved.all() and not singular.any() and not delta.any()
    for s in range(4):
        system, at = _grouped_system(X, idx, s, w, penalty, plan, first)
        assert newton_solves.solve_symmetric_in_place(system, grad[s, at].copy(), at * 0.0)
    csr = Sparse.from_dense(X)
    design = Sparse(csr, 9, idx, np.zeros((4, 50))).sparsest_first()
    got = design.directions(w, penalty, grad)
    pivoted, singular = logistic_kernels.sparse_directions(*csr, idx, w, penalty, grad, True)
    hess = design.hessian(w) + np.diag(penalty)
    for s in range(4):
        if singular[s]:
            np.testing.assert_allclose(got[s], np.linalg.pinv(hess[s]) @ grad[s])
        else:
            assert got[s].tobytes() == pivoted[s].tobytes()
    values = X * rng.choice([0.5, 2.0], size=X.shape)
    values[:, 4] = values[:, 0] * 3.0
    penalty = np.append(np.full(8, 1e-8), 0.0)
    plan, _, _ = _sparsest_first(values, idx, unit=False)
    delta, singular, unsolved = sparsest_first.sparse_steps(
        w, penalty, grad, False, *plan.for_steps
    )
    assert not singular.any() and not unsolved.any()
    hess = logistic_kernels.sparse_hessian(*Sparse.from_dense(values), idx, w, 9, False)
    for s in range(4):
        np.testing.assert_allclose(
            (hess[s] + np.diag(penalty)) @ delta[s], grad[s], rtol=1e-6, atol=1e-8
        )


def test_grouped_gradients_are_the_rows_gradients():
    """`sparsest_first.grouped_gradient`: Newton's weights p (1 - p) the very bits of
    `_Products.newton_step`'s, and the penalised gradient X^T (t - p) - penalty beta summed
    over groups of identical rows equal to `sparse_gradient`'s over every row (to rounding),
    for one-hot and for general values; an absent column's, -penalty beta, exactly."""
    rng = np.random.default_rng(37)
    X = np.zeros((150, 10))
    X[np.arange(150), rng.integers(4, size=150)] = 1.0
    X[np.arange(150), 4 + rng.choice(5, p=[0.6, 0.3, 0.1, 0.0, 0.0], size=150)] = 1.0
    X[:, -1] = 1.0
    idx = np.stack([np.sort(rng.choice(150, 60, replace=False)) for _ in range(5)])
    t = rng.integers(2, size=idx.shape).astype(float)
    eta = rng.normal(scale=5.0, size=idx.shape)
    e, beta = np.exp(-np.abs(eta)), rng.normal(size=(5, 10))
    penalty = np.append(np.full(9, 1e-2), 0.0)
    for data, unit in ((X, True), (X * rng.choice([0.5, 3.0], size=X.shape), False)):
        plan, _, _ = _sparsest_first(data, idx, unit)
        w, grad = sparsest_first.grouped_gradient(t, eta, e, beta, penalty, unit, *plan.for_steps)
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        assert w.tobytes() == (p * (1.0 - p)).tobytes()
        rows = logistic_kernels.sparse_gradient(*Sparse.from_dense(data), idx, t - p, 10)
        np.testing.assert_allclose(grad, rows - penalty * beta, rtol=1e-12, atol=1e-12)
        absent = np.flatnonzero(data[idx[0]].sum(axis=0) == 0)
        assert absent.size and (grad[0, absent] == -penalty[absent] * beta[0, absent]).all()


def test_grouped_predictors_are_the_rows_own_bit_for_bit():
    """`sparsest_first.grouped_predictor`, X beta once a group of identical rows from its
    nonzeros held contiguous (`group_nonzeros`): the bits of `sparse_predictor`, for one-hot
    and for general values (rows equal only where their values are), with as many groups as
    distinct rows."""
    rng = np.random.default_rng(29)
    X = np.zeros((150, 9))
    X[np.arange(150), rng.integers(4, size=150)] = 1.0
    X[np.arange(150), 4 + rng.integers(4, size=150)] = 1.0
    X[:, -1] = 1.0
    idx = rng.integers(150, size=(4, 60))
    beta = rng.normal(size=(4, 9))
    for values, unit in ((X, True), (X * rng.choice([1.0, 2.5], size=X.shape), False)):
        csr = Sparse.from_dense(values)
        plan = sparsest_first.plan(csr, idx, 9, unit)
        assert np.all(plan.groups == [len(np.unique(values[row], axis=0)) for row in idx])
        got = sparsest_first.grouped_predictor(
            plan.problems, plan.group, plan.groups, plan.gptr, plan.gidx, plan.gvx, unit, beta
        )
        assert got.tobytes() == logistic_kernels.sparse_predictor(*csr, idx, beta).tobytes()


def test_a_sparsest_first_designs_problems_taken_keep_their_bits():
    """`Sparse.take` on a sparsest-first design keeps the plan's arrays and narrows the rows it
    reads (`sparsest_first.Plan.problems`): the problems taken get the very predictors, weights,
    gradients and steps they get among all."""
    rng = np.random.default_rng(41)
    X = np.zeros((150, 10))
    X[np.arange(150), rng.integers(4, size=150)] = 1.0
    X[np.arange(150), 4 + rng.integers(5, size=150)] = 1.0
    X[:, -1] = 1.0
    idx = np.stack([np.sort(rng.choice(150, 60, replace=False)) for _ in range(6)])
    t = rng.integers(2, size=idx.shape).astype(float)
    design = Sparse.gather(Sparse.from_dense(X), 10, idx, t).sparsest_first()
    beta = rng.normal(size=(6, 10))
    penalty = np.append(np.full(9, 1e-8), 0.0)
    eta = design.predictor(beta)
    e = np.exp(-np.abs(eta))
    every = design.newton_step(eta, e, beta, penalty)
    which = np.array([4, 1, 5])
    taken = design.take(which)
    assert taken.orders.gcol is design.orders.gcol  # no copy
    assert taken.predictor(beta[which]).tobytes() == eta[which].tobytes()
    some = taken.newton_step(eta[which], e[which], beta[which], penalty)
    for a, b in zip(every, some, strict=True):
        assert a[which].tobytes() == b.tobytes()
