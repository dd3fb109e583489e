"""The built-in models' line styles and the separable-m span, shared by the figures
(genvdis.report.plotting) and the explorer page, without importing matplotlib: a report writes the
explorer but draws nothing, and matplotlib would be about a second of its start-up."""

from __future__ import annotations

import pandas as pd

from genvdis.models import registry

# each built-in model's line (its descriptor's `style`): matplotlib's keyword arguments
STYLES = {info.name: info.style.line() for info in registry.builtin_models()}
# its short label, in a difference's name ("NB - LR") and a fit's legend
SHORT = {info.name: info.style.short for info in registry.builtin_models()}
# the baselines (the majority class): a thin line drawn under the models' lines, no band
BASELINES = registry.family("baseline")
BASELINE_WIDTH = 1.0  # matplotlib's points; the explorer's CSS gives its line the same
# matplotlib's Tableau palette (matplotlib.colors.TABLEAU_COLORS), by the names used here and
# in the explorer; tests/report/test_explorer.py checks it against matplotlib's own.
TABLEAU = {
    "tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c",
    "tab:red": "#d62728", "tab:purple": "#9467bd", "tab:brown": "#8c564b",
    "tab:pink": "#e377c2", "tab:gray": "#7f7f7f", "tab:olive": "#bcbd22", "tab:cyan": "#17becf",
}  # fmt: skip


def separable_span(summary: pd.DataFrame) -> list[int] | None:
    """The m range where most logistic-regression training sets are separable (the grey
    shading of every figure and of the explorer), from the first to the last such m."""
    lr = summary[summary["model"] == "logistic_regression"]
    mostly = lr[lr["frac_separable"] > 0.5]
    if mostly.empty:
        return None
    return [int(mostly["m"].min()), int(mostly["m"].max())]
