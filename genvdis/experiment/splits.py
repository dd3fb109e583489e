"""Random train/test splits, each a pure function of (seed, m, split index), for two or
more classes (labels 0..K-1).

Because split s at size m depends on nothing else, results do not depend on how splits are
grouped into tasks, on the number of workers, or on the order tasks finish in; and every model
is scored on the very same splits (paired comparisons). A split's rows are drawn from its own
counter-based stream (`streams`), in compiled passes over the block of splits (each short
enough for Ctrl-C to be seen between them).

Every training set and every test set holds each class (`check_size` refuses an m where that
cannot be): an error measured on a test set without a class is not the error asked about.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from genvdis._runtime import streams
from genvdis._runtime.jit import jit
from genvdis.errors import UserError

# The position of a 64-bit word's lowest set bit, by de Bruijn multiplication (Leiserson,
# Prokop and Randall 1998): (bit * DE_BRUIJN) >> 58 is distinct for each of the 64 bits.
DE_BRUIJN = 0x03F79D71B4CB0A89
_LOWEST_BIT = np.empty(64, dtype=np.int64)
_LOWEST_BIT[[((1 << i) * DE_BRUIJN) % 2**64 >> 58 for i in range(64)]] = np.arange(64)


def class_labels(n_classes: int, names: Sequence[str] = ()) -> list[str]:
    """Each class's name for a message: the target's class names, else negative/positive."""
    if len(names) == n_classes:
        return [str(name) for name in names]
    return ["negative", "positive"] if n_classes == 2 else [str(c) for c in range(n_classes)]


def check_size(
    m: int,
    class_counts: tuple[int, ...],
    test: str | int,
    policy: str = "stratified",
    names: Sequence[str] = (),
) -> None:
    """An m that cannot hold one example of each class in every training set and in every test
    set is a user error, naming m and the class. A stratified m that takes all of a class's
    rows is refused; a random split is drawn so that both sets hold each class (`_draw_rows`),
    which needs K rows outside training; either needs 2 rows of each class, and a fixed-size
    test set K rows."""
    n, K = sum(class_counts), len(class_counts)
    n_test = n - m if test == "rest" else test
    if m < max(2, K):
        raise UserError(f"sizes: m={m} cannot hold one example of each class")
    if m >= n or n_test < 1 or m + n_test > n:
        raise UserError(
            f"sizes: m={m} is too large for {n} rows"
            + ("" if test == "rest" else f" with a test set of {test}")
        )
    labels = class_labels(K, names)
    for c, size in enumerate(class_counts):
        if size < 2:
            raise UserError(
                f"sizes: m={m}: class '{labels[c]}' has {size} row(s), too few to be in both a "
                "training set and a test set; merge it into another class or drop it"
            )
    if test != "rest" and test < K:
        raise UserError(f"test: {test} rows cannot hold one row of each of the {K} classes")
    if policy == "stratified":
        taken = _training_counts(m, class_counts)
        full = [c for c in range(K) if taken[c] >= class_counts[c]]
        if full:
            c = full[0]
            raise UserError(
                f"sizes: m={m} takes all {class_counts[c]} rows of class '{labels[c]}' into "
                "every stratified training set, leaving no test row of it; use a smaller m"
            )
    elif n - m < K:
        raise UserError(
            f"sizes: m={m} leaves {n - m} row(s) outside training, too few for a test row of "
            f"each of the {K} classes; use a smaller m"
        )


def _training_counts(m: int, class_counts: Sequence[int]) -> np.ndarray:
    """Training rows per class of a stratified split (K,), as `_draw` takes them: proportional
    to the class sizes, at least 1 of each and at most the class's size. Two classes round
    class 1's quota m n1 / n half to even (Python's round), the rule every binary panel's
    committed results were drawn with (largest remainder, the K-class rule, rounds a quota
    ending in .5 down where round goes to the even count, and would move those splits). K
    classes: m n_c / n rounded by largest remainder (ties to the lower class)."""
    sizes = np.asarray([int(c) for c in class_counts], dtype=np.int64)
    if sizes.size == 2:
        n0, n1 = int(sizes[0]), int(sizes[1])
        k1 = min(int(np.clip(round(m * n1 / (n0 + n1)), 1, m - 1)), n1)
        if m - k1 > n0:
            k1 = m - n0
        return np.array([m - k1, k1], dtype=np.int64)
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


@jit
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
@jit
def _heapsort(a: np.ndarray) -> None:
    """Sort a 1-D array in place, ascending (heapsort: O(n log n), no scratch)."""
    n = a.size
    for start in range(n // 2 - 1, -1, -1):
        _sift_down(a, start, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, np.int64(0), end)  # not a literal 0 (another compiled version)


@jit
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


@jit
def _sort_rows(rows: np.ndarray, bits: np.ndarray, n: int) -> None:
    """Sort distinct rows of range(n) in place: by the bitmap (`_sort_by_bitmap`, O(size +
    n / 64)) unless there are fewer than ~n / 512 of them, where a heapsort is cheaper. Either
    gives the same order: the choice is speed only."""
    if rows.size * 512 > n:
        _sort_by_bitmap(rows, bits)
    else:
        _heapsort(rows)


# A random split's rows are first drawn as the paper says, uniformly and again until the
# training set (and the test set) holds every class; after TRIES draws that did not, they are
# drawn exactly from the same law (`_exact_subset`). Either way the law is uniform over the
# subsets that hold every class (the first TRIES tries, then the exact law, compose to it), and
# a split whose rejection loop ended within TRIES tries keeps the rows it always had.
TRIES = 64
# Work (rows touched) of one compiled call: a block of splits is drawn in calls of about this
# much, so that Ctrl-C (seen only between calls) stops a run within a fraction of a second.
CALL_WORK = 2**24


@jit
def _within(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    for c in range(counts.size):
        if counts[c] < lo[c] or counts[c] > hi[c]:
            return False
    return True


@jit
def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)


@jit
def _uniform_subset(
    state: np.ndarray, pool: np.ndarray, n_pool: int, y: np.ndarray, k: int, lo: np.ndarray,
    hi: np.ndarray, picked: np.ndarray, taken: np.ndarray, counts: np.ndarray, out: np.ndarray,
    every: bool,
) -> bool:  # fmt: skip
    """out[:k]: a uniform k-subset of pool[:n_pool] (`every`: of all rows, pool unread)
    holding lo[c]..hi[c] rows of each class c, by up to TRIES uniform draws; False if none of
    them did."""
    for _ in range(TRIES):
        streams.sample_without_replacement(state, n_pool, k, picked, taken)
        for c in range(counts.size):
            counts[c] = 0
        for i in range(k):
            counts[y[picked[i] if every else pool[picked[i]]]] += 1
        if _within(counts, lo, hi):
            for i in range(k):
                out[i] = picked[i] if every else pool[picked[i]]
            return True
    return False


@jit
def _law(
    pool: np.ndarray, n_pool: int, y: np.ndarray, k: int, lo: np.ndarray, hi: np.ndarray
) -> tuple:
    """What `_exact_subset` draws with, for k-subsets of pool[:n_pool] holding lo[c]..hi[c]
    rows of each class c: the pool's rows grouped by class (grouped, starts), the classes in
    drawing order (the largest first: its column of counts is never tabulated), log C(size,
    t) of each class (logc from at[c]) and ways[i, j], the log of the number of j-subsets of
    the classes order[i:] within their bounds (-inf: none), on the j that can occur only."""
    K = lo.size
    sizes = np.zeros(K, dtype=np.int64)
    for i in range(n_pool):
        sizes[y[pool[i]]] += 1
    starts = np.zeros(K + 1, dtype=np.int64)
    at = np.zeros(K + 1, dtype=np.int64)
    for c in range(K):
        starts[c + 1] = starts[c] + sizes[c]
        at[c + 1] = at[c] + sizes[c] + 1
    grouped = np.empty(max(n_pool, 1), dtype=np.int64)
    filled = np.empty(K, dtype=np.int64)
    for c in range(K):
        filled[c] = starts[c]
    for i in range(n_pool):
        c = y[pool[i]]
        grouped[filled[c]] = pool[i]
        filled[c] += 1
    logc = np.empty(at[K], dtype=np.float64)
    for c in range(K):
        for t in range(sizes[c] + 1):
            logc[at[c] + t] = _log_choose(sizes[c], t)
    order = np.empty(K, dtype=np.int64)
    order[0] = np.argmax(sizes)
    i = 1
    for c in range(K):
        if c != order[0]:
            order[i] = c
            i += 1
    low = np.zeros(K + 1, dtype=np.int64)  # the fewest and most rows classes order[i:] hold
    high = np.zeros(K + 1, dtype=np.int64)
    for i in range(K - 1, -1, -1):
        c = order[i]
        low[i] = low[i + 1] + lo[c]
        high[i] = high[i + 1] + min(hi[c], sizes[c])
    ways = np.full((K + 1, k + 1), -np.inf)
    ways[K, 0] = 0.0
    for i in range(K - 1, 0, -1):
        c = order[i]
        for j in range(max(low[i], k - (high[0] - high[i])), min(k, high[i]) + 1):
            first, last = max(lo[c], j - high[i + 1]), min(hi[c], sizes[c], j - low[i + 1])
            top = -np.inf
            for t in range(first, last + 1):
                top = max(top, logc[at[c] + t] + ways[i + 1, j - t])
            if top == -np.inf:
                continue
            total = 0.0
            for t in range(first, last + 1):
                total += math.exp(logc[at[c] + t] + ways[i + 1, j - t] - top)
            ways[i, j] = top + math.log(total)
    return grouped, starts, order, ways, logc, at, sizes


@jit
def _exact_subset(
    state: np.ndarray, law: tuple, k: int, lo: np.ndarray, hi: np.ndarray,
    picked: np.ndarray, taken: np.ndarray, out: np.ndarray,
) -> None:  # fmt: skip
    """out[:k]: a k-subset drawn exactly from the law `_uniform_subset` draws from (`law`
    from `_law`): each class's count from its share of the subsets, then that many of its
    rows, uniformly."""
    grouped, starts, order, ways, logc, at, sizes = law
    K = order.size
    left, written = k, 0
    for i in range(K):
        c = order[i]
        count = left
        if i < K - 1:  # the last class takes what is left
            first, last = lo[c], min(hi[c], sizes[c], left)
            top = -np.inf
            for t in range(first, last + 1):
                top = max(top, logc[at[c] + t] + ways[i + 1, left - t])
            total = 0.0
            for t in range(first, last + 1):
                total += math.exp(logc[at[c] + t] + ways[i + 1, left - t] - top)
            u, count = streams.next_uniform(state) * total, first
            for t in range(first, last + 1):
                weight = math.exp(logc[at[c] + t] + ways[i + 1, left - t] - top)
                count = t
                if u < weight:
                    break
                u -= weight
            while ways[i + 1, left - count] == -np.inf:  # rounding at the top end: step back
                count -= 1
        streams.sample_without_replacement(state, sizes[c], count, picked, taken)
        for j in range(count):
            out[written + j] = grouped[starts[c] + picked[j]]
        written += count
        left -= count


@jit
def _rest_rows(row: np.ndarray, n: int, in_train: np.ndarray, rest: np.ndarray) -> int:
    """The rows not in `row`, ascending, into rest[:n_rest]; returns n_rest."""
    for i in range(row.size):
        in_train[row[i]] = True
    n_rest = np.int64(0)  # not a literal 0, which numba would compile a callee for
    for r in range(n):
        if not in_train[r]:
            rest[n_rest] = r
            n_rest += 1
    for i in range(row.size):
        in_train[row[i]] = False
    return n_rest


@jit
def _draw_rows(
    keys: np.ndarray, y: np.ndarray, members: np.ndarray, starts: np.ndarray,
    counts: np.ndarray, m: int, stratified: bool, n_test: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Sorted training rows (S, m) and, if n_test > 0, sorted test rows (S, n_test); and for
    each split, where TRIES uniform draws did not do (`_finish_rows` draws it exactly): 0
    nowhere, 1 its training set, 2 its test set, with its stream's state there.

    members: the rows sorted by class, class c's at members[starts[c]:starts[c + 1]].
    Stratified: counts[c] rows of each class c, in class order. Otherwise: a uniform m-subset
    of all rows among those holding every class and leaving a row of each out. A fixed-size
    test set is then a uniform subset of the rows left over among those holding every class."""
    n, K, S = y.size, counts.size, keys.size
    train = np.empty((S, m), dtype=np.int64)
    test = np.empty((S, max(n_test, 0)), dtype=np.int64)
    pending = np.zeros(S, dtype=np.int64)
    states = np.zeros(S, dtype=np.uint64)
    taken = np.zeros(n, dtype=np.bool_)
    picked = np.empty(max(n, 1), dtype=np.int64)
    in_train = np.zeros(n, dtype=np.bool_)
    seen = np.zeros(K, dtype=np.int64)
    rest = np.empty(n, dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    bits = np.zeros((n + 63) // 64, dtype=np.uint64)
    every = np.arange(n)
    one, no_cap, all_but_one = _bounds(starts, n)
    every_row, some_rows = n >= 0, n < 0  # not literals, which numba would compile twice for
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
        elif not _uniform_subset(
            state, every, n, y, m, one, all_but_one, picked, taken, seen, row, every_row
        ):
            pending[s], states[s] = 1, state[0]
            continue
        _sort_rows(row, bits, n)
        if n_test > 0:
            n_rest = _rest_rows(row, n, in_train, rest)
            out = test[s]
            if not _uniform_subset(
                state, rest, n_rest, y, n_test, one, no_cap, picked, taken, seen, out, some_rows
            ):
                pending[s], states[s] = 2, state[0]
                continue
            _sort_rows(out, bits, n)
    return train, test, pending, states


@jit
def _bounds(starts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of each class a set must hold: at least one; at most all (a test set), or all but
    one (a training set, which leaves a row of each class to test on)."""
    K = starts.size - 1
    one = np.ones(K, dtype=np.int64)
    no_cap = np.full(K, n, dtype=np.int64)
    all_but_one = np.empty(K, dtype=np.int64)
    for c in range(K):
        all_but_one[c] = starts[c + 1] - starts[c] - 1
    return one, no_cap, all_but_one


@jit
def _finish_rows(
    train: np.ndarray, test: np.ndarray, pending: np.ndarray, states: np.ndarray,
    y: np.ndarray, starts: np.ndarray,
) -> None:  # fmt: skip
    """The splits `_draw_rows` left pending, drawn exactly from there on, in place. A kernel of
    its own: compiled only by the first run that needs it."""
    n, S = y.size, pending.size
    m, n_test = train.shape[1], test.shape[1]
    taken = np.zeros(n, dtype=np.bool_)
    picked = np.empty(max(n, 1), dtype=np.int64)
    in_train = np.zeros(n, dtype=np.bool_)
    seen = np.zeros(starts.size - 1, dtype=np.int64)
    rest = np.empty(n, dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    bits = np.zeros((n + 63) // 64, dtype=np.uint64)
    every = np.arange(n)
    one, no_cap, all_but_one = _bounds(starts, n)
    none = np.int64(0)  # not a literal 0, which numba would compile _law again for
    law, ready = _law(every, none, y, none, one, all_but_one), False  # built at first use
    for s in range(S):
        if pending[s] == 0:
            continue
        state[0] = states[s]
        row = train[s]
        if pending[s] == 1:
            if not ready:  # once a call: every training set is drawn from the same rows
                law, ready = _law(every, n, y, m, one, all_but_one), True
            _exact_subset(state, law, m, one, all_but_one, picked, taken, row)
            _sort_rows(row, bits, n)
        if n_test > 0:
            n_rest = _rest_rows(row, n, in_train, rest)
            out = test[s]
            if pending[s] == 2 or not _uniform_subset(
                state, rest, n_rest, y, n_test, one, no_cap, picked, taken, seen, out, n < 0
            ):
                rest_law = _law(rest, n_rest, y, n_test, one, no_cap)
                _exact_subset(state, rest_law, n_test, one, no_cap, picked, taken, out)
            _sort_rows(out, bits, n)


def _draw(
    y: np.ndarray, m: int, seed: int, splits: range, policy: str, test: str | int
) -> tuple[np.ndarray, np.ndarray]:
    """A block's rows, drawn in compiled calls of about CALL_WORK each (Ctrl-C is seen
    between them): the same rows whatever the calls, as each split has its own stream."""
    y = np.asarray(y, dtype=np.int64)
    sizes = np.bincount(y)
    check_size(
        m, tuple(int(c) for c in sizes), test, policy
    )  # else the kernels index out of bounds
    counts = _training_counts(m, sizes)
    members = np.argsort(y, kind="stable")  # each class's rows, in order
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keys = streams.stream_keys(seed, m, splits, stream=0)
    n_test = 0 if test == "rest" else int(test)
    stratified = policy == "stratified"
    tries = 1 if stratified else TRIES
    per_call = max(1, CALL_WORK // (tries * (m + n_test) + len(y)))
    trains, tests = [], []
    for i in range(0, max(len(keys), 1), per_call):
        train, test_rows, pending, states = _draw_rows(
            keys[i : i + per_call], y, members, starts, counts, m, stratified, n_test
        )
        if pending.any():
            _finish_rows(train, test_rows, pending, states, y, starts)
        trains.append(train)
        tests.append(test_rows)
    if len(trains) == 1:
        return trains[0], tests[0]
    return np.vstack(trains), np.vstack(tests)


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
