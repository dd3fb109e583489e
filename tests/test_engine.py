"""The engine's batched scoring and its independence from how splits are grouped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genvdis.engine import EncodedData, Protocol, count_errors, run_block
from genvdis.models import LDA, LogisticRegression, NaiveBayes
from genvdis.preprocessing import FeatureLayout
from genvdis.splits import draw_block, draw_training_block
from genvdis.streams import stream_keys


def _mixed_data(n: int = 150, seed: int = 0) -> tuple[np.ndarray, np.ndarray, FeatureLayout]:
    rng = np.random.default_rng(seed)
    layout = FeatureLayout(2, (3, 2))
    X = np.column_stack(
        [rng.uniform(size=(n, 2)), rng.integers(0, 3, n), rng.integers(0, 2, n)]
    ).astype(float)
    score = 3 * X[:, 0] - 2 * X[:, 1] + (X[:, 2] == 1) - 0.3 + rng.logistic(scale=0.5, size=n)
    return X, (score > 0).astype(np.int64), layout


@pytest.mark.parametrize("test", ["rest", 60])
def test_error_counts_equal_a_plain_count_per_split(test):
    """Chunked, class-ordered scoring of every model at once = predict and compare, split by
    split, on each model's own encoding (reference coding for LR and LDA)."""
    X, y, layout = _mixed_data()
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout), LDA(layout)]
    block = range(4, 24)
    frame = run_block(data, models, 30, block, Protocol(2, "stratified", test))
    train, test_mask = draw_block(y, 30, 2, block, test=test)
    if test == "rest":
        np.testing.assert_array_equal(train, draw_training_block(y, 30, 2, block))
    for model in models:
        rows = frame[frame.model == model.name]
        Z = data.reference if model.reference_coding else data.onehot
        for s, split in enumerate(block):
            keys = stream_keys(2, 30, [split], stream=1)  # the split's own stream, as the engine
            fit = model.fit_batch(Z, y, train[s : s + 1], keys)
            wrong = ((Z @ fit.coef[0] + fit.intercept[0]) > 0) != y.astype(bool)
            expected = int(wrong[test_mask[s]].sum())
            got = rows[rows.split == split]
            assert int(got.errors.iloc[0]) == expected, (model.name, split)
            assert int(got.n_test.iloc[0]) == int(test_mask[s].sum())


def test_count_errors_counts_per_split_and_model():
    """K = models x splits classifiers: classifier k belongs to split k % S, and tests on the
    rows its split's mask marks, or on every row but its split's training rows."""
    X, y, layout = _mixed_data(seed=1)
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


@pytest.mark.parametrize("m", [8, 40, 110])  # separable (sampler), gathered, most rows
def test_results_do_not_depend_on_how_splits_are_grouped(m):
    X, y, layout = _mixed_data(seed=3)
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout)]
    protocol = Protocol(5, "stratified", "rest")
    whole = run_block(data, models, m, range(0, 24), protocol)
    parts = pd.concat(
        [run_block(data, models, m, r, protocol) for r in (range(0, 5), range(5, 6), range(6, 24))]
    )
    key = ["model", "split"]
    pd.testing.assert_frame_equal(
        whole.sort_values(key).reset_index(drop=True), parts.sort_values(key).reset_index(drop=True)
    )
    if m == 8:
        assert whole.separable.any()
