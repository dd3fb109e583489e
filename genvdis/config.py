"""Experiment configs: YAML in, one validated `ExperimentConfig` out.

Validation happens once, here, with pydantic: unknown keys are errors, and every error names
the config file and the field, so the CLI can print it on one line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from genvdis.errors import UserError
from genvdis.yamlfile import read_yaml

Model = TypeVar("Model", bound=BaseModel)
Config = TypeVar("Config", bound="RunConfig")

# Seeds are hashed as signed 64-bit integers (genvdis.streams).
MAX_SEED = 2**63 - 1
# Bootstrap resamples (report --boot, a theory config's boot): fewer than 10 make no 95%
# interval; past 10x the default (1000) more add only memory (resamples x splits weights).
MIN_BOOT, MAX_BOOT = 10, 10_000
# A run's name is a folder under --out, and `<name>.png` a file in it: a plain name (nothing
# outside --out), well under the 255 bytes a file name may have.
NAME_PATTERN, MAX_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", 100
# Files genvdis writes at the top of a results folder, beside the run folders (compared
# ignoring case, as macOS and Windows file systems do).
RESULTS_FILES = ("REPORT.md", "REPORT.html", "analysis.csv", "figure1.png", "figure1.pdf")
RESULTS_FILES += ("sensitivity.csv",)
# A config's `variants:` block is for `genvdis sweep` (genvdis/variants.py); `run` runs the
# config itself, the sweep's baseline.
VARIANTS_KEY = "variants"


class StrictModel(BaseModel):
    """Every config section: unknown keys are errors, values are frozen once validated, and
    types are strict (`splits: true` is not 1, `seed: 2.0` is not 2)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _not_a_results_file(name: str) -> str:
    if name.lower() in {f.lower() for f in RESULTS_FILES}:
        raise ValueError(
            f"'{name}' is a file genvdis writes in the results folder "
            f"({', '.join(RESULTS_FILES)}); choose another name"
        )
    return name


def drawable_title(title: str | None) -> str | None:
    """A title with math (text between $ signs) must parse as matplotlib mathtext: checked
    here, so a bad one stops the run before any work, not the plot after it."""
    if title is None or "$" not in title:
        return title
    from matplotlib import cbook
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    if not cbook.is_math_text(title):
        return title
    try:
        MathTextParser("path").parse(title, dpi=72, prop=FontProperties())
    except ValueError as error:
        problem = str(error).strip().splitlines()[-1].split(": ", 1)[-1]
        raise ValueError(
            f"the math between $ signs is not valid matplotlib mathtext: {problem} "
            r"(write \$ for a dollar sign)"
        ) from None
    return title


RunName = Annotated[
    str,
    Field(pattern=NAME_PATTERN, max_length=MAX_NAME),
    AfterValidator(_not_a_results_file),
]
Title = Annotated[str | None, AfterValidator(drawable_title)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


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

    @model_validator(mode="after")
    def _one_source(self) -> FileDataset:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of 'path' or 'url'")
        if self.url is not None and self.sha256 is None:
            raise ValueError("a 'url' needs its 'sha256'")
        return self


class SyntheticDataset(StrictModel):
    """Data drawn from a known distribution, so each model's asymptotic error is known
    (see genvdis/synthetic.py and docs/theory.md)."""

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
    (checked in `ExperimentConfig`, so the error names `dataset`)."""

    sklearn: str


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


DatasetSpec = str | FileDataset | SyntheticSource | SklearnSource


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
    def _binary_as_before(self, handler: Any) -> dict[str, Any]:
        """A binary target is written without `classes`, as before it existed: its resolved
        config, fingerprint and results stay byte-identical."""
        data = handler(self)
        if self.classes is None:
            data.pop("classes", None)
        return data


class Preprocessing(StrictModel):
    continuous: Literal["rescale", "discretize", "none"] = "rescale"
    bins: int = Field(default=5, ge=2, le=100)
    strategy: Literal["quantile", "uniform"] = "quantile"
    # which level of each discrete attribute reference-coded models (logistic regression, LDA)
    # drop: the uniform law on separating hyperplanes depends on it (docs/separable.md)
    encoding: Literal["drop_first", "drop_last", "full"] = "drop_first"


# --- models ----------------------------------------------------------------------------------


class NaiveBayesSpec(StrictModel):
    name: Literal["naive_bayes"] = "naive_bayes"
    laplace: float = Field(default=1.0, gt=0)
    var_smoothing: float = Field(default=1e-9, ge=0)


class LogisticRegressionSpec(StrictModel):
    name: Literal["logistic_regression"] = "logistic_regression"
    separable: Literal["sample", "max_margin", "ridge"] = "sample"
    C: float = Field(default=1.0, gt=0, description="inverse L2 strength for separable: ridge")
    mcmc_iterations: int = Field(  # default: hyperplanes.TRAJECTORIES (not imported: start-up)
        default=30, ge=1, description="exact-HMC trajectories per random separating hyperplane"
    )
    max_iter: int = Field(default=100, ge=1)
    tol: float = Field(default=1e-8, gt=0)


class LDASpec(StrictModel):
    name: Literal["lda"] = "lda"
    epsilon: float = Field(default=1e-4, ge=0)


BUILTIN_MODELS = ("naive_bayes", "logistic_regression", "lda")
# A dotted import path (module.Class); which ones may be imported is genvdis/estimators.py's
# allow-list, checked before anything is imported.
IMPORT_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$"
MODEL_NAME = r"^[A-Za-z][A-Za-z0-9_.-]*$"


class EstimatorSpec(StrictModel):
    """Any classifier with fit/predict, named by import path (genvdis/estimators.py): fitted
    and scored per split on the same rows as the built-in models. `name` labels its rows."""

    name: str = Field(pattern=MODEL_NAME, max_length=50)
    estimator: str = Field(pattern=IMPORT_PATH, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict)
    encoding: Literal["onehot", "ordinal"] = "onehot"

    @field_validator("name", mode="after")
    @classmethod
    def _not_builtin(cls, name: str) -> str:
        if name in BUILTIN_MODELS:
            raise ValueError(f"'{name}' is a built-in model's name; call the estimator otherwise")
        return name

    @field_validator("params", mode="after")
    @classmethod
    def _seeded(cls, params: dict[str, Any]) -> dict[str, Any]:
        if "random_state" in params and not isinstance(params["random_state"], int):
            raise ValueError(
                "random_state must be an integer, or left out (genvdis then derives one per "
                "split); anything else would make the results irreproducible"
            )
        return params


class UnknownModel(StrictModel):
    """A `models` entry that is neither a built-in model nor an estimator: always an error,
    one that names the entry."""

    @model_validator(mode="before")
    @classmethod
    def _refuse(cls, entry: Any) -> Any:
        name = entry.get("name") if isinstance(entry, dict) else entry
        what = f"'{name}' is not a built-in model" if name else "no model named"
        raise ValueError(
            f"{what} (naive_bayes, logistic_regression, lda); an estimator entry is "
            "{name: ..., estimator: <import path>}"
        )


def _model_kind(entry: Any) -> str:
    """Which schema a `models` entry follows: an estimator's if it names one, else its name's."""
    if isinstance(entry, EstimatorSpec) or (isinstance(entry, dict) and "estimator" in entry):
        return "estimator"
    name = entry.get("name") if isinstance(entry, dict) else getattr(entry, "name", None)
    return name if name in BUILTIN_MODELS else "unknown"


ModelSpec = Annotated[
    Annotated[NaiveBayesSpec, Tag("naive_bayes")]
    | Annotated[LogisticRegressionSpec, Tag("logistic_regression")]
    | Annotated[LDASpec, Tag("lda")]
    | Annotated[EstimatorSpec, Tag("estimator")]
    | Annotated[UnknownModel, Tag("unknown")],
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
        space = np.geomspace if self.spacing == "log" else np.linspace
        return sorted({int(round(v)) for v in space(self.start, self.stop, self.num)})


# --- the experiment --------------------------------------------------------------------------


class RunConfig(StrictModel):
    """What every config that makes a results folder has (run and theory configs alike): a
    plain name, an optional title, and options the command line may override."""

    name: RunName
    title: Title = None

    @property
    def display_title(self) -> str:
        return self.title or self.name

    def with_overrides(self: Config, **changes: Any) -> Config:
        """A copy with some fields replaced (command-line options), validated again: the one
        check of those options, against the bounds of the config's own fields."""
        changes = {k: v for k, v in changes.items() if v is not None}
        options = " ".join(f"--{k} {v}" for k, v in changes.items())
        data = {**self.model_dump(mode="python"), **changes}
        return validate_mapping(type(self), data, options or f"config '{self.name}'")


class ExperimentConfig(RunConfig):
    panel: int | None = Field(default=None, ge=1, le=15)
    dataset: DatasetSpec
    attributes: Literal["continuous", "discrete", "all"] | list[str] = "all"
    target: TargetSpec
    missing: Literal["drop", "category", "impute"] = "drop"
    preprocessing: Preprocessing = Field(default_factory=Preprocessing)
    models: ModelList = Field(
        default_factory=lambda: [NaiveBayesSpec(), LogisticRegressionSpec()], min_length=1
    )
    compare: list[list[str]] | None = Field(
        default=None, min_length=1, description="pairs [first, second] the analysis compares"
    )
    sizes: list[int] | SizeRange
    splits: int = Field(default=1000, ge=1)
    split: Literal["stratified", "random"] = "stratified"
    test: Literal["rest"] | int = "rest"
    seed: Seed = 0
    block_size: int | None = Field(
        default=None,
        ge=1,
        description="splits per task and per checkpoint; default: memory-capped (see engine)",
    )
    # where a relative `dataset.path` is read from: the config file's folder (set by
    # `load_config`; None means the current folder). Not a field: it changes no number.
    _data_dir: Path | None = PrivateAttr(default=None)

    @field_validator("compare", mode="after")
    @classmethod
    def _compare(cls, value: list[list[str]] | None, info: ValidationInfo) -> Any:
        """Each pair: two different models of this config (docs/analysis.md)."""
        names = [m.name for m in info.data.get("models") or []]
        for i, pair in enumerate(value or [], start=1):
            if len(pair) != 2 or pair[0] == pair[1]:
                raise ValueError(f"pair {i} {pair} must name two different models")
            unknown = [x for x in pair if x not in names]
            if unknown and names:
                raise ValueError(f"pair {i}: '{unknown[0]}' is not in models ({', '.join(names)})")
        return value

    @model_serializer(mode="wrap")
    def _without_default_pairs(self, handler: Any) -> dict[str, Any]:
        """Without `compare`, the config is written as before the key existed: its resolved
        config, fingerprint and results stay byte-identical."""
        data = handler(self)
        if self.compare is None:
            data.pop("compare", None)
        return data

    @field_validator("sizes", mode="after")
    @classmethod
    def _sizes(cls, value: list[int] | SizeRange) -> list[int] | SizeRange:
        grid = value.values() if isinstance(value, SizeRange) else value
        if not grid:
            raise ValueError("needs at least one training-set size")
        if min(grid) < 2:
            raise ValueError("every size must be >= 2 (one example of each class)")
        return value

    @field_validator("dataset", mode="after")
    @classmethod
    def _dataset(cls, value: DatasetSpec) -> DatasetSpec:
        if isinstance(value, SklearnSource):
            bundled_loader(value.sklearn)
        return value

    @field_validator("attributes", mode="after")
    @classmethod
    def _attributes(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list):
            if not value:
                raise ValueError("list at least one attribute, or write all")
            twice = sorted({a for a in value if value.count(a) > 1})
            if twice:
                raise ValueError(f"'{twice[0]}' is listed more than once")
        return value

    @field_validator("test", mode="after")
    @classmethod
    def _test(cls, value: Literal["rest"] | int) -> Literal["rest"] | int:
        if isinstance(value, int) and value < 1:
            raise ValueError("'test' must be 'rest' or a positive number of rows")
        return value

    @property
    def size_grid(self) -> list[int]:
        """The training-set sizes m, sorted and unique."""
        if isinstance(self.sizes, SizeRange):
            return self.sizes.values()
        return sorted(set(self.sizes))

    @property
    def data_dir(self) -> Path:
        """The folder a relative `dataset.path` is read from (the config file's)."""
        return self._data_dir or Path(".")

    def with_overrides(self, **changes: Any) -> ExperimentConfig:
        changed = super().with_overrides(**changes)
        changed._data_dir = self._data_dir
        return changed


# Union-typed fields: pydantic names the member it tried after them in an error's path
# ('sizes.SizeRange.start', 'models.1.lda.epsilon'), a name that is not in the YAML.
_UNION_FIELDS = {"dataset", "sizes", "attributes", "test", "value"}


def _field_path(loc: tuple) -> str:
    parts: list[str] = []
    tagged = False
    for part in loc:
        if str(part).startswith("function-"):  # a validator's wrapper: the member's tag
            tagged = False
            continue
        if tagged and isinstance(part, str):
            tagged = False
            continue
        tagged = part in _UNION_FIELDS or (isinstance(part, int) and parts == ["models"])
        parts.append(str(part))
    return ".".join(parts)


def _describe(error: ValidationError) -> str:
    # The deepest error: for a union, the member that matched furthest says what is wrong.
    first = max(error.errors(), key=lambda e: len(e["loc"]))
    loc = _field_path(first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    more = len(error.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{loc or 'config'}: {msg}{tail}"


def validate_mapping(schema: type[Model], data: Any, source: str = "config") -> Model:
    """Validate an already-loaded mapping against `schema`; errors name `source` and the
    field, on one line."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: a config must be a YAML mapping of keys to values")
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        raise UserError(f"{source}: {_describe(error)}") from None


def parse_config(data: Any, source: str = "config") -> ExperimentConfig:
    """A run config from an already-loaded mapping."""
    return validate_mapping(ExperimentConfig, data, source)


def is_theory_config(data: Any) -> bool:
    """Theory configs (genvdis theory) name a synthetic `kind` and an `n` grid, no dataset."""
    return isinstance(data, dict) and "kind" in data and "n" in data and "dataset" not in data


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a run config; a relative `dataset.path` in it is read from the
    config file's folder."""
    data = read_yaml(path)
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if key != VARIANTS_KEY}
    config = parse_config(data, str(path))
    dataset = config.dataset
    if isinstance(dataset, FileDataset) and dataset.path and not Path(dataset.path).is_absolute():
        config._data_dir = Path(path).parent  # only then: other configs compare equal as read
    return config
