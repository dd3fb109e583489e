"""Process tuning: glibc's allocator thresholds are set when a run starts, never on import (a
notebook that imports genvdis keeps its process as it was), and BLAS runs on one thread."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Records every mallopt call made through ctypes, before genvdis is imported.
SPY = """import ctypes, json
calls = []
class Spy:
    def __init__(self, lib):
        self.lib = lib
    def __getattr__(self, name):
        found = getattr(self.lib, name)
        if name != "mallopt":
            return found
        def mallopt(*args):
            calls.append(args)
            return found(*args)
        return mallopt
real = ctypes.CDLL
ctypes.CDLL = lambda *a, **k: Spy(real(*a, **k))
"""


def _mallopt_calls(code: str) -> list[list[int]]:
    done = subprocess.run(
        [sys.executable, "-c", SPY + code + "\nprint(json.dumps(calls))"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_importing_the_engine_and_the_api_leaves_the_allocator_alone():
    assert _mallopt_calls("import genvdis.experiment.engine, genvdis.api, genvdis.cli") == []


@pytest.mark.slow
def test_a_run_tunes_its_process_once(tmp_path, write_toy, toy_config):
    """Once per process however many runs: both thresholds, to glibc's keep-memory values."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    run = f"import genvdis\nfor out in 'ab':\n    genvdis.run({str(config)!r}, splits=3, "
    run += f"out={str(tmp_path)!r} + '/' + out)"
    calls = _mallopt_calls(run)
    assert calls == [[-1, 1 << 30], [-3, 32 * 2**20]]  # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
