"""Kill a run at any moment, rerun the same command, get the bytes of an uninterrupted run.

The killed run is a real `genvdis run` process (the CLI's own entry point; it only also says
so on stdout after each checkpoint it saves, so that the test can wait for the blocks it wants)
stopped with SIGKILL (no cleanup code runs) while it works on the next block. What it
leaves must be complete checkpoints only; the rerun must finish from them to CSVs identical to
a clean run's; a changed seed or changed data must throw old checkpoints away, saying so; and
rerunning a finished run must change nothing. A rerun killed in its commit, or made after a
folder was analysed, leaves files that plot, report and the explorer refuse rather than mix.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import genvdis
from genvdis.cli import app
from genvdis.errors import UserError
from genvdis.store import lock as runlock
from genvdis.store import results

# toy.csv, 3 sizes x 20 blocks of 3 splits: a few seconds. At m = 12 every training set is
# separable (14 columns), so resumed blocks must also replay the sampler.
GRID = ("sizes: [12, 100, 200]", "splits: 60", "block_size: 3", "seed: 5")
N_BLOCKS = 3 * 20
KILL_AFTER = 8  # blocks
FILES = ("errors.csv", "summary.csv", "config.yaml", "manifest.json")
SAVED = "checkpoint saved"
# `genvdis run ...` that prints SAVED after each checkpoint it saves
ANNOUNCING = f"""\
from genvdis.store import results
from genvdis.cli import app

save = results.CheckpointStore.save


def save_and_say(self, *args):
    save(self, *args)
    print({SAVED!r}, flush=True)


results.CheckpointStore.save = save_and_say
app(prog_name="genvdis")
"""


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stderr


def _command(config: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "genvdis.cli", "run", str(config), "--out", str(out), *extra]


def _run_process(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {f: (run_dir / f).read_bytes() for f in FILES}


def _kill_after_blocks(args: list[str], n_blocks: int) -> None:
    """Run `genvdis <args>`, and SIGKILL it as soon as it has saved n_blocks checkpoints."""
    process = subprocess.Popen(
        [sys.executable, "-c", ANNOUNCING, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        saved = 0
        while saved < n_blocks and (line := process.stdout.readline()):  # waits for the run
            saved += line.strip() == SAVED
        assert saved == n_blocks and process.poll() is None, "the run ended before the kill"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, toy_config, write_toy):
    """A clean run, and a run SIGKILLed half-way (a pristine copy of it is kept too)."""
    root = tmp_path_factory.mktemp("resume")
    config = write_toy(root, toy_config(*GRID), "toy.yaml")
    done = _run_process(_command(config, root / "clean", "-q"))
    assert done.returncode == 0, done.stderr

    _kill_after_blocks(
        ["run", str(config), "--out", str(root / "killed"), "--jobs", "1"], KILL_AFTER
    )
    shutil.copytree(root / "killed", root / "killed-copy")
    return root, config


@pytest.mark.slow
def test_a_killed_run_leaves_only_complete_checkpoints(runs):
    root, _ = runs
    run_dir = root / "killed-copy" / "toy"
    reference = pd.read_csv(root / "clean" / "toy" / "errors.csv")
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    done = [p for p in files if p.parent.name == results.CHECKPOINTS and p.suffix == ".csv"]
    in_flight = [p for p in files if p.name.startswith(".") and p.suffix == ".tmp"]
    # nothing but the fingerprint, finished blocks, the lock file the kill left unlocked and
    # (at most) one invisible temporary file
    assert set(files) - set(done) - set(in_flight) == {
        run_dir / results.CHECKPOINTS / "fingerprint",
        run_dir / runlock.LOCK,
    }
    assert len(in_flight) <= 1
    assert KILL_AFTER <= len(done) < N_BLOCKS  # killed half-way, as intended
    for path in done:  # each block is whole, and holds exactly the clean run's numbers
        block = pd.read_csv(path)
        assert list(block.columns) == results.ERROR_COLUMNS
        assert len(block) == 3 * 3  # (2 models + the majority class) x block_size splits
        expected = block[["model", "m", "split"]].merge(reference, on=["model", "m", "split"])
        pd.testing.assert_frame_equal(
            block.sort_values(["model", "split"]).reset_index(drop=True),
            expected.sort_values(["model", "split"]).reset_index(drop=True),
        )


@pytest.mark.slow
def test_rerunning_the_same_command_finishes_with_identical_bytes(runs):
    root, config = runs
    run_dir = root / "killed" / "toy"
    # as if the kill had also interrupted the final write of errors.csv
    (run_dir / ".errors.csv.x1y2z3.tmp").write_text("model,m,split\nnaive_bayes,12")
    resumed = _run_process(_command(config, root / "killed", "--jobs", "1"))
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    assert _snapshot(run_dir) == _snapshot(root / "clean" / "toy")
    # no checkpoint folder and no stray temporary file left behind
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(FILES)


@pytest.mark.slow
def test_rerunning_a_finished_run_changes_nothing(runs):
    root, config = runs
    run_dir = root / "clean" / "toy"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in run_dir.iterdir()}
    code, stderr = _cli(["run", str(config), "--out", str(root / "clean")])
    assert code == 0, stderr
    assert "up to date" in stderr
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in run_dir.iterdir()}
    assert after == before


@pytest.mark.slow
def test_a_changed_seed_discards_old_checkpoints_and_says_so(runs):
    root, config = runs
    leftovers = root / "seed7"
    shutil.copytree(root / "killed-copy", leftovers)
    code, stderr = _cli(["run", str(config), "--seed", "7", "--out", str(leftovers)])
    assert code == 0, stderr
    assert "discarding" in stderr and "checkpoint" in stderr
    code, stderr = _cli(["run", str(config), "--seed", "7", "--out", str(root / "seed7-clean")])
    assert code == 0 and "discarding" not in stderr
    assert _snapshot(leftovers / "toy") == _snapshot(root / "seed7-clean" / "toy")
    assert _snapshot(leftovers / "toy") != _snapshot(root / "clean" / "toy")


def _interrupt_after(monkeypatch, n_blocks: int) -> None:
    """Make the run stop with Ctrl-C once n_blocks checkpoints are saved."""
    save, saved = results.CheckpointStore.save, []

    def save_then_stop(self, m, start, frame):
        save(self, m, start, frame)
        saved.append(start)
        if len(saved) == n_blocks:
            raise KeyboardInterrupt

    monkeypatch.setattr(results.CheckpointStore, "save", save_then_stop)


def test_changed_data_discards_checkpoints_of_the_old_data(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(80, 3)).round(3), columns=["a", "b", "c"])
    table["y"] = np.where(table["a"] + rng.normal(size=80) > 0, "pos", "neg")
    data = tmp_path / "data.csv"
    table.to_csv(data, index=False)
    config = tmp_path / "own.yaml"
    config.write_text(
        "name: own\ndataset: {path: data.csv, target: y}\ntarget: {positive: [pos]}\n"
        "sizes: [10, 20]\nsplits: 6\nblock_size: 2\n"
    )
    with monkeypatch.context() as patch:
        _interrupt_after(patch, 2)
        code, stderr = _cli(["run", str(config), "--out", str(tmp_path / "out")])
    assert code == 130  # Ctrl-C: one line, finished blocks kept
    assert stderr.strip().splitlines()[-1].startswith("interrupted")
    assert len(list((tmp_path / "out" / "own" / results.CHECKPOINTS).glob("m*.csv"))) == 2

    table.loc[0, "a"] += 1.0  # the data changes under the checkpoints
    table.to_csv(data, index=False)
    code, stderr = _cli(["run", str(config), "--out", str(tmp_path / "out")])
    assert code == 0, stderr
    assert "discarding 2 checkpoint(s)" in stderr
    code, _ = _cli(["run", str(config), "--out", str(tmp_path / "clean")])
    assert code == 0
    assert _snapshot(tmp_path / "out" / "own") == _snapshot(tmp_path / "clean" / "own")


def test_an_unchanged_config_keeps_its_checkpoints(tmp_path, monkeypatch, toy_config, write_toy):
    """The control for the two tests above: same config, same data, nothing is discarded."""
    config = write_toy(tmp_path, toy_config(*GRID, replace={"splits: 60": "splits: 8"}))
    with monkeypatch.context() as patch:
        _interrupt_after(patch, 3)
        code, _ = _cli(["run", str(config), "--out", str(tmp_path / "out")])
    assert code == 130
    code, stderr = _cli(["run", str(config), "--out", str(tmp_path / "out")])
    assert code == 0, stderr
    assert "discarding" not in stderr and "resuming, 3 of 9 blocks already done" in stderr


# --- a rerun killed in its commit, or one made after an analysis: the readers refuse the folder ---


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


def _invoke(*args: str) -> tuple[int, str]:
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
    config.yaml, and no manifest (the commit removes it first, so it cannot catch the mix).
    plot, report and the API must refuse that mix in one line naming the folder, not analyse
    it, and rerunning the command finishes it."""
    assert _invoke("run", "own.yaml", "--out", "out", "-q") == (0, "")
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
        code, stderr = _invoke(command, "out")
        message = stderr.strip()
        assert code == 2, message
        assert len(message.splitlines()) == 1 and message.startswith("error: out/own: "), message
        assert "stopped while writing its results" in message and "rerun" in message
    with pytest.raises(UserError, match="stopped while writing its results"):
        _ = genvdis.open_results(run_dir).errors
    assert _invoke("run", "own.yaml", "--out", "out", "--seed", "1", "-q") == (0, "")
    assert not (run_dir / results.COMMITTING).exists()
    code, stderr = _invoke("report", "out")
    assert code == 0, stderr
    assert genvdis.open_results(run_dir).config["seed"] == 1


def test_the_explorer_refuses_a_nested_runs_analysis_made_before_that_run_was_rerun(work):
    """out/examples/own analysed (`genvdis report out/examples`), then rerun with another seed:
    its differences.csv and out/examples/analysis.csv still describe the old seed. The
    explorer of out (written by `genvdis report out`, which analyses out's own runs only)
    must refuse that analysis, not draw the new curves beside the old differences and
    verdict."""
    assert _invoke("run", "own.yaml", "--out", "out", "-q") == (0, "")
    assert _invoke("run", "own.yaml", "--out", "out/examples", "-q") == (0, "")
    assert _invoke("report", "out/examples")[0] == 0
    assert _invoke("report", "out")[0] == 0  # all analysed: nothing stale
    assert _invoke("run", "own.yaml", "--out", "out/examples", "--seed", "7", "-q") == (0, "")
    code, stderr = _invoke("report", "out")
    message = stderr.strip()
    assert code == 2 and len(message.splitlines()) == 1, message
    assert message.startswith("error: out/examples/own/differences.csv: not the analysis of")
    assert "genvdis report out/examples" in message
    assert _invoke("report", "out/examples", "out")[0] == 0  # the way the Makefile does it


def test_the_explorer_refuses_a_variants_analysis_made_before_the_sweep_was_rerun(work):
    """A sweep analysed as a folder of its own (`genvdis report out/own/variants`), then swept
    again with another seed: the sweep rewrites each variant's differences.csv, but
    variants/analysis.csv keeps the old seed's verdicts, which the explorer of out showed
    beside the new curves."""
    sweep = ["sweep", "own.yaml", "--vary", "split=random", "--out", "out", "-q"]
    assert _invoke(*sweep) == (0, "")
    assert _invoke("run", "own.yaml", "--out", "out", "-q") == (0, "")
    assert _invoke("report", "out/own/variants")[0] == 0
    assert _invoke("report", "out")[0] == 0
    assert _invoke(*sweep, "--seed", "5") == (0, "")
    code, stderr = _invoke("report", "out")
    message = stderr.strip()
    assert code == 2 and len(message.splitlines()) == 1, message
    assert message.startswith("error: out/own/variants/analysis.csv: its row 'baseline' is not")
    assert _invoke("report", "out/own/variants", "out")[0] == 0


def test_the_stability_table_refuses_rows_an_unfinished_later_sweep_has_outdated(work, monkeypatch):
    """A sweep (seed 2), then the same sweep with --seed 5 stopped after its baseline ran:
    variants/baseline holds seed 5's run while sensitivity.csv still holds seed 2's rows
    (written when a panel's sweep ends). The report's stability table must not show those
    rows: it names the row and the folder, and rerunning the sweep mends it."""
    from genvdis.experiment import engine

    sweep = ["sweep", "own.yaml", "--vary", "split=random", "--out", "out", "-q"]
    assert _invoke(*sweep) == (0, "")
    assert _invoke("run", "own.yaml", "--out", "out", "-q") == (0, "")
    run, started = engine.run_experiment, []

    def stopped_after_the_first(*args, **kwargs):
        if started:
            raise KeyboardInterrupt
        started.append(args)
        return run(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(engine, "run_experiment", stopped_after_the_first)
        assert _invoke(*sweep, "--seed", "5")[0] == 130
    assert _invoke("report", "out/own/variants")[0] == 0  # its analysis is not what is stale here
    code, stderr = _invoke("report", "out")
    message = stderr.strip()
    assert code == 2 and len(message.splitlines()) == 1, message
    assert message.startswith("error: out/sensitivity.csv: panel 'own', variant 'baseline': ")
    assert "out/own/variants/baseline" in message and "rerun the panel's sweep" in message
    assert _invoke(*sweep, "--seed", "5") == (0, "")
    code, stderr = _invoke("report", "out/own/variants", "out")
    assert code == 0, stderr
    assert "Stability under the sweep's variants" in (work / "out" / "REPORT.md").read_text()
