"""Where numba keeps genvdis's compiled kernels: a folder named after the kernel modules'
source files, so that a change to any of them compiles every kernel again.

numba's own cache (`cache=True`) checks only the file a function is defined in. A kernel
loaded from it keeps the machine code it was compiled with, including that of every kernel it
calls from another module: after a `git pull` that changes `newton_solves.py` alone, the
cached steps of `sparsest_first.py` would still run the old elimination, and a run would
write the old code's numbers with exit 0. Naming the folder after every kernel module's stamp
(size and modification time, as numba stamps a file) makes any change start a fresh cache.

The folder is `genvdis-numba-<stamp>` under NUMBA_CACHE_DIR if it is set, else under the
package's `__pycache__` (where numba would cache), else under the user's cache folder
(XDG_CACHE_HOME or ~/.cache, `genvdis/`) where the package cannot be written. Folders of other
stamps there that have not been used for a day are removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from pathlib import Path

import numba

PREFIX = "genvdis-numba-"
# every module that defines a compiled function (tests/_runtime/test_kernelcache.py checks the list)
KERNEL_MODULES = (
    "_runtime.portable", "_runtime.streams", "experiment.scoring", "experiment.splits",
    "models.naive_bayes", "models.logistic.binary", "models.logistic._kernels",
    "models.logistic._quasi_start", "models.logistic._solves", "models.logistic._sparsest_first",
    "models.logistic.separable.hyperplanes", "models.logistic.separable.sampler",
)  # fmt: skip
# the flags every kernel is compiled with: numba's own cache does not look at them
FLAG_MODULES = ("_runtime.jit",)
# the flat modules (before 0.10) whose kernels numba once cached in genvdis/__pycache__ itself
LEGACY_MODULES = (
    "hyperplanes", "logistic", "logistic_kernels", "models", "multiclass", "newton_solves",
    "portable", "quasi_start", "sampler", "scoring", "sparsest_first", "splits", "streams",
)  # fmt: skip
KEEP_SECONDS = 24 * 3600  # other stamps' folders unused for longer are removed
PACKAGE = Path(__file__).resolve().parents[1]  # genvdis/


def stamp() -> str:
    """A digest of the kernel modules' (and the flags') sizes and modification times."""
    digest = hashlib.sha256()
    for name in KERNEL_MODULES + FLAG_MODULES:
        status = PACKAGE.joinpath(*name.split(".")).with_suffix(".py").stat()
        digest.update(f"{name} {status.st_size} {status.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _base() -> Path:
    """The folder the cache folders go in (see the module's docstring)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    if _writable(PACKAGE / "__pycache__"):
        return PACKAGE / "__pycache__"
    return _user_cache()


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "genvdis"


def _prune(base: Path, keep: Path) -> None:
    """Remove the other stamps' folders unused for KEEP_SECONDS (best effort), and in the
    package's own `__pycache__` the kernels numba cached there itself before this module named
    the folders (`<module>.<kernel>-<line>.py311.nbi`/`.nbc`: nothing reads them any more)."""
    now = time.time()
    legacy = [
        old for old in base.glob("*.nb[ic]") if old.name.split(".")[0] in LEGACY_MODULES
    ] if base == PACKAGE / "__pycache__" else []  # fmt: skip
    for old in [*base.glob(f"{PREFIX}*"), *legacy]:
        try:
            if old != keep and now - old.stat().st_mtime > KEEP_SECONDS:
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    old.unlink()
        except OSError:
            continue


def configure() -> Path:
    """Point numba's cache at this source's folder (before any kernel is defined: numba picks
    a function's cache folder when it is decorated); returns the folder."""
    base = _base()
    folder = base / f"{PREFIX}{stamp()}"
    if not _writable(folder):  # numba would fall back to __pycache__, and to stale code
        folder = _user_cache() / folder.name
    if str(folder) != numba.config.CACHE_DIR:
        _prune(folder.parent, folder)
        with contextlib.suppress(OSError):
            os.utime(folder)  # in use: not pruned by another process
        numba.config.CACHE_DIR = str(folder)
    return folder


def compiled_before() -> bool:
    """Whether any kernel has been compiled into this stamp's folder (numba's index files):
    where none has, a run compiles every kernel it uses first."""
    return next(Path(numba.config.CACHE_DIR).rglob("*.nbi"), None) is not None


CACHE_DIR = configure()
