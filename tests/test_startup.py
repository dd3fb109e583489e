"""Start-up: a run imports only what it uses. scipy.stats alone once cost ~1 s of every run's
~2 s of fixed cost (benchmarks/bench_startup.py measures the times; these tests check which
modules get loaded, in a fresh interpreter, so they cannot depend on the machine's speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from genvdis._runtime import parallel as backends
from genvdis.cli import app
from genvdis.errors import UserError
from genvdis.store import _csv as csvtext
from genvdis.store import results
from genvdis.store._csv import csv_text
from tests.conftest import REPO

# Heavy, and not needed before a run's first task (matplotlib: plot/report; sklearn: tests and
# benchmarks; dask: --backend dask; scipy.stats: the theory runs; scipy.optimize: the rare LP;
# joblib: runs on workers, not --jobs 1; pooch: downloads, not a cache hit; scipy.linalg's
# and scipy.special's packages: the kernels need only BLAS's module and the summary only
# stdtrit's, genvdis._runtime.extensions).
HEAVY = ["scipy.stats", "scipy.optimize", "matplotlib", "sklearn", "dask", "distributed"]
HEAVY += ["joblib", "pooch", "scipy.linalg", "scipy.special"]


# What the CLI's own answers (--help, --version) need none of: the numeric libraries and the
# config schemas load with a command that runs something.
RUNNING = ["numpy", "pandas", "pydantic", "numba", "yaml", "scipy", "genvdis.experiment"]


def _loaded_after(code: str, cwd=None, watch: list[str] = HEAVY) -> list[str]:
    """Which of `watch` a fresh interpreter holds after running `code`."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {watch!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_importing_the_cli_and_the_engine_loads_nothing_heavy():
    assert _loaded_after("import genvdis.cli, genvdis.experiment.engine, genvdis.api") == []


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_the_cli_s_help_and_version_load_no_numeric_library_nor_the_schemas(args):
    code = f"import sys\nfrom genvdis.cli import app\nsys.argv = ['genvdis', *{args!r}]\n"
    code += "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
    assert _loaded_after(code, watch=RUNNING) == []


@pytest.mark.slow
def test_fetching_a_dataset_loads_no_numeric_library(mirror_env):
    """`genvdis fetch` copies and checks files: pandas (~0.2 s) is for reading tables."""
    code = "import sys\nfrom genvdis.cli import app\nsys.argv = ['genvdis', 'fetch', 'pima']\n"
    code += "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
    assert _loaded_after(code, watch=RUNNING) == ["pydantic"]  # typer's, for its options
    assert list(mirror_env.rglob("pima-indians-diabetes.data"))


def test_a_built_in_name_parses_its_own_config_file_only(tmp_path, monkeypatch):
    """`genvdis run pima` reads pima.yaml, not all the shipped configs (a tenth of a second)."""
    from genvdis.config import builtin

    read: list[str] = []
    describe = builtin._describe
    monkeypatch.setattr(builtin, "_describe", lambda path: read.append(path.name) or describe(path))
    assert builtin.resolve("pima", "panel").name == "pima.yaml"
    assert builtin.resolve("gnb-vs-svm", "panel").name == "gnb-vs-svm.yaml"
    assert read == ["pima.yaml", "gnb-vs-svm.yaml"]
    with pytest.raises(UserError, match="built-in theory config"):
        builtin.resolve("theory-gaussian", "panel")  # the other kind: every file, to say so


@pytest.mark.slow
def test_a_whole_run_loads_neither_scipy_stats_nor_plotting_nor_sklearn(
    tmp_path, write_toy, toy_config
):
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    out = tmp_path / "out"
    run = ["run", str(config), "--splits", "3", "--out", str(out), "-q"]
    code = f"import sys\nfrom genvdis.cli import app\nsys.argv = ['genvdis', *{run!r}]\n"
    code += "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
    # the imports ran with the garbage collector paused (tuning.collector_paused): it is on
    # again, and what the imports made is frozen
    code += "import gc\nassert gc.isenabled() and gc.get_freeze_count() > 10000"
    loaded = _loaded_after(code)
    assert (out / "toy" / "summary.csv").exists()
    assert loaded == []


@pytest.mark.slow
def test_the_separability_lp_runs_without_importing_scipy_optimize():
    """The LP's HiGHS bindings are loaded from their file (genvdis.models.logistic.separable._lp),
    not through
    scipy.optimize's package (~0.2 s a process); the solution is linprog's, bit for bit, and
    scipy.optimize imported afterwards works with the same bindings."""
    code = (
        "import numpy as np\nfrom genvdis.models.logistic.separable import _lp as lp\n"
        "A = np.array([[1.0, 0.5, 1.0], [-0.5, 1.0, 1.0], [0.2, -1.0, -1.0]])\n"
        "x, _ = lp.solve(A)\nassert lp._highs_core() is not None\nimport sys\n"
        "assert 'scipy.optimize' not in sys.modules\n"
        "want, _ = lp._by_linprog(A)\nassert x.tobytes() == want.tobytes(), (x, want)"
    )
    by_linprog = {"scipy.optimize", "scipy.linalg", "scipy.special"}  # last
    assert set(_loaded_after(code)) == by_linprog


@pytest.mark.slow
def test_the_kernels_blas_comes_without_scipy_linalg_and_the_package_still_imports():
    """numba's compiled np.dot finds BLAS in scipy.linalg.cython_blas, loaded from its file by
    genvdis._runtime.extensions (tuning.one_thread) without the package; importing scipy.linalg
    afterwards gives the same module, and its functions work."""
    code = (
        "import numpy as np, sys\nfrom genvdis._runtime import tuning\n"
        "from genvdis.experiment import scoring\n"
        "with tuning.one_thread():\n"
        "    blas = sys.modules['scipy.linalg.cython_blas']\n"
        "    assert 'scipy.linalg' not in sys.modules\n"
        "    a = np.arange(12.0).reshape(3, 4)\n"
        "    e = scoring._count_in_chunks(a, a.T.copy(), np.zeros(3), a, a.T.copy(), 1, 2, None,"
        " np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.zeros(3))\n"
        "    assert 'scipy.linalg' not in sys.modules\n"
        "import scipy.linalg, scipy.linalg.cython_blas as again\nassert again is blas\n"
        "assert np.allclose(scipy.linalg.solve(np.eye(2) * 2, np.ones(2)), 0.5)"
    )
    assert _loaded_after(code) == ["scipy.linalg"]


@pytest.mark.slow
def test_the_t_quantile_is_scipy_stats_without_scipy_special_and_the_package_still_imports():
    """The summary's t quantile comes from stdtrit's module loaded beside scipy.special
    (genvdis._runtime.extensions.load_beside), not through the package's __init__: the same bits as
    scipy.stats.t.ppf; afterwards scipy.special imports whole, with the same stdtrit, and its
    other functions work."""
    code = (
        "import numpy as np, sys\nfrom genvdis.store import results\n"
        "dof = np.arange(1, 3001)\nq = results.t_quantile(0.975, dof)\n"
        "assert 'scipy.special' not in sys.modules\n"
        "assert 'scipy.special._ufuncs' in sys.modules\n"
        "import scipy.special, scipy.stats\n"
        "assert q.tobytes() == scipy.stats.t.ppf(0.975, dof).tobytes()\n"
        "assert scipy.special.stdtrit is sys.modules['scipy.special._ufuncs'].stdtrit\n"
        "assert scipy.special.expit(0.0) == 0.5 and scipy.special.ndtr(0.0) == 0.5\n"
    )
    assert "scipy.special" in _loaded_after(code)  # imported last, by hand (scipy.stats too)


def _package(root: Path, name: str, init: str, core: str) -> None:
    """A package `name` under root: __init__.py, _core.py and a sibling _helper.py."""
    folder = root / name
    folder.mkdir()
    (folder / "__init__.py").write_text(init)
    (folder / "_core.py").write_text(core)
    (folder / "_helper.py").write_text("HELP = 41\n")


def test_load_beside_loads_a_module_and_its_siblings_without_the_package_s_init(tmp_path):
    """The module and the siblings it imports load from the package's folder, the package's
    __init__ does not run; a later import of the package runs it, with the same modules (not
    set as the package's attributes unless its __init__ binds them: extensions' docstring); a
    module that needs what only __init__ defines gets the plain import instead."""
    init = "import sys\nRAN = True\nFROM_INIT = 1\nfrom ._core import value\n"
    _package(tmp_path, "beside_ok", init, "from ._helper import HELP\nvalue = HELP + 1\n")
    needs_init = "from beside_needs import FROM_INIT\nvalue = FROM_INIT + 41\n"
    _package(tmp_path, "beside_needs", init, needs_init)
    code = (
        f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
        "from genvdis._runtime import extensions\n"
        "core = extensions.load_beside('beside_ok._core')\n"
        "assert core.value == 42 and 'beside_ok' not in sys.modules\n"
        "assert 'beside_ok._helper' in sys.modules\n"
        "import beside_ok\nassert beside_ok.RAN and sys.modules['beside_ok._core'] is core\n"
        "other = extensions.load_beside('beside_needs._core')\n"
        "assert other.value == 42 and sys.modules['beside_needs'].RAN\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.slow
def test_threads_importing_scipy_special_during_the_load_beside_get_the_real_package():
    """While stdtrit's module loads beside its package, the package's stand-in is marked as
    initialising and its import lock held: a thread importing scipy.special meanwhile waits,
    then gets the real package, never the stand-in."""
    code = (
        "import threading, sys\nfrom genvdis.store import results\n"
        "seen, errors = [], []\n"
        "def quantile():\n"
        "    try:\n        seen.append(float(results.t_quantile(0.975, 9)))\n"
        "    except Exception as e:\n        errors.append(repr(e))\n"
        "def package():\n"
        "    try:\n        import scipy.special as sp\n        seen.append(float(sp.expit(0.0)))\n"
        "    except Exception as e:\n        errors.append(repr(e))\n"
        "threads = [threading.Thread(target=f) for f in (quantile, package) * 4]\n"
        "[t.start() for t in threads]\n[t.join() for t in threads]\n"
        "assert not errors, errors\nassert len(seen) == 8\n"
        "import scipy.special\nassert hasattr(scipy.special, 'gamma')\n"
    )
    assert _loaded_after(code) == ["scipy.special"]


@pytest.mark.slow
def test_every_blas_the_kernels_call_runs_on_one_thread(tmp_path, write_toy, toy_config):
    """numba's np.dot goes through scipy's own OpenBLAS, loaded lazily on the first kernel call:
    it must be limited to one thread (deterministic BLAS, no oversubscription) though
    nothing imports scipy.linalg before the run. Checked inside the first block of a toy run."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    run = ["run", str(config), "--splits", "3", "--out", str(tmp_path / "out"), "-q"]
    code = f"""import json, sys
from threadpoolctl import threadpool_info
from genvdis import cli
from genvdis.experiment import engine
real, seen = engine.run_block, []
def spy(*args):
    frame = real(*args)
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    seen.extend((i["filepath"], i["num_threads"]) for i in blas)
    return frame
engine.run_block = spy
sys.argv = ["genvdis", *{run!r}]
try:
    cli.app()
except SystemExit as e:
    assert not e.code, e.code
print(json.dumps(seen))"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert any("scipy_openblas-" in path for path, _ in seen)  # scipy's BLAS was in use
    assert {threads for _, threads in seen} == {1}


# --- what a run writes, and how -----------------------------------------------------------------


def _to_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, lineterminator="\n")


@pytest.mark.slow
def test_the_csv_writer_gives_pandas_bytes_on_every_committed_table():
    """csv_text is what a run writes errors.csv and its checkpoints with: on every CSV under
    results/ (summaries, fits, shapes, analyses: NaNs, text, bools, floats of every size) it
    must give pandas' bytes, by its own path or by falling back to pandas."""
    tables = sorted(REPO.glob("results/**/*.csv"))
    assert len(tables) > 100
    fast = 0
    for path in tables:
        frame = pd.read_csv(path)
        assert csv_text(frame) == _to_csv(frame), path
        fast += csvtext._fields(frame) is not None
    assert 0 < fast < len(tables)  # both paths were checked


def test_the_csv_writer_gives_pandas_bytes_on_an_engine_block_and_on_edge_cases():
    rng = np.random.default_rng(1)
    n = 3000
    block = pd.DataFrame(
        {
            "model": np.repeat(["naive_bayes", "logistic_regression"], n // 2),
            "m": 30,
            "split": np.tile(np.arange(n // 2), 2),
            "n_test": 738,
            "errors": rng.integers(0, 738, n),
        }
    )
    block["error"] = block["errors"] / block["n_test"]
    block["separable"] = rng.random(n) < 0.3
    block["trajectories"] = rng.integers(0, 5, n)
    tiny = rng.random(n) * 10.0 ** rng.integers(-30, 30, n)  # exponent notation both ways
    cases = [
        block,
        block.assign(error=tiny),
        block.iloc[:0],
        block.assign(error=np.where(block["split"] == 7, np.nan, block["error"])),
        block.assign(error=np.where(block["split"] == 7, -0.0, block["error"])),
        block.assign(error=np.where(block["split"] == 7, np.inf, block["error"])),
        block.assign(model=np.where(block["split"] == 3, 'a "quoted", name', block["model"])),
        block.assign(model=np.where(block["split"] == 3, "", block["model"])),
        block.assign(model=np.where(block["split"] == 3, None, block["model"])),
        block.rename(columns={"m": "m,size"}),
        block.assign(n_test=block["n_test"].astype(np.int32), errors=block["errors"] * 1.0),
    ]
    for frame in cases:
        assert csv_text(frame) == _to_csv(frame)
    assert csvtext._fields(block) is not None  # the engine's blocks take the fast path


def test_the_results_are_fsynced_and_the_checkpoints_are_not(tmp_path, write_toy, toy_config,
                                                             monkeypatch):  # fmt: skip
    """A checkpoint only has to survive a kill (the page cache does): a torn one fails its
    checksum and is recomputed (test_run_integrity). The committed results must survive a
    power cut: each is fsync'd before its rename."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs Linux /proc to name the files fsync'd")
    synced: list[str] = []
    fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]", "block_size: 2"))
    result = CliRunner().invoke(app, ["run", str(config), "--splits", "4", "--out",
                                      str(tmp_path / "out"), "-q"])  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in [*results.OUTPUTS, results.MANIFEST]:
        assert any(f.startswith(f".{name}.") for f in synced), (name, synced)
    assert not [f for f in synced if f.startswith(".m0")], synced  # a checkpoint's temp name


# --- a short run stays in the run's process -----------------------------------------------------


@pytest.mark.parametrize("forks", [True, False])
def test_a_short_run_on_processes_stays_in_process_unless_forced(monkeypatch, forks):
    """Below the crossover its workers' start-up sets (shorter for forked workers, which only
    load the kernels, than for loky's, which import everything too)."""
    monkeypatch.setattr(joblib, "cpu_count", lambda: 4)
    monkeypatch.setattr(backends, "forks_safely", lambda: forks)
    below = backends.FORKED_IN_PROCESS_BELOW if forks else backends.IN_PROCESS_BELOW
    assert backends.FORKED_IN_PROCESS_BELOW < backends.IN_PROCESS_BELOW
    short, long = below * 0.9, below * 1.1
    assert backends.worker_count(2, 50, cpu_seconds=short) == 1
    assert backends.worker_count(2, 50, cpu_seconds=long) == 2
    assert backends.worker_count(2, 50, force=True, cpu_seconds=short) == 2
    assert backends.worker_count(2, 50, backend="threading", cpu_seconds=short) == 2
    assert backends.worker_count(8, 3, cpu_seconds=long) == 3
    loky = backends.IN_PROCESS_BELOW * 0.9
    assert backends.worker_count(2, 50, backend="loky", cpu_seconds=loky) == 1


def test_a_short_run_with_two_jobs_says_so_and_gives_the_same_bytes(
    tmp_path, write_toy, toy_config
):
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]", "block_size: 2"))
    outputs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        result = CliRunner().invoke(app, ["run", str(config), "--splits", "4", "--jobs", jobs,
                                          "--out", str(out)])  # fmt: skip
        assert result.exit_code == 0, result.output
        outputs[jobs] = {p.name: p.read_bytes() for p in sorted((out / "toy").iterdir())}
    assert "--jobs 2: using 1 worker(s) (a short run: over sooner than workers start; " \
        "--force uses them)" in result.stderr  # fmt: skip
    assert outputs["1"] == outputs["2"]


@pytest.mark.slow
def test_a_report_loads_no_matplotlib(tmp_path):
    """`genvdis report` draws nothing: its explorer takes the line colours from
    genvdis.report.styles, so matplotlib (about a second of start-up) is never imported."""
    from tests.learningcurves import results_folder

    folder = results_folder(tmp_path / "results")
    report = ["report", str(folder), "--boot", "20"]
    code = f"import sys\nfrom genvdis.cli import app\nsys.argv = ['genvdis', *{report!r}]\n"
    code += "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code"
    assert "matplotlib" not in _loaded_after(code)
    assert (folder / "explorer.html").is_file()


def test_the_explorers_palette_is_matplotlibs():
    from matplotlib import colors

    from genvdis.report.styles import STYLES, TABLEAU

    assert TABLEAU == colors.TABLEAU_COLORS
    assert {style["color"] for style in STYLES.values()} <= set(TABLEAU)
