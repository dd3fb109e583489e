"""Synthetic learning curves whose answers are known, and run folders holding them: shared
by the tests of analysis, of the analysis files (runfiles) and of the report."""

from __future__ import annotations

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
