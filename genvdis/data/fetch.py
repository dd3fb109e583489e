"""Checksummed downloads into the data cache, from the UCI archive or a mirror.

pooch does the hard part: it streams to a temporary file, checks the sha256, and only then moves
the file into the cache, so a corrupted or truncated download is never kept. genvdis adds the
UCI layout (one archive path per file), several source addresses per file (pima and housing
have been withdrawn from the UCI site), and a mirror that may be a URL or a local folder.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from genvdis.errors import UserError

UCI_BASE = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
MIRROR_ENV = "GENVDIS_MIRROR"
DATA_ENV = "GENVDIS_DATA"

# Downloads larger than this are stopped: a registered file at SIZE_FACTOR x its registered
# size, a user's URL at MAX_USER_BYTES (a wrong URL can serve anything, without end).
SIZE_FACTOR, MAX_USER_BYTES = 10, 2**30
DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
NOT_WRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}
NOT_A_FOLDER = {errno.ENOTDIR, errno.EEXIST}  # a file where the cache (or its subfolder) goes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteFile:
    """One archive file: its path under the UCI base, its sha256, its size in bytes (the
    download cap is a multiple of it) and any addresses to try after the archive, in order."""

    path: str
    sha256: str
    size: int
    other_urls: tuple[str, ...] = ()


def data_dir(override: str | Path | None = None) -> Path:
    """The download cache: `override`, else $GENVDIS_DATA, else ./data."""
    return Path(override or os.environ.get(DATA_ENV) or "data")


def mirror_base(override: str | None = None) -> str | None:
    """The mirror that replaces the UCI base: `override`, else $GENVDIS_MIRROR, else none."""
    return override or os.environ.get(MIRROR_ENV) or None


def _is_url(base: str) -> bool:
    return urlparse(base).scheme in {"http", "https", "ftp"}


def _local_path(base: str) -> Path:
    parsed = urlparse(base)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(base)


def source_urls(file: RemoteFile, mirror: str | None = None) -> list[str]:
    """Where to look for `file`, in order: the mirror alone if set, else UCI then the others."""
    if mirror:
        if _is_url(mirror):
            return [mirror.rstrip("/") + "/" + file.path]
        return [str(_local_path(mirror) / file.path)]
    return [UCI_BASE + file.path, *file.other_urls]


class TooLarge(Exception):
    """A download past its size cap (stopped there)."""


def _copy_local(limit: int):
    """A pooch downloader for a mirror that is a local folder."""

    def copy(url: str, output_file: str, _pooch: object) -> None:
        source = Path(url)
        if not source.is_file():
            raise FileNotFoundError(f"not in the local mirror: {source}")
        if source.stat().st_size > limit:
            raise TooLarge
        shutil.copyfile(source, output_file)

    return copy


def _http_download(limit: int):
    """A pooch downloader over HTTP(S) that stops past `limit` bytes (pooch's has no cap)."""

    def download(url: str, output_file: str, _pooch: object) -> None:
        import requests

        with requests.get(url, stream=True, timeout=60) as response:
            response.raise_for_status()
            if int(response.headers.get("content-length") or 0) > limit:
                raise TooLarge
            written = 0
            with open(output_file, "wb") as sink:
                for chunk in response.iter_content(chunk_size=2**16):
                    written += len(chunk)
                    if written > limit:
                        raise TooLarge
                    sink.write(chunk)

    return download


def fetch_file(file: RemoteFile, *, mirror: str | None = None, cache: Path | None = None) -> Path:
    """Return the cached, verified path of `file`, downloading it first if needed."""
    urls = source_urls(file, mirror_base(mirror))
    limit = SIZE_FACTOR * file.size
    return _retrieve(urls, file.sha256, data_dir(cache) / file.path, file.path, limit)


def fetch_url(url: str, sha256: str, *, cache: Path | None = None) -> Path:
    """A user's file at `url` (or a local path), pinned by its sha256, cached under user/."""
    target = url_cache_path(url, sha256, cache=cache)
    return _retrieve([url], sha256.lower(), target, url, MAX_USER_BYTES)


def url_cache_path(url: str, sha256: str, *, cache: Path | None = None) -> Path:
    """Where `fetch_url` keeps a user's file: under user/, in a folder of its pinned sha256."""
    name = urlparse(url).path.rstrip("/").rsplit("/", 1)[-1] or "data"
    return data_dir(cache) / "user" / sha256[:16] / name


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks (what pooch.file_hash computes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(2**20):
            digest.update(chunk)
    return digest.hexdigest()


def _retrieve(urls: list[str], sha256: str, target: Path, label: str, limit: int) -> Path:
    """Try each address in turn; pooch verifies the sha256 before the file enters the cache.
    A full disk, or a cache that cannot be written, is said as such (not a network problem).
    pooch (and through it ssl, ~60 ms) is imported only when the cache misses."""
    cached = file_sha256(target) if target.is_file() else None
    if cached == sha256:
        return target
    import pooch

    pooch.get_logger().setLevel(logging.WARNING)
    failures: list[str] = []
    for url in urls:
        local = not _is_url(url)
        downloader = _copy_local(limit) if local else _http_download(limit)
        try:
            path = pooch.retrieve(
                str(_local_path(url)) if local else url,
                known_hash=f"sha256:{sha256}",
                fname=target.name,
                path=target.parent,
                downloader=downloader,
                progressbar=False,
            )
            return Path(path)
        except ValueError as error:
            if "hash" in str(error).lower():
                raise UserError(_mismatch(label, url, sha256, str(error))) from None
            failures.append(f"{url}: {error}")
        except TooLarge:
            raise UserError(
                f"{label}: {url} serves more than {limit} bytes, the most genvdis takes for "
                "it; the download was stopped and not kept"
            ) from None
        except Exception as error:  # network errors come in many types; all mean "try the next"
            if (
                isinstance(error, OSError)
                and error.errno in DISK_FULL | NOT_WRITABLE | NOT_A_FOLDER
            ):
                raise UserError(f"{label}: {_disk_problem(error, target.parent)}") from None
            failures.append(f"{url}: {type(error).__name__}")
            log.debug("download of %s failed", url, exc_info=True)
    tried = f"tried {'; '.join(failures)}"
    if cached is not None:  # a damaged copy is not an absent one: say which, and how to mend it
        raise UserError(
            f"{label}: the cached file {target} does not match its checksum (sha256 expected "
            f"{sha256[:12]}..., found {cached[:12]}...) and a fresh copy could not be downloaded "
            f"({tried}); delete the cached file and fetch again, or set {MIRROR_ENV} / --mirror "
            "to a copy of the archive"
        )
    raise UserError(
        f"{label}: could not download it and it is not in the cache {target.parent} "
        f"({tried}); check the network, or set {MIRROR_ENV} / --mirror"
    )


def _mismatch(label: str, url: str, sha256: str, error: str) -> str:
    """One line for bytes that are not the pinned ones. The archive itself may serve other
    bytes than the copy genvdis pins (for a few files only one copy could be checked, the
    mirror's MANIFEST.tsv says which): that is said as such, so it is not mistaken for a
    damaged download, and the file is never used."""
    got = re.search(r"but got ([0-9a-fA-F]{64})", error)
    served = f", served {got.group(1)[:12]}..." if got else ""
    where = "the UCI archive's bytes" if url.startswith(UCI_BASE) else "the bytes"
    return (
        f"{label}: checksum mismatch: {where} at {url} differ from the pinned copy (sha256 "
        f"{sha256[:12]}...{served}); the download was not kept or used. Set "
        f"{MIRROR_ENV} / --mirror to a copy that holds the pinned bytes"
    )


def _disk_problem(error: OSError, folder: Path) -> str:
    if error.errno in NOT_A_FOLDER:
        return (
            f"the data cache {folder} cannot be a folder: a file is in its path; "
            f"set {DATA_ENV} to a folder (or remove the file)"
        )
    if error.errno in DISK_FULL:
        return (
            f"no space left on the disk of the data cache {folder} ({error.strerror}); "
            f"free some, or set {DATA_ENV} to a folder on another disk"
        )
    return (
        f"cannot write to the data cache {folder} ({error.strerror}); "
        f"set {DATA_ENV} to a folder you can write to"
    )
