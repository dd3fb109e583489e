"""Engine vs. the per-split scikit-learn loop, side by side on the same splits.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_engine.py [--splits 50] [CONFIG...]

For each config and every m of its grid, the same S splits are scored twice:
- baseline: one fit per split, as scikit-learn's `learning_curve` would do it:
  `LogisticRegression(C=inf)` (lbfgs, no penalty), `CategoricalNB(alpha=1)` for discrete naive
  Bayes; continuous naive Bayes (shared variance) has no scikit-learn class, so the baseline
  calls genvdis's own `NaiveBayes.fit` once per split;
- engine: `genvdis.experiment.engine.run_block` on the engine's own blocks of splits, each block one
  batched fit (one process, like `--jobs 1`). Each side first runs one split untimed: the
  engine's compiled functions load from numba's cache (~50 ms, once per process), and
  scikit-learn's first fit warms its own imports.
It prints both times and their ratio, and checks the answers: naive Bayes error counts must be
identical; logistic regression error counts are compared on the splits where the maximum-
likelihood estimate exists (no complete or quasi-complete separation, decided by an LP that
is not timed), where both fit the same model. On the other splits there is no maximum: the
engine applies its separable-set rule, scikit-learn stops wherever lbfgs stops.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogistic
from sklearn.naive_bayes import CategoricalNB
from threadpoolctl import threadpool_limits

from genvdis.experiment.engine import Protocol, run_block
from genvdis.experiment.planning import plan_tasks
from genvdis.experiment.splits import draw_block
from genvdis.models.logistic.separable.hyperplanes import signed_rows
from genvdis.models.naive_bayes import NaiveBayes

from _setup import load

CONFIGS = [
    "configs/pima.yaml",
    "configs/adult-continuous.yaml",
    "configs/optdigits-2v3.yaml",
    "configs/voting.yaml",
]


def mle_exists(A: np.ndarray) -> bool:
    """Albert & Anderson (1984): the logistic MLE exists iff no z has A z >= 0 with at least one
    strict inequality (neither complete nor quasi-complete separation). One LP."""
    m, d = A.shape
    result = linprog(-A.sum(axis=0), A_ub=-A, b_ub=np.zeros(m), bounds=[(-1, 1)] * d)
    return result.status == 0 and -result.fun <= 1e-7


def baseline(data, m: int, splits: range, protocol: Protocol) -> dict[str, np.ndarray]:
    """One scikit-learn fit per split; error counts per model."""
    X, y, layout = data.X, data.y, data.layout
    Z = layout.onehot(X, reference=True)
    train, test_mask = draw_block(y, m, protocol.seed, splits, protocol.policy, protocol.test)
    errors = {"naive_bayes": [], "logistic_regression": []}
    for s in range(len(splits)):
        tr, te = train[s], np.flatnonzero(test_mask[s])
        if layout.n_continuous == 0:
            n1 = y[tr].sum()
            prior = [(m - n1 + 1) / (m + 2), (n1 + 1) / (m + 2)]
            nb = CategoricalNB(alpha=1.0, min_categories=list(layout.levels), class_prior=prior)
            nb.fit(X[tr].astype(int), y[tr])
            nb_pred = nb.predict(X[te].astype(int))
        else:
            nb_pred = NaiveBayes(layout).fit(X[tr], y[tr]).predict(X[te])
        errors["naive_bayes"].append(int((nb_pred != y[te]).sum()))
        lr = SkLogistic(C=np.inf, max_iter=1000, tol=1e-8).fit(Z[tr], y[tr])
        errors["logistic_regression"].append(int((lr.predict(Z[te]) != y[te]).sum()))
    return {k: np.array(v) for k, v in errors.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=50, help="splits per m (default 50)")
    parser.add_argument("configs", nargs="*", default=CONFIGS, help="configs (default: 4)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    # one core each, as one joblib worker has: the engine limits BLAS to one thread itself
    threadpool_limits(1)
    print(f"{'config':32} {'m':>5} {'sklearn s':>10} {'engine s':>9} {'ratio':>7}  agreement")
    total_base = total_engine = 0.0
    for path in args.configs:
        config, data, encoded, models, protocol = load(path)
        config_base = config_engine = 0.0
        first = config.size_grid[0]
        baseline(data, first, range(1), protocol)  # warm up, untimed, as in the docstring
        run_block(encoded, models, first, range(1), protocol)
        for m in config.size_grid:
            splits = range(args.splits)
            started = time.perf_counter()
            reference = baseline(data, m, splits, protocol)
            base = time.perf_counter() - started
            started = time.perf_counter()
            blocks = plan_tasks([m], len(splits), None, encoded.width, len(encoded.y))
            frame = pd.concat([run_block(encoded, models, m, b, protocol) for _, b in blocks])
            frame = frame.sort_values(["model", "split"], kind="stable")
            engine = time.perf_counter() - started
            config_base, config_engine = config_base + base, config_engine + engine
            nb = frame[frame.model == "naive_bayes"]["errors"].to_numpy()
            lr = frame[frame.model == "logistic_regression"]
            Z = encoded.reference
            train, _ = draw_block(data.y, m, protocol.seed, splits, protocol.policy, protocol.test)
            mle = np.array([mle_exists(signed_rows(Z[tr], data.y[tr])) for tr in train])
            gap = np.abs(lr["errors"].to_numpy() - reference["logistic_regression"])[mle]
            nb_ok = "identical" if np.array_equal(nb, reference["naive_bayes"]) else "DIFFER"
            lr_note = (
                f"LR equal on {(gap == 0).mean():.1%} of {mle.sum()} MLE splits"
                + (f" (the others differ by at most {gap.max()})" if gap.any() else "")
                if mle.any()
                else ("LR: every split separable (sampler; no MLE to compare)")
            )
            print(
                f"{config.name:32} {m:5d} {base:10.2f} {engine:9.2f} {base / engine:7.1f}x  "
                f"NB {nb_ok}; {lr_note}"
            )
        total_base, total_engine = total_base + config_base, total_engine + config_engine
        print(f"{config.name + ': whole grid':32} {'':5} {config_base:10.2f} {config_engine:9.2f} "
              f"{config_base / config_engine:7.1f}x")  # fmt: skip
    print(f"{'total':32} {'':5} {total_base:10.2f} {total_engine:9.2f} "
          f"{total_base / total_engine:7.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
