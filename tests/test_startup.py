"""Start-up: a run imports only what it uses. scipy.stats alone once cost ~1 s of every run's
~2 s of fixed cost (benchmarks/bench_startup.py measures the times; these tests check which
modules get loaded, in a fresh interpreter, so they cannot depend on the machine's speed)."""

from __future__ import annotations

import json
import subprocess
import sys

# Heavy, and not needed before a run's first task (matplotlib: plot/report; sklearn: tests and
# benchmarks; dask: --backend dask; scipy.stats: the theory runs; scipy.optimize: the rare LP).
HEAVY = ["scipy.stats", "scipy.optimize", "matplotlib", "sklearn", "dask", "distributed"]


def _loaded_after(code: str, cwd=None) -> list[str]:
    """Which of HEAVY a fresh interpreter holds after running `code`."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_cli_and_the_engine_loads_nothing_heavy():
    assert _loaded_after("import genvdis.cli, genvdis.engine, genvdis.api") == []


def test_a_whole_run_loads_neither_scipy_stats_nor_plotting_nor_sklearn(
    tmp_path, write_toy, toy_config
):
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    out = tmp_path / "out"
    run = ["run", str(config), "--splits", "3", "--out", str(out), "-q"]
    code = f"import sys\nfrom genvdis.cli import app\nsys.argv = ['genvdis', *{run!r}]\n"
    code += "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code"
    loaded = _loaded_after(code)
    assert (out / "toy" / "summary.csv").exists()
    # the LP (scipy.optimize) runs on the rare split that needs it: not asserted here
    assert [m for m in loaded if m != "scipy.optimize"] == []


def test_every_blas_the_kernels_call_runs_on_one_thread(tmp_path, write_toy, toy_config):
    """numba's np.dot goes through scipy's own OpenBLAS, loaded lazily on the first kernel call:
    it must still be limited to one thread (deterministic BLAS, no oversubscription), now that
    nothing imports scipy.linalg before the run. Checked inside the first block of a toy run."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    run = ["run", str(config), "--splits", "3", "--out", str(tmp_path / "out"), "-q"]
    code = f"""import json, sys
from threadpoolctl import threadpool_info
from genvdis import cli, engine
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
