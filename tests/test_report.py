"""REPORT.md and REPORT.html for a results folder with known verdicts."""

from __future__ import annotations

import pytest
from learningcurves import results_folder

from genvdis import analysis as an
from genvdis.report import write_report


@pytest.fixture
def results(tmp_path):
    return results_folder(tmp_path)


def _table_rows(markdown: str, section: str) -> dict[str, dict[str, str]]:
    """The first table under `## section`, as {panel: {column: cell}}."""
    body = markdown.split(f"## {section}\n", 1)[1].lstrip("\n")
    lines = body.split("\n\n", 1)[0].splitlines()
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines]
    header, rows = cells[0], cells[2:]
    return {row[1]: dict(zip(header, row, strict=True)) for row in rows}


def test_write_report(results):
    (results / "figure1.png").write_bytes(b"\x89PNG fake")
    md, page = write_report(results, n_boot=100)
    text, html_text = md.read_text(), page.read_text()
    for s in ("pima", "sonar", "lda check", an.TWO_REGIMES, an.NB_BETTER, an.LR_BETTER):
        assert s in text and s in html_text
    assert "![Figure 1 reproduction](figure1.png)" in text
    assert "](pima/pima.png)" in text and 'src="sonar/sonar.png"' in html_text
    assert "Comparison with the paper" in text and "<table>" in html_text
    assert "Agree with two regimes: 1 pima" in text
    assert "analysis.md" in text
    pima = _table_rows(text, "All panels")["pima"]  # by column name, not by position
    assert (pima["#"], pima["n"], pima["m range"], pima["verdict"]) == (
        "1", "500", "4–200", an.TWO_REGIMES,
    )  # fmt: skip
    # deterministic: a second run gives identical files
    write_report(results, n_boot=100)
    assert md.read_text() == text and page.read_text() == html_text


def test_what_plot_and_report_write_beside_the_runs_is_reserved(results):
    """A run named like a file that plot or report writes at the top of its results folder
    (explorer.html, pairs.csv) passed validate and run, then broke every later report there:
    the reserved names are the writers' own (resultnames), checked here against what they
    write, and the committed results/ hold no other top-level file."""
    from pathlib import Path

    from genvdis import config, resultnames
    from genvdis.plotting import plot_results

    plot_results(results)
    write_report(results, n_boot=20)
    runs = {path.parent.name for path in results.glob("*/errors.csv")}
    written = {path.name for path in results.iterdir()} - runs - {"not_a_panel"}
    assert written <= set(resultnames.TOP_LEVEL)  # pairs.csv: with several pairs in a panel
    assert len(written) == 6  # the reports, the explorer, analysis.csv, Figure 1 twice
    committed = Path(__file__).resolve().parents[1] / "results"
    for folder in (committed, committed / "examples"):
        assert {p.name for p in folder.iterdir() if p.is_file()} <= set(resultnames.TOP_LEVEL)
    assert set(config.RESULTS_FILES) == set(resultnames.TOP_LEVEL)
