"""What a run leaves on disk: per-split errors, a summary, the resolved config, checkpoints.

Every file is written to a temporary name and renamed into place, so a killed run never leaves
a half-written CSV. Checkpoints (one CSV per block of splits at one m) live in
`<out>/<name>/.checkpoints/` under a fingerprint of everything that determines the numbers; a
rerun of the same command skips the blocks already there, and a run whose fingerprint differs
throws the old checkpoints away, saying so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from genvdis.errors import UserError

log = logging.getLogger(__name__)

ERROR_COLUMNS = ["model", "m", "split", "n_test", "errors", "error", "separable"]
SUMMARY_COLUMNS = ["model", "m", "n_splits", "mean", "std", "sem", "ci_low", "ci_high"]
SUMMARY_COLUMNS += ["frac_separable"]
CHECKPOINTS = ".checkpoints"


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_csv(path: Path, frame: pd.DataFrame) -> None:
    atomic_write_text(path, frame.to_csv(index=False, lineterminator="\n"))


def fingerprint(resolved: dict) -> str:
    """A short hash of everything that determines the numbers (config, data, version)."""
    text = json.dumps(resolved, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_output(out_dir: Path, name: str) -> Path:
    """`<out_dir>/<name>`, checking that the results folder can be a folder."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out: {out_dir} is a file, not a folder")
    run_dir = out_dir / name
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out: {run_dir} is a file, not a folder")
    return run_dir


class CheckpointStore:
    """Blocks of finished splits for one run, valid only under one fingerprint."""

    def __init__(self, run_dir: Path, key: str) -> None:
        self.dir = run_dir / CHECKPOINTS
        self.key = key

    def open(self) -> int:
        """Make the folder ready; drop checkpoints of another config. Returns blocks kept."""
        stamp = self.dir / "fingerprint"
        if self.dir.exists():
            old = stamp.read_text().strip() if stamp.exists() else ""
            if old != self.key:
                n = len(list(self.dir.glob("*.csv")))
                log.warning(
                    "config or data changed since the last run: discarding %d checkpoint(s) in %s",
                    n,
                    self.dir,
                )
                shutil.rmtree(self.dir)
        for stale in [*self.dir.parent.glob(".*.tmp"), *self.dir.glob(".*.tmp")]:
            stale.unlink(missing_ok=True)  # a write that a killed run left half-done
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(stamp, self.key + "\n")
        return len(list(self.dir.glob("*.csv")))

    def path(self, m: int, start: int) -> Path:
        return self.dir / f"m{m:07d}_s{start:07d}.csv"

    def done(self, m: int, start: int) -> bool:
        return self.path(m, start).exists()

    def save(self, m: int, start: int, frame: pd.DataFrame) -> None:
        atomic_write_csv(self.path(m, start), frame)

    def load_all(self) -> pd.DataFrame:
        files = sorted(self.dir.glob("*.csv"))
        return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def summarize_errors(errors: pd.DataFrame, model_order: list[str]) -> pd.DataFrame:
    """Mean error per model and m with its standard error and a t-based 95% interval."""
    grouped = errors.groupby(["model", "m"], sort=False)
    summary = grouped.agg(
        n_splits=("error", "size"),
        mean=("error", "mean"),
        std=("error", "std"),
        frac_separable=("separable", "mean"),
    ).reset_index()
    summary["std"] = summary["std"].fillna(0.0)
    summary["sem"] = summary["std"] / np.sqrt(summary["n_splits"])
    dof = np.maximum(summary["n_splits"] - 1, 1)
    half = stats.t.ppf(0.975, dof) * summary["sem"]
    summary["ci_low"] = summary["mean"] - half
    summary["ci_high"] = summary["mean"] + half
    summary["order"] = summary["model"].map({m: i for i, m in enumerate(model_order)})
    summary = summary.sort_values(["order", "m"]).drop(columns="order")
    return summary[SUMMARY_COLUMNS].reset_index(drop=True)


def order_errors(errors: pd.DataFrame, model_order: list[str]) -> pd.DataFrame:
    order = errors["model"].map({m: i for i, m in enumerate(model_order)})
    errors = errors.assign(_order=order).sort_values(["_order", "m", "split"])
    errors = errors.drop(columns="_order")[ERROR_COLUMNS].reset_index(drop=True)
    errors["separable"] = errors["separable"].astype(bool)
    return errors


def write_results(
    run_dir: Path, errors: pd.DataFrame, resolved: dict, model_order: list[str]
) -> None:
    """errors.csv, summary.csv and config.yaml, each atomically."""
    errors = order_errors(errors, model_order)
    atomic_write_csv(run_dir / "errors.csv", errors)
    atomic_write_csv(run_dir / "summary.csv", summarize_errors(errors, model_order))
    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(resolved, sort_keys=False))


def read_resolved(run_dir: Path) -> dict | None:
    path = run_dir / "config.yaml"
    if not path.is_file():
        return None
    return yaml.safe_load(path.read_text())


def find_runs(results_dir: Path) -> list[Path]:
    """Run folders under `results_dir` (or `results_dir` itself if it is one)."""
    if not results_dir.is_dir():
        raise UserError(f"results folder not found: {results_dir}")
    if (results_dir / "summary.csv").is_file():
        return [results_dir]
    return sorted(p.parent for p in results_dir.glob("*/summary.csv"))
