"""The study's statistics across datasets: one row per dataset (`study_table`, read from each
results folder's analysis.csv and its runs' config.yaml and summary.csv), and what the report
says of them: verdict counts with Wilson intervals, the slope of log m* on log d (or n) with a
bootstrap over datasets, the asymptotic claim, ill-behaved curves, the verdicts under a sweep's
variants, and the Figure 1 panels against the rest. Pure functions of those tables but for the
reading; genvdis.report.study writes and draws. docs/study.md says how to read each number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from genvdis._runtime import portable
from genvdis.analysis import differences as an
from genvdis.analysis import runs, sensitivity
from genvdis.data import uci
from genvdis.errors import UserError
from genvdis.store import runfiles

MAJORITY = an.MAJORITY  # the baseline's model name in summary.csv
NO_BETTER = "no better than the majority class"  # the verdict when neither model beats it
OTHER = "other or undecided"
# the verdict groups the report counts, in the order it shows them
GROUPS = (an.TWO_REGIMES, an.NB_BETTER, an.LR_BETTER, NO_BETTER, OTHER)
LEVEL = 0.95
LCDB_ILL_BEHAVED = "14–15%"  # LCDB 1.1 (NeurIPS 2025): share of its curves that are ill-behaved
# the sweep's variants the robustness table leads with (split rule, separable rule, coding)
MAIN_VARIANTS = ("split=", "separable=", "preprocessing.encoding=")
SHAPES = ("rises", "nonconvex")
COLUMNS = [
    "name", "title", "figure1_panel", "is_figure1", "n", "K", "d", "m_min", "m_max",
    "verdict", "verdict_group", "m_cross", "m_cross_interp", "m_cross_ci_low",
    "m_cross_ci_high", "nb_err_m_max", "lr_err_m_max", "diff_m_max", "diff_m_max_ci_low",
    "diff_m_max_ci_high", "majority_err_m_max", "minority_share", "nb_rises", "nb_nonconvex",
    "lr_rises", "lr_nonconvex",
]  # fmt: skip


@dataclass(frozen=True)
class StudyRun:
    """One dataset's run: its analysis.csv row, its config.yaml and its summary.csv."""

    run_dir: Path
    row: dict[str, Any]
    config: dict[str, Any]
    summary: pd.DataFrame


# --------------------------------------------------------------------------- reading


def read_runs(folders: Sequence[Path]) -> list[StudyRun]:
    """Every run in each folder's analysis.csv, with its config and summary (each checked
    against its manifest, and the analysis against the summary, so a rerun since the analysis
    is refused). A dataset name in two folders is refused: the study counts each once."""
    found: list[StudyRun] = []
    seen: dict[str, Path] = {}
    for folder in map(Path, folders):
        if not (folder / "analysis.csv").is_file():
            raise UserError(
                f"{folder}: no analysis.csv; analyse it first with `genvdis report {folder}`"
            )
        for row in runs.read_analysis(folder).to_dict("records"):
            run_dir = folder / str(row["folder"])
            name = str(row["name"])
            if name in seen:
                raise UserError(
                    f"dataset '{name}' is in both {seen[name]} and {run_dir}; "
                    "give the study each dataset once"
                )
            seen[name] = run_dir
            summary = runfiles.read_summary(run_dir)
            runs.check_analysis(run_dir, summary, row)
            found.append(StudyRun(run_dir, row, runfiles.read_run_config(run_dir), summary))
    if not found:
        raise UserError("the study needs at least one analysed run")
    return found


def read_sweeps(folders: Sequence[Path]) -> pd.DataFrame | None:
    """The sensitivity.csv of every folder that has one, stacked (a dataset's variant once),
    or None when no folder has one."""
    tables = [t for t in map(sensitivity.read_sensitivity, folders) if t is not None]
    if not tables:
        return None
    table = pd.concat(tables, ignore_index=True)
    return table.drop_duplicates(["name", "variant"], keep="first").reset_index(drop=True)


# --------------------------------------------------------------------------- one row per dataset


def n_parameters(features: Any, encoding: Any = "drop_first") -> int | None:
    """d: the columns logistic regression sees (continuous ones, plus each discrete
    attribute's one-hot columns less the level its coding drops), without the intercept;
    None when the run records no features."""
    if not isinstance(features, dict):
        return None
    dropped = 0 if encoding == "full" else 1
    levels = [int(k) for k in features.get("levels") or []]
    return int(features.get("continuous") or 0) + sum(max(k - dropped, 0) for k in levels)


def original_classes(dataset: Any) -> int | None:
    """K: the classes in a registered dataset's label column, before the config made the target
    binary (the registry's count); None for any other source (a file, OpenML, scikit-learn's
    bundled sets), whose run files record only the two classes the models saw."""
    info = uci.REGISTRY.get(dataset) if isinstance(dataset, str) else None
    return info.classes if info else None


def verdict_group(verdict: Any) -> str:
    """The report's group of a verdict: the four named ones, else OTHER (mixed, not
    distinguishable, no pair)."""
    return str(verdict) if verdict in GROUPS else OTHER


def _majority_at(summary: pd.DataFrame, m: Any) -> float | None:
    """The majority baseline's mean error at `m` (summary.csv's `majority` rows), if it ran."""
    rows = summary[(summary["model"] == MAJORITY) & (summary["m"] == m)]
    return float(rows["mean"].iloc[0]) if len(rows) else None


def dataset_row(run: StudyRun) -> dict[str, Any]:
    """study.csv's row of one run."""
    row, cfg = run.row, run.config
    gen, disc = row.get("gen_model"), row.get("disc_model")
    counts = cfg.get("class_counts") if isinstance(cfg.get("class_counts"), dict) else {}
    total = sum(int(c) for c in counts.values())
    prep = cfg.get("preprocessing") if isinstance(cfg.get("preprocessing"), dict) else {}
    panel = row.get("panel")
    out = dict(
        name=str(row["name"]),
        title=str(row.get("title") or row["name"]),
        figure1_panel=None if pd.isna(panel) else int(panel),
        is_figure1=not pd.isna(panel),
        n=None if pd.isna(row.get("n_rows")) else int(row["n_rows"]),
        K=original_classes(cfg.get("dataset")),
        d=n_parameters(cfg.get("features"), prep.get("encoding", "drop_first")),
        m_min=row.get("m_min"),
        m_max=row.get("m_max"),
        verdict=row.get("verdict"),
        verdict_group=verdict_group(row.get("verdict")),
        m_cross=row.get("m_cross"),
        m_cross_interp=row.get("m_cross_interp"),
        m_cross_ci_low=row.get("m_cross_ci_low"),
        m_cross_ci_high=row.get("m_cross_ci_high"),
        nb_err_m_max=row.get(f"{gen}_err_m_max"),
        lr_err_m_max=row.get(f"{disc}_err_m_max"),
        diff_m_max=row.get("diff_m_max"),
        diff_m_max_ci_low=row.get("diff_m_max_ci_low"),
        diff_m_max_ci_high=row.get("diff_m_max_ci_high"),
        majority_err_m_max=_majority_at(run.summary, row.get("m_max")),
        minority_share=min(int(c) for c in counts.values()) / total if total else None,
    )
    for short, model in (("nb", gen), ("lr", disc)):
        for shape in SHAPES:
            value = row.get(f"{model}_{shape}")
            out[f"{short}_{shape}"] = "" if value is None or pd.isna(value) else str(value)
    return out


def study_table(study_runs: Sequence[StudyRun]) -> pd.DataFrame:
    """study.csv: one row per dataset, sorted by name."""
    table = pd.DataFrame([dataset_row(r) for r in study_runs], columns=COLUMNS)
    table = table.sort_values("name", kind="stable").reset_index(drop=True)
    for col in ("figure1_panel", "n", "K", "d", "m_min", "m_max", "m_cross"):
        table[col] = pd.to_numeric(table[col]).astype("Int64")
    return table


# --------------------------------------------------------------------------- statistics


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n (None for n = 0): honest at small n and
    at 0 or n successes, where the normal interval is not."""
    if n == 0:
        return None
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def share_row(label: str, k: int, n: int) -> dict[str, Any]:
    """A count, its share and the share's Wilson interval."""
    ci = wilson(k, n)
    return dict(
        label=label, count=int(k), of=int(n), share=k / n if n else None,
        ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None,
    )  # fmt: skip


def verdict_counts(verdicts: Sequence[Any]) -> pd.DataFrame:
    """How many datasets fall in each verdict group, with shares and Wilson intervals."""
    groups = [verdict_group(v) for v in verdicts]
    return pd.DataFrame([share_row(g, groups.count(g), len(groups)) for g in GROUPS])


def loglog_slope(
    x: Sequence[float], y: Sequence[float], n_boot: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """OLS of log y on log x, and a percentile bootstrap interval for the slope from
    resampling the points (datasets) with replacement; resamples whose x are all equal have
    no slope and are left out (`n_boot_used` says how many remain). Slope and interval are
    None with fewer than two distinct x."""
    lx, ly = portable.log(np.asarray(x, dtype=float)), portable.log(np.asarray(y, dtype=float))
    out: dict[str, Any] = dict(n=len(lx), slope=None, intercept=None, ci_low=None, ci_high=None)
    out["n_boot_used"] = 0
    if len(lx) < 2 or np.ptp(lx) == 0:
        return out
    cx = lx - lx.mean()  # the closed form, not LAPACK's lstsq: the same bits on every CPU
    slope = float((cx * (ly - ly.mean())).sum() / (cx * cx).sum())
    intercept = float(ly.mean() - slope * lx.mean())
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(lx), size=(n_boot, len(lx)))
    bx, by = lx[pick], ly[pick]
    cx = bx - bx.mean(axis=1, keepdims=True)
    sxx = (cx * cx).sum(axis=1)
    ok = sxx > 1e-12
    slopes = (cx * (by - by.mean(axis=1, keepdims=True))).sum(axis=1)[ok] / sxx[ok]
    alpha = (1 - LEVEL) / 2
    lo, hi = np.quantile(slopes, [alpha, 1 - alpha]) if len(slopes) else (None, None)
    out.update(slope=float(slope), intercept=float(intercept), n_boot_used=int(ok.sum()))
    out.update(ci_low=None if lo is None else float(lo), ci_high=None if hi is None else float(hi))
    return out


def crossovers(table: pd.DataFrame) -> pd.DataFrame:
    """The datasets with a crossover m* (its interpolated value, else its grid m), with d and n."""
    m_star = table["m_cross_interp"].fillna(table["m_cross"].astype(float))
    out = table.assign(m_star=m_star)[["name", "is_figure1", "d", "n", "m_star", "verdict"]]
    keep = out["m_star"].notna() & (out["m_star"] > 0)
    return out[keep].reset_index(drop=True)


def slope_against(table: pd.DataFrame, what: str, n_boot: int = 2000, seed: int = 0):
    """log m* on log `what` (d or n) over the datasets with a crossover and `what` > 0."""
    cross = crossovers(table)
    cross = cross[cross[what].notna() & (cross[what] > 0)]
    return loglog_slope(cross[what].astype(float), cross["m_star"], n_boot, seed)


def asymptotic(table: pd.DataFrame) -> dict[str, Any]:
    """Where logistic regression ends lower at the largest m: how many datasets (of those with
    a pair), how many significantly (the difference's 95% interval below 0), how many with
    naive Bayes significantly lower, and the size of LR's lead (NB - LR error at the largest
    m) where it is significant: median, smallest, largest."""
    paired = table[table["diff_m_max"].notna()]
    lower = paired[paired["diff_m_max"] < 0]
    sig = paired[paired["diff_m_max_ci_high"] < 0]
    lead = -sig["diff_m_max"].astype(float)
    return dict(
        paired=len(paired),
        lr_lower=len(lower),
        lr_lower_significant=len(sig),
        nb_lower_significant=int((paired["diff_m_max_ci_low"] > 0).sum()),
        lead_median=float(lead.median()) if len(lead) else None,
        lead_min=float(lead.min()) if len(lead) else None,
        lead_max=float(lead.max()) if len(lead) else None,
        significant=sig.sort_values("diff_m_max", kind="stable")["name"].tolist(),
    )


def ill_behaved(table: pd.DataFrame) -> pd.DataFrame:
    """Curves (each dataset's NB and LR) that rise significantly somewhere, that bend the
    wrong way, and either: counts over all curves with Wilson intervals."""
    curves = []
    for short in ("nb", "lr"):
        has = table[f"{short}_err_m_max"].notna()
        flags = table.loc[has, [f"{short}_{s}" for s in SHAPES]].fillna("") != ""
        curves.append(flags.set_axis(list(SHAPES), axis=1))
    flags = pd.concat(curves, ignore_index=True)
    n = len(flags)
    return pd.DataFrame(
        [
            share_row("non-monotone (a significant rise)", int(flags["rises"].sum()), n),
            share_row("non-convex (a wrong-way bend)", int(flags["nonconvex"].sum()), n),
            share_row("either", int(flags.any(axis=1).sum()), n),
        ]
    )  # fmt: skip


def robustness(sweeps: pd.DataFrame | None, names: Sequence[str]) -> pd.DataFrame | None:
    """Verdict-group counts under each of the sweep's variants, over the study's datasets the
    variant ran on, and how many keep their baseline verdict: the baseline first, then the
    main variants (split rule, separable rule, coding), then the rest by name. None without
    a sweep of any study dataset."""
    if sweeps is None:
        return None
    ran = sweeps[sweeps["name"].isin(set(names)) & (sweeps["not_run"] == "")]
    if ran.empty:
        return None
    rows = []
    for variant, t in ran.groupby("variant", sort=False):
        groups = [verdict_group(v) for v in t["verdict"]]
        main = str(variant).startswith(MAIN_VARIANTS)
        row: dict[str, Any] = dict(variant=str(variant), main=main, datasets=len(t))
        row.update({g: groups.count(g) for g in GROUPS})
        row["kept"] = int((t["keeps_verdict"].astype(str) == "True").sum())
        rows.append(row)
    table = pd.DataFrame(rows)
    rank = [
        0 if variant == "baseline" else 1 if main else 2
        for variant, main in zip(table["variant"], table["main"], strict=True)
    ]
    table = table.assign(rank=rank).sort_values(["rank", "variant"], kind="stable")
    return table.drop(columns="rank").reset_index(drop=True)


def panels_against_rest(table: pd.DataFrame) -> dict[str, Any]:
    """Are the paper's 15 datasets typical? Their share of "two regimes" against the other
    datasets' (Fisher's exact test, two-sided), and each group's verdict counts and median
    n and d. The p-value is None when either group is empty."""
    groups = {}
    for label, t in (("Figure 1 panels", table[table["is_figure1"]]),
                     ("other datasets", table[~table["is_figure1"]])):  # fmt: skip
        counts = verdict_counts(t["verdict"].tolist())
        groups[label] = dict(
            datasets=len(t),
            counts=counts,
            median_n=_median(t["n"]),
            median_d=_median(t["d"]),
        )
    a, b = groups["Figure 1 panels"], groups["other datasets"]
    p = None
    if a["datasets"] and b["datasets"]:
        two_a, two_b = (int(g["counts"].iloc[0]["count"]) for g in (a, b))
        grid = [[two_a, a["datasets"] - two_a], [two_b, b["datasets"] - two_b]]
        p = float(stats.fisher_exact(grid).pvalue)
    return dict(groups=groups, fisher_p=p)


def _median(values: pd.Series) -> float | None:
    v = values.dropna().astype(float)
    return float(v.median()) if len(v) else None
