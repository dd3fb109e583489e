"""`genvdis study`: many configs in one pool write, config by config, the bytes `genvdis run`
writes; a study stopped half-way keeps its finished configs and its checkpoints; a config that
does not check is refused before anything runs (or skipped, when asked)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

import genvdis
from genvdis.api import run_study
from genvdis.config import builtin
from genvdis.experiment import study
from genvdis.store import results
from tests.clichecks import raises_user_error

FILES = ("errors.csv", "summary.csv", "config.yaml", "manifest.json")
# three toy configs of different cost: 2 models, blocks of 3 splits
GRIDS = {
    "small": ("sizes: [12, 40]", "splits: 9", "block_size: 3", "seed: 1"),
    "middle": ("sizes: [12, 60, 100]", "splits: 12", "block_size: 3", "seed: 2"),
    "large": ("sizes: [20, 100, 200]", "splits: 18", "block_size: 3", "seed: 3"),
}


@pytest.fixture
def folder(tmp_path, toy_config, write_toy) -> Path:
    """A folder of the three toy configs (and toy.csv, which they read)."""
    configs = tmp_path / "configs"
    for name, grid in GRIDS.items():
        write_toy(
            configs, toy_config(*grid, replace={"name: toy": f"name: {name}"}), f"{name}.yaml"
        )
    return configs


def _files(out: Path, name: str) -> dict[str, bytes]:
    return {file: (out / name / file).read_bytes() for file in FILES}


@pytest.fixture
def reference(folder, tmp_path) -> Path:
    """Each config run alone by `genvdis.run`, at 6 splits."""
    out = tmp_path / "alone"
    for name in GRIDS:
        genvdis.run(folder / f"{name}.yaml", splits=6, out=out)
    return out


@pytest.mark.parametrize(
    "options",
    [{}, {"jobs": 2, "backend": "threading", "force": True}],
    ids=["in-process", "threads"],
)
def test_a_study_writes_what_run_writes(folder, reference, tmp_path, options):
    out = tmp_path / "study"
    done = run_study(folder, splits=6, out=out, **options)
    assert [r.path for r in done] == [out / name for name in sorted(GRIDS)]  # the folder's order
    for name in GRIDS:
        assert _files(out, name) == _files(reference, name)
        assert not (out / name / results.CHECKPOINTS).exists()


@pytest.mark.slow
def test_a_study_on_a_dask_cluster_writes_what_run_writes(folder, reference, tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "study"
    run_study(folder, splits=6, out=out, jobs=2, backend="dask")
    for name in GRIDS:
        assert _files(out, name) == _files(reference, name)


def test_the_longest_config_goes_first_and_each_is_written_when_done(
    folder, tmp_path, monkeypatch, caplog
):
    """The blocks go to the pool config by config, the most expensive first; a config's
    files are committed as soon as its last block is back, before the next config's blocks."""
    events: list[str] = []
    commit = study.engine.commit
    monkeypatch.setattr(study.engine, "commit", lambda run, store: events.append(run.config.name)
                        or commit(run, store))  # fmt: skip
    task = study.engine._tagged
    monkeypatch.setattr(
        study.engine, "_tagged", lambda i, *args: events.append(f"task {i}") or task(i, *args)
    )
    run_study(folder, splits=6, out=tmp_path / "study")
    names = sorted(GRIDS)  # the folder's order: large, middle, small
    blocks = {name: [f"task {names.index(name)}"] * n for name, n in
              {"large": 3 * 2, "middle": 3 * 2, "small": 2 * 2}.items()}  # fmt: skip
    assert events == [*blocks["large"], "large", *blocks["middle"], "middle", *blocks["small"],
                      "small"]  # fmt: skip


class Stop(Exception):
    """Stands for a kill: raised after some checkpoints are saved."""


def test_a_stopped_study_resumes_from_its_finished_configs_and_checkpoints(
    folder, reference, tmp_path, monkeypatch, caplog
):
    out = tmp_path / "study"
    save, saved = results.CheckpointStore.save, []

    def save_then_stop(self, m, start, frame):
        save(self, m, start, frame)
        saved.append(self.dir)
        if len(saved) == 6 + 2:  # large's 6 blocks, and 2 of middle's 6
            raise Stop

    with monkeypatch.context() as patch:
        patch.setattr(results.CheckpointStore, "save", save_then_stop)
        with pytest.raises(Stop):
            run_study(folder, splits=6, out=out)
    assert (out / "large" / results.MANIFEST).exists()  # committed before the stop
    assert len(list((out / "middle" / results.CHECKPOINTS).glob("*.csv"))) == 2
    assert not (out / "small").exists() or not (out / "small" / results.MANIFEST).exists()
    stamp = (out / "large" / results.MANIFEST).stat().st_mtime_ns

    with caplog.at_level(logging.INFO, logger="genvdis"):
        run_study(folder, splits=6, out=out)
    assert "large: up to date" in caplog.text
    assert "middle: resuming, 2 of 6 blocks already done" in caplog.text
    assert (out / "large" / results.MANIFEST).stat().st_mtime_ns == stamp  # not rewritten
    for name in GRIDS:
        assert _files(out, name) == _files(reference, name)


def test_a_bad_config_is_refused_before_anything_runs(folder, tmp_path):
    (folder / "zz-bad.yaml").write_text(
        (folder / "small.yaml").read_text().replace("name: small", "name: bad")
        .replace("{path: toy.csv", "{path: missing.csv")
    )  # fmt: skip
    out = tmp_path / "study"
    with raises_user_error("zz-bad.yaml", "missing.csv"):
        run_study(folder, splits=6, out=out)
    assert not out.exists() or not any(out.rglob("*"))  # the good configs did not run either


def test_an_m_grid_too_large_for_the_data_is_refused_up_front(folder, tmp_path):
    text = (folder / "small.yaml").read_text().replace("[12, 40]", "[12, 299]")
    (folder / "small.yaml").write_text(text)
    out = tmp_path / "study"
    with raises_user_error("small.yaml", "299"):
        run_study(folder, splits=6, out=out)
    assert not out.exists() or not any(out.rglob("*"))


def test_skip_invalid_leaves_the_bad_config_out_with_a_warning(folder, tmp_path, caplog):
    (folder / "small.yaml").write_text((folder / "small.yaml").read_text() + "colour: red\n")
    with caplog.at_level(logging.WARNING, logger="genvdis"):
        done = run_study(folder, splits=6, out=tmp_path / "study", skip_invalid=True)
    assert [r.path.name for r in done] == ["large", "middle"]
    assert "small.yaml" in caplog.text and "colour" in caplog.text and "skipped" in caplog.text


def test_a_theory_config_in_the_folder_is_refused_naming_it(folder, tmp_path):
    shutil.copyfile(builtin.folder() / "theory-binary.yaml", folder / "theory.yaml")
    with raises_user_error("theory.yaml", "genvdis theory"):
        run_study(folder, splits=6, out=tmp_path / "study")


def test_two_configs_of_one_name_are_refused(folder, tmp_path):
    shutil.copyfile(folder / "small.yaml", folder / "small-again.yaml")
    text = (folder / "small-again.yaml").read_text().replace("seed: 1", "seed: 9")
    (folder / "small-again.yaml").write_text(text)
    with raises_user_error("small.yaml", "small-again.yaml", "'small'"):
        run_study(folder, splits=6, out=tmp_path / "study")


def test_an_empty_folder_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with raises_user_error("empty", "no config"):
        run_study(tmp_path / "empty", out=tmp_path / "study")


def test_the_builtin_study_is_the_panels_and_configs_study(tmp_path):
    entries = study.builtin_entries(tmp_path)
    panels = [e for e in entries if e.out == tmp_path]
    assert sorted(Path(e.source).stem for e in panels) == sorted(
        c.name for c in builtin.builtin_configs() if c.kind == "panel"
    )
    assert len(panels) == 15
    own = sorted((builtin.folder() / study.STUDY).glob("*.yaml"))
    assert [Path(e.source) for e in entries if e.out == tmp_path / study.STUDY] == own


def test_panels_in_a_study_write_what_run_writes(mirror_env, tmp_path):
    for name in ("lenses", "voting"):
        genvdis.run(name, splits=5, out=tmp_path / "alone")
    run_study(["lenses", "voting"], splits=5, out=tmp_path / "study")
    for name in ("lenses", "voting"):
        assert _files(tmp_path / "study", name) == _files(tmp_path / "alone", name)


def test_a_study_batched_on_dask_writes_what_run_writes_and_one_checkpoint_a_block(
    folder, reference, tmp_path, monkeypatch
):
    """16 blocks on 2 workers: 2 blocks a dask task (`parallel.dask_batch`); each block is
    still saved on its own, as it comes back, and the bytes are the runs' alone."""
    distributed = pytest.importorskip("distributed")
    from genvdis._runtime import parallel

    saved: list[tuple[int, int]] = []
    save = results.CheckpointStore.save
    monkeypatch.setattr(
        results.CheckpointStore,
        "save",
        lambda self, m, start, block: saved.append((m, start)) or save(self, m, start, block),
    )
    sizes: list[int] = []
    batch = parallel.dask_batch
    monkeypatch.setattr(parallel, "dask_batch", lambda *a: sizes.append(batch(*a)) or sizes[-1])
    out = tmp_path / "study"
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:  # fmt: skip
        run_study(folder, splits=6, out=out, backend="dask", scheduler=cluster.scheduler_address)
    assert sizes == [2]
    assert len(saved) == 16  # (2 + 3 + 3 sizes) x 2 blocks of 3 splits, each saved once
    for name in GRIDS:
        assert _files(out, name) == _files(reference, name)
