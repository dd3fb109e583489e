"""A sweep's variants: `--vary KEY=V1,V2` options and `variants:` blocks, expanded into
configs, each validated as a full config before anything runs.

A variant is a set of overrides (dotted config key -> YAML scalar) applied to one config.
Its id, `key=value` pairs sorted by key and joined by commas (`separable=ridge,split=random`),
names its results folder: readable, the same whatever order the options came in, and safe as
a folder name (values are restricted to letters, digits and `. _ + -`). docs/sweeps.md has the
schema of the `variants:` block.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from genvdis.config import _yaml as yamlfile
from genvdis.config._yaml import read_yaml
from genvdis.config.experiment import VARIANTS_KEY, ExperimentConfig, parse_config
from genvdis.errors import FORCE, UserError
from genvdis.models import registry

# Short names for the keys a sweep varies most (docs/sweeps.md): each built-in model's own
# (`ModelInfo.aliases`), then the preprocessing's.
ALIASES = {
    **{
        alias: f"models.{info.name}.{field}"
        for info in registry.builtin_models()
        for alias, field in info.aliases.items()
    },
    "continuous": "preprocessing.continuous",
    "bins": "preprocessing.bins",
}
SHORT = {path: alias for alias, path in ALIASES.items()}
FIXED = {"name": "it names the run folder", VARIANTS_KEY: "it lists the variants"}
BASELINE = "baseline"
VARIANTS_DIR = "variants"  # a sweep's variants are in <out>/<name>/variants/<id>/
VALUE_TEXT = re.compile(r"^[A-Za-z0-9_.+-]+$")
MAX_ID = 200  # a folder name stays well under the 255 bytes a file name may have
# Variants per config, beyond which a sweep is refused unless --force, as a run is beyond its
# bounds (genvdis.experiment.planning): each variant is a whole run with its own folder, prepared
# and
# checked before the first one runs. The committed sweep has 17 per panel.
MAX_VARIANTS = 1000

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Variant:
    """One point of a sweep: its overrides (full dotted keys, in id order) and id."""

    overrides: tuple[tuple[str, Scalar], ...]
    origin: str = field(default="", compare=False)  # where it was given, for messages

    @property
    def id(self) -> str:
        if not self.overrides:
            return BASELINE
        return ",".join(f"{short_key(k)}={value_text(v)}" for k, v in self.overrides)


def short_key(path: str) -> str:
    return SHORT.get(path, path)


def value_text(value: Scalar) -> str:
    """A value as it appears in a variant id: YAML's spelling (true, 0.5, ridge)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def make_variant(overrides: dict[str, Any], source: str) -> Variant:
    """A variant from {key or alias: value}, each key and value checked for its shape."""
    items: dict[str, Scalar] = {}
    for key, value in overrides.items():
        path = _full_key(str(key), source)
        if path in items:
            raise UserError(f"{source}: '{key}' is given twice (as {path})")
        items[path] = _scalar(value, f"{source}: {key}")
    ordered = tuple(sorted(items.items(), key=lambda kv: short_key(kv[0])))
    variant = Variant(ordered, source)
    if len(variant.id) > MAX_ID:
        raise UserError(f"{source}: the variant id is longer than {MAX_ID} characters")
    return variant


def _full_key(key: str, source: str) -> str:
    path = ALIASES.get(key, key)
    head = path.split(".")[0]
    if head in FIXED:
        raise UserError(f"{source}: '{head}' cannot vary ({FIXED[head]})")
    if head not in ExperimentConfig.model_fields:
        known = ", ".join(ALIASES)
        raise UserError(f"{source}: no config key '{head}' (a dotted config key, or {known})")
    return path


def _scalar(value: Any, where: str) -> Scalar:
    if not isinstance(value, str | int | float | bool) or value is None:
        raise UserError(f"{where}: a variant's value must be a single YAML scalar, not {value!r}")
    if not VALUE_TEXT.match(value_text(value)):
        raise UserError(
            f"{where}: '{value_text(value)}' cannot be part of a folder name "
            "(letters, digits and . _ + - only)"
        )
    return value


# --------------------------------------------------------------------------- sources


def parse_vary(options: list[str]) -> dict[str, list[Scalar]]:
    """`--vary KEY=V1,V2` options as {key: [values]}, each value read as a YAML scalar."""
    grid: dict[str, list[Scalar]] = {}
    for option in options:
        key, sep, text = option.partition("=")
        where = f"--vary {option}"
        if not sep or not key.strip() or not text.strip():
            raise UserError(f"{where}: write KEY=V1,V2 (e.g. --vary separable=sample,ridge)")
        if key.strip() in grid:
            raise UserError(f"{where}: {key.strip()} is varied twice; give its values once")
        _full_key(key.strip(), where)
        try:
            values = [yamlfile.read_scalar(part, where) for part in text.split(",")]
        except yaml.YAMLError:
            raise UserError(f"{where}: a value is not a YAML scalar") from None
        grid[key.strip()] = [_scalar(value, where) for value in values]
    return grid


def check_count(count: int, source: str, how: str, force: bool = False) -> None:
    """Refuse more than MAX_VARIANTS variants (unless `force`), counted before any is built:
    `how` says where the count comes from (each key's number of values)."""
    if count > MAX_VARIANTS and not force:
        raise UserError(
            f"{source}: {count:,} variants ({how}), beyond the bound of {MAX_VARIANTS:,} per "
            f"config (each is a whole run); vary fewer values, {FORCE}"
        )


def grid_count(grid: dict[str, list[Any]]) -> tuple[int, str]:
    """The size of the cross product of `grid`'s values, and how it is made (3 x 2 values)."""
    return math.prod(len(v) for v in grid.values()), " x ".join(str(len(v)) for v in grid.values())


def cross_product(grid: dict[str, list[Any]], source: str, force: bool = False) -> list[Variant]:
    """Every combination of the values of `grid`, in the order the keys were given; counted,
    and bounded, before any is built."""
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise UserError(f"{source}: {key}: give a list of values")
    count, how = grid_count(grid)
    check_count(count, source, f"{how} values", force)
    keys = list(grid)
    combos = itertools.product(*(grid[k] for k in keys))
    return [make_variant(dict(zip(keys, combo, strict=True)), source) for combo in combos]


def from_block(block: Any, source: str, force: bool = False) -> list[Variant]:
    """A `variants:` block: a list of override mappings, or {vary: {key: [values]}}."""
    if isinstance(block, dict) and set(block) == {"vary"} and isinstance(block["vary"], dict):
        return cross_product(block["vary"], f"{source}: vary", force)
    if isinstance(block, list) and block and all(isinstance(v, dict) and v for v in block):
        check_count(len(block), source, "entries", force)
        return [make_variant(v, f"{source}[{i}]") for i, v in enumerate(block)]
    raise UserError(
        f"{source}: write a list of overrides ([{{separable: ridge}}, ...]) or "
        "{vary: {key: [values]}}"
    )


def read_block_file(path: str | Path, force: bool = False) -> list[Variant]:
    """A variants file: a YAML mapping holding a `variants:` block and nothing else."""
    data = read_yaml(path)
    if not isinstance(data, dict) or set(data) != {VARIANTS_KEY}:
        raise UserError(f"{path}: a variants file holds one key, variants:")
    return from_block(data[VARIANTS_KEY], f"{path}: variants", force)


def config_block(path: str | Path, force: bool = False) -> list[Variant]:
    """The variants a config file declares itself ([] if none)."""
    data = read_yaml(path)
    if isinstance(data, dict) and VARIANTS_KEY in data:
        return from_block(data[VARIANTS_KEY], f"{path}: variants", force)
    return []


def check_block(config: ExperimentConfig, block: Any, path: str | Path) -> int:
    """How many variants a config's own `variants:` block has, each validated (0: none)."""
    if block is None:
        return 0
    return len(expand(config, from_block(block, f"{path}: variants"), "")) - 1


def unique(variants: list[Variant]) -> list[Variant]:
    """Variants in order, each id once, the baseline (no overrides) left out."""
    seen: dict[str, Variant] = {}
    for variant in variants:
        if variant.overrides:
            seen.setdefault(variant.id, variant)
    return list(seen.values())


# --------------------------------------------------------------------------- configs


def apply(config: ExperimentConfig, variant: Variant, source: str) -> ExperimentConfig:
    """The config with the variant's overrides, validated as a whole; errors name `source`."""
    data = config.model_dump(mode="python")
    for path, value in variant.overrides:
        _set(data, path, value, source)
    changed = parse_config(data, source)
    changed._data_dir = config._data_dir
    return changed


def _set(data: dict, path: str, value: Scalar, source: str) -> None:
    node, last = _parent(data, path, source)
    node[last] = value


def _parent(data: dict, path: str, source: str) -> tuple[dict, str]:
    """The mapping that holds `path`'s last key (a model's own mapping for models.X.Y)."""
    parts = path.split(".")
    node = data
    if parts[0] == "models":
        if len(parts) != 3:
            raise UserError(f"{source}: write models.<model name>.<parameter>")
        node, parts = _model(data, parts[1], source), parts[2:]
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            raise UserError(f"{source}: '{part}' is not a mapping in this config")
        node = child
    return node, parts[-1]


def changed_keys(base: ExperimentConfig, config: ExperimentConfig, variant: Variant) -> str:
    """The variant's keys whose value differs from the base config's, ';'-separated."""
    before, after = base.model_dump(mode="json"), config.model_dump(mode="json")
    keys = []
    for path, _ in variant.overrides:
        (old, key), (new, _) = _parent(before, path, ""), _parent(after, path, "")
        if old.get(key) != new.get(key):
            keys.append(path)
    return ";".join(keys)


def _model(data: dict, name: str, source: str) -> dict:
    for spec in data["models"]:
        if spec.get("name") == name:
            return spec
    have = ", ".join(spec["name"] for spec in data["models"])
    raise UserError(f"{source}: the config has no model '{name}' (it has {have})")


def expand(
    config: ExperimentConfig, variants: list[Variant], where: str
) -> list[tuple[Variant, ExperimentConfig]]:
    """The baseline, then each variant, as validated configs. Each override is first checked
    alone, so that an error names the one key and value at fault."""
    checked: set[tuple[str, Scalar, type]] = set()  # each key and value once, not per variant
    for variant in variants:
        for key, value in variant.overrides:
            if (key, value, type(value)) in checked:
                continue
            single = Variant(((key, value),))
            apply(config, single, f"{where}{variant.origin} {single.id}")
            checked.add((key, value, type(value)))
    chosen = unique(variants)
    return [(Variant(()), config)] + [
        (v, apply(config, v, f"{where}{v.origin} {v.id}")) for v in chosen
    ]
