"""The report's blocks about curve shape, fitted families and dataset caveats
(genvdis/report/curves.py), on runs whose curves and targets are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from genvdis.analysis import differences as an
from genvdis.analysis import fits, runs
from genvdis.report.markdown import write_reports
from genvdis.store import results
from tests.learningcurves import CROSSING, make_errors, per_split, smooth, stepped


def _panel(root, name, dataset, errors):
    """A finished run's folder as `genvdis run` commits it (errors, summary, config.yaml and
    the manifest listing them): readers refuse a folder without its manifest."""
    d = root / name
    d.mkdir(parents=True)
    models = [{"name": x} for x in (an.NB, an.LR)]
    cfg = dict(name=name, title=name, panel=7, n_rows=345, dataset=dataset, models=models)
    if "trajectories" not in errors:
        errors = errors.assign(trajectories=0)
    results.write_results(d, errors, cfg, [an.NB, an.LR])
    return d


def test_report_flags_shapes_and_unidentifiable_asymptotes(tmp_path):
    errors = per_split(
        {an.NB: lambda m: 0.46 - 0.025 * np.log(m / 10), an.LR: stepped}, n_splits=300
    )
    _panel(tmp_path, "liver", "liver", errors)
    t = runs.analyse_folders([tmp_path], n_boot=20)[0].iloc[0]
    assert t[f"{an.NB}_asymptote_reason"] == "not identifiable: a at its lower bound 0"
    assert t[f"{an.LR}_asymptote_reason"] == ""
    assert t[f"{an.LR}_rises"] == "40→60" and t[f"{an.NB}_rises"] == ""
    assert t[f"{an.NB}_best_family"] in fits.FAMILIES
    saved = pd.read_csv(tmp_path / "analysis.csv", keep_default_na=False)
    assert saved.loc[0, f"{an.NB}_asymptote_reason"].startswith("not identifiable")
    fitted = pd.read_csv(tmp_path / "liver" / "fits.csv")
    assert len(fitted) == 6 and fitted.groupby("model")["best"].sum().tolist() == [1, 1]
    md, page = write_reports([tmp_path], n_boot=20)[0]
    text = md.read_text()
    assert "| 7 | liver | 345 | 10–600 |" in text
    assert "not identifiable: a at its lower bound 0" in text
    assert "## Curve shape" in text and "| logistic_regression | m = 40→60:" in text
    assert "| real |" in text
    assert "train/test selector, not a diagnosis" in text and "McDermott" in page.read_text()


def test_report_without_dataset_note_or_shape_findings(tmp_path):
    errors = per_split({an.NB: smooth, an.LR: lambda m: 0.1 + 0.9 * m**-0.5}, n_splits=100)
    _panel(tmp_path, "pima", "pima", errors)
    text = write_reports([tmp_path], n_boot=20)[0][0].read_text()
    assert "No curve rises or bends, even nominally." in text
    assert "McDermott" not in text


def test_short_grid_reports_no_fit_and_skips_held_out_selection(tmp_path):
    errors = per_split({an.NB: smooth, an.LR: smooth}, grid=np.array([10.0, 20, 40]), n_splits=50)
    _panel(tmp_path, "short", "short", errors)
    t = runs.analyse_folders([tmp_path], n_boot=10)[0].iloc[0]
    assert t[f"{an.NB}_asymptote_reason"] == "no fit: fewer than 4 points"
    assert t[f"{an.NB}_best_family"] == ""  # 3 points leave too few to hold 2 out
    text = write_reports([tmp_path], n_boot=10)[0][0].read_text()
    assert "no fit: fewer than 4 points" in text


# --- the liver dataset's note: only under the selector label it is about ---


def _report_of(tmp_path: Path, target: dict) -> str:
    """The report of a run on liver with this target (its errors made up)."""
    run = tmp_path / "liverk"
    run.mkdir()
    errors = make_errors(CROSSING, n_splits=30).assign(trajectories=0)
    config = dict(name="liverk", title="liver, three classes", n_rows=345, dataset="liver",
                  target=target, models=[{"name": an.NB}, {"name": an.LR}])  # fmt: skip
    results.write_results(run, errors, config, [an.NB, an.LR])  # as `genvdis run` leaves it
    return write_reports([tmp_path], n_boot=20)[0][0].read_text()


def test_the_liver_note_is_not_printed_for_another_label(tmp_path):
    """The report's liver note says the panel's class is the `selector` field and the majority
    class's error is 0.420: printed under a run whose target is drinks in three classes, it
    named the wrong label and a wrong baseline."""
    groups = [["0.0", "0.5", "1.0", "2.0"], ["3.0", "4.0", "5.0"], ["6.0", "8.0", "10.0"]]
    text = _report_of(tmp_path, {"column": "drinks", "classes": groups})
    assert "selector" not in text and "McDermott" not in text


def test_the_liver_note_stays_for_the_selector_label(tmp_path):
    text = _report_of(tmp_path, {"column": None, "classes": "all"})
    assert "train/test selector, not a diagnosis" in text
