"""What a run leaves on disk: per-split errors, a summary, the resolved config, a manifest,
and, while it works, checkpoints.

Every file is written to a temporary name and renamed into place, so a killed run never
leaves a half-written file; the results are also flushed to disk (fsync) before their rename,
so a crashed machine does not either. A finished run is committed
as one unit: errors.csv, summary.csv and config.yaml first, then `manifest.json`, which lists
each one's sha256 and the run's fingerprint (a hash of everything that determines the numbers).
A folder whose manifest is missing, damaged (not listing every one of those files), of another
fingerprint, or contradicted by a file's bytes holds no finished run of this config, whatever
else it holds; `check_files` is that check, for the engine (`verify`) and every reader
(`check_manifest`) alike. config.yaml's `compare:` may be edited after a run (it
changes none of its numbers): the manifest also lists the hash of the rest (`settings`).

Checkpoints (one CSV per block of splits at one m) live in `<out>/<name>/.checkpoints/`. Each
one's name carries its identity (m, first split, split count, fingerprint) and the sha256 of
that identity and its bytes; a checkpoint that does not verify is discarded, saying so, and
recomputed. A rerun of the same command skips the blocks already there, and a run whose
fingerprint differs throws the old checkpoints away, saying so. Checkpoints are not fsync'd
(52 fsyncs cost pima's run at 1000 splits a fifth of its time): a kill leaves them whole in
the page cache, and a power cut that tears one leaves a file whose bytes no longer match the
sha256 in its name, so it is recomputed, never trusted.

A block's checkpoint text, and its rows parsed back from that text, are made where the block
was computed (`Block.of`, on a worker): the process that runs the workers only hashes and
writes the bytes (`CheckpointStore.save`), so one client keeps more workers busy.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from genvdis.data.fetch import file_sha256
from genvdis.errors import UserError
from genvdis.store import lock
from genvdis.store._csv import csv_text

log = logging.getLogger(__name__)

ERROR_COLUMNS = ["model", "m", "split", "n_test", "errors", "error", "separable", "trajectories"]
SUMMARY_COLUMNS = ["model", "m", "n_splits", "mean", "std", "sem", "ci_low", "ci_high"]
SUMMARY_COLUMNS += ["frac_separable", "warnings"]
# estimator entries' warnings per split: a last column of errors.csv in runs that have them
WARNINGS = "warnings"
CHECKPOINTS = ".checkpoints"
MANIFEST = "manifest.json"
OUTPUTS = ("errors.csv", "summary.csv", "config.yaml")
CONFIG = "config.yaml"
# config.yaml's keys a user may edit after the run (docs/analysis.md): they change no number
EDITABLE = ("compare",)
# there while a run commits its outputs: a folder killed then holds two runs' files
COMMITTING = ".committing"


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_current_umask()  # what open() would give: mkstemp's files are 0600


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    """Write via a temporary file in the same folder, then rename: all or nothing. `durable`
    (fsync before the rename, and of the folder after it): even if the machine goes down."""
    atomic_write_bytes(path, text.encode("utf-8"), durable)


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """`atomic_write_text` for bytes (the figures)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fchmod(stream.fileno(), FILE_MODE)
            if durable:
                os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make a rename or removal in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def atomic_write_csv(path: Path, frame: pd.DataFrame) -> None:
    atomic_write_text(path, _csv(frame))


def _csv(frame: pd.DataFrame) -> str:
    return csv_text(frame)  # frame.to_csv(index=False, lineterminator="\n")'s bytes


def _sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


RESUME = "finished blocks are kept: fix this, then rerun the same command to resume"
AGAIN = "fix this, then rerun the same command"  # plot's and report's: they redo everything


@contextlib.contextmanager
def writing(folder: Path, what: str, then: str = RESUME) -> Iterator[None]:
    """Turn a failed write (disk full, quota, permissions, read-only, a folder where the file
    goes) into one line naming the folder and the problem, then `then`: what to do. What was
    written before stays, so a rerun resumes."""
    try:
        yield
    except OSError as error:
        problem = (error.strerror or str(error)).lower()
        if error.filename2:  # a rename into place: the file it could not replace
            problem = f"{Path(error.filename2).name}: {problem}"
        raise UserError(f"cannot write {what} in {folder}: {problem}; {then}") from None


def fingerprint(resolved: dict) -> str:
    """A short hash of everything that determines the numbers (config, data, version)."""
    text = json.dumps(resolved, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_output(out_dir: Path, name: str, kind: str = "run") -> Path:
    """`<out_dir>/<name>`, checking that the results folder can be a folder, and that it holds
    no results of the other `kind` ("run" or "theory") of the same name (`check_kind`)."""
    check_path(out_dir, "--out")
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out: {out_dir} is a file, not a folder")
    run_dir = out_dir / name
    check_path(run_dir, "--out")
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out: {run_dir} is a file, not a folder")
    check_kind(run_dir, kind)
    return run_dir


def check_path(path: Path, what: str) -> None:
    """A path the file system can look up: one with a name longer than it allows (or too long
    in all) is a one-line UserError naming `what` and the path, not an OSError from whatever
    touches it first."""
    too_long = any(len(os.fsencode(part)) > NAME_MAX for part in Path(path).parts)
    try:
        os.stat(path)  # what the file system says (a long path, or a stricter limit)
    except OSError as error:
        too_long = too_long or error.errno == errno.ENAMETOOLONG
    if too_long:
        raise UserError(
            f"{what}: {path}: file name too long (file systems allow names of {NAME_MAX} "
            "bytes at most); give a shorter path"
        )


NAME_MAX = 255  # bytes in a file or folder name: ext4, XFS, APFS, NTFS (in UTF-16 units)


# What only a theory's folder holds (theory.py writes them), and only a run's.
THEORY_FILES = ("sample_complexity.csv", "asymptotes.csv")
THEORY_RUN = re.compile(r"n\d+")  # `<theory>/n<n>/`, each n's run


def folder_kind(folder: Path) -> str | None:
    """ "theory" for a theory's folder (its tables, or the run of some n in it), "run" for a
    run's (its results or checkpoints), None for a folder holding neither (or none)."""
    if not folder.is_dir():
        return None
    if any((folder / name).exists() for name in THEORY_FILES) or any(
        THEORY_RUN.fullmatch(child.name) and child.is_dir() for child in folder.iterdir()
    ):
        return "theory"
    if any((folder / name).exists() for name in (*OUTPUTS, MANIFEST, CHECKPOINTS)):
        return "run"
    return None


def check_kind(folder: Path, kind: str) -> None:
    """A run and a theory of one name into one --out would write one folder: the run's
    summary.csv beside the theory's tables, its figure over the theory's, and the theory never
    up to date again. Refused, before anything runs, naming the folder and the name."""
    found = folder_kind(folder)
    if found is None or found == kind:
        return
    makers = {"run": "`genvdis run` (or sweep)", "theory": "`genvdis theory`"}
    raise UserError(
        f"{folder} holds the results of a {found} named '{folder.name}' (from {makers[found]}); "
        f"a {kind} of the same name would write into them: give one of them another name, "
        "or use another --out"
    )


# --- checkpoints -------------------------------------------------------------------------------

CHECKPOINT_NAME = re.compile(r"m(\d+)_s(\d+)_n(\d+)_([0-9a-f]{16})_([0-9a-f]{64})\.csv")


@dataclass(frozen=True, eq=False)  # a frame has no one truth value to compare by
class Block:
    """A finished block as its checkpoint holds it: the checkpoint's bytes (`data`, the CSV
    text) and the block's rows parsed back from those very bytes, as a resumed run reads them
    (`frame`), so a fresh run and a resumed one hold the same frames and write the same
    results. Made by `Block.of` in the task, on whichever worker ran it: the text and the
    parse are most of a save's CPU, and they would otherwise run in the one client."""

    splits: int
    data: bytes
    frame: pd.DataFrame

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Block:
        """The block of `frame`, the rows `run_block` returns."""
        data = _csv(frame).encode()
        return cls(int(frame["split"].nunique()), data, _parse(data))


def _parse(data: bytes) -> pd.DataFrame:
    """A checkpoint's rows from its bytes: the one parse of both a fresh block and a read one."""
    return pd.read_csv(io.StringIO(data.decode()))


class CheckpointStore:
    """Blocks of finished splits for one run, valid only under one fingerprint.

    `blocks` maps m to that m's block size (the run's plan), `n_models` is the rows a split
    has, one per model: a checkpoint must be a block of this plan, with the rows it implies.
    Verified blocks are kept in memory, parsed from the very text written to disk. With
    `on_disk` False (a run too short to be worth resuming) nothing is read or written: the
    blocks go through the same text, so the results are the same bytes."""

    def __init__(
        self,
        run_dir: Path,
        key: str,
        blocks: dict[int, int],
        n_splits: int,
        n_models: int,
        on_disk: bool = True,
    ) -> None:
        self.dir = run_dir / CHECKPOINTS
        self.key = key
        self.blocks, self.n_splits, self.n_models = blocks, n_splits, n_models
        self.on_disk = on_disk
        self.frames: dict[tuple[int, int], pd.DataFrame] = {}

    def open(self) -> int:
        """Make the folder ready; drop checkpoints of another config, and damaged ones.
        Returns the blocks kept (none when not `on_disk`)."""
        if not self.on_disk:
            return 0
        with writing(self.dir.parent, "checkpoints"):
            self._clear_other_runs()
            for stale in [*self.dir.parent.glob(".*.tmp"), *self.dir.glob(".*.tmp")]:
                stale.unlink(missing_ok=True)  # a write that a killed run left half-done
            self.dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.dir / "fingerprint", self.key + "\n", durable=False)
            for path in sorted(self.dir.glob("*.csv")):
                self._keep_if_valid(path)
        return len(self.frames)

    def _clear_other_runs(self) -> None:
        if self.dir.is_symlink() or (self.dir.exists() and not self.dir.is_dir()):
            log.warning("%s is not a folder of checkpoints: removing it", self.dir)
            self.dir.unlink()
            return
        stamp = self.dir / "fingerprint"
        if self.dir.exists():
            try:
                old = stamp.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                old = ""
            if old != self.key:
                n = len(list(self.dir.glob("*.csv")))
                log.warning(
                    "config or data changed since the last run: discarding %d checkpoint(s) in %s",
                    n,
                    self.dir,
                )
                shutil.rmtree(self.dir)

    def _keep_if_valid(self, path: Path) -> None:
        try:
            m, start, frame = self._read(path)
            if (m, start) in self.frames:
                raise _Damaged("a second checkpoint of the same block")
        except _Damaged as problem:
            log.warning("discarding damaged checkpoint %s (%s): it will be recomputed", path,
                        problem)  # fmt: skip
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            return
        self.frames[(m, start)] = frame

    def _read(self, path: Path) -> tuple[int, int, pd.DataFrame]:
        """(m, start, the block's rows) of a checkpoint that verifies; else `_Damaged`."""
        name = CHECKPOINT_NAME.fullmatch(path.name)
        if not name:
            raise _Damaged("not a checkpoint's name")
        m, start, count = (int(name[i]) for i in (1, 2, 3))
        size = self.blocks.get(m)
        if name[4] != self.key:
            raise _Damaged("made by another run")
        if size is None or start % size or start >= self.n_splits:
            raise _Damaged("not a block of this run")
        if count != min(size, self.n_splits - start):
            raise _Damaged(
                f"{count} splits, where the block has {min(size, self.n_splits - start)}"
            )
        try:
            data = path.read_bytes()
        except OSError as error:
            raise _Damaged(f"unreadable: {error.strerror}") from None
        if _sha256(self._identity(m, start, count).encode() + data) != name[5]:
            raise _Damaged("checksum mismatch")
        frame = _parse(data)
        splits = np.tile(np.arange(start, start + count), self.n_models)
        if (
            list(frame.columns) not in (ERROR_COLUMNS, [*ERROR_COLUMNS, WARNINGS])
            or len(frame) != splits.size
            or not (frame["m"] == m).all()
            or not np.array_equal(np.sort(frame["split"].to_numpy()), np.sort(splits))
        ):
            raise _Damaged("rows that are not the block's")
        return m, start, frame

    def _identity(self, m: int, start: int, count: int) -> str:
        return f"genvdis checkpoint m={m} start={start} splits={count} fingerprint={self.key}\n"

    def done(self, m: int, start: int) -> bool:
        return (m, start) in self.frames

    def save(self, m: int, start: int, block: Block) -> None:
        """Keep the block of splits from `start` at size m: its checkpoint written (when
        `on_disk`), named by its identity and the sha256 of that identity and its bytes."""
        if self.on_disk:
            count = block.splits
            digest = _sha256(self._identity(m, start, count).encode() + block.data)
            name = f"m{m:07d}_s{start:07d}_n{count}_{self.key}_{digest}.csv"
            with writing(self.dir, "a checkpoint"):
                atomic_write_bytes(self.dir / name, block.data, durable=False)  # verified when read
        self.frames[(m, start)] = block.frame

    def load_all(self) -> pd.DataFrame:
        return pd.concat([self.frames[k] for k in sorted(self.frames)], ignore_index=True)

    def remove(self) -> None:
        remove_checkpoints(self.dir.parent)


def remove_checkpoints(run_dir: Path) -> None:
    shutil.rmtree(run_dir / CHECKPOINTS, ignore_errors=True)


class _Damaged(Exception):
    """A checkpoint that does not verify; the message says why."""


# --- the finished run ------------------------------------------------------------------------


def t_quantile(p: float, dof):
    """Student's t quantile: what scipy.stats.t.ppf computes (it calls stdtrit: same bits),
    without importing scipy.stats (~1 s) or scipy.special's package (~0.28 s) on a run's path:
    stdtrit's module is loaded beside its package (genvdis._runtime.extensions)."""
    from genvdis._runtime import extensions

    return extensions.load_beside("scipy.special._ufuncs").stdtrit(dof, p)


def summarize_errors(errors: pd.DataFrame, model_order: list[str]) -> pd.DataFrame:
    """Mean error per model and m with its standard error and a t-based 95% interval."""
    grouped = errors.groupby(["model", "m"], sort=False)
    summary = grouped.agg(
        n_splits=("error", "size"),
        mean=("error", "mean"),
        std=("error", "std"),
        frac_separable=("separable", "mean"),
    ).reset_index()
    summary["std"] = summary["std"].fillna(0.0)
    summary[WARNINGS] = grouped[WARNINGS].sum().to_numpy() if WARNINGS in errors else 0
    summary["sem"] = summary["std"] / np.sqrt(summary["n_splits"])
    dof = np.maximum(summary["n_splits"].to_numpy() - 1, 1)
    half = t_quantile(0.975, dof) * summary["sem"]
    summary["ci_low"] = summary["mean"] - half
    summary["ci_high"] = summary["mean"] + half
    summary["order"] = summary["model"].map({m: i for i, m in enumerate(model_order)})
    summary = summary.sort_values(["order", "m"]).drop(columns="order")
    return summary[SUMMARY_COLUMNS].reset_index(drop=True)


def order_errors(errors: pd.DataFrame, model_order: list[str]) -> pd.DataFrame:
    order = errors["model"].map({m: i for i, m in enumerate(model_order)})
    errors = errors.assign(_order=order).sort_values(["_order", "m", "split"])
    columns = [*ERROR_COLUMNS, WARNINGS] if WARNINGS in errors else ERROR_COLUMNS
    errors = errors.drop(columns="_order")[columns].reset_index(drop=True)
    errors["separable"] = errors["separable"].astype(bool)
    return errors


def write_results(
    run_dir: Path, errors: pd.DataFrame, resolved: dict, model_order: list[str]
) -> None:
    """Commit the run: a `.committing` mark and the old manifest's removal first (from then on
    the folder holds no finished run, and its files may be two runs'), then errors.csv,
    summary.csv and config.yaml, then the new manifest, then the mark goes."""
    errors = order_errors(errors, model_order)
    texts = {
        "errors.csv": _csv(errors),
        "summary.csv": _csv(summarize_errors(errors, model_order)),
        "config.yaml": yaml.safe_dump(resolved, sort_keys=False),
    }
    manifest = {
        "fingerprint": resolved.get("fingerprint"),  # None: not written by a run (tests)
        "files": {name: _sha256(text) for name, text in texts.items()},
        SETTINGS: settings_sha256(yaml.safe_load(texts[CONFIG])),  # as a reader parses it
    }
    with writing(run_dir, "the results"):
        atomic_write_text(run_dir / COMMITTING, "")
        (run_dir / MANIFEST).unlink(missing_ok=True)
        _fsync_folder(run_dir)
        for name, text in texts.items():
            atomic_write_text(run_dir / name, text)
        atomic_write_text(run_dir / MANIFEST, json.dumps(manifest, indent=1) + "\n")
        committed(run_dir)


def committed(run_dir: Path) -> None:
    """Take away the mark of a commit under way: the folder holds one run's files."""
    (run_dir / COMMITTING).unlink(missing_ok=True)
    _fsync_folder(run_dir)


SETTINGS = "settings"  # the manifest's hash of config.yaml without its EDITABLE keys


def settings_sha256(config: Any) -> str | None:
    """A hash of a run's config.yaml (as parsed) without the keys a user may edit after the
    run; None for what is not a mapping."""
    if not isinstance(config, dict):
        return None
    kept = {key: value for key, value in config.items() if key not in EDITABLE}
    return _sha256(json.dumps(kept, sort_keys=True, default=str))


class DamagedManifest(Exception):
    """A manifest.json that cannot be trusted; the message says why."""


@dataclass(frozen=True)
class Manifest:
    """What a finished run's manifest.json says: the run's fingerprint (None: not written by a
    run) and the sha256 of each of its OUTPUTS, and of config.yaml's settings (None: a
    manifest from before they were listed, whose config.yaml must keep its very bytes)."""

    fingerprint: str | None
    files: dict[str, str]
    settings: str | None


def read_manifest(run_dir: Path) -> Manifest:
    """The folder's manifest; FileNotFoundError if it has none, `DamagedManifest` if it is not
    one a run wrote: not JSON, or not listing the sha256 of every file a run writes (a
    manifest without errors.csv's entry would leave an edited errors.csv unchecked)."""
    try:
        data = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:
        raise DamagedManifest("not readable JSON") from error
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise DamagedManifest("no list of files")
    files, made_by, settings = data["files"], data.get("fingerprint"), data.get(SETTINGS)
    unlisted = [name for name in OUTPUTS if not isinstance(files.get(name), str)]
    if unlisted:
        raise DamagedManifest(f"it does not list {unlisted[0]}")
    if not isinstance(made_by, (str, type(None))) or not isinstance(settings, (str, type(None))):
        raise DamagedManifest("its fingerprint or settings is not a hash")
    return Manifest(made_by, {name: files[name] for name in OUTPUTS}, settings)


def check_files(
    run_dir: Path, manifest: Manifest, digests: dict[str, str] | None = None
) -> dict[str, str]:
    """Each of the run's files whose bytes are not those `manifest` lists, with why:
    'missing' or 'changed'. `digests`: the sha256 of files as read already (default: of the
    files now). A config.yaml whose only change is to an EDITABLE key (compare:) is the run's."""
    digests = digests or {}
    problems = {}
    for name in OUTPUTS:
        digest = digests.get(name) or output_sha256(run_dir / name)
        if digest == manifest.files[name]:
            continue
        if digest is None:
            problems[name] = "missing"
        elif not (name == CONFIG and _settings_agree(run_dir / name, manifest.settings)):
            problems[name] = "changed"
    return problems


def _settings_agree(path: Path, settings: str | None) -> bool:
    """Whether config.yaml, edited, still holds the run's settings (all but EDITABLE keys)."""
    from genvdis.config._yaml import read_yaml

    if settings is None:
        return False
    try:
        return settings_sha256(read_yaml(path)) == settings
    except UserError:
        return False


@dataclass(frozen=True)
class Verdict:
    """What a run folder holds for one fingerprint: a finished run (`complete`), or a
    verified errors.csv the other files can be rebuilt from, and if not, why not."""

    complete: bool
    errors_ok: bool
    problem: str | None  # None: a folder with no outputs at all


def verify(run_dir: Path, key: str) -> Verdict:
    """Check the folder's manifest against `key` and every output's bytes (`check_files`)."""
    if not any((run_dir / name).exists() for name in (*OUTPUTS, MANIFEST)):
        return Verdict(False, False, None)
    try:
        manifest = read_manifest(run_dir)
    except FileNotFoundError:
        return Verdict(False, False, f"no {MANIFEST}: the last run did not finish")
    except DamagedManifest:
        return Verdict(False, False, f"{MANIFEST} is damaged")
    if manifest.fingerprint != key:
        return Verdict(False, False, "made with another config, other data or another version")
    wrong = list(check_files(run_dir, manifest))
    if not wrong:
        return Verdict(True, True, "")
    problem = ", ".join(wrong) + (" is" if len(wrong) == 1 else " are") + " missing or changed"
    return Verdict(False, "errors.csv" not in wrong, problem)


def check_manifest(path: Path, sha256: str | None = None) -> None:
    """The one check of a run's folder before any of its files is used (by plot, report, the
    explorer and the API, through genvdis.store.runfiles), as `verify` is the engine's for
    its own fingerprint: its manifest.json must list every file a run writes, and each file
    have the bytes listed (config.yaml: but for its compare:, `check_files`). A file edited
    or replaced since, a manifest edited or removed (`run` finds no finished run there, so no
    reader may use it as one), or a later run killed before its commit ended (its mark,
    `COMMITTING`: files of two runs) would put numbers or settings that are not the run's in
    a figure, a report or the API. Only errors.csv may be absent (the committed
    results keep none): nothing is read from it then. `path`: the file about to be used;
    `sha256`: of its bytes as read (default: the file's now)."""
    run_dir = path.parent
    if (run_dir / COMMITTING).exists():
        if lock.in_use(run_dir):
            raise UserError(
                f"{run_dir}: a run is writing its results now; run this command again "
                "when it has finished"
            )
        raise UserError(
            f"{run_dir}: its last run was stopped while writing its results, so its files "
            "may be of two runs; rerun that run to finish it"
        )
    manifest_path = run_dir / MANIFEST
    try:
        manifest = read_manifest(run_dir)
    except FileNotFoundError:
        raise UserError(
            f"{run_dir}: no {MANIFEST}, so no finished run (its run did not finish, or "
            "the file was removed); rerun the run"
        ) from None
    except DamagedManifest as problem:
        raise UserError(
            f"{manifest_path}: damaged ({problem}); rerun the run to rewrite it"
        ) from None
    read = {path.name: sha256} if sha256 is not None else {}
    problems = check_files(run_dir, manifest, read)
    if problems.get("errors.csv") == "missing":
        del problems["errors.csv"]
    if not problems:
        return
    if path.name in problems and output_sha256(path) == manifest.files[path.name]:
        raise UserError(  # the bytes read were not these: a rerun committed meanwhile
            f"{path}: a run wrote its folder while it was read; run this command again (once "
            "no run writes there)"
        )
    name = path.name if path.name in problems else next(iter(problems))
    why = problems[name]
    if why == "missing":
        raise UserError(
            f"{run_dir / name}: missing ({MANIFEST} lists it); rerun the run to rewrite it"
        )
    raise UserError(
        f"{run_dir / name}: changed since its run wrote it ({MANIFEST} lists other "
        "bytes); rerun the run to rewrite it"
    )


def output_sha256(path: Path) -> str | None:
    """An output file's sha256 (`fetch.file_sha256`), None where it is missing or unreadable."""
    try:
        return file_sha256(path) if path.is_file() else None
    except OSError:
        return None


def find_runs(results_dir: Path) -> list[Path]:
    """Run folders under `results_dir` (or `results_dir` itself if it is one)."""
    check_path(results_dir, "results folder")
    if not results_dir.is_dir():
        raise UserError(f"results folder not found: {results_dir}")
    if (results_dir / "summary.csv").is_file():
        return [results_dir]
    return sorted(p.parent for p in results_dir.glob("*/summary.csv"))
