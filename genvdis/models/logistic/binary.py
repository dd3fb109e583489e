"""Logistic regression on many training splits at once: batched Newton (`newton`) on each
split's design (`layouts`), then, where a training set is linearly separable and the maximum
likelihood does not exist, a separating hyperplane by the configured policy (`hyperplanes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from genvdis._runtime.jit import jit
from genvdis.models.base import BatchFit, FeatureLayout, LinearModel, StrictSpec, checked, default
from genvdis.models.logistic import _quasi_start as quasi_start
from genvdis.models.logistic._layouts import Design, Gathered, Sparse
from genvdis.models.logistic._newton import NewtonFit, newton_logistic
from genvdis.models.logistic.separable import hyperplanes, sampler

# A vanishing ridge, 1e-8 * |w|^2 / 2 (not on the intercept), in the likelihood's objective,
# on the weights of the split's standard basis (`standard_basis`: each feature in [0, 1] over
# the training rows), so that it is no absolute constant meeting data of some scale.
# It makes the fit unique and finite where the maximum does not exist or is not unique:
# quasi-complete separation (an attribute value seen in one class only: the weight would grow
# forever, and the ridge stops it near 18) and attribute values absent from a training split
# (the minimum-norm maximiser). Elsewhere it moves the fit by ~1e-8 relative, except where the
# likelihood is nearly flat around a far maximum (docs/separable.md).
TINY_RIDGE = 1e-8
# The ridge policy's penalty in the standard basis is (1/C) / scale^2: capped here, where it
# already holds such a feature's weight at 0 (no inf, no inf * 0).
MAX_PENALTY = 1e250
SAMPLER_BYTES = 64 * 2**20  # the sampler's Gram matrices, per chunk of splits
WARM_ROWS, WARM_ITERATIONS, WARM_MAX_ITER = 200, 3, 8  # see LogisticRegression._warm_start
SPARSE_MIN_WIDTH, SPARSE_DENSITY = 20, 0.3  # data this wide and sparse: `layouts.Sparse`


# Trajectories per random separating hyperplane: by default (`mcmc_iterations: auto`) each chain
# stops when its own statistic says it has mixed (`sampler.UntilMixed`), after at most
# TRAJECTORIES; a number asks for that many on every chain. benchmarks/sampler_mixing.py finds
# no bias at 3 standard errors on a hard training set of any separable panel from 20 fixed
# trajectories on (sonar at m = 155: 15 at 3, 4.7 at 10); 30 leaves a margin, and the rule's
# cap is that count (docs/separable.md).
TRAJECTORIES = 30


class LogisticRegressionSpec(StrictSpec):
    name: Literal["logistic_regression"] = "logistic_regression"
    separable: Literal["sample", "max_margin", "ridge"] = "sample"
    C: float = Field(default=1.0, gt=0, description="inverse L2 strength for separable: ridge")
    mcmc_iterations: Literal["auto"] | int = Field(
        default="auto",
        description="exact-HMC trajectories per separating hyperplane: auto (until the chain "
        "has mixed) or a fixed number",
    )
    max_iter: int = Field(default=100, ge=1)
    tol: float = Field(default=1e-8, gt=0)

    @field_validator("mcmc_iterations", mode="plain")
    @classmethod
    def _auto_or_count(cls, value: object) -> str | int:
        """One message for both forms (a union's would list each member's failure)."""
        if value == "auto" or (type(value) is int and value >= 1):
            return value
        raise ValueError(f"should be auto or a whole number >= 1, not {value!r}")

    def ignored(self, layout: FeatureLayout | None = None) -> dict[str, str]:
        """The parameters this model's `separable` rule never reads (C: ridge only;
        mcmc_iterations: sample only), whatever the data."""
        acts = {"C": "ridge", "mcmc_iterations": "sample"}
        return {
            key: f"acts only under separable: {rule}, not {self.separable}"
            for key, rule in acts.items()
            if self.separable != rule
        }


@jit
def _rows_feature_major(Z: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The rows idx (S, m) of Z, each with a last column of ones, feature-major: (S, D + 1, m),
    the layout of `layouts.Gathered`."""
    S, m = idx.shape
    D = Z.shape[1]
    out = np.empty((S, D + 1, m))
    for s in range(S):
        for i in range(m):
            row = Z[idx[s, i]]
            for j in range(D):
                out[s, j, i] = row[j]
            out[s, D, i] = 1.0
    return out


def standard_basis(Z: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each training set idx (S, m) of Z in its own standard basis: every column shifted by its
    least value over the split's training rows and divided by its range there (1 where it has
    none), so in [0, 1]. Returns the rows (S m, D), split s's at s m .. s m + m - 1, and each
    split's shifts and ranges (S, D). Logistic regression's likelihood and its maximum do not
    depend on a feature's units or origin (a weight w' in this basis is w' / range in the
    data's), but the vanishing ridge, Newton's stopping rules and the separability LP's margin
    are absolute: in this basis they are the same for any units (x 1e-6 or x 1e6 give the same
    fits to rounding, where 1e-5 once changed the errors of 12 of 20 pima splits), and a
    sentinel value far off in the data moves only the splits that train on it. One-hot
    columns (0 and 1 both present) are left as they are, bit for bit."""
    standard, low, scale, _ = _standard_rows(
        np.ascontiguousarray(Z, dtype=float), np.ascontiguousarray(idx), False
    )
    return standard, low, scale


@jit
def _standard_rows(
    Z: np.ndarray, idx: np.ndarray, feature_major: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`standard_basis` in two passes over each split's rows (numpy's gather, reductions and
    arithmetic took as long as Newton on pima), the same bits; with `feature_major`, also
    those rows with a last column of ones in `layouts.Gathered`'s layout (S, D + 1, m)."""
    S, m = idx.shape
    D = Z.shape[1]
    low, scale = np.empty((S, D)), np.empty((S, D))
    high = np.empty(D)
    rows = np.empty((S * m, D))
    design = np.empty((S, D + 1, m) if feature_major else (0, 0, 0))
    for s in range(S):
        for j in range(D):
            low[s, j], high[j] = np.inf, -np.inf
        for i in range(m):
            row = Z[idx[s, i]]
            for j in range(D):
                low[s, j] = min(low[s, j], row[j])
                high[j] = max(high[j], row[j])
        for j in range(D):
            width = high[j] - low[s, j]
            scale[s, j] = width if width > 0 else 1.0
        for i in range(m):
            row = Z[idx[s, i]]
            for j in range(D):
                value = (row[j] - low[s, j]) / scale[s, j]
                rows[s * m + i, j] = value
                if feature_major:
                    design[s, j, i] = value
            if feature_major:
                design[s, D, i] = 1.0
    return rows, low, scale, design


def to_data_basis(beta: np.ndarray, shift: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Weights (S, D + 1) (the intercept last) on a standard basis (`standard_basis`'s shifts
    and ranges (S, D)) as the same classifiers on the data: w = w' / scale, b = b' - w . shift."""
    w = beta[:, :-1] / scale
    b = beta[:, -1] - np.einsum("sd,sd->s", w, shift)
    return np.concatenate([w, b[:, None]], axis=1)


def _gathered(Z: np.ndarray, y: np.ndarray, idx: np.ndarray) -> Gathered:
    """The logistic-regression design of training rows idx (S, m): Z's columns and an intercept."""
    rows = _rows_feature_major(Z, np.ascontiguousarray(idx))  # one compiled version, not two
    return Gathered.feature_major(rows, y[idx].astype(float))


@dataclass(frozen=True)
class _Shared:
    """What the groups of one `LogisticRegression.fit_batch` call share, built once by it and
    passed down (never kept on the model): where the data are sparse, the CSR arrays of
    [Z' 1], Z' being Z in one standard basis for all of it (`standard_basis` with every row
    as the training set: `standard` (None where that is Z itself, as for one-hot and rescaled
    columns), `shift`, `scale` (D,)), and the separability proofs' bound on Z''s rows' norms
    (`hyperplanes.widest`, a pass over all of it: once a run, not once a group). Dense data
    get a standard basis per training set instead, in `_fit_group`."""

    sparse: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    row_norm: float | None = None
    standard: np.ndarray | None = None
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None


@dataclass(frozen=True)
class _Basis:
    """A group's training sets in their standard basis (`standard_basis`): rows Z, labels y,
    each split's rows idx (S, m) of them, and its shifts and ranges (S, D)."""

    Z: np.ndarray
    y: np.ndarray
    idx: np.ndarray
    shift: np.ndarray
    scale: np.ndarray


def _design(Z: np.ndarray, y: np.ndarray, idx: np.ndarray, shared: _Shared) -> Design:
    """Newton's design of training rows idx (S, m), in the layout `shared` was built for."""
    if shared.sparse is not None:  # wide one-hot data
        return Sparse.gather(shared.sparse, Z.shape[1] + 1, idx, y[idx].astype(float))
    return _gathered(Z, y, idx)


class LogisticRegression(LinearModel):
    """Logistic regression by maximum conditional likelihood, no penalty.

    Where a training split is linearly separable (an exact LP check), the maximum does not
    exist, and `separable` says what to do: `sample` draws a separating hyperplane uniformly
    from the version space by exact HMC (Ng & Jordan's MCMC choice), `max_margin` takes the
    LP's maximum-margin hyperplane, `ridge` fits an L2-penalised model with strength 1/C.
    """

    name = "logistic_regression"
    shares = "logistic"  # `shared`: the proofs' row-norm bound, the sparse rows
    reference_coding = True

    def __init__(
        self,
        layout: FeatureLayout,
        separable: str = default(LogisticRegressionSpec, "separable"),
        C: float = default(LogisticRegressionSpec, "C"),
        mcmc_iterations: int | str = default(LogisticRegressionSpec, "mcmc_iterations"),
        max_iter: int = default(LogisticRegressionSpec, "max_iter"),
        tol: float = default(LogisticRegressionSpec, "tol"),
    ) -> None:
        super().__init__(layout)
        params = checked(
            LogisticRegressionSpec, separable=separable, C=C, mcmc_iterations=mcmc_iterations,
            max_iter=max_iter, tol=tol,
        )  # fmt: skip
        self.separable, self.C, self.mcmc_iterations = (
            params["separable"], params["C"], params["mcmc_iterations"],
        )  # fmt: skip
        self.max_iter, self.tol = params["max_iter"], params["tol"]

    def _chain_length(self) -> sampler.Fixed | sampler.UntilMixed:
        """How long each chain runs: `mcmc_iterations` trajectories, or with `auto` until it
        has mixed (`sampler.UntilMixed`)."""
        if self.mcmc_iterations == "auto":
            return sampler.UntilMixed()
        return sampler.Fixed(self.mcmc_iterations)

    def _newton(
        self, design: Design, strength: float, stop: bool = False,
        start: np.ndarray | None = None, max_iter: int | None = None, tol: float | None = None,
        stop_unseparated_after: int | None = None, exponential_creep: bool = False,
    ) -> NewtonFit:  # fmt: skip
        penalty = np.full(design.width, strength)
        penalty[-1] = 0.0
        max_iter, tol = max_iter or self.max_iter, tol or self.tol
        return newton_logistic(
            design, penalty, max_iter, tol, stop, start, stop_unseparated_after, exponential_creep
        )

    def _warm_start(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, shared: _Shared
    ) -> np.ndarray | None:  # Z: the standard basis's rows
        """For large training sets, a first fit on every k-th training row (~WARM_ROWS of them):
        Newton then needs about half its iterations on the whole set. That fit stops after
        WARM_ITERATIONS iterations unless its iterate separates the subsample: going on to the
        subsample's own maximum makes no better a start (measured on adult: 6.6 warm and 4.83
        full iterations a split at m = 3000, against 3 and 4.70), but where the subsample may be
        separable the start decides which separating iterate the whole fit stops at, and so
        where the sampler starts; there it runs as before (at most 8 iterations). The start is
        a function of the split alone, so results stay independent of how splits are batched;
        it runs on every split of the batch at once (`newton_logistic` groups gathered designs
        itself).

        Sparse (wide one-hot) designs do not: there a subsample's fit puts large weights on
        attribute values seen in one class of the subsample only, and from those saturated
        rows Newton's steps are huge and mostly halved away (on adult (discrete) at
        m = 500-3000, 22-25 iterations a split against 16-17 from 0, and one of 100 splits at
        m = 2000 left unconverged after 100; docs/scaling.md). They start instead where the
        ridge stops the weights of attribute values seen in one class of the whole training
        set (`quasi_start`), or from 0 where there is none: that start is computed in
        `_fit_group`, from the design's rows copied out (read in order, not at random over the
        data)."""
        m = idx.shape[1]
        if shared.sparse is not None or m < 2 * WARM_ROWS:
            return None
        sub = idx[:, :: m // WARM_ROWS]
        fit = self._newton(
            _design(Z, y, sub, shared),
            TINY_RIDGE,
            max_iter=WARM_MAX_ITER,
            tol=1e-3,
            stop_unseparated_after=WARM_ITERATIONS,
        )
        return fit.beta

    def _pure_level_start(self, Z: np.ndarray, design: Sparse) -> np.ndarray | None:
        """`quasi_start.pure_level_start` of a sparse design of one-hot data coded as the
        layout says; None where no training set has a pure level (or Z is not the layout's
        coding)."""
        groups = quasi_start.attribute_groups(self.layout)
        if Z.shape[1] != (groups[1][-1] if groups[1].size else self.layout.n_continuous):
            return None
        start = quasi_start.pure_level_start(
            design.csr, design.idx, design.t, groups, design.width, TINY_RIDGE
        )
        return start if start.any() else None

    def shared(self, Z: np.ndarray, y: np.ndarray) -> _Shared:
        """The data every group of a batch shares: when the data are mostly zeros (as wide
        one-hot codings are; used for all m), the sparse CSR of [Z' 1], Z' in one standard
        basis (`_Shared`: a per-split basis would give each split its own CSR, and shifted
        columns are not sparse). A function of Z alone, so the engine builds it once a run
        (`EncodedData.derived`) and passes it to every batch."""
        width, nonzero = Z.shape[1] + 1, np.count_nonzero(Z) + len(y)
        if width >= SPARSE_MIN_WIDTH and nonzero <= SPARSE_DENSITY * width * len(y):
            standard, shift, scale = standard_basis(Z, np.arange(len(Z))[None, :])
            shift, scale = shift[0], scale[0]
            if not shift.any() and (scale == 1.0).all():
                standard = None  # Z is its own standard basis (one-hot, rescaled columns)
            data = Z if standard is None else standard
            return _Shared(
                Sparse.from_dense(data, ones=True), hyperplanes.widest(data), standard,
                shift, scale,
            )  # fmt: skip
        return _Shared(row_norm=hyperplanes.widest(Z))

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray, *,
        shared: _Shared,
    ) -> BatchFit:  # fmt: skip
        """Three steps, in the training sets' standard basis (`standard_basis`; `_Shared`'s for
        sparse data): Newton (stopping early on separating iterates), the separability decision
        (`hyperplanes.decide`: whether a set is separable does not depend on the basis, and
        its margin, and so the decision's tolerance, is then unit-free), the configured policy
        where separable; the weights are then mapped back to the data's basis."""
        S = idx.shape[0]
        if shared.sparse is None:
            Zs, shift, scale, rows = _standard_rows(
                np.ascontiguousarray(Z, dtype=float), np.ascontiguousarray(idx), True
            )
            ys, idxs = y[idx].ravel(), np.arange(Zs.shape[0]).reshape(idx.shape)
            # every standard value is in [0, 1]: rows' norms <= D, a bound of the split alone
            # (`hyperplanes.widest` of the group's rows would depend on which splits share it)
            row_norm = 1.0 + Z.shape[1]
            start = self._warm_start(Zs, ys, idxs, shared)
        else:
            Zs = Z if shared.standard is None else shared.standard
            ys, idxs, row_norm, start = y, idx, shared.row_norm, None
            shift, scale = np.tile(shared.shift, (S, 1)), np.tile(shared.scale, (S, 1))
        if shared.sparse is None:
            design = Gathered.feature_major(rows, y[idx].astype(float))
        else:
            design = _design(Zs, ys, idxs, shared)
            start = self._pure_level_start(Zs, design)
        fit = self._first_fit(design, start, shared)
        separable, start, from_lp = hyperplanes.decide(
            Zs, ys, idxs, fit.beta, fit.separating, fit.margin_bound, row_norm
        )  # start: where the sampler starts, a separating Newton iterate or the LP's solution
        beta = to_data_basis(fit.beta, shift, scale)
        chosen = np.flatnonzero(separable)
        basis = _Basis(Zs, ys, idxs, shift, scale)
        trajectories = np.zeros(S, dtype=np.int64)
        self._apply_policy(Z, y, idx, keys, beta, chosen, start, from_lp, basis, trajectories)
        return BatchFit(beta[:, :-1], beta[:, -1], separable, trajectories)

    def _first_fit(self, design: Design, start: np.ndarray | None, shared: _Shared) -> NewtonFit:
        """Newton from `start`, stopping on separating iterates. Sparse designs start from their
        pure levels (`quasi_start`), creep by `newton._exponential_length` (on adult
        (discrete) 0.5-0.75 times the iterations at m >= 50, to the same minima) and take their
        steps sparsest first, identical rows once (`layouts.Sparse.sparsest_first`). Their
        problems that turn out separable are fitted again from 0 with the plain creep and steps: the
        separating iterate a fit stops at is where the sampler starts, and so it is the one it
        always was (the start and the creep are for the minimum, which a separable set's
        likelihood lacks)."""
        if shared.sparse is None:
            return self._newton(design, TINY_RIDGE, stop=True, start=start)
        fit = self._newton(
            design.sparsest_first(), TINY_RIDGE, stop=True, start=start, exponential_creep=True
        )
        again = np.flatnonzero(fit.separating)
        if again.size:
            refit = self._newton(design.take(again), TINY_RIDGE, stop=True)
            fit.beta[again], fit.separating[again] = refit.beta, refit.separating
            fit.margin_bound[again] = refit.margin_bound
        return fit

    def _apply_policy(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray,
        beta: np.ndarray, chosen: np.ndarray, start: np.ndarray, from_lp: np.ndarray,
        basis: _Basis, trajectories: np.ndarray,
    ) -> None:  # fmt: skip
        """Replace beta[chosen] (the separable splits', in the data's basis) by the `separable`
        policy's hyperplanes: from the sampler's or max-margin starts `start` (in the standard
        `basis`; from_lp: the LP's maximum-margin solution already), or a ridge fit; the
        sampler's trajectories per split go in `trajectories`.

        The random separating hyperplane is drawn in the data's own basis (the preprocessed
        features, the paper's law: its version space, normalised by |z|, changes shape with a
        feature's units, so no draw could be unit-free); the maximum-margin hyperplane is the
        standard basis's (docs/separable.md); the ridge is the data's, |w|^2 / (2C)."""
        if chosen.size == 0:
            return

        def standard_rows(s: np.ndarray | int) -> np.ndarray:
            return hyperplanes.signed_rows(basis.Z[basis.idx[s]], basis.y[basis.idx[s]])

        if self.separable == "max_margin":
            for s in chosen[~from_lp[chosen]]:  # the LP already ran for the others
                _, start[s] = hyperplanes.max_margin(standard_rows(s))
            beta[chosen] = to_data_basis(start[chosen], basis.shift[chosen], basis.scale[chosen])
        elif self.separable == "sample":
            # the sampler holds an m x m Gram matrix per split: bound its memory by chunking
            # (each split's draw is its own, so chunks change nothing but memory)
            chunk = max(1, SAMPLER_BYTES // (8 * idx.shape[1] ** 2))
            for part in np.array_split(chosen, -(-chosen.size // chunk)):
                rows = hyperplanes.signed_rows(Z[idx[part]], y[idx[part]])
                z0 = to_data_basis(start[part], basis.shift[part], basis.scale[part])
                z0 /= np.abs(z0).max(axis=1, keepdims=True)  # its norm must not overflow
                beta[part], trajectories[part] = sampler.draw(
                    rows, z0, keys[part], self._chain_length()
                )
        else:
            design = _gathered(basis.Z, basis.y, basis.idx[chosen])
            for i, s in enumerate(chosen):  # each split's penalty is its own in this basis
                penalty = np.minimum(1.0 / self.C / basis.scale[s] ** 2, MAX_PENALTY)
                fit = newton_logistic(
                    design.take(np.array([i])), np.append(penalty, 0.0), self.max_iter, self.tol
                )
                beta[s] = to_data_basis(fit.beta, basis.shift[s : s + 1], basis.scale[s : s + 1])[0]

    def fit_batch(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray | None = None,
        *, shared: _Shared | None = None,
    ) -> BatchFit:  # fmt: skip
        """`LinearModel.fit_batch`; the data groups share (`shared`, built here unless the
        caller has it for Z) and every split's warm start are built once, passed on as
        arguments: the model itself holds no state, so threads may share it."""
        shared = self.shared(Z, y) if shared is None else shared
        if keys is None:
            keys = np.zeros(idx.shape[0], dtype=np.uint64)
        # sparse designs hold no tensor: groups would only add Python overhead
        size = idx.shape[0] if shared.sparse is not None else self._group_size(Z, idx)
        return self._in_groups(Z, y, idx, keys, size=size, shared=shared)
