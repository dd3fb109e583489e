"""Where Newton starts on one-hot training sets with attribute values seen in one class only.

Such a value (a "pure" level) makes the training set quasi-separated: moving its weight
towards +-infinity only lowers the likelihood's loss, and the vanishing ridge (1e-8 |w|^2 / 2,
`logistic.TINY_RIDGE`) stops it where the loss's decay, ~n e^-t for the level's n rows,
balances the ridge's pull, lambda c t: at t with t e^t = n / (lambda c), near 16-18. From 0,
Newton's step along such a direction is ~1 (its quadratic model of e^-t says so), so it
crept there in ~16-20 iterations. Started at t (each pure level's own, the others at 0), it
converges to the same minimum (the ridge makes the loss strictly convex) in about half as
many (docs/scaling.md, adult (discrete)).

A level is pure in two ways in the reference coding:
- a non-reference level whose rows are all of one class: its column's weight goes to +-t;
- the reference level of an attribute (rows with none of its columns) all of one class: the
  intercept goes to +-t and every column of the attribute present in the training set to
  -+t, so that only the reference rows move (c: that many penalised weights).

This is a start, not the answer: Newton still finds the minimum, and whatever structure the
start misses (combinations of levels) it still reaches by creeping.
"""

from __future__ import annotations

import numpy as np

from genvdis._runtime.jit import jit
from genvdis.models.base import FeatureLayout
from genvdis.models.logistic._kernels import log_lambert


def attribute_groups(layout: FeatureLayout) -> tuple[np.ndarray, np.ndarray, bool]:
    """The first and last-plus-one reference-coded column of each discrete attribute
    (continuous columns come first and belong to none), and whether the coding dropped a
    reference level (not under the `full` encoding)."""
    dropped = 0 if layout.encoding == "full" else 1
    widths = np.array(layout.levels, dtype=np.int64) - dropped
    stop = layout.n_continuous + np.cumsum(widths)
    return stop - widths, stop, bool(dropped)


@jit
def _ridge_stop(n: float, lam: float) -> float:
    """t with t e^t = n / lam: where n e^-t, the loss's decay, meets lam t."""
    return log_lambert(np.log(n / lam))


@jit
def _level_counts(indptr, indices, idx_s, t_s, first, stop, d):
    """For one problem: per column, its training rows of class 1 and 0; per attribute, its
    rows with a column of it, of class 1 and 0 (one-hot: at most one column per attribute)."""
    pos, neg = np.zeros(d, dtype=np.int64), np.zeros(d, dtype=np.int64)
    gpos, gneg = np.zeros(first.size, dtype=np.int64), np.zeros(first.size, dtype=np.int64)
    for i in range(idx_s.size):
        r = idx_s[i]
        for a in range(indptr[r], indptr[r + 1]):
            if t_s[i] > 0:
                pos[indices[a]] += 1
            else:
                neg[indices[a]] += 1
    for g in range(first.size):
        for j in range(first[g], stop[g]):
            gpos[g] += pos[j]
            gneg[g] += neg[j]
    return pos, neg, gpos, gneg


@jit
def _pure_start(indptr, indices, idx, t, first, stop, reference, d, lam):
    """`pure_level_start` on CSR rows: (S, d) starts, the intercept last."""
    S = idx.shape[0]
    start = np.zeros((S, d))
    for s in range(S):
        pos, neg, gpos, gneg = _level_counts(indptr, indices, idx[s], t[s], first, stop, d)
        total_pos = 0
        for i in range(t.shape[1]):
            if t[s, i] > 0:
                total_pos += 1
        total_neg = t.shape[1] - total_pos
        w = start[s]
        for g in range(first.size):
            for j in range(first[g], stop[g]):
                if (pos[j] > 0) != (neg[j] > 0):
                    sign = 1.0 if pos[j] > 0 else -1.0
                    w[j] += sign * _ridge_stop(pos[j] + neg[j], lam)
            ref_pos, ref_neg = total_pos - gpos[g], total_neg - gneg[g]
            present = 0
            for j in range(first[g], stop[g]):
                if pos[j] + neg[j] > 0:
                    present += 1
            if reference and (ref_pos > 0) != (ref_neg > 0) and present > 0:
                sign = 1.0 if ref_pos > 0 else -1.0
                step = sign * _ridge_stop(ref_pos + ref_neg, lam * present)
                w[d - 1] += step
                for j in range(first[g], stop[g]):
                    if pos[j] + neg[j] > 0:
                        w[j] -= step
    return start


def pure_level_start(
    csr: tuple[np.ndarray, np.ndarray, np.ndarray],
    idx: np.ndarray,
    t: np.ndarray,
    groups: tuple[np.ndarray, np.ndarray, bool],
    d: int,
    lam: float,
) -> np.ndarray:
    """Newton's start (S, d) for the training rows idx (S, m), labels t (S, m) in {0, 1}, of
    reference-coded one-hot data held as CSR (its last column the intercept); groups: each
    attribute's column range (`attribute_groups`); lam: the ridge. Zero where no level is
    pure, so such problems start where they did."""
    indptr, indices, _ = csr
    first, stop, reference = groups
    return _pure_start(indptr, indices, idx, t, first, stop, reference, d, lam)
