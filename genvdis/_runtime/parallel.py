"""Where work runs: a run's tasks on worker processes (forked from the run's process where
that is safe, else loky's), threads or a dask cluster (`parallel`, `map_unordered`), and
independent per-run work (a panel's analysis, a figure, a theory's n) on forked processes
(`map_ordered`), with one rule for how many workers (`worker_count`).

Results never depend on this choice (see genvdis.experiment.engine); what it must get right is
the machine's share: no more workers than tasks or cores (unless asked, with --force), no
worker that outlives the run (a loky worker left behind by kill -9 would otherwise wait out its
idle timeout holding the caller's stdout and stderr), and a dask cluster that can actually run
something. The per-run work forks rather than using loky: a forked worker starts in
milliseconds with the parent's modules (pandas, scipy, matplotlib with the Agg backend) already
imported, where a loky worker spends about a second and a half importing them again, and these
tasks last a second or two each. Its results come back in the items' order, so the files
written are the same bytes whatever the workers.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeVar

from genvdis.errors import UserError

log = logging.getLogger(__name__)
T = TypeVar("T")

PARENT_POLL = 0.5  # seconds between a worker's checks that the run's process is alive
WORKER_WAIT = 10  # seconds a dask scheduler gets to have a worker
PROCESSES = "processes"  # the default backend: forked workers where `forks_safely`, else loky's
BACKENDS = (PROCESSES, "loky", "threading", "dask")
# A loky worker imports the libraries and loads numba's compiled kernels before its first
# task (~1.5 s of CPU on the 2-core machine), a forked one only loads the kernels (~0.4 s): a
# run estimated (genvdis.experiment.planning, CPU seconds) below these is over sooner in the
# run's own process than on workers. Measured by benchmarks/bench_startup.py --crossover
# (docs/scaling.md).
IN_PROCESS_BELOW = 4.0  # loky's workers
FORKED_IN_PROCESS_BELOW = 2.0  # forked workers (backend PROCESSES, on Linux)


def check_jobs(jobs: int) -> None:
    """--jobs as every command takes it (`api.check_run_options` checks it so too); cheap, so
    that `plot` and `report` need not import what a run's options need."""
    if jobs < 1:
        raise UserError("--jobs must be >= 1")


def can_fork() -> bool:
    """Whether forked workers are safe here: on Linux. Windows has no fork, and on macOS a
    process that has used the system's frameworks (Accelerate's BLAS) may crash in a forked
    child, so there the work stays in this process."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def worker_count(
    jobs: int, tasks: int, force: bool = False, backend: str = PROCESSES, cpu_seconds: float = 0.0
) -> int:
    """--jobs, capped at the tasks to run and (unless `force`) at this machine's cores; 1, this
    process, where `backend` "fork" (`map_ordered`'s, for plot, report and theory, which have
    no --force) is not safe (`can_fork`), and (unless `force`) for a run on processes estimated
    under `IN_PROCESS_BELOW` (`FORKED_IN_PROCESS_BELOW` where they fork). A run's cap is
    logged, with how --force changes it."""
    if jobs == 1 or (backend == "fork" and not can_fork()):
        return 1
    import joblib

    cores, tasks = joblib.cpu_count(), max(1, tasks)
    used = min(jobs, tasks) if force else min(jobs, tasks, cores)
    if used > 1 and not force and cpu_seconds < _in_process_below(backend):
        used, why = 1, "a short run: over sooner than workers start; --force uses them"
    elif used < jobs:
        why = f"{tasks} tasks to run" if used == tasks else f"{cores} cores; --force uses more"
    if used < jobs and backend != "fork":  # said for a run, whose --force can change it
        log.info("--jobs %d: using %d worker(s) (%s)", jobs, used, why)
    return used


def _in_process_below(backend: str) -> float:
    """The CPU estimate under which a run on `backend` stays in this process (`worker_count`):
    workers that start slower need a longer run to pay (`PROCESSES` forks them where
    `forks_safely` says so now, else starts loky's). Threads and dask: 0, never."""
    if backend == PROCESSES and forks_safely():
        return FORKED_IN_PROCESS_BELOW
    return IN_PROCESS_BELOW if backend in (PROCESSES, "loky") else 0.0


def worker_cap(jobs: int, force: bool = False) -> int:
    """The most workers --jobs may start here: the cores, unless `force` (not logged: what a
    run then uses is `worker_count`'s to say)."""
    if jobs == 1 or force:
        return jobs
    import joblib

    return min(jobs, joblib.cpu_count())


def watch_parent(parent: int) -> None:
    """A loky worker's initializer: end the worker as soon as the process that started it
    (the run) is gone, however it ended. Polls getppid: a worker whose parent died is
    re-parented, so the id changes."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="genvdis-watch-parent", daemon=True).start()


def in_process(backend: str, jobs: int) -> bool:
    """Whether the run's tasks run in its own process, one after the other, without joblib
    (whose import, ~70 ms, is then spared): one job, on any backend but dask's cluster."""
    return jobs == 1 and backend != "dask"


def forks_safely() -> bool:
    """Whether a run's workers may be forked from this process: on Linux (`can_fork`), with no
    other thread in it (a lock another thread holds at the fork stays held in the child for
    good), and no OpenMP runtime loaded (GNU libgomp's threads do not survive a fork: a child's
    first parallel region can hang; scikit-learn loads it, so a run with estimator entries gets
    loky's workers). numpy's and scipy's OpenBLAS take care of their threads across a fork."""
    if not can_fork() or threading.active_count() > 1:
        return False
    from threadpoolctl import threadpool_info

    return not any(info.get("user_api") == "openmp" for info in threadpool_info())


@dataclass(frozen=True)
class _Inherited:
    """An argument the forked workers already hold (`_INHERITED[index]`): sent as this."""

    index: int


_FORKED: list[ProcessPoolExecutor] = []  # the pool `parallel` forked, while it is up
_INHERITED: list = []  # `parallel`'s scatter, as the forked workers got it with the fork
# said where a forked worker died: the run's process is fine and keeps what it saved
WORKER_DIED = (
    "a worker process died (killed, or out of memory?): the blocks saved so far are kept; "
    "run the same command again to resume"
)


def _forked_executor(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` processes forked from this one, each ending when this process is
    gone (`watch_parent`): `map_ordered`'s, and a run's (`_forked_pool`)."""
    context = multiprocessing.get_context("fork")
    return ProcessPoolExecutor(
        workers, mp_context=context, initializer=watch_parent, initargs=(os.getpid(),)
    )


@contextlib.contextmanager
def _forked_pool(jobs: int, scatter: list) -> Iterator[None]:
    """`jobs` worker processes forked from this one, all at once, before the pool's own threads
    start: each starts with this process's modules already imported and with `scatter` (the
    runs' data) in its memory, which no task then pickles (loky's workers import everything
    again, ~1.3 CPU s each, and get the data with every task)."""
    _INHERITED[:] = scatter
    executor = _forked_executor(jobs)
    try:
        try:  # forks every worker now (Python forks them all at once)
            executor.submit(int).result()
        except BrokenProcessPool:  # one was killed as it started (out of memory, say)
            raise UserError(WORKER_DIED) from None
        log.debug("%d workers forked from this process", jobs)
        _FORKED.append(executor)
        yield
    finally:
        _FORKED.clear()
        _INHERITED.clear()
        executor.shutdown(wait=True, cancel_futures=True)


def _call_inherited(function: Callable[..., T], args: tuple) -> T:
    """function(*args) in a forked worker, the `_Inherited` arguments taken from its memory."""
    held = tuple(_INHERITED[a.index] if isinstance(a, _Inherited) else a for a in args)
    return function(*held)


def _forked_map(function: Callable[..., object], calls: Iterable[tuple]) -> Iterator:
    """`map_unordered` on the forked pool: every call submitted in order (the longest blocks
    first), the data that came with the fork sent as a reference, the results as they finish."""
    executor, held = _FORKED[0], {id(x): i for i, x in enumerate(_INHERITED)}

    def sent(args: tuple) -> tuple:
        return tuple(_Inherited(held[id(a)]) if id(a) in held else a for a in args)

    futures = [executor.submit(_call_inherited, function, sent(args)) for args in calls]
    try:
        for future in as_completed(futures):
            yield future.result()
    except BrokenProcessPool:
        raise UserError(WORKER_DIED) from None
    finally:
        for future in futures:
            future.cancel()


def map_unordered(
    function: Callable[..., object], calls: Iterable[tuple], backend: str, jobs: int
) -> Iterator:
    """function(*args) for each args in `calls`, in whatever order they finish: in this
    process (`in_process`), else on the workers of the backend `parallel` set up."""
    if in_process(backend, jobs):
        return (function(*args) for args in calls)
    if _FORKED:
        return _forked_map(function, calls)
    import joblib

    batching: dict[str, object] = {}
    if backend == "dask":
        calls = list(calls)
        size = dask_batch(len(calls), _dask_threads())
        batching = {"batch_size": size, "pre_dispatch": f"{2 * size}*n_jobs"}
    runner = joblib.Parallel(return_as="generator_unordered", **batching)
    results = runner(joblib.delayed(function)(*args) for args in calls)
    return _loky_deaths_said(results) if backend in (PROCESSES, "loky") else results


def _loky_deaths_said(results: Iterator) -> Iterator:
    """joblib's results on loky's workers, a worker's death (loky's TerminatedWorkerError, or
    its BrokenProcessPool) said as `WORKER_DIED`, as on forked workers."""
    from joblib.externals.loky.process_executor import BrokenProcessPool as LokyBroken

    try:
        yield from results
    except (LokyBroken, BrokenProcessPool):  # TerminatedWorkerError is loky's BrokenProcessPool
        raise UserError(WORKER_DIED) from None


# A dask task costs its client ~7 CPU ms (18 with a LocalCluster's scheduler in the client)
# whatever its work, against ~0.3 s of work a block: one block a task keeps only ~40 workers
# busy. Batches of several blocks share that cost (docs/scaling.md, "Sizing for 100 workers").
BATCHES_PER_WORKER = 4  # at least: a worker that finishes early finds more
MOST_BLOCKS_A_BATCH = 8  # ~2.5 s of work: no batch is a long tail on its own


def dask_batch(tasks: int, workers: int) -> int:
    """How many calls one dask task runs: enough that each of `workers` gets
    `BATCHES_PER_WORKER` batches, at most `MOST_BLOCKS_A_BATCH`. The calls' order is kept, so
    the longest still go first, and joblib cuts its last slice of calls (fewer than a batch for
    every worker) into single calls, so the run's tail is one call long."""
    return max(1, min(MOST_BLOCKS_A_BATCH, tasks // (BATCHES_PER_WORKER * max(1, workers))))


def _dask_threads() -> int:
    """The worker threads of the dask client `parallel` set up, as joblib counts them."""
    from dask.distributed import get_client

    return sum(get_client().nthreads().values())


def map_ordered(
    function: Callable[[T], Any],
    items: Sequence[T],
    jobs: int = 1,
    cost: Callable[[T], float] | None = None,
) -> list[Any]:
    """[function(item) for item in items], on up to `jobs` forked processes. `cost` (a guess
    of each item's time) orders the submissions, longest first, so that one long item does not
    start last; the list returned keeps the items' order. An exception raised by `function`
    (a UserError) is raised here, as it would be in this process."""
    workers = worker_count(jobs, len(items), backend="fork")
    if workers == 1:
        return [function(item) for item in items]
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]) if cost else 0)
    with _forked_executor(workers) as executor:
        futures = {i: executor.submit(function, items[i]) for i in order}
        try:
            return [futures[i].result() for i in range(len(items))]
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise


@contextlib.contextmanager
def parallel(
    backend: str, jobs: int, scheduler: str | None, scatter: list | None = None
) -> Iterator[None]:
    """The run's workers: forked (backend `PROCESSES` where `forks_safely`: `scatter`, the data,
    comes with the fork), or joblib's backend (loky's processes where forking is not safe;
    with dask, `scatter` is sent to the workers once). Nothing to set up for a run
    `in_process`. Results are the same bytes on every one (genvdis.experiment.engine)."""
    if in_process(backend, jobs):
        yield
        return
    if backend == PROCESSES and forks_safely():
        with _forked_pool(jobs, scatter or []):
            yield
        return
    import joblib

    if backend in (PROCESSES, "loky"):
        with joblib.parallel_config(
            backend="loky", n_jobs=jobs, initializer=watch_parent, initargs=(os.getpid(),)
        ):
            yield
        return
    if backend != "dask":
        with joblib.parallel_config(backend=backend, n_jobs=jobs):
            yield
        return
    with _dask_client(jobs, scheduler):
        with joblib.parallel_config(backend="dask", n_jobs=-1, scatter=scatter):
            yield


@contextlib.contextmanager
def _dask_client(jobs: int, scheduler: str | None) -> Iterator[None]:
    """A client of the scheduler at `scheduler` (which must have a worker), or of a local
    cluster of `jobs` single-threaded worker processes (`_local_cluster`: closed after the
    run, unless `local_cluster_kept`)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise UserError("--backend dask needs: pip install 'genvdis[dask]'") from None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, ValueError) as error:  # unreachable, or not an address at all
            raise UserError(f"--scheduler: cannot reach {scheduler}: {error}") from None
    else:
        client = Client(_local_cluster(jobs))
    try:
        if scheduler:
            _wait_for_a_worker(client, scheduler)
        yield
    finally:
        client.close()  # the run's data, scattered to the workers, goes with it
        if not _KEEPING:
            close_local_cluster()


_LOCAL_CLUSTERS: list[tuple[int, Any]] = []  # [(workers, the LocalCluster)], or none
_KEEPING: list[None] = []  # one entry per `local_cluster_kept` entered


@contextlib.contextmanager
def local_cluster_kept() -> Iterator[None]:
    """Within it, the LocalCluster that a dask run without a scheduler starts is kept for the
    next runs on as many workers (`genvdis run A B C`, a sweep's variants), and closed on
    leaving: starting one costs ~4 CPU s and ~2 s (its workers import everything again),
    which each run would otherwise pay."""
    _KEEPING.append(None)
    try:
        yield
    finally:
        _KEEPING.pop()
        if not _KEEPING:
            close_local_cluster()


def _local_cluster(jobs: int) -> Any:  # noqa: ANN401 (a LocalCluster: dask is optional)
    """A LocalCluster of `jobs` single-threaded worker processes: the kept one if it has as
    many workers and runs, else a new one (the old one closed)."""
    from dask.distributed import LocalCluster
    from distributed.core import Status

    if _LOCAL_CLUSTERS:
        workers, cluster = _LOCAL_CLUSTERS[0]
        if workers == jobs and cluster.status == Status.running:
            return cluster
        close_local_cluster()  # another worker count (a run's memory bound), or it broke
    cluster = LocalCluster(
        n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    )  # fmt: skip
    _LOCAL_CLUSTERS.append((jobs, cluster))
    return cluster


def close_local_cluster() -> None:
    """Close the LocalCluster kept by `_local_cluster`, if any."""
    while _LOCAL_CLUSTERS:
        _LOCAL_CLUSTERS.pop()[1].close()


def _wait_for_a_worker(client, scheduler: str) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except (TimeoutError, OSError):
        raise UserError(
            f"--scheduler: {scheduler} has no workers (none joined in {WORKER_WAIT} s); "
            f"start some: dask worker {scheduler} --nthreads 1"
        ) from None
