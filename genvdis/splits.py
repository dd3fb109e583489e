"""Random train/test splits, each a pure function of (seed, m, split index), for two or
more classes (labels 0..K-1).

Because split s at size m depends on nothing else, results do not depend on how splits are
grouped into tasks, on the number of workers, or on the order tasks finish in; and every model
is scored on the very same splits (paired comparisons). A split's rows are drawn from its own
counter-based stream (`streams`), in one compiled pass over the whole block of splits.
"""

from __future__ import annotations

import numpy as np

from genvdis import streams
from genvdis.errors import UserError

# The position of a 64-bit word's lowest set bit, by de Bruijn multiplication (Leiserson,
# Prokop and Randall 1998): (bit * DE_BRUIJN) >> 58 is distinct for each of the 64 bits.
DE_BRUIJN = 0x03F79D71B4CB0A89
_LOWEST_BIT = np.empty(64, dtype=np.int64)
_LOWEST_BIT[[((1 << i) * DE_BRUIJN) % 2**64 >> 58 for i in range(64)]] = np.arange(64)


def check_size(m: int, class_counts: tuple[int, ...], test: str | int) -> None:
    """An m that cannot hold one example of each class and leave a test set is a user error."""
    n = sum(class_counts)
    n_test = n - m if test == "rest" else test
    if m < max(2, len(class_counts)):
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


def _stratified_class_counts(m: int, class_counts: tuple[int, ...] | np.ndarray) -> np.ndarray:
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
def _sort_by_bitmap(rows: np.ndarray, bits: np.ndarray) -> None:
    """Sort distinct rows (< 64 bits.size) in place by setting their bits in `bits` (all 0,
    and left so) and reading them back a 64-row word at a time, lowest set bit first:
    O(m + n / 64), against O(m log m) for a sort, or O(n) for a scan of one flag per row."""
    one, multiplier, shift = np.uint64(1), np.uint64(DE_BRUIJN), np.uint64(58)
    for r in rows:
        bits[r >> 6] |= one << np.uint64(r & 63)
    i = 0
    for w in range(bits.size):
        word = bits[w]
        while word:
            lowest = word & (~word + one)  # two's complement: the lowest set bit alone
            rows[i] = w * 64 + _LOWEST_BIT[(lowest * multiplier) >> shift]
            i += 1
            word ^= lowest
        bits[w] = 0


# The kernels below sort, copy and test with loops rather than numpy's methods and slice
# assignment: numba compiles those generically, which cost a run's first use on an empty cache
# ~2.3 s of this one kernel's 4 s (`benchmarks/compile_audit.py`), for the same results.
@streams.jit
def _heapsort(a: np.ndarray) -> None:
    """Sort a 1-D array in place, ascending (heapsort: O(n log n), no scratch)."""
    n = a.size
    for start in range(n // 2 - 1, -1, -1):
        _sift_down(a, start, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, np.int64(0), end)  # not a literal 0 (another compiled version)


@streams.jit
def _sift_down(a: np.ndarray, root: int, end: int) -> None:
    """Restore the max-heap below `root` in a[:end]."""
    while 2 * root + 1 < end:
        child = 2 * root + 1
        if child + 1 < end and a[child] < a[child + 1]:
            child += 1
        if not a[root] < a[child]:
            return
        a[root], a[child] = a[child], a[root]
        root = child


@streams.jit
def _sort_rows(rows: np.ndarray, bits: np.ndarray, n: int) -> None:
    """Sort distinct rows of range(n) in place: by the bitmap (`_sort_by_bitmap`, O(size +
    n / 64)) unless there are fewer than ~n / 512 of them, where a heapsort is cheaper. Either
    gives the same order: the choice is speed only."""
    if rows.size * 512 > n:
        _sort_by_bitmap(rows, bits)
    else:
        _heapsort(rows)


@streams.jit
def _all(flags: np.ndarray) -> bool:
    for flag in flags:
        if not flag:
            return False
    return True


@streams.jit
def _draw_rows(
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
                if _all(seen):
                    break
            for i in range(m):
                row[i] = picked[i]
        _sort_rows(row, bits, n)
        if n_test > 0:
            for i in range(m):
                in_train[row[i]] = True
            n_rest = np.int64(0)  # not a literal 0, which numba would compile a callee for
            for r in range(n):
                if not in_train[r]:
                    rest[n_rest] = r
                    n_rest += 1
            for i in range(m):
                in_train[row[i]] = False
            streams.sample_without_replacement(state, n_rest, n_test, picked, taken)
            for i in range(n_test):
                test[s, i] = rest[picked[i]]
            _sort_rows(test[s], bits, n)
    return train, test


def _draw(
    y: np.ndarray, m: int, seed: int, splits: range, policy: str, test: str | int
) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.int64)
    sizes = np.bincount(y)
    if sizes.size == 2:  # the binary counts, as they always were
        k0, _ = _stratified_counts(m, (int(sizes[0]), int(sizes[1])))
        counts = np.array([k0, m - k0], dtype=np.int64)
    else:
        counts = _stratified_class_counts(m, sizes)
    members = np.argsort(y, kind="stable")  # each class's rows, in order
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keys = streams.stream_keys(seed, m, splits, stream=0)
    n_test = 0 if test == "rest" else int(test)
    return _draw_rows(keys, y, members, starts, counts, m, policy == "stratified", n_test)


def draw_split(
    y: np.ndarray,
    m: int,
    seed: int,
    split: int,
    policy: str = "stratified",
    test: str | int = "rest",
) -> tuple[np.ndarray, np.ndarray]:
    """Training and test row indices of split `split` at size `m` (both sorted)."""
    train, test_rows = _draw(y, m, seed, range(split, split + 1), policy, test)
    if test == "rest":
        return train[0], _rest(len(y), train[0])
    return train[0], test_rows[0]


def draw_training_block(
    y: np.ndarray, m: int, seed: int, splits: range, policy: str = "stratified"
) -> np.ndarray:
    """Training indices (S, m) of a block of splits, the same rows as `draw_split` gives; with
    `test: rest` the test set is every other row, so no test mask is needed."""
    return _draw(y, m, seed, splits, policy, "rest")[0]


def draw_block(
    y: np.ndarray,
    m: int,
    seed: int,
    splits: range,
    policy: str = "stratified",
    test: str | int = "rest",
) -> tuple[np.ndarray, np.ndarray]:
    """Training indices (S, m) and a test mask (S, n) for a block of split indices."""
    train, test_rows = _draw(y, m, seed, splits, policy, test)
    test_mask = np.zeros((len(splits), len(y)), dtype=bool)
    if test == "rest":
        test_mask[:] = True
        test_mask[np.arange(len(splits))[:, None], train] = False
    else:
        test_mask[np.arange(len(splits))[:, None], test_rows] = True
    return train, test_mask


def _rest(n: int, train: np.ndarray) -> np.ndarray:
    keep = np.ones(n, dtype=bool)
    keep[train] = False
    return np.flatnonzero(keep)
