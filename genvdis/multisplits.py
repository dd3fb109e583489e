"""Random train/test splits for K-class targets (labels 0..K-1), each a pure function of
(seed, m, split index), as `splits` draws them for two classes.

Stratified: class c contributes k_c training rows, proportional to its size (largest
remainder), at least 1 and at most its size, each class's a uniform subset of it, drawn in
class order from the split's own stream. Otherwise: a uniform m-subset of all rows, redrawn
until every class is in it. For K = 2, with the binary counts, the draws are `splits`' own:
the same stream is consumed in the same order.
"""

from __future__ import annotations

import numpy as np

from genvdis import streams
from genvdis.errors import UserError
from genvdis.splits import _sort_by_bitmap


def stratified_counts(m: int, class_counts: tuple[int, ...] | np.ndarray) -> np.ndarray:
    """Training rows per class (K,): m n_c / n rounded by largest remainder (ties to the lower
    class), at least 1 of each class and at most the class's size."""
    sizes = np.asarray(class_counts, dtype=np.int64)
    if m < sizes.size or m > sizes.sum():
        raise UserError(f"sizes: m={m} cannot hold one example of each of {sizes.size} classes")
    quota = m * sizes / sizes.sum()
    counts = np.clip(np.floor(quota).astype(np.int64), 1, sizes)
    while counts.sum() < m:  # the classes furthest below their quota (with rows left) gain
        room = np.where(counts < sizes, quota - counts, -np.inf)
        counts[np.argmax(room)] += 1
    while counts.sum() > m:  # the classes furthest above it (with more than 1) give back
        excess = np.where(counts > 1, counts - quota, -np.inf)
        counts[np.argmax(excess)] -= 1
    return counts


@streams.jit
def draw_rows(
    keys: np.ndarray, y: np.ndarray, members: np.ndarray, starts: np.ndarray,
    counts: np.ndarray, m: int, stratified: bool, n_test: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Sorted training rows (S, m) and, if n_test > 0, sorted test rows (S, n_test).

    members: the rows sorted by class, class c's at members[starts[c]:starts[c + 1]].
    Stratified: counts[c] rows of each class c, in class order. Otherwise: a uniform m-subset
    of all rows, redrawn until it holds every class. A fixed-size test set is then a uniform
    subset of the rows left over."""
    n, K, S = y.size, counts.size, keys.size
    train = np.empty((S, m), dtype=np.int64)
    test = np.empty((S, max(n_test, 0)), dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)
    picked = np.empty(max(n, 1), dtype=np.int64)
    in_train = np.zeros(n, dtype=np.bool_)
    seen = np.zeros(K, dtype=np.bool_)
    rest = np.empty(n, dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    by_bitmap = m * 512 > n  # a sort is cheaper only for m below ~n / 512
    bits = np.zeros((n + 63) // 64, dtype=np.uint64)
    for s in range(S):
        state[0] = keys[s]
        row = train[s]
        if stratified:
            at = 0
            for c in range(K):
                size = starts[c + 1] - starts[c]
                streams.sample_without_replacement(state, size, counts[c], picked, taken)
                for i in range(counts[c]):
                    row[at + i] = members[starts[c] + picked[i]]
                at += counts[c]
        else:
            while True:
                streams.sample_without_replacement(state, n, m, picked, taken)
                seen[:] = False
                for i in range(m):
                    seen[y[picked[i]]] = True
                if seen.all():
                    break
            row[:] = picked[:m]
        if by_bitmap:
            _sort_by_bitmap(row, bits)
        else:
            row.sort()
        if n_test > 0:
            for i in range(m):
                in_train[row[i]] = True
            n_rest = 0
            for r in range(n):
                if not in_train[r]:
                    rest[n_rest] = r
                    n_rest += 1
            for i in range(m):
                in_train[row[i]] = False
            streams.sample_without_replacement(state, n_rest, n_test, picked, taken)
            for i in range(n_test):
                test[s, i] = rest[picked[i]]
            test[s].sort()
    return train, test


def draw(
    y: np.ndarray, m: int, seed: int, splits: range, policy: str = "stratified",
    test: str | int = "rest",
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Training rows (S, m) of splits `splits` and, for a fixed-size test set, its rows
    (S, test); with `test: rest` every row not in training is a test row (an empty array)."""
    y = np.asarray(y, dtype=np.int64)
    sizes = np.bincount(y)
    members = np.argsort(y, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    counts = stratified_counts(m, sizes)
    keys = streams.stream_keys(seed, m, splits, stream=0)
    n_test = 0 if test == "rest" else int(test)
    return draw_rows(keys, y, members, starts, counts, m, policy == "stratified", n_test)


__all__ = ["draw", "draw_rows", "stratified_counts"]
