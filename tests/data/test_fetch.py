"""Downloads through genvdis.data.fetch and genvdis.data.uci, against a loopback HTTP server or a
local folder, each test with its own empty cache. Nothing here reaches the internet. Most
mirrors serve the real lenses files (`uci_dir`: without them those tests are skipped)."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.data import fetch
from genvdis.data import uci as datasets
from genvdis.errors import UserError

LENSES = datasets.get_info("lenses").files[0]  # lenses/lenses.data, 408 bytes


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def corrupted_mirror(tmp_path, uci_dir) -> Path:
    """A folder laid out like the archive, holding lenses.data with one byte changed."""
    folder = tmp_path / "bad-mirror"
    (folder / "lenses").mkdir(parents=True)
    data = bytearray((uci_dir / LENSES.path).read_bytes())
    data[10] = ord("9") if data[10] != ord("9") else ord("8")
    (folder / LENSES.path).write_bytes(bytes(data))
    return folder


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch) -> None:
    """No GENVDIS_* settings at all here (neither the developer's nor conftest's), so that the
    defaults are what the tests see."""
    monkeypatch.delenv(fetch.MIRROR_ENV, raising=False)
    monkeypatch.delenv(fetch.DATA_ENV, raising=False)


def test_download_then_reuse_the_cache_without_network(http_mirror, dead_mirror, tmp_path):
    cache = tmp_path / "cache"
    path = fetch.fetch_file(LENSES, mirror=http_mirror, cache=cache)
    assert path == cache / LENSES.path
    assert path.stat().st_size == LENSES.size and _sha256(path) == LENSES.sha256
    stamp = path.stat().st_mtime_ns
    again = fetch.fetch_file(LENSES, mirror=dead_mirror, cache=cache)
    assert again == path and again.stat().st_mtime_ns == stamp  # not downloaded again


@pytest.mark.parametrize("over_http", [True, False], ids=["http", "folder"])
def test_corrupted_download_is_rejected_and_not_cached(
    over_http, corrupted_mirror, serve, tmp_path
):
    cache = tmp_path / "cache"
    mirror = serve(corrupted_mirror) if over_http else str(corrupted_mirror)
    with pytest.raises(UserError) as info:
        fetch.fetch_file(LENSES, mirror=mirror, cache=cache)
    message = str(info.value)
    assert LENSES.path in message and "checksum" in message and "\n" not in message
    assert not (cache / LENSES.path).exists()
    leftovers = [p for p in cache.rglob("*") if p.is_file()] if cache.exists() else []
    assert leftovers == []


def test_corrupted_cached_file_is_downloaded_again(http_mirror, tmp_path):
    cache = tmp_path / "cache"
    target = cache / LENSES.path
    target.parent.mkdir(parents=True)
    target.write_bytes(b"1 1 1 1 1 3\n")  # e.g. a truncated or hand-edited copy
    path = fetch.fetch_file(LENSES, mirror=http_mirror, cache=cache)
    assert path == target and _sha256(path) == LENSES.sha256


def test_corrupted_cached_file_offline_is_named_as_corrupted(dead_mirror, tmp_path):
    """Offline, a damaged copy in the cache was reported as "not in the cache": the message
    names the file, says its checksum does not match (both prefixes) and how to mend it."""
    target = tmp_path / "cache" / LENSES.path
    target.parent.mkdir(parents=True)
    target.write_bytes(b"1 1 1 1 1 3\n")
    with pytest.raises(UserError) as info:
        fetch.fetch_file(LENSES, mirror=dead_mirror, cache=tmp_path / "cache")
    message = str(info.value)
    assert "\n" not in message and "not in the cache" not in message, message
    assert str(target) in message and "checksum" in message, message
    assert LENSES.sha256[:12] in message and _sha256(target)[:12] in message, message
    assert "delete" in message and fetch.MIRROR_ENV in message, message
    assert target.read_bytes() == b"1 1 1 1 1 3\n"  # left for the user to look at


def test_no_network_and_no_cache_is_a_user_error(dead_mirror, tmp_path):
    with pytest.raises(UserError) as info:
        fetch.fetch_file(LENSES, mirror=dead_mirror, cache=tmp_path / "cache")
    message = str(info.value)
    assert LENSES.path in message and fetch.MIRROR_ENV in message
    assert not (tmp_path / "cache" / LENSES.path).exists()


def test_local_folder_mirror(uci_dir, tmp_path):
    for mirror in (str(uci_dir), uci_dir.as_uri()):  # a path or a file:// URL
        cache = tmp_path / mirror.replace("/", "_")
        path = fetch.fetch_file(LENSES, mirror=mirror, cache=cache)
        assert path == cache / LENSES.path and _sha256(path) == LENSES.sha256


def test_mirror_env_variable_and_data_env_variable(monkeypatch, http_mirror, tmp_path):
    monkeypatch.setenv(fetch.MIRROR_ENV, http_mirror)
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path / "env-cache"))
    (path,) = datasets.fetch_dataset("lenses")
    assert path == tmp_path / "env-cache" / LENSES.path and _sha256(path) == LENSES.sha256


def test_mirror_option_wins_over_the_env_variable(monkeypatch, http_mirror, dead_mirror, tmp_path):
    monkeypatch.setenv(fetch.MIRROR_ENV, dead_mirror)
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path))
    paths = datasets.fetch_dataset("lenses", mirror=http_mirror, docs=True)
    assert [p.name for p in paths] == ["lenses.data", "lenses.names"]
    raw = datasets.load_registered("lenses", mirror=http_mirror)
    assert len(raw.frame) == 24  # the lenses table: 24 rows


def test_source_urls_default_to_the_uci_archive():
    """Without a mirror the file comes from the UCI archive layout (not fetched here)."""
    urls = fetch.source_urls(LENSES)
    assert urls[0] == "https://archive.ics.uci.edu/ml/machine-learning-databases/lenses/lenses.data"
    assert fetch.source_urls(LENSES, "http://example.org/uci") == [
        "http://example.org/uci/lenses/lenses.data"
    ]
    assert fetch.source_urls(LENSES, "/srv/uci/") == ["/srv/uci/lenses/lenses.data"]


def test_default_cache_and_mirror_come_from_the_environment(monkeypatch, tmp_path):
    assert fetch.data_dir() == Path("data") and fetch.mirror_base() is None
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path))
    monkeypatch.setenv(fetch.MIRROR_ENV, "http://mirror.invalid/")
    assert fetch.data_dir() == tmp_path and fetch.data_dir("elsewhere") == Path("elsewhere")
    assert fetch.mirror_base() == "http://mirror.invalid/"
    assert fetch.mirror_base("/local") == "/local"


def test_other_addresses_are_tried_in_order_after_the_archive(
    monkeypatch, dead_mirror, serve, uci_dir, tmp_path
):
    """A file the archive no longer serves comes from its other addresses, in their order: the
    first that serves the registered bytes wins."""
    monkeypatch.setattr(fetch, "UCI_BASE", dead_mirror)  # the archive, unreachable
    elsewhere = serve(uci_dir)
    moved = dataclasses.replace(LENSES, other_urls=(dead_mirror + "x", elsewhere + LENSES.path))
    path = fetch.fetch_file(moved, cache=tmp_path)
    assert path == tmp_path / LENSES.path and _sha256(path) == LENSES.sha256


def test_the_archive_serving_other_bytes_than_the_pinned_copy_is_said_in_one_line(
    monkeypatch, serve, tmp_path
):
    """tic-tac-toe.data was pinned from the one copy found (MANIFEST.tsv column 5 = 1): the
    archive itself may serve other bytes. Then one line names the file and says so, and
    nothing is kept or used. No UCI files needed: the archive here is a folder of other
    bytes."""
    (tmp_path / "archive" / "tic-tac-toe").mkdir(parents=True)
    pinned = datasets.get_info("tic-tac-toe").files[0]
    (tmp_path / "archive" / pinned.path).write_bytes(b"x,x,x,o,o,b,b,b,b,positive\n")
    monkeypatch.setattr(fetch, "UCI_BASE", serve(tmp_path / "archive"))
    cache = tmp_path / "cache"
    with pytest.raises(UserError) as info:
        fetch.fetch_file(pinned, mirror=None, cache=cache)
    message = str(info.value)
    assert message.startswith(f"{pinned.path}: checksum mismatch: the UCI archive's bytes at")
    assert "differ from the pinned copy" in message and "not kept or used" in message
    served = hashlib.sha256(b"x,x,x,o,o,b,b,b,b,positive\n").hexdigest()
    assert f"sha256 {pinned.sha256[:12]}..., served {served[:12]}..." in message
    assert "\n" not in message
    assert not any(p.is_file() for p in cache.rglob("*")) if cache.exists() else True


@pytest.mark.parametrize("name", ["pima", "housing"])
def test_withdrawn_files_keep_a_copy_pinned_to_a_commit(name):
    """pima and housing are gone from the UCI site: their data file is tried there first, then
    at one public copy of the same file at a fixed commit (a branch could change its bytes);
    a mirror replaces both."""
    (file,) = datasets.get_info(name).files
    archive, copy = fetch.source_urls(file)
    assert archive == fetch.UCI_BASE + file.path
    assert re.fullmatch(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/.+", copy)
    assert copy.rsplit("/", 1)[1] == file.path.rsplit("/", 1)[1]
    assert fetch.source_urls(file, "/srv/uci") == [f"/srv/uci/{file.path}"]


# --- a data cache that is not a folder ---


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


def test_a_data_cache_that_is_a_file_is_said_so_not_blamed_on_the_network(
    tmp_path, monkeypatch, toy_csv
):
    """GENVDIS_DATA naming a file (or a file where a dataset's subfolder goes): the one line
    names the cache and the file in its path, not the network (NotADirectoryError is no
    download failure, and 'check the network' would send the user the wrong way)."""
    cache = tmp_path / "cache"
    cache.write_text("not a folder\n")
    monkeypatch.setenv("GENVDIS_DATA", str(cache))
    sha256 = fetch.file_sha256(toy_csv)
    config = tmp_path / "toy.yaml"
    config.write_text(
        f"name: toy\ndataset: {{url: {toy_csv}, sha256: {sha256}, target: label}}\n"
        'target: {positive: ["yes"]}\nsizes: [10, 20]\nsplits: 4\n'
    )
    code, stderr = _invoke("run", config, "--out", tmp_path / "out", "-q")
    folder = cache / "user" / sha256[:16]
    assert (code, stderr) == (
        2,
        f"error: {config}: {toy_csv}: the data cache {folder} cannot be a folder: a file is in "
        "its path; set GENVDIS_DATA to a folder (or remove the file)\n",
    )
