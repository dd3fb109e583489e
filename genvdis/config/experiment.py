"""Experiment configs: YAML in, one validated `ExperimentConfig` out.

Validation happens once, here, with pydantic: unknown keys are errors, and every error names
the config file and the field, so the CLI can print it on one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from genvdis.config import resultnames
from genvdis.config._yaml import read_yaml
from genvdis.config.sections import (
    DatasetSpec,
    ModelList,
    Preprocessing,
    Seed,
    SizeRange,
    StrictModel,
    TargetSpec,
    dump_without_unset,
)
from genvdis.errors import UserError
from genvdis.models.logistic_regression import LogisticRegressionSpec
from genvdis.models.naive_bayes import NaiveBayesSpec

Model = TypeVar("Model", bound=BaseModel)
Config = TypeVar("Config", bound="RunConfig")

# Bootstrap resamples (report --boot, a theory config's boot): fewer than 10 make no 95%
# interval; past 10x the default (1000) more add only memory (resamples x splits weights).
MIN_BOOT, MAX_BOOT = 10, 10_000
# A run's name is a folder under --out, and `<name>.png` a file in it: a plain name (nothing
# outside --out), well under the 255 bytes a file name may have.
NAME_PATTERN, MAX_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", 100
# Files genvdis writes at the top of a results folder, beside the run folders: the names its
# writers use (compared ignoring case, as macOS and Windows file systems do).
RESULTS_FILES = resultnames.TOP_LEVEL
# A config's `variants:` block is for `genvdis sweep` (genvdis/config/variants.py); `run` runs the
# config itself, the sweep's baseline.
VARIANTS_KEY = "variants"


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


def check_pairs(pairs: list[Any], names: list[str]) -> None:
    """`compare:`'s pairs, each two different models of `names` (unchecked where `names` is
    empty), given once: a ValueError naming the first pair that is not. A config's field and
    a run's config.yaml read back (`runfiles`, where it may be edited) check it alike."""
    for i, pair in enumerate(pairs, start=1):
        if not isinstance(pair, list) or len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"pair {i} {pair!r} must name two different models")
        unknown = [x for x in pair if x not in names]
        if unknown and names:
            raise ValueError(f"pair {i}: '{unknown[0]}' is not in models ({', '.join(names)})")
        if pair in pairs[: i - 1]:
            raise ValueError(f"pair {i} {pair} repeats pair {pairs.index(pair) + 1}")


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
    splits: int = Field(default=1000, ge=2)  # a standard error and a paired test need two
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
        check_pairs(value or [], [m.name for m in info.data.get("models") or []])
        return value

    @model_serializer(mode="wrap")
    def _without_default_pairs(self, handler: Any) -> dict[str, Any]:
        return dump_without_unset(self, handler, "compare")

    @field_validator("sizes", mode="after")
    @classmethod
    def _sizes(cls, value: list[int] | SizeRange) -> list[int] | SizeRange:
        grid = value.values() if isinstance(value, SizeRange) else value
        if not grid:
            raise ValueError("needs at least one training-set size")
        if min(grid) < 2:
            raise ValueError("every size must be >= 2 (one example of each class)")
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
    def unused_settings(self) -> list[str]:
        """Settings given a value that nothing in this config reads (`separable`'s and
        `continuous`'s options under another choice), each as '<field>: <why>': a run says so,
        as they change no number (a sweep may vary them on purpose: docs/sweeps.md)."""
        found = [f"preprocessing.{line}" for line in self.preprocessing.unused()]
        for spec in self.models:
            fields = type(spec).model_fields
            found += [
                f"models.{spec.name}.{key}: {getattr(spec, key)} {why}"
                for key, why in spec.ignored().items()
                if getattr(spec, key) != fields[key].default
            ]
        return found

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
    return read_from(parse_config(data, str(path)), path)


def read_from(config: ExperimentConfig, path: str | Path) -> ExperimentConfig:
    """`config` as read from the file `path`: a relative `dataset.path` is read from that
    file's folder (two folders' data.csv are two tables)."""
    # a spec that reads a path relative to the config (`FileDataset.relative_path`); a
    # registered name (a str) reads none
    if getattr(config.dataset, "relative_path", None):
        config._data_dir = Path(path).parent  # only then: other configs compare equal as read
    return config
