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
