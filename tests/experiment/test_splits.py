"""Train/test splits: stratified counts, both classes always present, a pure function of
(seed, m, split), and independent of how splits are grouped into blocks."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from genvdis.errors import UserError
from genvdis.experiment import splits
from genvdis.experiment.splits import check_size, draw_block, draw_split
from tests.clichecks import raises_user_error

PIMA_LIKE = np.array([0] * 500 + [1] * 268)  # pima's class sizes
RARE = np.array([0] * 90 + [1] * 10)


@pytest.mark.parametrize(
    ("y", "m", "expected"),
    [
        (PIMA_LIKE, 10, (7, 3)),  # 10 * 268/768 = 3.49
        (PIMA_LIKE, 100, (65, 35)),  # 34.9
        (PIMA_LIKE, 2, (1, 1)),  # 0.70 rounds to 1
        (RARE, 20, (18, 2)),
        (RARE, 5, (4, 1)),  # 0.5 would round to 0: at least one of each class
        (RARE, 3, (2, 1)),
        (np.array([0] * 3 + [1] * 97), 4, (1, 3)),  # 0.12 of the minority: still one
    ],
)
def test_stratified_counts_are_rounded_proportions_with_both_classes(y, m, expected):
    for split in range(5):
        train, _ = draw_split(y, m, seed=0, split=split, policy="stratified")
        assert len(train) == m
        counts = (int((y[train] == 0).sum()), int((y[train] == 1).sum()))
        assert counts == expected


def test_random_policy_always_holds_both_classes_and_is_uniform_otherwise():
    """Uniform over m-subsets conditioned on both classes: with 6 negatives, 4 positives and
    m = 3, P(one positive) = C(4,1)C(6,2) / (C(4,1)C(6,2) + C(4,2)C(6,1)) = 60/96."""
    y = np.array([0] * 6 + [1] * 4)
    positives = []
    for split in range(2000):
        train, _ = draw_split(y, 3, seed=1, split=split, policy="random")
        k = int(y[train].sum())
        assert 1 <= k <= 2
        positives.append(k)
    share = np.mean(np.array(positives) == 1)
    se = np.sqrt(0.625 * 0.375 / 2000)
    assert abs(share - 0.625) < 4 * se
    # The minority class is never missed, even when it is rare and m is small.
    for split in range(200):
        train, _ = draw_split(RARE, 2, seed=0, split=split, policy="random")
        assert sorted(RARE[train]) == [0, 1]


@pytest.mark.parametrize("policy", ["stratified", "random"])
def test_split_is_a_pure_function_of_seed_size_and_index(policy):
    a_train, a_test = draw_split(PIMA_LIKE, 30, seed=3, split=7, policy=policy)
    b_train, b_test = draw_split(PIMA_LIKE, 30, seed=3, split=7, policy=policy)
    np.testing.assert_array_equal(a_train, b_train)
    np.testing.assert_array_equal(a_test, b_test)
    for other in [dict(seed=3, split=8), dict(seed=4, split=7)]:
        c_train, _ = draw_split(PIMA_LIKE, 30, policy=policy, **other)
        assert not np.array_equal(a_train, c_train)
    # Different sizes are not nested prefixes of one permutation either: independent draws.
    d_train, _ = draw_split(PIMA_LIKE, 31, seed=3, split=7, policy=policy)
    assert not set(a_train) <= set(d_train)


@pytest.mark.parametrize("test", ["rest", 50])
def test_blocks_do_not_change_the_splits(test):
    whole_train, whole_mask = draw_block(PIMA_LIKE, 20, 5, range(0, 10), test=test)
    parts = [draw_block(PIMA_LIKE, 20, 5, r, test=test) for r in (range(0, 5), range(5, 10))]
    np.testing.assert_array_equal(whole_train, np.vstack([p[0] for p in parts]))
    np.testing.assert_array_equal(whole_mask, np.vstack([p[1] for p in parts]))
    # A block's row s is split s, whatever the block starts at.
    train, rest = draw_split(PIMA_LIKE, 20, 5, 7, test=test)
    np.testing.assert_array_equal(whole_train[7], train)
    np.testing.assert_array_equal(np.flatnonzero(whole_mask[7]), rest)


@pytest.mark.parametrize("policy", ["stratified", "random"])
def test_train_and_test_are_disjoint_and_test_is_the_rest(policy):
    n = len(PIMA_LIKE)
    for split in range(5):
        train, test = draw_split(PIMA_LIKE, 40, seed=0, split=split, policy=policy)
        assert len(np.unique(train)) == 40
        assert not set(train) & set(test)
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(n))


def test_fixed_test_size_is_disjoint_from_training():
    for split in range(5):
        train, test = draw_split(PIMA_LIKE, 40, seed=0, split=split, test=100)
        assert len(test) == len(np.unique(test)) == 100
        assert not set(train) & set(test)
    train_mask = draw_block(PIMA_LIKE, 40, 0, range(3), test=100)[1]
    np.testing.assert_array_equal(train_mask.sum(axis=1), [100, 100, 100])


@pytest.mark.parametrize(
    ("m", "test", "fragment"),
    [
        (768, "rest", "too large"),  # no test row left
        (800, "rest", "too large"),
        (1, "rest", "one example of each class"),
        (0, "rest", "one example of each class"),
        (700, 100, "test set of 100"),  # 700 + 100 > 768
    ],
)
def test_check_size_rejects_impossible_sizes(m, test, fragment):
    with pytest.raises(UserError, match=fragment) as info:
        check_size(m, (500, 268), test)
    assert f"m={m}" in str(info.value)


@pytest.mark.parametrize(("m", "test"), [(2, "rest"), (766, "rest"), (668, 100)])
def test_check_size_accepts_the_limits(m, test):
    check_size(m, (500, 268), test)


def test_training_block_is_the_training_rows_of_each_split():
    """The engine's fast path (test = the rest) draws the very same training rows."""
    y = np.array([0] * 70 + [1] * 30)
    for policy in ("stratified", "random"):
        fast = splits.draw_training_block(y, 12, seed=3, splits=range(5, 25), policy=policy)
        slow, _ = splits.draw_block(y, 12, seed=3, splits=range(5, 25), policy=policy)
        np.testing.assert_array_equal(fast, slow)


def test_error_counts_without_a_test_mask_equal_the_masked_ones():
    """test: rest counts errors as all rows minus training rows; a fixed test set of every
    other row (n - m rows, the same split) counts them through a mask: same numbers."""
    from genvdis.data.preprocessing import FeatureLayout
    from genvdis.experiment.engine import Protocol, run_block
    from genvdis.experiment.scoring import EncodedData
    from genvdis.models.logistic_regression import LogisticRegression
    from genvdis.models.naive_bayes import NaiveBayes

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 3))
    y = (X @ [2.0, -1.0, 0.5] + 0.3 * rng.normal(size=120) > 0.6).astype(np.int64)
    layout = FeatureLayout(3)
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout)]
    for m in (6, 40):
        rest = run_block(data, models, m, range(0, 30), Protocol(1, "stratified", "rest"))
        fixed = run_block(data, models, m, range(0, 30), Protocol(1, "stratified", 120 - m))
        pd.testing.assert_frame_equal(rest, fixed)


ADULT_LIKE = np.array([0] * 34014 + [1] * 11208)  # adult's class sizes (45,222 rows)


@pytest.mark.parametrize("m", [10, 80, 89, 3000])  # sorted by a sort (m <= n / 512), or a bitmap
def test_training_rows_are_sorted_distinct_and_stratified(m):
    train = splits.draw_training_block(ADULT_LIKE, m, seed=4, splits=range(20))
    k0, k1 = splits._training_counts(m, (34014, 11208))
    assert (np.diff(train, axis=1) > 0).all()  # strictly increasing: sorted and distinct
    assert ((ADULT_LIKE[train] == 1).sum(axis=1) == k1).all()
    assert (train >= 0).all() and (train < len(ADULT_LIKE)).all() and k0 + k1 == m


def test_bitmap_sort_equals_a_sort_and_leaves_the_bitmap_clear():
    rng = np.random.default_rng(5)
    bits = np.zeros((1000 + 63) // 64, dtype=np.uint64)
    for size in (1, 64, 500, 1000):  # rows up to 999, across word boundaries
        rows = rng.choice(1000, size=size, replace=False)
        expected = np.sort(rows)
        splits._sort_by_bitmap(rows, bits)
        np.testing.assert_array_equal(rows, expected)
        assert not bits.any()


def test_heapsort_equals_numpy_sort():
    """The kernels' own sort (no numba `.sort()`, which costs a second to compile) sorts like
    numpy: empty, one element, already sorted, reversed, ties, random lengths."""
    rng = np.random.default_rng(6)
    cases = [np.array([], dtype=np.int64), np.array([3]), np.arange(9), np.arange(9)[::-1].copy()]
    cases += [rng.integers(0, 5, size=n) for n in (2, 7, 64)]
    cases += [rng.permutation(1000)[:n] for n in (3, 100, 999)]
    for rows in cases:
        expected = np.sort(rows)
        splits._heapsort(rows)
        np.testing.assert_array_equal(rows, expected)


def test_drawn_rows_are_those_of_genvdis_0_4_0():
    """Splits are part of every result: the rows drawn (by a sort, m = 10, and by the bitmap,
    m = 3000, both policies) hash to what genvdis 0.4.0 drew, before its bitmap sort's private
    numba intrinsic gave way to a de Bruijn lookup."""
    digest = hashlib.sha256()
    for m in (10, 3000):
        for policy in ("stratified", "random"):
            rows = splits.draw_training_block(ADULT_LIKE, m, 7, range(30), policy)
            digest.update(rows.tobytes())
    assert digest.hexdigest() == "261a9871dde35ac5fc3a79e140584704f4ffe0b1e746e6ef40c7f907d9aef84c"


def test_fixed_size_test_rows_are_those_of_genvdis_0_7_0():
    """A fixed-size test set's rows (sorted by the heapsort where test x 512 <= n, else by the
    bitmap, since round 6 of issue 17) are sorted, and hash to what 9c0371f drew with numba's
    sort: training and test rows, both policies."""
    digest = hashlib.sha256()
    for test in (50, 1000):
        for policy in ("stratified", "random"):
            train, rows = splits._draw(ADULT_LIKE, 30, 7, range(20), policy, test)
            assert (np.diff(rows, axis=1) > 0).all()
            digest.update(train.tobytes())
            digest.update(rows.tobytes())
    assert digest.hexdigest() == "525745243976b5980e0e02c56e5b65164e94152829fc407b010f0602cba71f6a"


# --- issue 30 §2 and §5: every class in every test set; random splits drawn in bounded time ----

FIVE_RARE = np.array([0] * 2497 + [1] * 2497 + [2] * 2 + [3] * 2 + [4] * 2)  # 3 two-row classes


@pytest.mark.parametrize(
    ("m", "counts", "test", "policy", "fragments"),
    [
        (45, (58, 2), "rest", "stratified", ("m=45", "all 2 rows", "'positive'")),  # genvdis init's
        (50, (59, 1), "rest", "stratified", ("m=50", "'positive'", "1 row")),
        (4, (59, 1), "rest", "random", ("m=4", "'positive'", "1 row")),
        (6, (5, 2, 1), "rest", "random", ("m=6", "'2'", "1 row")),
        (59, (58, 2), "rest", "random", ("m=59", "1 row(s) outside training")),
        (10, (50, 30, 20), 2, "random", ("test: 2", "3 classes")),
    ],
)
def test_check_size_refuses_an_m_whose_test_sets_can_lack_a_class(
    m, counts, test, policy, fragments
):
    with pytest.raises(UserError) as info:
        check_size(m, counts, test, policy)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_check_size_names_a_class_by_its_name():
    with raises_user_error("m=75", "'setosa'"):
        check_size(75, (40, 3, 40), "rest", "stratified", ["virginica", "setosa", "versicolor"])


@pytest.mark.parametrize("test", ["rest", 8])
@pytest.mark.parametrize("m", [50, 4990])
def test_random_splits_with_rare_classes_end_and_hold_every_class_in_both_sets(m, test):
    """Three two-row classes among 5000 rows: every training and every test set holds each
    class, in bounded time. A rejection loop alone would take ~127,000 draws a split at
    m = 50 (forever with one-row classes), and at m = 4990 leave test sets without a class."""
    train, rows = splits._draw(FIVE_RARE, m, 3, range(40), "random", test)
    for s in range(40):
        test_rows = np.setdiff1d(np.arange(FIVE_RARE.size), train[s]) if test == "rest" else rows[s]
        assert len(np.unique(train[s])) == m
        assert set(FIVE_RARE[train[s]]) == set(FIVE_RARE[test_rows]) == set(range(5))
        assert not set(train[s]) & set(test_rows)


def test_a_fixed_size_test_set_holds_every_class():
    y = np.array([0] * 500 + [1] * 6)
    for policy in ("stratified", "random"):
        _, rows = splits._draw(y, 20, 1, range(200), policy, 10)
        assert (y[rows].sum(axis=1) >= 1).all()
        assert (np.diff(rows, axis=1) > 0).all()


def _exact_draws(y: np.ndarray, m: int, n_splits: int) -> np.ndarray:
    """Training sets of n_splits random splits drawn by the exact law alone (as if every
    rejection loop had failed)."""
    starts = np.concatenate([[0], np.cumsum(np.bincount(y))]).astype(np.int64)
    train = np.empty((n_splits, m), dtype=np.int64)
    pending = np.ones(n_splits, dtype=np.int64)
    states = splits.streams.stream_keys(0, m, range(n_splits), stream=0)
    splits._finish_rows(train, train[:, :0], pending, states, y, starts)
    return train


def test_the_exact_draw_has_the_law_of_the_rejection_loop():
    """5 + 4 + 3 rows, m = 6, each class in training and out of it: a count vector (a, b, c)
    is weighted by the subsets holding it, C(5,a) C(4,b) C(3,c); the exact draw (used after
    TRIES failed draws) and the rejection loop must both give those shares, and rows of a
    class uniformly."""
    from itertools import product
    from math import comb

    y = np.array([0] * 5 + [1] * 4 + [2] * 3)
    sizes = (5, 4, 3)
    vectors = [v for v in product(range(1, 5), range(1, 4), range(1, 3)) if sum(v) == 6]
    weights = np.array(
        [np.prod([comb(n, k) for n, k in zip(sizes, v, strict=True)]) for v in vectors]
    )
    shares = weights / weights.sum()
    n = 4000
    exact = _exact_draws(y, 6, n)
    for train in (exact, splits.draw_training_block(y, 6, 0, range(n), "random")):
        found = [tuple(int(k) for k in np.bincount(y[row], minlength=3)) for row in train]
        assert set(found) <= set(vectors)
        for vector, share in zip(vectors, shares, strict=True):
            seen = found.count(vector) / n
            assert abs(seen - share) < 4 * np.sqrt(share * (1 - share) / n), (vector, seen, share)
    hits = np.bincount(exact.ravel(), minlength=12)[:5] / n  # each of class 0's rows alike
    expected = sum(share * v[0] / 5 for v, share in zip(vectors, shares, strict=True))
    assert np.all(np.abs(hits - expected) < 4 * np.sqrt(expected * (1 - expected) / n)), hits


def test_a_block_of_random_splits_is_drawn_in_short_compiled_calls(monkeypatch):
    """Ctrl-C is seen between compiled calls only: a block is drawn in calls of about
    CALL_WORK each, and gives the same rows as one call."""
    calls = []
    draw = splits._draw_rows

    def counted(keys, *args):
        calls.append(len(keys))
        return draw(keys, *args)

    whole = splits._draw(FIVE_RARE, 4990, 2, range(60), "random", "rest")[0]
    monkeypatch.setattr(splits, "_draw_rows", counted)
    monkeypatch.setattr(splits, "CALL_WORK", 64 * 5000 * 7)
    parts = splits._draw(FIVE_RARE, 4990, 2, range(60), "random", "rest")[0]
    assert len(calls) >= 8 and max(calls) <= 7
    np.testing.assert_array_equal(whole, parts)
