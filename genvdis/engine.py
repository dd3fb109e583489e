"""Runs an experiment: every (m, block of splits) task, in parallel, checkpointed.

A task draws its splits (a pure function of seed, m and split index), fits every model on all
of them at once (see `models`), and counts test errors. Tasks are coarse, so joblib's overhead
is negligible; they are independent, so any number of workers, any backend (loky, threads,
dask) and any finishing order gives the same numbers; each finished task is a checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from genvdis import __version__, datasets, results, splits
from genvdis.config import ExperimentConfig, FileDataset, SyntheticSource
from genvdis.errors import UserError
from genvdis.models import LinearModel, build_model
from genvdis.preprocessing import PreparedData, prepare

log = logging.getLogger(__name__)


@dataclass
class EncodedData:
    """The data in both encodings the models use, computed once per run."""

    onehot: np.ndarray
    reference: np.ndarray
    y: np.ndarray

    @property
    def width(self) -> int:
        """Columns of the widest design a model fits (one-hot plus an intercept)."""
        return self.onehot.shape[1] + 1

    @classmethod
    def from_prepared(cls, data: PreparedData) -> EncodedData:
        return cls(data.layout.onehot(data.X), data.layout.onehot(data.X, drop_first=True), data.y)


@dataclass(frozen=True)
class Protocol:
    """How splits are drawn: everything a task needs besides the data and the models."""

    seed: int
    policy: str
    test: str | int


def load_data(
    config: ExperimentConfig, base_dir: Path = Path("."), mirror: str | None = None
) -> datasets.RawData:
    """The raw table a config names: registered, a user's file, or synthetic."""
    source = config.dataset
    if isinstance(source, str):
        return datasets.load_registered(source, mirror=mirror)
    if isinstance(source, FileDataset):
        return datasets.load_file_dataset(source, base_dir=base_dir)
    if isinstance(source, SyntheticSource):
        from genvdis import synthetic

        return synthetic.load_synthetic(source.synthetic)
    raise UserError(f"dataset: unsupported source {source!r}")


def run_block(
    data: EncodedData, models: list[LinearModel], m: int, block: range, protocol: Protocol
) -> pd.DataFrame:
    """Fit every model on splits `block` at size m; one row per model and split."""
    with threadpool_limits(1):  # deterministic BLAS, and no oversubscription across workers
        if protocol.test == "rest":  # test on every other row: count errors, minus training's
            train = splits.draw_training_block(data.y, m, protocol.seed, block, protocol.policy)
            test_mask = None
            n_test = np.full(len(block), len(data.y) - m)
        else:
            train, test_mask = splits.draw_block(
                data.y, m, protocol.seed, block, protocol.policy, protocol.test
            )
            n_test = test_mask.sum(axis=1)
        frames = []
        for model in models:
            Z = data.reference if model.reference_coding else data.onehot
            # fresh generators per model: a model's draws never depend on another model's
            rngs = [splits.split_rng(protocol.seed, m, s, stream=1) for s in block]
            fit = model.fit_batch(Z, data.y, train, rngs)
            wrong = (fit.decision(Z) > 0) != data.y[:, None].astype(bool)  # (rows, splits)
            if test_mask is None:
                errors = wrong.sum(axis=0) - wrong[train.T, np.arange(len(block))].sum(axis=0)
            else:
                errors = (wrong & test_mask.T).sum(axis=0)
            frames.append(
                pd.DataFrame(
                    {
                        "model": model.name,
                        "m": m,
                        "split": np.arange(block.start, block.stop),
                        "n_test": n_test,
                        "errors": errors,
                        "error": errors / n_test,
                        "separable": fit.separable,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


BLOCK_BYTES = 64 * 2**20  # a block's largest arrays stay near this
MAX_BLOCK = 250


def auto_block_size(m: int, width: int, n_rows: int = 0) -> int:
    """Splits per task: big enough to amortise Python overhead, small enough that a task's
    arrays (the training tensor, splits x m x width, and the scores, rows x splits, a few
    of each) keep a worker well under 1 GB."""
    per_split = 8 * (m * max(width, 1) + 4 * n_rows)
    return int(np.clip(BLOCK_BYTES // per_split, 5, MAX_BLOCK))


def plan_tasks(
    sizes: list[int], n_splits: int, block_size: int | None, width: int = 1, n_rows: int = 0
) -> list[tuple[int, range]]:
    """(m, block of split indices) for every m. Results do not depend on the blocks: each
    split has its own random streams, so blocks only set memory use and checkpoint size."""
    tasks = []
    for m in sizes:
        size = block_size or auto_block_size(m, width, n_rows)
        tasks += [
            (m, range(start, min(start + size, n_splits))) for start in range(0, n_splits, size)
        ]
    return tasks


@contextlib.contextmanager
def _backend(
    backend: str, jobs: int, scheduler: str | None, scatter: list | None = None
) -> Iterator[None]:
    """joblib's backend for the run; with dask, `scatter` (the data) is sent to workers once."""
    if backend != "dask":
        with joblib.parallel_config(backend=backend, n_jobs=jobs):
            yield
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UserError("--backend dask needs: pip install 'genvdis[dask]'") from None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, ValueError) as error:  # unreachable, or not an address at all
            raise UserError(f"--scheduler: cannot reach {scheduler}: {error}") from None
        cluster = None
    else:
        cluster = LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None,
        )  # fmt: skip
        client = Client(cluster)
    try:
        with joblib.parallel_config(backend="dask", n_jobs=-1, scatter=scatter):
            yield
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def resolve(config: ExperimentConfig, data: PreparedData) -> dict:
    """The config as run, with what produced it: version, data checksums, sizes."""
    n0, n1 = data.class_counts
    return {
        **config.model_dump(mode="json"),
        "sizes": config.size_grid,
        "title": config.display_title,
        "genvdis_version": __version__,
        "data_checksums": data.checksums,
        "data_source": data.source,
        "n_rows": data.n_rows,
        "class_counts": {"negative": n0, "positive": n1},
        "features": {
            "continuous": data.layout.n_continuous,
            "discrete": data.layout.n_discrete,
            "levels": list(data.layout.levels),
        },
    }


def run_experiment(
    config: ExperimentConfig,
    out_dir: Path = Path("results"),
    *,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    mirror: str | None = None,
    base_dir: Path = Path("."),
    progress: bool = True,
) -> Path:
    """Run (or resume) one config; returns the run folder holding the CSVs."""
    run_dir = results.prepare_output(out_dir, config.name)
    data = prepare(load_data(config, base_dir, mirror), config)
    for m in config.size_grid:
        splits.check_size(m, data.class_counts, config.test)
    models = [build_model(spec, data.layout) for spec in config.models]
    encoded = EncodedData.from_prepared(data)
    tasks = plan_tasks(
        config.size_grid, config.splits, config.block_size, encoded.width, len(encoded.y)
    )
    resolved = resolve(config, data)
    resolved["splits_per_block"] = {m: len(block) for m, block in tasks if block.start == 0}
    key = results.fingerprint(resolved)
    resolved["fingerprint"] = key
    previous = results.read_resolved(run_dir)
    if previous and previous.get("fingerprint") == key and (run_dir / "errors.csv").exists():
        log.info("%s: up to date (%s)", config.name, run_dir)
        return run_dir
    store = results.CheckpointStore(run_dir, key)
    protocol = Protocol(config.seed, config.split, config.test)
    started = time.perf_counter()
    parallel = _backend(backend, jobs, scheduler, scatter=[encoded])
    # threadpool_limits is process-wide: set it around the whole run too, or thread workers
    # (backend threading, in-process dask) undo each other's limit on exit
    with threadpool_limits(1), parallel:
        kept = store.open()  # once the backend is up: a bad --scheduler leaves no run folder
        todo = [(m, block) for m, block in tasks if not store.done(m, block.start)]
        if kept:
            log.info("%s: resuming, %d of %d blocks already done", config.name, kept, len(tasks))
        with _progress(progress, config.name, len(tasks)) as bar:
            bar(len(tasks) - len(todo))
            runner = joblib.Parallel(return_as="generator_unordered")
            outputs = runner(
                joblib.delayed(_task)(encoded, models, m, block, protocol) for m, block in todo
            )
            for m, start, frame in outputs:
                store.save(m, start, frame)
                bar(1)
    log.info("%s: %d blocks in %.1f s", config.name, len(todo), time.perf_counter() - started)
    results.write_results(run_dir, store.load_all(), resolved, [m.name for m in models])
    store.remove()
    return run_dir


def _task(data, models, m, block, protocol) -> tuple[int, int, pd.DataFrame]:
    return m, block.start, run_block(data, models, m, block, protocol)


@contextlib.contextmanager
def _progress(enabled: bool, name: str, total: int):
    """A rich progress bar with an ETA, or nothing (--quiet, or not a terminal)."""
    if not enabled:
        yield lambda n: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task(name, total=total)
        yield lambda n: bar.advance(task, n)
