"""report, plot and theory with --jobs: the work spread over processes, the same bytes written
as with one job."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from genvdis._runtime import parallel as pool
from genvdis.cli import app
from genvdis.config.theory import load_theory_config
from genvdis.errors import UserError
from genvdis.experiment import theory
from genvdis.report.markdown import write_reports
from genvdis.report.plotting import plot_folders
from tests.clichecks import raises_user_error
from tests.learningcurves import results_folder


def _square_or_refuse(x: int) -> tuple[int, int]:
    if x < 0:
        raise UserError(f"item {x}: negative")
    return x * x, os.getpid()


def _same_files(a: Path, b: Path) -> None:
    """Every file under `a` is under `b` with the same bytes, and the other way round."""
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert filecmp.cmp(a / rel, b / rel, shallow=False), rel


def test_map_ordered_keeps_the_items_order_whatever_the_cost():
    items = list(range(12))
    done = pool.map_ordered(_square_or_refuse, items, jobs=2, cost=lambda x: x % 5)
    assert [value for value, _ in done] == [x * x for x in items]
    assert os.getpid() not in {pid for _, pid in done}  # on workers, not here
    one = pool.map_ordered(_square_or_refuse, items, jobs=1)
    assert {pid for _, pid in one} == {os.getpid()}


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_where_forking_is_unsafe_the_work_stays_in_this_process(monkeypatch, platform):
    monkeypatch.setattr(pool.sys, "platform", platform)
    done = pool.map_ordered(_square_or_refuse, list(range(6)), jobs=2)
    assert [value for value, _ in done] == [x * x for x in range(6)]
    assert {pid for _, pid in done} == {os.getpid()}


def test_map_ordered_raises_a_workers_user_error():
    with raises_user_error("item -3"):
        pool.map_ordered(_square_or_refuse, [1, 2, -3, 4], jobs=2)


@pytest.mark.slow
def test_report_with_jobs_writes_the_same_bytes(tmp_path):
    one, two = results_folder(tmp_path / "one"), results_folder(tmp_path / "two")
    write_reports([one], n_boot=100, jobs=1)[0]
    write_reports([two], n_boot=100, jobs=2)[0]
    assert (two / "analysis.csv").is_file() and (two / "pima" / "fits.csv").is_file()
    _same_files(one, two)


def _with_summaries(root: Path) -> Path:
    """results_folder's runs with their summary.csv (as `genvdis run` writes it, listed in
    their manifest), as `genvdis plot` reads them."""
    return results_folder(root)


@pytest.mark.slow
def test_plot_with_jobs_draws_the_same_figures(tmp_path):
    one, two = _with_summaries(tmp_path / "one"), _with_summaries(tmp_path / "two")
    drawn = plot_folders([one], jobs=1)
    assert plot_folders([two], jobs=2) == [two / p.relative_to(one) for p in drawn]
    assert (two / "figure1.png").read_bytes()[:4] == b"\x89PNG"  # pima and sonar are panels
    _same_files(one, two)


def test_plot_and_report_reject_jobs_below_one(tmp_path):
    for command in ("plot", "report"):
        result = CliRunner().invoke(app, [command, str(tmp_path), "--jobs", "0"])
        assert result.exit_code == 2
        assert "--jobs must be >= 1" in result.output


@pytest.mark.slow
def test_theory_with_jobs_writes_the_same_bytes(tmp_path, monkeypatch):
    """Three small n: they run at once on two processes (one pool), yet every file, the
    figure included, is the one a single job writes."""
    config = dict(name="tiny", kind="gaussian", n=[3, 4, 5], effect=1.0, n_rows=5000,
                  m=[10, 30, 100], splits=4, epsilon=[0.03], boot=50)  # fmt: skip
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    pooled = []
    real = pool.map_ordered
    monkeypatch.setattr(pool, "map_ordered", lambda f, items, *a, **k: (
        pooled.append(list(items)) or real(f, items, *a, **k)))  # fmt: skip
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        args = ["theory", str(path), "--out", str(out), "--quiet", "--jobs", jobs]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    assert pooled == [[5, 4, 3]]  # with 2 jobs only, largest first
    _same_files(tmp_path / "jobs1", tmp_path / "jobs2")


def _fake_n(config, root, n, jobs, progress, force, started):
    return {"n": n, "jobs": jobs, "pid": os.getpid()}, pd.DataFrame({"n": [n]})


def test_theory_runs_a_dominant_n_alone_on_every_worker(tmp_path, monkeypatch):
    """n = 40 is more than half the work: it runs first, in this process with both jobs (the
    engine's workers); the three small n then run at once on forked processes, one job each."""
    config = dict(name="tiny", kind="gaussian", n=[3, 4, 5, 40], effect=1.0, n_rows=5000,
                  m=[10, 30, 100], splits=4, epsilon=[0.03])  # fmt: skip
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setattr(theory, "_one_n", _fake_n)
    done = theory._run_all_n(load_theory_config(path), tmp_path, 2, None, False, 0.0)
    rows = [row for row, _ in done]
    assert [row["n"] for row in rows] == [3, 4, 5, 40]  # the config's order
    assert [row["jobs"] for row in rows] == [1, 1, 1, 2]
    assert rows[3]["pid"] == os.getpid()
    assert os.getpid() not in {row["pid"] for row in rows if row["n"] != 40}


@pytest.mark.slow
def test_report_of_two_folders_in_one_command_writes_what_two_commands_write(tmp_path):
    """`genvdis report results/examples/ results/` (one process, one pool) writes the bytes
    that `report results/examples/` then `report results/` write, in either order: the
    explorer of the outer folder shows the inner one's runs with their analysis."""
    sides = {}
    for side in ("apart", "together", "reversed"):
        outer = _with_summaries(tmp_path / side)
        _with_summaries(outer / "examples")
        sides[side] = outer
    apart = sides["apart"]
    for folder in (apart / "examples", apart):
        result = CliRunner().invoke(app, ["report", str(folder), "--boot", "50", "--jobs", "2"])
        assert result.exit_code == 0, result.output
    for side, order in (("together", ["examples", "."]), ("reversed", [".", "examples"])):
        folders = [str(sides[side] / f) for f in order]
        result = CliRunner().invoke(app, ["report", *folders, "--boot", "50", "--jobs", "2"])
        assert result.exit_code == 0, result.output
        assert f"{sides[side] / order[0] / 'REPORT.md'}\n" in result.output
        _same_files(apart, sides[side])
    page = (apart / "explorer.html").read_text()
    assert '"id":"examples/pima"' in page and '"verdict":"two regimes"' in page


@pytest.mark.slow
def test_plot_of_two_folders_in_one_command_draws_each_figure_once(tmp_path):
    one, two = _with_summaries(tmp_path / "one"), _with_summaries(tmp_path / "two")
    _with_summaries(one / "examples")
    _with_summaries(two / "examples")
    for folder in (one, one / "examples"):
        assert CliRunner().invoke(app, ["plot", str(folder)]).exit_code == 0
    args = ["plot", str(two), str(two / "examples"), str(two / "pima"), "--jobs", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = result.output.split()
    assert len(printed) == len(set(printed))  # pima, named twice, drawn once
    assert printed[-1] == str(two / "examples" / "figure1.pdf")
    _same_files(one, two)


def test_report_serves_one_folder_only(tmp_path):
    one = results_folder(tmp_path / "one")
    result = CliRunner().invoke(app, ["report", str(one), str(one), "--serve", "--port", "0"])
    assert result.exit_code == 2
    assert "error: --serve serves one results folder, not 2" in result.output
    assert not (one / "REPORT.md").exists()


@pytest.mark.parametrize(
    ("tasks", "workers", "size"),
    [(3000, 100, 7), (757, 100, 1), (268, 2, 8), (16, 2, 2), (7, 2, 1), (0, 0, 1)],
)
def test_a_dask_batch_gives_every_worker_several_and_stays_short(tasks, workers, size):
    assert pool.dask_batch(tasks, workers) == size
    if tasks:  # at least BATCHES_PER_WORKER batches a worker, unless that needs single calls
        assert size == 1 or tasks / size >= pool.BATCHES_PER_WORKER * workers


def _square(x: int) -> tuple[int, int]:
    return x, x * x


def test_dask_batches_several_calls_a_task_and_returns_each_result(dask_cluster):
    """With two workers and 64 calls, 8 calls a dask task (joblib's batch): fewer tasks than
    calls reach the scheduler, every call's result comes back once, on its own."""
    with pool.parallel("dask", 2, dask_cluster.address):
        got = list(pool.map_unordered(_square, [(x,) for x in range(64)], "dask", 2))
    ran = ("processing", "memory")
    done = {key for key, *states in dask_cluster.transitions if tuple(states) == ran}
    assert sorted(got) == [(x, x * x) for x in range(64)]
    assert pool.dask_batch(64, 2) == 8
    # joblib hands out batches of 8 (its last slice of calls in single calls): never one
    # call a task for all
    assert 1 < len(done) < 64, sorted(done)


# a fresh Python (pytest's process may hold threads: xdist's, a dask client's)
FORKED_MAP = """\
import os, threading
from genvdis._runtime import parallel

class Unpicklable:
    def __init__(self, value):
        self.value = value
    def __reduce__(self):
        raise TypeError("the data was pickled")

def task(data, k):
    return data.value * k, os.getppid()

data = Unpicklable(3)
assert parallel.forks_safely()
with parallel.parallel("processes", 2, None, scatter=[data]):
    got = sorted(parallel.map_unordered(task, [(data, k) for k in range(6)], "processes", 2))
assert got == [(3 * k, os.getpid()) for k in range(6)], got
assert threading.active_count() == 1  # the pool's threads are gone: the next run forks too
stop = threading.Event()
threading.Thread(target=stop.wait).start()
assert not parallel.forks_safely()  # another thread: loky's workers instead
stop.set()
from sklearn.naive_bayes import GaussianNB  # loads OpenMP
assert not parallel.forks_safely()
print("ok")
"""


@pytest.mark.skipif(not pool.can_fork(), reason="forked workers are for Linux")
def test_forked_workers_hold_the_data_and_fork_only_where_safe():
    """The data given to `parallel` comes with the fork: a task's argument that is that data
    is never pickled; results come back from the forked children. Where another thread runs
    or OpenMP is loaded, `forks_safely` says no."""
    done = subprocess.run([sys.executable, "-c", FORKED_MAP], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def _dies_on_three(x: int) -> int:
    if x == 3:
        os._exit(9)  # as the out-of-memory killer would end it
    return x


def test_a_loky_worker_that_dies_is_said_in_one_line():
    """A loky worker killed mid-run: the same one-line error as a forked worker's death, not
    loky's TerminatedWorkerError with its traceback."""
    with pool.parallel("loky", 2, None):
        with raises_user_error(pool.WORKER_DIED):
            list(pool.map_unordered(_dies_on_three, [(x,) for x in range(6)], "loky", 2))
