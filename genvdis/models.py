"""The generative and discriminative models, fit on many training splits at once.

Every model here is a linear classifier: it predicts positive where a log-odds
`Z @ coef + intercept` is > 0, with Z the data in one-hot form. So every model fits as a batch:
given the encoded data Z (n, D), labels y and S training index sets idx (S, m), `fit_batch`
returns S coefficient vectors at once, by matrix products and batched solves. The usual
`fit` / `predict` / `decision_function` are the batch of one, so each class can be checked
against scikit-learn on its own.

- `NaiveBayes`: Gaussian class-conditionals with a per-feature variance shared by the classes
  (the paper's continuous naive Bayes) and categorical ones with Laplace smoothing l (the
  paper's discrete naive Bayes); mixed data uses both.
- `LogisticRegression`: maximum conditional likelihood, no penalty, by batched Newton (IRLS).
  On linearly separable training sets, where the maximum does not exist, a separating
  hyperplane is drawn at random from the version space (the paper's choice), or the maximum-
  margin one, or a ridge fit, as configured.
- `LDA`: normal discriminant analysis with a full covariance shared by the classes, epsilon
  added to its diagonal.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from genvdis import hyperplanes, streams
from genvdis.errors import UserError
from genvdis.newton import Design, Gathered, Masked, NewtonFit, Sparse, newton_logistic
from genvdis.preprocessing import FeatureLayout

# A vanishing ridge, 1e-8 * |w|^2 / 2 (not on the intercept), in the likelihood's objective.
# It makes the fit unique and finite where the maximum does not exist or is not unique:
# quasi-complete separation (an attribute value seen in one class only: the weight would grow
# forever, and the ridge stops it near 18) and attribute values absent from a training split
# (the minimum-norm maximiser). Elsewhere it moves the fit by ~1e-8 relative, except where the
# likelihood is nearly flat around a far maximum (docs/separable.md).
TINY_RIDGE = 1e-8
SAMPLER_BYTES = 64 * 2**20
WARM_ROWS, WARM_ITERATIONS, WARM_MAX_ITER = 200, 3, 8  # see LogisticRegression._warm_start
# Training sets this large a share of data this wide: `newton.Masked` (its Hessians are one
# BLAS-3 product, which pays off for wide rows; narrower ones are faster gathered, in the
# compiled per-problem step: measured by `benchmarks/bench_layouts.py`) ...
MASKED_FRACTION, MASKED_MIN_WIDTH = 0.45, 20
MASKED_BYTES = 64 * 2**20  # ... unless its rows' pairwise products would take more memory
SPARSE_MIN_WIDTH, SPARSE_DENSITY = 20, 0.3  # data this wide and sparse: `newton.Sparse`
GROUP_BYTES = 4 * 2**20  # a group of splits' training tensor stays in cache


@dataclass
class BatchFit:
    """S fitted linear classifiers: log-odds = Z @ coef[s] + intercept[s]; `trajectories`[s]:
    how many sampler trajectories drew split s's hyperplane (0 where none did)."""

    coef: np.ndarray
    intercept: np.ndarray
    separable: np.ndarray
    trajectories: np.ndarray | None = None

    FIELDS = ("coef", "intercept", "separable", "trajectories")

    def __post_init__(self) -> None:
        if self.trajectories is None:
            self.trajectories = np.zeros(len(self.separable), dtype=np.int64)


class LinearModel:
    """fit / predict / decision_function on top of `fit_batch`, the way scikit-learn reads."""

    name = "linear"
    reference_coding = False

    def __init__(self, layout: FeatureLayout) -> None:
        self.layout = layout

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's arguments, which the model keeps under the same names."""
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, object]:
        """The constructor's arguments, scikit-learn's way: `sklearn.base.clone` rebuilds an
        unfitted copy from them. (No nested estimators: `deep` changes nothing.)"""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: object) -> LinearModel:
        """Change constructor arguments; checked as the constructor checks them (it reruns)."""
        unknown = sorted(set(params) - set(self._param_names()))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter {', '.join(unknown)}")
        self.__init__(**{**self.get_params(), **params})
        return self

    def encode(self, X: np.ndarray) -> np.ndarray:
        return self.layout.onehot(X, reference=self.reference_coding)

    def fit_batch(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray | None = None
    ) -> BatchFit:
        """Fit S classifiers, on training rows idx[s]; keys[s] is split s's own random stream
        (`streams`), for models that draw at random.

        Splits are fitted in groups whose training tensor (splits x m x D) fits in cache:
        the work is memory-bound, and out of cache it runs several times slower. Splits are
        independent, so the grouping changes no result."""
        if keys is None:
            keys = np.zeros(idx.shape[0], dtype=np.uint64)
        return self._in_groups(Z, y, idx, keys, size=self._group_size(Z, idx))

    def _in_groups(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, *per_split: np.ndarray, size: int,
        **common: object,
    ) -> BatchFit:  # fmt: skip
        """`_fit_group` on groups of `size` splits; per_split arrays (keys, ...) are sliced
        alike, `common` keyword arguments go to every group as they are."""
        if idx.shape[0] <= size:
            return self._fit_group(Z, y, idx, *per_split, **common)
        fits = [
            self._fit_group(
                Z, y, idx[g : g + size], *(a[g : g + size] for a in per_split), **common
            )
            for g in range(0, idx.shape[0], size)
        ]
        return BatchFit(*(np.concatenate([getattr(f, k) for f in fits]) for k in BatchFit.FIELDS))

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        raise NotImplementedError

    def _group_size(self, Z: np.ndarray, idx: np.ndarray) -> int:
        """Splits per group: as many as keep the gathered training tensor in cache."""
        return max(1, GROUP_BYTES // (8 * idx.shape[1] * (Z.shape[1] + 1)))

    def fit(self, X: np.ndarray, y: np.ndarray, random_state: int = 0) -> LinearModel:
        y = np.asarray(y, dtype=np.int64)
        if set(np.unique(y)) != {0, 1}:
            raise ValueError("y must hold both classes, coded 0 and 1")
        idx = np.arange(len(y))[None, :]
        keys = streams.stream_keys(random_state, len(y), [0], stream=1)
        fit = self.fit_batch(self.encode(X), y, idx, keys)
        self.coef_, self.intercept_ = fit.coef[0], float(fit.intercept[0])
        self.separable_ = bool(fit.separable[0])
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return self.encode(X) @ self.coef_ + self.intercept_

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.decision_function(X) > 0).astype(np.int64)


def _class_counts(y_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n1 = y_train.sum(axis=1).astype(float)
    return y_train.shape[1] - n1, n1


def _class_means(
    X: np.ndarray, y_train: np.ndarray, n0: np.ndarray, n1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-split class means mu0, mu1 (S, d) of X (S, m, d), and X minus its class's mean:
    what both Gaussian models (shared diagonal or full covariance) are estimated from."""
    mu1 = np.einsum("sm,smd->sd", y_train, X) / n1[:, None]
    mu0 = np.einsum("sm,smd->sd", 1 - y_train, X) / n0[:, None]
    centred = X - np.where(y_train[:, :, None] > 0, mu1[:, None], mu0[:, None])
    return mu0, mu1, centred


@streams.jit
def _naive_bayes_sums(
    Z: np.ndarray, y: np.ndarray, idx: np.ndarray, p: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Naive Bayes' sufficient statistics for each split, in one pass over its training rows:
    class counts (S, 2), per-class column sums (S, 2, D) and sums of squares of the p
    continuous columns (S, 2, p). Continuous values are measured from the split's first
    training row: a feature constant in the split is then exactly 0, so its weight is exactly
    0, not a rounding error in the means divided by the tiny variance floor."""
    S, m = idx.shape
    D = Z.shape[1]
    counts = np.zeros((S, 2))
    sums = np.zeros((S, 2, D))
    squares = np.zeros((S, 2, p))
    for s in range(S):
        ref = Z[idx[s, 0]]
        for i in range(m):
            row = Z[idx[s, i]]
            c = y[idx[s, i]]
            counts[s, c] += 1.0
            for j in range(p):
                v = row[j] - ref[j]
                sums[s, c, j] += v
                squares[s, c, j] += v * v
            for j in range(p, D):  # one-hot: mostly zeros
                if row[j] != 0.0:
                    sums[s, c, j] += row[j]
    return counts, sums, squares


class NaiveBayes(LinearModel):
    """Naive Bayes: shared-variance Gaussians for continuous, Laplace-smoothed counts for
    discrete attributes. Both give log-odds linear in the one-hot data."""

    name = "naive_bayes"

    def _group_size(self, Z: np.ndarray, idx: np.ndarray) -> int:
        return idx.shape[0]  # one compiled pass over the rows: no tensor to keep in cache

    def __init__(
        self, layout: FeatureLayout, laplace: float = 1.0, var_smoothing: float = 1e-9
    ) -> None:
        super().__init__(layout)
        if not laplace >= 0 or (layout.n_discrete and not laplace > 0):
            raise ValueError("laplace must be > 0 for discrete attributes (log 0 otherwise)")
        if var_smoothing < 0:
            raise ValueError("var_smoothing must be >= 0")
        self.laplace, self.var_smoothing = float(laplace), float(var_smoothing)

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        p = self.layout.n_continuous
        counts, sums, squares = _naive_bayes_sums(Z, y.astype(np.int64), idx, p)
        n0, n1 = counts[:, 0], counts[:, 1]
        coef = np.zeros((idx.shape[0], Z.shape[1]))
        intercept = np.zeros(idx.shape[0])
        if p:
            (s0, s1), (q0, q1) = (sums[:, 0, :p], sums[:, 1, :p]), (squares[:, 0], squares[:, 1])
            mu0, mu1 = s0 / n0[:, None], s1 / n1[:, None]
            # within-class sums of squares, sum (x - mu_c)^2 = sum x^2 - n_c mu_c^2: one pass
            var = np.maximum(q0 - s0 * mu0 + q1 - s1 * mu1, 0.0) / idx.shape[1]
            var += self.var_smoothing * var.max(axis=1, keepdims=True) + 1e-12
            coef[:, :p] = (mu1 - mu0) / var
            intercept -= ((mu1**2 - mu0**2) / (2 * var)).sum(axis=1)
            intercept -= np.einsum("sd,sd->s", coef[:, :p], Z[idx[:, 0], :p])
        if self.layout.n_discrete:
            l = self.laplace  # noqa: E741 (the paper's name)
            k = np.repeat(self.layout.levels, self.layout.levels).astype(float)
            c0, c1 = sums[:, 0, p:], sums[:, 1, p:]
            coef[:, p:] = np.log((c1 + l) / (n1[:, None] + k * l))
            coef[:, p:] -= np.log((c0 + l) / (n0[:, None] + k * l))
            prior = np.log((n1 + l) / (n0 + l))
        else:
            prior = np.log(n1 / n0)
        return BatchFit(coef, intercept + prior, np.zeros(idx.shape[0], dtype=bool))


class LDA(LinearModel):
    """Normal discriminant analysis: Gaussians with one full covariance shared by the
    classes, epsilon added to its diagonal so that it is invertible at any m."""

    name = "lda"
    reference_coding = True

    def __init__(self, layout: FeatureLayout, epsilon: float = 1e-4) -> None:
        super().__init__(layout)
        if epsilon < 0:
            raise ValueError("epsilon must be >= 0")
        self.epsilon = float(epsilon)

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        Zt, yt = Z[idx], y[idx].astype(float)
        n0, n1 = _class_counts(yt)
        mu0, mu1, centred = _class_means(Zt, yt, n0, n1)
        cov = np.einsum("smd,sme->sde", centred, centred) / Zt.shape[1]
        cov += self.epsilon * np.eye(Z.shape[1])
        try:
            coef = np.linalg.solve(cov, (mu1 - mu0)[..., None])[..., 0]
        except np.linalg.LinAlgError:
            coef = None
        if coef is None or not np.isfinite(coef).all():  # epsilon too small to regularise
            raise UserError(
                f"models: lda (epsilon {self.epsilon:g}): a training set of m={idx.shape[1]} "
                "has a singular covariance (collinear or constant attributes); give lda a "
                "larger epsilon (default 1e-4)"
            )
        intercept = -0.5 * np.einsum("sd,sd->s", mu1 + mu0, coef) + np.log(n1 / n0)
        return BatchFit(coef, intercept, np.zeros(idx.shape[0], dtype=bool))


@streams.jit
def _rows_feature_major(Z: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The rows idx (S, m) of Z, each with a last column of ones, feature-major: (S, D + 1, m),
    the layout of `newton.Gathered`."""
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


def _gathered(Z: np.ndarray, y: np.ndarray, idx: np.ndarray) -> Gathered:
    """The logistic-regression design of training rows idx (S, m): Z's columns and an intercept."""
    return Gathered.feature_major(_rows_feature_major(Z, idx), y[idx].astype(float))


@dataclass(frozen=True)
class _Shared:
    """What the groups of one `LogisticRegression.fit_batch` call share, built once by it and
    passed down (never kept on the model): the CSR arrays of [Z 1] where the data are sparse,
    the masked design (data and pairwise products) where the batch's layout is masked."""

    sparse: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    masked: Masked | None = None


def _design(Z: np.ndarray, y: np.ndarray, idx: np.ndarray, shared: _Shared) -> Design:
    """Newton's design of training rows idx (S, m), in the layout `shared` was built for."""
    if shared.sparse is not None:  # wide one-hot data
        return Sparse(shared.sparse, Z.shape[1] + 1, idx, y[idx].astype(float))
    if shared.masked is not None:
        mask = np.zeros((idx.shape[0], len(y)))
        mask[np.arange(idx.shape[0])[:, None], idx] = 1.0
        return shared.masked.with_mask(mask)
    return _gathered(Z, y, idx)


class LogisticRegression(LinearModel):
    """Logistic regression by maximum conditional likelihood, no penalty.

    Where a training split is linearly separable (an exact LP check), the maximum does not
    exist, and `separable` says what to do: `sample` draws a separating hyperplane uniformly
    from the version space by exact HMC (Ng & Jordan's MCMC choice), `max_margin` takes the
    LP's maximum-margin hyperplane, `ridge` fits an L2-penalised model with strength 1/C.
    """

    name = "logistic_regression"
    reference_coding = True

    def __init__(
        self,
        layout: FeatureLayout,
        separable: str = "sample",
        C: float = 1.0,
        mcmc_iterations: int = hyperplanes.TRAJECTORIES,
        max_iter: int = 100,
        tol: float = 1e-8,
    ) -> None:
        super().__init__(layout)
        if separable not in {"sample", "max_margin", "ridge"}:
            raise ValueError("separable must be 'sample', 'max_margin' or 'ridge'")
        if not C > 0 or max_iter < 1 or not tol > 0 or mcmc_iterations < 1:
            raise ValueError("C and tol must be > 0; max_iter and mcmc_iterations >= 1")
        self.separable, self.C, self.mcmc_iterations = separable, float(C), int(mcmc_iterations)
        self.max_iter, self.tol = int(max_iter), float(tol)

    def _newton(
        self, design: Design, strength: float, stop: bool = False,
        start: np.ndarray | None = None, max_iter: int | None = None, tol: float | None = None,
        stop_unseparated_after: int | None = None,
    ) -> NewtonFit:  # fmt: skip
        penalty = np.full(design.width, strength)
        penalty[-1] = 0.0
        max_iter, tol = max_iter or self.max_iter, tol or self.tol
        return newton_logistic(design, penalty, max_iter, tol, stop, start, stop_unseparated_after)

    def _warm_start(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, shared: _Shared
    ) -> np.ndarray | None:
        """For large training sets, a first fit on every k-th training row (~WARM_ROWS of them):
        Newton then needs about half its iterations on the whole set. That fit stops after
        WARM_ITERATIONS iterations unless its iterate separates the subsample: going on to the
        subsample's own maximum makes no better a start (measured on adult: 6.6 warm and 4.83
        full iterations a split at m = 3000, against 3 and 4.70), but where the subsample may be
        separable the start decides which separating iterate the whole fit stops at, and so
        where the sampler starts; there it runs as before (at most 8 iterations). The start is
        a function of the split alone, so results stay independent of how splits are batched;
        it runs on every split of the batch at once, its iterations being too cheap to split
        into groups. None for masked designs: their iterations are cheap, a warm start costs
        more than it saves."""
        m = idx.shape[1]
        if m < 2 * WARM_ROWS or shared.masked is not None:
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

    @staticmethod
    def _layout(n: int, m: int, width: int, sparse: bool = False) -> str:
        """How training sets of m of n rows are laid out for Newton (see `newton`): sparse for
        wide one-hot data (`sparse`: the data are), masked for sets that cover much of wide
        data, else gathered."""
        if sparse:
            return "sparse"
        masked_pays = m >= MASKED_FRACTION * n and width >= MASKED_MIN_WIDTH
        if masked_pays and Masked.pairs_bytes(n, width) <= MASKED_BYTES:
            return "masked"
        return "gathered"

    def _shared(self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray) -> _Shared:
        """The data every group of a batch shares, built once: the sparse CSR of [Z 1] when
        the data are mostly zeros (as wide one-hot codings are; used for all m), else the
        masked design's data and pairwise products when the batch's layout is masked."""
        Z1 = np.column_stack([Z, np.ones(len(y))])
        if Z1.shape[1] >= SPARSE_MIN_WIDTH and np.count_nonzero(Z1) <= SPARSE_DENSITY * Z1.size:
            return _Shared(sparse=Sparse.from_dense(Z1))
        if self._layout(len(y), idx.shape[1], Z1.shape[1]) == "masked":
            return _Shared(masked=Masked(Z1, y, np.zeros((0, len(y)))))
        return _Shared()

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray,
        start: np.ndarray | None = None, *, shared: _Shared,
    ) -> BatchFit:  # fmt: skip
        """Three steps: Newton (stopping early on separating iterates), the separability
        decision (`hyperplanes.decide`), the configured policy where separable."""
        fit = self._newton(_design(Z, y, idx, shared), TINY_RIDGE, stop=True, start=start)
        beta = fit.beta
        separable, start, from_lp = hyperplanes.decide(
            Z, y, idx, beta, fit.separating, fit.margin_bound
        )  # start: where the sampler starts, a separating Newton iterate or the LP's solution
        chosen = np.flatnonzero(separable)
        self._apply_policy(Z, y, idx, keys, beta, chosen, start, from_lp)
        trajectories = np.zeros(idx.shape[0], dtype=np.int64)
        if self.separable == "sample":
            trajectories[chosen] = self.mcmc_iterations
        return BatchFit(beta[:, :-1], beta[:, -1], separable, trajectories)

    def _apply_policy(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray,
        beta: np.ndarray, chosen: np.ndarray, start: np.ndarray, from_lp: np.ndarray,
    ) -> None:  # fmt: skip
        """Replace beta[chosen] (the separable splits') by the `separable` policy's hyperplanes:
        from the sampler's or max-margin starts `start` (from_lp: the LP's maximum-margin
        solution already), or a ridge fit."""
        if chosen.size == 0:
            return

        def rows(s: np.ndarray | int) -> np.ndarray:  # constraint rows, only where needed
            return hyperplanes.signed_rows(Z[idx[s]], y[idx[s]])

        if self.separable == "max_margin":
            for s in chosen[~from_lp[chosen]]:  # the LP already ran for the others
                _, start[s] = hyperplanes.max_margin(rows(s))
            beta[chosen] = start[chosen]
        elif self.separable == "sample":
            # the sampler holds an m x m Gram matrix per split: bound its memory by chunking
            # (each split's draw is its own, so chunks change nothing but memory)
            chunk = max(1, SAMPLER_BYTES // (8 * idx.shape[1] ** 2))
            for part in np.array_split(chosen, -(-chosen.size // chunk)):
                beta[part] = hyperplanes.sample_version_space(
                    rows(part), start[part], self.mcmc_iterations, keys[part]
                )
        else:
            strength = 1.0 / self.C
            beta[chosen] = self._newton(_gathered(Z, y, idx[chosen]), strength).beta

    def fit_batch(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray | None = None
    ) -> BatchFit:
        """`LinearModel.fit_batch`; the data groups share (`_Shared`) and every split's warm
        start are built once, passed on as arguments: the model itself holds no state, so
        threads may share it."""
        shared = self._shared(Z, y, idx)
        if keys is None:
            keys = np.zeros(idx.shape[0], dtype=np.uint64)
        start = self._warm_start(Z, y, idx, shared)
        per_split = (keys,) if start is None else (keys, start)
        # sparse designs hold no tensor: groups would only add Python overhead
        size = idx.shape[0] if shared.sparse is not None else self._group_size(Z, idx)
        return self._in_groups(Z, y, idx, *per_split, size=size, shared=shared)


MODELS: dict[str, type[LinearModel]] = {
    model.name: model for model in (NaiveBayes, LogisticRegression, LDA)
}


def build_model(spec: object, layout: FeatureLayout) -> LinearModel:
    """The model a config's `models` entry names, with its parameters (validated once)."""
    params = spec.model_dump(exclude={"name"})
    return MODELS[spec.name](layout, **params)


__all__ = ["LDA", "MODELS", "BatchFit", "LogisticRegression", "NaiveBayes", "build_model"]
