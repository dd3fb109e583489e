"""The built-in models, found in their files: a model is one module `genvdis/models/<name>.py`
whose module-level `MODEL` is its `base.ModelInfo`. Nothing else lists them: the config's
spec union, the analysis' families, the planner's cost model, the figures' styles and the
sweeps' aliases are all derived from `builtin_models()`, so adding a model file needs no edit
anywhere else in the package (docs/adding-a-model.md).

Order: by each descriptor's `order` (the paper's naive Bayes and logistic regression first,
then LDA, then later models), then by name: the order of every list of models and of every
message that names them, fixed whatever order the files are found in.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from typing import Any

import genvdis.models
from genvdis.errors import UserError
from genvdis.models.base import FeatureLayout, LinearModel, ModelInfo

# modules of genvdis.models that are no model file: the shared base, this registry, and the
# estimator entries (classes named by import path in a config, a separate kind of model that
# reads the config, so importing it from here would be a cycle)
NOT_MODELS = frozenset({"base", "registry", "estimators"})


_finding: list[bool] = []  # not empty while the model files are being imported


@cache
def builtin_models() -> tuple[ModelInfo, ...]:
    """Every built-in model's descriptor, in the registry's order (see the module). A model
    file's import that asks for them (at import time) would see a partial list: refused."""
    if _finding:
        raise RuntimeError("a model file's import asked for the models while they are found")
    _finding.append(True)
    try:
        return _find()
    finally:
        _finding.clear()


def _find() -> tuple[ModelInfo, ...]:
    found = []
    for module in pkgutil.iter_modules(genvdis.models.__path__):
        if module.ispkg or module.name.startswith("_") or module.name in NOT_MODELS:
            continue
        info = getattr(importlib.import_module(f"genvdis.models.{module.name}"), "MODEL", None)
        if not isinstance(info, ModelInfo):
            continue
        if info.name != module.name:
            raise RuntimeError(f"genvdis/models/{module.name}.py declares model '{info.name}'")
        found.append(info)
    return tuple(sorted(found, key=lambda info: (info.order, info.name)))


def builtin_names() -> tuple[str, ...]:
    """The built-in models' config names, in the registry's order."""
    return tuple(info.name for info in builtin_models())


def model_info(name: str) -> ModelInfo | None:
    """The built-in model of that name; None for any other (an estimator entry's name)."""
    return next((info for info in builtin_models() if info.name == name), None)


def family(name: str) -> tuple[str, ...]:
    """The names of the built-in models of a family (generative, discriminative, baseline)."""
    return tuple(info.name for info in builtin_models() if info.family == name)


def build_model(spec: Any, layout: FeatureLayout, n_classes: int = 2) -> LinearModel:
    """The model a config's built-in `models` entry names, with its parameters (validated
    once, by the constructor), for a target of n_classes classes."""
    info = model_info(spec.name)
    if info is None:
        raise UserError(f"models: '{spec.name}' is not a built-in model")
    params: Mapping[str, Any] = spec.model_dump(exclude={"name"})
    return info.build(params, layout, n_classes)


__all__ = ["NOT_MODELS", "build_model", "builtin_models", "builtin_names", "family", "model_info"]
