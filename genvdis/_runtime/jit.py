"""The one numba decorator every compiled function of genvdis is defined with.

Every kernel names its fast-math and error-model flags (none of the fast-math rewrites here,
Python's error model): numba gives a function that names none the flags of whichever caller
compiles it first, and keeps that version for every caller, so a callee's bits would depend on
the order kernels were first used in (docs/scaling.md). Importing this module first sets
numba's cache folder (genvdis._runtime.kernelcache), so a kernel module needs no other import
for it; the cache folder's stamp covers this file too, since the flags shape every kernel's code.
"""

from __future__ import annotations

import numba

from genvdis._runtime import kernelcache  # noqa: F401  (first: numba's cache folder, see there)

jit = numba.njit(cache=True, nogil=True, fastmath=False, error_model="python")
