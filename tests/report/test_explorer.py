"""The results explorer (results/explorer.html): what it collects from a results folder, that
the page is one deterministic, self-contained file, `genvdis report --serve`, and the page
itself driven in headless Chromium: on a results folder whose answers are known, and on the
committed results/ (15 panels, the examples with a third model and other separable rules).

The browser tests need Debian's chromium and the playwright package (dev extra); without them
they skip, unless GENVDIS_REQUIRE_BROWSER=1 (CI) turns the skip into a failure.
GENVDIS_CHROMIUM names another chromium binary (default: `chromium` on the PATH);
GENVDIS_SCREENSHOT=docs/explorer.png also copies the README's screenshot there.
"""

from __future__ import annotations

import errno
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from unittest.mock import Mock

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from genvdis.analysis import differences as an
from genvdis.analysis import runs
from genvdis.cli import app
from genvdis.report import explorer
from genvdis.report.markdown import write_reports
from genvdis.store import results
from tests.conftest import REPO
from tests.learningcurves import CROSS_LR, CROSS_NB, RUN_GRID, explorer_data, write_run

COMMITTED = REPO / "results"
GRID = [5, 10, 20, 40, 80, 160]
SONAR = dict(dataset="sonar", attributes="continuous", target={"positive": ["M"]})
LR_SAMPLE = {"name": an.LR, "separable": "sample", "C": 1.0}


# ------------------------------------------------------------------ a results folder, known


def _errors(curves: dict, n_splits: int = 40, seed: int = 0) -> pd.DataFrame:
    """Per-split errors on 200 test rows around known curves; LR's training sets are
    separable on every split for m < 20 and on none from 20 on."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in GRID:
        for split in range(n_splits):
            shared = rng.normal(0, 0.02)
            for model, f in curves.items():
                errors = int(np.clip(round(200 * (f(m) + shared + rng.normal(0, 0.01))), 0, 200))
                separable = model == an.LR and m < 20
                rows.append((model, m, split, 200, errors, errors / 200, separable, 3 * separable))
    return pd.DataFrame(rows, columns=results.ERROR_COLUMNS)


def _run(root: Path, folder: str, config: dict, curves: dict) -> Path:
    run_dir = root / folder
    run_dir.mkdir(parents=True)
    names = [m["name"] for m in config["models"]]
    resolved = dict(name=run_dir.name, splits=40, sizes=GRID, n_rows=208, **config)
    results.write_results(run_dir, _errors(curves), resolved, names)
    return run_dir


NB_CURVE = {an.NB: lambda m: 0.2 + 0.3 / m}
CROSSING = {**NB_CURVE, an.LR: lambda m: 0.1 + 2 / m}  # LR better from m = 17 on


@pytest.fixture(scope="module")
def known(tmp_path_factory) -> Path:
    """A paper panel with two variants (another separable rule; a third model), a run on other
    data without a pair, and a theory run that the explorer leaves out."""
    root = tmp_path_factory.mktemp("results")
    base = dict(title="toy", panel=8, models=[{"name": an.NB, "laplace": 1.0}, LR_SAMPLE], **SONAR)
    _run(root, "toy", base, CROSSING)
    ridge = {**base, "title": "toy: ridge", "panel": None}
    ridge["models"] = [base["models"][0], {**LR_SAMPLE, "separable": "ridge"}]
    _run(root, "examples/toy-ridge", ridge, {**NB_CURVE, an.LR: lambda m: 0.15 + 0.5 / m})
    three = {**base, "title": "toy: three", "panel": None}
    three["models"] = [base["models"][0], {"name": "lda", "epsilon": 1e-6}, LR_SAMPLE]
    _run(root, "examples/toy-three", three, {**CROSSING, "lda": lambda m: 0.18 + 1 / m})
    other = dict(title="votes", dataset="voting", attributes="discrete", target={}, models=[])
    other["models"] = [{"name": an.NB, "laplace": 1.0}]
    _run(root, "votes", other, NB_CURVE)
    synthetic = dict(title="n = 10", dataset={"synthetic": {"kind": "binary"}}, models=[LR_SAMPLE])
    _run(root, "theory-x/n10", synthetic, {an.LR: lambda m: 0.3})
    runs.analyse_folders([root], n_boot=50)
    runs.analyse_folders([root / "examples"], n_boot=50)
    return root


@pytest.mark.slow
def test_collect_groups_variants_under_their_paper_panel(known):
    data = explorer.collect(known)
    assert [p["id"] for p in data["panels"]] == ["toy", "votes"]  # no theory run
    toy = data["panels"][0]
    assert (toy["panel"], toy["title"], toy["n_rows"]) == (8, "toy", 208)
    runs = {r["id"]: r for r in toy["runs"]}
    assert list(runs) == ["toy", "examples/toy-ridge", "examples/toy-three"]  # base first
    assert runs["toy"]["settings"] == ""
    assert runs["examples/toy-ridge"]["settings"] == 'logistic_regression.separable: "ridge"'
    assert runs["examples/toy-three"]["settings"] == "+lda"
    assert [m["name"] for m in data["models"]] == [an.NB, an.LR, "lda"]
    assert data["models"][1] == dict(
        name=an.LR,
        label="logistic regression",
        color="#d62728",
        dash="7 4",
        short="LR",
        baseline=False,
    )


@pytest.mark.slow
def test_collect_reads_curves_differences_and_crossover_from_the_files(known):
    toy = explorer.collect(known)["panels"][0]["runs"][0]
    summary = pd.read_csv(known / "toy" / "summary.csv")
    lr = summary[summary["model"] == an.LR]
    curve = next(c for c in toy["curves"] if c["model"] == an.LR)
    assert curve["m"] == GRID and curve["n"] == [40] * len(GRID)
    assert curve["mean"] == pytest.approx(list(lr["mean"]), rel=1e-5)
    assert curve["lo"] == pytest.approx(list(lr["ci_low"]), rel=1e-5)
    assert curve["sep"] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert toy["separable"] == [5, 10]  # figure1's grey: LR mostly separable from 5 to 10
    diffs = pd.read_csv(known / "toy" / "differences.csv")
    assert toy["diff"]["m"] == GRID and (toy["diff"]["a"], toy["diff"]["b"]) == (an.LR, an.NB)
    assert toy["diff"]["hi"] == pytest.approx(list(diffs["ci_high"]), rel=1e-5)
    row = pd.read_csv(known / "analysis.csv").set_index("folder").loc["toy"]
    assert toy["verdict"] == row["verdict"] == an.TWO_REGIMES
    assert toy["crossover"]["m"] == pytest.approx(row["m_cross_interp"], rel=1e-5)
    assert 10 < toy["crossover"]["lo"] <= toy["crossover"]["m"] <= toy["crossover"]["hi"] < 40
    votes = explorer.collect(known)["panels"][1]["runs"][0]
    assert votes["diff"] is None and votes["crossover"] is None and votes["separable"] is None
    assert votes["verdict"] == an.NO_PAIR


@pytest.mark.slow
def test_the_page_is_one_deterministic_self_contained_file(known, tmp_path):
    first = explorer.write_explorer(known, tmp_path / "a.html").read_bytes()
    again = explorer.write_explorer(known, tmp_path / "b.html").read_bytes()
    assert first == again
    text = first.decode()
    for fetches in ("src=", '<link rel="stylesheet', "@import", "url(http", "fetch("):
        assert fetches not in text
    urls = set(re.findall(r"\w+://\w[\w.-]*[^\s\"'`)]*", text))
    assert urls == {"http://www.w3.org/2000/svg"}  # a namespace name, never fetched
    start = text.index('type="application/json">') + len('type="application/json">')
    data = json.loads(text[start : text.index("</script>", start)])
    assert data == json.loads(json.dumps(explorer.collect(known)))


SCRIPT = "</script><script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"


@pytest.fixture
def hostile(tmp_path) -> Path:
    """Titles that would be markup if the page ever treated them as HTML."""
    base = dict(panel=None, models=[{"name": an.NB}], **SONAR)
    _run(tmp_path, "evil", {**base, "title": SCRIPT}, NB_CURVE)
    _run(tmp_path, "examples/evil", {**base, "title": IMG}, {an.NB: lambda m: 0.4})
    return tmp_path


def test_a_title_cannot_close_the_script(hostile):
    text = explorer.write_explorer(hostile).read_text()
    assert text.count("</script>") == 2  # the data's and the code's own
    assert "<\\/script><script>alert(1)<\\/script>" in text


@pytest.fixture
def with_study(tmp_path) -> Path:
    """A results folder as `make all` and `genvdis study` leave it: a panel with a sweep's
    variant, an example, and the study's folder (its datasets, one with a variant)."""
    base = dict(title="toy", panel=8, models=[{"name": an.NB}, LR_SAMPLE], **SONAR)
    _run(tmp_path, "toy", base, CROSSING)
    _run(tmp_path, "toy/variants/split-random", {**base, "split": "random"}, CROSSING)
    _run(tmp_path, "examples/toy-nb", {**base, "panel": None, "models": [{"name": an.NB}]},
         NB_CURVE)  # fmt: skip
    votes = dict(title="votes", dataset="voting", attributes="discrete", target={}, panel=None)
    _run(tmp_path, "study/votes", {**votes, "models": [{"name": an.NB}]}, NB_CURVE)
    _run(tmp_path, "study/votes/variants/x", {**votes, "models": [{"name": an.NB}]}, NB_CURVE)
    _run(tmp_path, "study/toy", {**base, "panel": None}, CROSSING)  # a panel's data too
    return tmp_path


def _run_ids(data: dict) -> list[str]:
    return [r["id"] for p in data["panels"] for r in p["runs"]]


def test_a_study_folder_below_has_its_own_explorer_not_the_folder_above(with_study):
    """The panels' page shows its runs, their sweep variants and the examples; the study's
    folder, once its report is there (study.csv), is left to the study's own pages, whose
    explorer shows every run of the study with its variants."""
    everything = ["toy", "toy/variants/split-random", "examples/toy-nb", "study/toy",
                  "study/votes", "study/votes/variants/x"]  # fmt: skip
    assert sorted(_run_ids(explorer.collect(with_study))) == sorted(everything)
    (with_study / "study" / "study.csv").write_text("name\n", encoding="utf-8")
    shown = ["toy", "toy/variants/split-random", "examples/toy-nb"]
    assert _run_ids(explorer.collect(with_study)) == shown
    study = ["toy", "votes", "votes/variants/x"]
    assert sorted(_run_ids(explorer.collect(with_study / "study"))) == study


def test_a_study_folder_whose_report_is_still_to_come_can_be_set_apart(with_study):
    """`genvdis study` writes the folders' explorers before the study's report: it names the
    study's folder (`apart`), by any path to it."""
    shown = ["toy", "toy/variants/split-random", "examples/toy-nb"]
    apart = [with_study / "examples" / ".." / "study"]
    assert _run_ids(explorer.collect(with_study, apart)) == shown
    assert len(_run_ids(explorer.collect(with_study / "study", apart))) == 3  # its own page


@pytest.mark.slow
def test_report_writes_the_explorer_beside_the_report(known, tmp_path):
    folder = tmp_path / "r"
    shutil.copytree(known / "toy", folder / "toy")
    write_reports([folder], n_boot=20)[0]
    assert (folder / "explorer.html").read_bytes() == explorer.build_page(
        explorer.collect(folder)
    ).encode()


@pytest.mark.parametrize("inherited", ["default", "ignored"])
@pytest.mark.slow
def test_report_serve_over_loopback_until_ctrl_c(known, tmp_path, inherited):
    """Ctrl-C stops the server, also where the process started with SIGINT ignored (as a
    script's background job, or under a test runner started so, inherits it)."""
    folder = tmp_path / "r"
    shutil.copytree(known / "toy", folder / "toy")
    command = [sys.executable, "-m", "genvdis.cli", "report", str(folder), "--boot", "20"]
    handler = signal.SIG_IGN if inherited == "ignored" else signal.SIG_DFL
    proc = subprocess.Popen(
        [*command, "--serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, handler),
    )  # fmt: skip
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[2].strip() == str(folder / "explorer.html")
        assert lines[3].startswith("serving http://127.0.0.1:"), lines
        url = lines[3].split()[1]
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert answer.read() == (folder / "explorer.html").read_bytes()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        watchdog.cancel()
        proc.kill()
    assert proc.returncode == 0, err
    assert out.strip() == "stopped" and "Traceback" not in err


IN_USE = "error: --port: {port} is in use on 127.0.0.1; choose another, or 0 for any free port"
PRIVILEGED = "error: --port: 80 needs privileges on 127.0.0.1; choose another, or 0 for any"


@pytest.mark.parametrize(
    "port, message",
    [
        (70000, "error: --port must be between 0 and 65535, not 70000"),
        (0, IN_USE),
        (80, PRIVILEGED),
    ],
)
@pytest.mark.slow
def test_a_bad_port_is_one_line_and_nothing_is_written(known, tmp_path, monkeypatch, port, message):
    folder = tmp_path / "r"
    shutil.copytree(known / "toy", folder / "toy")
    if port == 80:  # as a user who is not root
        denied = PermissionError(errno.EACCES, "Permission denied")
        monkeypatch.setattr(http.server, "ThreadingHTTPServer", Mock(side_effect=denied))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = port or taken.getsockname()[1]  # 0: the port this socket holds
        result = CliRunner().invoke(app, ["report", str(folder), "--serve", "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().startswith(message.format(port=port)), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (folder / "explorer.html").exists() and not (folder / "REPORT.md").exists()


# ------------------------------------------------------------------ in a real browser

CHROMIUM = os.environ.get("GENVDIS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    missing = [] if Path(CHROMIUM).is_file() else ["chromium: apt-get install -y chromium"]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("playwright: pip install -e '.[dev]'")
    if missing:
        why = "browser tests need " + "; ".join(missing)
        if os.environ.get("GENVDIS_REQUIRE_BROWSER") == "1":
            pytest.fail(why + " (GENVDIS_REQUIRE_BROWSER=1)")
        pytest.skip(why)
    with sync_playwright() as play:
        chromium = play.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


class Page:
    """A page of the browser that keeps every console error and uncaught exception."""

    def __init__(self, browser, url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=10_000)

    def figures(self) -> dict[str, dict]:
        """Per panel figure: its curve and difference traces as (run, model) -> points."""
        return self.page.evaluate(
            """() => Object.fromEntries([...document.querySelectorAll("section.figure")].map(
              f => [f.dataset.panel, Object.fromEntries(["curves", "diffs"].map(k => [k,
                Object.fromEntries([...f.querySelectorAll("svg." + k + " g.trace")].map(
                  g => [g.dataset.run + " " + g.dataset.model,
                        g.querySelectorAll("circle.pt").length]))]).concat([
                ["crosses", f.querySelectorAll("svg.curves line.cross").length],
                ["shaded", f.querySelectorAll("svg.curves rect.separable").length]]))]))"""
        )

    def x_of(self, figure: str, run: str, model: str) -> list[float]:
        sel = f"#fig-{figure} svg.curves g.trace[data-run='{run}'][data-model='{model}'] circle"
        return self.page.eval_on_selector_all(sel, "cs => cs.map(c => +c.getAttribute('cx'))")

    def hover_point(self, figure: str, run: str, model: str, index: int) -> str:
        sel = f"#fig-{figure} svg.curves g.trace[data-run='{run}'][data-model='{model}'] circle"
        box = self.page.locator(sel).nth(index).bounding_box()
        self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        return self.page.inner_text("#tooltip")


def expected_figure(results_dir: Path, runs: list[str]) -> dict:
    """What the files say a panel figure must show for `runs`: one trace per model with one
    point per row of summary.csv, one difference trace per differences.csv, crossover marks
    from analysis.csv, grey where logistic regression is mostly separable."""
    curves, diffs, crosses, shaded = {}, {}, 0, 0
    for run in runs:
        summary = pd.read_csv(results_dir / run / "summary.csv")
        curves |= {f"{run} {m}": int(n) for m, n in summary.groupby("model").size().items()}
        if (results_dir / run / "differences.csv").is_file():
            stacked = pd.read_csv(results_dir / run / "differences.csv")  # every pair's rows
            first = (stacked["a"] == stacked["a"].iloc[0]) & (stacked["b"] == stacked["b"].iloc[0])
            diffs[f"{run} difference"] = int(first.sum())  # the page draws the first pair
        run_dir = results_dir / run
        if (run_dir.parent / "analysis.csv").is_file():
            row = pd.read_csv(run_dir.parent / "analysis.csv").set_index("folder")
            crosses += int(run_dir.name in row.index and row["m_cross"].notna()[run_dir.name])
        lr = summary[summary["model"] == an.LR]
        shaded = shaded or int((lr["frac_separable"] > 0.5).any())
    return dict(curves=curves, diffs=diffs, crosses=crosses, shaded=shaded)


@pytest.mark.slow
def test_known_results_in_the_browser(browser, known):
    page = Page(browser, explorer.write_explorer(known).as_uri())
    assert page.figures() == {
        "toy": expected_figure(known, ["toy"]),
        "votes": expected_figure(known, ["votes"]),
    }
    assert page.figures()["toy"]["crosses"] == 1 and page.figures()["toy"]["shaded"] == 1
    # hovering a point shows its mean, interval, splits and fraction separable
    row = pd.read_csv(known / "toy" / "summary.csv").iloc[len(GRID) + 1]  # LR at m = 10
    tip = page.hover_point("toy", "toy", an.LR, 1)
    assert tip.splitlines() == [
        "logistic regression",
        f"m = 10: error {row['mean']:.4f}",
        f"95% interval [{row['ci_low']:.4f}, {row['ci_high']:.4f}]",
        "40 splits",
        "LR training sets separable: 100.0%",
    ]
    # log axis: each doubling of m is the same width; linear: proportional to m
    x = np.array(page.x_of("toy", "toy", an.NB))
    assert np.diff(x) == pytest.approx([np.diff(x)[0]] * 5)
    page.page.check("#x-linear")
    x = np.array(page.x_of("toy", "toy", an.NB))
    assert np.diff(x) / np.diff(GRID) == pytest.approx([(x[1] - x[0]) / 5] * 5)
    assert page.errors == []


@pytest.mark.slow
def test_variants_models_and_zoom_in_the_browser(browser, known):
    page = Page(browser, explorer.write_explorer(known).as_uri() + "#toy")
    assert list(page.figures()) == ["toy"]
    page.page.check("#run-examples\\/toy-three")
    page.page.check("#run-examples\\/toy-ridge")
    runs = ["toy", "examples/toy-ridge", "examples/toy-three"]
    shown = page.figures()["toy"]
    assert shown == expected_figure(known, runs)
    assert len(shown["curves"]) == 2 + 2 + 3 and shown["curves"]["examples/toy-three lda"] == 6
    page.page.uncheck("#model-lda")
    assert "examples/toy-three lda" not in page.figures()["toy"]["curves"]
    # drag across m = 10 .. 40: the zoomed plot spreads those points over the whole width
    before = page.x_of("toy", "toy", an.NB)
    box = page.page.locator("#fig-toy svg.curves").bounding_box()
    scale = box["width"] / 900
    page.page.mouse.move(box["x"] + before[1] * scale, box["y"] + 100)
    page.page.mouse.down()
    page.page.mouse.move(box["x"] + before[3] * scale, box["y"] + 100, steps=5)
    page.page.mouse.up()
    after = page.x_of("toy", "toy", an.NB)
    assert after[3] - after[1] > 2 * (before[3] - before[1])
    page.page.locator("#fig-toy svg.curves").dblclick()
    assert page.x_of("toy", "toy", an.NB) == pytest.approx(before)
    assert page.errors == []


@pytest.mark.slow
def test_committed_results_in_the_browser(browser, tmp_path):
    """All panels as small multiples, with every variant ticked, traces and points equal to the
    committed files; a model toggle removes its traces; a screenshot for the README."""
    page_file = explorer.write_explorer(COMMITTED, tmp_path / "explorer.html")
    page = Page(browser, page_file.as_uri())
    timing = page.page.evaluate("window.explorerRenderedAt")
    print(f"explorer: {len(page.figures())} panels drawn {timing:.0f} ms after navigation")
    panels = explorer.collect(COMMITTED)["panels"]
    assert len(panels) >= 15 and list(page.figures()) == [p["id"] for p in panels]
    variants = [r["id"] for p in panels for r in p["runs"][1:]]
    assert "examples/ionosphere-three-models" in variants
    # ticked as a click would (the input's change event), in one call rather than one
    # round trip per variant (ids hold / = , of sweep variants)
    page.page.evaluate(
        """(ids) => ids.forEach((id) => {
            const input = document.getElementById("run-" + id);
            input.checked = true;
            input.dispatchEvent(new Event("change"));
        })""",
        variants,
    )
    figures = page.figures()
    for p in panels:
        assert figures[p["id"]] == expected_figure(COMMITTED, [r["id"] for r in p["runs"]])
    three = figures["ionosphere"]["curves"]
    # its three models and the majority-class baseline every run carries
    assert sum(k.startswith("examples/ionosphere-three-models ") for k in three) == 4
    page.page.uncheck("#model-logistic_regression")
    after = page.figures()
    for p in panels:
        expected = {k: v for k, v in figures[p["id"]]["curves"].items() if not k.endswith(an.LR)}
        assert after[p["id"]]["curves"] == expected
    page.page.check("#model-logistic_regression")
    page.page.screenshot(path=tmp_path / "all-panels.png", full_page=True)
    single = Page(browser, page_file.as_uri() + "#ionosphere")
    single.page.set_viewport_size({"width": 1280, "height": 940})
    single.page.check("#run-examples\\/ionosphere-three-models")
    assert "LDA" in single.hover_point("ionosphere", "examples/ionosphere-three-models", "lda", 2)
    single.page.screenshot(path=tmp_path / "explorer.png", full_page=True)
    if os.environ.get("GENVDIS_SCREENSHOT"):
        shutil.copyfile(tmp_path / "explorer.png", os.environ["GENVDIS_SCREENSHOT"])
    assert page.errors == [] and single.errors == []


def test_titles_are_text_in_the_browser(browser, hostile):
    page = Page(browser, explorer.write_explorer(hostile).as_uri() + "#evil")
    dialogs = []
    page.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    assert page.page.inner_text("#fig-evil h2") == SCRIPT
    page.page.check("#run-examples\\/evil")
    assert page.hover_point("evil", "examples/evil", an.NB, 2).splitlines()[0] == (
        f"naive Bayes · {IMG}"
    )
    assert dialogs == [] and page.errors == []


# --- issue 30: second adversarial pass ----------------------------------------------------------


@pytest.mark.slow
def test_runs_of_two_files_of_one_name_are_two_panels(tmp_path):
    """Two configs in two folders, each `dataset: {path: data.csv}`, read two different
    files: they were one panel, the second shown as the first's run with "same settings"."""
    file = dict(dataset={"path": "data.csv", "target": "y"}, attributes="all",
                target={"positive": ["x"]}, models=[{"name": an.NB, "laplace": 1.0}])  # fmt: skip
    _run(tmp_path, "ra", {**file, "title": "a", "data_checksums": {"data.csv": "1" * 64}}, NB_CURVE)
    _run(tmp_path, "rb", {**file, "title": "b", "data_checksums": {"data.csv": "2" * 64}}, NB_CURVE)
    _run(tmp_path, "rc", {**file, "title": "c", "data_checksums": {"data.csv": "2" * 64}}, NB_CURVE)
    runs.analyse_folders([tmp_path], n_boot=50)
    panels = explorer.collect(tmp_path)["panels"]
    assert [[r["id"] for r in p["runs"]] for p in panels] == [["ra"], ["rb", "rc"]]


# --- a run comparing several pairs: the page draws the first pair's differences ---


def test_the_explorer_draws_the_first_pairs_differences_only(tmp_path):
    """differences.csv stacks every pair of a run with `compare:`; the explorer drew all its
    rows as one trace named after the first pair (m running 10..160 then 10..160 again, the
    second pair's differences shown as the first's)."""
    curves = {an.NB: CROSS_NB, an.LR: CROSS_LR, "lda": lambda m: 0.18 + 1 / m}
    compare = [[an.NB, an.LR], ["lda", an.LR]]
    run = write_run(tmp_path, "three", curves, n_splits=20, compare=compare)
    write_reports([tmp_path])[0]
    data = explorer_data(tmp_path)
    diff = data["panels"][0]["runs"][0]["diff"]
    stacked = pd.read_csv(run / "differences.csv")
    first = stacked[(stacked["a"] == an.LR) & (stacked["b"] == an.NB)]
    assert len(stacked) == 2 * len(RUN_GRID)
    assert (diff["a"], diff["b"]) == (an.LR, an.NB)
    assert diff["m"] == RUN_GRID
    assert diff["mean"] == pytest.approx(list(first["mean_diff"]), rel=1e-5)
    assert diff["lo"] == pytest.approx(list(first["ci_low"]), rel=1e-5)
    assert diff["n"] == list(first["n_splits"])


# --- the majority-class baseline: a thin line under the models', togglable ---


@pytest.fixture(scope="module")
def with_baseline(tmp_path_factory) -> Path:
    """A paper panel whose run scored the majority class beside its two models."""
    root = tmp_path_factory.mktemp("baseline")
    run_dir = root / "toy"
    run_dir.mkdir()
    config = dict(title="toy", panel=8, models=[{"name": an.NB}, {"name": an.LR}], **SONAR)
    resolved = dict(name="toy", splits=40, sizes=GRID, n_rows=208, **config)
    curves = {**CROSSING, an.MAJORITY: lambda m: 0.45}
    results.write_results(run_dir, _errors(curves), resolved, [an.NB, an.LR, an.MAJORITY])
    runs.analyse_folders([root], n_boot=50)
    return root


def test_the_baseline_is_on_the_page_as_a_baseline(with_baseline):
    data = explorer.collect(with_baseline)
    styles = {m["name"]: m for m in data["models"]}
    assert styles[an.MAJORITY] == dict(
        name=an.MAJORITY, label="majority class", short="Maj", color="#7f7f7f",
        dash="7 3 2 3", baseline=True,
    )  # fmt: skip
    assert not styles[an.NB]["baseline"] and not styles[an.LR]["baseline"]
    curves = {c["model"]: c for c in data["panels"][0]["runs"][0]["curves"]}
    assert curves[an.MAJORITY]["m"] == GRID and len(curves[an.MAJORITY]["mean"]) == len(GRID)


@pytest.mark.slow
def test_the_baseline_in_the_browser(browser, with_baseline):
    """Drawn first (under the models' curves), thinner, without a band; its points hover
    with their numbers; its toggle takes it off and puts it back."""
    page = Page(browser, explorer.write_explorer(with_baseline).as_uri() + "#toy")
    assert page.figures()["toy"] == expected_figure(with_baseline, ["toy"])
    traces = "#fig-toy svg.curves g.trace"
    drawn = page.page.eval_on_selector_all(
        traces,
        """gs => gs.map(g => [g.dataset.model, g.classList.contains("baseline"),
            g.querySelectorAll("path.band").length,
            parseFloat(getComputedStyle(g.querySelector("path.line")).strokeWidth)])""",
    )
    assert drawn[0][:3] == [an.MAJORITY, True, 0]
    assert [d[:3] for d in drawn[1:]] == [[an.NB, False, 1], [an.LR, False, 1]]
    assert drawn[0][3] < min(d[3] for d in drawn[1:])
    assert page.hover_point("toy", "toy", an.MAJORITY, 2).splitlines()[0] == "majority class"
    page.page.uncheck("#model-majority")
    assert "toy majority" not in page.figures()["toy"]["curves"]
    page.page.check("#model-majority")
    assert "toy majority" in page.figures()["toy"]["curves"]
    assert page.errors == []
