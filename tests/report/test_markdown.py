"""REPORT.md and REPORT.html for a results folder with known verdicts."""

from __future__ import annotations

import re

import pytest

from genvdis.analysis import differences as an
from genvdis.report import markdown as report
from genvdis.report.markdown import write_reports
from tests.conftest import REPO
from tests.learningcurves import CROSSING, make_errors, results_folder, write_panel


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


@pytest.mark.slow
def test_write_report(results):
    (results / "figure1.png").write_bytes(b"\x89PNG fake")
    md, page = write_reports([results], n_boot=100)[0]
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
    write_reports([results], n_boot=100)[0]
    assert md.read_text() == text and page.read_text() == html_text


def _opening(markdown: str) -> str:
    return markdown.split("\n\n")[1]


def test_the_report_calls_itself_a_reproduction_of_figure_1_only_for_its_panels(tmp_path):
    """A user's own run is the paper's protocol, not a panel of its Figure 1; and one panel is
    "1 panel" (issue 30)."""
    errors = make_errors(CROSSING, grid=[10, 20, 40, 80], n_splits=30)
    own = write_panel(tmp_path / "own", "mine", "my data", None, errors, [an.NB, an.LR]).parent
    text = write_reports([own], n_boot=50)[0][0].read_text()
    opening = _opening(text)
    assert opening.startswith("1 panel run with the protocol of Ng & Jordan (2001)")
    assert "Reproduction" not in text and "1 panels" not in text
    assert "Paper panels not in these results" not in text  # it claims none of them

    paper = write_panel(tmp_path / "paper", "pima", "pima", 1, errors, [an.NB, an.LR]).parent
    text = write_reports([paper], n_boot=50)[0][0].read_text()
    assert _opening(text).startswith("Reproduction of Ng & Jordan (2001), Figure 1: 1 panel.")
    assert "Paper panels not in these results: 2, 3," in text


@pytest.mark.slow
def test_a_folder_of_paper_panels_and_own_runs_says_which(results):
    opening = _opening(write_reports([results], n_boot=50)[0][0].read_text())
    assert opening.startswith("4 panels: 2 of Ng & Jordan (2001), Figure 1, reproduced, and 2 ")


@pytest.mark.slow
def test_the_docs_link_works_or_is_no_link(results, monkeypatch):
    """Beside a checkout's docs/ the report links docs/analysis.md by a path that resolves; an
    installed wheel has no docs/, and its report names the file without a dead link."""
    text = write_reports([results], n_boot=50)[0][0].read_text()
    (target,) = re.findall(r"\[docs/analysis\.md\]\(([^)]+)\)", text)
    assert (results / target).resolve() == report.DOCS.resolve() and report.DOCS.is_file()

    monkeypatch.setattr(report, "DOCS", results / "site-packages" / "docs" / "analysis.md")
    md, page = write_reports([results], n_boot=50, reanalyse=False)[0]
    assert "docs/analysis.md" in md.read_text() and "analysis.md)" not in md.read_text()
    assert 'href="' not in page.read_text().split("Details and limits")[1].split("</p>")[0]


@pytest.mark.slow
def test_what_plot_and_report_write_beside_the_runs_is_reserved(results):
    """A run named like a file that plot or report writes at the top of its results folder
    (explorer.html, pairs.csv) passed validate and run, then broke every later report there:
    the reserved names are the writers' own (resultnames), checked here against what they
    write, and the committed results/ hold no other top-level file."""

    from genvdis.config import experiment as config
    from genvdis.config import resultnames
    from genvdis.report.plotting import plot_folders

    plot_folders([results])
    write_reports([results], n_boot=20)[0]
    runs = {path.parent.name for path in results.glob("*/errors.csv")}
    written = {path.name for path in results.iterdir()} - runs - {"not_a_panel"}
    assert written <= set(resultnames.TOP_LEVEL)  # pairs.csv: with several pairs in a panel
    assert len(written) == 6  # the reports, the explorer, analysis.csv, Figure 1 twice
    committed = REPO / "results"
    for folder in (committed, committed / "examples"):
        assert {p.name for p in folder.iterdir() if p.is_file()} <= set(resultnames.TOP_LEVEL)
    assert set(config.RESULTS_FILES) == set(resultnames.TOP_LEVEL)


# --- issue 30: second adversarial pass ----------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["javascript:alert(document.domain", "JavaScript:alert`1`", " data:text/html,<b>x</b>",
     "vbscript:x", "java\tscript:x"],
)  # fmt: skip
def test_a_title_in_link_form_never_makes_a_script_link(target):
    """A run's title (or any text of the config) written as a Markdown link to a script was a
    live `<a href="javascript:...">` in REPORT.html: only relative paths and web addresses
    become links; the rest stays text."""
    page = report.inline_html(f"Panel 1: [click me]({target})")
    assert "<a " not in page
    assert "click me" in page


@pytest.mark.parametrize(
    "target", ["../docs/analysis.md", "docs/analysis.md", "https://example.org/a", "#verdicts"]
)
def test_relative_and_web_links_are_still_links(target):
    assert report.inline_html(f"see [the docs]({target})") == (
        f'see <a href="{target}">the docs</a>'
    )


def test_a_title_with_line_breaks_stays_in_its_heading():
    """A title 'nice\\n\\n# Verdict: ...' made a heading of its own in REPORT.md (and a list
    item and a figure's caption ended early); its line breaks are spaces there."""
    title = "nice\n\n# Verdict: LR wins everywhere\n"
    blocks = [
        report.Block("h2", text=f"Panel 1: {title}"),
        report.Block("ul", rows=[[f"{title} naive_bayes: no fit"]]),
        report.Block("img", text=title, src="tiny/tiny.png"),
    ]
    lines = report.to_markdown(blocks).splitlines()
    assert [line for line in lines if line] == [
        "## Panel 1: nice # Verdict: LR wins everywhere ",
        "- nice # Verdict: LR wins everywhere naive_bayes: no fit",
        "![nice # Verdict: LR wins everywhere ](tiny/tiny.png)",
    ]
