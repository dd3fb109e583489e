"""Logistic regression, binary and K-class: maximum conditional likelihood, no penalty, by
batched Newton (IRLS); on linearly separable training sets, where the maximum does not exist,
a separating hyperplane drawn at random from the version space (the paper's choice), the
maximum-margin one, or a ridge fit, as configured.

This file is the model's entry in the registry, named like every model file by the model's
config name. Its solvers are the `logistic` package (binary: `logistic.binary`, whose
constructor reads the spec's defaults and so holds the spec; K classes: `logistic.softmax`;
the separable case: `logistic.separable`), which stays importable piece by piece: scoring and
planning read its kernels without loading the sampler.
"""

from __future__ import annotations

from genvdis.models.base import ModelInfo, Style
from genvdis.models.logistic.binary import TRAJECTORIES, LogisticRegression, LogisticRegressionSpec
from genvdis.models.logistic.softmax import MultiLogisticRegression

MODEL = ModelInfo(
    name="logistic_regression",
    spec=LogisticRegressionSpec,
    binary=LogisticRegression,
    multiclass=MultiLogisticRegression,
    family="discriminative",
    style=Style("--", "tab:red", "logistic regression", "LR"),
    order=20,
    square=True,  # a width x width Hessian, solved at every Newton step
    aliases={"separable": "separable"},
    asymptote=True,
)

__all__ = [
    "MODEL", "TRAJECTORIES", "LogisticRegression", "LogisticRegressionSpec",
    "MultiLogisticRegression",
]  # fmt: skip
