"""Shared fixtures. Most tests make their own rows (the repo's configs/examples/toy.csv, tables
they write); the tests whose subject is a UCI file ask for `uci_dir`, which finds the files or
skips the test. Tests never reach the internet on their own.

Where the UCI files come from, first found wins:
1. GENVDIS_TEST_UCI, a folder in the archive's layout;
2. <repo>/../shared/uci (the project machines' copy);
3. GENVDIS_MIRROR, the README's offline setting (a folder or a URL): genvdis's own fetcher
   copies the files from it, sha256-checked, into pytest's cache folder;
4. the UCI archive itself, through the same fetcher, only with GENVDIS_TEST_ONLINE=1.
With none, those tests are skipped and the run's last lines say how many and what to set;
GENVDIS_REQUIRE_UCI=1 (CI) makes them fail instead, so a run cannot pass by skipping them.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from genvdis.data import fetch
from genvdis.data.uci import REGISTRY
from genvdis.errors import UserError

REPO = Path(__file__).resolve().parents[1]
TOY_CSV = REPO / "configs" / "examples" / "toy.csv"
SHARED_UCI = REPO.parent / "shared" / "uci"
TEST_UCI_ENV = "GENVDIS_TEST_UCI"
ONLINE_ENV = "GENVDIS_TEST_ONLINE"
REQUIRE_ENV = "GENVDIS_REQUIRE_UCI"
# the settings as the run started (tests set GENVDIS_MIRROR and GENVDIS_DATA for themselves)
ENVIRON = dict(os.environ)
# The toy runs are far too short to checkpoint (planning.CHECKPOINT_FROM): every run of the
# session checkpoints, fixtures' runs and child processes too, so that resuming is tested on
# them; tests/experiment/test_planning.py tests the cut itself.
os.environ["GENVDIS_CHECKPOINT_FROM"] = "0"
NEEDS_UCI = "needs the UCI files"
HOW = "set GENVDIS_MIRROR=/path/to/uci (a copy of the archive) to run {}"

# The head of every toy config: toy.csv's label column, "yes" positive. Each test adds its grid.
TOY_CONFIG = """\
name: toy
dataset: {path: toy.csv, target: label}
target: {positive: ["yes"]}
"""


# --- the UCI files -----------------------------------------------------------------------------


class _Unusable(Exception):
    """A configured source that does not provide every registered file."""


def _registered_files() -> list[fetch.RemoteFile]:
    return [f for info in REGISTRY.values() for f in (*info.files, *info.docs)]


def _complete_folder(folder: Path) -> Path:
    if not folder.is_dir():
        raise _Unusable("not a folder")
    missing = [f.path for f in _registered_files() if not (folder / f.path).is_file()]
    if missing:
        more = f" and {len(missing) - 1} more files" if len(missing) > 1 else ""
        raise _Unusable(f"lacks {missing[0]}{more}")
    return folder


def _download(mirror: str | None, cache: Callable[[], Path]) -> Path:
    """Every registered file through genvdis's fetcher (sha256-checked) into the folder
    `cache()`, which then has the archive's layout: from `mirror` (a folder or a URL), or from
    the archive itself if None."""
    folder = cache()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(fetch.MIRROR_ENV, raising=False)
        for file in _registered_files():
            fetch.fetch_file(file, mirror=mirror, cache=folder)
    return folder


def find_uci(cache: Callable[[], Path]) -> tuple[Path | None, list[str]]:
    """The first source that provides every registered file, and why the ones before it
    (those configured) did not. `cache()` is the folder for downloads."""
    sources: list[tuple[str, Callable[[], Path]]] = []
    if test_uci := ENVIRON.get(TEST_UCI_ENV):
        sources.append((f"{TEST_UCI_ENV}={test_uci}", partial(_complete_folder, Path(test_uci))))
    if SHARED_UCI.exists():
        sources.append((str(SHARED_UCI), partial(_complete_folder, SHARED_UCI)))
    if mirror := ENVIRON.get(fetch.MIRROR_ENV):
        sources.append((f"{fetch.MIRROR_ENV}={mirror}", partial(_download, mirror, cache)))
    if ENVIRON.get(ONLINE_ENV) == "1":
        sources.append((f"the UCI archive ({ONLINE_ENV}=1)", partial(_download, None, cache)))
    problems = []
    for label, provide in sources:
        try:
            return provide(), problems
        except (_Unusable, UserError) as problem:
            problems.append(f"{label}: {problem}")
    return None, problems


def _test_cache(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    """Downloads for the tests: kept in pytest's cache folder between runs (the fetcher checks
    each file's sha256 before reusing it), or a temporary folder without the cache plugin."""
    cache = getattr(config, "cache", None)
    return cache.mkdir("genvdis-uci") if cache is not None else factory.mktemp("uci")


_problems: list[str] = []  # why configured sources gave no files, for the closing lines
PROBLEMS_KEY = "genvdis_uci_problems"  # their key in pytest-xdist's workeroutput


@pytest.fixture(scope="session")
def uci_dir(request, tmp_path_factory) -> Path:
    """A folder in the UCI archive's layout holding every registered file, or a skip."""
    folder, problems = find_uci(lambda: _test_cache(request.config, tmp_path_factory))
    if folder is None:
        _problems[:] = problems
        reason = "; ".join([f"{NEEDS_UCI}; {HOW.format('it')}", *problems])
        if ENVIRON.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_ENV}=1)", pytrace=False)
        pytest.skip(reason)
    return folder


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One download cache for the whole session, so big files are copied once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _offline(monkeypatch, shared_cache) -> None:
    """Whatever the developer's settings, a test downloads nothing unless it says where from:
    the default mirror is a folder that does not exist (the archive is never tried), and the
    cache is the session's, never ./data."""
    monkeypatch.setenv(fetch.MIRROR_ENV, str(shared_cache.parent / "no-mirror"))
    monkeypatch.setenv(fetch.DATA_ENV, str(shared_cache))


@pytest.fixture
def mirror_env(monkeypatch, uci_dir, shared_cache) -> Path:
    """GENVDIS_MIRROR = the UCI files' folder (GENVDIS_DATA is the session cache, as in every
    test); returns the cache."""
    monkeypatch.setenv(fetch.MIRROR_ENV, str(uci_dir))
    return shared_cache


# --- loopback HTTP ---------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def _serving(folder: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving `folder`, quietly; yields its base URL."""
    handler = partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Path], str]]:
    """serve(folder) -> the base URL of a loopback server for `folder`, until the test ends."""
    with contextlib.ExitStack() as servers:
        yield lambda folder: servers.enter_context(_serving(folder))


@pytest.fixture(scope="session")
def http_mirror(uci_dir) -> Iterator[str]:
    """The UCI files served over HTTP on 127.0.0.1; yields the base URL."""
    with _serving(uci_dir) as url:
        yield url


@pytest.fixture
def dead_mirror() -> str:
    """A URL on a loopback port that nothing listens on: every download fails at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


# --- toy data ----------------------------------------------------------------------------------


class DaskCluster:
    """An in-process dask cluster (`dask_cluster`) and every task transition its scheduler saw,
    as (key, start, finish)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.transitions: list[tuple[str, str, str]] = []


@pytest.fixture
def dask_cluster() -> Iterator[DaskCluster]:
    """Two single-threaded dask workers, threads of this process (quick to start): with one
    core in all, joblib would run the tasks in the client itself, and a test of the cluster
    would prove nothing. Skipped without the dask extra."""
    distributed = pytest.importorskip("distributed")
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Recorder(SchedulerPlugin):
        def transition(self, key, start, finish, *args, **kwargs) -> None:  # noqa: ANN001
            seen.transitions.append((str(key), start, finish))

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:  # fmt: skip
        seen = DaskCluster(cluster.scheduler_address)
        cluster.scheduler.add_plugin(Recorder())
        yield seen


def _toy_config(*lines: str, replace: dict[str, str] | None = None) -> str:
    text = TOY_CONFIG + "".join(line + "\n" for line in lines)
    for old, new in (replace or {}).items():
        assert old in text, (old, text)
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="session")
def toy_config() -> Callable[..., str]:
    """toy_config(*lines, replace={old: new}): a config on toy.csv (the shared head plus
    `lines`, then each `old` text replaced by `new`)."""
    return _toy_config


@pytest.fixture(scope="session")
def toy_csv() -> Path:
    """configs/examples/toy.csv: 300 rows, age/income/visits numbers, region/plan text, a
    yes/no label (configs/examples/make_toy_data.py writes it)."""
    return TOY_CSV


def _write_toy(folder: Path, text: str, name: str = "config.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TOY_CSV, folder / TOY_CSV.name)
    (folder / name).write_text(text)
    return folder / name


@pytest.fixture(scope="session")
def write_toy() -> Callable[..., Path]:
    """write_toy(folder, text, name="config.yaml") -> the config's path: `text` written beside
    a copy of toy.csv, which the config's relative `path: toy.csv` then reads."""
    return _write_toy


# --- the closing lines -------------------------------------------------------------------------


def _for_want_of_uci(report: pytest.TestReport) -> bool:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return NEEDS_UCI in text


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, hand a worker's reasons to the controller, which prints the lines."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[PROBLEMS_KEY] = list(_problems)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """The controller's side of pytest_sessionfinish: the first worker's reasons stand for all
    (every worker tries the same sources)."""
    problems = getattr(node, "workeroutput", {}).get(PROBLEMS_KEY, [])
    if problems and not _problems:
        _problems[:] = problems


def pytest_terminal_summary(terminalreporter) -> None:
    """Say how many tests did not run for want of the UCI files, and what makes them run."""
    stats = terminalreporter.stats
    for outcome, verb in (("skipped", "skipped"), ("error", "failed")):
        n = sum(_for_want_of_uci(r) for r in stats.get(outcome, []))
        if n:
            they, need = ("it", "needs") if n == 1 else ("they", "need")
            verdict = f" and {REQUIRE_ENV}=1 is set" if outcome == "error" else ""
            terminalreporter.write_line(
                f"{n} test{'s' * (n != 1)} {verb}: {they} {need} the UCI files{verdict}; "
                + HOW.format("them" if n != 1 else "it")
            )
            for problem in _problems:
                terminalreporter.write_line(f"  {problem}")
