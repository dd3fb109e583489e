"""Never wrong, never lost: a run folder holds one run's results, whole, or says it does not.

Faults are injected the way machines fail: two runs started into one folder, a kill between
the renames of the final commit, checkpoints cut short, edited or replaced by garbage, a full
disk, a dead parent process. Each ends either in bytes identical to an uninterrupted run's, or
in one line on stderr and exit code 2, with what was finished kept. Work beyond the hard bounds
(genvdis.experiment.planning) is refused at once, naming the bound and --force. Plot, report
and reruns working on one folder at once neither mix two runs nor leave a partial file.

All data is a small CSV written here (no UCI files), 2 sizes x 4 blocks of 3 splits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import genvdis
from genvdis._runtime import parallel as backends
from genvdis.cli import app
from genvdis.config.experiment import load_config
from genvdis.errors import UserError
from genvdis.experiment import planning
from genvdis.store import lock as runlock
from genvdis.store import results
from tests.conftest import REPO

CONFIG = """\
name: own
dataset: {path: data.csv, target: y}
target: {positive: [pos]}
sizes: [10, 30]
splits: 12
block_size: 3
seed: 2
"""
N_BLOCKS = 2 * 4
FILES = (*results.OUTPUTS, results.MANIFEST)

# Runs genvdis in a real process with one fault: FAULT=kill-after:<file> ends the process with
# no cleanup (os._exit) right after <file> is renamed into place; FAULT=pause:<gate> stops it
# after its first checkpoint until the file <gate> exists; FAULT=worker-dies:<split> ends a
# forked worker (os._exit) as it starts a block whose first split is <split>;
# FAULT=worker-dies-at-start ends every forked worker as it starts.
HOOK = """\
import os, sys, time
from pathlib import Path
from genvdis.store import results

fault, _, arg = os.environ.get("FAULT", "").partition(":")
if fault == "kill-after":
    rename = os.replace
    def replace(source, target, *args, **kwargs):
        rename(source, target, *args, **kwargs)
        if Path(target).name == arg:
            os._exit(137)
    os.replace = replace
elif fault == "pause":
    save = results.CheckpointStore.save
    def save_then_wait(self, m, start, frame):
        save(self, m, start, frame)
        while not Path(arg).exists():
            time.sleep(0.02)
    results.CheckpointStore.save = save_then_wait
elif fault == "worker-dies":
    from genvdis.experiment import engine
    parent, run_block = os.getpid(), engine.run_block
    def dying(data, models, m, block, protocol):
        if os.getpid() != parent and block.start == int(arg):
            os._exit(9)
        return run_block(data, models, m, block, protocol)
    engine.run_block = dying
elif fault == "worker-dies-at-start":
    from genvdis._runtime import parallel
    parallel.watch_parent = lambda parent: os._exit(9)  # the forked workers' initializer
from genvdis.cli import app
app(args=sys.argv[1:], prog_name="genvdis")
"""


def _write_data(folder: Path) -> Path:
    """data.csv (3 continuous columns, one discrete, 120 rows) and own.yaml beside it."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(120, 3)).round(3), columns=["a", "b", "c"])
    table["d"] = rng.choice(["u", "v", "w"], size=120)
    table["y"] = np.where(table["a"] + rng.normal(size=120) > 0, "pos", "neg")
    table.to_csv(folder / "data.csv", index=False)
    (folder / "own.yaml").write_text(CONFIG)
    return folder / "own.yaml"


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stderr


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in FILES}


def _fail_writes(monkeypatch, where: str, after: int, code: int, stamp: bool = False) -> None:
    """The writer fails with OSError(code) from its (after + 1)-th write into a folder named
    `where` on (the checkpoints' fingerprint stamp counts only with `stamp`), leaving what was
    written before."""
    write, done = results.atomic_write_bytes, []  # atomic_write_text's writer too

    def failing(path: Path, data: bytes, durable: bool = True) -> None:
        if path.parent.name == where and (stamp or path.name != "fingerprint"):
            if len(done) >= after:
                raise OSError(code, os.strerror(code))
            done.append(path)
        write(path, data, durable)

    monkeypatch.setattr(results, "atomic_write_bytes", failing)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The data and config; a clean run; a run stopped after 3 blocks (by a full disk); one
    of seed 1."""
    root = tmp_path_factory.mktemp("integrity")
    config = _write_data(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert _cli(["run", "own.yaml", "--out", "clean"])[0] == 0
        assert _cli(["run", "own.yaml", "--out", "seed1", "--seed", "1"])[0] == 0
        _fail_writes(patch, results.CHECKPOINTS, 3, errno.ENOSPC)
        assert _cli(["run", "own.yaml", "--out", "stopped"])[0] == 2
    return root, config, _snapshot(root / "clean" / "own")


@pytest.fixture
def work(setup, tmp_path, monkeypatch) -> Path:
    """A fresh folder with the data and config, as the working directory."""
    root, _, _ = setup
    for name in ("data.csv", "own.yaml"):
        shutil.copy(root / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _copy(setup, which: str, work: Path) -> Path:
    """The module's run folder `which` as out/own."""
    shutil.copytree(setup[0] / which, work / "out")
    return work / "out" / "own"


def _checkpoint(run_dir: Path, index: int = 0) -> Path:
    return sorted((run_dir / results.CHECKPOINTS).glob("m*.csv"))[index]


# --- the table: input or fault, exit code, message, identical bytes ------------------------


@dataclass
class Env:
    """What a case's `prepare` works with: the module's runs, the test's folder (the working
    directory), a monkeypatch undone before the rerun, and a stack of things to release then."""

    setup: tuple
    work: Path
    patch: pytest.MonkeyPatch
    stack: contextlib.ExitStack

    def copy(self, which: str) -> Path:
        return _copy(self.setup, which, self.work)

    def config(self, text: str, name: str = "other.yaml") -> list[str]:
        (self.work / name).write_text(text)
        return ["run", name, "--out", "out"]

    def run_folder(self) -> Path:
        (self.work / "out" / "own").mkdir(parents=True)
        return self.work / "out" / "own"


@dataclass(frozen=True)
class Case:
    """`prepare(env)` makes the fault and returns the command line. `rerun`: after the first
    command, the same command with the fault gone must give the clean run's bytes (and so must
    the first command itself when it exits 0)."""

    name: str
    prepare: Callable[[Env], list[str]]
    code: int
    fragments: tuple[str, ...]
    rerun: bool = False


RUN = ["run", "own.yaml", "--out", "out"]


def _wide(env: Env, columns: int, models: str) -> list[str]:
    rng = np.random.default_rng(1)
    table = pd.DataFrame(rng.normal(size=(30, columns)).round(2))
    table.columns = [f"c{i}" for i in range(columns)]
    table["y"] = np.where(table["c0"] > 0, "pos", "neg")
    table.to_csv(env.work / "wide.csv", index=False)
    text = CONFIG.replace("data.csv", "wide.csv").replace("sizes: [10, 30]", "sizes: [10]")
    return env.config(text + f"models: {models}\n")


def _synthetic_rows(env: Env) -> list[str]:
    source = "{synthetic: {kind: gaussian, n_features: 5, n_rows: 100000000000}}"
    text = CONFIG.replace("{path: data.csv, target: y}", source).replace("[pos]", '["1"]')
    return env.config(text)


def _theory_rows(env: Env) -> list[str]:
    (env.work / "t.yaml").write_text(THEORY)
    return ["theory", "t.yaml", "--out", "out"]


def _huge_blocks(env: Env) -> list[str]:
    env.patch.setattr(planning, "physical_memory", lambda: 16 * 2**30)
    blocks = "splits: 100000000\nblock_size: 100000000"
    return env.config(CONFIG.replace("splits: 12\nblock_size: 3", blocks))


def _two_cores(env: Env) -> list[str]:
    env.patch.setattr(joblib, "cpu_count", lambda: 2)
    return [*RUN, "--jobs", "1000", "--backend", "threading"]


def _held(env: Env) -> list[str]:
    env.stack.enter_context(runlock.hold(env.work / "out" / "own"))
    return RUN


def _stale_lock(env: Env) -> list[str]:
    (env.run_folder() / runlock.LOCK).write_text("pid 999999 on elsewhere, since 1999\n")
    return RUN


def _checkpoints_file(env: Env) -> list[str]:
    (env.run_folder() / results.CHECKPOINTS).write_text("x")
    return RUN


def _broken_config(env: Env) -> list[str]:
    (env.run_folder() / "config.yaml").write_text("{{{: [")
    return RUN


def _disk_full(env: Env) -> list[str]:
    _fail_writes(env.patch, results.CHECKPOINTS, 2, errno.ENOSPC)
    return RUN


def _quota_at_start(env: Env) -> list[str]:
    _fail_writes(env.patch, results.CHECKPOINTS, 0, errno.EDQUOT, stamp=True)
    return RUN


def _read_only(env: Env) -> list[str]:
    _fail_writes(env.patch, "own", 0, errno.EROFS)
    return RUN


def _no_workers(env: Env) -> list[str]:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=":0"
    )
    env.stack.enter_context(cluster)
    env.patch.setattr(backends, "WORKER_WAIT", 1)
    return [*RUN, "--backend", "dask", "--scheduler", cluster.scheduler_address]


def _damage(transform: Callable[[Path], None]) -> Callable[[Env], list[str]]:
    """A run stopped after 3 blocks, one of its checkpoints then transformed."""

    def prepare(env: Env) -> list[str]:
        transform(_checkpoint(env.copy("stopped")))
        return RUN

    return prepare


def _finished(change: Callable[[Path], None]) -> Callable[[Env], list[str]]:
    """A finished run, then changed."""

    def prepare(env: Env) -> list[str]:
        change(env.copy("clean"))
        return RUN

    return prepare


def _truncate(path: Path) -> None:
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))


def _edit_value(path: Path) -> None:
    if path.is_dir():
        path = path / "errors.csv"
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[1].split(",")
    fields[4] = str(int(fields[4]) + 7)  # the errors column
    path.write_text("".join([lines[0], ",".join(fields), *lines[2:]]))


def _rename_to_another_block(path: Path) -> None:
    path.rename(path.with_name(path.name.replace("_s0000000_", "_s0000009_")))


def _rename(old: str, new: str) -> Callable[[Path], None]:
    return lambda path: path.rename(path.with_name(path.name.replace(old, new)))


def _other_fingerprint(path: Path) -> None:
    key = path.name.split("_")[3]
    path.rename(path.with_name(path.name.replace(key, "0123456789abcdef")))


def _second_copy(path: Path) -> None:
    """Another checkpoint of the same block that verifies: its rows in another order, named
    by their own checksum."""
    lines = path.read_text().splitlines(keepends=True)
    text = "".join([lines[0], *reversed(lines[1:])])
    m, start, count, key = (part.lstrip("msn") for part in path.name.split("_")[:4])
    identity = (
        f"genvdis checkpoint m={int(m)} start={int(start)} splits={count} fingerprint={key}\n"
    )
    digest = results._sha256(identity + text)
    path.with_name(path.name.rsplit("_", 1)[0] + f"_{digest}.csv").write_text(text)


def _unlist(run_dir: Path, *names: str) -> None:
    """Take files' entries out of the run's manifest.json."""
    manifest = json.loads((run_dir / results.MANIFEST).read_text())
    for name in names:
        del manifest["files"][name]
    (run_dir / results.MANIFEST).write_text(json.dumps(manifest))


def _folder_instead(path: Path) -> None:
    path.unlink()
    path.mkdir()


THEORY = """\
name: huge
kind: gaussian
n: [10]
effect: 0.5
n_rows: 100000000000
m: [10, 20]
epsilon: [0.05]
"""

CASES = [
    Case("splits-1e19-option", lambda e: [*RUN, "--splits", "10000000000000000000"], 2,
         ("CPU-hours", "10000000000000000000 splits at each of 2 sizes", "bound of 100",
          "--force")),
    Case("splits-1e12-in-config",
         lambda e: e.config(CONFIG.replace("splits: 12", "splits: 1000000000000")), 2,
         ("other.yaml", "CPU-hours", "--force")),
    Case("config-file-over-1-MB",
         lambda e: e.config(CONFIG.replace("[10, 30]", "[" + "10, " * 300_000 + "30]")), 2,
         ("other.yaml", "too large for a config file", "limit 1.0 MB",
          "sizes: {start, stop, num}")),
    Case("2500-columns-for-logistic-regression",
         lambda e: _wide(e, 2500, "[naive_bayes, logistic_regression]"), 2,
         ("2500 feature columns", "bound of 2000 for logistic_regression", "--force")),
    Case("2500-columns-for-naive-bayes-only", lambda e: _wide(e, 2500, "[naive_bayes]"), 0,
         ("own: wrote",)),
    Case("synthetic-1e11-rows", _synthetic_rows, 2,
         ("100000000000 rows x 5 features", "memory", "--force")),
    Case("theory-n_rows-1e11-as-an-integer", _theory_rows, 2,
         ("100000000000 rows x 10 features", "memory", "--force")),
    Case("blocks-beyond-memory", _huge_blocks, 2,
         ("of memory", "more than the 16.0 GB this machine has", "--jobs", "--force")),
    Case("jobs-1000-capped-at-cores", _two_cores, 0,
         ("--jobs 1000: using 2 worker(s) (2 cores; --force uses more)",), rerun=True),
    Case("jobs-1000-forced-capped-at-tasks",
         lambda e: [*RUN, "--jobs", "1000", "--backend", "threading", "--force"], 0,
         ("--jobs 1000: using 8 worker(s) (8 tasks to run)",), rerun=True),
    Case("folder-in-use", _held, 2,
         ("out/own is in use by another genvdis run", f"pid {os.getpid()}", "--wait"),
         rerun=True),
    Case("stale-lock-file-of-a-dead-run", _stale_lock, 0, ("own: wrote",), rerun=True),
    Case("truncated-checkpoint", _damage(_truncate), 0,
         ("discarding damaged checkpoint", "checksum mismatch", "resuming, 2 of 8"), rerun=True),
    Case("edited-checkpoint-value", _damage(_edit_value), 0, ("checksum mismatch",), rerun=True),
    Case("zero-byte-checkpoint", _damage(lambda p: p.write_bytes(b"")), 0,
         ("checksum mismatch",), rerun=True),
    Case("garbage-checkpoint", _damage(lambda p: p.write_bytes(os.urandom(300))), 0,
         ("checksum mismatch",), rerun=True),
    Case("checkpoint-renamed-to-another-block", _damage(_rename_to_another_block), 0,
         ("checksum mismatch",), rerun=True),
    Case("checkpoint-of-another-fingerprint", _damage(_other_fingerprint), 0,
         ("(made by another run)",), rerun=True),
    Case("checkpoint-of-a-block-not-in-the-plan", _damage(_rename("_s0000000_", "_s0000001_")),
         0, ("(not a block of this run)",), rerun=True),
    Case("checkpoint-with-a-wrong-split-count", _damage(_rename("_n3_", "_n2_")), 0,
         ("(2 splits, where the block has 3)",), rerun=True),
    Case("second-valid-checkpoint-of-a-block", _damage(_second_copy), 0,
         ("(a second checkpoint of the same block)", "resuming, 3 of 8"), rerun=True),
    Case("checkpoint-that-is-a-folder", _damage(_folder_instead), 0,
         ("(unreadable: Is a directory)",), rerun=True),
    Case("foreign-file-among-checkpoints",
         _damage(lambda p: p.with_name("notes.csv").write_text("x\n")), 0,
         ("notes.csv (not a checkpoint's name)", "resuming, 3 of 8"), rerun=True),
    Case("checkpoints-folder-is-a-file", _checkpoints_file, 0,
         ("is not a folder of checkpoints: removing it",), rerun=True),
    Case("broken-config-yaml-left-behind", _broken_config, 0,
         ("holds no finished run (no manifest.json",), rerun=True),
    Case("broken-manifest", _finished(lambda d: (d / results.MANIFEST).write_text("{")), 0,
         ("manifest.json is damaged",), rerun=True),
    Case("summary-deleted", _finished(lambda d: (d / "summary.csv").unlink()), 0,
         ("summary.csv is missing or changed: rebuilt from errors.csv",), rerun=True),
    Case("errors-edited", _finished(_edit_value), 0,
         ("errors.csv is missing or changed", "computing it"), rerun=True),
    Case("finished-run-of-another-seed", lambda e: e.copy("seed1") and RUN, 0,
         ("made with another config",), rerun=True),
    Case("disk-full-on-a-checkpoint", _disk_full, 2,
         ("cannot write a checkpoint in out/own/.checkpoints: no space left on device",
          "rerun the same command to resume"), rerun=True),
    Case("quota-exceeded-as-the-run-starts", _quota_at_start, 2,
         ("cannot write checkpoints in out/own: disk quota exceeded",), rerun=True),
    Case("results-folder-cannot-be-made", lambda e: ["run", "own.yaml", "--out", "/dev/null/x"],
         2, ("cannot lock /dev/null/x/own: not a directory",)),
    Case("read-only-results-folder", _read_only, 2,
         ("cannot write the results in out/own: read-only file system",), rerun=True),
    Case("dask-scheduler-without-workers", _no_workers, 2, ("has no workers", "dask worker")),
    # issue 30 §3: manifests and config.yaml really checked
    Case("manifest-without-an-entry", _finished(lambda d: _unlist(d, "errors.csv")), 0,
         ("manifest.json is damaged", "computing it"), rerun=True),
]  # fmt: skip


# the 2500-column runs take several seconds each: `make test-fast` leaves them to `make test`
SLOW_CASES = {"2500-columns-for-naive-bayes-only", "2500-columns-for-logistic-regression"}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.name, marks=[pytest.mark.slow] * (c.name in SLOW_CASES)) for c in CASES],
)
def test_hostile_runs(case: Case, setup, work, monkeypatch):
    with monkeypatch.context() as patch, contextlib.ExitStack() as stack:
        args = case.prepare(Env(setup, work, patch, stack))
        code, stderr = _cli(args)
    assert code == case.code, stderr
    assert "Traceback" not in stderr
    for fragment in case.fragments:
        assert fragment in stderr, (fragment, stderr)
    if code == 2:  # one line, after the progress lines of a run that had started
        lines = stderr.strip().splitlines()
        assert lines[-1].startswith("error: "), stderr
        assert not any("error" in line for line in lines[:-1]), stderr
    if code == 0 and case.rerun:
        assert _snapshot(work / "out" / "own") == setup[2]
    if case.rerun:  # the same command again, the fault gone
        code, stderr = _cli(args)
        assert code == 0, stderr
        assert _snapshot(work / "out" / "own") == setup[2]
        assert not (work / "out" / "own" / results.CHECKPOINTS).exists()
        assert not (work / "out" / "own" / runlock.LOCK).exists()


def test_the_table_holds_enough_cases_and_three_kinds_of_checkpoint_damage():
    assert len(CASES) >= 15
    assert sum("checkpoint" in c.name and c.name != "disk-full-on-a-checkpoint" for c in CASES) >= 3


# --- faults in real processes ------------------------------------------------------------------


@pytest.fixture
def hook(work) -> Callable[..., list[str]]:
    """The command line of `genvdis <args>` run by HOOK in a fresh Python."""
    (work / "hook.py").write_text(HOOK)
    return lambda *args: [sys.executable, str(work / "hook.py"), *args]


def _env(fault: str = "") -> dict[str, str]:
    return {**os.environ, "FAULT": fault}


def _read_until(stream, fragment: str) -> str:
    """Lines of a process's stderr up to the one holding `fragment` (EOF fails)."""
    seen = ""
    while fragment not in seen:
        line = stream.readline()
        assert line, f"the process ended before saying {fragment!r}: {seen}"
        seen += line
    return seen


@pytest.mark.slow
def test_two_concurrent_runs_into_one_folder(setup, work, hook):
    """The first run holds the folder (paused after its first block): a second run is refused
    naming the first's pid, a third waits with --wait and then finds the finished run."""
    gate, third = work / "gate", None
    first = subprocess.Popen(hook(*RUN), env=_env(f"pause:{gate}"), stderr=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        lock = work / "out" / "own" / runlock.LOCK
        deadline = time.monotonic() + 120
        while not _checkpoints_of(work) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert f"pid {first.pid} " in lock.read_text()
        second = subprocess.run(hook(*RUN), env=_env(), capture_output=True, text=True,
                                timeout=120)  # fmt: skip
        assert second.returncode == 2
        message = second.stderr.strip()
        assert len(message.splitlines()) == 1 and message.startswith("error: "), message
        assert f"in use by another genvdis run (pid {first.pid} " in message
        third = subprocess.Popen(hook(*RUN, "--wait"), env=_env(), stderr=subprocess.PIPE,
                                 text=True)  # fmt: skip
        _read_until(third.stderr, "waiting for another genvdis run to finish")
        gate.touch()
        assert first.wait(timeout=120) == 0
        rest = third.communicate(timeout=120)[1]
        assert third.returncode == 0 and "own: up to date" in rest, rest
    finally:
        gate.touch()
        for process in (first, third):
            if process is not None and process.poll() is None:
                process.kill()
    assert _snapshot(work / "out" / "own") == setup[2]
    assert sorted(p.name for p in (work / "out" / "own").iterdir()) == sorted(FILES)


def _checkpoints_of(work: Path) -> list[Path]:
    return list((work / "out" / "own" / results.CHECKPOINTS).glob("m*.csv"))


@pytest.mark.parametrize("killed_after", results.OUTPUTS)
@pytest.mark.slow
def test_a_kill_between_the_renames_of_the_final_commit(setup, work, hook, killed_after):
    """A finished run, then a --seed 1 rerun into it killed after renaming one of its new
    files: the folder must not pass for either run, and the original command recomputes the
    original bytes (rather than calling seed 1's CSVs "up to date")."""
    run_dir = _copy(setup, "clean", work)
    killed = subprocess.run(hook(*RUN, "--seed", "1", "-q"), env=_env(f"kill-after:{killed_after}"),
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == 137, killed.stderr
    assert not (run_dir / results.MANIFEST).exists()
    code, stderr = _cli(RUN)
    assert code == 0, stderr
    assert "holds no finished run (no manifest.json" in stderr and "up to date" not in stderr
    assert _snapshot(run_dir) == setup[2]


@pytest.mark.slow
def test_a_first_run_killed_in_its_commit_resumes_to_the_same_bytes(setup, work, hook):
    killed = subprocess.run(hook(*RUN, "-q"), env=_env("kill-after:summary.csv"),
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == 137, killed.stderr
    code, stderr = _cli(RUN)
    assert code == 0, stderr
    assert f"resuming, {N_BLOCKS} of {N_BLOCKS} blocks already done" in stderr
    assert _snapshot(work / "out" / "own") == setup[2]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["processes", "loky"])
def test_workers_end_when_their_run_is_killed(work, hook, backend):
    """kill -9 of a run with --jobs 2: its workers (forked, or loky's) notice and exit, and the
    pipes they inherited (the caller's stderr) close, rather than living on (13+ minutes,
    unnoticed)."""
    gate = work / "gate"  # never made: the run stays paused after its first block
    # --force: two workers even on a one-core machine
    run = subprocess.Popen(hook(*RUN, "--jobs", "2", "--force", "--backend", backend),
                           env=_env(f"pause:{gate}"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 120
    while not _checkpoints_of(work) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    kind = b"loky" if backend == "loky" else b"hook.py"  # a forked worker: the run's command
    workers = [p for p in _children(run.pid) if kind in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(workers) >= 2, workers
    run.send_signal(signal.SIGKILL)
    try:
        run.communicate(timeout=60)  # returns once every holder of the pipes is gone ...
        deadline = time.monotonic() + 30  # ... and the workers finish exiting
        while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if _running(pid)]
    finally:
        for pid in workers:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not backends.can_fork(), reason="forked workers are for Linux")
@pytest.mark.slow
@pytest.mark.parametrize("fault", ["worker-dies:6", "worker-dies-at-start"])
def test_a_worker_that_dies_is_one_line_and_the_rerun_resumes(setup, work, hook, fault):
    """A forked worker killed mid-run or as it starts (the out-of-memory killer, say): the run
    stops with one line and exit code 2, keeps the blocks it saved, and the same command
    resumes to the same bytes as a clean run."""
    died = subprocess.run(hook(*RUN, "--jobs", "2", "--force", "-q"), env=_env(fault),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert died.returncode == 2, died.stderr
    assert died.stderr.strip() == f"error: own.yaml: {backends.WORKER_DIED}", died.stderr
    assert not (work / "out" / "own" / "errors.csv").exists()
    code, stderr = _cli(RUN)
    assert code == 0, stderr
    assert _snapshot(work / "out" / "own") == setup[2]


# --- in-process faults -------------------------------------------------------------------------


def test_disk_full_on_a_checkpoint_keeps_finished_blocks_and_resumes(setup, work, monkeypatch):
    with monkeypatch.context() as patch:
        _fail_writes(patch, results.CHECKPOINTS, 2, errno.ENOSPC)
        code, stderr = _cli(RUN)
    assert code == 2
    assert stderr.strip().splitlines()[-1] == (
        "error: own.yaml: cannot write a checkpoint in out/own/.checkpoints: no space left on "
        "device; finished blocks are kept: fix this, then rerun the same command to resume"
    )
    run_dir = work / "out" / "own"
    assert len(_checkpoints_of(work)) == 2
    assert not list(run_dir.rglob("*.tmp")) and not (run_dir / "errors.csv").exists()
    code, stderr = _cli(RUN)
    assert code == 0 and "resuming, 2 of 8 blocks already done" in stderr, stderr
    assert _snapshot(run_dir) == setup[2]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_follow_the_umask(work, umask, mode):
    old = os.umask(umask)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(results, "FILE_MODE", 0o666 & ~umask)  # read once, at import
            assert _cli(RUN)[0] == 0
    finally:
        os.umask(old)
    for name in FILES:
        assert (work / "out" / "own" / name).stat().st_mode & 0o777 == mode


def test_the_lock_refuses_a_second_holder_and_is_reusable(tmp_path):
    folder = tmp_path / "run"
    with runlock.hold(folder):
        assert f"pid {os.getpid()} " in runlock.holder(folder)
        with pytest.raises(runlock.UserError, match="in use by another genvdis run"):
            with runlock.hold(folder):
                pass
    assert not folder.exists()  # created by the lock, left empty: removed
    folder.mkdir()
    with runlock.hold(folder):
        (folder / "kept").write_text("x")
    assert sorted(p.name for p in folder.iterdir()) == ["kept"]


# --- the plan and the estimates ------------------------------------------------------------


def test_the_plan_is_lazy_and_counts_without_building():
    plan = planning.plan_tasks([10, 30], 10**19, 1000)
    first = list(zip(range(3), plan, strict=False))
    assert [task for _, task in first] == [(10, range(0, 1000)), (10, range(1000, 2000)),
                                           (10, range(2000, 3000))]  # fmt: skip
    assert plan.count == 2 * 10**16
    assert plan.first_blocks() == {10: 1000, 30: 1000}
    small = planning.plan_tasks([10, 30], 7, 3)
    assert list(small) == [(10, range(0, 3)), (10, range(3, 6)), (10, range(6, 7)),
                           (30, range(0, 3)), (30, range(3, 6)), (30, range(6, 7))]  # fmt: skip
    assert small.count == 6


def test_a_long_run_says_what_it_will_cost_before_it_starts(caplog):
    plan = planning.plan_tasks([100, 1000], 100_000, None, 50, 20_000)
    work = planning.Workload(plan, 50, 20_000, ["naive_bayes", "logistic_regression"], jobs=2)
    with caplog.at_level("INFO", logger="genvdis.experiment.planning"):
        planning.check(work, name="big")
    hours = work.cpu_seconds() / 3600
    assert planning.HUMAN < hours * 3600 < planning.MAX_CPU_HOURS * 3600
    assert f"big: about {hours:.1f} CPU-hours by a rough estimate (200,000 splits; up to" in (
        caplog.text
    )


def test_the_papers_protocol_is_far_inside_the_bounds():
    """adult (discrete), the slowest panel (45,222 rows, width 99, m up to 3000), 1000
    splits: about two CPU-minutes measured; its estimate is a few minutes, far from refusal."""
    sizes = load_config(REPO / "configs" / "adult-discrete.yaml").size_grid
    plan = planning.plan_tasks(sizes, 1000, None, 99, 45222)
    work = planning.Workload(plan, 99, 45222, ["naive_bayes", "logistic_regression"], jobs=2)
    assert 60 < work.cpu_seconds() < 3600 < planning.MAX_CPU_HOURS * 3600
    assert work.peak_bytes() < 2 * 2**30
    planning.check(work)  # not refused


# --- issue 30 §3: every reader checks the run as `run` does ------------------------------------


def _zero_lr(run_dir: Path) -> None:
    """The issue's edit: logistic regression's errors set to 0 in errors.csv and summary.csv,
    and their entries taken out of manifest.json."""
    for name, columns in (("errors.csv", ["errors", "error"]), ("summary.csv", ["mean"])):
        table = pd.read_csv(run_dir / name)
        table.loc[table["model"] == "logistic_regression", columns] = 0
        table.to_csv(run_dir / name, index=False)
    _unlist(run_dir, "errors.csv", "summary.csv")


def _refused(run_dir: Path, *words: str) -> None:
    """report, plot and open_results all refuse the run in one line holding `words`."""
    for command in ("report", "plot"):
        code, stderr = _cli([command, str(run_dir.parent)])
        assert code == 2 and stderr.startswith("error: "), stderr
        assert len(stderr.strip().splitlines()) == 1, stderr
        for word in words:
            assert word in stderr, (command, word, stderr)
    with pytest.raises(genvdis.UserError) as error:
        opened = genvdis.open_results(run_dir)
        opened.summary, opened.config, opened.errors  # noqa: B018
    assert all(word in str(error.value) for word in words), str(error.value)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (_zero_lr, ("manifest.json", "damaged", "errors.csv")),
        (lambda d: _unlist(d, "config.yaml"), ("manifest.json", "config.yaml")),
        (lambda d: (d / results.MANIFEST).unlink(), ("out/own", "no manifest.json")),
        (lambda d: (d / "config.yaml").write_text(
            (d / "config.yaml").read_text().replace("n_rows: 120", "n_rows: 99999")),
         ("out/own/config.yaml", "changed")),
        (lambda d: (d / "config.yaml").write_text(
            (d / "config.yaml").read_text().replace("splits: 12", "splits: 1000")),
         ("out/own/config.yaml", "changed")),
        (lambda d: (d / "config.yaml").unlink(), ("out/own/config.yaml", "missing")),
    ],
    ids=["lr-zeroed-and-unlisted", "config-unlisted", "manifest-removed", "n_rows-edited",
         "splits-edited", "config-removed"],
)  # fmt: skip
def test_every_reader_refuses_a_run_that_run_finds_damaged(setup, work, change, words):
    """`run` finds no finished run in these folders, so report, plot and the API, which go
    through the check `run` makes, refuse them too: read as they are, they would give
    "logistic_regression better" of zeroed errors, n = 99999 and "1000 splits per m"."""
    run_dir = _copy(setup, "clean", work)
    change(run_dir)
    _refused(Path("out/own"), *words)
    code, stderr = _cli(RUN)  # `run` agrees: no finished run there; it rebuilds or recomputes
    assert code == 0 and "up to date" not in stderr, stderr
    assert "holds no finished run" in stderr or "rebuilt from errors.csv" in stderr, stderr
    assert _snapshot(run_dir) == setup[2]


def test_compare_edited_in_config_yaml_is_still_the_run(setup, work):
    """config.yaml's compare: may be edited after a run (docs/analysis.md): every other key is
    checked against the manifest's settings hash, this one is read as edited."""
    run_dir = _copy(setup, "clean", work)
    config = run_dir / "config.yaml"
    config.write_text(config.read_text() + "compare: [[logistic_regression, naive_bayes]]\n")
    opened = genvdis.open_results(run_dir)
    assert opened.pairs == [("logistic_regression", "naive_bayes")]
    assert opened.config["n_rows"] == 120
    assert _cli(["report", "out", "--boot", "20"])[0] == 0
    code, stderr = _cli(RUN)
    assert code == 0 and "up to date" in stderr, stderr  # `run` agrees: the run is there
    assert config.read_text().endswith("compare: [[logistic_regression, naive_bayes]]\n")
    config.write_text(config.read_text().replace("seed: 2", "seed: 3"))  # not compare: refused
    with pytest.raises(genvdis.UserError, match="config.yaml: changed since its run"):
        genvdis.open_results(run_dir).config  # noqa: B018


@pytest.mark.slow
def test_the_committed_results_verify():
    """Every run under results/ (the paper's panels, their sweeps' variants, the examples and
    the theory runs) passes the readers' check, as committed."""
    from genvdis.store import runfiles

    runs = sorted(path.parent for path in (REPO / "results").rglob("summary.csv"))
    assert len(runs) > 100
    for run_dir in runs:
        runfiles.read_run_config(run_dir)
        runfiles.read_summary(run_dir)


# --- issue 30: second adversarial pass --------------------------------------------------------


def test_a_data_file_written_while_it_is_read_is_refused(tmp_path, monkeypatch):
    """The table is parsed and hashed: a file rewritten in between would give a run of the old
    file's numbers under the new file's checksum, which a rerun on the new file finds "up to
    date". So: one line, exit 2, no run; then a run of the new file."""
    from genvdis.data import sources as datasource

    monkeypatch.chdir(tmp_path)
    config = _write_data(tmp_path)
    read = datasource.pd.read_csv

    def read_then_rewrite(source, *args, **kwargs):
        frame = read(source, *args, **kwargs)
        if isinstance(source, Path) and source.name == "data.csv":  # not a checkpoint's text
            text = source.read_text()
            source.write_text(text.replace("pos", "neg", 7))  # another table, as valid
        return frame

    monkeypatch.setattr(datasource.pd, "read_csv", read_then_rewrite)
    code, stderr = _cli(["run", str(config), "--out", "out", "-q"])
    assert code == 2 and "data.csv" in stderr and "changed while" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "own" / "summary.csv").exists()
    monkeypatch.setattr(datasource.pd, "read_csv", read)
    assert _cli(["run", str(config), "--out", "out", "-q"])[0] == 0
    code, stderr = _cli(["run", str(config), "--out", "fresh", "-q"])
    assert (tmp_path / "out/own/errors.csv").read_bytes() == (
        tmp_path / "fresh/own/errors.csv"
    ).read_bytes()


# --- plot, report and reruns at once on one folder, stopped or unable to write ---


@pytest.fixture(scope="module")
def finished(tmp_path_factory, write_toy, toy_config) -> Path:
    """A finished run of toy.csv (8 splits, 3 sizes): `<folder>/out/toy/`."""
    folder = tmp_path_factory.mktemp("finished")
    config = write_toy(folder, toy_config("sizes: [10, 20, 40]", "splits: 8"), "toy.yaml")
    genvdis.run(config, out=folder / "out")
    return folder / "out"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


class _Stopped(BaseException):
    """Ctrl-C, or a kill, at this point."""


def test_a_plot_stopped_while_it_writes_a_figure_leaves_the_earlier_one_whole(
    finished, tmp_path, monkeypatch
):
    """A plot interrupted (Ctrl-C) while matplotlib writes toy.pdf leaves the figure an earlier
    plot drew whole, not the first bytes of the new one (REPORT.md links the figures as they
    are): each figure is drawn in memory and renamed into place."""
    from matplotlib.backends import backend_pdf

    out = tmp_path / "out"
    shutil.copytree(finished, out)
    assert _invoke("plot", out)[0] == 0
    before = (out / "toy" / "toy.pdf").read_bytes()

    def stopped(self):  # the PDF's objects are written, its cross-reference table is next
        raise _Stopped

    monkeypatch.setattr(backend_pdf.PdfFile, "writeXref", stopped)
    with pytest.raises(_Stopped):
        genvdis.report.plotting.plot_folders([out])
    assert (out / "toy" / "toy.pdf").read_bytes() == before
    assert not [p.name for p in (out / "toy").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("command", "in_the_way", "message"),
    [
        ("plot", "toy/toy.png", "toy.png in {out}/toy: toy.png"),
        ("report", "toy/fits.csv", "the analysis in {out}/toy: fits.csv"),
        ("report", "analysis.csv", "the analysis in {out}: analysis.csv"),
        ("report", "REPORT.md", "the report in {out}: REPORT.md"),
    ],
)
def test_plot_and_report_that_cannot_write_a_file_say_so_in_one_line(
    finished, tmp_path, command, in_the_way, message
):
    """A figure, an analysis table or the report that cannot be written (here a folder is in
    its place; a full disk or a read-only folder alike) is the user's to fix: one line names
    the folder and the file, exit 2 (not an internal error), and no temporary file is left."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    (out / in_the_way).mkdir()
    code, stderr = _invoke(command, out)
    then = "is a directory; fix this, then rerun the same command"
    assert (code, stderr) == (2, f"error: cannot write {message.format(out=out)}: {then}\n")
    assert not list(out.rglob("*.tmp"))


def test_a_rerun_committing_while_report_reads_errors_csv_is_not_passed_off(
    finished, tmp_path, monkeypatch, write_toy, toy_config
):
    """report (or plot) reads a run's errors.csv, then checks the file against manifest.json.
    A rerun (another seed) committing in between would have the check hash the new file
    against the new manifest while the earlier run's numbers are analysed. The bytes checked
    must be the bytes read: refused in one line, saying to run it again."""
    from genvdis.store import runfiles

    out = tmp_path / "out"
    shutil.copytree(finished, out)
    config = write_toy(tmp_path, toy_config("sizes: [10, 20, 40]", "splits: 8"), "toy.yaml")
    check = results.check_manifest

    def rerun_then_check(path, *args):
        monkeypatch.setattr(results, "check_manifest", check)
        genvdis.run(config, seed=1, out=out)
        check(path, *args)

    monkeypatch.setattr(results, "check_manifest", rerun_then_check)
    with pytest.raises(UserError) as error:
        runfiles.read_errors(out / "toy")
    assert str(error.value) == (
        f"{out / 'toy' / 'errors.csv'}: a run wrote its folder while it was read; run this "
        "command again (once no run writes there)"
    )
    assert runfiles.read_errors(out / "toy")["error"].equals(
        pd.read_csv(out / "toy" / "errors.csv")["error"]
    )


def test_plot_while_a_run_commits_into_the_folder_says_to_wait_not_to_rerun_it(finished, tmp_path):
    """plot or report during a run's commit find its mark (.committing), which alone would
    mean a run stopped while writing ('rerun that run'): while a run holds the folder's lock,
    they say a run is writing it, to wait rather than rerun."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    run_dir = out / "toy"
    (run_dir / results.COMMITTING).write_text("")
    with runlock.hold(run_dir):  # the run, committing
        code, stderr = _invoke("plot", out)
    assert (code, stderr) == (
        2,
        f"error: {run_dir}: a run is writing its results now; run this command again when it "
        "has finished\n",
    )
    code, stderr = _invoke("report", out)  # no run holds it: one was stopped in its commit
    assert code == 2 and "its last run was stopped while writing its results" in stderr


def test_a_rerun_committing_while_report_works_is_not_mixed_into_the_explorer(
    finished, tmp_path, monkeypatch, write_toy, toy_config
):
    """report analyses each run, then builds explorer.html from the runs' summary.csv and that
    analysis. A rerun (another seed) committing in between would give a page with one run's
    curves and the other's differences and verdict: the page checks the analysis against the
    summary it draws for every run, and refuses in one line saying to analyse again."""
    from genvdis.report import markdown as report

    out = tmp_path / "out"
    shutil.copytree(finished, out)
    config = write_toy(tmp_path, toy_config("sizes: [10, 20, 40]", "splits: 8"), "toy.yaml")
    write = report.write_explorer

    def rerun_then_write(folder, *args, **kwargs):
        genvdis.run(config, seed=1, out=out)
        return write(folder, *args, **kwargs)

    monkeypatch.setattr(report, "write_explorer", rerun_then_write)
    code, stderr = _invoke("report", out, "--boot", "100")  # the rerun logs its lines first
    assert (code, stderr.splitlines()[-1]) == (
        2,
        f"error: {out / 'toy' / 'differences.csv'}: not the analysis of this run's summary.csv "
        f"(the run was rerun after it was analysed); analyse it again with `genvdis report {out}`",
    )


# --- a block's checkpoint, made on the worker -----------------------------------------------


def _block_rows(start: int = 3, count: int = 3) -> pd.DataFrame:
    """A block's rows as `engine.run_block` returns them: two models, errors / n_test with
    ratios that take 17 significant digits to write, one separable split."""
    split = np.tile(np.arange(start, start + count), 2)
    errors = np.array([7, 1, 12, 0, 3, 30])[: split.size]
    frame = pd.DataFrame(
        {
            "model": np.repeat(["naive_bayes", "logistic_regression"], count),
            "m": 10,
            "split": split,
            "n_test": 137,
            "errors": errors,
        }
    )
    frame["error"] = frame["errors"] / frame["n_test"]
    frame["separable"] = np.arange(split.size) == 1
    frame["trajectories"] = np.where(frame["separable"], 30, 0)
    return frame


def test_a_block_is_pandas_csv_text_and_the_rows_read_back_from_it():
    """The text is pandas' own CSV of the rows (the checkpoint's bytes), the frame is what
    pandas reads back from that text (what a resumed run reads), and nothing is lost on
    the way: the very numbers of the rows."""
    import io

    rows = _block_rows()
    block = results.Block.of(rows)
    assert block.data == rows.to_csv(index=False, lineterminator="\n").encode()
    assert block.splits == 3
    pd.testing.assert_frame_equal(block.frame, pd.read_csv(io.BytesIO(block.data)))
    pd.testing.assert_frame_equal(block.frame, rows)


@pytest.mark.parametrize("pickled", [False, True])  # True: as a worker sends it to the client
def test_a_saved_block_keeps_the_checkpoint_name_scheme_and_reads_back_whole(tmp_path, pickled):
    """`save` names the checkpoint by its identity and the sha256 of the identity line and the
    bytes (spelled out here, so checkpoints of earlier runs still verify), writes the block's
    text, and keeps its frame; a second store of the same run (a resume) reads the file back to
    the same frame, and a store not on disk keeps the same frame and writes nothing."""
    import hashlib
    import pickle

    key = "0123456789abcdef"
    block = results.Block.of(_block_rows(start=3))
    if pickled:
        block = pickle.loads(pickle.dumps(block))
    store = results.CheckpointStore(tmp_path / "run", key, {10: 3}, 6, 2)
    assert store.open() == 0
    store.save(10, 3, block)
    identity = f"genvdis checkpoint m=10 start=3 splits=3 fingerprint={key}\n".encode()
    digest = hashlib.sha256(identity + block.data).hexdigest()
    (path,) = (tmp_path / "run" / results.CHECKPOINTS).glob("*.csv")
    assert (path.name, path.read_bytes()) == (
        f"m0000010_s0000003_n3_{key}_{digest}.csv",
        block.data,
    )
    resumed = results.CheckpointStore(tmp_path / "run", key, {10: 3}, 6, 2)
    assert resumed.open() == 1 and resumed.done(10, 3) and not resumed.done(10, 0)
    pd.testing.assert_frame_equal(resumed.load_all(), store.load_all())
    pd.testing.assert_frame_equal(store.load_all(), block.frame)
    memory = results.CheckpointStore(tmp_path / "short", key, {10: 3}, 6, 2, on_disk=False)
    assert memory.open() == 0
    memory.save(10, 3, block)
    assert not (tmp_path / "short").exists()
    pd.testing.assert_frame_equal(memory.load_all(), block.frame)
