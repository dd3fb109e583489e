"""numba's cache of genvdis's kernels lives in a folder named after every kernel module's
source, so that a kernel is never run with a cached copy of the old code of a callee in
another module (numba checks only the caller's own file)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest
from numba.core.dispatcher import Dispatcher

import genvdis
from genvdis._runtime import kernelcache
from genvdis.experiment import engine

CHECK = """
import sys, numba
from numba.core.dispatcher import Dispatcher
import importlib
module = importlib.import_module(sys.argv[1])  # first, in a fresh process
where = numba.config.CACHE_DIR
assert "genvdis-numba-" in where, where
for value in vars(module).values():
    if isinstance(value, Dispatcher) and value._cache.cache_path:
        assert value._cache.cache_path.startswith(where), (value, value._cache.cache_path)
print(where)
"""


def _modules_with_kernels() -> set[str]:
    found = set()
    for info in pkgutil.walk_packages(genvdis.__path__, "genvdis."):
        if info.name == "genvdis.__main__":  # runs the CLI
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
                found.add(info.name.removeprefix("genvdis."))
    return found


def test_the_stamp_lists_every_module_that_defines_a_kernel():
    assert set(kernelcache.KERNEL_MODULES) == _modules_with_kernels()


@pytest.mark.slow
def test_every_kernel_caches_in_the_stamped_folder_whatever_is_imported_first():
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-c", CHECK, f"genvdis.{name}"], stdout=subprocess.PIPE, text=True
        )
        for name in kernelcache.KERNEL_MODULES
    }
    for name, process in processes.items():
        out, _ = process.communicate()
        assert process.returncode == 0, name
        assert out.strip() == str(kernelcache.CACHE_DIR), name
    assert numba.config.CACHE_DIR == str(kernelcache.CACHE_DIR)


def _cache_dir(package_parent: Path, env: dict[str, str]) -> str:
    code = "import genvdis._runtime.streams, numba; print(numba.config.CACHE_DIR)"
    env = {**env, "PYTHONPATH": str(package_parent)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=package_parent)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_changed_callee_module_gets_a_fresh_cache(tmp_path):
    """The failure this prevents: change newton_solves.py alone (as a `git pull` may), and
    numba's own cache would run sparsest_first's cached steps with the old elimination."""
    copy = tmp_path / "src"
    shutil.copytree(Path(genvdis.__file__).parent, copy / "genvdis",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    before = _cache_dir(copy, env)
    assert before.startswith(str(copy / "genvdis" / "__pycache__" / kernelcache.PREFIX))
    assert _cache_dir(copy, env) == before  # unchanged sources: the same cache
    solves = copy / "genvdis" / "models" / "logistic" / "_solves.py"
    with open(solves, "a", encoding="utf-8") as source:
        source.write("\n# changed\n")
    after = _cache_dir(copy, env)
    assert after != before and Path(after).parent == Path(before).parent
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    assert Path(_cache_dir(copy, env)).parent == tmp_path / "mine"


def test_old_stamps_folders_are_removed_after_a_day_and_recent_ones_kept(tmp_path):
    old, recent, keep = (tmp_path / f"{kernelcache.PREFIX}{n}" for n in ("old", "new", "this"))
    for folder in (old, recent, keep):
        folder.mkdir()
    day_ago = old.stat().st_mtime - kernelcache.KEEP_SECONDS - 60
    os.utime(old, (day_ago, day_ago))
    os.utime(keep, (day_ago, day_ago))
    (tmp_path / "other").mkdir()
    kernelcache._prune(tmp_path, keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["other", recent.name, keep.name])


def test_numbas_own_cache_files_from_before_the_stamps_are_removed(tmp_path, monkeypatch):
    """The package's __pycache__ held numba's files before kernelcache: unread, so removed
    after a day like an old stamp's folder; the interpreter's .pyc files and files of other
    modules are left."""
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    monkeypatch.setattr(kernelcache, "PACKAGE", tmp_path)
    names = [
        "splits._draw_rows-84.py311.nbi", "splits._draw_rows-84.py311.1.nbc",
        "sampler._chains-191.py311.nbi", "splits.cpython-311.pyc", "other._f-3.py311.nbi",
    ]  # fmt: skip
    for name in names:
        (cache / name).write_text("x")
        day_ago = time.time() - kernelcache.KEEP_SECONDS - 60
        os.utime(cache / name, (day_ago, day_ago))
    (cache / "streams.next_normal-69.py311.nbi").write_text("recent")
    kernelcache._prune(cache, cache / f"{kernelcache.PREFIX}this")
    left = sorted(p.name for p in cache.iterdir())
    assert left == [
        "other._f-3.py311.nbi",
        "splits.cpython-311.pyc",
        "streams.next_normal-69.py311.nbi",
    ]


def test_compiled_before_says_whether_the_folder_holds_a_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    assert not kernelcache.compiled_before()
    (tmp_path / "genvdis_0a1b").mkdir()  # numba's folder for the package's path
    assert not kernelcache.compiled_before()
    (tmp_path / "genvdis_0a1b" / "splits._draw_rows-84.py311.nbi").write_bytes(b"")
    assert kernelcache.compiled_before()


@pytest.mark.parametrize("compiled", [False, True])
def test_a_run_says_it_compiles_the_kernels_only_where_none_is_cached(
    tmp_path, monkeypatch, toy_config, write_toy, compiled
):
    """A first run spends most of its time compiling (docs/scaling.md): it says so first,
    rather than sit at 0 blocks; later runs do not."""
    from typer.testing import CliRunner

    from genvdis.cli import app

    monkeypatch.setattr(kernelcache, "compiled_before", lambda: compiled)
    config = write_toy(tmp_path, toy_config("sizes: [10, 40]", "splits: 4"))
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    said = engine.COMPILING in result.stderr
    assert said is not compiled
