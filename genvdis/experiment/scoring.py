"""Scoring: test errors of many classifiers on many splits at once, exactly.

`EncodedData` holds the data in the encodings the models fit and in the class-ordered layout
scoring reads; `count_errors` counts every classifier's test errors in one pass over the rows,
in single precision where its rounding provably cannot change a sign and in double elsewhere
(compiled kernels below). A decision value that is not finite is counted as wrong and raised as
`NonFiniteDecisions`, never scored silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numba
import numpy as np

from genvdis._runtime import portable
from genvdis._runtime.jit import jit
from genvdis.models.logistic._kernels import dense_csr

if TYPE_CHECKING:
    from genvdis.data.preprocessing import FeatureLayout, PreparedData
    from genvdis.models.base import BatchFit


@dataclass
class EncodedData:
    """The data in both encodings the models use, computed once per run, and the one-hot rows
    in class order with an intercept column, the layout that scoring is fastest on."""

    onehot: np.ndarray
    reference: np.ndarray
    y: np.ndarray
    reference_columns: np.ndarray  # where each reference-coded column sits in `onehot`
    scoring: np.ndarray  # [onehot | 1], negatives first, then positives
    rank: np.ndarray  # row i of the data is row rank[i] of `scoring`
    n_negative: int
    scoring32: np.ndarray  # `scoring` in single precision: scoring's first, fast pass
    column_max: np.ndarray  # max |value| of each scoring column: bounds single's rounding
    sparse: SparseRows | None  # `scoring`'s nonzeros, where few: scoring's faster first pass
    # what a model derives from the data for every batch (logistic regression's `shared`), and
    # the K-class scoring rows (`count_errors`), by key: built once a run, where the fits run
    # (`engine._fit_linear`); `replace` starts afresh
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def width(self) -> int:
        """Columns of the widest design a model fits (one-hot plus an intercept)."""
        return self.onehot.shape[1] + 1

    @classmethod
    def from_prepared(cls, data: PreparedData) -> EncodedData:
        return cls.encode(data.X, data.y, data.layout)

    @classmethod
    def encode(cls, X: np.ndarray, y: np.ndarray, layout: FeatureLayout) -> EncodedData:
        columns = layout.reference_columns()  # the encoding's levels (preprocessing.encoding)
        y = np.asarray(y)
        onehot = layout.onehot(X)
        order = np.argsort(y, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        scoring = np.ascontiguousarray(np.column_stack([onehot, np.ones(len(y))])[order])
        with np.errstate(over="ignore"):  # values beyond single's range: scored in double
            scoring32 = scoring.astype(np.float32)
        return cls(
            onehot, np.ascontiguousarray(onehot[:, columns]), y, columns,
            scoring, rank, int((y == 0).sum()), scoring32, np.abs(scoring).max(axis=0, initial=0.0),
            SparseRows.of(scoring),
        )  # fmt: skip

    def as_onehot(self, fit: BatchFit, reference_coding: bool) -> np.ndarray:
        """(S, D + 1) coefficients on the one-hot columns, then the intercept, or (S, K, D + 1)
        for K-class scores: a reference-coded classifier is the one-hot one with weight 0 on
        each dropped level."""
        coef = np.zeros(fit.coef.shape[:-1] + (self.width,))
        if reference_coding:
            coef[..., self.reference_columns] = fit.coef
        else:
            coef[..., :-1] = fit.coef
        coef[..., -1] = fit.intercept
        return coef


@dataclass
class SparseRows:
    """The nonzeros of the scoring rows (CSR: row r's are at start[r]:start[r + 1]), values in
    both precisions. One-hot rows are mostly zeros (adult's discrete attributes: 9 nonzeros
    in 99 columns), and a decision value summed over the nonzeros alone is D / nnz times less
    work than the BLAS product over every column."""

    start: np.ndarray
    column: np.ndarray
    value: np.ndarray
    value32: np.ndarray

    # below this share of nonzeros the sums beat the product (benchmarks/bench_scoring.py)
    MAX_DENSITY = 0.3

    @classmethod
    def of(cls, rows: np.ndarray) -> SparseRows | None:
        """The nonzeros of `rows`, or None where they are too many to pay."""
        if np.count_nonzero(rows) > cls.MAX_DENSITY * rows.size:
            return None
        return cls.of_any(rows)

    @classmethod
    def of_any(cls, rows: np.ndarray) -> SparseRows:
        """The nonzeros of `rows`, however many."""
        start, column, value = dense_csr(np.ascontiguousarray(rows, dtype=float), False)
        with np.errstate(over="ignore"):
            value32 = value.astype(np.float32)
        return cls(start, column, value, value32)


SCORE_BYTES = 2**19  # a chunk of decision values stays in a core's L2 cache


@jit
def _count_wrong(
    decision: np.ndarray, tolerance: np.ndarray, rows: np.ndarray, coef: np.ndarray,
    positive: bool, errors: np.ndarray, tested: np.ndarray | None, ties: np.ndarray,
) -> None:  # fmt: skip
    """Add to errors (K,) a chunk's wrong decisions: non-positive values on positive rows,
    positive values on negative ones; on every row, or on the rows `tested` (rows, S) marks
    for classifier k's split k % S.

    `decision` (rows, K) holds single-precision values, within `tolerance` (K,) of the exact
    ones; the few within it of 0 are recomputed in double precision from `rows` (rows, D + 1)
    and `coef` (D + 1, K), so every count is the double-precision one, a value within ties[k]
    of 0 an exact tie, decided as 0 (`_wrong_in_double`). Compiled, the
    comparisons run in SIMD registers (in numpy, with boolean temporaries, they took two thirds
    of scoring); the bounds are single precision like the values, so none is widened.
    A NaN is wrong (not v <= t is one comparison, as v > t is)."""
    n_rows, K = decision.shape
    for r in range(n_rows):
        values, unsure = decision[r], False
        # a value is wrong beyond its tolerance on the wrong side: v < -t on positive rows,
        # v > t on negative ones, i.e. (-v or v) > t; negating is exact
        if tested is None:
            for k in range(K):
                v = -values[k] if positive else values[k]
                errors[k] += not v <= tolerance[k]
                unsure |= abs(v) <= tolerance[k]
        else:
            marks, S = tested[r], tested.shape[1]
            for first in range(0, K, S):
                for s in range(S):
                    k = first + s
                    v = -values[k] if positive else values[k]
                    errors[k] += marks[s] & (not v <= tolerance[k])
                    unsure |= abs(v) <= tolerance[k]
        if not unsure:
            continue
        for k in range(K):
            if abs(values[k]) <= tolerance[k] and (
                tested is None or tested[r, k % tested.shape[1]]
            ):
                errors[k] += _wrong_in_double(rows[r], coef, k, positive, ties[k])


@jit
def _wrong_in_double(row: np.ndarray, coef: np.ndarray, k: int, positive: bool, tie: float) -> bool:
    """Whether classifier k (column k of coef) gets the row wrong, decided in double, a value
    within `tie` of 0 (an exact tie, `BatchFit.ties`) as 0: negative; a value that is not
    finite (overflow, or NaN weights) is wrong."""
    exact = 0.0
    for j in range(row.size):
        exact += row[j] * coef[j, k]
    if not abs(exact) < np.inf:
        return True
    if abs(exact) <= tie:
        return positive
    return exact <= 0.0 if positive else exact > 0.0


@numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def _wrong_on_rows(
    fast: np.ndarray, fast_classifiers: np.ndarray, tolerance: np.ndarray, scoring: np.ndarray,
    coef: np.ndarray, rows: np.ndarray, n_negative: int, ties: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """(K,) wrong decisions of classifier k on the scoring rows rows[k % S] (rows (S, m)),
    decided as `_count_wrong` decides them: what `count_errors` takes off a count over every
    row to leave the test rows. Each split's rows are copied feature-major out of the single-
    precision copy (`fast`, just streamed through the cache) once for all of its classifiers
    (fast_classifiers (K, D + 1)), whose decision values then take one SIMD pass a feature."""
    S, K = rows.shape[0], fast_classifiers.shape[0]
    m, D = rows.shape[1], fast.shape[1]
    wrong = np.zeros(K, dtype=np.int64)
    block, values = np.empty((D, m), dtype=fast.dtype), np.empty(m, dtype=fast.dtype)
    for s in range(S):
        at = rows[s]
        for i in range(m):
            for j in range(D):
                block[j, i] = fast[at[i], j]
        for k in range(s, K, S):
            w, bound, unsure = fast_classifiers[k], tolerance[k], False
            for i in range(m):
                values[i] = w[0] * block[0, i]
            for j in range(1, D):
                for i in range(m):
                    values[i] += w[j] * block[j, i]
            for i in range(m):  # decided as in `_count_wrong`
                v = -values[i] if at[i] >= n_negative else values[i]
                wrong[k] += not v <= bound
                unsure |= abs(v) <= bound
            if unsure:
                for i in range(m):
                    if abs(values[i]) <= bound:
                        positive = at[i] >= n_negative
                        wrong[k] += _wrong_in_double(scoring[at[i]], coef, k, positive, ties[k])
    return wrong


@jit
def _count_in_chunks(
    fast: np.ndarray, fast_coef: np.ndarray, tolerance: np.ndarray, scoring: np.ndarray,
    coef: np.ndarray, n_negative: int, chunk: int, tested: np.ndarray | None,
    start: np.ndarray, column: np.ndarray, value: np.ndarray, ties: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """`_count_wrong` over every chunk of rows, each chunk's decision values one BLAS product
    (numba calls it; a Python loop's calls cost as much as the products), or, given the rows'
    nonzeros (`start` not empty: `SparseRows`), their sums."""
    errors = np.zeros(fast_coef.shape[1], dtype=np.int32)
    n = fast.shape[0]
    # the sparse pass's buffer (the BLAS product makes its own)
    decision = np.empty((chunk if start.size else 0, fast_coef.shape[1]), dtype=fast_coef.dtype)
    for first, last, positive in ((0, n_negative, False), (n_negative, n, True)):
        for begin in range(first, last, chunk):
            stop = min(begin + chunk, last)
            if start.size:
                values = decision[: stop - begin]
                _sparse_decisions(start, column, value, begin, fast_coef, values)
            else:
                values = np.dot(fast[begin:stop], fast_coef)
            rows = scoring[begin:stop]
            marks = None if tested is None else tested[begin:stop]
            _count_wrong(values, tolerance, rows, coef, positive, errors, marks, ties)
    return errors


@jit
def _sparse_decisions(
    start: np.ndarray, column: np.ndarray, value: np.ndarray, first: int, coef: np.ndarray,
    out: np.ndarray,
) -> None:  # fmt: skip
    """out[r] = row first + r times coef (D + 1, K), summed over the row's nonzeros only: each
    adds a multiple of one contiguous row of coef, which vectorises over the K classifiers."""
    for r in range(out.shape[0]):
        values = out[r]
        values[:] = 0.0
        for t in range(start[first + r], start[first + r + 1]):
            x, w = value[t], coef[column[t]]
            for k in range(values.size):
                values[k] += x * w[k]


@jit
def _wrong_on_sparse_rows(
    start: np.ndarray, column: np.ndarray, value: np.ndarray, fast_classifiers: np.ndarray,
    tolerance: np.ndarray, scoring: np.ndarray, coef: np.ndarray, rows: np.ndarray,
    n_negative: int, ties: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """`_wrong_on_rows` from the rows' nonzeros (`SparseRows`): each decision value a sum over
    its row's nonzeros, decided as `_count_wrong` decides it."""
    S, K, m = rows.shape[0], fast_classifiers.shape[0], rows.shape[1]
    wrong = np.zeros(K, dtype=np.int64)
    values = np.empty(m, dtype=fast_classifiers.dtype)
    for s in range(S):
        at = rows[s]
        for k in range(s, K, S):
            w, bound = fast_classifiers[k], tolerance[k]
            for i in range(m):
                values[i] = 0.0
                for t in range(start[at[i]], start[at[i] + 1]):
                    values[i] += value[t] * w[column[t]]
                positive = at[i] >= n_negative
                v = -values[i] if positive else values[i]
                wrong[k] += not v <= bound
                if abs(v) <= bound:
                    wrong[k] += _wrong_in_double(scoring[at[i]], coef, k, positive, ties[k])
    return wrong


class NonFiniteDecisions(ArithmeticError):
    """Classifiers whose decision values may not be finite (NaN or overflowing weights): a
    bug, since the data are finite and bounded (`preprocessing.MAX_VALUE`). `errors` holds
    the counts, every non-finite decision counted as wrong."""

    def __init__(self, message: str, errors: np.ndarray) -> None:
        super().__init__(message)
        self.errors = errors


# Single precision is used while every |x_j| and every sum_j |x_j w_j| stays below this (far
# from its overflow, ~2^128); double while sum_j |x_j w_j| stays below DOUBLE_REACH.
SINGLE_REACH, DOUBLE_REACH = 2.0**100, 2.0**1000


def _scoring_precision(
    data: EncodedData, coef: np.ndarray, ties: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows, weights and tolerances scoring runs on (single precision where nothing can
    overflow it, else double), and which classifiers are sane: sum_j |x_j w_j| is finite and
    below DOUBLE_REACH on every row, so no decision value can overflow. The others get an
    infinite tolerance: each of their values is then decided in double, non-finite as wrong.

    Rounding x and w and summing D + 1 products moves x.w by at most (D + 3) u sum_j |x_j w_j|
    (u the unit roundoff: 2^-24 in single, 2^-53 in double), plus, where a weight or a product
    falls below the normal range (2^-126 in single), that a term times |x_j| + 1 (even with
    subnormals flushed to 0). The tolerance is twice the sum, plus the classifier's tie bound
    (`BatchFit.ties`: a value the pass leaves alone is then beyond it in double too), rounded
    up to single."""
    d = coef.shape[0]
    scale = 1.0 + data.column_max.max(initial=0.0)  # bounds |x_j| + 1
    with np.errstate(over="ignore", invalid="ignore"):
        reach = data.column_max @ np.abs(coef)  # bounds |x.w| on every row
        sane = reach < DOUBLE_REACH  # False for NaN
        fast_coef = coef.astype(np.float32)
    single = sane.all() and max(reach.max(initial=0.0), scale) < SINGLE_REACH
    if single and np.isfinite(fast_coef).all():
        bound = (_tolerance(d, reach, scale, sane, 2.0**-24, 2.0**-126) + ties).astype(np.float32)
        return data.scoring32, fast_coef, np.nextafter(bound, np.float32(np.inf)), sane
    # weights or values beyond single's range: all in double
    bound = _tolerance(d, reach, scale, sane, 2.0**-53, 2.0**-1022) + ties
    return data.scoring, coef, bound, sane


def _tolerance(d, reach, scale, sane, u: float, tiny: float) -> np.ndarray:
    """Twice the rounding bound of `_scoring_precision` (u the unit roundoff, tiny the
    smallest normal number); infinite where a classifier is not sane."""
    return np.where(sane, 2 * ((d + 3) * u * np.where(sane, reach, 0.0) + d * tiny * scale), np.inf)


def _nonzeros(sparse: SparseRows | None, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """The kernels' (start, column, value) in the precision scoring runs in; empty arrays
    (the BLAS product) for dense rows."""
    if sparse is None:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, dtype)
    return sparse.start, sparse.column, sparse.value32 if dtype == np.float32 else sparse.value


def count_errors(
    data: EncodedData,
    classifiers: np.ndarray,
    train: np.ndarray,
    test_mask: np.ndarray | None = None,
    ties: np.ndarray | None = None,
) -> np.ndarray:
    """Test errors of K classifiers (K, D + 1) on S splits, K a multiple of S (classifier k
    belongs to split k % S, whose training rows are train[k % S]); each split tests on every
    other row, or on the rows test_mask (S, n) marks. A decision value within ties[k] (K,)
    of 0 is an exact tie, decided as 0 (`BatchFit.ties`; default: none, 0 is 0).

    The decision values are computed one chunk of rows at a time, for every classifier at once
    (one BLAS product per chunk), and counted while the chunk is still in cache; rows come in
    class order, so a chunk's errors are simply its positive (or non-positive) values. When a
    split tests on every other row, the count runs over all rows, unmarked, and the training
    rows' errors are taken off after; a rows x splits mask cost as much as the count.

    The product runs in single precision (twice the SIMD width of double: ~2x faster), and
    values too close to 0 for its rounding to decide are recomputed in double (see
    `_scoring_precision`). A decision value that is not finite counts as wrong, and raises
    `NonFiniteDecisions` once all are counted: no such value is ever scored silently.

    K-class classifiers (K, C, D + 1), one score per class (`base.MultiModel`), are counted by
    the argmax of their scores instead (`_count_argmax_errors`), in double."""
    if classifiers.ndim == 3:
        rows = data.derived.get(ROWS_KEY)
        if rows is None:
            rows = data.derived[ROWS_KEY] = np.column_stack([data.onehot, np.ones(len(data.y))])
        return _count_argmax_errors(rows, data.y, classifiers, train, test_mask, ties)
    coef = np.ascontiguousarray(classifiers.T)
    K = classifiers.shape[0]
    ties = np.zeros(K) if ties is None else np.ascontiguousarray(ties, dtype=float)
    if ties.shape != (K,) or not (ties >= 0).all() or not np.isfinite(ties).all():
        raise ValueError(f"count_errors: ties must be {K} finite bounds >= 0")
    fast, fast_coef, fast_tolerance, sane = _scoring_precision(data, coef, ties)
    tested = None if test_mask is None else np.ascontiguousarray(test_mask.T[np.argsort(data.rank)])
    chunk = max(64, SCORE_BYTES // (fast.itemsize * classifiers.shape[0]))
    nonzeros = _nonzeros(data.sparse, fast.dtype)
    errors = _count_in_chunks(
        fast, fast_coef, fast_tolerance, data.scoring, coef, data.n_negative, chunk, tested,
        *nonzeros, ties,
    ).astype(np.int64)  # fmt: skip
    if tested is None:
        at, by_row = data.rank[train], np.ascontiguousarray(fast_coef.T)
        if data.sparse is None:
            wrong = _wrong_on_rows(
                fast, by_row, fast_tolerance, data.scoring, coef, at, data.n_negative, ties
            )
        else:
            wrong = _wrong_on_sparse_rows(
                *nonzeros, by_row, fast_tolerance, data.scoring, coef, at, data.n_negative, ties
            )
        errors -= wrong
    if not sane.all():
        S, m = train.shape
        models = sorted({int(k) // S + 1 for k in np.flatnonzero(~sane)})
        raise NonFiniteDecisions(
            f"m={m}: {int((~sane).sum())} classifier(s) of model(s) {models} (in the config's "
            "order) have weights that are not finite or so large that decision values may "
            "overflow; counted as wrong where they do. Please report this with the config",
            errors,
        )
    return errors


# K-class scores (rows x classifiers x classes) computed at once by `_count_argmax_errors`
ARGMAX_BYTES = 32 * 2**20
ROWS_KEY = "argmax rows"  # the one-hot rows with a column of ones, in `EncodedData.derived`


def _count_argmax_errors(
    Z1: np.ndarray,
    y: np.ndarray,
    coef: np.ndarray,
    train: np.ndarray,
    test_mask: np.ndarray | None = None,
    ties: np.ndarray | None = None,
) -> np.ndarray:
    """Test errors of classifiers coef (L, K, D + 1) (the intercept last) on the rows Z1
    (n, D + 1) (the data with a column of ones): the 0/1 loss of the argmax over classes, ties
    to the lowest class, a score within ties[l] (L,) of the top one a tie (`BatchFit.ties`;
    default: none). Classifier l belongs to split l % S, with training rows train[l % S]
    (S, m); a split tests on every other row, or on the rows test_mask (S, n) marks.
    Classifiers whose weights are not finite are a bug (the data are finite and bounded):
    ArithmeticError, never a silent count."""
    if not np.isfinite(coef).all():
        bad = sorted({int(k) for k in np.flatnonzero(~np.isfinite(coef).all(axis=(1, 2)))})
        raise ArithmeticError(f"classifiers {bad} have weights that are not finite")
    L, K, width = coef.shape
    S, n = train.shape[0], len(y)
    ties = np.zeros(L) if ties is None else np.ascontiguousarray(ties, dtype=float)
    if ties.shape != (L,) or not (ties >= 0).all() or not np.isfinite(ties).all():
        raise ValueError(f"count_errors: ties must be {L} finite bounds >= 0")
    tested = np.ones((S, n), dtype=bool) if test_mask is None else test_mask.copy()
    if test_mask is None:
        tested[np.arange(S)[:, None], train] = False
    flat = np.ascontiguousarray(coef.reshape(L * K, width).T)  # (D + 1, L K)
    chunk = max(1, ARGMAX_BYTES // (8 * L * K))
    errors = np.zeros(L, dtype=np.int64)
    labels = np.ascontiguousarray(y, dtype=np.int64)
    for start in range(0, n, chunk):
        scores = portable.matmul(Z1[start : start + chunk], flat).reshape(-1, L, K)
        rows = slice(start, start + chunk)
        _add_wrong(scores, labels[rows], tested[:, rows], ties, errors)
    return errors


@jit
def _add_wrong(scores, y, tested, ties, errors):  # noqa: ANN001, ANN202 (compiled)
    """errors[c] += the rows i (scores (rows, L, K)) that classifier c, tested on them
    (tested[c % S, i]), gives a class other than y[i]: the first largest score's (np.argmax's
    rule, ties to the lowest class), a score within ties[c] of the largest tying it, in one
    pass (1.6x as fast as argmax, compare, mask, sum in numpy)."""
    S = tested.shape[0]
    for i in range(scores.shape[0]):
        for c in range(scores.shape[1]):  # classifier c
            if not tested[c % S, i]:
                continue
            best, top = 0, scores[i, c, 0]
            for k in range(1, scores.shape[2]):
                if scores[i, c, k] > top:
                    best, top = k, scores[i, c, k]
            if ties[c] > 0.0:  # the lowest class tied with the top (ties 0: the first top)
                for k in range(best):
                    if scores[i, c, k] >= top - ties[c]:
                        best = k
                        break
            if best != y[i]:
                errors[c] += 1
