"""`genvdis sweep`: one config under many variants, each run through the same run path.

Every variant of every config is validated, and its data prepared, before the first one runs.
Each variant then runs exactly as `genvdis run` runs a config (`engine.run_experiment`: the
same seed and split streams, checkpoints, resume, "up to date"), into
`<out>/<name>/variants/<variant id>/`; the baseline, the config itself, into
`<out>/<name>/variants/baseline/`, at the sweep's split count, so that every comparison is
paired. A variant whose design is that of an earlier one (a `missing` policy where nothing is
missing, `laplace` without discrete attributes, `bins` without discretizing) would compute
the same numbers again: it is recorded as "same as" that one and not run. The sweep's index,
`variants/variants.csv`, lists every variant and what it is the same as.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from genvdis._runtime import parallel as backends
from genvdis.analysis import sensitivity
from genvdis.config import variants
from genvdis.config.experiment import ExperimentConfig
from genvdis.config.variants import VARIANTS_DIR, Variant
from genvdis.data import sources
from genvdis.data.preprocessing import FeatureLayout, PreparedData, prepare
from genvdis.data.uci import RawData
from genvdis.errors import UserError
from genvdis.experiment import engine, splits
from genvdis.store import results

log = logging.getLogger(__name__)

INDEX = "variants.csv"
INDEX_COLUMNS = ["variant", "changed", "same_as", "not_run", "folder"]
# Config fields whose whole effect is the prepared data (compared instead), and fields that
# change no number (names, the figure's title, how splits are grouped into tasks).
DATA_FIELDS = ("dataset", "attributes", "target", "missing")
DATA_PREPROCESSING = ("continuous", "bins", "strategy")
NO_NUMBERS = ("name", "title", "panel", "block_size")


@dataclass
class Planned:
    """One variant of one config, ready to run: where, and whether it repeats another."""

    variant: Variant
    config: ExperimentConfig
    design: str
    raw: RawData  # the config's table, read once per sweep and shared by its variants
    same_as: str | None = None
    changed: str = ""  # the keys whose value differs from the baseline's
    not_run: str = ""  # why the variant does not apply to this data, if it does not

    @property
    def folder(self) -> str:
        return f"{self.config.name}/{VARIANTS_DIR}/{self.variant.id}"


# --------------------------------------------------------------------------- designs


@dataclass(frozen=True)
class DataSummary:
    """What a variant's design takes from its prepared data, kept once per data setting
    instead of the arrays: preparing the data again for every variant of a grid that does
    not touch them (seed, laplace) cost ~30 ms a variant, and keeping each one's arrays would
    grow with the sweep."""

    layout: FeatureLayout
    class_counts: tuple[int, ...]
    digest: bytes  # the rows and labels: their dtypes, shapes and bytes
    class_names: tuple[str, ...] = ()  # for a refused m's message (splits.check_size)

    @classmethod
    def of(cls, data: PreparedData) -> DataSummary:
        digest = hashlib.sha256()
        for array in (data.X, data.y):
            digest.update(repr((array.dtype.str, array.shape)).encode())
            digest.update(array.tobytes())
        return cls(data.layout, data.class_counts, digest.digest(), tuple(data.class_names))


def design_key(config: ExperimentConfig, data: PreparedData | DataSummary) -> str:
    """A hash of what determines a run's numbers: the prepared rows and labels (so every data
    setting that leaves them alone drops out), the protocol, and each model's parameters that
    matter on this data. Conservative: a field not known to be harmless is kept."""
    if isinstance(data, PreparedData):
        data = DataSummary.of(data)
    settings = config.model_dump(mode="json")
    for key in (*DATA_FIELDS, *NO_NUMBERS):
        settings.pop(key, None)
    for key in DATA_PREPROCESSING:
        settings["preprocessing"].pop(key, None)
    if data.layout.n_discrete == 0:  # which one-hot level is dropped: only discrete data have one
        settings["preprocessing"].pop("encoding", None)
    settings["sizes"] = config.size_grid
    settings["models"] = [  # each model's own word on what it reads on these data
        {k: v for k, v in spec.items() if k not in model.ignored(data.layout)}
        for model, spec in zip(config.models, settings["models"], strict=True)
    ]
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    layout = (data.layout.n_continuous, data.layout.levels)
    digest.update(repr(layout).encode())
    digest.update(data.digest)
    return digest.hexdigest()[:16]


def plan(
    expanded: list[tuple[Variant, ExperimentConfig]], where: str, mirror: str | None
) -> list[Planned]:
    """Prepare every variant's data (each raw table read once) and find repeated designs.
    A data error names the variant; a variant whose rows are too few for the config's m grid
    (`missing: drop` on a panel with many gaps) does not apply, and is marked not to run."""
    raw: dict[str, RawData] = {}
    prepared: dict[str, DataSummary] = {}  # per data setting: the fields prepare() reads
    planned: list[Planned] = []
    designs: dict[str, str] = {}  # design -> the first variant of it
    base = expanded[0][1]
    for variant, config in expanded:
        fields = config.model_dump(mode="json")
        source = json.dumps(fields["dataset"], sort_keys=True)
        setting = json.dumps([fields[k] for k in (*DATA_FIELDS, "preprocessing")], sort_keys=True)
        try:
            if source not in raw:
                raw[source] = sources.load_data(config, config.data_dir, mirror)
            if setting not in prepared:
                prepared[setting] = DataSummary.of(prepare(raw[source], config))
        except UserError as error:
            raise UserError(f"{where}{variant.origin or 'variant'} {variant.id}: {error}") from None
        data = prepared[setting]
        item = Planned(variant, config, design_key(config, data), raw[source])
        item.changed = variants.changed_keys(base, config, variant)
        item.same_as = designs.setdefault(item.design, variant.id)
        item.same_as = None if item.same_as == variant.id else item.same_as
        item.not_run = _misfit(config, data)
        if item.not_run and not planned:  # the baseline: the config itself cannot run
            raise UserError(f"{where}{item.not_run}")
        planned.append(item)
    return planned


def _misfit(config: ExperimentConfig, data: PreparedData | DataSummary) -> str:
    """Why the data cannot take the config's m grid ("" if they can)."""
    try:
        for m in config.size_grid:
            splits.check_size(m, data.class_counts, config.test, config.split, data.class_names)
    except UserError as error:
        return str(error)
    return ""


# --------------------------------------------------------------------------- running


def run_planned(planned: list[Planned], out: Path, **options: Any) -> None:
    """Run each variant that is not the same as an earlier one, then write the index (with
    `--backend dask`, every variant on one LocalCluster)."""
    with backends.local_cluster_kept():
        for number, item in enumerate(planned, 1):
            name, variant = item.config.name, item.variant.id
            if item.same_as:
                log.info("%s: %s: same design as %s: not run again", name, variant, item.same_as)
                continue
            if item.not_run:
                log.info("%s: %s: does not apply, not run: %s", name, variant, item.not_run)
                continue
            log.info("%s: variant %s (%d of %d)", name, variant, number, len(planned))
            engine.run_experiment(
                item.config,
                out,
                folder=item.folder,
                base_dir=item.config.data_dir,
                raw=item.raw,
                **options,
            )
    write_index(planned, out)


def _ran(item: Planned) -> str:
    return "" if item.same_as or item.not_run else item.variant.id


def write_index(planned: list[Planned], out: Path) -> Path:
    """variants.csv: every variant of this sweep, the keys it changes, what it repeats."""
    rows = [[p.variant.id, p.changed, p.same_as or "", p.not_run, _ran(p)] for p in planned]
    path = out / planned[0].config.name / VARIANTS_DIR / INDEX
    with results.writing(path.parent, "the sweep's index"):
        results.atomic_write_csv(path, pd.DataFrame(rows, columns=INDEX_COLUMNS))
    return path


# --------------------------------------------------------------------------- the whole sweep


def given_variants(vary: list[str], path: str | Path | None, force: bool = False) -> list[Variant]:
    """The variants given on the command line: a variants file's, then the cross product of
    the --vary options ([] if neither); counted before any is built, and bounded unless
    `force` (variants.MAX_VARIANTS)."""
    given = variants.read_block_file(path, force) if path is not None else []
    grid = variants.parse_vary(vary)
    if not grid:
        return given
    count, how = variants.grid_count(grid)
    how = f"{how} values of --vary" + (f", and {len(given)} of {path}" if given else "")
    variants.check_count(len(given) + count, "--vary", how, force)
    return given + variants.cross_product(grid, "--vary", force=True)


def plan_config(
    config: ExperimentConfig, where: str, path: Path | None, given: list[Variant],
    mirror: str | None, force: bool = False,
) -> list[Planned]:  # fmt: skip
    """One config's sweep, checked and planned: the given variants, else the config's own
    `variants:` block (bounded as given ones are, unless `force`)."""
    chosen = given or (variants.config_block(path, force) if path is not None else [])
    if not chosen:
        raise UserError(
            f"{where}: no variants: give --vary KEY=V1,V2, --variants FILE, or a variants: "
            "block in the config"
        )
    return plan(variants.expand(config, chosen, f"{where}: "), f"{where}: ", mirror)


def run_sweeps(plans: list[list[Planned]], out: Path, **options: Any) -> pd.DataFrame:
    """Run every planned sweep; after each config, its rows go into sensitivity.csv."""
    tables = []
    for planned in plans:
        run_planned(planned, out, **options)
        table = sensitivity.panel_rows(planned, out)
        sensitivity.update(out, table)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)
