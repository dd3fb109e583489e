"""Reruns, resume and results read back (audit of area B): a folder's numbers are one run's.

Each test starts from a finished run of a small CSV written here (no UCI files), then does
what a user may do to its folder (kill a rerun, rerun a nested run) and checks that plot,
report, the explorer and the API either show that run's numbers or refuse in one line
naming the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import genvdis
from genvdis.cli import app
from genvdis.errors import UserError
from genvdis.store import results

CONFIG = """\
name: own
dataset: {path: data.csv, target: y}
target: {positive: [pos]}
sizes: [10, 30]
splits: 12
block_size: 3
seed: 2
"""


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """data.csv (3 continuous columns, one discrete, 120 rows) and own.yaml, as the cwd."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(120, 3)).round(3), columns=["a", "b", "c"])
    table["d"] = rng.choice(["u", "v", "w"], size=120)
    table["y"] = np.where(table["a"] + rng.normal(size=120) > 0, "pos", "neg")
    table.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "own.yaml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stderr


class _Killed(BaseException):
    """The process ends here (as kill -9 would, but in the test's process)."""


@pytest.mark.parametrize("killed_after", ["errors.csv", "summary.csv"])
def test_a_rerun_killed_in_its_commit_leaves_a_folder_plot_and_report_refuse(
    work, monkeypatch, killed_after
):
    """A finished run (seed 2), then a --seed 1 rerun killed just after renaming its new
    errors.csv (or summary.csv) into place: the folder holds seed 1's errors.csv beside seed 2's
    config.yaml. report used to analyse that mix with exit 0 (the manifest, which would have
    caught it, is removed first); now plot, report and the API refuse in one line naming the
    folder, and rerunning the command finishes it."""
    assert _cli("run", "own.yaml", "--out", "out", "-q") == (0, "")
    rename = os.replace

    def replace(source, target, *args, **kwargs):
        rename(source, target, *args, **kwargs)
        if Path(target).name == killed_after:
            raise _Killed

    with monkeypatch.context() as patch:
        patch.setattr(results.os, "replace", replace)
        with pytest.raises(_Killed):
            genvdis.run("own.yaml", seed=1, out="out")
    run_dir = work / "out" / "own"
    for command in ("report", "plot"):
        code, stderr = _cli(command, "out")
        message = stderr.strip()
        assert code == 2, message
        assert len(message.splitlines()) == 1 and message.startswith("error: out/own: "), message
        assert "stopped while writing its results" in message and "rerun" in message
    with pytest.raises(UserError, match="stopped while writing its results"):
        _ = genvdis.open_results(run_dir).errors
    assert _cli("run", "own.yaml", "--out", "out", "--seed", "1", "-q") == (0, "")
    assert not (run_dir / results.COMMITTING).exists()
    code, stderr = _cli("report", "out")
    assert code == 0, stderr
    assert genvdis.open_results(run_dir).config["seed"] == 1


def test_the_explorer_refuses_a_nested_runs_analysis_made_before_that_run_was_rerun(work):
    """out/examples/own analysed (`genvdis report out/examples`), then rerun with another seed:
    its differences.csv and out/examples/analysis.csv still describe the old seed. The
    explorer of out (written by `genvdis report out`, which analyses out's own runs only)
    used to draw the new curves beside the old differences and verdict, exit 0."""
    assert _cli("run", "own.yaml", "--out", "out", "-q") == (0, "")
    assert _cli("run", "own.yaml", "--out", "out/examples", "-q") == (0, "")
    assert _cli("report", "out/examples")[0] == 0
    assert _cli("report", "out")[0] == 0  # all analysed: nothing stale
    assert _cli("run", "own.yaml", "--out", "out/examples", "--seed", "7", "-q") == (0, "")
    code, stderr = _cli("report", "out")
    message = stderr.strip()
    assert code == 2 and len(message.splitlines()) == 1, message
    assert message.startswith("error: out/examples/own/differences.csv: not the analysis of")
    assert "genvdis report out/examples" in message
    assert _cli("report", "out/examples", "out")[0] == 0  # the way the Makefile does it


def test_the_explorer_refuses_a_variants_analysis_made_before_the_sweep_was_rerun(work):
    """A sweep analysed as a folder of its own (`genvdis report out/own/variants`), then swept
    again with another seed: the sweep rewrites each variant's differences.csv, but
    variants/analysis.csv keeps the old seed's verdicts, which the explorer of out showed
    beside the new curves."""
    sweep = ["sweep", "own.yaml", "--vary", "split=random", "--out", "out", "-q"]
    assert _cli(*sweep) == (0, "")
    assert _cli("run", "own.yaml", "--out", "out", "-q") == (0, "")
    assert _cli("report", "out/own/variants")[0] == 0
    assert _cli("report", "out")[0] == 0
    assert _cli(*sweep, "--seed", "5") == (0, "")
    code, stderr = _cli("report", "out")
    message = stderr.strip()
    assert code == 2 and len(message.splitlines()) == 1, message
    assert message.startswith("error: out/own/variants/analysis.csv: its row 'baseline' is not")
    assert _cli("report", "out/own/variants", "out")[0] == 0


def test_the_stability_table_refuses_rows_an_unfinished_later_sweep_has_outdated(work, monkeypatch):
    """A sweep (seed 2), then the same sweep with --seed 5 stopped after its baseline ran:
    variants/baseline holds seed 5's run while sensitivity.csv still holds seed 2's rows
    (written when a panel's sweep ends). The report's stability table used to show those rows
    with exit 0; now it names the row and the folder, and rerunning the sweep mends it."""
    from genvdis.experiment import engine

    sweep = ["sweep", "own.yaml", "--vary", "split=random", "--out", "out", "-q"]
    assert _cli(*sweep) == (0, "")
    assert _cli("run", "own.yaml", "--out", "out", "-q") == (0, "")
    run, started = engine.run_experiment, []

    def stopped_after_the_first(*args, **kwargs):
        if started:
            raise KeyboardInterrupt
        started.append(args)
        return run(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(engine, "run_experiment", stopped_after_the_first)
        assert _cli(*sweep, "--seed", "5")[0] == 130
    assert _cli("report", "out/own/variants")[0] == 0  # its analysis is not what is stale here
    code, stderr = _cli("report", "out")
    message = stderr.strip()
    assert code == 2 and len(message.splitlines()) == 1, message
    assert message.startswith("error: out/sensitivity.csv: panel 'own', variant 'baseline': ")
    assert "out/own/variants/baseline" in message and "rerun the panel's sweep" in message
    assert _cli(*sweep, "--seed", "5") == (0, "")
    code, stderr = _cli("report", "out/own/variants", "out")
    assert code == 0, stderr
    assert "Stability under the sweep's variants" in (work / "out" / "REPORT.md").read_text()
