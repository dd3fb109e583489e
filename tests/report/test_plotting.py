"""Figures (genvdis/report/plotting.py): the committed figures are byte for byte what the code
draws from their runs' summaries."""

from __future__ import annotations

import shutil

import matplotlib
import pytest

from genvdis.report import plotting
from tests.conftest import REPO

matplotlib.use("Agg")


@pytest.mark.parametrize("run", ["pima", "examples/ionosphere-three-models"])
def test_the_committed_figures_are_what_the_code_draws(tmp_path, run):
    """NB solid, LR dashed, LDA dotted: redrawn from their runs' summaries, the committed
    figures are byte-identical, so a change of style or of matplotlib's output shows here."""
    source = REPO / "results" / run
    folder = tmp_path / source.name
    folder.mkdir()
    for name in ("summary.csv", "config.yaml", "manifest.json"):
        shutil.copy(source / name, folder / name)
    for path in plotting.plot_run(folder):
        assert path.read_bytes() == (source / path.name).read_bytes(), path.name


def test_figure1_draws_the_majority_class_under_every_panel_and_in_its_legend(
    tmp_path, monkeypatch
):
    """Each panel's baseline: a thin grey line under the models' lines, no band; the legend
    names it "majority class"."""
    from tests.learningcurves import make_errors, write_panel

    curves = {
        "naive_bayes": lambda m: 0.2 + 0.3 / m,
        "logistic_regression": lambda m: 0.1 + 2 / m,
        "majority": lambda m: 0.4,
    }
    errors = make_errors(curves, grid=[10, 20, 40], n_splits=5)
    write_panel(tmp_path, "pima", "pima", 1, errors, list(curves))
    write_panel(tmp_path, "sonar", "sonar", 8, errors, list(curves))
    saved = []
    monkeypatch.setattr(plotting.plt, "close", saved.append)  # the figure, kept to look at
    plotting.plot_figure1(tmp_path, [tmp_path / "pima", tmp_path / "sonar"])
    monkeypatch.undo()
    (figure,) = saved
    labels = [t.get_text() for t in figure.legends[0].get_texts()]
    assert labels == ["naive Bayes", "logistic regression", "majority class"]
    panels = [ax for ax in figure.axes if ax.get_lines()]
    assert len(panels) == 2
    for ax in panels:
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        base = lines["majority class"]
        others = [lines["naive Bayes"], lines["logistic regression"]]
        assert base.get_color() == "tab:gray"
        assert base.get_linewidth() < min(ln.get_linewidth() for ln in others)
        assert base.get_zorder() < min(ln.get_zorder() for ln in others)
        assert len(ax.collections) == 2  # the models' bands: none for the baseline
    matplotlib.pyplot.close(figure)
