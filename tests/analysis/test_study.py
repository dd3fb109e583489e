"""The study's statistics across datasets (genvdis/analysis/study.py), on tables whose answers
are known: Wilson intervals by their formula, slopes of exact power laws, Fisher's tea-tasting
table, and counts of hand-made verdicts, flags and sweep rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from genvdis.analysis import differences as an
from genvdis.analysis import sensitivity
from genvdis.analysis import study as st


def _wilson_by_formula(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_interval_of_3_in_10_is_the_textbook_one():
    lo, hi = st.wilson(3, 10)
    assert (lo, hi) == pytest.approx(_wilson_by_formula(3, 10), abs=1e-12)
    assert (round(lo, 4), round(hi, 4)) == (0.1078, 0.6032)


def test_wilson_at_the_edges():
    assert st.wilson(0, 0) is None
    lo, hi = st.wilson(0, 15)
    assert lo == pytest.approx(0, abs=1e-12) and hi == pytest.approx(_wilson_by_formula(0, 15)[1])
    lo, hi = st.wilson(15, 15)
    assert hi == pytest.approx(1) and lo == pytest.approx(_wilson_by_formula(15, 15)[0])


def test_verdict_counts_group_every_other_verdict():
    verdicts = [an.TWO_REGIMES] * 3 + [an.NB_BETTER, an.LR_BETTER, st.NO_BETTER, st.NO_BETTER]
    verdicts += [an.MIXED, an.NOT_DISTINGUISHABLE, an.NO_PAIR]
    counts = st.verdict_counts(verdicts).set_index("label")
    assert counts["count"].to_dict() == {
        an.TWO_REGIMES: 3, an.NB_BETTER: 1, an.LR_BETTER: 1, st.NO_BETTER: 2, st.OTHER: 3,
    }  # fmt: skip
    assert (counts["of"] == 10).all()
    assert counts.loc[an.TWO_REGIMES, ["ci_low", "ci_high"]].tolist() == pytest.approx(
        list(_wilson_by_formula(3, 10))
    )


def test_the_slope_of_an_exact_power_law_is_its_exponent():
    d = np.array([4, 9, 20, 35, 64, 150, 300])
    fit = st.loglog_slope(d, 7.5 * d, n_boot=500, seed=3)
    assert fit["slope"] == pytest.approx(1, abs=1e-12)
    assert fit["intercept"] == pytest.approx(math.log(7.5), abs=1e-12)
    assert (fit["ci_low"], fit["ci_high"]) == pytest.approx((1, 1), abs=1e-9)
    fit = st.loglog_slope(d, 3 * np.sqrt(d), n_boot=500)
    assert fit["slope"] == pytest.approx(0.5, abs=1e-12)


def test_the_bootstrap_is_seeded_and_covers_the_fit():
    rng = np.random.default_rng(0)
    d = np.exp(rng.uniform(1, 5, 30))
    m = 2 * d * np.exp(rng.normal(0, 0.5, 30))
    one, two = st.loglog_slope(d, m, seed=1), st.loglog_slope(d, m, seed=1)
    assert one == two
    assert one["ci_low"] < one["slope"] < one["ci_high"]
    assert one["ci_low"] < 1 < one["ci_high"]
    assert st.loglog_slope(d, m, seed=2)["ci_low"] != one["ci_low"]


def test_no_slope_without_two_distinct_x():
    assert st.loglog_slope([5, 5, 5], [10, 20, 30])["slope"] is None
    assert st.loglog_slope([5], [10])["slope"] is None


def test_d_counts_the_columns_the_coding_keeps():
    features = {"continuous": 3, "discrete": 3, "levels": [3, 2, 1]}
    assert st.n_parameters(features) == 3 + 2 + 1 + 0
    assert st.n_parameters(features, "drop_last") == 6
    assert st.n_parameters(features, "full") == 3 + 3 + 2 + 1
    assert st.n_parameters(None) is None


def _table(**columns) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    base = {c: [None] * n for c in st.COLUMNS}
    base.update(name=[f"d{i}" for i in range(n)], is_figure1=[False] * n)
    for short in ("nb", "lr"):
        base.update({f"{short}_err_m_max": [0.1] * n})
        base.update({f"{short}_{s}": [""] * n for s in st.SHAPES})
    base.update(columns)
    return pd.DataFrame(base)


def test_the_asymptotic_claim_counts_significant_leads():
    table = _table(
        diff_m_max=[-0.05, -0.01, -0.002, 0.03, None],
        diff_m_max_ci_low=[-0.06, -0.02, -0.004, 0.02, None],
        diff_m_max_ci_high=[-0.04, -0.005, 0.001, 0.04, None],
    )
    a = st.asymptotic(table)
    assert (a["paired"], a["lr_lower"], a["lr_lower_significant"]) == (4, 3, 2)
    assert a["nb_lower_significant"] == 1
    assert (a["lead_median"], a["lead_min"], a["lead_max"]) == pytest.approx((0.03, 0.01, 0.05))
    assert a["significant"] == ["d0", "d1"]


def test_ill_behaved_curves_are_counted_per_curve():
    table = _table(
        nb_rises=["10→20", "", "", ""], nb_nonconvex=["", "30", "", ""],
        lr_rises=["", "", "", ""], lr_nonconvex=["40;60", "", "", ""],
    )  # fmt: skip
    shapes = st.ill_behaved(table).set_index("label")
    assert shapes["of"].tolist() == [8, 8, 8]
    assert shapes["count"].tolist() == [1, 2, 3]  # rises, non-convex, either (d0's two curves, d1)


def test_robustness_counts_each_variant_main_ones_first():
    rows = []
    for name, base, ridge in (("a", an.TWO_REGIMES, an.LR_BETTER), ("b", an.NB_BETTER, an.MIXED),
                              ("c", an.TWO_REGIMES, an.TWO_REGIMES)):  # fmt: skip
        for variant, verdict, not_run in (
            ("baseline", base, ""), ("separable=ridge", ridge, ""), ("laplace=2", base, ""),
            ("split=random", base, "too few rows" if name == "c" else ""),
        ):  # fmt: skip
            rows.append(dict(name=name, variant=variant, not_run=not_run, verdict=verdict,
                             keeps_verdict=verdict == base))  # fmt: skip
    sweep = pd.DataFrame(rows, columns=sensitivity.COLUMNS).fillna({"not_run": ""})
    table = st.robustness(sweep, ["a", "b", "c", "elsewhere"]).set_index("variant")
    assert list(table.index) == ["baseline", "separable=ridge", "split=random", "laplace=2"]
    assert table.loc["separable=ridge", [an.TWO_REGIMES, an.LR_BETTER, st.OTHER]].tolist() == [
        1, 1, 1,
    ]  # fmt: skip
    assert table.loc["separable=ridge", "kept"] == 1
    assert table.loc["split=random", "datasets"] == 2  # not run on c
    assert st.robustness(None, ["a"]) is None
    assert st.robustness(sweep, ["elsewhere"]) is None


def test_panels_against_the_rest_by_fishers_exact_test():
    # the lady tasting tea: 3 of 4 against 1 of 4, two-sided p = 34/70
    verdicts = [an.TWO_REGIMES] * 3 + [an.NB_BETTER] + [an.TWO_REGIMES] + [an.LR_BETTER] * 3
    table = _table(verdict=verdicts, is_figure1=[True] * 4 + [False] * 4,
                   n=[100, 200, 300, 400, 10, 20, 30, 40], d=[1, 2, 3, 4, 5, 6, 7, 8])  # fmt: skip
    out = st.panels_against_rest(table)
    assert out["fisher_p"] == pytest.approx(34 / 70)
    panels, rest = out["groups"]["Figure 1 panels"], out["groups"]["other datasets"]
    assert (panels["median_n"], panels["median_d"], rest["median_n"]) == (250, 2.5, 25)
    assert panels["counts"].iloc[0]["count"] == 3 and rest["counts"].iloc[2]["count"] == 3
    assert st.panels_against_rest(table[table["is_figure1"]])["fisher_p"] is None
