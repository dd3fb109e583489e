"""The models for K-class targets (labels coded 0..K-1), fit on many training splits at once,
and their scoring.

Each is a linear classifier with one score per class, `Z @ coef[c] + intercept[c]`; it predicts
the class with the largest score. `fit_batch` has the binary models' interface (`models`): data
Z (n, D), labels y, S training index sets idx (S, m), and it returns a `linear.BatchFit` whose
coef is (S, K, D) and intercept (S, K). Scores are reference-coded: class 0's are 0, and class
c's are its log-odds against class 0. So for K = 2 every model here gives the binary model's
log-odds, by the same formulas, and predicts as it does.

Ties: the lowest class index wins (`predict`, `count_errors`): for K = 2 that is the binary
rule "positive where the log-odds is > 0". A score within `BatchFit.ties` of the top one ties
it (naive Bayes on discrete attributes, whose scores can tie exactly: the bound on their
rounding, `models.tie_bound`).

- `MultiNaiveBayes`: the binary `NaiveBayes` with K classes: Gaussians with a per-feature
  variance shared by all classes, Laplace-smoothed counts for discrete attributes.
- `MultiLDA`: Gaussians with one full covariance shared by the classes, epsilon on its diagonal.
- `MultiLogisticRegression` (`genvdis.models.logistic.softmax`): multinomial logistic regression.
"""

from __future__ import annotations

import numpy as np

from genvdis._runtime import portable, streams
from genvdis.data.preprocessing import FeatureLayout
from genvdis.models.generative import (
    LDA,
    NaiveBayes,
    class_sums,
    smoothed_variance,
    spreads,
    tie_bound,
)  # fmt: skip
from genvdis.models.linear import BatchFit, LinearModel

SCORE_BYTES = 32 * 2**20  # scores (rows x splits x classes) computed at once when scoring


def n_classes(y: np.ndarray) -> int:
    """K, for labels coded 0..K-1."""
    return int(np.max(y)) + 1


class MultiModel(LinearModel):
    """fit / predict / decision_function for K-class scores, on top of `fit_batch`."""

    def fit(self, X: np.ndarray, y: np.ndarray, random_state: int = 0) -> MultiModel:
        y = np.asarray(y, dtype=np.int64)
        if y.min() != 0 or len(np.unique(y)) != n_classes(y):
            raise ValueError("y must hold every class, coded 0..K-1")
        idx = np.arange(len(y))[None, :]
        keys = streams.stream_keys(random_state, len(y), [0], stream=1)
        fit = self.fit_batch(self.encode(X), y, idx, keys)
        self.coef_, self.intercept_ = fit.coef[0], fit.intercept[0]
        self.separable_, self.ties_ = bool(fit.separable[0]), float(fit.ties[0])
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Scores (n, K): class c's log-odds against class 0."""
        return self.encode(X) @ self.coef_.T + self.intercept_

    def predict(self, X: np.ndarray) -> np.ndarray:
        scores = self.decision_function(X)
        # ties (a score within ties_ of the largest, `BatchFit`): the lowest class
        return np.argmax(scores >= scores.max(axis=1, keepdims=True) - self.ties_, axis=1)


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
        pooled over classes (floored relative to each attribute, `models.smoothed_variance`),
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


class MultiLDA(MultiModel, LDA):
    """K-class normal discriminant analysis: one full covariance shared by the classes (the
    pooled within-class covariance, maximum likelihood), epsilon added to its diagonal (the
    binary model's parameters and checks)."""

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        Zt, yt, K = Z[idx], y[idx], n_classes(y)
        member = (yt[:, :, None] == np.arange(K)).astype(float)  # (S, m, K)
        counts = member.sum(axis=1)
        mu = np.einsum("smk,smd->skd", member, Zt) / counts[:, :, None]
        centred = Zt - np.take_along_axis(mu, yt[:, :, None], axis=1)
        units = spreads(centred)  # as binary LDA's
        centred = centred / units[:, None, :]
        cov = np.einsum("smd,sme->sde", centred, centred) / Zt.shape[1]
        cov += self.epsilon * np.eye(Z.shape[1])
        gaps = np.swapaxes(mu[:, 1:] - mu[:, :1], 1, 2) / units[:, :, None]  # (S, D, K - 1)
        coef = np.swapaxes(self._solve(cov, gaps, idx.shape[1]) / units[:, :, None], 1, 2)
        intercept = -0.5 * np.einsum("skd,skd->sk", mu[:, 1:] + mu[:, :1], coef)
        intercept += portable.log(counts[:, 1:] / counts[:, :1])
        pad = np.zeros((idx.shape[0], 1))
        coef = np.concatenate([np.zeros((idx.shape[0], 1, Z.shape[1])), coef], axis=1)
        return BatchFit(coef, np.concatenate([pad, intercept], axis=1), pad[:, 0] > 0)


def build_model(spec: object, layout: FeatureLayout, n_classes: int) -> MultiModel:
    """The K-class model a config's `models` entry names, with its parameters; refused here,
    before any work, where it has no K-class form (`softmax.check_classes`)."""
    from genvdis.models.logistic.softmax import (  # they build on this
        MultiLogisticRegression,
        check_classes,
    )

    models = {model.name: model for model in (MultiNaiveBayes, MultiLDA, MultiLogisticRegression)}
    model = models[spec.name](layout, **spec.model_dump(exclude={"name"}))
    check_classes(model, n_classes)
    return model


def count_errors(
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
    chunk = max(1, SCORE_BYTES // (8 * L * K))
    errors = np.zeros(L, dtype=np.int64)
    labels = np.ascontiguousarray(y, dtype=np.int64)
    for start in range(0, n, chunk):
        scores = portable.matmul(Z1[start : start + chunk], flat).reshape(-1, L, K)
        rows = slice(start, start + chunk)
        _add_wrong(scores, labels[rows], tested[:, rows], ties, errors)
    return errors


@streams.jit
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


__all__ = [
    "MultiLDA", "MultiModel", "MultiNaiveBayes", "build_model", "count_errors",
    "n_classes",
]  # fmt: skip
