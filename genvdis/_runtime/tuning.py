"""Process-wide settings a run makes for speed and determinism: glibc's allocator thresholds
and one BLAS thread. They change the whole process, so nothing here runs on import: a run
applies them where it starts (the parent) and where a worker starts a task (once per process),
so that `import genvdis.experiment.engine` in a notebook leaves the notebook's process as it was.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
from collections.abc import Iterator

from threadpoolctl import ThreadpoolController

from genvdis._runtime import extensions

MALLOC_KEEP_BYTES = 1 << 30

_DONE: list[bool] = []  # set once this process is tuned
_THREADPOOLS: list[ThreadpoolController] = []


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse instead of returning it to the system.

    By default glibc serves blocks over 128 KB with fresh pages (mmap) and hands freed memory
    back at once. The engine's numpy temporaries (splits x rows) are just that size, so every
    elementwise operation then page-faults its output into existence (see docs/scaling.md).
    Raising both thresholds (mallopt M_MMAP_THRESHOLD and M_TRIM_THRESHOLD) makes the engine's
    elementwise work several times faster and changes no result. A no-op where the C library
    has no mallopt (macOS, musl)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    mallopt(M_TRIM_THRESHOLD, MALLOC_KEEP_BYTES)
    mallopt(M_MMAP_THRESHOLD, 32 * 2**20)  # glibc's maximum on 64-bit


def tune_process() -> None:
    """`keep_freed_memory` once per process: called when a run starts and by each task, so
    every worker process (loky, dask) is tuned before its first block."""
    if not _DONE:
        keep_freed_memory()
        _DONE.append(True)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then every object made so far
    frozen (`gc.freeze`: later collections skip them) and the collector as it was. For the
    command line's imports of numpy, pandas and numba: they make ~96,000 tracked objects and
    almost no garbage (266 collections found 961 objects), and those collections cost ~45 ms
    of a run's start (docs/scaling.md). Not for the Python API: freezing would keep a
    notebook's own cyclic garbage for good."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def one_thread() -> contextlib.AbstractContextManager:
    """Limit BLAS and OpenMP to one thread. The controller that finds the process's thread
    pools is built once per process: building it reads /proc/self/maps, ~3 ms, which per task
    cost more than fitting a small block. The compiled kernels' np.dot and np.linalg call
    scipy's own OpenBLAS (numba loads it through scipy.linalg.cython_blas on first call), a
    second library beside numpy's: load it first, or the controller misses it and it runs on
    every core (loaded without scipy.linalg's package: `extensions`)."""
    if not _THREADPOOLS:
        extensions.load("scipy.linalg.cython_blas")
        _THREADPOOLS.append(ThreadpoolController())
    return _THREADPOOLS[0].limit(limits=1)
