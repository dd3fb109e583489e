"""Sparse Newton's steps eliminated sparsest first, identical rows once: the compiled loops
behind `layouts.Sparse.sparsest_first`, the one-hot layout's first fit (docs/scaling.md,
"adult (discrete), round 4"). A rare level's Hessian row is nonzero only at the few levels
seen with it, so eliminating the rarest columns first fills in little; and a training set of
3000 adult rows has ~1500 distinct ones, so the Hessian and the predictors are summed and
computed once a distinct row.
"""

from __future__ import annotations

import numpy as np

from genvdis.logistic_kernels import hessian_into
from genvdis.newton_solves import BLOCKED_MIN, solve_into, solve_sparse_in_place
from genvdis.streams import jit


def elimination_orders(
    indptr: np.ndarray, indices: np.ndarray, idx: np.ndarray, d: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each problem of CSR rows idx (S, m): the columns present in its rows, rarest first
    (ties by index; the intercept, in every row, last), then the absent ones, as order (S, d),
    with position (S, d) each column's place in it and present (S,) how many are present. On
    one-hot data a rare level's Hessian row is nonzero only at the few levels seen with it:
    eliminated first, it fills in little (minimum degree, approximately; `sparse_steps`).
    numpy sorts (a compiled stable sort costs seconds to compile)."""
    count = _column_counts(indptr, indices, idx, d)
    present = np.count_nonzero(count, axis=1)
    ranked = np.where(count > 0, count, np.iinfo(np.int64).max)  # the absent ones last
    order = np.argsort(ranked, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(d)[None, :], axis=1)
    return order, position, present


@jit
def _column_counts(indptr, indices, idx, d):
    """How many of each problem's rows idx (S, m) hold each column: (S, d)."""
    count = np.zeros((idx.shape[0], d), dtype=np.int64)
    for s in range(idx.shape[0]):
        for r in idx[s]:
            for a in range(indptr[r], indptr[r + 1]):
                count[s, indices[a]] += 1
    return count


@jit
def _same_row(indptr, indices, values, r, q):
    """Whether CSR rows r and q hold the same nonzeros."""
    if indptr[r + 1] - indptr[r] != indptr[q + 1] - indptr[q]:
        return False
    for a in range(indptr[r + 1] - indptr[r]):
        at, aq = indptr[r] + a, indptr[q] + a
        if indices[at] != indices[aq] or values[at] != values[aq]:
            return False
    return True


@jit
def row_groups(indptr, indices, values, idx):
    """Each problem's identical rows, grouped: group (S, m) each row's group, first (S, m) the
    groups' rows (their first `groups` (S,) entries), numbered in the order of their first
    rows (the Hessian then reads the rows in order, from cache). A hash table of the rows'
    column indices finds each row's group (a row joins one only if it holds the same
    nonzeros). On adult (discrete) 3000 rows make ~1500 groups, 1000 ~660."""
    S, m = idx.shape
    group, first = np.empty((S, m), dtype=np.int64), np.empty((S, m), dtype=np.int64)
    groups = np.zeros(S, dtype=np.int64)
    size, bits = 1, 0
    while size < 2 * m:
        size, bits = 2 * size, bits + 1
    table = np.empty(size, dtype=np.int64)  # a slot's group, or -1
    for s in range(S):
        table[:] = -1
        u = 0
        for i in range(m):
            r, key = idx[s, i], 17
            for a in range(indptr[r], indptr[r + 1]):
                key = key * 1000003 + indices[a]  # wraps around: a key, not a number
            slot = ((key * -7046029254386353131) >> (64 - bits)) & (size - 1)  # Fibonacci hash
            while table[slot] >= 0:  # a group's slot, or the next free one
                if _same_row(indptr, indices, values, r, first[s, table[slot]]):
                    break
                slot = (slot + 1) & (size - 1)
            if table[slot] < 0:
                table[slot], first[s, u] = u, r
                u += 1
            group[s, i] = table[slot]
        groups[s] = u
    return group, first, groups


@jit
def sparse_steps(
    indptr, indices, values, idx, w, penalty, grad, unit, order, position, present, group,
    first, groups,
):  # fmt: skip
    """`sparse_directions` with each problem's present columns eliminated in `order`
    (`elimination_orders`: sparsest first, each pivot's update on its row's nonzeros only,
    `newton_solves.solve_sparse_in_place`; panelled from BLOCKED_MIN unknowns on), the absent
    ones (the ridge alone) b_j / penalty_j, and the Hessian summed over groups of identical rows
    (`row_groups`: each group's weights added first, in row order). Another order of sums and
    of elimination than `sparse_directions`': the steps differ in their last bits."""
    S, d = grad.shape
    delta, singular = np.zeros((S, d)), np.zeros(S, dtype=np.bool_)
    full, buffer, rhs, y = np.empty((d, d)), np.empty(d * d), np.empty(d), np.empty(d)
    summed = np.empty(idx.shape[1])
    for s in range(S):
        k, at = present[s], order[s]
        for a in range(k, d):
            if penalty[at[a]] == 0.0:
                singular[s] = True
        if singular[s]:
            continue
        summed[: groups[s]] = 0.0
        for i in range(idx.shape[1]):
            summed[group[s, i]] += w[s, i]
        full[:] = 0.0
        hessian_into(indptr, indices, values, first[s, : groups[s]], summed, unit, full)
        h = buffer[: k * k].reshape((k, k))
        for a in range(k):
            source = full[at[a]]
            for b in range(k):
                h[a, b] = source[at[b]]
            h[a, a] += penalty[at[a]]
            rhs[a] = grad[s, at[a]]
        if k >= BLOCKED_MIN:
            singular[s] = solve_into(h, rhs[:k], y[:k])
        else:
            singular[s] = solve_sparse_in_place(h, rhs[:k], y[:k])
        if singular[s]:
            continue
        for a in range(k):
            delta[s, at[a]] = y[a]
        for a in range(k, d):
            delta[s, at[a]] = grad[s, at[a]] / penalty[at[a]]
    return delta, singular


@jit
def grouped_predictor(indptr, indices, values, group, first, groups, beta):
    """`sparse_predictor` computed once a group of identical rows (`row_groups`) and copied to
    its rows: the same sums, so the same bits, for half the rows at m = 3000 on adult."""
    S, m = group.shape
    out, value = np.empty((S, m)), np.empty(m)
    for s in range(S):
        for g in range(groups[s]):
            r = first[s, g]
            total = 0.0
            for a in range(indptr[r], indptr[r + 1]):
                total += values[a] * beta[s, indices[a]]
            value[g] = total
        for i in range(m):
            out[s, i] = value[group[s, i]]
    return out
