"""Counter-based random streams: pure functions of their key, uniform, and Floyd's sampling
uniform over subsets. The splits and the sampler draw everything from these."""

from __future__ import annotations

import itertools

import numba
import numpy as np
from scipy import stats

from genvdis._runtime import streams


@numba.njit
def _uniforms(key: np.uint64, n: int) -> np.ndarray:
    state = np.array([key], dtype=np.uint64)
    return np.array([streams.next_uniform(state) for _ in range(n)])


@numba.njit
def _normals(key: np.uint64, n: int) -> np.ndarray:
    state = np.array([key], dtype=np.uint64)
    return np.array([streams.next_normal(state) for _ in range(n)])


@numba.njit
def _subsets(key: np.uint64, n: int, k: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    state = np.array([key], dtype=np.uint64)
    taken = np.zeros(n, dtype=np.bool_)
    out = np.empty((draws, k), dtype=np.int64)
    for d in range(draws):
        streams.sample_without_replacement(state, n, k, out[d], taken)
    return out, taken


def test_keys_are_a_pure_function_of_seed_size_split_and_stream():
    a = streams.stream_keys(3, 40, range(100), stream=0)
    assert np.array_equal(a, streams.stream_keys(3, 40, range(100), stream=0))
    assert np.array_equal(a[7:9], streams.stream_keys(3, 40, [7, 8], stream=0))
    others = [
        streams.stream_keys(4, 40, range(100), 0),  # another seed
        streams.stream_keys(3, 41, range(100), 0),  # another m
        streams.stream_keys(3, 40, range(100), 1),  # another stream
    ]
    keys = np.concatenate([a, *others])
    assert len(np.unique(keys)) == len(keys)


def test_uniforms_are_uniform_and_streams_independent():
    u = _uniforms(streams.stream_keys(0, 10, [0], 0)[0], 200_000)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    v = _uniforms(streams.stream_keys(0, 10, [1], 0)[0], 200_000)
    assert abs(np.corrcoef(u, v)[0, 1]) < 0.01
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01  # no serial correlation


def test_normals_are_standard_normal():
    z = _normals(streams.stream_keys(1, 10, [0], 1)[0], 200_000)
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_floyd_sampling_is_uniform_over_subsets_and_leaves_scratch_clean():
    """Every 2-subset of 5 items equally likely (chi-square), items distinct, scratch reset."""
    draws = 50_000
    out, taken = _subsets(streams.stream_keys(2, 2, [0], 0)[0], 5, 2, draws)
    assert not taken.any()
    assert (out[:, 0] != out[:, 1]).all() and out.min() >= 0 and out.max() < 5
    pairs = {pair: i for i, pair in enumerate(itertools.combinations(range(5), 2))}
    counts = np.bincount([pairs[tuple(sorted(row))] for row in out], minlength=len(pairs))
    assert stats.chisquare(counts).pvalue > 1e-3


def test_floyd_sampling_of_all_items_is_a_permutation():
    out, _ = _subsets(np.uint64(5), 30, 30, 3)
    for row in out:
        assert sorted(row) == list(range(30))
