"""How far the batched Newton is from its flop floor, one thread (issue 33 §3).

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_newton_floor.py [--splits 50]
        [--repeat 5] [--cg-splits 20] [CONFIG ...]

Each config's grid runs once through `engine.run_block` (`--splits` per m) while every call of
the logistic fit's `newton_logistic` (and, for the K-class example, `_softmax_cg.cg_step`) is
recorded. The recorded calls are then replayed `--repeat` times, interleaved with their floors,
and the minimum of each is printed:

- Newton: the whole solver, and within it the compiled step (`gathered_step`: weights, X^T W X,
  gradient, the d x d solve, X delta) or, on sparse designs, the gradient pass and the steps;
  its problem-iterations and flops (X^T W X's upper half m d (d + 1), the gradient 2 m d, the
  solve 2 d^3 / 3, X delta 2 m d: what is needed, not what a kernel does);
- the BLAS floor: the same shapes through numpy's BLAS (one thread): X^T W X and the gradient
  as one batched product per group (gemm: it computes both halves), X delta, and LAPACK's
  batched solve. That is a roofline this machine reaches on these shapes, not a bound: BLAS
  sums in the CPU's order, which the project does not use where results are decided;
- the peak floor: the flops at a large single-thread dgemm's rate, which small shapes cannot
  reach.

For the ten-digit example the same for CG's Hessian-vector products (`_hessian_times`): 4 m d
(K - 1) flops each, against numpy's two batched products of the same shapes.

Times are CPU seconds (`time.process_time`, one thread: the thread variables are set to 1
before numpy loads), so that other processes on a shared machine inflate them less than wall
time; read the ratios (measured side by side, interleaved), not the seconds. To compare two
checkouts, run this script from one with PYTHONPATH set to the other's root, in turn.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from genvdis.experiment.engine import run_block  # noqa: E402
from genvdis.experiment.planning import plan_tasks  # noqa: E402
from genvdis.models.logistic import _layouts, _newton, _softmax_cg, binary, softmax  # noqa: E402

from _setup import load  # noqa: E402

CONFIGS = [
    "configs/pima.yaml",
    "configs/adult-continuous.yaml",
    "configs/adult-discrete.yaml",
    "configs/optdigits-2v3.yaml",
]
CG_CONFIG = "configs/examples/optdigits-10class.yaml"
_ORIGINAL = {
    name: getattr(_layouts, name) for name in ("gathered_step", "grouped_gradient", "sparse_steps")
}


class Timer:
    """Seconds and calls accumulated under named keys by wrapped functions."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, float] = defaultdict(float)

    def wrap(self, module: object, name: str, key: str, count=None) -> None:  # noqa: ANN001
        """Replace module.name by a timed wrapper; count(args, result) adds to counts[key]."""
        inner = getattr(module, name)

        def timed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            start = time.process_time()
            result = inner(*args, **kwargs)
            self.seconds[key] += time.process_time() - start
            if count is not None:
                for sub, value in count(args, result).items():
                    self.counts[sub] += value
            return result

        setattr(module, name, timed)


def gathered_work(args: tuple, result: tuple) -> dict[str, float]:
    """Problem-iterations and flops of one `gathered_step` call."""
    XT, problems = args[0], args[1]
    S, d, m = problems.size, XT.shape[1], XT.shape[2]
    return {
        "iterations": S,
        "hessian": S * m * d * (d + 1),
        "gradient": S * 2 * m * d,
        "solve": S * (2 * d**3 / 3 + 2 * d * d),
        "direction": S * 2 * m * d,
    }


def sparse_work(args: tuple, result: tuple) -> dict[str, float]:
    """Problem-iterations of one sparse step call (the flops depend on the nonzeros)."""
    return {"iterations": args[0].shape[0]}


def record(path: str, splits: int) -> tuple[list, list]:
    """The config's grid at `splits` per m: the recorded Newton calls and their groups'
    shapes (for the floor)."""
    config, _, encoded, models, protocol = load(path)
    tasks = plan_tasks(config.size_grid, splits, None, encoded.width, len(encoded.y))
    calls, shapes = [], []
    original, step = binary.newton_logistic, _layouts.gathered_step

    def recording(design, penalty, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls.append((design, penalty, args, kwargs))
        return original(design, penalty, *args, **kwargs)

    def shaping(XT, problems, *args):  # noqa: ANN001, ANN002, ANN202
        shapes.append((XT, problems.copy()))
        return step(XT, problems, *args)

    binary.newton_logistic, _layouts.gathered_step = recording, shaping
    try:
        with threadpool_limits(1):
            for m, block in tasks:
                run_block(encoded, models, m, block, protocol)
    finally:
        binary.newton_logistic, _layouts.gathered_step = original, step
    return calls, shapes


def replay(calls: list) -> float:
    """Seconds to run the recorded Newton calls again."""
    start = time.process_time()
    for design, penalty, args, kwargs in calls:
        _newton.newton_logistic(design, penalty, *args, **kwargs)
    return time.process_time() - start


def blas_floor(shapes: list, rng: np.random.Generator) -> float:
    """Seconds for the recorded steps' shapes through numpy's BLAS and LAPACK (one thread):
    X^T W X with the gradient as one more column, X delta, and the solves."""
    total = 0.0
    for XT, problems in shapes:
        X = XT[problems]  # (S, d, m), the gather outside the clock
        S, d, m = X.shape
        w = rng.uniform(0.05, 0.25, (S, 1, m))
        right = np.concatenate([np.swapaxes(X, 1, 2), rng.standard_normal((S, m, 1))], axis=2)
        start = time.process_time()
        XW = X * w
        HG = np.matmul(XW, right)  # (S, d, d + 1): X^T W X | X^T r
        HG[:, np.arange(d), np.arange(d)] += 1e-8
        delta = np.linalg.solve(HG[:, :, :d], HG[:, :, d:])
        np.matmul(np.swapaxes(X, 1, 2), delta)  # X delta
        total += time.process_time() - start
    return total


def peak_rate(repeat: int) -> float:
    """Flops a second of a single-thread 1000 x 1000 dgemm (min of `repeat`)."""
    a = np.random.default_rng(0).standard_normal((1000, 1000))
    best = np.inf
    for _ in range(repeat):
        start = time.process_time()
        a @ a
        best = min(best, time.process_time() - start)
    return 2e9 / best


def newton_floor(path: str, splits: int, repeat: int, peak: float) -> None:
    calls, shapes = record(path, splits)
    rng = np.random.default_rng(0)
    timer = Timer()
    timer.wrap(_layouts, "gathered_step", "step", gathered_work)
    timer.wrap(_layouts, "grouped_gradient", "gradient")
    timer.wrap(_layouts, "sparse_steps", "step", sparse_work)
    best = {"newton": np.inf, "step": np.inf, "blas": np.inf}
    try:
        with threadpool_limits(1):
            for _ in range(repeat):
                timer.seconds.clear()
                timer.counts.clear()
                newton = replay(calls)
                best["newton"] = min(best["newton"], newton)
                step = timer.seconds["step"] + timer.seconds["gradient"]
                best["step"] = min(best["step"], step)
                if shapes:
                    best["blas"] = min(best["blas"], blas_floor(shapes, rng))
    finally:
        for name, function in _ORIGINAL.items():
            setattr(_layouts, name, function)
    counts = timer.counts
    flops = sum(counts[k] for k in ("hessian", "gradient", "solve", "direction"))
    name = os.path.basename(path).removesuffix(".yaml")
    its = counts["iterations"]
    print(
        f"{name}: {len(calls)} Newton calls, {its:,.0f} problem-iterations; Newton "
        f"{best['newton']:.3f} s, its step kernel {best['step']:.3f} s "
        f"({best['step'] / best['newton']:.0%}), {1e6 * best['newton'] / its:.2f} us a "
        "problem-iteration"
    )
    if flops:
        parts = ", ".join(
            f"{k} {counts[k] / flops:.0%}" for k in ("hessian", "gradient", "solve", "direction")
        )
        at_peak = flops / peak
        print(
            f"  {flops / 1e9:.3f} GFLOP ({parts}): the step at {flops / best['step'] / 1e9:.2f} "
            f"GFLOP/s, Newton at {flops / best['newton'] / 1e9:.2f}"
        )
        print(
            f"  BLAS floor {best['blas']:.3f} s: step / floor {best['step'] / best['blas']:.2f}, "
            f"Newton / floor {best['newton'] / best['blas']:.2f}; peak floor {at_peak:.3f} s: "
            f"step / peak floor {best['step'] / at_peak:.1f}"
        )


def record_cg(path: str, splits: int) -> list:
    """The K-class example's grid at `splits` per m: the recorded CG calls."""
    config, _, encoded, models, protocol = load(path)
    tasks = plan_tasks(config.size_grid, splits, None, encoded.width, len(encoded.y))
    calls = []
    original = softmax.cg_step

    def recording(X, P, penalty, grad):  # noqa: ANN001, ANN202
        calls.append((X, P.copy(), penalty, grad.copy()))
        return original(X, P, penalty, grad)

    softmax.cg_step = recording
    try:
        with threadpool_limits(1):
            for m, block in tasks:
                run_block(encoded, models, m, block, protocol)
    finally:
        softmax.cg_step = original
    return calls


def cg_floor(path: str, splits: int, repeat: int, peak: float) -> None:
    calls = record_cg(path, splits)
    shapes: list = []
    original = _softmax_cg._hessian_times
    seconds = [0.0]

    def timed(XT, X, PT, penalty, v):  # noqa: ANN001, ANN202
        start = time.process_time()
        out = original(XT, X, PT, penalty, v)
        seconds[0] += time.process_time() - start
        if collect:
            shapes.append((XT, X, PT, v.copy()))
        return out

    _softmax_cg._hessian_times = timed
    best = {"cg": np.inf, "hv": np.inf, "blas": np.inf}
    collect = True
    try:
        with threadpool_limits(1):
            for _ in range(repeat):
                seconds[0] = 0.0
                start = time.process_time()
                for X, P, penalty, grad in calls:
                    _softmax_cg.cg_step(X, P, penalty, grad)
                best["cg"] = min(best["cg"], time.process_time() - start)
                best["hv"] = min(best["hv"], seconds[0])
                collect = False
                start = time.process_time()
                for XT, X, PT, v in shapes:
                    PU = PT * np.matmul(v, XT)
                    PU -= PT * PU.sum(axis=1, keepdims=True)
                    np.matmul(PU, X)
                best["blas"] = min(best["blas"], time.process_time() - start)
    finally:
        _softmax_cg._hessian_times = original
    flops = sum(4 * v.shape[0] * v.shape[1] * v.shape[2] * X.shape[1] for _, X, _, v in shapes)
    products = sum(v.shape[0] for *_, v in shapes)
    print(
        f"{os.path.basename(path).removesuffix('.yaml')}: {len(calls)} CG calls, "
        f"{products:,} problem-products; CG {best['cg']:.3f} s, _hessian_times {best['hv']:.3f} s "
        f"({best['hv'] / best['cg']:.0%}), {flops / 1e9:.3f} GFLOP at "
        f"{flops / best['hv'] / 1e9:.2f} GFLOP/s"
    )
    print(
        f"  BLAS floor {best['blas']:.3f} s: _hessian_times / floor "
        f"{best['hv'] / best['blas']:.2f}; peak floor {flops / peak:.3f} s: "
        f"_hessian_times / peak floor {best['hv'] * peak / flops:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configs", nargs="*", default=CONFIGS)
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--cg-splits", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-cg", action="store_true", help="skip the ten-digit example")
    args = parser.parse_args()
    with threadpool_limits(1):
        peak = peak_rate(args.repeat)
    print(
        f"single-thread dgemm peak: {peak / 1e9:.1f} GFLOP/s; CPU seconds, min of {args.repeat} "
        "repeats"
    )
    for path in args.configs:
        newton_floor(path, args.splits, args.repeat, peak)
    if not args.no_cg:
        cg_floor(CG_CONFIG, args.cg_splits, args.repeat, peak)


if __name__ == "__main__":
    main()
