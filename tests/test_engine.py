"""The engine's blocks: error counts equal a plain count per split, whatever the grouping of
splits into blocks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tables import mixed_data

from genvdis.engine import Protocol, run_block
from genvdis.models import LDA, LogisticRegression, NaiveBayes
from genvdis.scoring import EncodedData
from genvdis.splits import draw_block, draw_training_block
from genvdis.streams import stream_keys


@pytest.mark.parametrize("test", ["rest", 60])
def test_error_counts_equal_a_plain_count_per_split(test):
    """Chunked, class-ordered scoring of every model at once = predict and compare, split by
    split, on each model's own encoding (reference coding for LR and LDA)."""
    X, y, layout = mixed_data()
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


@pytest.mark.parametrize("m", [8, 40, 110])  # separable (sampler), gathered, most rows
def test_results_do_not_depend_on_how_splits_are_grouped(m):
    X, y, layout = mixed_data(seed=3)
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
