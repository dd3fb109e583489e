"""The report's curve fits alone: `fits.fits_table` on every committed run's curves, this
checkout against another one (--against), side by side, in fresh processes.

    git worktree add ../fits-base 75f5d91
    python benchmarks/bench_fits.py --against ../fits-base [--repeat 3]

Each run's curves are read from its committed summary.csv (mean and sem per model and m: the
numbers `genvdis report` fits, up to the last bits of a mean), so no errors.csv is needed.
Each round times both sides in turn (CPU time of the fitting alone, imports left out), and
the figure is the minimum over --repeat rounds. Then the two sides' tables are compared: the
rows whose `ok`, `identifiable`, `reason` or `best` differ (there should be none), and the
largest relative change of each number among the fits whose asymptote is identifiable.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1]
FLAGS = ["ok", "identifiable", "reason", "best"]
NUMBERS = ["asymptote", "asymptote_se", "rmse", "holdout_rmse"]
CHILD = """import sys, time
from pathlib import Path
import pandas as pd
from genvdis.analysis import fits
root = Path(sys.argv[1])
paths = sorted(root.glob("*/summary.csv")) + sorted(root.glob("examples/*/summary.csv"))
curves = [pd.read_csv(p) for p in paths]
start = time.process_time()
tables = [fits.fits_table(c).assign(run=str(p.parent.relative_to(root)))
          for p, c in zip(paths, curves)]
print(time.process_time() - start)
pd.concat(tables, ignore_index=True).to_csv(sys.argv[2], index=False)
"""


def _fit(tree: Path, out: Path) -> float:
    """CPU seconds of the fits in a fresh process with `tree`'s genvdis; the table to `out`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(HERE / "results"), str(out)],
        env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def compare(this: pd.DataFrame, other: pd.DataFrame) -> None:
    """Print how the two sides' fits tables differ."""
    for column in FLAGS:
        differ = this[column].fillna("").astype(str) != other[column].fillna("").astype(str)
        print(f"{column}: {int(differ.sum())} of {len(this)} rows differ")
    pinned = (other["ok"] & other["identifiable"]).to_numpy(bool)
    for column in NUMBERS:
        a, b = other[column].to_numpy(float), this[column].to_numpy(float)
        changed = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(pinned & changed, np.abs(b - a) / np.abs(a), 0.0)
        print(
            f"{column}: {int(changed.sum())} values changed; largest relative change among "
            f"identifiable fits {np.nanmax(rel):.1e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sides = {"this": HERE, "against": args.against.resolve()}
    best = dict.fromkeys(sides, float("inf"))
    with tempfile.TemporaryDirectory(prefix="bench-fits-") as scratch:
        for _ in range(args.repeat):
            for side, tree in sides.items():
                cpu = _fit(tree, Path(scratch) / f"{side}.csv")
                best[side] = min(best[side], cpu)
                print(f"  {side:8} {cpu:6.2f} s CPU", flush=True)
        tables = {side: pd.read_csv(Path(scratch) / f"{side}.csv") for side in sides}
    print(
        f"min of {args.repeat}: fits {best['against']:.2f} s -> {best['this']:.2f} s CPU "
        f"({best['against'] / best['this']:.2f}x)"
    )
    compare(tables["this"], tables["against"])


if __name__ == "__main__":
    main()
