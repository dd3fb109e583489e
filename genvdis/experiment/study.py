"""`genvdis study`: many configs' tasks in one pool of workers.

Run one after another, each config ends with a tail in which most workers wait for its last
blocks; on a cluster of 100 workers and configs of about 50 tasks, most of the cluster idles
most of the time. Here every config is checked, its data prepared and its run folder locked
before any work starts; then the blocks of all of them go to one pool (`engine.compute`, the
code `genvdis run` computes its one run with: forked processes, loky, threads or dask), the most
expensive config first, so that the last tasks to start are small ones. Each config's files are
committed as soon as its last block is back: the same bytes as `genvdis run` of that config,
since a block's numbers depend only on its config, m and split indices. Checkpoints and "up to
date" are the engine's (`engine.already_done`, `engine.checkpoint_store`), so a killed study
resumes where it stopped.

A config that does not check (its schema, its dataset, its m grid against the classes) is
refused before anything runs, in one line naming it; with `skip` it is left out with a warning
instead and the rest run.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from genvdis._runtime import parallel as backends
from genvdis._runtime import tuning
from genvdis.config import builtin
from genvdis.config.experiment import ExperimentConfig, is_theory_config, load_config, read_yaml
from genvdis.errors import UserError
from genvdis.experiment import engine
from genvdis.progress import Progress, silent
from genvdis.store import lock as runlock

log = logging.getLogger(__name__)

T = TypeVar("T")
STUDY = "study"  # the built-in study's own configs: configs/study/, results in <out>/study/
SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Entry:
    """One config of a study: its file (or built-in name) and the results folder its run
    goes into (`<out>/<name>/`)."""

    source: str
    out: Path


def builtin_entries(out: Path) -> list[Entry]:
    """The built-in study: the Figure 1 panels (configs/*.yaml but theory-*) into `out`, as
    `make panels` writes them, and every config of configs/study/ into `out`/study."""
    panels = [p for p in _yaml_files(builtin.folder()) if not p.name.startswith("theory-")]
    entries = [Entry(str(path), out) for path in panels]
    return entries + [Entry(str(p), out / STUDY) for p in _yaml_files(builtin.folder() / STUDY)]


def collect(paths: Sequence[str | Path], out: Path) -> list[Entry]:
    """The configs `paths` name: a folder stands for its YAML files (not its subfolders),
    in name order; a file, or a built-in config's name, for itself. Every run goes into
    `out`/<name>."""
    entries: list[Entry] = []
    for path in paths:
        if Path(path).is_dir():
            found = _yaml_files(Path(path))
            if not found:
                raise UserError(f"{path}: a folder with no config in it (*.yaml, *.yml)")
            entries += [Entry(str(file), out) for file in found]
        else:
            entries.append(Entry(str(path), out))
    return entries


def _yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES and p.is_file())


def load(entry: Entry) -> ExperimentConfig:
    """The entry's run config; a theory config is refused, naming what runs it."""
    path = builtin.resolve(entry.source, "panel")
    if is_theory_config(read_yaml(path)):
        raise UserError("a theory config: `genvdis theory` runs it, not a study")
    return load_config(path)


def checked(label: str, skip: bool, make: Callable[[], T]) -> T | None:
    """make(), a UserError it raises naming the config `label` (an option's, `--...`, as is);
    with `skip`, that is a warning instead and None comes back: the config is left out."""
    try:
        return make()
    except UserError as error:
        option = str(error).startswith("--")
        message = str(error) if option else f"{label}: {error}"
        if not skip or option:
            raise UserError(message) from None
        log.warning("%s: skipped (--skip-invalid)", message)
        return None


def run_study(
    configs: Sequence[tuple[str, Entry, ExperimentConfig]],
    *,
    jobs: int = 1,
    backend: str = "processes",
    scheduler: str | None = None,
    mirror: str | None = None,
    progress: Progress | None = None,
    force: bool = False,
    wait: bool = False,
    allow_imports: tuple[str, ...] = (),
    skip: bool = False,
) -> list[Path]:
    """Run (or resume, or find finished) every (label, entry, config) in one pool; returns
    the run folders, in the configs' order. Every config is prepared (data, m grid, bounds,
    fingerprint) and every run folder locked before the first task starts."""
    tuning.tune_process()
    cap = jobs if scheduler else backends.worker_cap(jobs, force)
    runs: list[engine.Run] = []
    for label, entry, config in configs:
        prepare = functools.partial(
            engine.prepare_run, config, entry.out, jobs=jobs, backend=backend,
            scheduler=scheduler, mirror=mirror, base_dir=config.data_dir, force=force,
            allow_imports=allow_imports, workers=cap,
        )  # fmt: skip
        prepared = checked(label, skip, prepare)
        if prepared is not None:
            runs.append(prepared[0])
    tasks = sum(run.plan.count for run in runs)
    cpu = sum(run.cpu_seconds for run in runs)
    workers = cap if scheduler else backends.worker_count(jobs, tasks, force, backend, cpu)
    with contextlib.ExitStack() as held:
        for run in runs:
            held.enter_context(runlock.hold(run.run_dir, wait))
        pending = [run for run in runs if not engine.already_done(run)]
        if pending:
            engine.compute(pending, workers, backend, scheduler, progress or silent, STUDY)
    for run in runs:
        engine.say_warnings(run)
    return [run.run_dir for run in runs]
