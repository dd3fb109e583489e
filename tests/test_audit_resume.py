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
from genvdis import results
from genvdis.cli import app
from genvdis.errors import UserError

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
