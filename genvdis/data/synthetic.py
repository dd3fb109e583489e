"""Synthetic data from a known distribution, so that each model's asymptotic error is known.

Two sources, both with y ~ Bernoulli(1/2) and features independent given the class (the naive
Bayes assumption holds exactly, and the Bayes classifier is linear in x, so naive Bayes and
logistic regression both converge to the Bayes error):

- `binary`: x_i | y ~ Bernoulli(p_{i,y}). The k = round(informative * n) informative features
  have {p_{i,0}, p_{i,1}} = {1/2 - effect/2, 1/2 + effect/2} (which way round is a seeded coin
  flip); the others have p_{i,0} = p_{i,1} drawn uniformly from [0.2, 0.8].
- `gaussian`: x_i | y ~ N(mu_{i,y}, sigma_i^2), the variance shared by the classes. The
  informative features' class means are `effect` standard deviations apart (seeded sign); the
  others' are equal. Base means ~ N(0, 1), sigma_i = exp(U(-1/2, 1/2)).

The Bayes error is exact for both: Phi(-Delta/2) with Delta^2 = k * effect^2 (Gaussian), and
an exact enumeration of the log-odds distribution (binary; see `bayes_error_binary`).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from itertools import product

import numpy as np
import pandas as pd

from genvdis.config.sections import SyntheticDataset
from genvdis.data.uci import RawData

TARGET = "y"
# Above this many joint outcomes, the exact enumeration gives way to Monte Carlo.
MAX_ENUMERATION = 2_000_000
MONTE_CARLO_DRAWS = 1_000_000


@dataclass(frozen=True)
class SyntheticParameters:
    """The class-conditional distribution of every feature: p (binary) or mu, sigma."""

    kind: str
    informative: np.ndarray  # (n,) bool
    p: np.ndarray | None = None  # (2, n): p[y, i] = P(x_i = 1 | y)
    mu: np.ndarray | None = None  # (2, n): mu[y, i]
    sigma: np.ndarray | None = None  # (n,)

    @property
    def n_features(self) -> int:
        return int(self.informative.size)


def n_informative(spec: SyntheticDataset) -> int:
    """k = round(informative * n), at least 1."""
    return max(1, int(round(spec.informative * spec.n_features)))


def parameters(spec: SyntheticDataset) -> SyntheticParameters:
    """The distribution a spec names: a pure function of the spec (its seed included)."""
    from genvdis._runtime import portable  # numba: loaded only where data are made

    n, k = spec.n_features, n_informative(spec)
    rng = np.random.default_rng([spec.seed, n, 0])
    informative = np.zeros(n, dtype=bool)
    informative[rng.choice(n, k, replace=False)] = True
    sign = rng.choice([-1.0, 1.0], size=n)
    if spec.kind == "binary":
        p = np.tile(rng.uniform(0.2, 0.8, size=n), (2, 1))
        shift = sign[informative] * spec.effect / 2
        p[0, informative] = 0.5 - shift
        p[1, informative] = 0.5 + shift
        return SyntheticParameters("binary", informative, p=p)
    base = rng.standard_normal(n)
    sigma = portable.exp(rng.uniform(-0.5, 0.5, size=n))  # numpy's exp: other bits on AVX-512
    shift = np.where(informative, sign * spec.effect * sigma / 2, 0.0)
    mu = np.stack([base - shift, base + shift])
    return SyntheticParameters("gaussian", informative, mu=mu, sigma=sigma)


def sample(
    params: SyntheticParameters, n_rows: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n_rows draws (X, y) from the distribution: y ~ Bernoulli(1/2), then x | y. Gaussian
    rows are built in place in the draws' array (mu_y + sigma z: the same bits as the sum of
    temporaries, half the memory to fault in)."""
    y = rng.integers(0, 2, size=n_rows)
    if params.kind == "binary":
        X = (rng.random((n_rows, params.n_features)) < params.p[y]).astype(np.int8)
    else:
        X = rng.standard_normal((n_rows, params.n_features))
        X *= params.sigma
        X += params.mu[y]
    return X, y


def spec_hash(spec: SyntheticDataset) -> str:
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def draw(spec: SyntheticDataset) -> tuple[np.ndarray, np.ndarray]:
    """The rows (X, y) a spec names: a pure function of the spec."""
    return sample(parameters(spec), spec.n_rows, np.random.default_rng([spec.seed, 1]))


def load_synthetic(spec: SyntheticDataset) -> RawData:
    """A synthetic table as `sources.load_data` wants it: features x001.., label column 'y'."""
    return raw_table(spec, *draw(spec))


def provenance(spec: SyntheticDataset) -> str:
    """A synthetic table's `data_source` line in config.yaml: every setting it is drawn from."""
    return (
        f"synthetic:{spec.kind},n_features={spec.n_features},informative={spec.informative},"
        f"effect={spec.effect},n_rows={spec.n_rows},seed={spec.seed}"
    )


def raw_table(spec: SyntheticDataset, X: np.ndarray, y: np.ndarray) -> RawData:
    """The table of the rows `draw(spec)` gave (`genvdis theory` draws them once for the run
    and the Bayes rule's error on them)."""
    width = len(str(spec.n_features))
    names = [f"x{i + 1:0{width}d}" for i in range(spec.n_features)]
    if spec.kind == "binary":  # categorical columns: 2x faster through `prepare` than ints
        columns = {
            name: pd.Categorical.from_codes(X[:, i], ["0", "1"]) for i, name in enumerate(names)
        }
        frame = pd.DataFrame(columns)
    else:
        frame = pd.DataFrame(X, columns=names)
    frame[TARGET] = y
    kind = "discrete" if spec.kind == "binary" else "continuous"
    return RawData(
        frame=frame,
        attributes=dict.fromkeys(names, kind),
        target=TARGET,
        checksums={"spec": spec_hash(spec)},
        source=provenance(spec),
    )


# --- the Bayes error ---------------------------------------------------------------------------


def bayes_error_gaussian(params: SyntheticParameters) -> float:
    """Phi(-Delta/2), Delta the Mahalanobis distance between the class means (equal priors)."""
    from scipy.special import ndtr  # what scipy.stats.norm.cdf computes, without scipy.stats

    delta = np.sqrt((((params.mu[1] - params.mu[0]) / params.sigma) ** 2).sum())
    return float(ndtr(-delta / 2))


def binom_logpmf(t: np.ndarray, c: int, p: float) -> np.ndarray:
    """log P(T = t) for T ~ Binomial(c, p), t integers in 0..c: scipy.stats.binom.logpmf's own
    formula (the same bits, tests/experiment/test_theory.py) without importing scipy.stats,
    about a second of each `genvdis theory` process (as `results.t_quantile` does for
    summaries)."""
    from scipy.special import gammaln, xlog1py, xlogy

    k = np.floor(t)
    combiln = gammaln(c + 1) - (gammaln(k + 1) + gammaln(c - k + 1))
    return combiln + xlogy(k, p) + xlog1py(c - k, -p)


def _grouped(p0: np.ndarray, p1: np.ndarray) -> list[tuple[float, float, int]]:
    """Informative features grouped by their (p0, p1), each oriented so that p1 > p0 (replacing
    x by 1 - x changes neither the log-odds distribution nor the Bayes error)."""
    flip = p1 < p0
    a, b = np.where(flip, 1 - p0, p0), np.where(flip, 1 - p1, p1)
    keep = a != b
    pairs, counts = np.unique(np.stack([a[keep], b[keep]], axis=1), axis=0, return_counts=True)
    return [(float(x), float(z), int(c)) for (x, z), c in zip(pairs, counts, strict=True)]


def bayes_error_binary(
    p0: np.ndarray,
    p1: np.ndarray,
    *,
    max_outcomes: int = MAX_ENUMERATION,
    draws: int = MONTE_CARLO_DRAWS,
    seed: int = 0,
) -> tuple[float, str]:
    """Bayes error of independent Bernoulli features with equal priors, and how it was got.

    Features with p0 = p1 carry no information and drop out. The others fall into G groups of
    identical (p0, p1); within a group only the count T_g of ones matters (the log-odds is
    linear in it), and T_g | y is binomial. So the error, sum over outcomes of
    min(P(t, y=0), P(t, y=1)), is an exact sum over the prod_g (k_g + 1) joint counts: 'exact'.
    Beyond `max_outcomes` joint counts it is estimated from `draws` draws: 'monte carlo'.
    """
    from genvdis._runtime import portable  # numba: loaded only where data are made

    groups = _grouped(np.asarray(p0, float), np.asarray(p1, float))
    if not groups:
        return 0.5, "exact"
    outcomes = math.prod(c + 1 for _, _, c in groups)
    if outcomes <= max_outcomes:
        # log P(t | y) for every joint count vector t, built up group by group.
        log0, log1 = np.zeros(1), np.zeros(1)
        for a, b, c in groups:
            t = np.arange(c + 1)
            log0 = (log0[:, None] + binom_logpmf(t, c, a)[None, :]).ravel()
            log1 = (log1[:, None] + binom_logpmf(t, c, b)[None, :]).ravel()
        return float(0.5 * portable.exp(np.minimum(log0, log1)).sum()), "exact"
    rng = np.random.default_rng(seed)
    weights = np.array([math.log(b / a) - math.log((1 - b) / (1 - a)) for a, b, _ in groups])
    offset = sum(c * math.log((1 - b) / (1 - a)) for a, b, c in groups)
    wrong = 0.0
    for y, chunk in product((0, 1), range(0, draws // 2, 100_000)):
        size = min(100_000, draws // 2 - chunk)
        counts = np.column_stack([rng.binomial(c, b if y else a, size) for a, b, c in groups])
        log_odds = portable.matmul(counts, weights[:, None])[:, 0] + offset  # not BLAS
        wrong += float((log_odds < 0).sum() if y else (log_odds > 0).sum())
        wrong += float((log_odds == 0).sum()) / 2  # a tie is wrong half the time, whatever we say
    return wrong / (2 * (draws // 2)), "monte carlo"


def asymptotic_error(spec: SyntheticDataset) -> tuple[float, str]:
    """The error both naive Bayes and logistic regression converge to (the Bayes error, since
    both models' families hold the Bayes classifier here), and the method: exact or MC."""
    params = parameters(spec)
    if params.kind == "gaussian":
        return bayes_error_gaussian(params), "exact"
    return bayes_error_binary(params.p[0], params.p[1], seed=spec.seed)


def bayes_log_odds(params: SyntheticParameters, X: np.ndarray) -> np.ndarray:
    """log P(y=1 | x) / P(y=0 | x) of the true distribution (for checks and Monte Carlo)."""
    from genvdis._runtime import portable  # numba: loaded only where data are made

    if params.kind == "binary":
        p0, p1 = params.p
        w = portable.log(p1 / p0) - portable.log((1 - p1) / (1 - p0))
        return portable.matmul(X, w[:, None])[:, 0] + portable.log((1 - p1) / (1 - p0)).sum()
    mu0, mu1 = params.mu
    var = params.sigma**2
    w = (mu1 - mu0) / var
    return portable.matmul(X, w[:, None])[:, 0] - ((mu1**2 - mu0**2) / (2 * var)).sum()
