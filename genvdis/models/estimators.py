"""Classifiers named by import path (`models: - {name, estimator, params, encoding}`), fitted
and scored split by split on exactly the rows the built-in models of the run get.

A config is data, not code: importing a module runs its top-level code, so a config may only
name classes under `sklearn.` or under a prefix the user allows where configs cannot reach
(`--allow-import`, GENVDIS_ALLOW_IMPORTS). The path is checked before anything is imported.

Each split fits a fresh estimator on the training rows of the preprocessed design (one-hot
discrete attributes, or their integer codes with `encoding: ordinal`) and counts its wrong
predictions on the test rows, `predict(X) != y`, which holds for K classes as for two.
An estimator with a `random_state` parameter the entry leaves out gets one per split from the
split's own counter stream (`streams`, stream id `RANDOM_STATE_STREAM`), so a split's fit
depends on nothing else. Warnings raised while fitting or predicting are counted per split,
never printed: the counts are summed per (model, m) into summary.csv and reported once.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from genvdis._runtime import streams
from genvdis.errors import UserError
from genvdis.models.base import FeatureLayout, StrictSpec
from genvdis.models.registry import builtin_names

IMPORT_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$"
MODEL_NAME = r"^[A-Za-z][A-Za-z0-9_.-]*$"


class EstimatorSpec(StrictSpec):
    """Any classifier with fit/predict, named by import path (genvdis/models/estimators.py): fitted
    and scored per split on the same rows as the built-in models. `name` labels its rows."""

    name: str = Field(pattern=MODEL_NAME, max_length=50)
    estimator: str = Field(pattern=IMPORT_PATH, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict)
    encoding: Literal["onehot", "ordinal"] = "onehot"

    @field_validator("name", mode="after")
    @classmethod
    def _not_builtin(cls, name: str) -> str:
        if name in builtin_names():
            raise ValueError(f"'{name}' is a built-in model's name; call the estimator otherwise")
        return name

    @field_validator("params", mode="after")
    @classmethod
    def _seeded(cls, params: dict[str, Any]) -> dict[str, Any]:
        seed = params.get("random_state")
        if "random_state" in params and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError(
                "random_state must be an integer, or left out (genvdis then derives one per "
                "split); anything else would make the results irreproducible"
            )
        return params


ALWAYS_ALLOWED = "sklearn"
MODULE_NAME = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
ALLOW_ENV = "GENVDIS_ALLOW_IMPORTS"
# splits draw from stream 0, the built-in models from stream 1 (engine.run_block)
RANDOM_STATE_STREAM = 2
# the sample an entry's parameters are checked on (its own fit): both classes 10 times, enough
# for an estimator's own 5-fold cross-validation
SAMPLE_ROWS = 20


def allowed_prefixes(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """`sklearn`, the user's `--allow-import` prefixes, and those of GENVDIS_ALLOW_IMPORTS
    (comma-separated)."""
    from_env = [p.strip() for p in os.environ.get(ALLOW_ENV, "").split(",") if p.strip()]
    prefixes = [ALWAYS_ALLOWED]
    for source, values in (("--allow-import", extra), (ALLOW_ENV, from_env)):
        for prefix in values:
            name = prefix.strip().rstrip(".")
            if not re.fullmatch(MODULE_NAME, name):
                raise UserError(f"{source}: '{prefix}' is not a module name (like mypkg)")
            prefixes.append(name)
    return tuple(dict.fromkeys(prefixes))


def is_allowed(path: str, allowed: Iterable[str]) -> bool:
    """Whether the import path lies under an allowed prefix (whole names: `mypkg` allows
    `mypkg.Model` and `mypkg.sub.Model`, not `mypkgx.Model`)."""
    return any(path == p or path.startswith(p + ".") for p in allowed)


def _entry(spec: EstimatorSpec) -> str:
    return f"models: '{spec.name}' ({spec.estimator})"


def resolve(spec: EstimatorSpec, allowed: Iterable[str]) -> type:
    """The class an entry names, imported only if its path is allowed; checked to be a class
    with fit and predict, and not a scikit-learn estimator of another kind (a regressor)."""
    allowed = tuple(allowed)
    if not is_allowed(spec.estimator, allowed):
        raise UserError(
            f"{_entry(spec)}: import paths must start with {', '.join(p + '.' for p in allowed)}"
            f" (a config cannot run other code); to trust another package, pass "
            f"--allow-import PACKAGE or set {ALLOW_ENV}"
        )
    module_name, _, class_name = spec.estimator.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and (module_name + ".").startswith(error.name + "."):
            raise UserError(f"{_entry(spec)}: no module named '{error.name}'") from None
        raise UserError(f"{_entry(spec)}: importing {module_name} failed: {error}") from None
    except Exception as error:  # the module's own code failed
        raise UserError(f"{_entry(spec)}: importing {module_name} failed: {_line(error)}") from None
    found = getattr(module, class_name, None)
    if found is None:
        raise UserError(f"{_entry(spec)}: module {module_name} has no '{class_name}'")
    if not inspect.isclass(found):
        raise UserError(f"{_entry(spec)}: {class_name} is not a class")
    if not all(callable(getattr(found, method, None)) for method in ("fit", "predict")):
        raise UserError(f"{_entry(spec)}: not a classifier (it needs fit and predict methods)")
    kind = _estimator_type(found)
    if kind not in (None, "classifier"):
        kind = kind.replace("_", " ")  # outlier_detector, density_estimator
        article = "an" if kind[0] in "aeiou" else "a"
        raise UserError(f"{_entry(spec)}: {article} {kind}, not a classifier")
    return found


def _estimator_type(cls: type) -> str | None:
    """scikit-learn's kind of estimator (classifier, regressor, clusterer...), None if it
    does not say (not a scikit-learn estimator, or one that declares no kind)."""
    try:
        from sklearn.base import BaseEstimator
        from sklearn.utils import get_tags
    except ImportError:
        return None
    if not issubclass(cls, BaseEstimator):
        return None
    try:
        return get_tags(cls()).estimator_type
    except Exception:  # needs constructor arguments: the parameter check says so
        return None


def _line(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


@dataclass
class EstimatorModel:
    """One estimator entry, ready to run: its class and the parameters every split shares."""

    name: str
    estimator: type
    params: dict[str, Any]
    encoding: str
    layout: FeatureLayout
    seeded: bool = field(default=False)  # whether each split gets its own random_state

    def make(self, random_state: int) -> Any:
        """A fresh, unfitted estimator for one split."""
        if self.seeded:
            return self.estimator(**self.params, random_state=random_state)
        return self.estimator(**self.params)

    def design(self, onehot: np.ndarray) -> np.ndarray:
        """The input the entry asked for, from the run's one-hot design: as is, or with each
        discrete attribute's one-hot block replaced by its integer code."""
        if self.encoding == "onehot" or not self.layout.levels:
            return onehot
        start = self.layout.n_continuous
        columns = [onehot[:, :start]]
        for k in self.layout.levels:
            columns.append(np.argmax(onehot[:, start : start + k], axis=1)[:, None])
            start += k
        return np.hstack(columns).astype(float)


def _parameter_names(cls: type) -> set[str]:
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


def build(spec: EstimatorSpec, layout: FeatureLayout, allowed: Iterable[str]) -> EstimatorModel:
    """An entry checked as `genvdis validate` checks it, with what genvdis supplies: a
    per-split random_state, and under `encoding: ordinal` on discrete data, each attribute's
    number of levels as `min_categories` (counted on the whole dataset, as for naive_bayes).
    A categorical estimator (one with `min_categories`) under `encoding: ordinal` is refused
    on data with continuous attributes: it would read each rescaled value, truncated to an
    integer, as a category (scikit-learn then fails with an IndexError at the first test
    value no training row had, or counts meaningless categories)."""
    cls = resolve(spec, allowed)
    params = dict(spec.params)
    names = _parameter_names(cls)
    if spec.encoding == "ordinal" and "min_categories" in names:
        if layout.n_continuous:  # CategoricalNB: each value a category, truncated to int
            raise UserError(
                f"{_entry(spec)}: takes every column as categories (it has min_categories), "
                f"and this data has {layout.n_continuous} continuous attribute(s), whose values "
                "it would truncate to integers; set preprocessing: {continuous: discretize}, "
                "or choose discrete attributes (attributes:)"
            )
        if layout.levels and "min_categories" not in params:
            params["min_categories"] = list(layout.levels)
    check_params(spec, cls, params, layout)
    seeded = "random_state" in names and "random_state" not in params
    return EstimatorModel(spec.name, cls, params, spec.encoding, layout, seeded)


def build_models(
    specs: Iterable[Any], layout: FeatureLayout, allowed: Iterable[str] = (ALWAYS_ALLOWED,),
    n_classes: int = 2,
) -> list:  # fmt: skip
    """A config's `models`, in order: estimator entries built here, the built-in ones by the
    registry (`registry.build_model`)."""
    from genvdis.models.registry import build_model

    return [
        build(spec, layout, allowed)
        if isinstance(spec, EstimatorSpec)
        else build_model(spec, layout, n_classes)
        for spec in specs
    ]


def check_params(
    spec: EstimatorSpec, cls: type, params: dict[str, Any], layout: FeatureLayout | None = None
) -> None:
    """The parameters, checked through the estimator's public API only: `set_params(**params)`
    (an unknown name; without set_params, the constructor), then the estimator's own `fit` on
    a small sample shaped as the run's input (types and ranges: scikit-learn's checks them
    there first). Not scikit-learn's private `_validate_params`, which a user's class written
    from `BaseEstimator` alone cannot run (it has no `_parameter_constraints`)."""
    try:
        estimator = cls()
    except Exception as error:
        raise UserError(
            f"{_entry(spec)}: cannot be built without arguments ({_line(error)}); a config "
            "can give only plain parameters"
        ) from None
    layout = layout or FeatureLayout(0)
    given = params.get("min_categories")
    if not (layout.n_continuous or layout.levels) and isinstance(given, list):
        if all(isinstance(k, int) and k > 0 for k in given):  # per-column: a sample that wide
            layout = FeatureLayout(0, tuple(given))
    X, y = _sample(layout, spec.encoding)
    try:
        if callable(getattr(estimator, "set_params", None)):
            estimator.set_params(**params)
        else:
            estimator = cls(**params)
        with counting_warnings():
            estimator.fit(X, y)
    except Exception as error:
        raise UserError(f"{_entry(spec)}: params: {_line(error)}") from None


def _sample(layout: FeatureLayout, encoding: str) -> tuple[np.ndarray, np.ndarray]:
    """SAMPLE_ROWS rows of the input an entry gets (`EstimatorModel.design`): continuous
    columns in [0, 1], discrete ones as valid one-hot blocks or integer codes below their
    number of levels; two binary features where the data are not known yet (validate)."""
    rows = np.arange(SAMPLE_ROWS)
    y = rows % 2
    if not layout.n_continuous and not layout.levels:
        return np.column_stack([rows // 2 % 2, rows // 4 % 2]).astype(float), y
    continuous = [rows * (j + 3) % 7 / 6 for j in range(layout.n_continuous)]
    codes = [(rows // 2 + j) % k for j, k in enumerate(layout.levels)]
    X = np.column_stack(continuous + codes).astype(float)
    return (X, y) if encoding == "ordinal" else (layout.onehot(X), y)


def check_config(models: Iterable[Any], allow_imports: Iterable[str] = ()) -> None:
    """Every estimator entry of a config, checked without data: the allow-list, the class,
    its parameters (what `genvdis validate` and `run` check before any work)."""
    allowed = allowed_prefixes(allow_imports)
    layout = FeatureLayout(0)
    for spec in models:
        if isinstance(spec, EstimatorSpec):
            build(spec, layout, allowed)


def versions(models: Iterable[Any]) -> dict[str, str]:
    """The versions of the packages the estimator entries come from: they change the
    numbers, so they are part of the run's fingerprint. A package outside the installed
    ones (the user's own, or installed in editable mode) is edited without a new version, so
    its version is followed by a hash of its source (`_source_hash`): a rerun after an edit
    recomputes instead of keeping blocks the old code computed."""
    from importlib import metadata

    found = {}
    for spec in models:
        if isinstance(spec, EstimatorSpec):
            top = spec.estimator.split(".")[0]
            module = importlib.import_module(top)
            version = str(getattr(module, "__version__", None) or _dist_version(metadata, top))
            source = _source_hash(module)
            found[top] = f"{version}+source.{source}" if source else version
    return found


def _source_hash(module: Any) -> str | None:
    """sha256 (16 hex digits) of a module's Python source, every .py file of a package in
    path order, unless it is installed (under a site-packages folder or the standard
    library): None."""
    import hashlib
    import site
    import sysconfig

    where = getattr(module, "__file__", None)
    if not where:
        return None
    path = Path(where).resolve()
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib")}
    installed |= {*site.getsitepackages(), site.getusersitepackages()}
    if any(path.is_relative_to(Path(folder).resolve()) for folder in installed):
        return None
    files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(path.parent)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def _dist_version(metadata: Any, top: str) -> str:
    try:
        return metadata.version(top)
    except metadata.PackageNotFoundError:
        return "unknown"


# --- the per-split loop ------------------------------------------------------------------------

_CAPTURE = threading.Lock()


class _Counter:
    count = 0


@contextmanager
def counting_warnings() -> Iterator[_Counter]:
    """Count the warnings this thread raises, showing none of them. The warnings machinery is
    process-wide, so capture is one thread at a time (other threads' warnings still show);
    every warning counts, even a repeat that the default filter would show only once."""
    counter, owner = _Counter(), threading.get_ident()
    with _CAPTURE, warnings.catch_warnings():
        shown = warnings.showwarning
        warnings.simplefilter("always")

        def show(message, category, filename, lineno, file=None, line=None):
            if threading.get_ident() == owner:
                counter.count += 1
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield counter


def random_states(seed: int, m: int, block: range) -> list[int]:
    """Each split's random_state: 32 bits of its key in its own stream (scikit-learn takes
    seeds below 2^32)."""
    keys = streams.stream_keys(seed, m, block, stream=RANDOM_STATE_STREAM)
    return [int(key >> np.uint64(32)) for key in keys]


def score_block(
    model: EstimatorModel,
    onehot: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    test_mask: np.ndarray | None,
    seed: int,
    block: range,
) -> tuple[np.ndarray, np.ndarray]:
    """(errors, warnings) of the entry on each split of the block: split s trains on rows
    train[s] and tests on the rows test_mask[s] marks (None: every other row)."""
    X, m = model.design(onehot), train.shape[1]
    errors = np.zeros(len(block), dtype=np.int64)
    warned = np.zeros(len(block), dtype=np.int64)
    states = random_states(seed, m, block) if model.seeded else [0] * len(block)
    test = np.ones(len(y), dtype=bool)
    labels = np.unique(y)
    finite = bool(np.isfinite(X).all())
    with counting_warnings() as counter, ExitStack() as checked:
        for s, split in enumerate(block):
            if s == 1:
                checked.enter_context(checked_once(finite))
            if test_mask is None:
                test[:] = True
                test[train[s]] = False
            else:
                test = test_mask[s]
            before = counter.count
            errors[s] = _fit_and_count(model, states[s], X, y, labels, train[s], test, m, split)
            warned[s] = counter.count - before
    return errors, warned


def checked_once(finite: bool) -> AbstractContextManager:
    """scikit-learn's checks whose answer the block's first split already gave, skipped for
    the others (its per-call checks cost more than fitting a small problem): the parameters,
    the same on every split but for random_state, an integer from the stream; and, when the
    design `finite` (every value checked once here), the finiteness of its rows. A design
    with NaN or inf keeps the checks on every split, so it fails loudly, never scores. Only
    if scikit-learn is imported: an estimator of another package runs as it is."""
    sklearn = sys.modules.get("sklearn")
    if sklearn is None:
        return nullcontext()
    return sklearn.config_context(
        skip_parameter_validation=True, assume_finite=True if finite else None
    )


def _fit_and_count(model, random_state, X, y, labels, rows, test, m, split) -> int:
    """One split's wrong predictions; an estimator that fails stops the run, naming it, and so
    does one whose predictions are not class codes (`labels`, the codes fit is given): a string,
    a -1, a score or a probability would be counted wrong on every row, never equal."""
    where = f"models: '{model.name}' failed at m={m}, split {split}"
    try:
        estimator = model.make(random_state)
        estimator.fit(X[rows], y[rows])
        predicted = np.asarray(estimator.predict(X[test]))
    except Exception as error:
        raise UserError(f"{where}: {_line(error)}") from None
    truth = y[test]
    if predicted.shape != truth.shape:
        raise UserError(
            f"{where}: predict gave an array of shape {predicted.shape} for {truth.size} rows"
        )
    known = np.isin(predicted, labels)
    if not known.all():
        value = predicted[~known][0]
        value = value.item() if isinstance(value, np.generic) else value
        codes = ", ".join(str(label) for label in labels)
        raise UserError(
            f"{where}: predict gave {value!r}, not one of the class codes fit was given "
            f"({codes}): it must return labels as fit got them, not strings, scores or "
            "probabilities"
        )
    return int(np.count_nonzero(predicted != truth))


def warning_lines(summary: Any) -> list[str]:
    """One line per model whose estimator warned, from summary.csv's `warnings` column."""
    if "warnings" not in summary:
        return []
    lines = []
    for name, rows in summary.groupby("model", sort=False):
        warned = rows[rows["warnings"] > 0]
        if warned.empty:
            continue
        counts = zip(warned["m"], warned["warnings"], strict=True)
        per_m = ", ".join(f"{m}: {int(w)}" for m, w in counts)
        lines.append(
            f"{name}: the estimator raised {int(warned['warnings'].sum())} warning(s) in "
            f"{int(rows['n_splits'].sum())} fits (per m: {per_m}); summary.csv's warnings "
            "column has the counts"
        )
    return lines
