"""Naive Bayes, binary and K-class: Gaussian class-conditionals with a per-feature variance
shared by the classes for continuous attributes (the paper's continuous naive Bayes), and
categorical ones with Laplace smoothing l for discrete attributes (the paper's discrete naive
Bayes); mixed data uses both. Its log-odds are linear in the one-hot data, so it is a
`LinearModel` fitted on many splits at once from one pass of sufficient statistics.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from genvdis._runtime import portable
from genvdis._runtime.jit import jit
from genvdis.models.base import (
    BatchFit,
    FeatureLayout,
    LinearModel,
    ModelInfo,
    MultiModel,
    StrictSpec,
    Style,
    checked,
    default,
    n_classes,
)
from genvdis.models.logistic._kernels import dense_csr


class NaiveBayesSpec(StrictSpec):
    name: Literal["naive_bayes"] = "naive_bayes"
    laplace: float = Field(default=1.0, gt=0)
    var_smoothing: float = Field(default=1e-9, ge=0)

    def ignored(self, layout: FeatureLayout | None = None) -> dict[str, str]:
        """Laplace's l without discrete attributes, the variance smoothing without continuous
        ones: known only from the data."""
        if layout is None:
            return {}
        out = {}
        if layout.n_discrete == 0:
            out["laplace"] = "acts only on discrete attributes"
        if layout.n_continuous == 0:
            out["var_smoothing"] = "acts only on continuous attributes"
        return out


def class_sums(
    Z: np.ndarray, y: np.ndarray, idx: np.ndarray, p: int, K: int = 2,
    csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Naive Bayes' sufficient statistics for each split, in one pass over its training rows
    (labels 0..K-1): class counts (S, K), per-class column sums (S, K, D), sums of squares
    of the p continuous columns (S, K, p), and those columns' units (S, p). Continuous values
    are measured from the split's first training row, in units of a power of two near their
    largest distance from it (`_unit`): a feature constant in the split is then exactly 0, so
    its weight is exactly 0, and a feature's scale neither underflows its squares (values near
    1e-160 would square to 0) nor changes a bit of the result (a power of two divides exactly),
    so the fit does not depend on the feature's units.

    The one-hot columns are read from their nonzeros (`one_hot_csr`, given as `csr` by a
    caller that keeps it for the run, else built here) when they are mostly zeros and the
    splits read more rows than Z has: reading each training row whole was most of naive Bayes'
    time on adult (discrete). Skipping a zero skips adding it, which is exact: the sums are the
    same bits either way."""
    if idx.size >= 2 * Z.shape[0]:
        csr = one_hot_csr(Z, p) if csr is None else csr
    else:
        csr = _NO_CSR
    return _class_sums(Z, y, idx, p, K, *csr)


@jit
def _unit(largest: float) -> float:
    """The power of two at or below `largest` (> 0), 1 for 0: dividing by it is exact (for
    results that are normal numbers), so it changes no rounding, only the exponent."""
    if largest == 0.0 or largest != largest:
        return 1.0
    mantissa, exponent = math.frexp(largest)
    return math.ldexp(1.0, exponent - 1)


def one_hot_csr(Z: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z's CSR arrays where its one-hot part (columns p on) is mostly zeros (SPARSE_SUMS),
    else empty ones (`class_sums` then reads the rows whole). A function of Z alone."""
    if Z.shape[1] > p and np.count_nonzero(Z[:, p:]) <= SPARSE_SUMS * Z[:, p:].size:
        return dense_csr(Z, False)
    return _NO_CSR


_NO_CSR = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0))
SPARSE_SUMS = 0.3  # the one-hot part's share of nonzeros below which its CSR is read


@jit
def _class_sums(
    Z: np.ndarray, y: np.ndarray, idx: np.ndarray, p: int, K: int, indptr: np.ndarray,
    indices: np.ndarray, values: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """`class_sums`' pass: the one-hot columns from Z's CSR (indptr, indices, values), or from
    Z's rows where indptr is empty."""
    S, m = idx.shape
    D = Z.shape[1]
    counts = np.zeros((S, K))
    sums = np.zeros((S, K, D))
    squares = np.zeros((S, K, p))
    units = np.ones((S, p))
    for s in range(S):
        ref = Z[idx[s, 0]]
        for j in range(p):
            largest = 0.0
            for i in range(m):
                largest = max(largest, abs(Z[idx[s, i], j] - ref[j]))
            units[s, j] = _unit(largest)
        for i in range(m):
            r = idx[s, i]
            row = Z[r]
            c = y[r]
            if c < 0 or c >= K:  # unchecked, it would write outside the arrays
                raise ValueError("class_sums: a label outside 0..K-1")
            counts[s, c] += 1.0
            for j in range(p):
                v = (row[j] - ref[j]) / units[s, j]
                sums[s, c, j] += v
                squares[s, c, j] += v * v
            if indptr.size:
                for t in range(indptr[r], indptr[r + 1]):
                    if indices[t] >= p:
                        sums[s, c, indices[t]] += values[t]
            else:
                for j in range(p, D):  # adding a 0 is exact, and no branch lets this vectorise
                    sums[s, c, j] += row[j]
    return counts, sums, squares, units


def tie_bound(magnitudes: np.ndarray, prior: np.ndarray, levels: tuple[int, ...]) -> np.ndarray:
    """(S,) bounds on the rounding error of discrete naive Bayes' log-odds on any row, from
    the computed |log p(x_i = v | 1)| + |log p(x_i = v | 0)| of every one-hot column
    (magnitudes (S, D): the attributes' levels side by side, `levels` of each) and the
    computed |log-prior| (S,). Where the exact log-odds is 0 (a tie), the double value is
    within this bound of 0; `scoring` then decides it as 0.

    Derivation, u = 2^-53 the unit roundoff, gamma_n = n u / (1 - n u). Counts c, n and the
    levels k are integers (exact in double), l > 0. The ratio r = (c + l) / (n + k l) takes 4
    roundings of positive numbers: r^ = r (1 + t), |t| <= gamma_4. np.log is accurate to a few
    ulp; take a relative error of at most rho u, rho = 8 (4 ulp; glibc's is below 1 ulp), so
    L^ = log(r^) (1 + e), |e| <= rho u, and |L^ - log r| <= |log(1 + t)| + rho u |L^| / (1 -
    rho u) <= 4.01 u + 1.01 rho u |L^|. A weight fl(L1^ - L0^) is then within 8.02 u + (1.01
    rho + 1) u (|L1^| + |L0^|) of the exact L1 - L0; the prior fl(log(fl(fl(n1 + l) / fl(n0 +
    l)))) within 3.01 u + 1.01 rho u |P^| of log((n1 + l) / (n0 + l)). A row's decision
    value sums A + 1 nonzero terms (one weight per attribute, x = 1 makes the product exact,
    and the intercept; the zeros add exactly), in any order, with or without FMA: gamma_A
    sum |term| more, each |term| <= (1 + u) M_i, with M_i the largest magnitude among
    attribute i's levels (M_0 = |P^| for the prior). In all:

        |computed - exact| <= sum_i (8.02 u + (1.01 rho + 1 + 1.01 A) u M_i)
                           <= 1.01 (A + 10) u sum_{i=0..A} (M_i + 1)    (rho = 8),

    and the bound returned is twice that, a margin for what the analysis leaves out (u's
    second-order terms). Exact log-odds that are not 0 but within it cannot be told from 0 in
    double anyway: they are decided as ties too (docs/analysis.md). A magnitude that is not
    finite (no such count with l > 0) gives 0: such a classifier is scored as computed."""
    starts = np.concatenate([[0], np.cumsum(levels)[:-1]]).astype(np.int64)
    largest = np.maximum.reduceat(magnitudes, starts, axis=1)  # M_i of every attribute
    A = len(levels)
    total = largest.sum(axis=1) + A + prior + 1.0
    bound = 2 * 1.01 * (A + 10) * 2.0**-53 * total
    return np.where(np.isfinite(bound), bound, 0.0)


def smoothed_variance(
    within: np.ndarray, squares: np.ndarray, sums: np.ndarray, m: int, var_smoothing: float
) -> np.ndarray:
    """The variances naive Bayes divides by (S, p): the pooled within-class ones plus
    var_smoothing times each attribute's own variance over the split's training rows (the
    classes ignored; from its sums and sums of squares over all classes). A floor relative to
    each attribute, so that no attribute's units move another's (scikit-learn's floor, a
    fraction of the largest variance, swamps an attribute measured in smaller units) and no
    absolute constant meets data of another scale. An attribute whose classes are each constant
    but differ gets 2^-52 of its variance where var_smoothing gives it none (a finite, dominant
    weight); one constant over the split has weight 0 (its sums are exactly 0), and variance 1
    so as not to divide 0 by 0."""
    total = np.maximum(squares - sums * (sums / m), 0.0) / m
    var = within + var_smoothing * total
    var = np.where(var > 0, var, total * 2.0**-52)
    return np.where(var > 0, var, 1.0)


class NaiveBayes(LinearModel):
    """Naive Bayes: shared-variance Gaussians for continuous, Laplace-smoothed counts for
    discrete attributes. Both give log-odds linear in the one-hot data."""

    name = "naive_bayes"
    shares = "naive_bayes"  # the data's one-hot CSR, built once a run (`shared`)

    def _group_size(self, Z: np.ndarray, idx: np.ndarray) -> int:
        return idx.shape[0]  # one compiled pass over the rows: no tensor to keep in cache

    def shared(self, Z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """What every batch reads, a function of Z alone: its one-hot CSR (`one_hot_csr`),
        which the engine builds once a run (`LinearModel.shares`) instead of once a block;
        without it (`shared=None`) `class_sums` builds it where it reads it."""
        return one_hot_csr(Z, self.layout.n_continuous)

    def __init__(
        self,
        layout: FeatureLayout,
        laplace: float = default(NaiveBayesSpec, "laplace"),
        var_smoothing: float = default(NaiveBayesSpec, "var_smoothing"),
    ) -> None:
        super().__init__(layout)
        params = checked(NaiveBayesSpec, laplace=laplace, var_smoothing=var_smoothing)
        self.laplace, self.var_smoothing = params["laplace"], params["var_smoothing"]

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray,
        shared: tuple[np.ndarray, ...] | None = None,
    ) -> BatchFit:  # fmt: skip
        p = self.layout.n_continuous
        counts, sums, squares, units = class_sums(Z, y.astype(np.int64), idx, p, csr=shared)
        n0, n1 = counts[:, 0], counts[:, 1]
        coef = np.zeros((idx.shape[0], Z.shape[1]))
        intercept = np.zeros(idx.shape[0])
        if p:
            (s0, s1), (q0, q1) = (sums[:, 0, :p], sums[:, 1, :p]), (squares[:, 0], squares[:, 1])
            mu0, mu1 = s0 / n0[:, None], s1 / n1[:, None]
            # within-class sums of squares, sum (x - mu_c)^2 = sum x^2 - n_c mu_c^2: one pass
            var = np.maximum(q0 - s0 * mu0 + q1 - s1 * mu1, 0.0) / idx.shape[1]
            var = smoothed_variance(var, q0 + q1, s0 + s1, idx.shape[1], self.var_smoothing)
            coef[:, :p] = (mu1 - mu0) / var / units
            intercept -= ((mu1**2 - mu0**2) / (2 * var)).sum(axis=1)
            intercept -= np.einsum("sd,sd->s", coef[:, :p], Z[idx[:, 0], :p])
        ties = np.zeros(idx.shape[0])
        if self.layout.n_discrete:
            l = self.laplace  # noqa: E741 (the paper's name)
            k = np.repeat(self.layout.levels, self.layout.levels).astype(float)
            c0, c1 = sums[:, 0, p:], sums[:, 1, p:]
            log1 = portable.log((c1 + l) / (n1[:, None] + k * l))
            log0 = portable.log((c0 + l) / (n0[:, None] + k * l))
            coef[:, p:] = log1 - log0
            prior = portable.log((n1 + l) / (n0 + l))
            bound = tie_bound(np.abs(log1) + np.abs(log0), np.abs(prior), self.layout.levels)
            # a continuous part exactly 0 (every continuous weight 0) leaves the discrete
            # log-odds, a sum of logs of rationals that can be exactly 0: ties decided as 0
            discrete = (coef[:, :p] == 0).all(axis=1) & (intercept == 0)
            ties = np.where(discrete, bound, 0.0)
        else:
            prior = portable.log(n1 / n0)
        return BatchFit(coef, intercept + prior, np.zeros(idx.shape[0], dtype=bool), ties=ties)


class MultiNaiveBayes(MultiModel, NaiveBayes):
    """K-class naive Bayes: shared-variance Gaussians for continuous attributes (the variance
    of each feature pooled over all classes, maximum likelihood), Laplace-smoothed counts for
    discrete ones; the class prior is smoothed with the same l when there are discrete
    attributes, as in the binary model (whose parameters and checks it shares)."""

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray,
        shared: tuple[np.ndarray, ...] | None = None,
    ) -> BatchFit:  # fmt: skip
        p, K = self.layout.n_continuous, n_classes(y)
        counts, sums, squares, units = class_sums(Z, y.astype(np.int64), idx, p, K, shared)
        coef = np.zeros((idx.shape[0], K, Z.shape[1]))
        intercept = np.zeros((idx.shape[0], K))
        if p:
            self._gaussian(Z, idx, counts, sums[:, :, :p], squares, units, coef, intercept)
        if self.layout.n_discrete:
            l = self.laplace  # noqa: E741 (the paper's name)
            k = np.repeat(self.layout.levels, self.layout.levels).astype(float)
            log_p = portable.log((sums[:, :, p:] + l) / (counts[:, :, None] + k * l))
            coef[:, 1:, p:] = log_p[:, 1:] - log_p[:, :1]
            discrete = (coef[:, :, :p] == 0).all(axis=(1, 2)) & (intercept == 0).all(axis=1)
            prior = portable.log((counts[:, 1:] + l) / (counts[:, :1] + l))
            intercept[:, 1:] += prior
            # each class's score is a binary log-odds against class 0 (`tie_bound`); two
            # scores' difference rounds by at most the sum of their bounds
            magnitudes = (np.abs(log_p[:, 1:]) + np.abs(log_p[:, :1])).max(axis=1)
            bound = tie_bound(magnitudes, np.abs(prior).max(axis=1), self.layout.levels)
            ties = np.where(discrete, 2 * bound, 0.0)
        else:
            intercept[:, 1:] += portable.log(counts[:, 1:] / counts[:, :1])
            ties = None
        return BatchFit(coef, intercept, np.zeros(idx.shape[0], dtype=bool), ties=ties)

    def _gaussian(
        self, Z: np.ndarray, idx: np.ndarray, counts: np.ndarray, sums: np.ndarray,
        squares: np.ndarray, units: np.ndarray, coef: np.ndarray, intercept: np.ndarray,
    ) -> None:  # fmt: skip
        """The continuous part of coef and intercept, in place: class means mu_c, the variance
        pooled over classes (floored relative to each attribute, `smoothed_variance`),
        and class c's log-density ratio against class 0; sums in `class_sums`' units."""
        p = sums.shape[2]
        mu = sums / counts[:, :, None]
        # within-class sums of squares, sum (x - mu_c)^2 = sum x^2 - n_c mu_c^2: one pass
        within = squares[:, 0] - sums[:, 0] * mu[:, 0]
        for c in range(1, mu.shape[1]):
            within = within + squares[:, c] - sums[:, c] * mu[:, c]
        var = np.maximum(within, 0.0) / idx.shape[1]
        var = smoothed_variance(
            var, squares.sum(axis=1), sums.sum(axis=1), idx.shape[1], self.var_smoothing
        )[:, None]
        coef[:, 1:, :p] = (mu[:, 1:] - mu[:, :1]) / var / units[:, None]
        intercept[:, 1:] -= ((mu[:, 1:] ** 2 - mu[:, :1] ** 2) / (2 * var)).sum(axis=2)
        intercept[:, 1:] -= np.einsum("scd,sd->sc", coef[:, 1:, :p], Z[idx[:, 0], :p])


MODEL = ModelInfo(
    name="naive_bayes",
    spec=NaiveBayesSpec,
    binary=NaiveBayes,
    multiclass=MultiNaiveBayes,
    family="generative",
    style=Style("-", "tab:blue", "naive Bayes", "NB"),
    order=10,
    aliases={"laplace": "laplace"},
    asymptote=True,
)

__all__ = [
    "MODEL", "MultiNaiveBayes", "NaiveBayes", "NaiveBayesSpec", "class_sums", "one_hot_csr",
    "smoothed_variance", "tie_bound",
]  # fmt: skip
