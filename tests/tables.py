"""A small table of mixed features (two continuous, two discrete) with a known layout, shared by
the engine's and scoring's tests."""

from __future__ import annotations

import numpy as np

from genvdis.data.preprocessing import FeatureLayout


def mixed_data(n: int = 150, seed: int = 0) -> tuple[np.ndarray, np.ndarray, FeatureLayout]:
    rng = np.random.default_rng(seed)
    layout = FeatureLayout(2, (3, 2))
    X = np.column_stack(
        [rng.uniform(size=(n, 2)), rng.integers(0, 3, n), rng.integers(0, 2, n)]
    ).astype(float)
    score = 3 * X[:, 0] - 2 * X[:, 1] + (X[:, 2] == 1) - 0.3 + rng.logistic(scale=0.5, size=n)
    return X, (score > 0).astype(np.int64), layout
