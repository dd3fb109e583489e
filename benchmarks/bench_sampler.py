"""Where the sampler's time goes on separable training sets, stage by stage, per m; and the
sampler against an earlier commit's, side by side.

    GENVDIS_MIRROR=/work/shared/uci python benchmarks/bench_sampler.py [--splits 20]
        [--repeat 3] [--against REV [--panel SPLITS | --bases]] [configs/optdigits-2v3.yaml:800 ...]

For each config and m (default: every m of the config's grid), the first `--splits` splits'
separable training sets are sampled as logistic regression samples them
(`sampler.sample_version_space`, `TRAJECTORIES` trajectories, one BLAS
thread), and the stages are timed separately, min of `--repeat`, in ms per split: the QR of
the constraint rows and B = A Q (O(m r^2)), the Gram matrix G = B B^T (O(m^2 r)) and the
chains (the whole call, stages included). Issue 17 asked whether, when m > d + 1, working in
weight space would be faster: the Gram column shows what it could save at most
(docs/separable.md, "What it costs").

With `--against REV --bases`, only the orthonormal bases of the constraint rows' span
(`portable.row_space_bases`, the fixed-order QR the chains run in where m < d), REV's
`portable.py` beside the working tree's, on each m's separable sets (m < d), alternately: ms per
split (CPU), the ratio, and whether every bit is the same.

With `--against REV`, the sampler as committed at REV
(genvdis/models/logistic/separable/sampler.py, or
genvdis/models/logistic/separable/hyperplanes.py before the sampler had its own module) is loaded
beside the working
tree's, and the two samplers run on the same sets, alternately (the machine is shared and
noisy: min of `--repeat`, interleaved). It prints both times, their ratio and whether the
draws are bit-identical. With `--panel SPLITS` as well it times instead the engine
(`engine.run_block`, every model) over each config's whole grid at SPLITS splits per m, with
either sampler patched in, alternately: what a user waits for.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from sampler_mixing import newton_starts

from genvdis._runtime import portable
from genvdis._runtime.streams import stream_keys
from genvdis._runtime.tuning import one_thread
from genvdis.experiment.engine import run_block
from genvdis.experiment.splits import draw_block
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic_regression import TRAJECTORIES

from _setup import Setup, load

REPO = Path(__file__).resolve().parents[1]


def committed(rev: str, paths: tuple[str, ...] | None = None) -> ModuleType:
    """The sampler's module as committed at `rev` (or the first of `paths` that exists
    there), imported from a temporary file."""
    # the sampler lived in hyperplanes.py until 0.6.0, in genvdis/ itself until 0.10.0
    paths = paths or (
        "genvdis/models/logistic/separable/sampler.py", "genvdis/sampler.py",
        "genvdis/hyperplanes.py",
    )  # fmt: skip
    for source in paths:
        shown = subprocess.run(
            ["git", "show", f"{rev}:{source}"], cwd=REPO, capture_output=True, text=True
        )
        if shown.returncode == 0:
            break
    shown.check_returncode()
    path = Path(tempfile.mkdtemp()) / f"{Path(source).stem}_{rev.replace('~', '_')}.py"
    path.write_text(shown.stdout)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


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
        sampler.sample_version_space(A, start, TRAJECTORIES, keys)
        times[2].append(time.perf_counter() - began)
    return [best(t, len(A)) for t in times]


def side_by_side(
    samplers: list[ModuleType], A: np.ndarray, start: np.ndarray, keys: np.ndarray, repeat: int
) -> tuple[list[float], bool]:
    """ms per split of each sampler on the same sets, alternately, min of `repeat`; and
    whether their draws are bit-identical."""
    times: list[list[float]] = [[] for _ in samplers]
    draws = []
    for _ in range(repeat):
        draws = []
        for module, seconds in zip(samplers, times, strict=True):
            began = time.perf_counter()
            draws.append(module.sample_version_space(A, start, TRAJECTORIES, keys))
            seconds.append(time.perf_counter() - began)
    return [best(t, len(A)) for t in times], all(np.array_equal(draws[0], d) for d in draws)


def panel(setup: Setup, samplers: list[ModuleType], splits: int, repeat: int) -> None:
    """Seconds of the engine over the config's whole grid with each sampler, alternately."""
    functions = [module.sample_version_space for module in samplers]  # before any patching
    times: list[list[float]] = [[] for _ in samplers]
    try:
        for _ in range(repeat):
            for function, seconds in zip(functions, times, strict=True):
                sampler.sample_version_space = function
                began = time.perf_counter()
                for m in setup.config.size_grid:
                    run_block(setup.encoded, setup.models, m, range(splits), setup.protocol)
                seconds.append(time.perf_counter() - began)
    finally:
        sampler.sample_version_space = functions[-1]
    base, new = min(times[0]), min(times[-1])
    print(f"{setup.config.name:24} {base:8.2f} {new:8.2f} {base / new:6.2f}x", flush=True)


def bases(setup: Setup, old: ModuleType, splits: int, repeat: int) -> None:
    """ms per split of the row-space bases (`portable.row_space_bases`, the QR the chains run
    in where m < d) as committed (`old`) and now, alternately, on each m's separable sets;
    and whether every bit of the two is the same."""
    for m in setup.config.size_grid:
        A = sets(setup, m, splits)[0]
        if len(A) == 0 or m >= A.shape[2]:
            continue
        functions = (old.row_space_bases, portable.row_space_bases)
        for function in functions:  # compile, outside the timings
            function(A[:1])
        times: list[list[float]] = [[], []]
        for _ in range(repeat):
            results = []
            for function, seconds in zip(functions, times, strict=True):
                began = time.process_time()
                results.append(function(A))
                seconds.append(time.process_time() - began)
        same = np.array_equal(results[0].view(np.uint64), results[1].view(np.uint64))
        base, new = best(times[0], len(A)), best(times[1], len(A))
        print(f"{setup.config.name:16} {m:5d} {A.shape[2]:4d} {len(A):4d} {base:9.3f} "
              f"{new:8.3f} {base / new:5.2f}x {str(same):>9}", flush=True)  # fmt: skip


def sets(setup: Setup, m: int, splits: int):
    """The separable training sets among the first `splits` at m: rows, starts and keys."""
    Z, y = setup.encoded.reference, setup.encoded.y
    train, _ = draw_block(y, m, setup.config.seed, range(splits), setup.protocol.policy)
    separable, start = newton_starts(setup, train)
    chosen = np.flatnonzero(separable)
    A = hyperplanes.signed_rows(Z[train[chosen]], y[train[chosen]])
    return A, start[chosen], stream_keys(setup.config.seed, m, chosen, stream=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["configs/optdigits-2v3.yaml",
                        "configs/voting.yaml", "configs/sonar.yaml"],
                        help="CONFIG or CONFIG:m")  # fmt: skip
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="time this commit's sampler beside")
    parser.add_argument("--panel", type=int, metavar="SPLITS", help="with --against: whole grids")
    parser.add_argument("--bases", action="store_true", help="with --against: the QR alone")
    args = parser.parse_args()
    if args.bases:
        if not args.against:
            parser.error("--bases needs --against REV")
        old = committed(args.against, ("genvdis/_runtime/portable.py", "genvdis/portable.py"))
        print(f"{'panel':16} {'m':>5} {'d+1':>4} {'sep':>4} {args.against[:8] + ' ms':>9} "
              f"{'now ms':>8} {'ratio':>6} {'identical':>9}")  # fmt: skip
        with one_thread():
            for target in args.targets:
                bases(load(target.partition(":")[0]), old, args.splits, args.repeat)
        return
    samplers = [committed(args.against), sampler] if args.against else []
    if args.against and args.panel:
        print(f"{'panel (whole grid, s)':24} {args.against[:8]:>8} {'now':>8} {'ratio':>7}")
        for path in args.targets:
            panel(load(path), samplers, args.panel, args.repeat)
        return
    if args.against:
        print(f"{'panel':16} {'m':>5} {'sep':>4} {args.against[:8] + ' ms':>11} {'now ms':>8} "
              f"{'ratio':>6} {'identical':>9}")  # fmt: skip
    else:
        print(f"{'panel':16} {'m':>5} {'d+1':>4} {'sep':>4} {'qr ms':>7} {'gram ms':>8} "
              f"{'sampler ms':>10} {'gram share':>10}")  # fmt: skip
    for target in args.targets:
        path, _, size = target.partition(":")
        setup = load(path)
        for m in [int(size)] if size else setup.config.size_grid:
            A, start, keys = sets(setup, m, args.splits)
            if len(A) == 0:
                continue
            with one_thread():
                for module in samplers or [sampler]:  # compile, outside the timings
                    module.sample_version_space(A[:1], start[:1], 1, keys[:1])
                if samplers:
                    (base, new), same = side_by_side(samplers, A, start, keys, args.repeat)
                    print(f"{setup.config.name:16} {m:5d} {len(A):4d} {base:11.2f} {new:8.2f} "
                          f"{base / new:5.2f}x {str(same):>9}", flush=True)  # fmt: skip
                    continue
                qr, gram, total = stages(A, start, keys, args.repeat)
            print(
                f"{setup.config.name:16} {m:5d} {A.shape[2]:4d} {len(A):4d} {qr:7.2f} "
                f"{gram:8.2f} {total:10.2f} {gram / total:10.0%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
