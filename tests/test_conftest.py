"""How the tests find the UCI files (conftest.py), checked by running small pytest sessions
with a copy of conftest.py in a scratch repo: the sources are tried in their documented order,
a run without any passes and its closing lines say how many tests were skipped and what to set,
and GENVDIS_REQUIRE_UCI=1 turns those skips into failures, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from genvdis.data.uci import REGISTRY
from tests.conftest import REPO

CONFTEST = REPO / "tests" / "conftest.py"
INNER_TESTS = """\
import os
from pathlib import Path


def test_a_uci_file(uci_dir):
    if "EXPECTED_UCI" in os.environ:
        assert uci_dir == Path(os.environ["EXPECTED_UCI"])
    if "REAL_UCI" in os.environ:  # the same bytes as the real files
        path = "lenses/lenses.data"
        assert (uci_dir / path).read_bytes() == (Path(os.environ["REAL_UCI"]) / path).read_bytes()


def test_another_uci_file(uci_dir):
    assert (uci_dir / "lenses" / "lenses.data").is_file()


def test_no_uci_file():
    pass
"""
HOW = "set GENVDIS_MIRROR=/path/to/uci (a copy of the archive) to run them"


def _run_suite(root: Path, **settings: str) -> tuple[int, list[str]]:
    """pytest on a scratch repo `root/repo` holding INNER_TESTS and conftest.py, with no
    GENVDIS_* setting but `settings`; returns its exit code and output lines."""
    tests = root / "repo" / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "conftest.py").write_text(CONFTEST.read_text())
    (tests / "test_inner.py").write_text(INNER_TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENVDIS_", "PYTEST_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tests)],
        cwd=tests, env={**env, **settings}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done.returncode, done.stdout.splitlines()


def _fake_archive(folder: Path, skip: int = 0) -> Path:
    """A folder with a (wrong, empty) file at every registered path but the first `skip`."""
    files = [f for info in REGISTRY.values() for f in (*info.files, *info.docs)]
    for file in files[skip:]:
        (folder / file.path).parent.mkdir(parents=True, exist_ok=True)
        (folder / file.path).write_bytes(b"")
    return folder


@pytest.mark.slow
def test_without_uci_files_they_are_skipped_and_the_closing_lines_say_so(tmp_path):
    code, lines = _run_suite(tmp_path)
    assert code == 0, lines
    assert lines[-2:-1] == [f"2 tests skipped: they need the UCI files; {HOW}"], lines
    assert "1 passed, 2 skipped" in lines[-1]


@pytest.mark.slow
def test_require_uci_turns_the_skips_into_one_line_failures(tmp_path):
    code, lines = _run_suite(tmp_path, GENVDIS_REQUIRE_UCI="1")
    assert code == 1, lines
    assert "1 passed, 2 errors" in lines[-1]
    reason = "needs the UCI files; set GENVDIS_MIRROR=/path/to/uci"
    assert sum(line.startswith(reason) and "GENVDIS_REQUIRE_UCI=1" in line for line in lines) == 2
    assert not any("Traceback" in line or "def uci_dir" in line for line in lines), lines
    expected = "2 tests failed: they need the UCI files and GENVDIS_REQUIRE_UCI=1 is set; " + HOW
    assert expected in lines


@pytest.mark.parametrize("test_uci", ["complete", "incomplete", "absent"])
@pytest.mark.slow
def test_sources_are_tried_in_order(test_uci, tmp_path):
    """GENVDIS_TEST_UCI first, then <repo>/../shared/uci; a folder that lacks files is passed
    over. (GENVDIS_MIRROR, third, is named here too, and must not be used.)"""
    shared = _fake_archive(tmp_path / "shared" / "uci")
    settings = {"GENVDIS_MIRROR": str(tmp_path / "not-there")}
    if test_uci != "absent":
        settings["GENVDIS_TEST_UCI"] = str(tmp_path / "own")
        _fake_archive(tmp_path / "own", skip=0 if test_uci == "complete" else 1)
    expected = tmp_path / "own" if test_uci == "complete" else shared
    code, lines = _run_suite(tmp_path, EXPECTED_UCI=str(expected), **settings)
    assert code == 0 and "3 passed" in lines[-1], lines


@pytest.mark.slow
def test_each_source_that_fails_is_named_with_its_problem(tmp_path):
    """A folder that lacks files, and a GENVDIS_MIRROR serving other bytes (it goes through
    genvdis's fetcher, which checks each file's sha256): skipped, and the closing lines say
    why, source by source, in the order they were tried."""
    own = _fake_archive(tmp_path / "own", skip=3)
    mirror = _fake_archive(tmp_path / "mirror")
    code, lines = _run_suite(tmp_path, GENVDIS_TEST_UCI=str(own), GENVDIS_MIRROR=str(mirror))
    assert code == 0 and "1 passed, 2 skipped" in lines[-1], lines
    at = lines.index(f"2 tests skipped: they need the UCI files; {HOW}")
    first = REGISTRY["pima"].files[0].path  # the first registered file
    assert lines[at + 1] == f"  GENVDIS_TEST_UCI={own}: lacks {first} and 2 more files"
    assert lines[at + 2].startswith(f"  GENVDIS_MIRROR={mirror}: {first}: checksum mismatch")


@pytest.mark.slow
def test_a_mirror_url_is_downloaded_from(tmp_path, http_mirror, uci_dir):
    """GENVDIS_MIRROR as a URL (here a loopback server of the real files): the files are
    fetched into a test cache, and the tests that need them run."""
    code, lines = _run_suite(tmp_path, GENVDIS_MIRROR=http_mirror, REAL_UCI=str(uci_dir))
    assert code == 0 and "3 passed" in lines[-1], lines
