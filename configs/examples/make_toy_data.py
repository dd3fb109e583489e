"""Write toy.csv: a small mixed table for the users'-own-data example configs.

Deterministic (numpy seed 2001), so the committed toy.csv, its sha256 in toy-url.yaml and the
tests all agree; rerun this script and `git diff` shows nothing. The label depends on the
numbers and on the categories through a logistic model, so both naive Bayes and logistic
regression have something to learn, and neither model is exactly right (naive Bayes assumes
the attributes independent given the label; they are not: income grows with age).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SEED = 2001
N_ROWS = 300
HERE = Path(__file__).resolve().parent


def make_rows(n_rows: int = N_ROWS, seed: int = SEED) -> list[list[str]]:
    """The table as text cells, header first."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 81, n_rows)
    income = np.round(20 + 0.6 * (age - 18) + rng.gamma(2.0, 10.0, n_rows), 1)  # in $1000
    visits = rng.poisson(2.0, n_rows).clip(0, 8)  # few distinct values: inferred discrete
    region = rng.choice(["north", "south", "east", "west"], n_rows)
    plan = rng.choice(["basic", "plus", "premium"], n_rows, p=[0.5, 0.3, 0.2])
    log_odds = (
        -2.0
        + 0.04 * (age - 45)
        + 0.03 * (income - 50)
        + 0.35 * visits
        + np.select([region == "north", region == "south"], [0.8, -0.6], 0.0)
        + np.select([plan == "premium", plan == "plus"], [1.2, 0.5], 0.0)
    )
    label = np.where(rng.random(n_rows) < 1 / (1 + np.exp(-log_odds)), "yes", "no")
    header = ["age", "income", "visits", "region", "plan", "label"]
    body = zip(age, income, visits, region, plan, label, strict=True)
    return [header, *([str(a), f"{i:.1f}", str(v), r, p, y] for a, i, v, r, p, y in body)]


def main(path: Path = HERE / "toy.csv") -> Path:
    path.write_text("".join(",".join(row) + "\n" for row in make_rows()), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(main())
