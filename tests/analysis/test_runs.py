"""The analysis files of a results folder (runs.analyse_folders): read from each run's
errors.csv and config.yaml, written atomically beside them."""

from __future__ import annotations

import pandas as pd
import pytest

from genvdis.analysis import differences as an
from genvdis.analysis import runs
from tests.learningcurves import GRID, results_folder


@pytest.fixture
def results(tmp_path):
    return results_folder(tmp_path)


@pytest.mark.slow
def test_analyse_results_table_and_trace_files(results):
    t = runs.analyse_folders([results], n_boot=100)[0]
    assert list(t["name"]) == ["pima", "sonar", "extra_lda", "nb_only"]  # panel, then name
    v = dict(zip(t["name"], t["verdict"], strict=True))
    assert v == {
        "pima": an.TWO_REGIMES,
        "sonar": an.NB_BETTER,
        "extra_lda": an.LR_BETTER,
        "nb_only": an.NO_PAIR,
    }
    pima = t.set_index("name").loc["pima"]
    assert pima["m_cross"] == 20 and pima["m_min"] == 4 and pima["m_max"] == 200
    assert pima["naive_bayes_err_m_min"] == pytest.approx(0.2 + 0.3 / 4, abs=0.01)
    assert pima["diff_m_max_ci_high"] < 0 < pima["diff_m_min_ci_low"]
    assert t.set_index("name").loc["extra_lda", "gen_model"] == "lda"
    assert (results / "analysis.csv").exists()
    diffs = pd.read_csv(results / "pima" / "differences.csv")
    assert list(diffs["m"]) == GRID and set(diffs["significant"]) == {1, -1}
    assert not (results / "nb_only" / "differences.csv").exists()
