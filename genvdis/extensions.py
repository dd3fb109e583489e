"""scipy's compiled modules that a run calls, loaded from their files, not through their
packages.

A run needs two of scipy's extension modules: `scipy.linalg.cython_blas` (numba's compiled
np.dot calls BLAS through it) and `scipy.optimize._highspy._core` (HiGHS, for the separability
LP). Imported the usual way, each first runs its package's __init__, which imports the whole
package: ~0.25 s for scipy.linalg and ~0.2 s for scipy.optimize, in the run's process and in
every worker, for nothing the run uses. Loaded from its file and registered under its own
name, the module is the same object the import would give, and a later import of the package
(scikit-learn's, linprog's) finds it registered instead of loading it a second time.
"""

from __future__ import annotations

import importlib
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
