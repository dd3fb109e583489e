"""Newton's d x d solves, panelled (`newton_solves.solve_into`) against unblocked
(`newton_solves.solve_unblocked`), side by side on a panel's own Hessians.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_solves.py [--splits 100] [--repeat 7]
        [CONFIG:m ...]

For each config and m, the first Newton system of every split (from beta = 0: weights 1/4,
the likelihood's gradient there, the tiny ridge) is built as Newton builds it, and both
eliminations solve the coupled unknowns of all of them (`solve_coupled`'s reduction), in turn,
`--repeat` times; the minimum of each is printed with their ratio. The answers are checked to be
the same bits.

With --steps it compares whole Newton steps on sparse one-hot data instead (default: adult
(discrete) at m = 30 to 3000): `logistic_kernels.sparse_directions` (the Hessian built over
every row, the coupled unknowns eliminated in column order) against
`sparsest_first.sparse_steps` (identical rows grouped, the present unknowns eliminated
sparsest first), on the same weights, interleaved, best of `--repeat`; it prints each's ms a
problem, the ratio and the largest relative difference of the steps (the two round
differently).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from genvdis.experiment import splits
from genvdis.models.logistic import _solves as newton_solves
from genvdis.models.logistic._kernels import sparse_directions, sparse_gradient, sparse_hessian
from genvdis.models.logistic._layouts import Sparse
from genvdis.models.logistic._sparsest_first import plan, sparse_steps
from genvdis.models.logistic.binary import TINY_RIDGE

from _setup import load

CASES = ["configs/promoters.yaml:10", "configs/promoters.yaml:78"]
STEP_CASES = [f"configs/adult-discrete.yaml:{m}" for m in (30, 100, 300, 1000, 3000)]


@numba.njit
def _all(solver, A, b):
    x, singular = np.zeros(b.shape), np.zeros(b.shape[0], dtype=np.bool_)
    for s in range(b.shape[0]):
        singular[s] = solver(A[s], b[s], x[s])
    return x, singular


def systems(path: str, m: int, count: int) -> tuple[np.ndarray, ...]:
    """The coupled part of each split's first Newton system at m (sparse one-hot data only)."""
    config, _, encoded, _, protocol = load(path)
    Z, y = encoded.reference, encoded.y
    idx = splits.draw_training_block(y, m, protocol.seed, range(count), protocol.policy)
    csr, d = Sparse.from_dense(Z, ones=True), Z.shape[1] + 1
    w = np.full(idx.shape, 0.25)
    hess = sparse_hessian(*csr, idx, w, d, True) + TINY_RIDGE * np.eye(d)
    grad = sparse_gradient(*csr, idx, y[idx] - 0.5, d)
    coupled = (hess * (1 - np.eye(d)) != 0).any(axis=2)
    k = int(coupled.sum(axis=1).min())  # the same size for all: the first k coupled unknowns
    at = np.array([np.flatnonzero(row)[:k] for row in coupled])
    A = np.ascontiguousarray(hess[np.arange(count)[:, None, None], at[:, :, None], at[:, None, :]])
    return A, np.ascontiguousarray(np.take_along_axis(grad, at, axis=1))


def steps(path: str, m: int, count: int, repeat: int) -> str:
    """`--steps`: one line, both kernels' best ms a problem on `count` splits at m."""
    config, _, encoded, _, protocol = load(path)
    Z, y = encoded.reference, encoded.y
    idx = splits.draw_training_block(y, m, protocol.seed, range(count), protocol.policy)
    d = Z.shape[1] + 1
    design = Sparse.gather(Sparse.from_dense(Z, ones=True), d, idx, y[idx].astype(float))
    csr, rows = design.csr, design.idx
    penalty = np.append(np.full(d - 1, TINY_RIDGE), 0.0)
    w = np.random.default_rng(0).uniform(0.01, 0.25, idx.shape)  # Newton's weights' range
    grad = sparse_gradient(*csr, rows, y[idx] - 0.5, d)
    steps_plan = plan(csr, rows, d, True)
    kernels = {
        "sparse_directions": lambda: sparse_directions(*csr, rows, w, penalty, grad, True),
        "sparse_steps": lambda: sparse_steps(w, penalty, grad, True, *steps_plan.for_steps),
    }
    best, answers = dict.fromkeys(kernels, np.inf), {k: f()[0] for k, f in kernels.items()}
    for _ in range(repeat):
        for name, kernel in kernels.items():  # interleaved
            start = time.perf_counter()
            kernel()
            best[name] = min(best[name], time.perf_counter() - start)
    old, new = (1e3 * t / count for t in best.values())
    moved = np.abs(answers["sparse_steps"] - answers["sparse_directions"]).max()
    moved /= np.abs(answers["sparse_directions"]).max()
    return f"{path}:{m:<6} {old:18.4f} {new:13.4f} {old / new:6.2f} {moved:11.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=100, help="systems per case (100)")
    parser.add_argument("--repeat", type=int, default=7, help="timings per side (7)")
    parser.add_argument("--steps", action="store_true", help="whole sparse Newton steps")
    parser.add_argument("cases", nargs="*", help="CONFIG:m (promoters 10, 78; adult: --steps)")
    args = parser.parse_args()
    if args.steps:
        print(f"{'case':34} {'directions ms':>13} {'steps ms':>13} {'ratio':>6} {'max rel':>11}")
        for case in args.cases or STEP_CASES:
            path, m = case.rsplit(":", 1)
            print(steps(path, int(m), args.splits, args.repeat))
        return
    print(f"{'case':28} {'unknowns':>8} {'unblocked ms':>13} {'panelled ms':>12} {'ratio':>6}")
    for case in args.cases or CASES:
        path, m = case.rsplit(":", 1)
        A, b = systems(path, int(m), args.splits)
        best = {newton_solves.solve_unblocked: np.inf, newton_solves.solve_into: np.inf}
        answers = {solver: _all(solver, A, b)[0] for solver in best}  # compiled, and checked
        assert (
            answers[newton_solves.solve_into].tobytes()
            == answers[newton_solves.solve_unblocked].tobytes()
        )
        for _ in range(args.repeat):
            for solver in best:  # interleaved: the machine's noise hits both alike
                start = time.perf_counter()
                _all(solver, A, b)
                best[solver] = min(best[solver], time.perf_counter() - start)
        old, new = (1e3 * t / len(A) for t in best.values())
        print(f"{case:28} {A.shape[1]:8d} {old:13.3f} {new:12.3f} {old / new:6.2f}")


if __name__ == "__main__":
    main()
