"""Independent per-run work (a panel's analysis, a figure) spread over forked processes, for
`genvdis report --jobs` and `genvdis plot --jobs`.

A forked worker starts in milliseconds with the parent's modules (pandas, scipy, matplotlib
with the Agg backend) already imported, where a loky worker spends about a second and a half
importing them again; these tasks last a second or two each, so that start-up would eat the
gain. Each result is a pure function of its item, and results come back in the items' order,
so the files written are the same bytes whatever the workers.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from genvdis.errors import UserError
from genvdis.experiment.parallel import watch_parent

T = TypeVar("T")


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


def worker_count(jobs: int, tasks: int) -> int:
    """--jobs, capped at the tasks and at this machine's cores; 1 (this process) where
    forking is not safe (`can_fork`)."""
    if not can_fork():
        return 1
    return max(1, min(jobs, tasks, os.cpu_count() or 1))


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
    workers = worker_count(jobs, len(items))
    if workers == 1:
        return [function(item) for item in items]
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]) if cost else 0)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=watch_parent, initargs=(os.getpid(),)
    ) as executor:
        futures = {i: executor.submit(function, items[i]) for i in order}
        try:
            return [futures[i].result() for i in range(len(items))]
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise
