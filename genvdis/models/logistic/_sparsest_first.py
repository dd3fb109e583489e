"""Sparse Newton's steps eliminated sparsest first, identical rows once: the compiled loops
behind `layouts.Sparse.sparsest_first`, the one-hot layout's first fit (docs/scaling.md,
"adult (discrete), round 4" and "round 5"). A rare level's Hessian row is nonzero only at the
few levels seen with it, so eliminating the rarest columns first fills in little; and a
training set of 3000 adult rows has ~1500 distinct ones, so the Hessian, the gradient and the
predictors are summed and computed once a distinct row. A fit's `Plan` (orders, groups, each
group's nonzeros held contiguous) is built once; each step sums the Hessian straight into the
reordered system's upper triangle and eliminates it symmetrically (it is positive definite).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from genvdis._runtime.jit import jit
from genvdis.models.logistic._solves import solve_symmetric_in_place


class Plan(NamedTuple):
    """A design's sparsest-first plan, per problem (`plan` builds it once a fit, a row each for
    S problems; problem s's is row problems[s], so that `take` copies none): its unknowns'
    elimination order (S, d) and how many are present (S,); its rows' groups of identical
    rows, group (S, m), and how many (S,); each group's nonzeros in the order's coordinates,
    sorted (gptr (S, m + 1) into gcol (S, L), their values gval), and in the data's (gidx,
    values gvx, in the rows' own order); the values are empty where all are 1."""

    problems: np.ndarray
    order: np.ndarray
    present: np.ndarray
    group: np.ndarray
    groups: np.ndarray
    gptr: np.ndarray
    gcol: np.ndarray
    gval: np.ndarray
    gidx: np.ndarray
    gvx: np.ndarray

    def take(self, which: np.ndarray | slice) -> Plan:
        """Problems `which` only."""
        return self._replace(problems=self.problems[which])

    @property
    def for_steps(self) -> tuple[np.ndarray, ...]:
        """What `sparse_steps` and `grouped_gradient` read: every field up to gval (the
        predictors' gidx and gvx are left out)."""
        return self[: Plan._fields.index("gval") + 1]


def plan(csr: tuple[np.ndarray, np.ndarray, np.ndarray], idx: np.ndarray, d: int,
         unit: bool) -> Plan:  # fmt: skip
    """The plan of the problems of CSR rows idx (S, m) with d columns (`unit`: every value 1)."""
    order, position, present = elimination_orders(csr[0], csr[1], idx, d)
    group, first, groups = row_groups(*csr, idx)
    nonzeros = group_nonzeros(*csr, position, first, groups, unit)
    group = group.astype(np.uint32)  # unsigned indices: see `group_nonzeros`
    return Plan(np.arange(idx.shape[0]), order, present, group, groups, *nonzeros)


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
def group_nonzeros(indptr, indices, values, position, first, groups, unit):
    """Each problem's groups of identical rows (`row_groups`' first rows), their nonzeros held
    contiguous: group g's are gidx[s, gptr[s, g]:gptr[s, g + 1]] (S, m + 1) and (S, L), L the
    most nonzeros a problem's groups hold, as the row holds them (values gvx), and gcol
    likewise, in the coordinates of the problem's elimination order (`elimination_orders`'
    position), sorted (values gval); no values where `unit` (all 1). The Hessian is then summed
    straight into the reordered system's upper triangle (`_grouped_hessian`: no d x d buffer
    to zero, mirror and gather), and the predictors read a group's nonzeros in one run
    (`grouped_predictor`)."""
    S, m = first.shape
    gptr = np.zeros((S, m + 1), dtype=np.int64)
    for s in range(S):
        for g in range(groups[s]):
            r = first[s, g]
            gptr[s, g + 1] = gptr[s, g] + indptr[r + 1] - indptr[r]
    L = 0
    for s in range(S):
        L = max(L, gptr[s, groups[s]])
    # unsigned: indexing with them skips numba's check for negative indices (the Hessian's
    # scattered updates took 1.3x as long with int32 or int64 columns)
    gcol, gidx = np.empty((S, L), dtype=np.uint32), np.empty((S, L), dtype=np.uint32)
    gval, gvx = np.empty((S, 0 if unit else L)), np.empty((S, 0 if unit else L))
    widest = 0
    for r in range(indptr.size - 1):
        widest = max(widest, indptr[r + 1] - indptr[r])
    placed = np.empty(widest, dtype=np.int64)
    for s in range(S):
        for g in range(groups[s]):
            r, lo = first[s, g], gptr[s, g]
            n, q = indptr[r + 1] - indptr[r], indptr[r]
            for a in range(n):
                gidx[s, lo + a] = indices[q + a]
                placed[a] = position[s, indices[q + a]]
            for a in range(n):  # sorted by rank (a row's columns are distinct): no branches
                p, rank = placed[a], 0
                for b in range(n):
                    rank += placed[b] < p
                gcol[s, lo + rank] = p
                if not unit:
                    gval[s, lo + rank], gvx[s, lo + a] = values[q + a], values[q + a]
    return gptr, gcol, gval, gidx, gvx


@jit
def _grouped_hessian(gptr, gcol, gval, summed, unit, h):
    """h (k, k) += the upper triangle of X^T diag(w) X over groups of identical rows, their
    nonzeros in the reordered coordinates (`group_nonzeros`), summed[g] each group's weight
    (h zeroed by the caller). Each entry receives the same terms in the same order as
    `logistic_kernels.hessian_into` over the groups' rows in the natural order, so the same
    bits where `unit`. There, if every row holds the last unknown (the intercept), its column
    is each unknown's diagonal (the same sums) and is copied from it: 36 of 45 updates a row on
    adult (discrete)."""
    k, groups = h.shape[0], summed.size
    every = unit
    for g in range(groups):
        if every and (gptr[g + 1] == gptr[g] or gcol[gptr[g + 1] - 1] != k - 1):
            every = False
    cut = 1 if every else 0
    # `logistic_kernels.hessian_into`'s loop, written out: called as a shared function it was
    # not inlined, and the Hessian took 1.25x as long at m = 3000 on adult (discrete)
    for g in range(groups):
        lo, hi, wg = gptr[g], gptr[g + 1] - cut, summed[g]
        for a in range(lo, hi):
            row = h[gcol[a]]
            if unit:
                for b in range(a, hi):
                    row[gcol[b]] += wg
            else:
                wa = wg * gval[a]
                for b in range(a, hi):
                    row[gcol[b]] += wa * gval[b]
    if every:
        total = 0.0
        for g in range(groups):
            total += summed[g]
        for p in range(k - 1):
            h[p, k - 1] = h[p, p]
        h[k - 1, k - 1] = total


@jit
def _reordered_system(gptr, gcol, gval, summed, unit, at, penalty, grad, h, rhs):
    """The reordered system of a problem's present unknowns at (h (k, k)): its Hessian over the
    groups + diag(penalty) (the upper triangle), and rhs = grad's entries."""
    k = h.shape[0]
    h[:] = 0.0
    _grouped_hessian(gptr, gcol, gval, summed, unit, h)
    for a in range(k):
        h[a, a] += penalty[at[a]]
        rhs[a] = grad[at[a]]


@jit
def sparse_steps(
    w, penalty, grad, unit, problems, order, present, group, groups, gptr, gcol, gval
):  # fmt: skip
    """`logistic_kernels.sparse_directions` with the Hessian summed over groups of identical
    rows (`row_groups`: each group's weights added first, in row order) straight into the
    reordered system of each problem's present unknowns (`group_nonzeros`), eliminated in
    `order` (`elimination_orders`: sparsest first) symmetrically, without pivoting
    (`newton_solves.solve_symmetric_in_place`: the Hessian + ridge is positive definite), and
    the absent ones (the ridge alone) b_j / penalty_j. unsolved[s] where a pivot is not
    positive (the system singular to rounding): its step is left 0 for the caller to take
    with pivoting (`layouts.Sparse.directions`: `sparse_directions`, compiled anyway for the
    refits; eliminating with pivoting here too cost seconds more to compile). Another order
    of sums and of elimination than `sparse_directions`': the steps differ in their last bits.
    The plan's arrays are read at rows problems (`Plan`)."""
    S, d = grad.shape
    delta = np.zeros((S, d))
    singular, unsolved = np.zeros(S, dtype=np.bool_), np.zeros(S, dtype=np.bool_)
    buffer, rhs, y = np.empty(d * d), np.empty(d), np.empty(d)
    summed = np.empty(group.shape[1])
    for s in range(S):
        r = problems[s]
        k, at = present[r], order[r]
        for a in range(k, d):
            if penalty[at[a]] == 0.0:
                singular[s] = True
        if singular[s]:
            continue
        u = groups[r]
        summed[:u] = 0.0
        for i in range(group.shape[1]):
            summed[group[r, i]] += w[s, i]
        h = buffer[: k * k].reshape((k, k))
        system = (gptr[r, : u + 1], gcol[r], gval[r], summed[:u], unit, at, penalty, grad[s])
        _reordered_system(*system, h, rhs[:k])
        if solve_symmetric_in_place(h, rhs[:k], y[:k]):
            unsolved[s] = True
            continue
        for a in range(k):
            delta[s, at[a]] = y[a]
        for a in range(k, d):
            delta[s, at[a]] = grad[s, at[a]] / penalty[at[a]]
    return delta, singular, unsolved


@jit
def grouped_gradient(
    t, eta, e, beta, penalty, unit, problems, order, present, group, groups, gptr, gcol, gval
):
    """Newton's weights w = p (1 - p) (S, m) and the penalised log-likelihood's gradient
    X^T (t - p) - penalty beta (S, d) at linear predictors eta (e = exp(-|eta|)): p, w and the
    residuals as `layouts._Products.newton_step` computes them (the same bits), X^T (t - p)
    summed over groups of identical rows (each group's residuals added first, in row order,
    then one addition a nonzero a group: `group_nonzeros`), in another order than
    `logistic_kernels.sparse_gradient`'s (other last bits). The plan's arrays are read at
    rows problems (`Plan`)."""
    S, m = problems.size, group.shape[1]
    d = beta.shape[1]
    w, grad = np.empty((S, m)), np.empty((S, d))
    residual, reordered = np.empty(m), np.empty(d)
    for s in range(S):
        r = problems[s]
        u, k, at = groups[r], present[r], order[r]
        residual[:u] = 0.0
        for i in range(m):
            p = (1.0 if eta[s, i] >= 0 else e[s, i]) / (1.0 + e[s, i])
            w[s, i] = p * (1.0 - p)
            residual[group[r, i]] += t[s, i] - p
        reordered[:k] = 0.0
        for g in range(u):
            for a in range(gptr[r, g], gptr[r, g + 1]):
                reordered[gcol[r, a]] += residual[g] if unit else residual[g] * gval[r, a]
        for a in range(d):
            j = at[a]
            grad[s, j] = (reordered[a] if a < k else 0.0) - penalty[j] * beta[s, j]
    return w, grad


@jit
def grouped_predictor(problems, group, groups, gptr, gidx, gvx, unit, beta):
    """`logistic_kernels.sparse_predictor` computed once a group of identical rows
    (`row_groups`), from its nonzeros held contiguous (`group_nonzeros`), and copied to its
    rows: the same sums, so the same bits (a value of 1 multiplies exactly), for half the rows
    at m = 3000 on adult. The plan's arrays are read at rows problems (`Plan`)."""
    S, m = problems.size, group.shape[1]
    out, value = np.empty((S, m)), np.empty(m)
    for s in range(S):
        r = problems[s]
        b, cols, ptr, row, of = beta[s], gidx[r], gptr[r], out[s], group[r]
        for g in range(groups[r]):
            total = 0.0
            for a in range(ptr[g], ptr[g + 1]):
                total += b[cols[a]] if unit else gvx[r, a] * b[cols[a]]
            value[g] = total
        for i in range(m):
            row[i] = value[of[i]]
    return out
