"""The sections of a config, each a strict pydantic model: where the data come from, how its
labels become classes, the preprocessing, the models (built-in or estimator entries) and the
grid of training-set sizes. `genvdis.config.experiment` puts them together into the configs users
write
(and is where they are imported from); this module holds no file I/O.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from genvdis.models.base import StrictModel
from genvdis.models.estimators import EstimatorSpec
from genvdis.models.registry import builtin_models, builtin_names

# Seeds are hashed as signed 64-bit integers (genvdis._runtime.streams).
MAX_SEED = 2**63 - 1
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


def dump_without_unset(model: BaseModel, handler: Any, *keys: str) -> dict[str, Any]:
    """A section's dump without the optional `keys` left unset: a config that does not use
    them has no trace of them in its resolved config, so its fingerprint and results do not
    depend on keys it never set (for `model_serializer(mode="wrap")`)."""
    data = handler(model)
    for key in keys:
        if getattr(model, key) is None:
            data.pop(key, None)
    return data


# --- dataset sources -------------------------------------------------------------------------


class FileDataset(StrictModel):
    """A user's own table: a local CSV/TSV file, or a URL pinned by its sha256."""

    path: str | None = None
    url: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    target: str = Field(description="name (or 0-based index, if header is false) of the label")
    sep: str | None = Field(default=None, description="default: ',' or tab by file extension")
    header: bool = True
    kinds: dict[str, Literal["continuous", "discrete"]] = Field(default_factory=dict)
    missing_values: list[str] = Field(default_factory=lambda: ["?", "", "NA", "nan"])

    @property
    def relative_path(self) -> str | None:
        """The path, when it is read from the config's folder (relative)."""
        return self.path if self.path and not PurePath(self.path).is_absolute() else None

    @model_validator(mode="after")
    def _one_source(self) -> FileDataset:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of 'path' or 'url'")
        if self.url is not None and self.sha256 is None:
            raise ValueError("a 'url' needs its 'sha256'")
        return self


class SyntheticDataset(StrictModel):
    """Data drawn from a known distribution, so each model's asymptotic error is known
    (see genvdis/data/synthetic.py and docs/theory.md)."""

    kind: Literal["binary", "gaussian"]
    n_features: int = Field(ge=1)
    informative: float = Field(default=0.5, gt=0, le=1, description="fraction of features")
    n_rows: int = Field(default=20000, ge=10)
    effect: float = Field(
        default=0.5, gt=0, description="binary: p1 - p0 (< 1); gaussian: mean gap in sd units"
    )
    seed: Seed = 0

    @model_validator(mode="after")
    def _binary_effect(self) -> SyntheticDataset:
        if self.kind == "binary" and self.effect >= 1:
            raise ValueError("a binary effect is p1 - p0 and must be < 1")
        return self


class SyntheticSource(StrictModel):
    synthetic: SyntheticDataset


class SklearnSource(StrictModel):
    """One of scikit-learn's bundled datasets, `sklearn.datasets.<load_*>()`: no download
    (checked after the fields, so the error names `dataset`, not `dataset.sklearn`)."""

    sklearn: str

    @model_validator(mode="after")
    def _bundled(self) -> SklearnSource:
        bundled_loader(self.sklearn)
        return self


def bundled_loader(name: str) -> str:
    """A `dataset: {sklearn: ...}` name: a bundled loader (load_*), never a download."""
    if name.startswith("fetch_"):
        raise ValueError(
            f"sklearn.datasets.{name} downloads from the network; only scikit-learn's bundled "
            "datasets (load_*, e.g. load_breast_cancer) need none: for others download the "
            "file and give its path"
        )
    if not re.fullmatch(r"load_[a-z0-9_]+", name):
        raise ValueError(
            f"'{name}' is not a sklearn.datasets loader: give a load_* function's name, e.g. "
            "load_breast_cancer"
        )
    return name


class OpenMLDataset(StrictModel):
    """A dataset on OpenML (fetched by scikit-learn's `fetch_openml`, cached in the data
    folder): by data id, which names one version of one dataset, or by name with its
    version, since a name alone would resolve to whichever version is active on the day
    of the run. `target` defaults to OpenML's default target attribute."""

    openml: int | str = Field(description="OpenML data id, or the dataset's name")
    version: int | None = Field(default=None, ge=1, description="needed with a name")
    target: str | None = Field(default=None, description="default: OpenML's default target")

    @field_validator("openml")
    @classmethod
    def _id_or_name(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"an OpenML data id is a whole number from 1, not {value}")
        if isinstance(value, str) and not value.strip():
            raise ValueError("give an OpenML data id (a whole number) or a dataset's name")
        return value

    @model_validator(mode="after")
    def _name_has_version(self) -> OpenMLDataset:
        if isinstance(self.openml, str) and self.version is None:
            raise ValueError(
                f"an OpenML dataset named by name ('{self.openml}') needs its version, "
                "version: <n> (OpenML keeps several under one name, and which one is active "
                "changes), or give its data id instead, openml: <id>"
            )
        return self

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: Any) -> dict[str, Any]:
        return dump_without_unset(self, handler, "version", "target")


def _dataset_kind(value: Any) -> str:
    """Which source a `dataset` value is: a name, `synthetic:`, `sklearn:` or `openml:` by its
    key, else a file. An error then names a field of that source (`dataset.sha256` for a url without
    it), never a key of another source the YAML does not have (`dataset.synthetic`)."""
    if isinstance(value, dict):
        return next((key for key in ("synthetic", "sklearn", "openml") if key in value), "file")
    kinds = {
        FileDataset: "file",
        SyntheticSource: "synthetic",
        SklearnSource: "sklearn",
        OpenMLDataset: "openml",
    }
    return kinds.get(type(value), "name")


DatasetSpec = Annotated[
    Annotated[str, Tag("name")]
    | Annotated[FileDataset, Tag("file")]
    | Annotated[SyntheticSource, Tag("synthetic")]
    | Annotated[SklearnSource, Tag("sklearn")]
    | Annotated[OpenMLDataset, Tag("openml")],
    Discriminator(_dataset_kind),
]


# --- target, preprocessing ------------------------------------------------------------------


class Threshold(StrictModel):
    op: Literal[">", ">=", "<", "<="] = ">"
    value: float | Literal["median", "mean"] = "median"


class TargetSpec(StrictModel):
    """How the dataset's labels become the two classes (positive = 1, negative = 0), or with
    `classes` K classes coded 0..K-1 (`preprocessing.make_labels` says in which order)."""

    column: str | None = None
    positive: list[str] | None = None
    negative: list[str] | None = None
    threshold: Threshold | None = None
    classes: Literal["all"] | list[list[str]] | None = None

    @field_validator("positive", "negative", mode="before")
    @classmethod
    def _as_strings(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            value = [value]
        if not value:
            raise ValueError("give at least one label")
        return [str(v) for v in value]

    @field_validator("classes", mode="before")
    @classmethod
    def _as_groups(cls, value: Any) -> Any:
        """A list of class groups, each a label or a list of labels (compared as text)."""
        if not isinstance(value, list):
            return value
        groups = [[str(v) for v in g] if isinstance(g, list) else [str(g)] for g in value]
        if len(groups) < 2 or not all(groups):
            raise ValueError("'classes' lists at least two classes, each at least one label")
        labels = [label for group in groups for label in group]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(f"label '{twice[0]}' is in more than one class")
        # a class is named by its labels joined by '+' (config.yaml's class_counts)
        names = ["+".join(group) for group in groups]
        same = [name for name in names if names.count(name) > 1]
        if same:
            raise ValueError(
                f"two classes would both be named '{same[0]}' (a group's labels joined by "
                "'+'); relabel one of them in the data"
            )
        return groups

    @model_validator(mode="after")
    def _one_rule(self) -> TargetSpec:
        rules = [self.positive, self.threshold, self.classes]
        if sum(rule is not None for rule in rules) != 1:
            raise ValueError("give exactly one of 'positive' (labels), 'threshold' or 'classes'")
        if self.negative is not None and self.positive is None:
            raise ValueError("'negative' goes with 'positive', not with 'threshold' or 'classes'")
        if self.positive and self.negative and set(self.positive) & set(self.negative):
            raise ValueError("a label cannot be both positive and negative")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_classes(self, handler: Any) -> dict[str, Any]:
        """A two-class target's dump has no `classes` key, so it adds nothing to the
        resolved config and fingerprint of a config that does not use it."""
        return dump_without_unset(self, handler, "classes")


class Preprocessing(StrictModel):
    continuous: Literal["rescale", "discretize", "none"] = "rescale"
    bins: int = Field(default=5, ge=2, le=100)
    strategy: Literal["quantile", "uniform"] = "quantile"
    # which level of each discrete attribute reference-coded models (logistic regression, LDA)
    # drop: the uniform law on separating hyperplanes depends on it (docs/separable.md)
    encoding: Literal["drop_first", "drop_last", "full"] = "drop_first"

    def unused(self) -> list[str]:
        """`bins` and `strategy` set away from their default without `continuous: discretize`,
        the one setting that reads them, each as '<key>: <why>'."""
        if self.continuous == "discretize":
            return []
        return [
            f"{key}: {getattr(self, key)} acts only under continuous: discretize"
            for key in ("bins", "strategy")
            if getattr(self, key) != type(self).model_fields[key].default
        ]


# --- models ----------------------------------------------------------------------------------


# The built-in models' specs live in their model files (`genvdis.models`, found by its
# registry).
BUILTIN_MODELS = builtin_names()


# A dotted import path (module.Class); which ones may be imported is genvdis/models/estimators.py's
# allow-list, checked before anything is imported.
class UnknownModel(StrictModel):
    """A `models` entry that is neither a built-in model nor an estimator: always an error,
    one that names the entry."""

    @model_validator(mode="before")
    @classmethod
    def _refuse(cls, entry: Any) -> Any:
        name = entry.get("name") if isinstance(entry, dict) else entry
        what = f"'{name}' is not a built-in model" if name else "no model named"
        raise ValueError(
            f"{what} ({', '.join(BUILTIN_MODELS)}); an estimator entry is "
            "{name: ..., estimator: <import path>}"
        )


def _model_kind(entry: Any) -> str:
    """Which schema a `models` entry follows: an estimator's if it names one, else its name's."""
    if isinstance(entry, EstimatorSpec) or (isinstance(entry, dict) and "estimator" in entry):
        return "estimator"
    name = entry.get("name") if isinstance(entry, dict) else getattr(entry, "name", None)
    return name if name in BUILTIN_MODELS else "unknown"


# one tagged member per built-in model (its spec, tagged by its name), then the estimator
# entries and the refusal of any other name
ModelSpec = Annotated[
    Union[  # noqa: UP007 (a union built from the registry: `|` needs the members written out)
        tuple(
            [Annotated[info.spec, Tag(info.name)] for info in builtin_models()]
            + [Annotated[EstimatorSpec, Tag("estimator")], Annotated[UnknownModel, Tag("unknown")]]
        )
    ],
    Discriminator(_model_kind),
]


def _names_to_dicts(value: Any) -> Any:
    """`models: [naive_bayes, ...]` is shorthand for `[{name: naive_bayes}, ...]`."""
    if isinstance(value, list):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    return value


def _unique_models(value: list) -> list:
    names = [m.name for m in value]
    if len(set(names)) != len(names):
        raise ValueError(f"each model may appear once, got {names}")
    return value


ModelList = Annotated[
    list[ModelSpec], BeforeValidator(_names_to_dicts), AfterValidator(_unique_models)
]


# --- sizes -----------------------------------------------------------------------------------


class SizeRange(StrictModel):
    start: int = Field(ge=2)
    stop: int = Field(ge=2)
    num: int = Field(ge=1, le=200)
    spacing: Literal["log", "linear"] = "log"

    def values(self) -> list[int]:
        if self.stop < self.start:
            raise ValueError("'stop' must be >= 'start'")
        if self.num == 1 and self.stop != self.start:  # the range would be 'start' alone
            raise ValueError("'num: 1' gives 'start' alone, not 'stop': give num >= 2")
        space = np.geomspace if self.spacing == "log" else np.linspace
        return sorted({int(round(v)) for v in space(self.start, self.stop, self.num)})
