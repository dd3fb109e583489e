"""Synthetic learning curves whose answers are known, and run folders holding them: shared
by the tests of analysis, of the analysis files (runfiles) and of the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from genvdis.analysis import differences as an
from genvdis.store import results

GRID = [4, 6, 8, 10, 12, 15, 20, 25, 30, 40, 60, 100, 200]
TRUE_CROSS = 17.0  # 0.1 + 2/m == 0.2 + 0.3/m


def make_errors(curves, grid=GRID, n_splits=200, noise=0.03, shared=0.05, seed=1):
    """Per-split errors: each split has a difficulty shared by all models (so pairing matters)
    plus independent noise per model."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in grid:
        for s in range(n_splits):
            common = rng.normal(0, shared)
            for model, f in curves.items():
                err = f(m) + common + rng.normal(0, noise)
                rows.append(
                    dict(
                        model=model, m=m, split=s, n_test=100, errors=0, error=err, separable=False
                    )
                )
    return pd.DataFrame(rows)


CROSSING = {
    an.LR: lambda m: 0.1 + 2 / m,
    an.NB: lambda m: 0.2 + 0.3 / m,
}


def write_panel(root: Path, name: str, title: str, panel, errors: pd.DataFrame, models) -> Path:
    """A run folder as `genvdis run` leaves it, for what the analysis reads: errors.csv,
    summary.csv, config.yaml (name, title, panel, n_rows, models), the manifest listing them,
    and a stand-in figure."""
    d = root / name
    d.mkdir(parents=True)
    cfg = dict(
        name=name, title=title, panel=panel, n_rows=500, models=[{"name": x} for x in models]
    )
    if "trajectories" not in errors:
        errors = errors.assign(trajectories=0)
    results.write_results(d, errors, cfg, list(models))
    (d / f"{name}.png").write_bytes(b"\x89PNG fake")
    return d


def results_folder(root: Path) -> Path:
    """Four runs with known verdicts (pima: two regimes, sonar: NB better, extra_lda: LR better
    than LDA, nb_only: no pair) and a folder that is no run."""
    flat = make_errors(
        {an.LR: lambda m: 0.3, an.NB: lambda m: 0.2}, grid=[10, 20, 40, 80], n_splits=30
    )
    write_panel(root, "sonar", "sonar", 8, flat, [an.NB, an.LR])
    write_panel(root, "pima", "pima", 1, make_errors(CROSSING), [an.NB, an.LR])
    lda = make_errors(
        {an.LR: lambda m: 0.2, "lda": lambda m: 0.3}, grid=[10, 20, 40, 80], n_splits=30
    )
    write_panel(root, "extra_lda", "lda check", None, lda, ["lda", an.LR])
    write_panel(root, "nb_only", "nb alone", None, flat[flat["model"] == an.NB], [an.NB])
    (root / "not_a_panel").mkdir()
    return root


# Curves of one model each on a wider grid, with independent noise per split (no shared
# difficulty): the shape tests, the fits and the report's shape findings.
SHAPE_GRID = np.array([10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 400, 600], dtype=float)


def per_split(curves: dict, grid=SHAPE_GRID, n_splits=400, noise=0.04, seed=0) -> pd.DataFrame:
    """Independent per-split errors around known mean curves (fresh draws at every m)."""
    rng = np.random.default_rng(seed)
    rows = [
        dict(model=model, m=int(m), split=s, n_test=100, errors=0, error=err, separable=False)
        for model, f in curves.items()
        for m in grid
        for s, err in enumerate(f(m) + rng.normal(0, noise, n_splits))
    ]
    return pd.DataFrame(rows)


def smooth(m):
    return 0.15 + 0.8 * m**-0.6


def stepped(m):
    """The smooth curve with a planted jump of 0.05 from m = 60 on (a net rise of 0.031
    from m = 40 to m = 60)."""
    return smooth(m) + 0.05 * (m >= 60)


# Whole runs on a short grid, error counts of 200 test rows: run folders as `genvdis run` writes
# them, for the statistics a user reads (summary, analysis, pairs, the report, the explorer).
RUN_GRID = [10, 20, 40, 80, 160]


def run_errors(curves: dict, n_splits: int, seed: int = 0) -> pd.DataFrame:
    """Per-split errors on 200 test rows around known curves, a difficulty shared by the
    models of a split."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in RUN_GRID:
        for split in range(n_splits):
            shared = rng.normal(0, 0.02)
            for model, f in curves.items():
                errors = int(np.clip(round(200 * (f(m) + shared + rng.normal(0, 0.01))), 0, 200))
                rows.append((model, m, split, 200, errors, errors / 200, False, 0))
    return pd.DataFrame(rows, columns=results.ERROR_COLUMNS)


def write_run(root: Path, name: str, curves: dict, n_splits: int, **config) -> Path:
    """A run folder as `genvdis run` writes it (errors.csv, summary.csv, config.yaml,
    manifest.json)."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    models = list(curves)
    resolved = dict(name=name, title=name, splits=n_splits, sizes=RUN_GRID, n_rows=300,
                    models=[{"name": m} for m in models], **config)  # fmt: skip
    results.write_results(run_dir, run_errors(curves, n_splits), resolved, models)
    return run_dir


# A NB curve, an LR curve crossing it near m = 30, and a step up: a real rise at m = 40.
CROSS_NB = lambda m: 0.2 + 0.3 / m  # noqa: E731
CROSS_LR = lambda m: 0.1 + 3 / m  # noqa: E731
RISING = lambda m: 0.3 + (0.05 if m >= 40 else 0.0)  # noqa: E731


def explorer_data(results_dir: Path) -> dict:
    """The data explorer.html embeds for its script, as the page reads it."""
    from genvdis.report import explorer

    html = (results_dir / explorer.PAGE).read_text(encoding="utf-8")
    found = re.search(r'<script id="explorer-data" type="application/json">(.*?)</script>', html,
                      re.S)  # fmt: skip
    assert found
    return json.loads(found.group(1).replace("<\\/", "</"))
