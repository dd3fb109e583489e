"""Counter-based random streams: every split's random numbers, a pure function of
(seed, m, split, stream), drawn in compiled code.

Why not one numpy Generator per split: building one (SeedSequence hashing) costs ~20 us, more
than fitting both models on a small split, and a Generator cannot be used inside a numba
kernel. Here a stream is a 64-bit key hashed from (seed, m, split, stream); its numbers are
SplitMix64 (Steele, Lea & Flood 2014; the seeding generator of java.util.SplittableRandom and
of xoshiro), which passes BigCrush. A stream's state is a one-element uint64 array that the
kernels below advance, so any split's numbers come without touching any other's.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from genvdis._runtime.jit import jit

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


@jit
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64's finaliser: a bijection of 64-bit words with full avalanche."""
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return z ^ (z >> np.uint64(31))


@jit
def _key(seed: int, m: int, split: int, stream: int) -> np.uint64:
    h = mix64(np.uint64(seed) * GOLDEN + np.uint64(1))
    h = mix64(h ^ (np.uint64(m) * GOLDEN))
    h = mix64(h ^ (np.uint64(split) * GOLDEN))
    return mix64(h ^ (np.uint64(stream) * GOLDEN))


@jit
def _keys(seed: int, m: int, splits: np.ndarray, stream: int) -> np.ndarray:
    out = np.empty(splits.size, dtype=np.uint64)
    for i in range(splits.size):
        out[i] = _key(seed, m, splits[i], stream)
    return out


def stream_keys(seed: int, m: int, splits: Iterable[int], stream: int) -> np.ndarray:
    """One key per split: stream 0 draws the split's rows, stream 1 a model's random draws."""
    return _keys(int(seed), int(m), np.asarray(list(splits), dtype=np.int64), int(stream))


@jit
def next_uniform(state: np.ndarray) -> float:
    """The stream's next number, uniform on [0, 1) with 53 random bits."""
    state[0] += GOLDEN
    return float(mix64(state[0]) >> np.uint64(11)) * TWO_TO_MINUS_53


@jit
def next_normal(state: np.ndarray) -> float:
    """A standard normal number (Box-Muller, cosine branch: two uniforms per number)."""
    radius = np.sqrt(-2.0 * np.log(1.0 - next_uniform(state)))
    return radius * np.cos(2.0 * np.pi * next_uniform(state))


@jit
def sample_without_replacement(
    state: np.ndarray, n: int, k: int, out: np.ndarray, taken: np.ndarray
) -> None:
    """k distinct integers of [0, n), uniform among k-subsets (Floyd's algorithm), written to
    out[:k] in no particular order. `taken` is a scratch array of n False, left as it was found:
    O(k) time whatever n is, which matters when a few rows are drawn from 45,000."""
    for i, j in enumerate(range(n - k, n)):
        t = int(next_uniform(state) * (j + 1))
        if taken[t]:
            t = j
        taken[t] = True
        out[i] = t
    for i in range(k):
        taken[out[i]] = False
