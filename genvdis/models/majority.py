"""The majority-class baseline, binary and K-class: it predicts the training set's most
frequent class for every row, whatever its attributes. Its error is what a learner must beat
to have learned anything from the attributes: every learning curve is read against it.

Ties (two classes equally frequent in the training set): the smallest class code wins, the
negative class (0) of a binary target. The rule is the scoring's own tie rule (a decision value
of exactly 0 is negative; equal K-class scores go to the lowest class), and
scikit-learn's `DummyClassifier(strategy="most_frequent")` breaks ties the same way (argmax
of the class counts over the sorted classes).

As a linear model it has weight 0 on every attribute and an intercept that picks the class:
+1 / -1 for a binary target; for K classes a score of 1 for the majority class and 0 for every
other one (class 0's reference score is 0, so a majority class 0 ties every class at 0 and
wins as the lowest).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from genvdis.models.base import (
    BatchFit,
    FeatureLayout,
    LinearModel,
    ModelInfo,
    MultiModel,
    StrictSpec,
    Style,
    n_classes,
)


class MajoritySpec(StrictSpec):
    """No parameters: the baseline reads nothing but the training labels."""

    name: Literal["majority"] = "majority"


def majority_classes(y: np.ndarray, idx: np.ndarray, K: int) -> np.ndarray:
    """(S,) the most frequent class among each split's training labels y[idx[s]] (codes
    0..K-1), the smallest code among equally frequent ones (np.argmax's first maximum)."""
    labels = np.asarray(y, dtype=np.int64)[idx]  # (S, m)
    counts = np.zeros((idx.shape[0], K), dtype=np.int64)
    np.add.at(counts, (np.arange(idx.shape[0])[:, None], labels), 1)
    return np.argmax(counts, axis=1)


def majority_errors(y: np.ndarray, train: np.ndarray, test_mask: np.ndarray | None) -> np.ndarray:
    """(S,) each split's test errors of the majority-class prediction: its test rows whose
    label is not the split's majority class (train (S, m) its training rows; it tests on every
    other row, or on the rows test_mask (S, n) marks). Counted from the labels alone: the same
    numbers as scoring the fitted classifiers, whose decision is the same class on every row,
    without a pass over the attributes (on adult's 45,222 rows, a few percent of the engine's
    time: benchmarks/bench_baseline.py)."""
    y = np.asarray(y, dtype=np.int64)
    K = max(2, int(y.max(initial=0)) + 1)
    majority = majority_classes(y, train, K)
    if test_mask is None:
        in_train = (y[train] == majority[:, None]).sum(axis=1)
        right = np.bincount(y, minlength=K)[majority] - in_train
        return len(y) - train.shape[1] - right
    right = (test_mask & (y[None, :] == majority[:, None])).sum(axis=1)
    return test_mask.sum(axis=1) - right


class Majority(LinearModel):
    """Predicts the training set's most frequent class (ties: class 0): log-odds +1 where it
    is the positive class, -1 where it is the negative one."""

    name = "majority"

    def __init__(self, layout: FeatureLayout) -> None:
        super().__init__(layout)

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        majority = majority_classes(y, idx, 2)
        coef = np.zeros((idx.shape[0], Z.shape[1]))
        intercept = np.where(majority == 1, 1.0, -1.0)
        return BatchFit(coef, intercept, np.zeros(idx.shape[0], dtype=bool))


class MultiMajority(MultiModel, Majority):
    """K-class majority: score 1 for the training set's most frequent class, 0 for the others
    (class 0's reference score is 0: a majority class 0 ties all at 0 and wins as the lowest)."""

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        K = n_classes(y)
        majority = majority_classes(y, idx, K)
        S = idx.shape[0]
        intercept = np.zeros((S, K))
        intercept[np.arange(S), majority] = 1.0
        intercept[:, 0] = 0.0  # the reference class's score
        coef = np.zeros((S, K, Z.shape[1]))
        return BatchFit(coef, intercept, np.zeros(S, dtype=bool))


MODEL = ModelInfo(
    name="majority",
    spec=MajoritySpec,
    binary=Majority,
    multiclass=MultiMajority,
    family="baseline",
    style=Style("-.", "tab:gray", "majority class", "Maj"),
    order=40,
)

__all__ = [
    "MODEL", "Majority", "MajoritySpec", "MultiMajority", "majority_classes", "majority_errors"
]  # fmt: skip
