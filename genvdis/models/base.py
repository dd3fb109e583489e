"""What every built-in model is, and what the registry knows of each one.

- `StrictModel` / `StrictSpec`: the strict pydantic base of every config section, and of a
  model's config spec (the table of its parameters' defaults and bounds, for configs and
  constructors alike).
- `FeatureLayout`: which columns of the data are continuous and how many levels each
  discrete one has: what a model's encoding and sufficient statistics read.
- `LinearModel` / `MultiModel`: a linear classifier fitted on many training splits at once
  (binary log-odds, or one score per class for K classes), with scikit-learn's fit / predict /
  decision_function as the batch of one.
- `ModelInfo`: one built-in model's descriptor (its spec, its binary and K-class classes, its
  family, cost, figure style and the settings it reads), which `registry` finds in each model
  file: every list of models the package keeps is derived from these.

A model predicts positive where a log-odds `Z @ coef + intercept` is > 0, with Z the data in
one-hot form. So every model fits as a batch: given the encoded data Z (n, D), labels y and S
training index sets idx (S, m), `fit_batch` returns S coefficient vectors at once (a
`BatchFit`), by matrix products and batched solves. The usual `fit` / `predict` /
`decision_function` are the batch of one, so each model can be checked against scikit-learn on
its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from genvdis._runtime import streams
from genvdis.errors import UserError
from genvdis.models.logistic._layouts import group_size

ENCODINGS = ("drop_first", "drop_last", "full")


class StrictModel(BaseModel):
    """Every config section, a model's spec included: unknown keys are errors, values are
    frozen once validated, and types are strict (`splits: true` is not 1, `seed: 2.0` is not
    2)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class StrictSpec(StrictModel):
    """A `models:` entry's spec: the table of a model's parameters, their defaults and
    bounds, for configs and the model's constructor alike (`default`, `checked`)."""

    def ignored(self, layout: FeatureLayout | None = None) -> dict[str, str]:
        """The parameters this spec's model does not read, each with why: under its other
        settings, and, given the data's `layout`, on those data. A run warns of those set
        away from their default (`ExperimentConfig.unused_settings`); a sweep's design key
        leaves them out (`sweeps.design_key`). Default: it reads them all."""
        return {}


@dataclass(frozen=True)
class FeatureLayout:
    """Which columns of X are continuous (first), how many values each discrete one has, and
    which level of each the reference coding drops (`encoding`, one of ENCODINGS)."""

    n_continuous: int
    levels: tuple[int, ...] = ()
    encoding: str = "drop_first"

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}")

    @property
    def n_discrete(self) -> int:
        return len(self.levels)

    def reference_columns(self) -> np.ndarray:
        """Where each column of the reference coding sits in the full one-hot coding: the
        continuous columns, then each attribute's levels but the dropped one (the first, the
        last, or none for `full`). Logistic regression's maximum-likelihood predictions do not
        depend on which is dropped; the uniform law on separating hyperplanes does
        (docs/separable.md)."""
        columns, offset = list(range(self.n_continuous)), self.n_continuous
        first, last = {"drop_first": (1, 0), "drop_last": (0, 1), "full": (0, 0)}[self.encoding]
        for k in self.levels:
            columns += range(offset + first, offset + k - last)
            offset += k
        return np.array(columns, dtype=np.int64)

    def onehot(self, X: np.ndarray, reference: bool = False) -> np.ndarray:
        """[continuous | one-hot of each discrete column]; `reference` keeps only the reference
        coding's columns (`reference_columns`), which makes logistic regression identifiable
        unless the encoding is `full`."""
        X = np.asarray(X, dtype=float)
        parts = [X[:, : self.n_continuous]]
        for j, k in enumerate(self.levels):
            codes = X[:, self.n_continuous + j].astype(np.int64)
            block = np.zeros((X.shape[0], k))
            block[np.arange(X.shape[0]), codes] = 1.0
            parts.append(block)
        full = np.hstack(parts) if parts else np.zeros((X.shape[0], 0))
        # row-major as the data are: fancy indexing alone gives a column-major copy, on which
        # the models' sums round differently
        return np.ascontiguousarray(full[:, self.reference_columns()]) if reference else full


def default(spec: type, name: str) -> Any:
    """A model parameter's default, from the model's spec (its `StrictSpec`, in its model
    file): one table of defaults and bounds for configs and constructors alike."""
    return spec.model_fields[name].default


def checked(spec: type, **params: Any) -> dict[str, Any]:
    """A constructor's parameters checked against the same spec (scikit-learn's
    `_parameter_constraints`, here the config's own fields); a ValueError names the one
    that fails."""
    from pydantic import ValidationError

    plain = {k: v.item() if isinstance(v, np.generic) else v for k, v in params.items()}
    try:
        return spec(**plain).model_dump(exclude={"name"})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from None


@dataclass
class BatchFit:
    """S fitted linear classifiers: log-odds = Z @ coef[s] + intercept[s]; `trajectories`[s]:
    how many sampler trajectories drew split s's hyperplane (0 where none did); `ties`[s]: a
    decision value within ties[s] of 0 is an exact tie, decided as 0 (negative; K classes: a
    score within ties[s] of the top one ties it, and the lowest class wins). A model whose
    log-odds can be exactly 0 in exact arithmetic (discrete naive Bayes) sets it to a bound on
    its rounding; default 0: a value decided as computed (exactly 0 is already a tie)."""

    coef: np.ndarray
    intercept: np.ndarray
    separable: np.ndarray
    trajectories: np.ndarray | None = None
    ties: np.ndarray | None = None

    FIELDS = ("coef", "intercept", "separable", "trajectories", "ties")

    def __post_init__(self) -> None:
        if self.trajectories is None:
            self.trajectories = np.zeros(len(self.separable), dtype=np.int64)
        if self.ties is None:
            self.ties = np.zeros(len(self.separable))


class LinearModel:
    """fit / predict / decision_function on top of `fit_batch`, the way scikit-learn reads."""

    name = "linear"
    reference_coding = False
    # the key under which the engine keeps what `shared(Z, y)` builds for every batch of a run
    # (`EncodedData.derived`) and passes to `fit_batch(..., shared=...)`; None: nothing shared
    shares: str | None = None

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
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, keys: np.ndarray | None = None,
        *, shared: object = None,
    ) -> BatchFit:  # fmt: skip
        """Fit S classifiers, on training rows idx[s]; keys[s] is split s's own random stream
        (`streams`), for models that draw at random. A model that `shares` gets `shared`
        (`self.shared(Z, y)` where the caller keeps it for the run, else None) in every
        group's `_fit_group(..., shared=...)`.

        Splits are fitted in groups whose training tensor (splits x m x D) fits in cache:
        the work is memory-bound, and out of cache it runs several times slower. Splits are
        independent, so the grouping changes no result."""
        if keys is None:
            keys = np.zeros(idx.shape[0], dtype=np.uint64)
        common = {} if self.shares is None else {"shared": shared}
        return self._in_groups(Z, y, idx, keys, size=self._group_size(Z, idx), **common)

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
        """Splits per group: as many as keep the gathered training tensor (with an intercept
        column) in cache."""
        return group_size(idx.shape[1], Z.shape[1] + 1)

    def fit(self, X: np.ndarray, y: np.ndarray, random_state: int = 0) -> LinearModel:
        y = np.asarray(y, dtype=np.int64)
        if set(np.unique(y)) != {0, 1}:
            raise ValueError("y must hold both classes, coded 0 and 1")
        idx = np.arange(len(y))[None, :]
        keys = streams.stream_keys(random_state, len(y), [0], stream=1)
        fit = self.fit_batch(self.encode(X), y, idx, keys)
        self.coef_, self.intercept_ = fit.coef[0], float(fit.intercept[0])
        self.separable_, self.ties_ = bool(fit.separable[0]), float(fit.ties[0])
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return self.encode(X) @ self.coef_ + self.intercept_

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Positive where the log-odds is > 0; within `ties_` of 0 it is a tie (`BatchFit`),
        predicted negative."""
        return (self.decision_function(X) > self.ties_).astype(np.int64)


def n_classes(y: np.ndarray) -> int:
    """K, for labels coded 0..K-1."""
    return int(np.max(y)) + 1


class MultiModel(LinearModel):
    """fit / predict / decision_function for K-class scores, on top of `fit_batch`: labels coded
    0..K-1, one score per class, reference-coded (class 0's is 0, class c's its log-odds against
    class 0), so that for K = 2 a model gives its binary log-odds by the same formulas. Ties:
    the lowest class wins; a score within `BatchFit.ties` of the top one ties it."""

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

    def check_classes(self, n_classes: int) -> None:
        """Refuse, before any work, a target of n_classes classes that these settings have no
        K-class form for (a ValueError or `UserError` naming the setting); default: none."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        scores = self.decision_function(X)
        # ties (a score within ties_ of the largest, `BatchFit`): the lowest class
        return np.argmax(scores >= scores.max(axis=1, keepdims=True) - self.ties_, axis=1)


Family = Literal["generative", "discriminative", "baseline"]


@dataclass(frozen=True)
class Style:
    """How figures and the explorer draw a model: matplotlib's line style and Tableau colour
    name, the legend's label, and the short label of a difference (\"NB - LR\")."""

    linestyle: Any
    color: str
    label: str
    short: str

    def line(self) -> dict[str, Any]:
        """matplotlib's keyword arguments for the model's line."""
        return {"linestyle": self.linestyle, "color": self.color, "label": self.label}


@dataclass(frozen=True)
class ModelInfo:
    """One built-in model, as a model file declares it (a module-level `MODEL`), found by
    `registry`: the one place the rest of the package learns of a model from.

    - name: the config's name for it (`models: [name]`), the rows' `model` column;
    - spec: its config spec (a `StrictSpec` whose `name` is the literal `name`), the table of
      its parameters' defaults and bounds;
    - binary / multiclass: its classes for two classes and for K > 2 (None: binary only);
    - family: generative (a model of p(x, y)), discriminative (of p(y | x)) or baseline: the
      analysis pairs a generative with a discriminative model (`analysis.differences`);
    - square: whether each fit solves a width x width system (a Hessian, a covariance), which
      the run's cost and memory estimate and its width bound read (`planning`);
    - style: its line in the figures and the explorer;
    - aliases: a sweep's short names for its parameters (`variants.ALIASES`), short -> field;
    - asymptote: whether its asymptotic error on the synthetic families is known, so that a
      theory config may name it (`config.theory`, `analysis.theory`);
    - order: its place in every list of models (help, messages, styles): the paper's models
      first, then by the order models were added.
    """

    name: str
    spec: type[StrictSpec]
    binary: type[LinearModel]
    multiclass: type[MultiModel] | None
    family: Family
    style: Style
    order: int
    square: bool = False
    aliases: Mapping[str, str] = field(default_factory=dict)
    asymptote: bool = False

    def build(
        self, params: Mapping[str, Any], layout: FeatureLayout, n_classes: int = 2
    ) -> LinearModel:
        """The model with these parameters (validated once, by its constructor) for a target
        of n_classes classes; refused, before any work, where it has no form for them."""
        if n_classes == 2:
            return self.binary(layout, **params)
        if self.multiclass is None:
            raise UserError(
                f"models: {self.name} is for binary targets only (this one has {n_classes} classes)"
            )
        model = self.multiclass(layout, **params)
        model.check_classes(n_classes)
        return model


__all__ = [
    "ENCODINGS", "BatchFit", "FeatureLayout", "LinearModel", "ModelInfo", "MultiModel",
    "StrictModel", "StrictSpec", "Style", "checked", "default", "n_classes",
]  # fmt: skip
