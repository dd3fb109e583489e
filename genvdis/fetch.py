"""Checksummed downloads into the data cache, from the UCI archive or a mirror.

pooch does the hard part: it streams to a temporary file, checks the sha256, and only then moves
the file into the cache, so a corrupted or truncated download is never kept. genvdis adds the
UCI layout (one archive path per file), several source addresses per file (pima and housing
have been withdrawn from the UCI site), and a mirror that may be a URL or a local folder.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pooch

from genvdis.errors import UserError

UCI_BASE = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
MIRROR_ENV = "GENVDIS_MIRROR"
DATA_ENV = "GENVDIS_DATA"

pooch.get_logger().setLevel(logging.WARNING)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteFile:
    """One archive file: its path under the UCI base, its sha256 and size in bytes."""

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


def _copy_local(url: str, output_file: str, _pooch: object) -> None:
    """A pooch downloader for a mirror that is a local folder."""
    source = Path(url)
    if not source.is_file():
        raise FileNotFoundError(f"not in the local mirror: {source}")
    shutil.copyfile(source, output_file)


def fetch_file(file: RemoteFile, *, mirror: str | None = None, cache: Path | None = None) -> Path:
    """Return the cached, verified path of `file`, downloading it first if needed."""
    urls = source_urls(file, mirror_base(mirror))
    return _retrieve(urls, file.sha256, data_dir(cache) / file.path, file.path)


def fetch_url(url: str, sha256: str, *, cache: Path | None = None) -> Path:
    """A user's file at `url` (or a local path), pinned by its sha256, cached under user/."""
    name = urlparse(url).path.rstrip("/").rsplit("/", 1)[-1] or "data"
    target = data_dir(cache) / "user" / sha256[:16] / name
    return _retrieve([url], sha256.lower(), target, url)


def _retrieve(urls: list[str], sha256: str, target: Path, label: str) -> Path:
    """Try each address in turn; pooch verifies the sha256 before the file enters the cache."""
    if target.is_file() and pooch.file_hash(str(target)) == sha256:
        return target
    failures: list[str] = []
    for url in urls:
        local = not _is_url(url)
        downloader = _copy_local if local else pooch.HTTPDownloader(timeout=60)
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
                raise UserError(
                    f"{label}: checksum mismatch from {url} (expected sha256 {sha256}); "
                    "the download was not kept"
                ) from None
            failures.append(f"{url}: {error}")
        except Exception as error:  # network errors come in many types; all mean "try the next"
            failures.append(f"{url}: {type(error).__name__}")
            log.debug("download of %s failed", url, exc_info=True)
    raise UserError(
        f"{label}: could not download it and it is not in the cache {target.parent} "
        f"(tried {'; '.join(failures)}); check the network, or set {MIRROR_ENV} / --mirror"
    )
