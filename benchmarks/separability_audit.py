"""How each logistic-regression training set's separability is decided, per panel.

    GENVDIS_MIRROR=../shared/uci python benchmarks/separability_audit.py configs/sonar.yaml ...

For every m and split of each config (logistic regression only), it counts the splits, how
many reach the LP, and how the LP's answers were certified: by the margin its solution
achieves (yes), by Gordan's bound from its dual solution (no), or not at all (the LP's t
decides: a maximum margin within the solver's tolerance of MARGIN_TOL). docs/separable.md
quotes these counts for the 15 panels.
"""

from __future__ import annotations

import argparse
import collections

import numpy as np

from genvdis.experiment import engine
from genvdis.models.logistic.separable import hyperplanes

from _setup import load

counts: collections.Counter = collections.Counter()
solve = hyperplanes._solve_lp


def audited_solve(A: np.ndarray):
    """The LP, with its answer's certificates counted."""
    result = solve(A)
    dual = np.maximum(-result.ineqlin.marginals, 0.0)
    if hyperplanes.margin_of(A, result.x[:-1]) > hyperplanes.MARGIN_TOL:
        counts["LP, certified yes"] += 1
    elif hyperplanes.margin_bound(A, dual) <= hyperplanes.MARGIN_TOL:
        counts["LP, certified no"] += 1
    else:
        counts["LP, not certified"] += 1
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()
    hyperplanes._solve_lp = audited_solve
    for path in args.configs:
        setup = load(path)
        models = [model for model in setup.models if model.name == "logistic_regression"]
        counts.clear()
        for m in setup.config.sizes:
            splits = range(setup.config.splits)
            rows = engine.run_block(setup.encoded, models, m, splits, setup.protocol)
            counts["splits"] += len(rows)
            counts["separable"] += int(rows["separable"].sum())
        print(setup.config.name, dict(counts), flush=True)


if __name__ == "__main__":
    main()
