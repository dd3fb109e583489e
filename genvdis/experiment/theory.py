"""The theory, measured: how many examples naive Bayes and logistic regression need as the
number of features n grows (Ng & Jordan: O(log n) for naive Bayes, O(n) for logistic
regression).

A theory config names a synthetic distribution (genvdis.data.synthetic) and a grid of n. For each n
it builds an ordinary `ExperimentConfig` and runs the ordinary engine into `<out>/<name>/n<n>/`;
then, from the per-split errors, it measures each model's m*(eps) against the Bayes error
(genvdis.analysis.theory) and writes `sample_complexity.csv`, the fits of m* against log n and n
(`fits.csv`) and a figure, drawn by the caller's `figure` (genvdis.report.plotting.plot_theory:
the report layer sits above this one). See docs/theory.md.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pandas as pd
import yaml

from genvdis._version import __version__
from genvdis.analysis.theory import asymptote_row, fit_forms, sample_complexity
from genvdis.config.experiment import ExperimentConfig
from genvdis.config.theory import TheoryConfig, experiment_config, load_theory_config
from genvdis.data import synthetic
from genvdis.experiment import planning
from genvdis.store import lock, results

if TYPE_CHECKING:
    from genvdis.progress import Progress

log = logging.getLogger(__name__)

# What a theory folder's outputs were made from (its config, version and every n's run) and
# their hashes, written last: a rerun that finds it true does nothing (`_up_to_date`).
MANIFEST = "manifest.json"


class Figure(Protocol):
    """Draws the theory figure: m* tables and fits to `<stem>.png` and `<stem>.pdf`."""

    def __call__(
        self, table: pd.DataFrame, fits: pd.DataFrame, stem: Path, title: str, caption: str
    ) -> None: ...


# --- the experiment --------------------------------------------------------------------------


def run_theory(
    config: TheoryConfig | str | Path,
    out_dir: Path = Path("results"),
    *,
    figure: Figure,
    jobs: int = 1,
    splits: int | None = None,
    progress: Progress | None = None,
    force: bool = False,
    wait: bool = False,
) -> Path:
    """Run every n through the engine, then write sample_complexity.csv, fits.csv,
    asymptotes.csv and the figure (`figure`) into `<out>/<name>/`; returns that folder. The
    folder is locked while it runs; `progress`, `force` and `wait` are the engine's."""
    if not isinstance(config, TheoryConfig):
        config = load_theory_config(config)
    config = config.with_overrides(splits=splits)
    root = results.prepare_output(out_dir, config.name, "theory")
    planning.check_synthetic(config.n_rows, max(config.n), config.kind, force)
    with lock.hold(root, wait):
        if _up_to_date(config, root):
            log.info("%s: up to date (%s)", config.name, root)
            return root
        return _run_theory(config, root, figure, jobs, progress, force)


def _run_theory(
    config: TheoryConfig,
    root: Path,
    figure: Figure,
    jobs: int,
    progress: Progress | None,
    force: bool,
) -> Path:
    """`run_theory` once its folder is locked (the n's schedule: `_run_all_n`)."""
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
    figure(table, fits, root / config.name, config.display_title, _caption(config))
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
    from genvdis._runtime import parallel

    each = functools.partial(_one_n, config, root, progress=progress, force=force, started=started)
    alone, rest = [], sorted(config.n, key=lambda n: -_cost(config, n))
    workers = parallel.worker_count(jobs, len(rest), backend="fork")
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
        found = parallel.map_ordered(work, rest, jobs)
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
        # the theory's m* needs each model's exact asymptote, which a baseline has no use for
        engine.run_experiment(
            experiment, root, jobs=jobs, progress=progress, force=force, raw=raw, baseline=False
        )
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
