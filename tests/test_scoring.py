"""Scoring: counts of test errors per split and classifier, exact in double precision."""

from __future__ import annotations

import dataclasses

import numpy as np
from tables import mixed_data

from genvdis.preprocessing import FeatureLayout
from genvdis.scoring import EncodedData, count_errors


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
