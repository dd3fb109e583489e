"""How many exact-HMC trajectories the random separating hyperplane needs, and what it costs.

    GENVDIS_MIRROR=../shared/uci python benchmarks/sampler_mixing.py [--splits 200]

On real separable training sets (sonar, promoters, optdigits 2 vs 3), it draws one hyperplane
per split after k trajectories, for k = 1 .. 30, and prints the mean test error over the splits
with its standard error, and the time. The chain starts at the Newton iterate that proved the
set separable (a good classifier), so too few trajectories show up as an error that is too
low; the default (3) is where the mean has settled to within Monte Carlo error of k = 30.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from genvdis import hyperplanes
from genvdis.config import load_config
from genvdis.datasource import load_data
from genvdis.layouts import Gathered
from genvdis.logistic import TINY_RIDGE, LogisticRegression
from genvdis.preprocessing import prepare
from genvdis.scoring import EncodedData
from genvdis.splits import draw_block
from genvdis.streams import stream_keys

CASES = [("configs/sonar.yaml", 40), ("configs/sonar.yaml", 150), ("configs/promoters.yaml", 40)]
CASES += [("configs/optdigits-2v3.yaml", 200)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=200)
    args = parser.parse_args()
    print(f"{'config':18} {'m':>4} {'k':>3} {'mean error':>10} {'se':>7} {'seconds':>8}")
    for path, m in CASES:
        config = load_config(path)
        data = prepare(load_data(config), config)
        encoded = EncodedData.from_prepared(data)
        Z, y = encoded.reference, encoded.y
        train, test = draw_block(y, m, config.seed, range(args.splits))
        Zt, yt = Z[train], y[train]
        X1 = np.concatenate([Zt, np.ones(Zt.shape[:2] + (1,))], axis=2)
        design = Gathered(X1, yt.astype(float))
        fit = LogisticRegression(data.layout)._newton(design, TINY_RIDGE, stop=True)
        start, separable = fit.beta, fit.separating
        A = hyperplanes.signed_rows(Zt, yt)[separable]
        Z1 = np.hstack([Z, np.ones((len(y), 1))])
        for k in (1, 2, 3, 5, 10, 30):
            keys = stream_keys(config.seed, m, np.flatnonzero(separable), stream=1)
            started = time.perf_counter()
            draws = hyperplanes.sample_version_space(A, start[separable], k, keys)
            seconds = time.perf_counter() - started
            wrong = ((Z1 @ draws.T) > 0) != y[:, None].astype(bool)
            mask = test[separable].T
            errors = (wrong & mask).sum(axis=0) / mask.sum(axis=0)
            se = errors.std(ddof=1) / np.sqrt(len(errors))
            print(f"{config.name:18} {m:4d} {k:3d} {errors.mean():10.4f} {se:7.4f} {seconds:8.2f}")


if __name__ == "__main__":
    main()
