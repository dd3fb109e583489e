"""Runs an experiment: every (m, block of splits) task, in parallel, checkpointed.

A task draws its splits (a pure function of seed, m and split index), fits every model on all
of them at once (see `models`), and counts test errors. Tasks are coarse, so joblib's overhead
is negligible; they are independent, so any number of workers, any backend (loky, threads,
dask) and any finishing order gives the same numbers; each finished task is a checkpoint.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import joblib
import numba
import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from genvdis import __version__, backends, datasets, planning, results, runlock, splits, streams
from genvdis.config import ExperimentConfig, FileDataset, SyntheticSource
from genvdis.errors import UserError
from genvdis.models import BatchFit, LinearModel, build_model
from genvdis.planning import Plan, plan_tasks
from genvdis.preprocessing import FeatureLayout, PreparedData, prepare

log = logging.getLogger(__name__)

MALLOC_KEEP_BYTES = 1 << 30


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse instead of returning it to the system.

    By default glibc serves blocks over 128 KB with fresh pages (mmap) and hands freed memory
    back at once. The engine's numpy temporaries (splits x rows) are just that size, so every
    elementwise operation then page-faults its output into existence: measured here, exp on
    48,000 numbers took 8 ns a number instead of 1. Raising both thresholds (mallopt
    M_MMAP_THRESHOLD and M_TRIM_THRESHOLD) makes the engine's elementwise work 3-7x faster
    and changes no result. A no-op where the C library has no mallopt (macOS, musl)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    mallopt(M_TRIM_THRESHOLD, MALLOC_KEEP_BYTES)
    mallopt(M_MMAP_THRESHOLD, 32 * 2**20)  # glibc's maximum on 64-bit


_THREADPOOLS: list[ThreadpoolController] = []


def one_thread() -> contextlib.AbstractContextManager:
    """Limit BLAS and OpenMP to one thread. The controller that finds the process's thread
    pools is built once per process: building it reads /proc/self/maps, ~3 ms, which per task
    cost more than fitting a small block. The compiled kernels' np.dot and np.linalg call
    scipy's own OpenBLAS (numba loads it through scipy.linalg.cython_blas on first call), a
    second library beside numpy's: load it first, or the controller misses it and it runs on
    every core."""
    if not _THREADPOOLS:
        import scipy.linalg.cython_blas  # noqa: F401

        _THREADPOOLS.append(ThreadpoolController())
    return _THREADPOOLS[0].limit(limits=1)


keep_freed_memory()  # on import: in the main process and in every worker that unpickles a task


@dataclass
class EncodedData:
    """The data in both encodings the models use, computed once per run, and the one-hot rows
    in class order with an intercept column, the layout that scoring is fastest on."""

    onehot: np.ndarray
    reference: np.ndarray
    y: np.ndarray
    reference_columns: np.ndarray  # where each reference-coded column sits in `onehot`
    scoring: np.ndarray  # [onehot | 1], negatives first, then positives
    rank: np.ndarray  # row i of the data is row rank[i] of `scoring`
    n_negative: int
    scoring32: np.ndarray  # `scoring` in single precision: scoring's first, fast pass
    column_max: np.ndarray  # max |value| of each scoring column: bounds single's rounding

    @property
    def width(self) -> int:
        """Columns of the widest design a model fits (one-hot plus an intercept)."""
        return self.onehot.shape[1] + 1

    @classmethod
    def from_prepared(cls, data: PreparedData) -> EncodedData:
        return cls.encode(data.X, data.y, data.layout)

    @classmethod
    def encode(cls, X: np.ndarray, y: np.ndarray, layout: FeatureLayout) -> EncodedData:
        columns = layout.reference_columns()  # the encoding's levels (preprocessing.encoding)
        y = np.asarray(y)
        onehot = layout.onehot(X)
        order = np.argsort(y, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        scoring = np.ascontiguousarray(np.column_stack([onehot, np.ones(len(y))])[order])
        with np.errstate(over="ignore"):  # values beyond single's range: scored in double
            scoring32 = scoring.astype(np.float32)
        return cls(
            onehot, np.ascontiguousarray(onehot[:, columns]), y, columns,
            scoring, rank, int((y == 0).sum()), scoring32, np.abs(scoring).max(axis=0, initial=0.0),
        )  # fmt: skip

    def as_onehot(self, fit: BatchFit, reference_coding: bool) -> np.ndarray:
        """(S, D + 1) coefficients on the one-hot columns, then the intercept: a reference-
        coded classifier is the one-hot one with weight 0 on each dropped level."""
        coef = np.zeros((fit.coef.shape[0], self.width))
        if reference_coding:
            coef[:, self.reference_columns] = fit.coef
        else:
            coef[:, :-1] = fit.coef
        coef[:, -1] = fit.intercept
        return coef


SCORE_BYTES = 2**19  # a chunk of decision values stays in a core's L2 cache


@streams.jit
def _count_wrong(
    decision: np.ndarray, tolerance: np.ndarray, rows: np.ndarray, coef: np.ndarray,
    positive: bool, errors: np.ndarray, tested: np.ndarray | None,
) -> None:  # fmt: skip
    """Add to errors (K,) a chunk's wrong decisions: non-positive values on positive rows,
    positive values on negative ones; on every row, or on the rows `tested` (rows, S) marks
    for classifier k's split k % S.

    `decision` (rows, K) holds single-precision values, within `tolerance` (K,) of the exact
    ones; the few within it of 0 are recomputed in double precision from `rows` (rows, D + 1)
    and `coef` (D + 1, K), so every count is the double-precision one. Compiled, the
    comparisons run in SIMD registers (in numpy, with boolean temporaries, they took two thirds
    of scoring); the bounds are single precision like the values, so none is widened.
    A NaN is wrong (not v <= t is one comparison, as v > t is)."""
    n_rows, K = decision.shape
    for r in range(n_rows):
        values, unsure = decision[r], False
        # a value is wrong beyond its tolerance on the wrong side: v < -t on positive rows,
        # v > t on negative ones, i.e. (-v or v) > t; negating is exact
        if tested is None:
            for k in range(K):
                v = -values[k] if positive else values[k]
                errors[k] += not v <= tolerance[k]
                unsure |= abs(v) <= tolerance[k]
        else:
            marks, S = tested[r], tested.shape[1]
            for first in range(0, K, S):
                for s in range(S):
                    k = first + s
                    v = -values[k] if positive else values[k]
                    errors[k] += marks[s] & (not v <= tolerance[k])
                    unsure |= abs(v) <= tolerance[k]
        if not unsure:
            continue
        for k in range(K):
            if abs(values[k]) <= tolerance[k] and (
                tested is None or tested[r, k % tested.shape[1]]
            ):
                errors[k] += _wrong_in_double(rows[r], coef, k, positive)


@streams.jit
def _wrong_in_double(row: np.ndarray, coef: np.ndarray, k: int, positive: bool) -> bool:
    """Whether classifier k (column k of coef) gets the row wrong, decided in double; a value
    that is not finite (overflow, or NaN weights) is wrong."""
    exact = 0.0
    for j in range(row.size):
        exact += row[j] * coef[j, k]
    if not abs(exact) < np.inf:
        return True
    return exact <= 0.0 if positive else exact > 0.0


@numba.njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def _wrong_on_rows(
    fast: np.ndarray, fast_classifiers: np.ndarray, tolerance: np.ndarray, scoring: np.ndarray,
    coef: np.ndarray, rows: np.ndarray, n_negative: int,
) -> np.ndarray:  # fmt: skip
    """(K,) wrong decisions of classifier k on the scoring rows rows[k % S] (rows (S, m)),
    decided as `_count_wrong` decides them: what `count_errors` takes off a count over every
    row to leave the test rows. Each split's rows are copied feature-major out of the single-
    precision copy (`fast`, just streamed through the cache) once for all of its classifiers
    (fast_classifiers (K, D + 1)), whose decision values then take one SIMD pass a feature."""
    S, K = rows.shape[0], fast_classifiers.shape[0]
    m, D = rows.shape[1], fast.shape[1]
    wrong = np.zeros(K, dtype=np.int64)
    block, values = np.empty((D, m), dtype=fast.dtype), np.empty(m, dtype=fast.dtype)
    for s in range(S):
        at = rows[s]
        for i in range(m):
            for j in range(D):
                block[j, i] = fast[at[i], j]
        for k in range(s, K, S):
            w, bound, unsure = fast_classifiers[k], tolerance[k], False
            for i in range(m):
                values[i] = w[0] * block[0, i]
            for j in range(1, D):
                for i in range(m):
                    values[i] += w[j] * block[j, i]
            for i in range(m):  # decided as in `_count_wrong`
                v = -values[i] if at[i] >= n_negative else values[i]
                wrong[k] += not v <= bound
                unsure |= abs(v) <= bound
            if unsure:
                for i in range(m):
                    if abs(values[i]) <= bound:
                        wrong[k] += _wrong_in_double(scoring[at[i]], coef, k, at[i] >= n_negative)
    return wrong


@streams.jit
def _count_in_chunks(
    fast: np.ndarray, fast_coef: np.ndarray, tolerance: np.ndarray, scoring: np.ndarray,
    coef: np.ndarray, n_negative: int, chunk: int, tested: np.ndarray | None,
) -> np.ndarray:  # fmt: skip
    """`_count_wrong` over every chunk of rows, each chunk's decision values one BLAS product
    (numba calls it; a Python loop's calls cost as much as the products)."""
    errors = np.zeros(fast_coef.shape[1], dtype=np.int32)
    n = fast.shape[0]
    for first, last, positive in ((0, n_negative, False), (n_negative, n, True)):
        for start in range(first, last, chunk):
            stop = min(start + chunk, last)
            decision = np.dot(fast[start:stop], fast_coef)
            rows = scoring[start:stop]
            if tested is None:
                _count_wrong(decision, tolerance, rows, coef, positive, errors, None)
            else:
                _count_wrong(decision, tolerance, rows, coef, positive, errors, tested[start:stop])
    return errors


class NonFiniteDecisions(ArithmeticError):
    """Classifiers whose decision values may not be finite (NaN or overflowing weights): a
    bug, since the data are finite and bounded (`preprocessing.MAX_VALUE`). `errors` holds
    the counts, every non-finite decision counted as wrong."""

    def __init__(self, message: str, errors: np.ndarray) -> None:
        super().__init__(message)
        self.errors = errors


# Single precision is used while every |x_j| and every sum_j |x_j w_j| stays below this (far
# from its overflow, ~2^128); double while sum_j |x_j w_j| stays below DOUBLE_REACH.
SINGLE_REACH, DOUBLE_REACH = 2.0**100, 2.0**1000


def _scoring_precision(
    data: EncodedData, coef: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows, weights and tolerances scoring runs on (single precision where nothing can
    overflow it, else double), and which classifiers are sane: sum_j |x_j w_j| is finite and
    below DOUBLE_REACH on every row, so no decision value can overflow. The others get an
    infinite tolerance: each of their values is then decided in double, non-finite as wrong.

    Rounding x and w and summing D + 1 products moves x.w by at most (D + 3) u sum_j |x_j w_j|
    (u the unit roundoff: 2^-24 in single, 2^-53 in double), plus, where a weight or a product
    falls below the normal range (2^-126 in single), that a term times |x_j| + 1 (even with
    subnormals flushed to 0). The tolerance is twice the sum, rounded up to single."""
    d = coef.shape[0]
    scale = 1.0 + data.column_max.max(initial=0.0)  # bounds |x_j| + 1
    with np.errstate(over="ignore", invalid="ignore"):
        reach = data.column_max @ np.abs(coef)  # bounds |x.w| on every row
        sane = reach < DOUBLE_REACH  # False for NaN
        fast_coef = coef.astype(np.float32)
    single = sane.all() and max(reach.max(initial=0.0), scale) < SINGLE_REACH
    if single and np.isfinite(fast_coef).all():
        bound = _tolerance(d, reach, scale, sane, 2.0**-24, 2.0**-126).astype(np.float32)
        return data.scoring32, fast_coef, np.nextafter(bound, np.float32(np.inf)), sane
    # weights or values beyond single's range: all in double
    return data.scoring, coef, _tolerance(d, reach, scale, sane, 2.0**-53, 2.0**-1022), sane


def _tolerance(d, reach, scale, sane, u: float, tiny: float) -> np.ndarray:
    """Twice the rounding bound of `_scoring_precision` (u the unit roundoff, tiny the
    smallest normal number); infinite where a classifier is not sane."""
    return np.where(sane, 2 * ((d + 3) * u * np.where(sane, reach, 0.0) + d * tiny * scale), np.inf)


def count_errors(
    data: EncodedData,
    classifiers: np.ndarray,
    train: np.ndarray,
    test_mask: np.ndarray | None = None,
) -> np.ndarray:
    """Test errors of K classifiers (K, D + 1) on S splits, K a multiple of S (classifier k
    belongs to split k % S, whose training rows are train[k % S]); each split tests on every
    other row, or on the rows test_mask (S, n) marks.

    The decision values are computed one chunk of rows at a time, for every classifier at once
    (one BLAS product per chunk), and counted while the chunk is still in cache; rows come in
    class order, so a chunk's errors are simply its positive (or non-positive) values. When a
    split tests on every other row, the count runs over all rows, unmarked, and the training
    rows' errors are taken off after; a rows x splits mask cost as much as the count.

    The product runs in single precision (twice the SIMD width of double: ~2x faster), and
    values too close to 0 for its rounding to decide are recomputed in double (see
    `_scoring_precision`). A decision value that is not finite counts as wrong, and raises
    `NonFiniteDecisions` once all are counted: no such value is ever scored silently."""
    coef = np.ascontiguousarray(classifiers.T)
    fast, fast_coef, fast_tolerance, sane = _scoring_precision(data, coef)
    tested = None if test_mask is None else np.ascontiguousarray(test_mask.T[np.argsort(data.rank)])
    chunk = max(64, SCORE_BYTES // (fast.itemsize * classifiers.shape[0]))
    errors = _count_in_chunks(
        fast, fast_coef, fast_tolerance, data.scoring, coef, data.n_negative, chunk, tested
    ).astype(np.int64)
    if tested is None:
        errors -= _wrong_on_rows(
            fast, np.ascontiguousarray(fast_coef.T), fast_tolerance, data.scoring, coef,
            data.rank[train], data.n_negative,
        )  # fmt: skip
    if not sane.all():
        S, m = train.shape
        models = sorted({int(k) // S + 1 for k in np.flatnonzero(~sane)})
        raise NonFiniteDecisions(
            f"m={m}: {int((~sane).sum())} classifier(s) of model(s) {models} (in the config's "
            "order) have weights that are not finite or so large that decision values may "
            "overflow; counted as wrong where they do. Please report this with the config",
            errors,
        )
    return errors


@dataclass(frozen=True)
class Protocol:
    """How splits are drawn: everything a task needs besides the data and the models."""

    seed: int
    policy: str
    test: str | int

    @classmethod
    def of(cls, config: ExperimentConfig) -> Protocol:
        return cls(config.seed, config.split, config.test)


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
    with one_thread():  # deterministic BLAS, and no oversubscription across workers
        S = len(block)
        if protocol.test == "rest":  # test on every other row
            train = splits.draw_training_block(data.y, m, protocol.seed, block, protocol.policy)
            test_mask, n_test = None, np.full(S, len(data.y) - m)
        else:
            train, test_mask = splits.draw_block(
                data.y, m, protocol.seed, block, protocol.policy, protocol.test
            )
            n_test = test_mask.sum(axis=1)
        # every model starts its split's stream afresh: its draws never depend on another's
        keys = streams.stream_keys(protocol.seed, m, block, stream=1)
        fits = []
        for model in models:
            Z = data.reference if model.reference_coding else data.onehot
            fits.append(model.fit_batch(Z, data.y, train, keys))
        classifiers = [
            data.as_onehot(fit, model.reference_coding)
            for fit, model in zip(fits, models, strict=True)
        ]
        errors = count_errors(data, np.vstack(classifiers), train, test_mask)
        errors = errors.reshape(len(models), S)
    return pd.DataFrame(
        {
            "model": np.repeat([model.name for model in models], S),
            "m": m,
            "split": np.tile(np.arange(block.start, block.stop), len(models)),
            "n_test": np.tile(n_test, len(models)),
            "errors": errors.ravel(),
            "error": errors.ravel() / np.tile(n_test, len(models)),
            "separable": np.concatenate([fit.separable for fit in fits]),
            "trajectories": np.concatenate([fit.trajectories for fit in fits]),
        }
    )


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


@dataclass
class Run:
    """Everything a run needs once its config and data are checked: what `run_experiment`
    hands to the locked part."""

    config: ExperimentConfig
    run_dir: Path
    encoded: EncodedData
    models: list[LinearModel]
    plan: Plan
    resolved: dict

    @property
    def key(self) -> str:
        return self.resolved["fingerprint"]


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
    force: bool = False,
    wait: bool = False,
) -> Path:
    """Run (or resume) one config; returns the run folder holding the CSVs. The folder is
    locked for the whole run (another run on it is refused, or with `wait` waited for);
    `force` runs what the planner (genvdis.planning) would refuse, on as many workers as asked."""
    run_dir = results.prepare_output(out_dir, config.name)
    if isinstance(config.dataset, SyntheticSource):
        spec = config.dataset.synthetic
        planning.check_synthetic(spec.n_rows, spec.n_features, spec.kind, force)
    data = prepare(load_data(config, base_dir, mirror), config)
    for m in config.size_grid:
        splits.check_size(m, data.class_counts, config.test)
    width = data.layout.n_continuous + sum(data.layout.levels) + 1
    plan = plan_tasks(config.size_grid, config.splits, config.block_size, width, data.n_rows)
    workers = jobs if scheduler else backends.worker_count(jobs, plan.count, force)
    names = [spec.name for spec in config.models]
    planning.check(planning.Workload(plan, width, data.n_rows, names, workers), force, config.name)
    models = [build_model(spec, data.layout) for spec in config.models]
    resolved = resolve(config, data)
    resolved["splits_per_block"] = plan.first_blocks()
    resolved["fingerprint"] = results.fingerprint(resolved)
    run = Run(config, run_dir, EncodedData.from_prepared(data), models, plan, resolved)
    with runlock.hold(run_dir, wait):
        if not _already_done(run):
            _compute(run, workers, backend, scheduler, progress)
    return run_dir


def _already_done(run: Run) -> bool:
    """Whether the folder holds this run, verified by its manifest; rebuilds summary.csv and
    config.yaml from a verified errors.csv if they are missing or changed."""
    name, run_dir = run.config.name, run.run_dir
    verdict = results.verify(run_dir, run.key)
    if verdict.complete:
        log.info("%s: up to date (%s)", name, run_dir)
        results.remove_checkpoints(run_dir)  # left by a kill after the commit
        return True
    if verdict.errors_ok:
        model_names = [m.name for m in run.models]
        results.write_results(run_dir, results.read_errors(run_dir), run.resolved, model_names)
        log.info("%s: %s: rebuilt from errors.csv (%s)", name, verdict.problem, run_dir)
        return True
    if verdict.problem:
        log.info("%s: %s holds no finished run (%s): computing it", name, run_dir, verdict.problem)
    return False


def _compute(run: Run, jobs: int, backend: str, scheduler: str | None, progress: bool) -> None:
    """Every block not checkpointed yet, in parallel, then the results, committed at once."""
    config, plan, n_models = run.config, run.plan, len(run.models)
    store = results.CheckpointStore(run.run_dir, run.key, plan.blocks, plan.n_splits, n_models)
    protocol = Protocol.of(config)
    started = time.perf_counter()
    parallel = backends.parallel(backend, jobs, scheduler, scatter=[run.encoded])
    # the limit is process-wide: set it around the whole run too, or thread workers
    # (backend threading, in-process dask) undo each other's limit on exit
    with one_thread(), parallel:
        kept = store.open()  # once the backend is up: a bad --scheduler leaves no run folder
        todo = ((m, block) for m, block in plan if not store.done(m, block.start))
        if kept:
            log.info("%s: resuming, %d of %d blocks already done", config.name, kept, plan.count)
        with _progress(progress, config.name, plan.count) as bar:
            bar(kept)
            runner = joblib.Parallel(return_as="generator_unordered")
            outputs = runner(
                joblib.delayed(_task)(run.encoded, run.models, m, block, protocol)
                for m, block in todo
            )
            for m, start, frame in outputs:
                store.save(m, start, frame)
                bar(1)
    elapsed = time.perf_counter() - started
    log.info("%s: %d blocks in %.1f s", config.name, plan.count - kept, elapsed)
    results.write_results(run.run_dir, store.load_all(), run.resolved, [m.name for m in run.models])
    store.remove()


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
