"""Normal discriminant analysis (LDA), binary and K-class: Gaussian class-conditionals with
one full covariance shared by the classes, epsilon added to its diagonal. A generative model
beside naive Bayes that does not assume the attributes independent given the class.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from genvdis._runtime import portable
from genvdis.errors import UserError
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


class LDASpec(StrictSpec):
    name: Literal["lda"] = "lda"
    epsilon: float = Field(default=1e-4, ge=0)


def _class_counts(y_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n1 = y_train.sum(axis=1).astype(float)
    return y_train.shape[1] - n1, n1


def _class_means(
    X: np.ndarray, y_train: np.ndarray, n0: np.ndarray, n1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-split class means mu0, mu1 (S, d) of X (S, m, d), and X minus its class's mean:
    what LDA's shared full covariance is estimated from (naive Bayes has its own one-pass
    sums, `class_sums`)."""
    mu1 = np.einsum("sm,smd->sd", y_train, X) / n1[:, None]
    mu0 = np.einsum("sm,smd->sd", 1 - y_train, X) / n0[:, None]
    centred = X - np.where(y_train[:, :, None] > 0, mu1[:, None], mu0[:, None])
    return mu0, mu1, centred


def spreads(centred: np.ndarray) -> np.ndarray:
    """Each feature's largest distance from its class's mean over a split's training rows
    (S, D), from the rows less their class means (S, m, D); 1 where that is 0 (a constant
    feature). LDA's units: taken before any square, which could underflow (values near 1e-160)."""
    largest = np.abs(centred).max(axis=1)
    return np.where(largest > 0, largest, 1.0)


class LDA(LinearModel):
    """Normal discriminant analysis: Gaussians with one full covariance shared by the
    classes, epsilon added to its diagonal so that it is invertible at any m. The covariance
    is taken in units of each feature's own within-class spread (`spreads`), where epsilon is
    added: a ridge relative to each feature, so the classifier does not depend on a feature's
    units (epsilon on the covariance in the data's units swamps a feature measured in small
    ones, and is nothing to one measured in large ones)."""

    name = "lda"
    reference_coding = True

    def __init__(self, layout: FeatureLayout, epsilon: float = default(LDASpec, "epsilon")) -> None:
        super().__init__(layout)
        self.epsilon = checked(LDASpec, epsilon=epsilon)["epsilon"]

    def _fit_group(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray
    ) -> BatchFit:
        Zt, yt = Z[idx], y[idx].astype(float)
        n0, n1 = _class_counts(yt)
        mu0, mu1, centred = _class_means(Zt, yt, n0, n1)
        units = spreads(centred)  # (S, D)
        centred = centred / units[:, None, :]
        cov = np.einsum("smd,sme->sde", centred, centred) / Zt.shape[1]
        cov += self.epsilon * np.eye(Z.shape[1])
        gap = (mu1 - mu0) / units
        coef = self._solve(cov, gap[..., None], idx.shape[1])[..., 0] / units
        intercept = -0.5 * np.einsum("sd,sd->s", mu1 + mu0, coef) + portable.log(n1 / n0)
        return BatchFit(coef, intercept, np.zeros(idx.shape[0], dtype=bool))

    def _solve(self, cov: np.ndarray, gaps: np.ndarray, m: int) -> np.ndarray:
        """cov^-1 gaps for each split (gaps (S, D, k)); a user error where epsilon is too
        small to make a covariance invertible."""
        coef = portable.solve(cov, gaps)  # not LAPACK's: its bits depend on the CPU
        if not np.isfinite(coef).all():
            raise UserError(
                f"models: lda (epsilon {self.epsilon:g}): a training set of m={m} "
                "has a singular covariance (collinear or constant attributes); give lda a "
                "larger epsilon (default 1e-4)"
            )
        return coef


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


MODEL = ModelInfo(
    name="lda",
    spec=LDASpec,
    binary=LDA,
    multiclass=MultiLDA,
    family="generative",
    style=Style(":", "tab:green", "LDA (full covariance)", "LDA"),
    order=30,
    square=True,  # a width x width covariance, solved per split
)

__all__ = ["LDA", "MODEL", "LDASpec", "MultiLDA", "spreads"]
