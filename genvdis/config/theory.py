"""Theory configs (`genvdis theory`): a synthetic family, a grid of n features and a grid of m
per n, validated like run configs (genvdis.config.experiment, whose name, title, model list and
override
rules they share); each n becomes an ordinary `ExperimentConfig`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from genvdis.config.experiment import (
    MAX_BOOT,
    MIN_BOOT,
    ExperimentConfig,
    RunConfig,
    read_yaml,
    validate_mapping,
)
from genvdis.config.sections import (
    ModelList,
    Seed,
    StrictModel,
    SyntheticDataset,
)
from genvdis.models.base import ModelInfo
from genvdis.models.registry import builtin_models


def _with_asymptote() -> list[ModelInfo]:
    """The built-in models whose asymptotic error on the synthetic families is known
    (`ModelInfo.asymptote`): the ones a theory config may name, and its default."""
    return [info for info in builtin_models() if info.asymptote]


class MGrid(StrictModel):
    """m = start * 2^(j / per_doubling), j = 0, 1, ... up to max(stop * n, min_stop): one
    geometric sequence for every n (only its end depends on n), so m* is comparable across n."""

    start: int = Field(default=10, ge=2, description="smallest m (the same for every n)")
    stop: float = Field(gt=0, description="largest m, as a multiple of n")
    min_stop: int = Field(default=0, ge=0, description="largest m is at least this")
    per_doubling: int = Field(default=2, ge=1, le=12, description="grid points per doubling")

    def values(self, n: int) -> list[int]:
        stop = max(self.stop * n, self.min_stop, self.start)
        steps = int(math.floor(self.per_doubling * math.log2(stop / self.start) + 1e-9))
        grid = self.start * 2.0 ** (np.arange(steps + 1) / self.per_doubling)
        return sorted({int(round(v)) for v in grid})


class TheoryConfig(RunConfig):
    """One sample-complexity experiment: a synthetic family, an n grid, an m grid per n."""

    kind: Literal["binary", "gaussian"]
    n: list[int] = Field(min_length=1, description="numbers of features")
    informative: float = Field(default=0.5, gt=0, le=1)
    effect: float = Field(gt=0)
    n_rows: int = Field(default=100_000, ge=100, description="rows drawn; test = the rest")
    m: list[int] | MGrid
    splits: int = Field(default=100, ge=2)
    epsilon: list[float] = Field(min_length=1)
    seed: Seed = 0
    models: ModelList = Field(
        default_factory=lambda: [info.spec() for info in _with_asymptote()], min_length=1
    )
    boot: int = Field(
        default=1000, ge=MIN_BOOT, le=MAX_BOOT, description="bootstrap resamples for m* intervals"
    )
    reference: Literal["pool", "exact"] = Field(
        default="pool",
        description="m* is measured against the Bayes rule's error on the drawn rows (pool) or "
        "the exact Bayes error",
    )
    block_size: int | None = Field(default=None, ge=1, description="default: the engine's")

    @field_validator("models", mode="after")
    @classmethod
    def _known_asymptote(cls, value: list) -> list:
        known = [info.name for info in _with_asymptote()]
        other = [m.name for m in value if m.name not in known]
        if other:
            listed = ", ".join(known[:-1]) + " and " + known[-1] if len(known) > 1 else known[0]
            raise ValueError(f"'{other[0]}': the asymptotic error is known only for {listed}")
        return value

    @field_validator("n", mode="after")
    @classmethod
    def _n(cls, value: list[int]) -> list[int]:
        if min(value) < 1 or len(set(value)) != len(value):
            raise ValueError("each n must be a distinct number of features >= 1")
        return sorted(value)

    @field_validator("effect", mode="after")
    @classmethod
    def _effect(cls, value: float, info: ValidationInfo) -> float:
        if info.data.get("kind") == "binary" and value >= 1:
            raise ValueError("a binary effect is p1 - p0 and must be < 1")
        return value

    @field_validator("m", mode="after")
    @classmethod
    def _m(cls, value: list[int] | MGrid, info: ValidationInfo) -> list[int] | MGrid:
        if isinstance(value, list) and (not value or min(value) < 2):
            raise ValueError("needs sizes m >= 2")
        ns, rows = info.data.get("n"), info.data.get("n_rows")
        if ns and rows:
            largest = max(value.values(n)[-1] for n in ns) if isinstance(value, MGrid) else 0
            largest = max(largest, *value) if isinstance(value, list) else largest
            if largest >= rows - 10:
                raise ValueError(f"the largest m ({largest}) leaves too few of n_rows = {rows}")
        return value

    @field_validator("epsilon", mode="after")
    @classmethod
    def _epsilon(cls, value: list[float]) -> list[float]:
        if min(value) <= 0 or max(value) >= 0.5:
            raise ValueError("each epsilon must be in (0, 0.5)")
        return sorted(set(value))

    def m_grid(self, n: int) -> list[int]:
        """The training-set sizes run at n features."""
        return self.m.values(n) if isinstance(self.m, MGrid) else sorted(set(self.m))

    def dataset(self, n: int) -> SyntheticDataset:
        return SyntheticDataset(
            kind=self.kind, n_features=n, informative=self.informative, n_rows=self.n_rows,
            effect=self.effect, seed=self.seed,
        )  # fmt: skip


def parse_theory_config(data: Any, source: str = "config") -> TheoryConfig:
    """A theory config from an already-loaded mapping."""
    return validate_mapping(TheoryConfig, data, source)


def load_theory_config(path: str | Path) -> TheoryConfig:
    """Read and validate a theory config."""
    data = read_yaml(path)
    return parse_theory_config(data, str(path))


def experiment_config(config: TheoryConfig, n: int) -> ExperimentConfig:
    """The ordinary experiment run at n features: the whole rest of the rows is the test set."""
    return ExperimentConfig.model_validate(
        dict(
            name=f"n{n}",
            title=f"{config.display_title}: n = {n} features",
            dataset={"synthetic": config.dataset(n).model_dump()},
            target={"positive": ["1"]},
            models=[m.model_dump() for m in config.models],
            sizes=config.m_grid(n),
            splits=config.splits,
            split="random",
            test="rest",
            seed=config.seed,
            block_size=config.block_size,
        )
    )
