"""The planner's cut between runs that checkpoint their blocks and runs too short to resume."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.errors import UserError
from genvdis.experiment import planning
from genvdis.store import results


def test_runs_below_the_threshold_are_not_checkpointed(monkeypatch):
    monkeypatch.delenv(planning.CHECKPOINT_ENV, raising=False)
    below, at = planning.CHECKPOINT_FROM * 0.99, planning.CHECKPOINT_FROM
    assert not planning.checkpointed(below)
    assert planning.checkpointed(at) and planning.checkpointed(float("inf"))
    monkeypatch.setenv(planning.CHECKPOINT_ENV, "0")  # every run
    assert planning.checkpointed(0.0)
    monkeypatch.setenv(planning.CHECKPOINT_ENV, " 50 ")
    assert not planning.checkpointed(at)


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_threshold_is_one_line_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(planning.CHECKPOINT_ENV, value)
    with pytest.raises(UserError, match=f"^{planning.CHECKPOINT_ENV}="):
        planning.checkpointed(1.0)


def _run_seeing_checkpoints(tmp_path, monkeypatch, config, out) -> list[int]:
    """Run `config` into `out`; the checkpoint files on disk after each block is saved."""
    seen: list[int] = []
    save = results.CheckpointStore.save

    def spy(self, *args):
        save(self, *args)
        seen.append(len(list(self.dir.glob("m*.csv"))))

    monkeypatch.setattr(results.CheckpointStore, "save", spy)
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return seen


def test_a_short_run_writes_no_checkpoints_a_longer_one_does_with_the_same_bytes(
    tmp_path, monkeypatch, write_toy, toy_config
):
    """The toy run is estimated far below the threshold: no block reaches the disk. Above it
    (the threshold lowered), each block is a checkpoint; both commit the same files, and
    neither leaves .checkpoints/ behind."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]", "splits: 6",
                                                    "block_size: 2"))  # fmt: skip
    monkeypatch.delenv(planning.CHECKPOINT_ENV, raising=False)
    short = _run_seeing_checkpoints(tmp_path, monkeypatch, config, tmp_path / "short")
    assert short == [0] * 6  # 2 sizes x 3 blocks, none written
    monkeypatch.setattr(planning, "CHECKPOINT_FROM", 0.0)
    longer = _run_seeing_checkpoints(tmp_path, monkeypatch, config, tmp_path / "long")
    assert longer == [1, 2, 3, 4, 5, 6]
    for name in [*results.OUTPUTS, results.MANIFEST]:
        short_bytes = (tmp_path / "short" / "toy" / name).read_bytes()
        assert short_bytes == (tmp_path / "long" / "toy" / name).read_bytes(), name
    for folder in ("short", "long"):
        assert not (tmp_path / folder / "toy" / results.CHECKPOINTS).exists()


def test_a_short_run_ignores_and_clears_checkpoints_left_in_its_folder(
    tmp_path, monkeypatch, write_toy, toy_config
):
    """Checkpoints a longer run left (a kill) are neither trusted nor kept by a short run."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]", "splits: 4"))
    stale = tmp_path / "out" / "toy" / results.CHECKPOINTS
    stale.mkdir(parents=True)
    (stale / "fingerprint").write_text("0\n")
    monkeypatch.delenv(planning.CHECKPOINT_ENV, raising=False)
    assert _run_seeing_checkpoints(tmp_path, monkeypatch, config, tmp_path / "out") == [0, 0]
    assert not stale.exists()
    assert (tmp_path / "out" / "toy" / "summary.csv").is_file()


def test_a_bad_threshold_stops_the_command_with_one_line_and_exit_2(
    tmp_path, monkeypatch, write_toy, toy_config
):
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]", "splits: 2"))
    monkeypatch.setenv(planning.CHECKPOINT_ENV, "soon")
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {config}: {planning.CHECKPOINT_ENV}='soon': give CPU seconds, a number >= 0\n"
    )
    assert not (tmp_path / "out" / "toy" / "errors.csv").exists()
