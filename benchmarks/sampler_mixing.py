"""Has the random separating hyperplane's chain mixed? One hard training set per separable panel.

    GENVDIS_MIRROR=/work/shared/uci python benchmarks/sampler_mixing.py [--chains 400]
        [--trajectories 3,30,auto] [--reference 300] [configs/sonar.yaml ...]

The separable panels are those where most logistic-regression training sets are separable at
some m (`frac_separable` > 0.5 in results/<panel>/summary.csv). For each, at the largest such m
(the thinnest version spaces, where mixing is slowest), it takes one fixed training set, the
first separable split, and runs `--chains` independent chains from where logistic regression
starts them (the separating Newton iterate or the LP's solution). Each chain's one draw gives a
test error; their mean estimates the expected test error under the law the sampler reached
after k trajectories. It prints that mean and its standard error for each k of
`--trajectories` and for `--reference` trajectories, the bias against the reference in
standard errors (both estimates' errors combined), and the seconds the sampler took. A setting
`auto` is the default rule (each chain stops when it has mixed, `sampler.UntilMixed`), `auto:C`
the rule with cap C; for those it also prints the trajectories the chains ran (10th, 50th and
90th percentiles, largest, mean). Each setting's KS p-value is that of its draws' test errors
against those of `TRAJECTORIES` fixed trajectories if that is a setting, else of the first
fixed setting (a two-sample test: two lengths agree in law once both have mixed). An
under-mixed chain shows as a bias: it still remembers its start (docs/separable.md, "How many
trajectories"). `--m M` takes that m instead of the largest mostly separable one. With
`--engine SPLITS` it prints instead what each setting costs a run: the engine's CPU seconds
over each of those panels' whole grid, the settings alternately, min of `--repeat` rounds.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import scipy.stats

from genvdis._runtime.streams import stream_keys
from genvdis._runtime.tuning import one_thread
from genvdis.experiment.engine import run_block
from genvdis.experiment.splits import draw_block
from genvdis.models.logistic._layouts import Gathered
from genvdis.models.logistic.binary import SAMPLER_BYTES, TINY_RIDGE, LogisticRegression
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic_regression import TRAJECTORIES

from _setup import load

REPO = Path(__file__).resolve().parents[1]


def separable_panels(results: Path) -> list[tuple[Path, int]]:
    """(config, largest m with frac_separable > 0.5) for every committed panel that has one."""
    panels = []
    for summary in sorted(results.glob("*/summary.csv")):
        config = REPO / "configs" / f"{summary.parent.name}.yaml"
        rows = [r for r in csv.DictReader(summary.open()) if r["model"] == "logistic_regression"]
        sizes = [int(r["m"]) for r in rows if float(r["frac_separable"]) > 0.5]
        if sizes and config.is_file():
            panels.append((config, max(sizes)))
    return panels


def newton_starts(setup, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which training sets train (S, m) are separable, and where logistic regression starts
    its sampler on each (the separating Newton iterate or the LP's solution)."""
    Z, y = setup.encoded.reference, setup.encoded.y
    model = next(model for model in setup.models if model.name == "logistic_regression")
    Zt = Z[train]
    X1 = np.concatenate([Zt, np.ones(Zt.shape[:2] + (1,))], axis=2)
    fit = model._newton(Gathered(X1, y[train].astype(float)), TINY_RIDGE, stop=True)
    separable, start, _ = hyperplanes.decide(
        Z, y, train, fit.beta, fit.separating, fit.margin_bound
    )
    return separable, start


def hard_set(path: Path, m: int, look: int = 50):
    """The first separable training set among splits 0..look-1 at m, where the sampler starts
    on it, and its test rows as [Z 1] with labels."""
    setup = load(str(path))
    Z, y = setup.encoded.reference, setup.encoded.y
    train, test = draw_block(y, m, setup.config.seed, range(look), setup.protocol.policy)
    Zt = Z[train]
    separable, start = newton_starts(setup, train)
    s = int(np.flatnonzero(separable)[0])
    Z1 = np.hstack([Z, np.ones((len(y), 1))])[test[s]]
    return setup.config, s, hyperplanes.signed_rows(Zt[s], y[train][s]), start[s], Z1, y[test[s]]


def length(setting: str) -> sampler.Fixed | sampler.UntilMixed:
    """A `--trajectories` setting: a number (fixed), `auto` (the default rule) or `auto:CAP`."""
    if setting == "auto":
        return sampler.UntilMixed()
    if setting.startswith("auto:"):
        return sampler.UntilMixed(cap=int(setting[5:]))
    return sampler.Fixed(int(setting))


def chains(A, start, rule, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """One draw per key under `rule` and the trajectories each chain ran, in chunks of the
    engine's sampler memory."""
    m = A.shape[0]
    chunk = max(1, SAMPLER_BYTES // (8 * m * m))
    draws, ran, seconds = [], [], 0.0
    for first in range(0, len(keys), chunk):
        part = keys[first : first + chunk]
        rows = np.broadcast_to(A, (len(part), *A.shape)).copy()
        began = time.perf_counter()
        z, n = sampler.draw(rows, np.tile(start, (len(part), 1)), part, rule)
        seconds += time.perf_counter() - began
        draws.append(z)
        ran.append(n)
    return np.vstack(draws), np.concatenate(ran), seconds


def report(path: Path, m: int, args: argparse.Namespace) -> None:
    """The table's rows for one panel: each setting, then the reference."""
    config, split, A, start, Z1, y = hard_set(path, m)
    rows = []
    for i, setting in enumerate([str(args.reference), *args.trajectories]):
        keys = stream_keys(config.seed + i, m, range(args.chains), stream=1)
        draws, ran, seconds = chains(A, start, length(setting), keys)
        errors = ((Z1 @ draws.T > 0) != y[:, None].astype(bool)).mean(axis=0)
        rows.append((setting, errors, ran, seconds))
    fixed = [errors for setting, errors, _, _ in rows[1:] if setting == str(TRAJECTORIES)]
    fixed += [errors for setting, errors, _, _ in rows[1:] if setting.isdigit()]
    ref = rows[0][1]
    ref_se = ref.std(ddof=1) / np.sqrt(len(ref))
    for setting, errors, ran, seconds in rows[1:] + rows[:1]:
        se = errors.std(ddof=1) / np.sqrt(len(errors))
        bias = (errors.mean() - ref.mean()) / np.hypot(se, ref_se) if errors is not ref else 0.0
        ks = scipy.stats.ks_2samp(errors, fixed[0]).pvalue if fixed else np.nan
        spread = np.percentile(ran, [10, 50, 90])
        ran_text = (f"{spread[0]:.0f}/{spread[1]:.0f}/{spread[2]:.0f}/{ran.max()} {ran.mean():5.1f}"
                    if not setting.isdigit() else "")  # fmt: skip
        print(f"{config.name:18} {m:4d} {split:5d} {setting:>7} {errors.mean():10.4f} {se:7.4f} "
              f"{bias:+7.1f} {ks:6.3f} {seconds:8.2f} {ran_text}", flush=True)  # fmt: skip


class _Capped(LogisticRegression):
    """Logistic regression whose chains run under a given rule (`auto:CAP` settings)."""

    rule: sampler.Fixed | sampler.UntilMixed

    def _chain_length(self) -> sampler.Fixed | sampler.UntilMixed:
        return self.rule


def engine_cost(path: Path, settings: list[str], splits: int, repeat: int) -> None:
    """CPU seconds of the engine (`engine.run_block`, every model) over the panel's whole grid
    at `splits` splits per m, with logistic regression's chains under each setting: the
    minimum of `repeat` interleaved rounds, and the first setting's time over the last's."""
    setup = load(str(path))
    seconds = {setting: np.inf for setting in settings}
    for _ in range(repeat):  # the settings alternately, the minimum of each
        for setting in settings:
            lr = _Capped(setup.data.layout)
            lr.rule = length(setting)
            models = [
                lr if model.name == "logistic_regression" else model for model in setup.models
            ]
            began = time.process_time()
            for m in setup.config.size_grid:
                run_block(setup.encoded, models, m, range(splits), setup.protocol)
            seconds[setting] = min(seconds[setting], time.process_time() - began)
    shown = "  ".join(f"{k}: {s:7.2f} s" for k, s in seconds.items())
    first, last = seconds[settings[0]], seconds[settings[-1]]
    shown += f"  {settings[0]}/{settings[-1]}: {first / last:.2f}x"
    print(f"{setup.config.name:18} {shown}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path, help="default: every separable panel")
    parser.add_argument("--chains", type=int, default=400)
    parser.add_argument(
        "--trajectories",
        type=lambda text: text.split(","),
        default=["3", str(TRAJECTORIES), "auto"],
        help="settings: a number of trajectories, auto (the default rule) or auto:CAP",
    )
    parser.add_argument("--reference", type=int, default=10 * TRAJECTORIES)
    parser.add_argument(
        "--engine", type=int, metavar="SPLITS",
        help="instead: the engine's CPU seconds over each panel's grid at SPLITS splits per m",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="--engine: rounds, min of each")
    parser.add_argument("--m", type=int, help="this m instead of the largest mostly separable one")
    args = parser.parse_args()
    panels = separable_panels(REPO / "results")
    if args.configs:
        wanted = {path.resolve() for path in args.configs}
        panels = [(path, m) for path, m in panels if path.resolve() in wanted]
    if args.m:
        panels = [(path, args.m) for path, _ in panels]
    if args.engine:
        for path, _ in panels:
            with one_thread():
                engine_cost(path, args.trajectories, args.engine, args.repeat)
        return
    print(f"{'panel':18} {'m':>4} {'split':>5} {'k':>7} {'mean error':>10} {'se':>7} "
          f"{'bias/se':>7} {'KS p':>6} {'seconds':>8} ran p10/p50/p90/max mean")  # fmt: skip
    for path, m in panels:
        with one_thread():  # as in a run: BLAS on one thread
            report(path, m, args)


if __name__ == "__main__":
    main()
