"""The study's report across datasets (`write_study`): study.csv, STUDY.md and STUDY.html, the
figures of m* against d and of the verdict counts, and an explorer page of its own
(study-explorer.html: every dataset as a small multiple, the crossover-vs-d plot with a hover).

The numbers come from genvdis.analysis.study; this module only words, draws and writes them.
Nothing time- or machine-dependent goes in (no paths, no dates; figures without timestamps;
the page's numbers rounded to 6 digits), so the same folders give the same bytes.
docs/study.md says how to read each section.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker

from genvdis._runtime import portable
from genvdis.analysis import study as st
from genvdis.config import resultnames
from genvdis.report import markdown
from genvdis.report._format import Block, fmt, fmt_ci, fmt_int, is_missing
from genvdis.report.explorer import inline_page, json_number
from genvdis.report.plotting import save_figure
from genvdis.report.styles import STYLES, TABLEAU
from genvdis.store import results

N_BOOT = 2000
GROUP_COLOURS = {
    st.GROUPS[0]: "tab:orange", st.GROUPS[1]: "tab:blue", st.GROUPS[2]: "tab:red",
    st.GROUPS[3]: "tab:gray", st.GROUPS[4]: "tab:olive",
}  # fmt: skip
TITLE = "Naive Bayes vs logistic regression across datasets"


def write_study(
    folders: Sequence[Path],
    out: Path,
    sweeps: Sequence[Path] = (),
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> list[Path]:
    """The study's files in `out` from the analysed runs of `folders` (each folder's
    analysis.csv, as `genvdis report` leaves it) and the sweep results (sensitivity.csv) of
    `folders` and `sweeps`: study.csv, STUDY.md, STUDY.html, the two figures (png and pdf)
    and study-explorer.html. Returns the paths written."""
    folders = [Path(f) for f in folders]
    study_runs = st.read_runs(folders)
    table = st.study_table(study_runs)
    sweep = st.read_sweeps([*folders, *map(Path, sweeps)])
    out = Path(out)
    numbers = Numbers.of(table, sweep, n_boot, seed)
    written = []
    with results.writing(out, "the study", results.AGAIN):
        out.mkdir(parents=True, exist_ok=True)
        path = out / resultnames.STUDY_CSV
        results.atomic_write_csv(path, table)
        written.append(path)
        written += plot_verdicts(numbers.counts, out / resultnames.STUDY_VERDICTS)
        written += plot_crossovers(
            table, numbers.cross, numbers.slope_d, out / resultnames.STUDY_MSTAR
        )
        blocks = build_blocks(table, numbers, n_boot, seed)
        for name, text in (
            (resultnames.STUDY_MD, markdown.to_markdown(blocks)),
            (resultnames.STUDY_HTML, markdown.to_html(blocks, TITLE)),
            (resultnames.STUDY_EXPLORER, build_page(page_data(table, study_runs, numbers))),
        ):
            results.atomic_write_text(out / name, text)
            written.append(out / name)
    return written


@dataclass(frozen=True)
class Numbers:
    """Every statistic the report words (genvdis.analysis.study's), computed once."""

    counts: pd.DataFrame
    cross: pd.DataFrame
    slope_d: dict[str, Any]
    slope_n: dict[str, Any]
    asymptotic: dict[str, Any]
    shapes: pd.DataFrame
    robust: pd.DataFrame | None
    panels: dict[str, Any]
    baseline: int  # runs with the majority baseline's rows

    @classmethod
    def of(cls, table: pd.DataFrame, sweep: pd.DataFrame | None, n_boot: int, seed: int):
        return cls(
            counts=st.verdict_counts(table["verdict"].tolist()),
            cross=st.crossovers(table),
            slope_d=st.slope_against(table, "d", n_boot, seed),
            slope_n=st.slope_against(table, "n", n_boot, seed),
            asymptotic=st.asymptotic(table),
            shapes=st.ill_behaved(table),
            robust=st.robustness(sweep, table["name"].tolist()),
            panels=st.panels_against_rest(table),
            baseline=int(table["majority_err_m_max"].notna().sum()),
        )


# --------------------------------------------------------------------------- the report


def _pct(x: Any) -> str:
    return "—" if is_missing(x) else f"{100 * float(x):.0f}%"


def _share(row: Any) -> str:
    """'k of n (s%, 95% interval [lo%, hi%])'."""
    if not row["of"]:
        return "0 of 0"
    return (
        f"{row['count']} of {row['of']} ({_pct(row['share'])}, 95% interval "
        f"{_pct(row['ci_low'])}–{_pct(row['ci_high'])})"
    )


def _share_rows(table: pd.DataFrame) -> list[list[str]]:
    return [
        [str(r["label"]), f"{r['count']} of {r['of']}", _pct(r["share"]),
         f"{_pct(r['ci_low'])}–{_pct(r['ci_high'])}"]
        for _, r in table.iterrows()
    ]  # fmt: skip


def _slope_text(fit: dict[str, Any], what: str) -> str:
    if fit["slope"] is None:
        return f"too few crossovers with distinct {what} for a slope ({fit['n']})"
    return (
        f"{fmt(fit['slope'], 2)} (95% bootstrap interval "
        f"{fmt_ci(fit['ci_low'], fit['ci_high'], 2)}, {fit['n']} datasets)"
    )


def slope_reading(fit: dict[str, Any]) -> str:
    """What the slope of log m* on log d supports, from where its interval lies against 0
    (m* flat in d, as O(log d) would look over this range) and 1 (m* proportional to d)."""
    if fit["slope"] is None or fit["ci_low"] is None:
        return "There is no slope to read."
    lo, hi = fit["ci_low"], fit["ci_high"]
    if lo <= 0 <= hi and lo <= 1 <= hi:
        return (
            "The interval holds both 0 and 1: these datasets cannot tell m* proportional to d "
            "from m* that does not grow with d."
        )
    if lo <= 1 <= hi:
        return (
            "The interval holds 1 and not 0: m* grows with d, consistent with m* proportional to d."
        )
    if lo <= 0 <= hi:
        return "The interval holds 0 and not 1: m* is not seen to grow in proportion to d."
    if hi < 1 and lo > 0:
        return "The interval lies between 0 and 1: m* grows with d, but less than in proportion."
    if lo > 1:
        return "The interval lies beyond 1: m* grows faster than d."
    return "The interval lies below 0: m* falls as d grows."


def build_blocks(table: pd.DataFrame, num: Numbers, n_boot: int, seed: int) -> list[Block]:
    """STUDY.md (and .html) as renderer-independent blocks, in order."""
    n, panels = len(table), int(table["is_figure1"].sum())
    two = num.counts.iloc[0]
    blocks = [
        Block("h1", text=TITLE),
        Block(
            "p",
            text=f"Ng & Jordan's (2001) protocol on {n} datasets: {panels} of them Figure 1's "
            f"panels, {n - panels} others. Each dataset's verdict, crossover and errors come "
            "from its run's analysis (REPORT.md beside the runs, docs/analysis.md); this "
            f"report counts them across datasets. Every number is in `{resultnames.STUDY_CSV}`; "
            f"docs/study.md says how to read them. Two regimes: {_share(two)}.",
        ),
    ]
    blocks += _verdict_section(num)
    blocks += _crossover_section(num, n, n_boot, seed)
    blocks += _asymptote_section(num)
    blocks += _shape_section(num)
    blocks += _robustness_section(num, n)
    blocks += _panels_section(num)
    blocks += _dataset_section(table)
    return blocks


def _verdict_section(num: Numbers) -> list[Block]:
    baseline = (
        f"The majority-class baseline ran on {num.baseline} of these datasets' runs; a verdict "
        f"of “{st.NO_BETTER}” says neither model beat it."
        if num.baseline
        else "No run here has the majority-class baseline's rows (model `majority` in "
        f"summary.csv), so no verdict can be “{st.NO_BETTER}”: that count is 0 by "
        "construction, not by finding."
    )
    text = (
        "One verdict per dataset, from its paired differences (a difference is significant "
        "when its 95% interval excludes 0): two regimes (naive Bayes significantly better at "
        "small m, logistic regression at large m, in that order), one model better wherever "
        "they differ, or neither better than the majority class; mixed, not distinguishable "
        f"and runs without the pair are “{st.OTHER}”. Intervals are Wilson's. {baseline}"
    )
    return [
        Block("h2", text="Verdicts"),
        Block("p", text=text),
        Block(
            "table",
            header=["verdict", "datasets", "share", "95% interval"],
            rows=_share_rows(num.counts),
        ),  # fmt: skip
        Block("img", text="verdict counts", src=f"{resultnames.STUDY_VERDICTS}.png"),
    ]


def _crossover_section(num: Numbers, n: int, n_boot: int, seed: int) -> list[Block]:
    cross, fit = num.cross, num.slope_d
    text = (
        f"{len(cross)} of {n} datasets have a crossover m* (the m from which logistic "
        "regression stays better, interpolated in log m). Slope of log m* on log d (d: the "
        "columns logistic regression sees, one-hot, without the intercept): "
        f"{_slope_text(fit, 'd')}; on log n (rows in the data): {_slope_text(num.slope_n, 'n')}. "
        f"Ordinary least squares; the intervals resample datasets ({n_boot} resamples, seed "
        f"{seed}). {slope_reading(fit)}"
    )
    caveat = (
        "What this can and cannot say. The theorems bound how many examples each model needs "
        "to come near its own asymptotic error: O(d) for logistic regression, O(log d) for "
        "naive Bayes. m* is where the two curves cross, which also depends on how far apart "
        "the asymptotes are; a slope near 1 fits the O(d) picture, but no slope tests the "
        "theorems directly. Only datasets with a crossover count: those where naive Bayes "
        "stays better (m* beyond the grid, if anywhere) and those where logistic regression "
        "is better from the start (m* below the grid) are left out, so the fit sees the "
        "middle of the range only and its slope is biased towards 0. m* cannot exceed the "
        "grid's largest m, which the data's n bounds, so the slope on n is partly the grid's. "
        "d and n differ together across datasets: neither slope is a causal effect."
    )
    blocks = [Block("h2", text="The crossover m* against d and n"), Block("p", text=text),
              Block("p", text=caveat),
              Block("img", text="m* against d", src=f"{resultnames.STUDY_MSTAR}.png")]  # fmt: skip
    if len(cross):
        rows = [
            [r["name"], "yes" if r["is_figure1"] else "no", fmt_int(r["d"]), fmt_int(r["n"]),
             fmt(r["m_star"], 1)]
            for _, r in cross.sort_values(["m_star", "name"]).iterrows()
        ]  # fmt: skip
        header = ["dataset", "Figure 1", "d", "n", "m*"]
        blocks.append(Block("table", header=header, rows=rows))
    return blocks


def _asymptote_section(num: Numbers) -> list[Block]:
    a = num.asymptotic
    if not a["paired"]:
        return [
            Block("h2", text="The asymptotic claim"),
            Block("p", text="No dataset has the pair."),
        ]
    sig = st.share_row("", a["lr_lower_significant"], a["paired"])
    lead = (
        f"Where it is significant, logistic regression's lead is {fmt(a['lead_median'])} in "
        f"error (median; from {fmt(a['lead_min'])} to {fmt(a['lead_max'])})."
        if a["lead_median"] is not None
        else "It is significant nowhere."
    )
    text = (
        f"Logistic regression ends lower at the largest m on {a['lr_lower']} of {a['paired']} "
        f"datasets, significantly on {_share(sig)}; naive Bayes is significantly lower there "
        f"on {a['nb_lower_significant']}. {lead} The largest m is the end of each dataset's "
        "grid, not the asymptote: a curve may still be falling there."
    )
    return [Block("h2", text="The asymptotic claim"), Block("p", text=text)]


def _shape_section(num: Numbers) -> list[Block]:
    text = (
        "Each dataset's naive Bayes and logistic regression curves, by the project's own "
        "shape tests (docs/analysis.md: a significant rise between two m; a significant "
        "second difference of the wrong sign; Holm-corrected within a run). LCDB 1.1 "
        f"(NeurIPS 2025) finds {st.LCDB_ILL_BEHAVED} of its curves ill-behaved, by tests and "
        "learners of its own: the shares compare in kind, not exactly."
    )
    return [
        Block("h2", text="Ill-behaved curves"),
        Block("p", text=text),
        Block(
            "table",
            header=["finding", "curves", "share", "95% interval"],
            rows=_share_rows(num.shapes),
        ),  # fmt: skip
    ]


def _robustness_section(num: Numbers, n: int) -> list[Block]:
    head = Block("h2", text="Robustness under the sweep's variants")
    if num.robust is None:
        text = (
            "No sweep results (sensitivity.csv) for these datasets were given: how the "
            "verdicts move with the split rule, the separable rule and the coding is not "
            "measured here (`genvdis sweep`, docs/sweeps.md)."
        )
        return [head, Block("p", text=text)]
    swept = int(num.robust["datasets"].max())
    text = (
        f"Verdict counts when the datasets are run again under one change each "
        f"(`genvdis sweep`, docs/sweeps.md; swept: up to {swept} of the {n} datasets, at the "
        "sweep's own number of splits). The split rule, the separable rule and the coding "
        "come first; “keep” counts the datasets whose verdict is the sweep baseline's."
    )
    header = ["variant", "datasets", *st.GROUPS, "keep"]
    rows = [
        [f"**{r['variant']}**" if r["main"] else r["variant"], str(r["datasets"]),
         *(str(r[g]) for g in st.GROUPS), str(r["kept"])]
        for _, r in num.robust.iterrows()
    ]  # fmt: skip
    return [head, Block("p", text=text), Block("table", header=header, rows=rows)]


def _panels_section(num: Numbers) -> list[Block]:
    groups, p = num.panels["groups"], num.panels["fisher_p"]
    header = ["datasets", "count", *st.GROUPS, "median n", "median d"]
    rows = []
    for label, g in groups.items():
        shares = [f"{r['count']} ({_pct(r['share'])})" for _, r in g["counts"].iterrows()]
        rows.append([label, str(g["datasets"]), *shares, fmt(g["median_n"], 0),
                     fmt(g["median_d"], 0)])  # fmt: skip
    if p is None:
        test = "One group is empty: there is nothing to compare the paper's datasets with."
    else:
        test = (
            "Two regimes among the Figure 1 panels against the other datasets: Fisher's exact "
            f"test, two-sided, p = {fmt(p)}. A large p says the data cannot tell the groups "
            "apart, not that they are alike."
        )
    return [Block("h2", text="The Figure 1 panels against the rest"), Block("p", text=test),
            Block("table", header=header, rows=rows)]  # fmt: skip


def _dataset_section(table: pd.DataFrame) -> list[Block]:
    header = ["dataset", "panel", "n", "d", "m grid", "verdict", "m*", "NB err", "LR err",
              "majority", "minority share", "shape flags"]  # fmt: skip
    rows = []
    for _, r in table.iterrows():
        flags = [f"{who} {s}: {r[f'{k}_{s}']}" for k, who in (("nb", "NB"), ("lr", "LR"))
                 for s in st.SHAPES if r[f"{k}_{s}"]]  # fmt: skip
        m_star = r["m_cross_interp"] if not is_missing(r["m_cross_interp"]) else r["m_cross"]
        rows.append([
            r["name"], fmt_int(r["figure1_panel"]), fmt_int(r["n"]), fmt_int(r["d"]),
            f"{fmt_int(r['m_min'])}–{fmt_int(r['m_max'])}", str(r["verdict"]),
            fmt(m_star, 1) if not is_missing(m_star) else "none",
            fmt(r["nb_err_m_max"]), fmt(r["lr_err_m_max"]), fmt(r["majority_err_m_max"]),
            fmt(r["minority_share"]), "; ".join(flags),
        ])  # fmt: skip
    text = (
        "Errors at the largest m; the majority column is the baseline's error there (a dash "
        "where the run has no baseline rows); the minority share is the smaller class's share "
        "of the data's rows, the error of always guessing the larger one. Shape flags: where a "
        "curve rises (m→m) or bends the wrong way (m)."
    )
    return [Block("h2", text="Every dataset"), Block("p", text=text),
            Block("table", header=header, rows=rows)]  # fmt: skip


# --------------------------------------------------------------------------- figures


def plot_verdicts(counts: pd.DataFrame, stem: Path) -> list[Path]:
    """The verdict counts as bars, with their shares' Wilson intervals as error bars."""
    fig, ax = plt.subplots(figsize=(6, 3))
    y = np.arange(len(counts))[::-1]
    total = int(counts["of"].iloc[0])
    lo = (counts["share"].fillna(0) - counts["ci_low"].fillna(0)) * total
    hi = (counts["ci_high"].fillna(0) - counts["share"].fillna(0)) * total
    colours = [GROUP_COLOURS[g] for g in counts["label"]]
    ax.barh(y, counts["count"], color=colours, alpha=0.8)
    ax.errorbar(counts["count"], y, xerr=[lo, hi], fmt="none", ecolor="k", capsize=3, lw=1)
    ax.set_yticks(y, counts["label"], fontsize=8)
    ax.set_xlabel(f"datasets (of {total}); bars: 95% Wilson intervals", fontsize=9)
    ax.set_xlim(0, max(total, 1))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, stem)


def plot_crossovers(
    table: pd.DataFrame, cross: pd.DataFrame, fit: dict[str, Any], stem: Path
) -> list[Path]:
    """m* against d, log-log: each dataset with its m*'s interval (`cross`: the table's
    `st.crossovers`), the Figure 1 panels filled and named, the others hollow, and the OLS
    line of log m* on log d."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    m_star = cross.set_index("name")["m_star"].reindex(table["name"]).to_numpy()
    data = table.assign(m_star=m_star)
    data = data[data["m_star"].notna() & data["d"].notna() & (data["d"] > 0)]
    for figure1, marker in ((True, "o"), (False, "s")):
        part = data[data["is_figure1"] == figure1]
        if part.empty:
            continue
        d, m = part["d"].astype(float), part["m_star"].astype(float)
        lo = (m - part["m_cross_ci_low"].astype(float)).clip(lower=0).fillna(0)
        hi = (part["m_cross_ci_high"].astype(float) - m).clip(lower=0).fillna(0)
        ax.errorbar(d, m, yerr=[lo, hi], fmt="none", ecolor="0.6", lw=0.8, zorder=1)
        label = "Figure 1 panel" if figure1 else "other dataset"
        face = "tab:orange" if figure1 else "white"
        ax.scatter(d, m, marker=marker, s=28, facecolor=face, edgecolor="k", lw=0.7,
                   label=label, zorder=2)  # fmt: skip
        if figure1:
            for name, x, y in zip(part["name"], d, m, strict=True):
                ax.annotate(name, (x, y), xytext=(3, 3), textcoords="offset points", fontsize=6)
    if fit["slope"] is not None and len(data):
        xs = np.geomspace(data["d"].min(), data["d"].max(), 50)
        ys = math.exp(fit["intercept"]) * portable.power(xs, fit["slope"])
        label = f"OLS slope {fit['slope']:.2f} [{fit['ci_low']:.2f}, {fit['ci_high']:.2f}]"
        ax.plot(xs, ys, color="tab:blue", lw=1.2, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")  # 600, not 6 x 10^2
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(plain)
    ax.set_xlabel("d (logistic regression's columns, one-hot)")
    ax.set_ylabel("crossover m*")
    ax.grid(alpha=0.3, which="both")
    if len(data):
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no crossover with a known d", transform=ax.transAxes, ha="center")
    fig.tight_layout()
    return save_figure(fig, stem)


# --------------------------------------------------------------------------- the explorer page


def _curve(summary: pd.DataFrame, model: Any) -> dict[str, Any] | None:
    c = summary[summary["model"] == model]
    if c.empty:
        return None
    return dict(m=[int(x) for x in c["m"]], mean=[json_number(x) for x in c["mean"]])


def page_data(table: pd.DataFrame, study_runs: Sequence[st.StudyRun], num: Numbers) -> dict:
    """The page's JSON: one entry per dataset (study.csv's order) with its curves (naive
    Bayes, logistic regression, the majority baseline when it ran), and the fit of m* on d."""
    by_name = {str(r.row["name"]): r for r in study_runs}
    cross = num.cross.set_index("name")["m_star"]
    datasets = []
    for _, r in table.iterrows():
        run = by_name[r["name"]]
        gen, disc = run.row.get("gen_model"), run.row.get("disc_model")
        curves = {"nb": _curve(run.summary, gen), "lr": _curve(run.summary, disc),
                  "majority": _curve(run.summary, st.MAJORITY)}  # fmt: skip
        datasets.append(
            dict(
                name=r["name"], title=r["title"],
                panel=None if is_missing(r["figure1_panel"]) else int(r["figure1_panel"]),
                n=None if is_missing(r["n"]) else int(r["n"]),
                d=None if is_missing(r["d"]) else int(r["d"]),
                verdict=str(r["verdict"]), group=r["verdict_group"],
                m_star=json_number(cross.get(r["name"])),
                m_lo=json_number(r["m_cross_ci_low"]), m_hi=json_number(r["m_cross_ci_high"]),
                curves={k: v for k, v in curves.items() if v is not None},
            )
        )  # fmt: skip
    fit = num.slope_d
    lines = {k: STYLES[m] for k, m in (("nb", "naive_bayes"), ("lr", "logistic_regression"))}
    return dict(
        datasets=datasets,
        groups=list(st.GROUPS),
        group_colours=[TABLEAU[GROUP_COLOURS[g]] for g in st.GROUPS],
        colours={k: TABLEAU[s["color"]] for k, s in lines.items()},
        fit={
            k: json_number(fit[k]) if k != "n" else fit[k]
            for k in ("slope", "intercept", "ci_low", "ci_high", "n")
        },  # fmt: skip
    )


def build_page(data: dict[str, Any]) -> str:
    """The whole page: CSS, data (JSON) and script inline, as the panels' explorer is."""
    return inline_page("study-explorer", data, datasets=len(data["datasets"]))
