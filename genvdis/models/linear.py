"""What every model is: a linear classifier fitted on many training splits at once.

A model predicts positive where a log-odds `Z @ coef + intercept` is > 0, with Z the data in
one-hot form. So every model fits as a batch: given the encoded data Z (n, D), labels y and S
training index sets idx (S, m), `fit_batch` returns S coefficient vectors at once (a
`BatchFit`), by matrix products and batched solves. The usual `fit` / `predict` /
`decision_function` are the batch of one, so each model can be checked against scikit-learn on
its own. The models themselves are in `models` (naive Bayes, LDA, the registry) and
`logistic` (logistic regression).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from genvdis._runtime import streams
from genvdis.data.preprocessing import FeatureLayout
from genvdis.models.logistic._layouts import group_size


def default(spec: type, name: str) -> Any:
    """A model parameter's default, from the config's spec of the model (`genvdis.config.sections`):
    one table of defaults and bounds for configs and constructors alike."""
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
