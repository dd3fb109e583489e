"""scipy's compiled modules that a run calls, loaded from their files, not through their
packages.

A run needs three of scipy's extension modules: `scipy.linalg.cython_blas` (numba's compiled
np.dot calls BLAS through it), `scipy.optimize._highspy._core` (HiGHS, for the separability
LP) and `scipy.special._ufuncs` (Student's t quantile of the summary's intervals). Imported the
usual way, each first runs its package's __init__, which imports the whole package: ~0.25 s
for scipy.linalg, ~0.2 s for scipy.optimize, ~0.28 s for scipy.special (its array-API
backends), in the run's process (and the first two in every worker), for nothing the run uses.
Loaded from its file and registered under its own name, the module is the same object the
import would give, and a later import of the package (scikit-learn's, linprog's) finds it
registered instead of loading it a second time. One difference remains: the import system
sets a submodule as its package's attribute only when it loads it, so after a later import of
the package, `scipy.linalg.cython_blas` as an attribute exists only if the package's __init__
binds it (scipy.special's binds `_ufuncs`, not `_ufuncs_cxx`); `import scipy.linalg.cython_blas
as blas`, `from scipy.linalg import cython_blas` and sys.modules find every one of them.
"""

from __future__ import annotations

import importlib
import importlib._bootstrap
import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

_LOCK = threading.Lock()  # threads (the threading backend) must not load a module twice


def load(name: str) -> ModuleType:
    """The extension module `name` ("scipy.linalg.cython_blas"): the one already imported,
    else loaded from its file in its package's folder without the package's __init__; where
    there is no such file (another layout), the plain import."""
    with _LOCK:
        if name in sys.modules:
            return sys.modules[name]
        top, *middle, leaf = name.split(".")
        folder = Path(importlib.import_module(top).__file__).parent.joinpath(*middle)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            spec = importlib.util.spec_from_file_location(name, folder / f"{leaf}{suffix}")
            if spec is not None and spec.loader is not None and Path(spec.origin).is_file():
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[name] = module
                return module
    return importlib.import_module(name)


def load_beside(name: str) -> ModuleType:
    """`load` for an extension module whose own initialisation imports its siblings
    (`scipy.special._ufuncs` imports `._ufuncs_cxx` and others): while it loads, its package
    is stood in for by a bare module with the package's folder as its path, so the siblings
    load from their files too; the stand-in is then removed, so that a later import of the
    package runs its real __init__, which finds the modules registered. The stand-in is
    marked as initialising and its import lock held meanwhile, so another thread importing the
    package waits for it and then imports the real one. Where the package is already imported,
    or importlib lacks those internals, or the module does not load beside the package (it
    needs something only the package's __init__ defines), the plain import."""
    package = name.rpartition(".")[0]
    lock = getattr(importlib._bootstrap, "_ModuleLockManager", None)
    with _LOCK:
        if name in sys.modules or package in sys.modules or lock is None:
            return importlib.import_module(name)
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return importlib.import_module(name)
        with lock(package):
            stand_in = ModuleType(package)
            stand_in.__path__ = list(spec.submodule_search_locations)
            stand_in.__spec__ = spec
            spec._initializing = True
            sys.modules[package] = stand_in
            try:
                module = importlib.import_module(name)
            except ImportError:
                module = None
            finally:
                del sys.modules[package]
                spec._initializing = False
        return module if module is not None else importlib.import_module(name)
