"""Compiled kernels called in pieces short enough for Ctrl-C to be seen between them.

A numba kernel cannot see Ctrl-C: Python runs its SIGINT handler only between calls. A kernel
that loops over independent items (splits or problems, each with its own random stream) is
therefore called on pieces that take about CALL_SECONDS each, which changes none of its
numbers. The engine's scoring and the version-space sampler use it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

CALL_SECONDS = 0.25


def in_short_calls(
    call: Callable[[int, int], tuple[np.ndarray, ...]], count: int, first: int = 4
) -> tuple[np.ndarray, ...]:
    """call(start, stop) over range(count) in pieces of about CALL_SECONDS each (the first
    `first` items, later pieces sized by the last piece's time per item, growing at most
    fourfold), its arrays joined along axis 0. Only for kernels whose items are independent."""
    parts, start, size = [], 0, max(1, first)
    while start < count or not parts:
        stop = min(count, start + size)
        began = time.perf_counter()
        parts.append(call(start, stop))
        per_item = (time.perf_counter() - began) / max(stop - start, 1)
        size = min(4 * size, max(1, int(CALL_SECONDS / per_item))) if per_item > 0 else 4 * size
        start = stop
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))
