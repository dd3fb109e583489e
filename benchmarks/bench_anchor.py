"""genvdis against the fair anchor of issue 33: a per-split loop that does the same work.

    GENVDIS_MIRROR=/work/shared/uci OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        python benchmarks/bench_anchor.py [--repeat 3] [--hopsy-sets K] [CONFIG[:SPLITS] ...]

Needs the `bench` extra (hopsy). Default: voting and optdigits-2v3 at 100 splits, pima at 1000.
For each config, on the same splits (genvdis's own draws, `splits.draw_block`), one thread, CPU
seconds, the minimum of `--repeat` interleaved repeats:
(a) genvdis: its engine on the whole grid (`engine.run_block` on the run's blocks, as
    `--jobs 1` does), and end to end (`genvdis run --jobs 1` in a fresh process);
(b) the same-work loop: per split, scikit-learn's fastest exact maximum-likelihood fit
    (`LogisticRegression(C=np.inf, solver="newton-cholesky")`, no penalty) and naive Bayes,
    and on each separable training set (genvdis's decision, made untimed: the loop is not
    charged for it),
    hopsy's `TruncatedGaussianProposal`, a Gibbs sampler for N(0, I) cut to the version cone
    {A z > 0} (the law genvdis samples, docs/separable.md), started at genvdis's start point,
    run for as many steps as give the effective sample size genvdis's chain had on that set:
    n * tau_hopsy / tau_genvdis, n the trajectories that chain ran (its own count, 15-30 under
    `mcmc_iterations: auto`, read from the engine's untimed run of the same blocks);
(c) the plain loop: `LogisticRegression()` (scikit-learn's default solver and penalty: what a
    user writes; it samples nothing) and naive Bayes.
It prints the ratios (b)/(a) and (c)/(a). The integrated autocorrelation times are measured
here, on separable training sets at a few m of each grid (m >= d: there genvdis's chain runs on
z itself), from a trace of genvdis's exact-HMC chain (its compiled trajectory, step by step; its
last state is checked against `sampler.sample_version_space`) and from hopsy's chains, with the
same estimator (Sokal's windowed sum, window 5 tau) on the same statistic: the cosine between
the hyperplane and the start. A two-sample KS test on that statistic checks, on one set, that
the two samplers draw from the same law (`--no-checks` skips it and the tracer's check: on
sonar at m = 155, where hopsy's tau is ~10,000 steps, it alone takes ~20 minutes). Naive
Bayes: `CategoricalNB` on discrete data, `GaussianNB` otherwise (genvdis's shared-variance
model has no scikit-learn class; this one costs the same).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import hopsy
import numpy as np
import pandas as pd
from sampler_mixing import newton_starts
from scipy.stats import ks_2samp
from sklearn.linear_model import LogisticRegression as SkLogistic
from sklearn.naive_bayes import CategoricalNB, GaussianNB
from threadpoolctl import threadpool_limits

from genvdis._runtime import streams
from genvdis._runtime.streams import stream_keys
from genvdis.experiment.engine import run_block
from genvdis.experiment.planning import plan_tasks
from genvdis.experiment.splits import draw_block
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic_regression import TRAJECTORIES  # the default per separable set

from _setup import load

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ["configs/voting.yaml:100", "configs/optdigits-2v3.yaml:100", "configs/pima.yaml:1000"]


def integrated_time(x: np.ndarray) -> float:
    """Integrated autocorrelation time of chains x (chains, n), in steps: Sokal's windowed
    sum of the chains' mean autocorrelation, the window the first M >= 5 tau(M)."""
    x = x - x.mean(axis=1, keepdims=True)
    n = x.shape[1]
    f = np.fft.rfft(x, 2 * n, axis=1)
    acov = np.fft.irfft(f * np.conj(f), axis=1)[:, :n].mean(axis=0)
    rho = acov / acov[0]
    taus = 2 * np.cumsum(rho) - 1
    window = np.flatnonzero(np.arange(n) >= 5 * taus)
    return float(taus[window[0]] if window.size else taus[-1])


def cosines(states: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The statistic whose autocorrelation is measured: cos(angle(z, start)) per state."""
    return states @ start / (np.linalg.norm(states, axis=-1) * np.linalg.norm(start))


def genvdis_trace(A: np.ndarray, start: np.ndarray, n: int, key: int) -> np.ndarray:
    """genvdis's chain on one set with m >= d (B = A, no QR), state after each of n
    trajectories after the warm-up: `sampler._chains`'s loop, step by step, same kernels."""
    m, r = A.shape
    B, Bt = np.ascontiguousarray(A), np.ascontiguousarray(A.T)
    w = start * np.sqrt(r) / np.linalg.norm(start)
    state = np.array([key], dtype=np.uint64)
    G, have = np.empty((m, m)), np.zeros(m, dtype=bool)
    here, ahead, v, scratch = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    sampler._values(Bt, w, here)
    rc, rs = 0.0, 1.0
    out = np.empty((n, r))
    for it in range(n + 1):
        budget = sampler.WARMUP_BOUNCES if it == 0 else 20 * sampler.WARMUP_BOUNCES
        proposal = w.copy()
        p = np.array([streams.next_normal(state) for _ in range(r)])
        c = here.copy()
        sampler._values(Bt, p, v)
        left_c, left_s = sampler._trajectory(B, Bt, G, have, proposal, p, c, v, scratch, rc, rs,
                                             budget)  # fmt: skip
        if it == 0:
            travelled = np.pi / 2 - np.arctan2(left_s, left_c)
            if travelled > 0:
                rc, rs = np.cos(travelled), np.sin(travelled)
        sampler._values(Bt, proposal, ahead)
        if (ahead > 0).all():
            w, here = proposal, ahead.copy()
        if it:
            out[it - 1] = w
    return out


def hopsy_chain(A: np.ndarray, start: np.ndarray, seed: int):
    """hopsy's Gibbs chain for N(0, I) cut to {A z > 0}, from genvdis's start at radius sqrt(d)."""
    m, d = A.shape
    problem = hopsy.Problem(-A, np.zeros(m), hopsy.Gaussian(np.zeros(d), np.eye(d)))
    z0 = start * np.sqrt(d) / np.linalg.norm(start)
    chain = hopsy.MarkovChain(problem, hopsy.TruncatedGaussianProposal, starting_point=z0)
    return chain, hopsy.RandomNumberGenerator(seed)


def hopsy_trace(A, start, n: int, thinning: int, seed: int) -> np.ndarray:
    chain, rng = hopsy_chain(A, start, seed)
    return hopsy.sample(chain, rng, n_samples=n, thinning=thinning)[1][0]


def measure_taus(setup, grid: dict, chains: int = 4) -> dict[int, tuple[float, float]]:
    """(tau genvdis in trajectories, tau hopsy in steps) at up to three m of the grid with
    m >= d (smallest, middle, largest), on the first separable split there; `chains` chains."""
    d = setup.encoded.reference.shape[1] + 1
    sizes = [m for m in grid if m >= d and grid[m][2].any()]
    picked = sorted({sizes[0], sizes[len(sizes) // 2], sizes[-1]}) if sizes else []
    taus = {}
    for m in picked:
        A, start = separable_set(setup, grid, m)
        keys = stream_keys(setup.config.seed + 7, m, range(chains), stream=1)
        trace = np.array([genvdis_trace(A, start, 1000, int(k)) for k in keys])
        tau_g = integrated_time(cosines(trace, start))
        n, thinning = 4000, 1
        while True:  # unthinned first; longer (thinned) until the chain is 40 tau long
            traces = [hopsy_trace(A, start, n, thinning, 100 + c) for c in range(chains)]
            tau_h = thinning * integrated_time(cosines(np.array(traces), start))
            if tau_h * 40 <= n * thinning or thinning >= 64:
                break
            thinning *= 4
        taus[m] = (tau_g, tau_h)
        print(f"  tau at m = {m:4d}: genvdis {tau_g:5.2f} trajectories, hopsy {tau_h:8.0f} steps"
              f" ({chains} chains of {n * thinning} steps, of 1000 trajectories)",
              flush=True)  # fmt: skip
    return taus


def separable_set(setup, grid: dict, m: int):
    train, _, separable, start = grid[m]
    s = int(np.flatnonzero(separable)[0])
    y = setup.encoded.y
    return hyperplanes.signed_rows(setup.encoded.reference[train[s]], y[train[s]]), start[s]


def check_tracer(setup, grid: dict, m: int) -> bool:
    """The trace's state after 29 trajectories past the warm-up is the engine sampler's draw."""
    A, start = separable_set(setup, grid, m)
    key = stream_keys(setup.config.seed, m, range(1), stream=1)
    draw = sampler.sample_version_space(A[None], start[None], TRAJECTORIES, key)[0]
    last = genvdis_trace(A, start, TRAJECTORIES - 1, int(key[0]))[-1]
    return bool(np.allclose(draw / np.linalg.norm(draw), last / np.linalg.norm(last)))


def agreement(setup, grid: dict, m: int, tau_h: float, n: int = 400) -> float:
    """KS p-value of the cosine to the start: n independent genvdis draws against hopsy's
    chains after 30 tau of burn-in, thinned to one state every 2 tau."""
    A, start = separable_set(setup, grid, m)
    keys = stream_keys(setup.config.seed + 11, m, range(n), stream=1)
    draws = sampler.sample_version_space(
        np.broadcast_to(A, (n, *A.shape)).copy(), np.tile(start, (n, 1)), TRAJECTORIES, keys
    )
    thinning = max(1, int(2 * tau_h))
    ours = []
    for c in range(4):
        chain, rng = hopsy_chain(A, start, 500 + c)
        hopsy.sample(chain, rng, n_samples=1, thinning=int(30 * tau_h))  # burn-in
        ours.append(hopsy.sample(chain, rng, n_samples=n // 4, thinning=thinning)[1][0])
    return float(ks_2samp(cosines(draws, start), cosines(np.vstack(ours), start)).pvalue)


def prepare_grid(setup, splits: int) -> dict:
    """Per m: training rows, test masks, separable flags and start points (genvdis's)."""
    y, p = setup.encoded.y, setup.protocol
    grid = {}
    for m in setup.config.size_grid:
        train, test = draw_block(y, m, p.seed, range(splits), p.policy, p.test)
        separable, start = newton_starts(setup, train)
        grid[m] = (train, test, separable, start)
    return grid


def engine_trajectories(setup, grid: dict) -> dict[int, np.ndarray]:
    """Per m, the trajectories genvdis's chain ran on each split's training set (0 where it
    sampled none), from the engine's run of the same blocks (untimed, as the separability
    decision is): each chain stops on its own, so each set gets its own count."""
    out = {}
    for m, (train, _, separable, _) in grid.items():
        plan = plan_tasks([m], len(train), None, setup.encoded.width, len(setup.encoded.y))
        frames = [run_block(setup.encoded, setup.models, m, b, setup.protocol) for _, b in plan]
        rows = pd.concat(frames)
        rows = rows[rows["model"] == "logistic_regression"].sort_values("split")
        if not np.array_equal(rows["separable"].to_numpy(), separable):
            raise SystemExit(f"m = {m}: the engine's separable sets are not the loop's")
        out[m] = rows["trajectories"].to_numpy()
    return out


def engine_seconds(setup, splits: int) -> float:
    began = time.process_time()
    for m in setup.config.size_grid:
        plan = plan_tasks([m], splits, None, setup.encoded.width, len(setup.encoded.y))
        for _, block in plan:
            run_block(setup.encoded, setup.models, m, block, setup.protocol)
    return time.process_time() - began


def end_to_end_seconds(path: str, splits: int) -> float:
    """CPU seconds (user + system) of `genvdis run --jobs 1` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "genvdis", "run", path, "--splits", str(splits), "--jobs", "1",
             "--out", out, "--quiet", "--force"],
            check=True, cwd=REPO,
        )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def loop_seconds(
    setup, grid: dict, steps: dict | None, sampled: int | None = None
) -> dict[str, float]:
    """One fit per split. steps None: the plain loop (default LogisticRegression, no sampling);
    otherwise the same-work loop, with hopsy for steps[m][s] steps on split s's separable set
    (on the first `sampled` separable sets per m only, if given, its time scaled to all)."""
    X, Z, y = setup.data.X, setup.encoded.reference, setup.encoded.y
    discrete = setup.data.layout.n_continuous == 0
    parts = {"logistic": 0.0, "naive Bayes": 0.0, "hopsy": 0.0}
    for m, (train, test, separable, start) in grid.items():
        hopsy_before, done = parts["hopsy"], 0
        for s in range(len(train)):
            tr, te = train[s], np.flatnonzero(test[s])
            began = time.process_time()
            if steps is None:
                lr = SkLogistic()
            else:
                lr = SkLogistic(C=np.inf, solver="newton-cholesky")  # no penalty
            lr.fit(Z[tr], y[tr]).predict(Z[te])
            middle = time.process_time()
            if discrete:
                levels = list(setup.data.layout.levels)
                nb = CategoricalNB(alpha=1.0, min_categories=levels).fit(X[tr].astype(int), y[tr])
                nb.predict(X[te].astype(int))
            else:
                GaussianNB().fit(X[tr], y[tr]).predict(X[te])
            ended = time.process_time()
            parts["logistic"] += middle - began
            parts["naive Bayes"] += ended - middle
            if steps is not None and separable[s] and (sampled is None or done < sampled):
                done += 1
                A = hyperplanes.signed_rows(Z[tr], y[tr])
                chain, rng = hopsy_chain(A, start[s], s)
                z = hopsy.sample(chain, rng, n_samples=1, thinning=int(steps[m][s]))[1][0, 0]
                ((Z[te] @ z[:-1] + z[-1]) > 0).astype(int)
                parts["hopsy"] += time.process_time() - ended
        if done:
            spent = parts["hopsy"] - hopsy_before
            parts["hopsy"] = hopsy_before + spent * separable.sum() / done
    return parts


def nearest(taus: dict, m: int) -> tuple[float, float]:
    """The measured (tau genvdis, tau hopsy) at the m nearest in log scale."""
    return taus[min(taus, key=lambda k: abs(np.log(k / m)))]


def bench(path: str, splits: int, repeat: int, sampled: int | None, checks: bool = True) -> None:
    setup = load(str(REPO / path))
    name = setup.config.name
    print(f"{name}, {splits} splits per m, grid {setup.config.size_grid}", flush=True)
    grid = prepare_grid(setup, splits)
    n_sep = sum(int(g[2].sum()) for g in grid.values())
    print(f"  separable training sets: {n_sep} of {splits * len(grid)}", flush=True)
    taus = measure_taus(setup, grid)
    if taus and checks:
        first = min(taus)
        print(f"  tracer = engine's sampler (m = {first}): {check_tracer(setup, grid, first)}")
        big = max(taus)
        p = agreement(setup, grid, big, taus[big][1])
        print(f"  KS, cosine to the start, genvdis vs hopsy at m = {big}: p = {p:.2f}", flush=True)
    ran = engine_trajectories(setup, grid)
    steps = {}
    for m, n in ran.items():  # hopsy's steps with the ESS of genvdis's n trajectories there
        ratio = nearest(taus, m)[1] / nearest(taus, m)[0] if taus else 0.0
        steps[m] = np.maximum(1, np.rint(n * ratio)).astype(np.int64)
    shown = {m: f"{n[grid[m][2]].mean():.1f} -> {steps[m][grid[m][2]].mean():.0f}"
             for m, n in ran.items() if grid[m][2].any()}  # fmt: skip
    print(f"  genvdis trajectories -> hopsy steps, mean per separable set: {shown}", flush=True)
    first = setup.config.size_grid[0]  # warm-ups, untimed: numba's cache, scikit-learn's imports
    run_block(setup.encoded, setup.models, first, range(1), setup.protocol)
    one = {first: tuple(x[:1] for x in grid[first])}
    loop_seconds(setup, one, steps)
    best: dict[str, float] = {}
    parts_best: dict[str, float] = {}
    for _ in range(repeat):
        same = loop_seconds(setup, grid, steps, sampled)
        times = {
            "engine": engine_seconds(setup, splits),
            "end to end": end_to_end_seconds(path, splits),
            "same-work loop": sum(same.values()),
            "plain loop": sum(loop_seconds(setup, grid, None).values()),
        }
        for key, value in times.items():
            best[key] = min(best.get(key, np.inf), value)
        if times["same-work loop"] <= best["same-work loop"]:
            parts_best = same
    shown = ", ".join(f"{k} {v:.2f}" for k, v in parts_best.items())
    if sampled:
        shown += f" (hopsy timed on the first {sampled} separable sets per m, scaled to all)"
    print(f"  CPU s (min of {repeat}): " + ", ".join(f"{k} {v:.2f}" for k, v in best.items()))
    print(f"  same-work loop parts: {shown}")
    for side in ("engine", "end to end"):
        print(f"  vs genvdis {side}: same-work loop / genvdis "
              f"{best['same-work loop'] / best[side]:5.1f}x, plain loop / genvdis "
              f"{best['plain loop'] / best[side]:5.1f}x", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", default=DEFAULT, help="CONFIG[:SPLITS]")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repeats (min taken)")
    parser.add_argument(
        "--hopsy-sets", type=int, metavar="K",
        help="time hopsy on the first K separable sets per m only, scaled to all (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--no-checks", action="store_true",
        help="skip the tracer and KS checks (the KS check alone takes ~20 min on sonar at m = 155)",
    )  # fmt: skip
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"  # the end-to-end child too
    threadpool_limits(1)
    warnings.simplefilter("ignore")  # newton-cholesky on separable sets: non-convergence
    for item in args.configs:
        path, _, splits = item.partition(":")
        bench(path, int(splits or 100), args.repeat, args.hopsy_sets, not args.no_checks)


if __name__ == "__main__":
    main()
