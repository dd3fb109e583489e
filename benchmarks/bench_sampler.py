"""Where the sampler's time goes on separable training sets, stage by stage, per m.

    GENVDIS_MIRROR=/work/shared/uci python benchmarks/bench_sampler.py [--splits 20]
        [--repeat 3] [configs/optdigits-2v3.yaml:800 ...]

For each config and m (default: every m of the config's grid), the first `--splits` splits'
separable training sets are sampled as logistic regression samples them
(`hyperplanes.sample_version_space`, `TRAJECTORIES` trajectories, one BLAS
thread), and the stages are timed separately, min of `--repeat`, in ms per split: the QR of
the constraint rows and B = A Q (O(m r^2)), the Gram matrix G = B B^T (O(m^2 r), the only
part a weight-space sampler would save) and the chains (the whole call, stages included).
Issue 17 asked whether, when m > d + 1, working in weight space (A w, A v updated per bounce,
O(m r) a bounce instead of O(m)) would be faster: the Gram column shows what it could save
at most (docs/separable.md, "What it costs").
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sampler_mixing import newton_starts

from genvdis import hyperplanes
from genvdis.sections import TRAJECTORIES
from genvdis.splits import draw_block
from genvdis.streams import stream_keys
from genvdis.tuning import one_thread

from _setup import load


def best(seconds: list[float], splits: int) -> float:
    """The fastest of the repeats, in ms per split."""
    return 1e3 * min(seconds) / splits


def stages(A: np.ndarray, start: np.ndarray, keys: np.ndarray, repeat: int) -> list[float]:
    """ms per split: QR and A Q, the Gram matrix, the whole sampler call."""
    times: list[list[float]] = [[], [], []]
    for _ in range(repeat):
        began = time.perf_counter()
        Q, _ = np.linalg.qr(np.swapaxes(A, 1, 2))
        B = np.ascontiguousarray(A @ Q)
        times[0].append(time.perf_counter() - began)
        began = time.perf_counter()
        B @ np.swapaxes(B, 1, 2)
        times[1].append(time.perf_counter() - began)
        began = time.perf_counter()
        hyperplanes.sample_version_space(A, start, TRAJECTORIES, keys)
        times[2].append(time.perf_counter() - began)
    return [best(t, len(A)) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["configs/optdigits-2v3.yaml",
                        "configs/voting.yaml", "configs/sonar.yaml"],
                        help="CONFIG or CONFIG:m")  # fmt: skip
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'panel':16} {'m':>5} {'d+1':>4} {'sep':>4} {'qr ms':>7} {'gram ms':>8} "
          f"{'sampler ms':>10} {'gram share':>10}")  # fmt: skip
    for target in args.targets:
        path, _, size = target.partition(":")
        setup = load(path)
        Z, y = setup.encoded.reference, setup.encoded.y
        for m in [int(size)] if size else setup.config.size_grid:
            train, _ = draw_block(y, m, setup.config.seed, range(args.splits),
                                  setup.protocol.policy)  # fmt: skip
            separable, start = newton_starts(setup, train)
            chosen = np.flatnonzero(separable)
            if chosen.size == 0:
                continue
            A = hyperplanes.signed_rows(Z[train[chosen]], y[train[chosen]])
            keys = stream_keys(setup.config.seed, m, chosen, stream=1)
            with one_thread():
                hyperplanes.sample_version_space(A[:1], start[chosen[:1]], 1, keys[:1])
                qr, gram, total = stages(A, start[chosen], keys, args.repeat)
            print(
                f"{setup.config.name:16} {m:5d} {A.shape[2]:4d} {chosen.size:4d} {qr:7.2f} "
                f"{gram:8.2f} {total:10.2f} {gram / total:10.0%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
