"""Runs an experiment: every (m, block of splits) task, in parallel, checkpointed.

A task draws its splits (a pure function of seed, m and split index), fits every model on all
of them at once (see `models`), and counts test errors (`scoring`). Tasks are coarse, so
joblib's overhead is negligible; they are independent, so any number of workers, any backend
(`backends`: loky, threads, dask) and any finishing order gives the same numbers; each finished
task is a checkpoint (`results`) when the run is estimated above `planning.CHECKPOINT_FROM` CPU
seconds (a shorter run keeps its blocks in memory: a kill loses about a second). The engine
never prints: progress goes to the callback the caller passes (`progress`), notices to logging.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from genvdis._runtime import kernelcache, shortcalls, streams, tuning
from genvdis._runtime import parallel as backends
from genvdis._version import __version__
from genvdis.config.experiment import ExperimentConfig
from genvdis.data.preprocessing import PreparedData, prepare
from genvdis.data.sources import source_of
from genvdis.data.uci import RawData
from genvdis.experiment import planning, splits
from genvdis.experiment.planning import Plan, plan_tasks
from genvdis.experiment.scoring import EncodedData, count_errors
from genvdis.models import estimators, registry
from genvdis.models.base import BatchFit, LinearModel
from genvdis.models.majority import MODEL as MAJORITY_MODEL
from genvdis.models.majority import Majority, majority_errors
from genvdis.progress import Progress, silent
from genvdis.store import lock as runlock
from genvdis.store import results, runfiles

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Protocol:
    """How splits are drawn: everything a task needs besides the data and the models."""

    seed: int
    policy: str
    test: str | int

    @classmethod
    def of(cls, config: ExperimentConfig) -> Protocol:
        return cls(config.seed, config.split, config.test)


def run_block(
    data: EncodedData, models: list, m: int, block: range, protocol: Protocol
) -> pd.DataFrame:
    """Fit every model on splits `block` at size m; one row per model and split. The built-in
    models fit all splits at once; estimator entries split by split, on the same rows."""
    with tuning.one_thread():  # deterministic BLAS, and no oversubscription across workers
        S = len(block)
        if protocol.test == "rest":  # test on every other row
            train = splits.draw_training_block(data.y, m, protocol.seed, block, protocol.policy)
            test_mask, n_test = None, np.full(S, len(data.y) - m)
        else:
            train, test_mask = splits.draw_block(
                data.y, m, protocol.seed, block, protocol.policy, protocol.test
            )
            n_test = test_mask.sum(axis=1)
        linear = [model for model in models if isinstance(model, LinearModel)]
        errors, fits = _fit_linear(data, linear, m, block, protocol, train, test_mask)
        warned = {}
        for model in models:
            if isinstance(model, estimators.EstimatorModel):
                errors[model.name], warned[model.name] = estimators.score_block(
                    model, data.onehot, data.y, train, test_mask, protocol.seed, block
                )
    frame = pd.DataFrame(
        {
            "model": np.repeat([model.name for model in models], S),
            "m": m,
            "split": np.tile(np.arange(block.start, block.stop), len(models)),
            "n_test": np.tile(n_test, len(models)),
            "errors": np.concatenate([errors[model.name] for model in models]),
        }
    )
    frame["error"] = frame["errors"].to_numpy() / frame["n_test"].to_numpy()
    unfitted = BatchFit(None, None, np.zeros(S, dtype=bool))  # an estimator entry's: no flags
    fitted = [fits.get(x.name, unfitted) for x in models]
    frame["separable"] = np.concatenate([f.separable for f in fitted])
    frame["trajectories"] = np.concatenate([f.trajectories for f in fitted])
    if warned:  # runs with estimator entries only: other runs' files stay as they were
        none = np.zeros(S, dtype=np.int64)
        frame[results.WARNINGS] = np.concatenate([warned.get(x.name, none) for x in models])
    return frame


def _fit_linear(data, models, m, block, protocol, train, test_mask) -> tuple[dict, dict]:
    """The built-in models' test errors, and their fits (separability, trajectories), by name."""
    if not models:
        return {}, {}
    # every model starts its split's stream afresh: its draws never depend on another's
    keys = streams.stream_keys(protocol.seed, m, block, stream=1)
    fits = []
    for model in models:
        Z = data.reference if model.reference_coding else data.onehot
        fits.append(model.fit_batch(Z, data.y, train, keys, **_once_a_run(model, data, Z)))
    # the majority class's errors are counted from the labels (`majority.majority_errors`), the
    # others' scored from their decision values
    counted = [model for model in models if isinstance(model, Majority)]
    scored = [(x, fit) for x, fit in zip(models, fits, strict=True) if not isinstance(x, Majority)]
    errors = {model.name: majority_errors(data.y, train, test_mask) for model in counted}
    if scored:
        classifiers = [data.as_onehot(fit, model.reference_coding) for model, fit in scored]
        ties = [fit.ties for _, fit in scored]
        counts = _score(data, [model for model, _ in scored], classifiers, ties, train, test_mask)
        errors |= {model.name: n for (model, _), n in zip(scored, counts, strict=True)}
    names = [model.name for model in models]
    return errors, dict(zip(names, fits, strict=True))


# Multiply-adds of one scoring call (rows x columns x classifiers): a block is scored in one
# call up to this, else in pieces of splits of about shortcalls.CALL_SECONDS (a 1,000,000-row
# table's 114-split block took 10 s in one call, deaf to Ctrl-C).
SCORE_WORK = 2**28


def _score(data, models, classifiers, ties, train, test_mask) -> np.ndarray:
    """Test errors (models, S) of each model's classifiers (S, ...) and tie bounds (S,),
    counted for all models at once, in pieces of splits (`shortcalls.in_short_calls`): each
    split's count is its own, so the pieces change no number."""
    S, n_models = len(train), len(models)

    def call(a: int, b: int) -> tuple[np.ndarray]:
        coef = np.concatenate([c[a:b] for c in classifiers])  # model-major, as count_errors'
        tie = np.concatenate([t[a:b] for t in ties])
        mask = None if test_mask is None else test_mask[a:b]
        errors = count_errors(data, coef, train[a:b], mask, tie)
        return (errors.reshape(n_models, b - a).T,)

    per_split = len(data.y) * classifiers[0][0].size * n_models
    (errors,) = shortcalls.in_short_calls(call, S, first=max(1, SCORE_WORK // max(per_split, 1)))
    return np.ascontiguousarray(errors.T)


def _once_a_run(model: LinearModel, data: EncodedData, Z: np.ndarray) -> dict:
    """What every batch of a model shares (`model.shared`, a function of Z alone, for a model
    that declares `shares`), built on the first batch a process fits and kept with the data,
    instead of once a batch."""
    if model.shares is None:
        return {}
    key = (model.shares, model.reference_coding)
    if key not in data.derived:
        data.derived[key] = model.shared(Z, data.y)
    return {"shared": data.derived[key]}


def resolve(config: ExperimentConfig, data: PreparedData) -> dict:
    """The config as run, with what produced it: version, data checksums, sizes."""
    counts = data.class_counts
    return {
        **config.model_dump(mode="json"),
        "sizes": config.size_grid,
        "title": config.display_title,
        "genvdis_version": __version__,
        "data_checksums": data.checksums,
        "data_source": data.source,
        "n_rows": data.n_rows,
        "class_counts": dict(zip(data.class_names, counts, strict=True))
        if data.class_names
        else {"negative": counts[0], "positive": counts[1]},
        "features": {
            "continuous": data.layout.n_continuous,
            "discrete": data.layout.n_discrete,
            "levels": list(data.layout.levels),
        },
    }


def check_sizes(config: ExperimentConfig, data: PreparedData) -> None:
    """Every m of the grid holds each class in every training and every test set
    (`splits.check_size`): refused before anything runs, naming the m and the class."""
    for m in config.size_grid:
        splits.check_size(m, data.class_counts, config.test, config.split, data.class_names)


def check_sizes_at_hand(
    config: ExperimentConfig, base_dir: Path, mirror: str | None = None
) -> bool:
    """`validate`'s `check_sizes`, where the data need no download (`Source.at_hand`: a
    registered dataset whose files are in the cache, checksums verified, or in a local mirror
    folder; a local file, a relative path read from `base_dir`, the config's folder). A URL
    (fetched), synthetic data (drawn) and a bundled table are not read here. Returns whether
    the data were at hand (and so checked)."""
    source = source_of(config.dataset, base_dir, mirror)
    if not source.at_hand():
        return False
    check_sizes(config, prepare(source.load(), config))
    return True


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
    checkpointed: bool = True  # planning.checkpointed: False for runs too short to resume
    cpu_seconds: float = 0.0  # the planner's estimate (inf: estimator entries, unknown)

    @property
    def key(self) -> str:
        return self.resolved["fingerprint"]


def run_experiment(
    config: ExperimentConfig,
    out_dir: Path = Path("results"),
    *,
    jobs: int = 1,
    backend: str = "processes",
    scheduler: str | None = None,
    mirror: str | None = None,
    base_dir: Path = Path("."),
    progress: Progress | None = None,
    force: bool = False,
    wait: bool = False,
    allow_imports: tuple[str, ...] = (),
    folder: str | None = None,
    raw: RawData | None = None,
    baseline: bool = True,
) -> Path:
    """Run (or resume) one config; returns the run folder holding the CSVs, `<out_dir>/<folder
    or the config's name>` (a sweep's variants: `<name>/variants/<id>`). The folder is
    locked for the whole run (another run on it is refused, or with `wait` waited for);
    `force` runs what the planner (genvdis.experiment.planning) would refuse, on as many workers as
    asked;
    `allow_imports` are import prefixes estimator entries may use besides sklearn;
    `progress` is told of the blocks as they finish (default: nothing shown); `raw`, the
    config's table if the caller has read it already (a sweep reads each table once);
    `baseline`: whether the run adds the majority-class baseline (`with_baseline`)."""
    tuning.tune_process()  # the run's parent; each worker tunes itself in `_task`
    run, workers = prepare_run(
        config, out_dir, jobs=jobs, backend=backend, scheduler=scheduler, mirror=mirror,
        base_dir=base_dir, force=force, allow_imports=allow_imports, folder=folder, raw=raw,
        baseline=baseline,
    )  # fmt: skip
    with runlock.hold(run.run_dir, wait):
        if not already_done(run):
            compute([run], workers, backend, scheduler, progress or silent)
    say_warnings(run)
    return run.run_dir


def prepare_run(
    config: ExperimentConfig,
    out_dir: Path,
    *,
    jobs: int = 1,
    backend: str = "processes",
    scheduler: str | None = None,
    mirror: str | None = None,
    base_dir: Path = Path("."),
    force: bool = False,
    allow_imports: tuple[str, ...] = (),
    folder: str | None = None,
    raw: RawData | None = None,
    workers: int | None = None,
    baseline: bool = True,
) -> tuple[Run, int]:
    """Everything `run_experiment` checks and builds before it takes the folder's lock: the
    config, its data and m grid, the plan, the bounds, the models and the fingerprint; and
    the workers it will use. `workers`: a count decided by the caller (a study runs many
    configs in one pool), checked against the bounds as given; None: `run`'s own rule;
    `baseline`: as `run_experiment`'s."""
    run_dir = results.prepare_output(out_dir, folder or config.name)
    estimators.check_config(config.models, allow_imports)
    for line in config.unused_settings:
        log.warning("%s: %s: it changes nothing", config.name, line)
    source = source_of(config.dataset, base_dir, mirror)
    if (shape := source.drawn_shape()) is not None:  # drawn in memory before anything runs
        planning.check_synthetic(*shape, force)
    data = prepare(raw if raw is not None else source.load(), config)
    check_sizes(config, data)
    width = data.layout.n_continuous + sum(data.layout.levels) + 1
    plan = plan_tasks(config.size_grid, config.splits, config.block_size, width, data.n_rows)
    names = [spec.name for spec in config.models]
    work = planning.Workload(plan, width, data.n_rows, names)
    # estimator entries' cost is unknown to the estimate: they never stay in-process
    unknown = any(isinstance(spec, estimators.EstimatorSpec) for spec in config.models)
    cpu = math.inf if unknown else work.cpu_seconds()
    if workers is None:
        workers = (
            jobs if scheduler else backends.worker_count(jobs, plan.count, force, backend, cpu)
        )
    planning.check(replace(work, jobs=workers), force, config.name)
    allowed = estimators.allowed_prefixes(allow_imports)
    models = estimators.build_models(config.models, data.layout, allowed, len(data.class_counts))
    resolved = resolve(config, data)
    if baseline:
        models = with_baseline(models, data, resolved)
    if versions := estimators.versions(config.models):  # they change the numbers: fingerprinted
        resolved["estimator_versions"] = versions
    resolved["splits_per_block"] = plan.first_blocks()
    resolved["fingerprint"] = results.fingerprint(resolved)
    encoded = EncodedData.from_prepared(data)
    run = Run(config, run_dir, encoded, models, plan, resolved, planning.checkpointed(cpu), cpu)
    return run, workers


BASELINE = MAJORITY_MODEL.name  # the model every run is read against (models/majority.py)


def with_baseline(models: list, data: PreparedData, resolved: dict) -> list:
    """The run's models with the majority-class baseline last, where the config does not
    list it already: every learning curve is read against it (docs/analysis.md). Last, and
    on its own random stream (it draws none), so no other model's rows or numbers move; its
    fit is a count of the training labels. The resolved config records it (`baseline`), so
    the fingerprint tells a run with it from one without."""
    resolved["baseline"] = BASELINE
    if any(model.name == BASELINE for model in models):
        return models
    info = registry.model_info(BASELINE)
    return [*models, info.build({}, data.layout, len(data.class_counts))]


def say_warnings(run: Run) -> None:
    """Estimator entries' warnings, once, from the committed summary (other runs: nothing)."""
    if "estimator_versions" in run.resolved:
        for line in estimators.warning_lines(runfiles.read_summary(run.run_dir)):
            log.warning("%s: %s", run.config.name, line)


def already_done(run: Run) -> bool:
    """Whether the folder holds this run, verified by its manifest; rebuilds summary.csv and
    config.yaml from a verified errors.csv if they are missing or changed."""
    name, run_dir = run.config.name, run.run_dir
    verdict = results.verify(run_dir, run.key)
    if verdict.complete:
        log.info("%s: up to date (%s)", name, run_dir)
        results.remove_checkpoints(run_dir)  # left by a kill after the commit
        with results.writing(run_dir, "the results"):
            results.committed(run_dir)  # likewise
        return True
    if verdict.errors_ok:
        model_names = [m.name for m in run.models]
        results.write_results(
            run_dir, runfiles.read_errors(run_dir, checked=False), run.resolved, model_names
        )
        log.info("%s: %s: rebuilt from errors.csv (%s)", name, verdict.problem, run_dir)
        return True
    if verdict.problem:
        log.info("%s: %s holds no finished run (%s): computing it", name, run_dir, verdict.problem)
    return False


# said before a run's first blocks where numba's cache folder is empty: the kernels compile then
COMPILING = (
    "compiling genvdis's kernels for this machine (numba; once after an install or an update, "
    "then cached): this run starts slower"
)


def compute(
    runs: list[Run], jobs: int, backend: str, scheduler: str | None, progress: Progress,
    label: str | None = None,
) -> None:  # fmt: skip
    """Every block of `runs` not checkpointed yet, on one pool of workers, the blocks of the
    run estimated costliest first (so that the last blocks handed out are the cheapest's);
    each run committed as soon as its last block is saved, while the pool works on. One run
    for `genvdis run`; every config of `genvdis study` (`label`: the progress bar's name, and
    the commits are logged as the study's)."""
    stores = [checkpoint_store(run) for run in runs]
    started = time.perf_counter()
    parallel = backends.parallel(backend, jobs, scheduler, scatter=[run.encoded for run in runs])
    # the limit is process-wide: set it around the whole run too, or thread workers
    # (backend threading, in-process dask) undo each other's limit on exit
    with tuning.one_thread(), parallel:
        todo: list[list[tuple[int, range]]] = []
        for run, store in zip(runs, stores, strict=True):
            kept = store.open()  # once the backend is up: a bad --scheduler leaves no run folder
            if kept:
                name, count = run.config.name, run.plan.count
                log.info("%s: resuming, %d of %d blocks already done", name, kept, count)
            todo.append([(m, block) for m, block in run.plan if not store.done(m, block.start)])
        left = [len(blocks) for blocks in todo]
        for i in [i for i, n in enumerate(left) if n == 0]:  # killed after its last block
            _commit(runs[i], stores[i], 0, started, label)
        if not kernelcache.compiled_before():
            log.info(COMPILING)
        order = sorted(range(len(runs)), key=lambda i: -runs[i].cpu_seconds)  # longest first
        protocols = [Protocol.of(run.config) for run in runs]
        calls = [
            (i, runs[i].encoded, runs[i].models, m, block, protocols[i])
            for i in order
            for m, block in todo[i]
        ]
        total = sum(run.plan.count for run in runs)
        with progress(label or runs[0].config.name, total) as bar, _ctrl_c():
            bar(total - len(calls))
            for i, m, start, block in backends.map_unordered(_tagged, calls, backend, jobs):
                stores[i].save(m, start, block)
                bar(1)
                left[i] -= 1
                if left[i] == 0:
                    _commit(runs[i], stores[i], len(todo[i]), started, label)


def _commit(
    run: Run, store: results.CheckpointStore, computed: int, started: float, label: str | None
) -> None:
    """`commit`, logged: the run's blocks and seconds, or its time into the study."""
    seconds, name = time.perf_counter() - started, run.config.name
    if label is None:
        log.info("%s: %d blocks in %.1f s", name, computed, seconds)
    commit(run, store)
    if label is not None:
        log.info("%s: wrote %s (%.1f s into the %s)", name, run.run_dir, seconds, label)


def checkpoint_store(run: Run) -> results.CheckpointStore:
    """The run's checkpoints (on disk only for a run worth resuming), not opened yet."""
    plan = run.plan
    return results.CheckpointStore(
        run.run_dir, run.key, plan.blocks, plan.n_splits, len(run.models), run.checkpointed
    )


def commit(run: Run, store: results.CheckpointStore) -> None:
    """Every block is done: the run's files, committed at once; the checkpoints go."""
    results.write_results(run.run_dir, store.load_all(), run.resolved, [m.name for m in run.models])
    store.remove()


@contextlib.contextmanager
def _ctrl_c() -> Iterator[None]:
    """Ctrl-C as KeyboardInterrupt. Python runs its SIGINT handler once a compiled kernel
    returns; when that is while numba boxes the kernel's results, numba raises SystemError
    over the KeyboardInterrupt (numba 0.6x): said as what it is, not as an internal error."""
    try:
        yield
    except SystemError as error:
        cause: BaseException | None = error
        while cause is not None and not isinstance(cause, KeyboardInterrupt):
            cause = cause.__context__ or cause.__cause__
        if cause is None:
            raise
        raise KeyboardInterrupt from None


def _tagged(index: int, *args) -> tuple[int, int, int, results.Block]:
    """`_task`, its result tagged with its run's place in `compute`'s list."""
    return (index, *_task(*args))


def _task(data, models, m, block, protocol) -> tuple[int, int, results.Block]:
    """One block, in whatever process the backend runs it: that process is tuned first. The
    block comes back as its checkpoint's text and rows (`results.Block`), made here so that
    the client, which saves every block of the run, only hashes and writes them."""
    tuning.tune_process()
    return m, block.start, results.Block.of(run_block(data, models, m, block, protocol))
