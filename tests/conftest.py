"""Shared fixtures: the offline UCI mirror (../shared/uci), served as a folder or over HTTP on
127.0.0.1, and a fresh download cache. Tests never reach the internet."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
UCI = Path(os.environ.get("GENVDIS_TEST_UCI", REPO.parent / "shared" / "uci"))


@pytest.fixture(scope="session")
def uci_dir() -> Path:
    if not (UCI / "MANIFEST.tsv").is_file():
        pytest.fail(f"the offline UCI mirror is missing: {UCI} (set GENVDIS_TEST_UCI)")
    return UCI


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One download cache for the whole session, so big files are copied once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def mirror_env(monkeypatch, uci_dir, shared_cache) -> Path:
    """GENVDIS_MIRROR = the local folder, GENVDIS_DATA = the session cache."""
    monkeypatch.setenv("GENVDIS_MIRROR", str(uci_dir))
    monkeypatch.setenv("GENVDIS_DATA", str(shared_cache))
    return shared_cache


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="session")
def http_mirror(uci_dir):
    """An HTTP server on 127.0.0.1 serving ../shared/uci; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(uci_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
