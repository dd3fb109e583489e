"""Scoring: counts of test errors per split and classifier, exact in double precision."""

from __future__ import annotations

import dataclasses

import numpy as np

from genvdis.data.preprocessing import FeatureLayout
from genvdis.experiment import scoring as multiclass
from genvdis.experiment.scoring import EncodedData, count_errors
from tests.tables import mixed_data


def test_count_errors_counts_per_split_and_model():
    """K = models x splits classifiers: classifier k belongs to split k % S, and tests on the
    rows its split's mask marks, or on every row but its split's training rows."""
    X, y, layout = mixed_data(seed=1)
    data = EncodedData.encode(X, y, layout)
    S = 3
    rng = np.random.default_rng(2)
    classifiers = rng.normal(size=(2 * S, data.width))
    train = np.array([rng.choice(len(y), size=20, replace=False) for _ in range(S)])
    masks = rng.uniform(size=(S, len(y))) < 0.7
    rest = np.ones((S, len(y)), dtype=bool)
    rest[np.arange(S)[:, None], train] = False
    Z1 = np.column_stack([data.onehot, np.ones(len(y))])
    for test_mask, tested in ((masks, masks), (None, rest)):
        got = count_errors(data, classifiers, train, test_mask)
        for k in range(2 * S):
            wrong = (Z1 @ classifiers[k] > 0) != y.astype(bool)
            assert got[k] == int(wrong[tested[k % S]].sum())


def test_count_errors_decides_near_zero_decisions_in_double_precision():
    """Single precision cannot tell x.w = +-1e-10 from 0 (its rounding is ~1e-7 here); the
    count must be double's (whose rounding, ~1e-16, leaves those signs alone in any summation
    order). Each classifier's boundary passes a hair to one side of a data row that 1 in 64
    rows repeat."""
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(64, 3))[rng.integers(0, 64, size=400)]
    y = rng.integers(0, 2, 400)
    data = EncodedData.encode(X, y, FeatureLayout(3, ()))
    S = 4
    classifiers = np.zeros((2 * S, 4))
    for k in range(2 * S):
        w = rng.normal(size=3)
        classifiers[k] = [*w, -(X[rng.integers(400)] @ w) + (-1) ** k * 1e-10]
    Z1 = np.column_stack([data.onehot, np.ones(400)])
    train = np.arange(S)[:, None] + np.array([0, 100])  # training rows: taken off the count
    tested = np.ones((S, 400), dtype=bool)
    tested[np.arange(S)[:, None], train] = False
    for scale in (1.0, 2.0**990):  # the second beyond single's range: counted in double
        for test_mask in (None, tested):
            got = count_errors(data, scale * classifiers, train, test_mask)
            for k in range(2 * S):
                wrong = ((Z1 @ (scale * classifiers[k])) > 0) != y.astype(bool)
                assert got[k] == int(wrong[tested[k % S]].sum()), (scale, k)
        near = (np.abs(Z1 @ classifiers.T) < 1e-9).sum(axis=0)
        assert (near >= 2).all()  # every classifier has rows on its knife edge


def test_one_hot_rows_are_scored_from_their_nonzeros_with_the_same_counts():
    """Wide one-hot rows (mostly zeros) take the sparse first pass; its counts, near-zero
    decisions included, must be the BLAS product's and the double-precision ones, with a
    mask or testing on every other row."""
    rng = np.random.default_rng(7)
    levels = (5, 7, 4, 9, 6, 8)
    X = np.column_stack([rng.integers(0, k, 300) for k in levels]).astype(float)
    y = rng.integers(0, 2, 300)
    data = EncodedData.encode(X, y, FeatureLayout(0, levels))
    assert data.sparse is not None  # 7 nonzeros in 40 columns
    dense = dataclasses.replace(data, sparse=None)
    S = 5
    Z1 = np.column_stack([data.onehot, np.ones(300)])
    classifiers = rng.normal(size=(2 * S, data.width))
    for k in range(0, 2 * S, 2):  # a hair (1e-10) off the boundary through a data row
        classifiers[k, -1] -= Z1[rng.integers(300)] @ classifiers[k] + (-1) ** k * 1e-10
    train = np.array([rng.choice(300, size=40, replace=False) for _ in range(S)])
    mask = rng.uniform(size=(S, 300)) < 0.6
    rest = np.ones((S, 300), dtype=bool)
    rest[np.arange(S)[:, None], train] = False
    for test_mask, tested in ((mask, mask), (None, rest)):
        got = count_errors(data, classifiers, train, test_mask)
        assert np.array_equal(got, count_errors(dense, classifiers, train, test_mask))
        for k in range(2 * S):
            wrong = (Z1 @ classifiers[k] > 0) != y.astype(bool)
            assert got[k] == int(wrong[tested[k % S]].sum())
    near = (np.abs(Z1 @ classifiers[::2].T) < 1e-9).sum(axis=0)
    assert (near >= 1).all()  # the knife edges are there to be decided


def _knife_edges(rng, data: EncodedData, n_classifiers: int, offsets: np.ndarray) -> np.ndarray:
    """Classifiers with dyadic weights (multiples of 2^-10, |w| <= 1/4), so that every
    decision value on the one-hot rows is exact in double in any summation order: classifier
    k's is offsets[k] on a data row that other rows repeat."""
    Z1 = np.column_stack([data.onehot, np.ones(len(data.y))])
    classifiers = rng.integers(-256, 257, size=(n_classifiers, data.width)) / 1024
    for k in range(n_classifiers):
        classifiers[k, -1] = 0.0
        classifiers[k, -1] = -(Z1[rng.integers(len(data.y))] @ classifiers[k]) + offsets[k]
    return classifiers


def test_values_within_a_classifiers_tie_bound_are_decided_as_zero():
    """A decision value within ties[k] of 0 is an exact tie (`BatchFit.ties`): predicted
    negative, by the dense and the sparse pass, with a mask or testing on every other row;
    values beyond it, and every value of a classifier whose bound is 0 (the default: the
    counts of every model but discrete naive Bayes), are decided by their sign."""
    rng = np.random.default_rng(11)
    levels = (5, 7, 4, 9, 6, 8)
    distinct = np.column_stack([rng.integers(0, k, 40) for k in levels]).astype(float)
    X = distinct[rng.integers(0, 40, 400)]
    y = rng.integers(0, 2, 400)
    data = EncodedData.encode(X, y, FeatureLayout(0, levels))
    assert data.sparse is not None
    dense = dataclasses.replace(data, sparse=None)
    S = 4
    # offsets +-2^-46 (~1e-14: a tie under a bound of 1e-12) and +-2^-20 (beyond it)
    offsets = np.array([2.0**-46, -(2.0**-46), 2.0**-20, -(2.0**-20)] * 4)
    classifiers = _knife_edges(rng, data, 4 * S, offsets)
    ties = np.where(np.arange(4 * S) < 2 * S, 1e-12, 0.0)
    Z1 = np.column_stack([data.onehot, np.ones(400)])
    train = np.array([rng.choice(400, size=30, replace=False) for _ in range(S)])
    mask = rng.uniform(size=(S, 400)) < 0.6
    rest = np.ones((S, 400), dtype=bool)
    rest[np.arange(S)[:, None], train] = False
    values = Z1 @ classifiers.T  # exact
    assert set(np.abs(values[np.abs(values) < 1e-3])) == {2.0**-46, 2.0**-20}
    for test_mask, tested in ((mask, mask), (None, rest)):
        for encoded in (data, dense):
            got = count_errors(encoded, classifiers, train, test_mask, ties)
            for k in range(4 * S):
                wrong = (values[:, k] > ties[k]) != y.astype(bool)
                assert got[k] == int(wrong[tested[k % S]].sum()), k
            untied = count_errors(encoded, classifiers, train, test_mask)
            np.testing.assert_array_equal(
                untied, count_errors(encoded, classifiers, train, test_mask, np.zeros(4 * S))
            )
            for k in range(4 * S):
                wrong = (values[:, k] > 0) != y.astype(bool)
                assert untied[k] == int(wrong[tested[k % S]].sum()), k
    # a tie moves counts: the +2^-46 classifiers under the bound differ from their sign's
    moved = count_errors(data, classifiers, train, None, ties) != untied
    assert moved[: 2 * S].any() and not moved[2 * S :].any()


def test_k_class_scores_within_the_tie_bound_go_to_the_lowest_class():
    """scoring.count_errors (K classes): class 2's score is class 1's plus 2^-46 (exact: dyadic
    weights); under a tie bound of 1e-12 the two tie and class 1 wins (class 0, score 0, where
    class 1's is 0 too), without one class 2 wins wherever class 1's score is >= 0."""
    rng = np.random.default_rng(12)
    levels = (3, 4, 5)
    X = np.column_stack([rng.integers(0, k, 20) for k in levels]).astype(float)[
        rng.integers(0, 20, 200)
    ]
    y = rng.integers(0, 3, 200)
    data = EncodedData.encode(X, y, FeatureLayout(0, levels))
    Z1 = np.column_stack([data.onehot, np.ones(200)])
    L = 6
    first = _knife_edges(rng, data, L, np.zeros(L))  # class 1's score 0 on some rows
    coef = np.zeros((L, 3, data.width))
    coef[:, 1], coef[:, 2] = first, first
    coef[:, 2, -1] += 2.0**-46
    train = np.array([rng.choice(200, size=10, replace=False) for _ in range(L)])
    tested = np.ones((L, 200), dtype=bool)
    tested[np.arange(L)[:, None], train] = False
    score = Z1 @ first.T  # exact
    assert (score == 0).sum(axis=0).min() >= 2
    for ties, predicted in ((np.full(L, 1e-12), np.where(score > 0, 1, 0)),
                            (None, np.where(score >= 0, 2, 0))):  # fmt: skip
        got = multiclass._count_argmax_errors(Z1, y, coef, train, None, ties)
        for k in range(L):
            assert got[k] == int((predicted[:, k] != y)[tested[k]].sum()), k
