"""The configs that ship with genvdis: the 15 Figure 1 panels, the worked examples and the
theory experiments.

They are the repo's own `configs/*.yaml` and `configs/examples/*.yaml` (with `toy.csv`, the
table the own-data examples read), installed as the package `genvdis.configs` (see
pyproject.toml), so a clone, an editable install, the sdist and the wheel all read the same
files. A command that takes a config accepts a path or, when no such file exists, the name of
a built-in config (`genvdis run pima`, `genvdis run gnb-vs-svm`).
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from genvdis.errors import UserError

Kind = Literal["panel", "example", "theory"]
EXAMPLES = "examples"  # the worked examples' subfolder, shipped beside the panels
# the kinds of built-in config a command asking for `kind` takes: `run` (kind "panel") takes
# the panels and the worked examples, `theory` the theory configs, `validate` (None) any
RUN_KINDS: dict[Kind | None, tuple[Kind, ...]] = {
    "panel": ("panel", "example"),
    "example": ("example",),
    "theory": ("theory",),
    None: ("panel", "example", "theory"),
}


@dataclass(frozen=True)
class BuiltinConfig:
    """One shipped config, as `genvdis configs` lists it."""

    name: str
    kind: Kind
    title: str
    dataset: str
    panel: int | None
    path: Path


def folder() -> Path:
    """Where the built-in YAML files are (configs/ in a clone or an editable install)."""
    return Path(str(importlib.resources.files("genvdis.configs")))


def _dataset_label(dataset: object) -> str:
    """A config's `dataset:` in a few words: a registered name, or where its own table is."""
    if not isinstance(dataset, dict):
        return str(dataset)
    if "path" in dataset:
        return f"file {Path(str(dataset['path'])).name}"
    if "sklearn" in dataset:
        return f"sklearn {dataset['sklearn']}"
    return "file from a URL" if "url" in dataset else "own table"


def _describe(path: Path) -> BuiltinConfig:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "dataset" in data:
        kind: Kind = "example" if path.parent.name == EXAMPLES else "panel"
        dataset = _dataset_label(data["dataset"])
    else:  # a theory config (genvdis theory): synthetic data of one kind, several n
        kind, dataset = "theory", f"synthetic {data['kind']}"
    title = str(data.get("title") or data["name"])
    return BuiltinConfig(path.stem, kind, title, dataset, data.get("panel"), path)


def builtin_configs() -> list[BuiltinConfig]:
    """Every built-in config: the 15 panels in Figure 1's order, the worked examples, then the
    theory configs.

    Returns
    -------
    list of BuiltinConfig
        Each with ``name`` (what `load_config` and `genvdis run` accept), ``kind``
        ('panel' or 'theory'), ``title``, ``dataset``, ``panel`` (1-15 or None) and
        ``path`` (the YAML file, to read or copy).

    Examples
    --------
    >>> import genvdis
    >>> shipped = genvdis.builtin_configs()
    >>> [(c.name, c.kind, c.dataset) for c in shipped][:2]
    [('pima', 'panel', 'pima'), ('adult-continuous', 'panel', 'adult')]
    >>> [c.name for c in shipped if c.kind == "example"][:2]
    ['breast-cancer-wisconsin', 'gnb-vs-svm']
    >>> len(shipped), shipped[-1].name
    (25, 'theory-gaussian')
    """
    paths = sorted(folder().glob("*.yaml")) + sorted((folder() / EXAMPLES).glob("*.yaml"))
    found = [_describe(path) for path in paths]
    order = {"panel": 0, "example": 1, "theory": 2}
    return sorted(found, key=lambda c: (order[c.kind], c.panel or 0, c.name))


def names(kind: Kind | None = None) -> list[str]:
    """The built-in names a command of `kind` takes (`run`: panels and examples; `theory`; or
    all), in `builtin_configs()` order."""
    return [c.name for c in builtin_configs() if c.kind in RUN_KINDS[kind]]


def resolve(source: str | Path, kind: Kind | None = None) -> Path:
    """The config file `source` means: an existing path wins; else a bare name (no folder, no
    .yaml) is a built-in config of `kind`; else the path itself (its reader then says it is
    missing). An unknown bare name is a UserError that lists the built-in names."""
    path = Path(source)
    text = str(source)
    if path.exists() or "/" in text or "\\" in text or path.suffix in {".yaml", ".yml"}:
        return path
    candidates = [f / f"{text}.yaml" for f in (folder(), folder() / EXAMPLES) if text]
    if len(found := [c for c in candidates if c.is_file()]) == 1:  # one file to parse, not all
        if (config := _describe(found[0])).kind in RUN_KINDS[kind]:
            return config.path
    shipped = builtin_configs()  # parses every shipped file: once
    known = [c.name for c in shipped if c.kind in RUN_KINDS[kind]]
    if text in known:
        return next(c.path for c in shipped if c.name == text)
    if any(c.name == text for c in shipped):  # a built-in of the other kind
        command = "run" if kind == "theory" else "theory"
        raise UserError(f"'{text}' is a built-in {command} config: `genvdis {command} {text}`")
    what = {"panel": "run config", "example": "example", "theory": "theory config", None: "config"}[
        kind
    ]
    raise UserError(
        f"'{text}' is neither a config file nor a built-in {what} (built-in: {', '.join(known)})"
    )
