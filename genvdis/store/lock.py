"""One run at a time in a folder: an OS lock on `<folder>/.lock`.

Two runs writing one run folder corrupt it (one deletes the checkpoints the other is still
reading, then overwrites complete CSVs with a fragment). So a run holds `fcntl.flock` on a lock
file inside its folder for as long as it reads or writes there. The kernel releases the lock
when the process ends, however it ends (kill -9 included), so a lock is never stale; the file
only says who holds it (pid, host, since when), for the message a second run prints.

The lock file is removed on release. A run waiting on a removed file would hold a lock on
nothing, so after locking, a run checks that the path still names the file it locked, and
starts over if not.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from genvdis.errors import UserError

log = logging.getLogger(__name__)

LOCK = ".lock"


@contextlib.contextmanager
def hold(folder: Path, wait: bool = False, name: str = LOCK) -> Iterator[None]:
    """Hold `folder` (created if missing) for the block. If another process holds it: wait
    for it with `wait`, else a UserError naming the holder. Folders this call created are
    removed on the way out if they are still empty (a run refused early leaves nothing).
    `name`: the lock file's, for a lock on one file of the folder (sensitivity.csv's update)
    rather than on the folder's run."""
    created = _missing_parents(folder)
    try:
        fd = _acquire(folder, wait, name)
    except OSError as error:  # cannot create the folder or the lock file
        _remove_empty(created)
        problem = (error.strerror or str(error)).lower()
        raise UserError(f"cannot lock {folder}: {problem}") from None
    except BaseException:
        _remove_empty(created)
        raise
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            (folder / name).unlink()
        os.close(fd)
        _remove_empty(created)


def holder(folder: Path, name: str = LOCK) -> str:
    """Who holds the folder, as the lock file says: 'pid 123 on host, since ...'."""
    try:
        text = (folder / name).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    return text or "a process that has not yet said who it is"


def in_use(folder: Path) -> bool:
    """Whether a run holds `folder` now; creates nothing and waits for nothing (a shared lock
    taken and given back at once: a run starting in that instant would be told the folder is
    in use, and rerun)."""
    try:
        fd = os.open(folder / LOCK, os.O_RDONLY)
    except OSError:  # no lock file: no run, or one that ended
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _acquire(folder: Path, wait: bool, name: str) -> int:
    """The descriptor of the locked lock file, once the path still names it."""
    path = folder / name
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:  # the folder was removed in between: start over
            continue
        try:
            _lock(fd, folder, wait, name)
            if _still_named(fd, path):
                _sign(fd)
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # locked a file its holder removed on release: lock the new one


def _lock(fd: int, folder: Path, wait: bool, name: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    who = holder(folder, name)
    if not wait:
        raise UserError(
            f"{folder} is in use by another genvdis run ({who}); wait for it to finish, "
            "or add --wait to start when it does"
        )
    log.info("%s: waiting for another genvdis run to finish (%s)", folder, who)
    fcntl.flock(fd, fcntl.LOCK_EX)


def _still_named(fd: int, path: Path) -> bool:
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)


def _sign(fd: int) -> None:
    since = time.strftime("%Y-%m-%d %H:%M:%S %z")
    text = f"pid {os.getpid()} on {socket.gethostname()}, since {since}\n".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)


def _missing_parents(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing = []
    for path in [folder, *folder.parents]:
        if path.exists():
            break
        missing.append(path)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    for path in folders:
        try:
            path.rmdir()
        except OSError:  # not empty (another run's folder, or results), or gone
            return
