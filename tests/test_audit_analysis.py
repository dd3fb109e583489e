"""Audit of the statistics a user reads (summary.csv, analysis.csv, pairs.csv, the report, the
explorer's data), checked against direct computations on small runs and their edge cases."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from genvdis.analysis import differences as an
from genvdis.analysis import runs, shape
from genvdis.errors import UserError
from genvdis.report import explorer
from genvdis.report.markdown import write_reports
from genvdis.store import results

GRID = [10, 20, 40, 80, 160]


def _errors(curves: dict, n_splits: int, seed: int = 0) -> pd.DataFrame:
    """Per-split errors on 200 test rows around known curves, a difficulty shared by the
    models of a split."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in GRID:
        for split in range(n_splits):
            shared = rng.normal(0, 0.02)
            for model, f in curves.items():
                errors = int(np.clip(round(200 * (f(m) + shared + rng.normal(0, 0.01))), 0, 200))
                rows.append((model, m, split, 200, errors, errors / 200, False, 0))
    return pd.DataFrame(rows, columns=results.ERROR_COLUMNS)


def _run(root: Path, name: str, curves: dict, n_splits: int, **config) -> Path:
    """A run folder as `genvdis run` writes it (errors.csv, summary.csv, config.yaml,
    manifest.json)."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    models = list(curves)
    resolved = dict(name=name, title=name, splits=n_splits, sizes=GRID, n_rows=300,
                    models=[{"name": m} for m in models], **config)  # fmt: skip
    results.write_results(run_dir, _errors(curves, n_splits), resolved, models)
    return run_dir


# A NB curve, an LR curve crossing it near m = 30, and a step up: a real rise at m = 40.
NB_CURVE = lambda m: 0.2 + 0.3 / m  # noqa: E731
LR_CURVE = lambda m: 0.1 + 3 / m  # noqa: E731
RISING = lambda m: 0.3 + (0.05 if m >= 40 else 0.0)  # noqa: E731


# ----------------------------------------------------------------------- one split per m


def test_a_curve_of_one_split_per_m_has_no_significant_shape_finding(tmp_path):
    """With one split per m a curve's variance is unknown: no rise or bend can be tested,
    where one split was counted as zero variance and every step up came out significant
    (p = 0, "real" in the report)."""
    run = _run(tmp_path, "single", {an.NB: RISING, an.LR: LR_CURVE}, n_splits=1)
    table = runs.analyse_folders([tmp_path], n_boot=50)[0]
    shapes = pd.read_csv(run / "shape.csv")
    assert not shapes["significant"].any()
    assert shapes["p"].isna().all() and shapes["p_holm"].isna().all()
    row = table.iloc[0]
    assert (row[f"{an.NB}_rises"], row[f"{an.NB}_nonconvex"]) == ("", "")
    write_reports([tmp_path])[0]
    text = (tmp_path / "REPORT.md").read_text()
    assert "| real |" not in text and "p 0," not in text


def test_a_rise_with_many_splits_is_still_found_and_its_p_unchanged():
    """The fix for one split leaves the tests of curves with splits as they were."""
    curves = an.model_curves(_errors({an.NB: RISING}, n_splits=30))
    table = shape.shape_tests(curves)
    assert shape.flags(table, an.NB, shape.RISE) == "20→40"
    step = table[(table["m_from"] == 20) & (table["m_to"] == 40)].iloc[0]
    assert step["p"] < 1e-6 and step["significant"]


def test_holm_adjusts_over_the_tests_that_could_be_made():
    """A test without a p-value (no variance) is not one of the family Holm corrects for."""
    adj = shape.holm(np.array([0.01, math.nan, 0.02]))
    assert adj[[0, 2]] == pytest.approx([0.02, 0.02])
    assert math.isnan(adj[1])


def test_the_crossover_of_one_split_has_no_bootstrap_interval():
    """Resampling one split gives that split every time: the interval was the point itself
    ([261.4, 261.4] on pima) and no resample lacked a crossover, as if the crossover were
    exact. With one split the interval and frac_no_cross are missing; the crossover stays."""
    errors = _errors({an.NB: NB_CURVE, an.LR: LR_CURVE}, n_splits=1)
    cross = an.crossover(errors, n_boot=200)
    diffs = an.paired_differences(errors)
    d = diffs.set_index("m")["mean_diff"]
    assert d[GRID[0]] > 0 and d[GRID[-1]] < 0  # the curves cross on this split
    assert cross["m_cross"] is not None
    assert cross["ci_low"] is None and cross["ci_high"] is None
    assert cross["frac_no_cross"] is None


def test_the_crossover_of_two_splits_keeps_its_bootstrap():
    errors = _errors({an.NB: NB_CURVE, an.LR: LR_CURVE}, n_splits=2)
    cross = an.crossover(errors, n_boot=200)
    assert cross["n_boot"] == 200 and cross["frac_no_cross"] is not None


# ----------------------------------------------------------------------- the explorer's data


def _page_data(results_dir: Path) -> dict:
    html = (results_dir / explorer.PAGE).read_text(encoding="utf-8")
    found = re.search(r'<script id="explorer-data" type="application/json">(.*?)</script>', html,
                      re.S)  # fmt: skip
    assert found
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_the_explorer_draws_the_first_pairs_differences_only(tmp_path):
    """differences.csv stacks every pair of a run with `compare:`; the explorer drew all its
    rows as one trace named after the first pair (m running 10..160 then 10..160 again, the
    second pair's differences shown as the first's)."""
    curves = {an.NB: NB_CURVE, an.LR: LR_CURVE, "lda": lambda m: 0.18 + 1 / m}
    compare = [[an.NB, an.LR], ["lda", an.LR]]
    run = _run(tmp_path, "three", curves, n_splits=20, compare=compare)
    write_reports([tmp_path])[0]
    data = _page_data(tmp_path)
    diff = data["panels"][0]["runs"][0]["diff"]
    stacked = pd.read_csv(run / "differences.csv")
    first = stacked[(stacked["a"] == an.LR) & (stacked["b"] == an.NB)]
    assert len(stacked) == 2 * len(GRID)
    assert (diff["a"], diff["b"]) == (an.LR, an.NB)
    assert diff["m"] == GRID
    assert diff["mean"] == pytest.approx(list(first["mean_diff"]), rel=1e-5)
    assert diff["lo"] == pytest.approx(list(first["ci_low"]), rel=1e-5)
    assert diff["n"] == list(first["n_splits"])


# ----------------------------------------------------------------------- the report's table


def test_the_all_panels_row_shows_the_errors_of_the_pair_it_compares(tmp_path):
    """A run whose first `compare:` pair is not (NB, LR): the row's crossover and verdict are
    that pair's (lda - NB here), but its "LR" columns showed logistic regression's errors, as
    if the crossover were LR's (committed results/examples: gnb-vs-svm shows LR's 0.368 and
    0.226 beside gnb's crossover 359.2, where LR's own is 75.8)."""
    curves = {an.NB: NB_CURVE, an.LR: LR_CURVE, "lda": lambda m: 0.15 + 1.5 / m}
    _run(tmp_path, "pair", curves, n_splits=20, compare=[[an.NB, "lda"], [an.NB, an.LR]])
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["disc_model"]) == (an.NB, "lda")
    text = (tmp_path / "REPORT.md").read_text()
    table = text.split("## All panels")[1].split("## Method")[0]
    cells = [c.strip() for c in table.strip().splitlines()[2].strip("|").split("|")]
    lr_at_min = f"{row[f'{an.LR}_err_m_min']:.3f}"
    lda_at_min = f"{row['lda_err_m_min']:.3f}"
    assert lr_at_min != lda_at_min
    assert lda_at_min in cells[5]  # "LR @ m_min": the pair's second model, lda


# ----------------------------------------------------------------------- verdict words


def test_a_verdict_on_a_pair_in_other_roles_names_the_better_model(tmp_path):
    """`compare: [[logistic_regression, naive_bayes]]` with logistic regression better at every
    m: analysis.csv keeps the verdict in the paper's roles ("NB" = the pair's first model, here
    LR), and the report and the explorer printed that as it is: "NB better throughout", beside
    a table saying "logistic_regression better" at every m. They now name the model."""
    curves = {an.NB: NB_CURVE, an.LR: lambda m: 0.15}
    _run(tmp_path, "reversed", curves, n_splits=20, compare=[[an.LR, an.NB]])
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["disc_model"], row["verdict"]) == (an.LR, an.NB, an.NB_BETTER)
    text = (tmp_path / "REPORT.md").read_text()
    assert an.NB_BETTER not in text and an.LR_BETTER not in text
    assert "Verdict: **logistic_regression better throughout**" in text
    table = text.split("## All panels")[1].split("## Method")[0]
    assert table.strip().splitlines()[2].endswith("| logistic_regression better throughout |")
    run = _page_data(tmp_path)["panels"][0]["runs"][0]
    assert run["verdict"] == "logistic_regression better throughout"


def test_the_paper_pairs_verdicts_keep_the_paper_words(tmp_path):
    _run(tmp_path, "paper", {an.NB: NB_CURVE, an.LR: lambda m: 0.15}, n_splits=20)
    write_reports([tmp_path])[0]
    assert "Verdict: **LR better throughout**" in (tmp_path / "REPORT.md").read_text()
    assert _page_data(tmp_path)["panels"][0]["runs"][0]["verdict"] == an.LR_BETTER


def test_an_lda_run_without_naive_bayes_is_not_called_nb_better(tmp_path):
    """models [lda, logistic_regression]: the pair is (lda, LR); its verdict is lda's."""
    _run(tmp_path, "lda", {"lda": NB_CURVE, an.LR: lambda m: 0.9}, n_splits=20)
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["verdict"]) == ("lda", an.NB_BETTER)
    text = (tmp_path / "REPORT.md").read_text()
    assert (
        "Verdict: **lda better throughout**" in text
        and an.NB_BETTER not in text.split("## Comparison with the paper")[0]
    )


# ----------------------------------------------------------------------- compare: edited later


@pytest.mark.parametrize(
    "compare, message",
    [
        ([[an.NB, "logistic_regresion"]], "compare: pair 1: 'logistic_regresion' is not in"),
        ([[an.NB, an.LR], [an.NB, "svm"]], "compare: pair 2: 'svm' is not in models"),
        ([[an.NB, an.LR], an.NB], "compare: pair 2 'naive_bayes' must name two different"),
        ([[an.NB, an.NB]], "compare: pair 1 ['naive_bayes', 'naive_bayes'] must name two"),
        ([[an.LR, an.NB], [an.LR, an.NB]], "compare: pair 2 ['logistic_regression', 'naive_"),
        ("naive_bayes", "compare: must be a list of pairs [first, second]"),
    ],
)
def test_a_compare_edited_into_config_yaml_is_checked_as_a_configs(tmp_path, compare, message):
    """config.yaml's `compare:` may be edited after a run (it changes no number of the run);
    an edited pair naming a model the run does not have was dropped without a word, so a
    run of naive Bayes and LR whose only pair had a typo got 'no generative/discriminative
    pair: verdict n/a', exit 0; a malformed one fell back to the default pairs. Now the
    report stops with the config's own message, naming the file."""
    run = _run(tmp_path, "edited", {an.NB: NB_CURVE, an.LR: LR_CURVE}, n_splits=5)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "compare": compare}))
    with pytest.raises(UserError) as raised:
        write_reports([tmp_path])[0]
    text = str(raised.value)
    assert text.startswith(f"{run / 'config.yaml'}: {message}")
    assert "\n" not in text and not (tmp_path / "analysis.csv").exists()


def test_a_valid_edited_compare_is_analysed(tmp_path):
    run = _run(tmp_path, "edited", {an.NB: NB_CURVE, an.LR: LR_CURVE}, n_splits=5)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "compare": [[an.LR, an.NB]]}))
    write_reports([tmp_path])[0]
    row = runs.read_analysis(tmp_path).iloc[0]
    assert (row["gen_model"], row["disc_model"]) == (an.LR, an.NB)
