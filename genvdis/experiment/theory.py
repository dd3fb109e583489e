"""The theory, measured: how many examples naive Bayes and logistic regression need as the
number of features n grows (Ng & Jordan: O(log n) for naive Bayes, O(n) for logistic
regression).

A theory config names a synthetic distribution (genvdis.data.synthetic) and a grid of n. For each n
it builds an ordinary `ExperimentConfig` and runs the ordinary engine into `<out>/<name>/n<n>/`;
then, from the per-split errors, it finds each model's m*(eps): the smallest grid m from which
on the mean error stays within eps of the model's asymptotic error (the Bayes error, known
exactly), with a bootstrap interval over splits. It writes `sample_complexity.csv`, least-
squares fits of m* = a + b log n and m* = a + b n (`fits.csv`), and a figure. See docs/theory.md.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import yaml

from genvdis import __version__
from genvdis.config.experiment import ExperimentConfig
from genvdis.config.theory import TheoryConfig, experiment_config, load_theory_config
from genvdis.data import synthetic
from genvdis.experiment import planning
from genvdis.store import lock as runlock
from genvdis.store import results

if TYPE_CHECKING:
    from genvdis.progress import Progress

log = logging.getLogger(__name__)

SAMPLE_COMPLEXITY_COLUMNS = ["n", "model", "epsilon", "m_star", "ci_low", "ci_high"]
SAMPLE_COMPLEXITY_COLUMNS += ["asymptotic_error", "reference_error"]
FIT_COLUMNS = ["model", "epsilon", "form", "a", "b", "r2"]
# What a theory folder's outputs were made from (its config, version and every n's run) and
# their hashes, written last: a rerun that finds it true does nothing (`_up_to_date`).
MANIFEST = "manifest.json"


# --- m*(eps) -----------------------------------------------------------------------------------


def first_stable(within: np.ndarray) -> np.ndarray:
    """Index of the first grid point from which `within` is True to the end, along the last
    axis; -1 where the last point is not within."""
    tail = np.flip(np.cumprod(np.flip(within, axis=-1), axis=-1), axis=-1).astype(bool)
    first = np.argmax(tail, axis=-1)
    return np.where(tail[..., -1], first, -1)


def m_star(sizes: np.ndarray, mean_error: np.ndarray, asymptote: float, eps: float) -> float:
    """The smallest grid m at which the mean error is within eps of the asymptote and stays
    within for every larger grid m; NaN if it is not within at the largest m."""
    index = int(first_stable(np.abs(np.asarray(mean_error) - asymptote) <= eps))
    return float(sizes[index]) if index >= 0 else math.nan


def m_star_interval(
    sizes: np.ndarray,
    errors: np.ndarray,
    asymptote: float,
    eps: float,
    boot: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """95% percentile-bootstrap interval of m*: splits resampled with replacement at each m
    (errors is (K sizes, S splits)). A resample that never gets within counts as +inf."""
    K, S = errors.shape
    picks = rng.integers(0, S, size=(boot, K, S))
    means = np.take_along_axis(np.broadcast_to(errors, (boot, K, S)), picks, axis=2).mean(axis=2)
    index = first_stable(np.abs(means - asymptote) <= eps)
    values = np.where(index >= 0, np.asarray(sizes, float)[index], np.inf)
    low, high = np.quantile(values, [0.025, 0.975], method="inverted_cdf")
    return float(low), float(high)


def sample_complexity(
    errors: pd.DataFrame,
    n: int,
    asymptote: float,
    epsilons: list[float],
    boot: int = 1000,
    seed: int = 0,
    reference: float | None = None,
) -> pd.DataFrame:
    """Rows (n, model, epsilon, m_star, ci_low, ci_high, asymptotic_error, reference_error)
    from one run's errors.csv. m* is measured against `reference` (default: the asymptote)."""
    reference = asymptote if reference is None else reference
    rows = []
    for model, frame in errors.groupby("model", sort=False):
        table = frame.pivot(index="m", columns="split", values="error").sort_index()
        sizes, matrix = table.index.to_numpy(), table.to_numpy()
        for eps in epsilons:
            rng = np.random.default_rng([seed, n, int(round(eps * 1e6))])
            low, high = m_star_interval(sizes, matrix, reference, eps, boot, rng)
            star = m_star(sizes, matrix.mean(axis=1), reference, eps)
            rows.append([n, model, eps, star, low, high, asymptote, reference])
    return pd.DataFrame(rows, columns=SAMPLE_COMPLEXITY_COLUMNS)


# --- fits ------------------------------------------------------------------------------------


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least squares y = a + b x, and R^2 (NaN with fewer than 3 points or constant y), in
    closed form with exactly rounded sums: the same bits on every CPU and BLAS kernel."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3:
        return math.nan, math.nan, math.nan
    # the normal equations about the means, every sum exactly rounded (math.fsum): polyfit's
    # LAPACK least squares sums in the order of the CPU's BLAS kernel, and moved the last bits
    x_bar, y_bar = math.fsum(x) / len(x), math.fsum(y) / len(y)
    dx, dy = x - x_bar, y - y_bar
    sxx = math.fsum(dx * dx)
    b = math.fsum(dx * dy) / sxx if sxx > 0 else math.nan
    a = y_bar - b * x_bar
    total = math.fsum(dy * dy)
    r2 = 1 - math.fsum((y - (a + b * x)) ** 2) / total if total > 0 else math.nan
    return float(a), float(b), float(r2)


FORMS = {"log n": np.log, "n": lambda n: np.asarray(n, float)}


def fit_forms(table: pd.DataFrame) -> pd.DataFrame:
    """For each model and epsilon, over the n where m* was reached within the grid: m* = a +
    b log n ('log n'), m* = a + b n ('n'), and log m* = a + b log n ('power': b is the
    exponent of n, about 1 for O(n), about 0 for O(log n) or bounded)."""
    rows = []
    for (model, eps), group in table.groupby(["model", "epsilon"], sort=False):
        done = group[np.isfinite(group["m_star"])]
        n, star = done["n"].to_numpy(float), done["m_star"].to_numpy(float)
        for form, transform in FORMS.items():
            rows.append([model, eps, form, *fit_line(transform(n), star)])
        rows.append([model, eps, "power", *fit_line(np.log(n), np.log(star))])
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


# --- the experiment --------------------------------------------------------------------------


def asymptote_row(
    config: TheoryConfig, n: int, drawn: tuple[np.ndarray, np.ndarray] | None = None
) -> dict:
    """The exact asymptotic error at n, and the Bayes rule's error on the drawn rows: what the
    mean test error converges to on this finite pool (test sets are the pool minus the training
    rows), off the exact value by the pool's sampling noise, sd ~ sqrt(p (1 - p) / n_rows).
    `drawn`: the rows (`synthetic.draw`), if the caller has them."""
    spec = config.dataset(n)
    error, method = synthetic.asymptotic_error(spec)
    params = synthetic.parameters(spec)
    X, y = synthetic.draw(spec) if drawn is None else drawn
    pool = float(np.mean((synthetic.bayes_log_odds(params, X) > 0) != y))
    k = synthetic.n_informative(spec)
    return {"n": n, "informative": k, "asymptotic_error": error, "method": method,
            "pool_bayes_error": pool}  # fmt: skip


def run_theory(
    config: TheoryConfig | str | Path,
    out_dir: Path = Path("results"),
    *,
    jobs: int = 1,
    splits: int | None = None,
    progress: Progress | None = None,
    force: bool = False,
    wait: bool = False,
) -> Path:
    """Run every n through the engine, then write sample_complexity.csv, fits.csv,
    asymptotes.csv and the figure into `<out>/<name>/`; returns that folder. The folder is
    locked while it runs; `progress`, `force` and `wait` are the engine's."""
    if not isinstance(config, TheoryConfig):
        config = load_theory_config(config)
    config = config.with_overrides(splits=splits)
    root = results.prepare_output(out_dir, config.name, "theory")
    planning.check_synthetic(config.n_rows, max(config.n), config.kind, force)
    with runlock.hold(root, wait):
        if _up_to_date(config, root):
            log.info("%s: up to date (%s)", config.name, root)
            return root
        return _run_theory(config, root, jobs, progress, force)


def _run_theory(
    config: TheoryConfig, root: Path, jobs: int, progress: Progress | None, force: bool
) -> Path:
    """`run_theory` once its folder is locked (the n's schedule: `_run_all_n`)."""
    from genvdis.report import plotting

    started = time.perf_counter()
    done = _run_all_n(config, root, jobs, progress, force, started)
    asymptotes = [row for row, _ in done]
    table = pd.concat([t for _, t in done], ignore_index=True)
    fits = fit_forms(table)
    with results.writing(root, "the sample complexity"):
        (root / MANIFEST).unlink(missing_ok=True)
        results.atomic_write_csv(root / "sample_complexity.csv", table)
        results.atomic_write_csv(root / "fits.csv", fits)
        results.atomic_write_csv(root / "asymptotes.csv", pd.DataFrame(asymptotes))
    plotting.plot_theory(table, fits, root / config.name, config.display_title, _caption(config))
    made = _outputs(config)
    keys = [_run_fingerprint(root / f"n{n}") for n in config.n]
    manifest = {"fingerprint": _fingerprint(config, keys),
                "files": {name: results.output_sha256(root / name) for name in made}}  # fmt: skip
    with results.writing(root, "the sample complexity"):
        results.atomic_write_text(root / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    log.info("%s: wrote %s in %.0f s", config.name, root, time.perf_counter() - started)
    return root


def _run_all_n(
    config: TheoryConfig,
    root: Path,
    jobs: int,
    progress: Progress | None,
    force: bool,
    started: float,
) -> list[tuple[dict, pd.DataFrame]]:
    """Every n's (asymptote row, m* table), in the config's order. With more than one job, an
    n that holds more than a worker's share of the work (`_cost`) runs alone on all of them,
    largest first; the rest run at once, each on one process (largest first), rather than one
    after another: the small n have too few tasks to keep the workers busy. Each n's numbers
    are the same either way (the engine's do not depend on the workers)."""
    from genvdis.experiment import _pool as pool

    each = functools.partial(_one_n, config, root, progress=progress, force=force, started=started)
    alone, rest = [], sorted(config.n, key=lambda n: -_cost(config, n))
    workers = pool.worker_count(jobs, len(rest))
    while len(rest) > 1 and _cost(config, rest[0]) * workers > sum(_cost(config, n) for n in rest):
        alone.append(rest.pop(0))
    done = {n: each(n, jobs) for n in alone}
    if workers == 1 or len(rest) < 2:
        done |= {n: each(n, jobs) for n in rest}
    else:
        work = functools.partial(_one_n, config, root, jobs=1, progress=None, force=force,
                                 started=started)  # fmt: skip
        # no progress bar around the pool: rich redraws it from a thread, and a worker forked
        # while that thread holds the console's lock would wait on it forever; each n logs
        # a line when it is done instead
        found = pool.map_ordered(work, rest, jobs)
        done |= dict(zip(rest, found, strict=True))
    return [done[n] for n in config.n]


def _cost(config: TheoryConfig, n: int) -> float:
    """A guess of the work at n, up to a constant: the sum of m (n + 1) over the m grid (the
    configs/theory-*.yaml runs' CPU time at n = 46 and 70 grew about like it)."""
    return float(sum(experiment_config(config, n).size_grid)) * (n + 1)


def _one_n(
    config: TheoryConfig,
    root: Path,
    n: int,
    jobs: int,
    progress: Progress | None,
    force: bool,
    started: float,
) -> tuple[dict, pd.DataFrame]:
    """One n: its engine run (into `<root>/n<n>/`), its asymptote row and its m* table."""
    from genvdis.experiment import engine

    experiment = experiment_config(config, n)
    run_dir = root / experiment.name
    if _recorded_run(experiment, run_dir) is None:  # the rows are drawn once, for both
        drawn = synthetic.draw(config.dataset(n))
        row = asymptote_row(config, n, drawn)
        raw = synthetic.raw_table(config.dataset(n), *drawn)
        del drawn  # the engine's table holds the rows from here on
        engine.run_experiment(experiment, root, jobs=jobs, progress=progress, force=force, raw=raw)
    else:
        log.info("%s: up to date (%s)", experiment.name, run_dir)
        row = asymptote_row(config, n)
    from genvdis.store import runfiles

    errors = runfiles.read_errors(run_dir)  # the bytes parsed are the bytes checked
    exact, pool = row["asymptotic_error"], row["pool_bayes_error"]
    reference = pool if config.reference == "pool" else exact
    table = sample_complexity(errors, n, exact, config.epsilon, config.boot, config.seed, reference)
    log.info("%s: n = %d done (%.0f s so far)", config.name, n, time.perf_counter() - started)
    return row, table


def _caption(config: TheoryConfig) -> str:
    """What the theory figure shows, under it."""
    reference = (
        "measured as the Bayes rule's error on the same rows. "
        if config.reference == "pool"
        else "exact. "
    )
    return (
        f"{config.splits} random splits per m, test set: the other rows of {config.n_rows}; "
        "bars: 95% bootstrap intervals over splits;\nasymptotic error: the Bayes error, "
        + reference
        + "m* missing: not within eps at the largest m run."
    )


# --- up to date ------------------------------------------------------------------------------


def _up_to_date(config: TheoryConfig, root: Path) -> bool:
    """Whether every n's run and the folder's own outputs are this config's, as their manifests
    and files' hashes say: checked without drawing any data, fitting or drawing a figure."""
    keys = [_recorded_run(experiment_config(config, n), root / f"n{n}") for n in config.n]
    if None in keys:
        return False
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        listed, made_by = dict(manifest["files"]), manifest["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if made_by != _fingerprint(config, keys):
        return False
    hashes = {name: results.output_sha256(root / name) for name in _outputs(config)}
    return None not in hashes.values() and hashes == listed


def _outputs(config: TheoryConfig) -> list[str]:
    """The files of a theory folder that its manifest lists."""
    tables = ["sample_complexity.csv", "fits.csv", "asymptotes.csv"]
    return [*tables, f"{config.name}.png", f"{config.name}.pdf"]


def _recorded_run(experiment: ExperimentConfig, run_dir: Path) -> str | None:
    """The fingerprint of the finished run in `run_dir` if it is `experiment`'s, else None.
    The engine checks this from the data it draws; here the run's config.yaml (verified by its
    manifest) must hold the experiment, this version and the synthetic spec's hash, which
    determine the data, so the fields drawn from the data can be taken from it."""
    try:
        resolved = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
        key = resolved.pop("fingerprint")
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError):
        return None
    spec = experiment.dataset.synthetic
    expected = {
        **experiment.model_dump(mode="json"),
        "sizes": experiment.size_grid,
        "title": experiment.display_title,
        "genvdis_version": __version__,
        "data_checksums": {"spec": synthetic.spec_hash(spec)},
    }
    if any(resolved.get(name) != value for name, value in expected.items()):
        return None
    if key != results.fingerprint(resolved) or not results.verify(run_dir, key).complete:
        return None
    return key


def _run_fingerprint(run_dir: Path) -> str | None:
    """The fingerprint in a finished run's manifest."""
    try:
        manifest = json.loads((run_dir / results.MANIFEST).read_text(encoding="utf-8"))
        return manifest["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _fingerprint(config: TheoryConfig, keys: list[str | None]) -> str:
    """What a theory folder's outputs are made from: its config, this version, every n's run."""
    made_from = {"theory": config.model_dump(mode="json"), "genvdis_version": __version__}
    return results.fingerprint(
        {**made_from, "runs": dict(zip(map(str, config.n), keys, strict=True))}
    )
