"""Random train/test splits, each a pure function of (seed, m, split index).

Because split s at size m depends on nothing else, results do not depend on how splits are
grouped into tasks, on the number of workers, or on the order tasks finish in; and every model
is scored on the very same splits (paired comparisons).
"""

from __future__ import annotations

import numpy as np

from genvdis.errors import UserError


def split_rng(seed: int, m: int, split: int, stream: int = 0) -> np.random.Generator:
    """The generator for one split's rows (stream 0) or its random hyperplane (stream 1)."""
    return np.random.default_rng([seed, m, split, stream])


def check_size(m: int, class_counts: tuple[int, int], test: str | int) -> None:
    """An m that cannot hold one example of each class and leave a test set is a user error."""
    n = sum(class_counts)
    n_test = n - m if test == "rest" else test
    if m < 2:
        raise UserError(f"sizes: m={m} cannot hold one example of each class")
    if m >= n or n_test < 1 or m + n_test > n:
        raise UserError(
            f"sizes: m={m} is too large for {n} rows"
            + ("" if test == "rest" else f" with a test set of {test}")
        )


def _stratified_counts(m: int, class_counts: tuple[int, int]) -> tuple[int, int]:
    """Per-class training counts proportional to the class sizes, at least 1 of each."""
    n0, n1 = class_counts
    k1 = int(np.clip(round(m * n1 / (n0 + n1)), 1, m - 1))
    k1 = min(k1, n1)
    k0 = m - k1
    if k0 > n0:
        k0, k1 = n0, m - n0
    return k0, k1


def _classes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.flatnonzero(y == 0), np.flatnonzero(y == 1)


def _draw_train(
    rng: np.random.Generator, y: np.ndarray, classes: tuple[np.ndarray, np.ndarray], m: int,
    policy: str,
) -> np.ndarray:  # fmt: skip
    """The sorted training rows; the first draws of the split's generator."""
    if policy == "stratified":
        k0, k1 = _stratified_counts(m, (len(classes[0]), len(classes[1])))
        train = np.concatenate(
            [rng.choice(classes[0], k0, replace=False), rng.choice(classes[1], k1, replace=False)]
        )
    else:  # uniform among subsets of size m holding both classes (rejection)
        while True:
            train = rng.choice(len(y), m, replace=False)
            if 0 < y[train].sum() < m:
                break
    train.sort()
    return train


def _split_rows(
    y: np.ndarray, classes: tuple[np.ndarray, np.ndarray], m: int, seed: int, split: int,
    policy: str, test: str | int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    rng = split_rng(seed, m, split)
    train = _draw_train(rng, y, classes, m, policy)
    rest = _rest(len(y), train)
    if test != "rest":
        rest = np.sort(rng.choice(rest, int(test), replace=False))
    return train, rest


def draw_split(
    y: np.ndarray,
    m: int,
    seed: int,
    split: int,
    policy: str = "stratified",
    test: str | int = "rest",
) -> tuple[np.ndarray, np.ndarray]:
    """Training and test row indices of split `split` at size `m` (both sorted)."""
    return _split_rows(y, _classes(y), m, seed, split, policy, test)


def draw_training_block(
    y: np.ndarray, m: int, seed: int, splits: range, policy: str = "stratified"
) -> np.ndarray:
    """Training indices (S, m) of a block of splits, the same rows as `draw_split` gives; with
    `test: rest` the test set is every other row, so no test mask is needed."""
    classes = _classes(y)
    return np.stack([_draw_train(split_rng(seed, m, s), y, classes, m, policy) for s in splits])


def draw_block(
    y: np.ndarray,
    m: int,
    seed: int,
    splits: range,
    policy: str = "stratified",
    test: str | int = "rest",
) -> tuple[np.ndarray, np.ndarray]:
    """Training indices (S, m) and a test mask (S, n) for a block of split indices."""
    classes = _classes(y)  # once per block, not once per split
    train = np.empty((len(splits), m), dtype=np.int64)
    test_mask = np.zeros((len(splits), len(y)), dtype=bool)
    for row, s in enumerate(splits):
        train[row], rest = _split_rows(y, classes, m, seed, s, policy, test)
        test_mask[row, rest] = True
    return train, test_mask


def _rest(n: int, train: np.ndarray) -> np.ndarray:
    keep = np.ones(n, dtype=bool)
    keep[train] = False
    return np.flatnonzero(keep)
