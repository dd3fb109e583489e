"""Figures: error vs. m per run (naive Bayes solid, logistic regression dashed, as in the
paper; every other model in a style of its own), and the 15-panel Figure 1 grid, drawn from
summary.csv alone; and the theory runs' m* vs n (`plot_theory`), drawn from their sample
complexity and fits.

Importing this module changes no matplotlib setting (a notebook keeps its backend and its
rcParams): the CLI selects the Agg backend itself, and the settings that make saved files
reproducible apply only while `save_figure` writes them.
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from genvdis.config import resultnames
from genvdis.errors import UserError
from genvdis.report.styles import BASELINE_WIDTH, BASELINES, SHORT, STYLES, separable_span
from genvdis.store import results
from genvdis.store.runfiles import read_run_config, read_summary

# Models without a style of their own (estimator entries), by their position among those:
# each a line style, colour and marker none of the others has (cycling after seven).
EXTRA_LINES = ["-.", (0, (5, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1)), "-", "--", ":"]
EXTRA_COLORS = ["tab:purple", "tab:orange", "tab:brown", "tab:pink", "tab:olive", "tab:cyan"]
EXTRA_COLORS += ["tab:gray"]
EXTRA_MARKERS = ["s", "^", "v", "D", "x", "P", "*"]
SAVE_STYLE = {"svg.hashsalt": "genvdis", "pdf.compression": 6}
METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None}}


def model_style(model: str, others: list[str]) -> dict:
    """A model's line: the built-in models' own (naive Bayes solid, logistic regression
    dashed, as in the paper), any other its own, by its position in `others`, labelled with
    its name in the config."""
    if model in STYLES:
        return STYLES[model]
    i = others.index(model)
    return {
        "linestyle": EXTRA_LINES[i % len(EXTRA_LINES)],
        "color": EXTRA_COLORS[i % len(EXTRA_COLORS)],
        "marker": EXTRA_MARKERS[i % len(EXTRA_MARKERS)],
        "label": model,
    }


def draw_panel(ax: plt.Axes, summary: pd.DataFrame, title: str, small: bool = False) -> None:
    """One learning-curve panel on `ax`, with 95% bands and the mostly-separable m shaded; a
    baseline (the majority class) as a thin line under the models' lines, without a band."""
    others = [m for m in summary["model"].unique() if m not in STYLES]
    for model, curve in summary.groupby("model", sort=False):
        style = model_style(model, others)
        if model in BASELINES:
            ax.plot(curve["m"], curve["mean"], linewidth=BASELINE_WIDTH, zorder=1.5, **style)
            continue
        marker = {"marker": "" if small else "."} if model in STYLES else {"markersize": 3}
        ax.plot(curve["m"], curve["mean"], **marker, **style)
        ax.fill_between(
            curve["m"], curve["ci_low"], curve["ci_high"], alpha=0.2, color=style.get("color")
        )
    span = separable_span(summary)
    if span:
        ax.axvspan(*span, color="0.9", zorder=0)
    ax.set_title(title, fontsize=8 if small else 11)
    ax.set_xlabel("m (training-set size)", fontsize=7 if small else 10)
    ax.set_ylabel("error", fontsize=7 if small else 10)
    ax.tick_params(labelsize=6 if small else 9)
    ax.grid(alpha=0.3)


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """`stem`.png and .pdf, with no timestamps inside, so reruns give identical bytes. Each is
    drawn in memory and written atomically: a plot stopped midway (Ctrl-C, a kill, a full disk)
    leaves the figure that was there, never a truncated one a report would link."""
    paths = []
    with plt.rc_context(SAVE_STYLE):
        for ext in resultnames.FIGURE_FORMATS:
            path = stem.with_suffix(f".{ext}")
            drawn = io.BytesIO()
            fig.savefig(drawn, format=ext, dpi=150, bbox_inches="tight", metadata=METADATA[ext])
            with results.writing(path.parent, path.name, results.AGAIN):
                results.atomic_write_bytes(path, drawn.getvalue(), durable=False)
            paths.append(path)
    plt.close(fig)
    return paths


def run_axes(summary: pd.DataFrame, config: dict, ax: plt.Axes | None = None) -> plt.Axes:
    """One run's learning curves with their legend, on `ax` or, when None, on a new figure
    with the caption that `genvdis plot` saves (`config`: the run's config.yaml)."""
    title = config.get("title") or config.get("name", "")
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 3.6))
    draw_panel(ax, summary, title)
    ax.legend(fontsize=8)
    if fig is not None:
        caption = f"{config.get('splits', '?')} random splits per m; bands: 95% intervals"
        if (summary["frac_separable"] > 0.5).any():
            caption += "; grey: most LR training sets separable"
        fig.text(0.5, -0.05, caption, ha="center", fontsize=7, color="0.3")
    return ax


def plot_run(run_dir: Path) -> list[Path]:
    """`<run>/<name>.png` and `.pdf` from `<run>/summary.csv`."""
    config = read_run_config(run_dir)
    name = config.get("name", run_dir.name)
    ax = run_axes(read_summary(run_dir), {"name": name, **config})
    return save_figure(ax.figure, run_dir / name)


def figure1_panels(runs: list[Path]) -> dict[int, tuple[Path, dict]]:
    """Figure 1's runs by panel number (1-15, from each run's config.yaml). Two runs of one
    panel are refused: the figure would show one of them and leave the other out unsaid."""
    panels: dict[int, tuple[Path, dict]] = {}
    for run in runs:
        config = read_run_config(run)
        number = config.get("panel")
        if not (isinstance(number, int) and 1 <= number <= 15):
            continue
        if number in panels:
            raise UserError(
                f"{panels[number][0]} and {run} are both panel {number} of Figure 1, which "
                "draws one run per panel; move one of them out of the folder (or rerun it "
                "without panel:)"
            )
        panels[number] = (run, config)
    return panels


def plot_figure1(results_dir: Path, runs: list[Path]) -> list[Path]:
    """The paper's Figure 1: the 15 panels in its order, 3 x 5. Needs >= 1 numbered panel."""
    panels = figure1_panels(runs)
    if not panels:
        return []
    fig, axes = plt.subplots(3, 5, figsize=(16, 9.5))
    drawn: set[str] = set()
    for number, ax in enumerate(axes.ravel(), start=1):
        if number not in panels:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"panel {number}: not run", ha="center", transform=ax.transAxes)
            continue
        run, config = panels[number]
        summary = read_summary(run)
        drawn.update(summary["model"])
        draw_panel(ax, summary, config.get("title") or run.name, True)
    handles = [plt.Line2D([], [], **STYLES[m]) for m in ("naive_bayes", "logistic_regression")]
    baselines = [m for m in BASELINES if m in drawn]  # runs made without it have no such line
    handles += [plt.Line2D([], [], linewidth=BASELINE_WIDTH, **STYLES[m]) for m in baselines]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return save_figure(fig, results_dir / resultnames.FIGURE1)


def plot_folders(folders: list[Path], jobs: int = 1) -> list[Path]:
    """Every run's figure under each folder, and its Figure 1 if any paper panel is there; each
    figure its own task, every folder's in one pool on up to `jobs` processes
    (`parallel.map_ordered`, one start-up). A figure named twice (a folder given twice, or a
    run and its folder) is drawn once. The paths come back in `folders`' order."""
    from genvdis._runtime import parallel

    tasks: dict[tuple[Path, bool], tuple[Path, list[Path] | None]] = {}
    for results_dir in map(Path, folders):
        runs = results.find_runs(results_dir)
        if not runs:
            raise UserError(f"no runs (folders with summary.csv) under {results_dir}")
        for run in runs:
            tasks.setdefault((run.resolve(), False), (run, None))
        if runs != [results_dir]:
            figure1_panels(runs)  # refused before anything is drawn
            tasks.setdefault((results_dir.resolve(), True), (results_dir, runs))
    todo = list(tasks.values())
    drawn = parallel.map_ordered(_draw, todo, jobs, cost=lambda t: 1 if t[1] is None else len(t[1]))
    return [path for paths in drawn for path in paths]


def _draw(task: tuple[Path, list[Path] | None]) -> list[Path]:
    """One task of `plot_folders`: a run's figure (runs None), or Figure 1 of `runs`."""
    target, runs = task
    return plot_run(target) if runs is None else plot_figure1(target, runs)


def plot_theory(
    table: pd.DataFrame, fits: pd.DataFrame, stem: Path, title: str, caption: str = ""
) -> list[Path]:
    """`genvdis theory`'s figure: m* vs n (log x), one panel per epsilon: naive Bayes solid,
    logistic regression dashed, 95% bootstrap bars, and both least-squares fits (log n dotted,
    n dash-dot) with R^2."""
    from genvdis.analysis.theory import FORMS

    epsilons = sorted(table["epsilon"].unique())
    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.4 * len(epsilons), 4.2), squeeze=False)
    ns = np.sort(table["n"].unique())
    grid = np.geomspace(ns.min(), ns.max(), 100)
    finite_high = np.where(np.isfinite(table["ci_high"]), table["ci_high"], np.nan)
    top = np.nanmax(np.concatenate([finite_high, table["m_star"].to_numpy(float)]))
    for ax, eps in zip(axes[0], epsilons, strict=True):
        for model, curve in table[table["epsilon"] == eps].groupby("model", sort=False):
            style = STYLES.get(model, {"linestyle": "-.", "label": model})
            star = curve["m_star"].to_numpy(float)
            high = np.where(np.isfinite(curve["ci_high"]), curve["ci_high"], top)
            yerr = np.vstack([star - curve["ci_low"], high - star])
            ax.errorbar(
                curve["n"], star, yerr=np.where(np.isfinite(yerr), yerr, 0), marker="o",
                capsize=3, **style,
            )  # fmt: skip
            chosen = fits[(fits["model"] == model) & (fits["epsilon"] == eps)]
            for form, line in (("log n", ":"), ("n", "-.")):
                row = chosen[chosen["form"] == form]
                if len(row) and np.isfinite(row["a"].iloc[0]):
                    a, b, r2 = row[["a", "b", "r2"]].iloc[0]
                    label = f"{SHORT.get(model, model)}: a + b·{form}, R² = {r2:.2f}"
                    ax.plot(
                        grid, a + b * FORMS[form](grid), linestyle=line, linewidth=1, alpha=0.8,
                        color=style.get("color"), label=label,
                    )  # fmt: skip
        _theory_axes(ax, ns, eps)
    fig.suptitle(title, fontsize=11)
    if caption:
        fig.text(0.5, 0.0, caption, ha="center", va="top", fontsize=7, color="0.3")
    fig.tight_layout()
    return save_figure(fig, stem)


def _theory_axes(ax: plt.Axes, ns: np.ndarray, eps: float) -> None:
    """One theory panel's axes: n on a log scale, labelled at the n that were run."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_xticks(ns)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("n (number of features)")
    ax.set_ylabel(f"m* (examples to get within {eps:g} of the asymptotic error)", fontsize=8)
    ax.set_title(f"ε = {eps:g}", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
