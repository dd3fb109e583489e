"""The study's report across datasets (genvdis/report/study.py): from run folders this test
writes (with and without the majority baseline's rows), study.csv's columns, the slope through
folders whose m* is c*d exactly, the same bytes twice, the sections that say what is absent,
`genvdis study-report`, and the study's explorer page in headless Chromium (the browser
fixture and its skips are the panels' explorer's, tests/report/test_explorer.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from genvdis.analysis import differences as an
from genvdis.analysis import runs
from genvdis.analysis import study as st
from genvdis.cli import app
from genvdis.config import resultnames
from genvdis.errors import UserError
from genvdis.report.study import write_study
from genvdis.store import results
from tests.report.test_explorer import browser  # noqa: F401  (the shared fixture)

GRID = [5, 10, 20, 40, 80, 160]
SPLITS = 30
# name: (panel, continuous, levels, class counts, NB curve, LR curve, majority error or None)
DATASETS = {
    "alpha": (1, 4, [], (300, 200), lambda m: 0.2 + 0.3 / m, lambda m: 0.1 + 2 / m, 0.4),
    "beta": (None, 0, [3, 3, 2, 4], (500, 100), lambda m: 0.15 + 0.2 / m, lambda m: 0.05 + 3 / m,
             None),
    "gamma": (None, 10, [5, 2], (250, 250), lambda m: 0.1, lambda m: 0.3, 0.5),
    "delta": (2, 2, [], (400, 300), lambda m: 0.35, lambda m: 0.2, None),
    "eps": (None, 30, [6], (90, 60), lambda m: 0.25 + 1 / m, lambda m: 0.08 + 6 / m, 0.4),
}  # fmt: skip
# two runs name registered UCI datasets: study.csv's K is the registry's class count
SOURCE = {"alpha": "yeast", "beta": "nursery"}
D = {"alpha": 4, "beta": 2 + 2 + 1 + 3, "gamma": 10 + 4 + 1, "delta": 2, "eps": 30 + 5}


def _errors(curves: dict, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in GRID:
        for split in range(SPLITS):
            shared = rng.normal(0, 0.01)
            for model, f in curves.items():
                noise = 0 if model == st.MAJORITY else shared + rng.normal(0, 0.005)
                errors = int(np.clip(round(200 * (f(m) + noise)), 0, 200))
                rows.append((model, m, split, 200, errors, errors / 200, False, 0))
    return pd.DataFrame(rows, columns=results.ERROR_COLUMNS)


def _write_run(root: Path, name: str, seed: int) -> Path:
    """One dataset's run as `genvdis run` leaves it (DATASETS says what it holds)."""
    panel, cont, levels, counts, nb, lr, majority = DATASETS[name]
    curves = {an.NB: nb, an.LR: lr}
    if majority is not None:
        curves[st.MAJORITY] = lambda m: majority
    resolved = dict(
        name=name, title=name.upper(), panel=panel, dataset=SOURCE.get(name, name),
        splits=SPLITS, sizes=GRID,
        n_rows=sum(counts), models=[{"name": m} for m in curves],
        preprocessing={"encoding": "drop_first"},
        class_counts={"negative": counts[0], "positive": counts[1]},
        features={"continuous": cont, "discrete": len(levels), "levels": levels},
    )  # fmt: skip
    (root / name).mkdir(parents=True)
    results.write_results(root / name, _errors(curves, seed), resolved, list(curves))
    return root / name


def _write_study_runs(root: Path, names: list[str]) -> Path:
    for seed, name in enumerate(names):
        _write_run(root, name, seed)
    runs.analyse_folders([root], n_boot=30)
    return root


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> Path:
    return _write_study_runs(tmp_path_factory.mktemp("study") / "runs", list(DATASETS))


@pytest.fixture
def folder(analysed, tmp_path) -> Path:
    """A copy of the analysed runs that a test may change."""
    return Path(shutil.copytree(analysed, tmp_path / "runs"))


def _set_analysis(folder: Path, **columns: dict) -> None:
    """Overwrite cells of analysis.csv (column: {run: value}), as an analysis that found them."""
    table = runs.read_analysis(folder)
    for column, values in columns.items():
        for name, value in values.items():
            table.loc[table["name"] == name, column] = value
    table.to_csv(folder / resultnames.ANALYSIS, index=False)


@pytest.mark.slow
def test_study_csv_has_a_row_per_dataset_with_d_k_and_the_baseline(analysed, tmp_path):
    write_study([analysed], tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / resultnames.STUDY_CSV, keep_default_na=False)
    assert table["name"].tolist() == sorted(DATASETS)
    assert table.columns.tolist() == st.COLUMNS
    row = table.set_index("name")
    assert row["d"].to_dict() == D
    # K: the label column's classes before the target was made binary, where the registry
    # knows them (yeast 10, nursery 5); blank for a source it does not hold
    assert row["K"].astype(str).to_dict() == dict(alpha="10", beta="5", gamma="", delta="",
                                                  eps="")  # fmt: skip
    assert row["is_figure1"].to_dict() == dict(alpha=True, beta=False, gamma=False, delta=True,
                                               eps=False)  # fmt: skip
    assert row.loc["gamma", "verdict"] == an.NB_BETTER
    assert row.loc["delta", "verdict"] == an.LR_BETTER
    assert row.loc["alpha", "verdict"] == an.TWO_REGIMES
    # the baseline's error at the largest m is summary.csv's majority mean there, or empty
    summary = pd.read_csv(analysed / "alpha" / "summary.csv")
    at_max = summary[(summary["model"] == st.MAJORITY) & (summary["m"] == max(GRID))]
    assert float(row.loc["alpha", "majority_err_m_max"]) == pytest.approx(at_max["mean"].iloc[0])
    assert (
        row.loc["beta", "majority_err_m_max"] == "" and row.loc["delta", "majority_err_m_max"] == ""
    )
    assert float(row.loc["beta", "minority_share"]) == pytest.approx(100 / 600)


@pytest.mark.slow
def test_the_slope_through_folders_whose_m_star_is_c_times_d_is_one(folder, tmp_path):
    unknown = {n: np.nan for n in D}
    _set_analysis(folder, m_cross_interp={name: 6.0 * d for name, d in D.items()},
                  m_cross_ci_low=unknown, m_cross_ci_high=unknown)  # fmt: skip
    table = st.study_table(st.read_runs([folder]))
    fit = st.slope_against(table, "d", n_boot=200)
    assert (fit["n"], fit["slope"]) == (5, pytest.approx(1, abs=1e-12))
    assert (fit["ci_low"], fit["ci_high"]) == pytest.approx((1, 1), abs=1e-9)
    write_study([folder], tmp_path / "out", n_boot=200)
    text = (tmp_path / "out" / resultnames.STUDY_MD).read_text()
    assert "on log d (d: the columns logistic regression sees" in text
    assert "1.00 (95% bootstrap interval [1.00, 1.00], 5 datasets)" in text
    assert "The interval holds 1 and not 0" in text


@pytest.mark.slow
def test_the_majority_verdict_is_counted_and_its_absence_said(folder, tmp_path):
    write_study([folder], tmp_path / "a")
    text = (tmp_path / "a" / resultnames.STUDY_MD).read_text()
    assert "The majority-class baseline ran on 3 of these datasets' runs" in text
    _set_analysis(folder, verdict={"gamma": st.NO_BETTER, "eps": an.MIXED})
    write_study([folder], tmp_path / "b")
    text = (tmp_path / "b" / resultnames.STUDY_MD).read_text()
    assert f"| {st.NO_BETTER} | 1 of 5 | 20% |" in text
    assert f"| {st.OTHER} | 1 of 5 | 20% |" in text
    assert "No sweep results (sensitivity.csv)" in text
    assert "Fisher's exact test, two-sided, p = " in text


@pytest.mark.slow
def test_no_baseline_rows_is_said_plainly(tmp_path):
    root = _write_study_runs(tmp_path / "runs", ["beta", "delta"])  # no majority rows
    write_study([root], tmp_path / "out")
    text = (tmp_path / "out" / resultnames.STUDY_MD).read_text()
    assert "No run here has the majority-class baseline's rows" in text
    assert "One group is empty" not in text  # delta is a panel, beta is not


@pytest.mark.slow
def test_the_same_folders_give_the_same_bytes(analysed, tmp_path):
    first = write_study([analysed], tmp_path / "one")
    second = write_study([analysed], tmp_path / "two")
    names = [p.name for p in first]
    assert names == [p.name for p in second]
    assert set(names) == {resultnames.STUDY_CSV, resultnames.STUDY_MD, resultnames.STUDY_HTML,
                          resultnames.STUDY_EXPLORER} | {
        f"{stem}.{ext}" for stem in (resultnames.STUDY_MSTAR, resultnames.STUDY_VERDICTS)
        for ext in resultnames.FIGURE_FORMATS}  # fmt: skip
    assert set(names) <= set(resultnames.TOP_LEVEL)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    page = (tmp_path / "one" / resultnames.STUDY_EXPLORER).read_text()
    assert "<script src" not in page and "http" not in page.split("<script")[0].lower()


@pytest.mark.slow
def test_a_sweep_is_counted_by_variant(folder, tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    rows = [
        dict(
            name=n,
            panel=None,
            variant=v,
            changed="",
            same_as="",
            not_run="",
            n_splits=5,
            verdict=an.TWO_REGIMES if v == "baseline" or n != "alpha" else an.MIXED,
            keeps_verdict=v == "baseline" or n != "alpha",
        )
        for n in ("alpha", "beta", "elsewhere")
        for v in ("baseline", "split=random")
    ]
    pd.DataFrame(rows, columns=sensitivity_columns()).to_csv(sweep / "sensitivity.csv", index=False)
    write_study([folder], tmp_path / "out", sweeps=[sweep])
    text = (tmp_path / "out" / resultnames.STUDY_MD).read_text()
    assert "| baseline | 2 | 2 | 0 | 0 | 0 | 0 | 2 |" in text
    assert "| **split=random** | 2 | 1 | 0 | 0 | 0 | 1 | 1 |" in text


def sensitivity_columns() -> list[str]:
    from genvdis.analysis.sensitivity import COLUMNS

    return COLUMNS


@pytest.mark.slow
def test_bad_input_is_one_line(folder, tmp_path):
    with pytest.raises(UserError, match="no analysis.csv; analyse it first"):
        write_study([tmp_path], tmp_path / "out")
    other = Path(shutil.copytree(folder, tmp_path / "again"))
    with pytest.raises(UserError, match="dataset 'alpha' is in both"):
        write_study([folder, other], tmp_path / "out")
    result = CliRunner().invoke(app, ["study-report", str(tmp_path / "nowhere"), "--out",
                                      str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "no analysis.csv" in result.output
    result = CliRunner().invoke(app, ["study-report", str(folder), "--out", str(tmp_path / "o"),
                                      "--boot", "5"])  # fmt: skip
    assert result.exit_code == 2 and "--boot must be from 10 to 10000, not 5" in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_study_report_command_writes_and_names_the_files(analysed, tmp_path):
    result = CliRunner().invoke(
        app, ["study-report", str(analysed), "--out", str(tmp_path / "out"), "--boot", "50"]
    )
    assert result.exit_code == 0, result.output
    assert [Path(line).name for line in result.output.splitlines()][-1] == "study-explorer.html"
    assert (tmp_path / "out" / "STUDY.html").read_text().startswith("<!DOCTYPE html>")


# ------------------------------------------------------------------ in a real browser


@pytest.mark.slow
def test_the_study_page_in_the_browser(browser, folder, tmp_path):  # noqa: F811
    _set_analysis(folder, m_cross_interp={"alpha": 17.0, "beta": 40.0, "eps": 90.0})
    write_study([folder], tmp_path / "out", n_boot=100)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "out" / resultnames.STUDY_EXPLORER).as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    study = pd.read_csv(tmp_path / "out" / resultnames.STUDY_CSV)

    def order() -> list[str]:
        return page.eval_on_selector_all("#grid .multiple", "ds => ds.map(d => d.dataset.name)")

    # one small multiple per dataset; NB, LR and the baseline where it ran
    assert order() == study["name"].tolist()
    lines = page.eval_on_selector_all(
        "#grid .multiple",
        "ds => ds.map(d => [...d.querySelectorAll('path')].map(p => p.dataset.model))",
    )
    with_majority = {n for n, v in DATASETS.items() if v[-1] is not None}
    assert lines == [["nb", "lr", "majority"] if n in with_majority else ["nb", "lr"]
                     for n in study["name"]]  # fmt: skip
    dashes = page.eval_on_selector_all(
        "#grid path[data-model]",
        "ps => ps.map(p => p.dataset.model + (p.getAttribute('stroke-dasharray') || ''))",
    )
    assert set(dashes) == {"nb", "lr5 3", "majority"}
    # sortable by d, n, crossover (missing last) and verdict
    page.select_option("#sort", "d")
    assert order() == study.sort_values(["d", "name"])["name"].tolist()
    page.check("#descending")
    assert order() == study.sort_values(["d", "name"], ascending=[False, True])["name"].tolist()
    page.uncheck("#descending")
    page.select_option("#sort", "n")
    assert order() == study.sort_values(["n", "name"])["name"].tolist()
    page.select_option("#sort", "m_star")
    assert order() == ["alpha", "beta", "eps", "delta", "gamma"]
    page.select_option("#sort", "verdict")
    rank = {g: i for i, g in enumerate(st.GROUPS)}
    by_verdict = study.assign(r=study["verdict_group"].map(rank)).sort_values(["r", "name"])
    assert order() == by_verdict["name"].tolist()
    # the crossover-vs-d plot: one point per crossover, a hover that names the dataset
    names = page.eval_on_selector_all("#scatter circle.pt", "cs => cs.map(c => c.dataset.name)")
    assert sorted(names) == ["alpha", "beta", "eps"]
    assert page.locator("#scatter path.fit").count() == 1
    box = page.locator("#scatter circle.pt[data-name='beta']").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = page.inner_text("#tooltip").splitlines()
    assert (
        tip[0] == "beta" and tip[1] == f"d = {D['beta']}, n = 600" and tip[2].startswith("m* = 40")
    )
    assert errors == []
    page.close()
