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
