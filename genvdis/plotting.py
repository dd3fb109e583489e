"""Figures: error vs. m per run (naive Bayes solid, logistic regression dashed, as in the
paper), and the 15-panel Figure 1 grid. Everything is drawn from summary.csv alone.

Importing this module changes no matplotlib setting (a notebook keeps its backend and its
rcParams): the CLI selects the Agg backend itself, and the settings that make saved files
reproducible apply only while `save_figure` writes them.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from genvdis import results
from genvdis.runfiles import read_run_config, read_summary

STYLES = {
    "naive_bayes": {"linestyle": "-", "color": "tab:blue", "label": "naive Bayes"},
    "logistic_regression": {"linestyle": "--", "color": "tab:red", "label": "logistic regression"},
    "lda": {"linestyle": ":", "color": "tab:green", "label": "LDA (full covariance)"},
}
SAVE_STYLE = {"svg.hashsalt": "genvdis", "pdf.compression": 6}
METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None}}


def separable_span(summary: pd.DataFrame) -> list[int] | None:
    """The m range where most logistic-regression training sets are separable (the grey
    shading of every figure and of the explorer), from the first to the last such m."""
    lr = summary[summary["model"] == "logistic_regression"]
    mostly = lr[lr["frac_separable"] > 0.5]
    if mostly.empty:
        return None
    return [int(mostly["m"].min()), int(mostly["m"].max())]


def draw_panel(ax: plt.Axes, summary: pd.DataFrame, title: str, small: bool = False) -> None:
    """One learning-curve panel on `ax`, with 95% bands and the mostly-separable m shaded."""
    for model, curve in summary.groupby("model", sort=False):
        style = STYLES.get(model, {"linestyle": "-.", "label": model})
        ax.plot(curve["m"], curve["mean"], marker="" if small else ".", **style)
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
    """`stem`.png and .pdf, with no timestamps inside, so reruns give identical bytes."""
    paths = []
    with plt.rc_context(SAVE_STYLE):
        for ext in ("png", "pdf"):
            path = stem.with_suffix(f".{ext}")
            fig.savefig(path, dpi=150, bbox_inches="tight", metadata=METADATA[ext])
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


def plot_figure1(results_dir: Path, runs: list[Path]) -> list[Path]:
    """The paper's Figure 1: the 15 panels in its order, 3 x 5. Needs >= 1 numbered panel."""
    panels = {}
    for run in runs:
        config = read_run_config(run)
        if isinstance(config.get("panel"), int) and 1 <= config["panel"] <= 15:
            panels[int(config["panel"])] = (run, config)
    if not panels:
        return []
    fig, axes = plt.subplots(3, 5, figsize=(16, 9.5))
    for number, ax in enumerate(axes.ravel(), start=1):
        if number not in panels:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"panel {number}: not run", ha="center", transform=ax.transAxes)
            continue
        run, config = panels[number]
        draw_panel(ax, read_summary(run), config.get("title") or run.name, True)
    handles = [plt.Line2D([], [], **STYLES[m]) for m in ("naive_bayes", "logistic_regression")]
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return save_figure(fig, results_dir / "figure1")


def plot_results(results_dir: Path) -> list[Path]:
    """Every run's figure under `results_dir`, and Figure 1 if any paper panel is there."""
    runs = results.find_runs(results_dir)
    if not runs:
        from genvdis.errors import UserError

        raise UserError(f"no runs (folders with summary.csv) under {results_dir}")
    written = [path for run in runs for path in plot_run(run)]
    if runs != [results_dir]:
        written += plot_figure1(results_dir, runs)
    return written
