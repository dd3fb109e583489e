"""Where a config's table comes from: one `Source` per kind of `dataset`, chosen by
`source_of` from the `SOURCES` table (keyed by the spec's type). A source loads the raw
table, says what `validate` can check without any download, which files it reads or caches,
and where the table comes from (`data_source` in config.yaml). The registered UCI sets' files
and parsers live in `uci`, synthetic draws in `synthetic`; a user's own file (local or a URL
pinned by sha256) and scikit-learn's bundled tables are read here. docs/adding-a-data-source.md
says how to add one."""

from __future__ import annotations

import hashlib
import lzma
import re
import stat
import tarfile
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genvdis.config.experiment import ExperimentConfig
from genvdis.config.sections import FileDataset, OpenMLDataset, SklearnSource, SyntheticSource
from genvdis.data import fetch, uci
from genvdis.data.fetch import fetch_url, file_sha256
from genvdis.data.preprocessing import label_keys, read_numbers, select_attributes
from genvdis.data.uci import RawData
from genvdis.errors import UserError


class Source(ABC):
    """A config's `dataset`, as the run, `validate` and the fingerprint need it. An ABC
    rather than a `typing.Protocol`: most sources share the defaults below (nothing to check
    offline, nothing cached, nothing drawn in memory), and a source that forgets `load` or
    `provenance` fails when it is built, not halfway through a run.

    `base_dir` is the folder a relative path in the spec is read from (the config's);
    `mirror` replaces the UCI address (`fetch.mirror_base`)."""

    def __init__(self, spec: Any, base_dir: Path = Path("."), mirror: str | None = None) -> None:
        self.spec, self.base_dir, self.mirror = spec, base_dir, mirror

    @abstractmethod
    def load(self) -> RawData:
        """The raw table, each attribute's kind, the label column, and the checksums of what
        was read (`RawData.checksums`, fingerprinted: they are of the bytes read)."""

    @abstractmethod
    def provenance(self) -> str:
        """Where the table comes from, in one line: config.yaml's `data_source`
        (`RawData.source`), said without reading the table."""

    def check_offline(self, attributes: str | list[str]) -> None:
        """What `validate` can check with no network and no download (a name, attribute
        names, a local file being there): a `UserError` naming the field if not. Nothing,
        for a source whose every check needs its data (a URL, a drawn or bundled table)."""
        return None

    def at_hand(self) -> bool:
        """Whether `load` needs no download (its files cached and verified, or local), so
        `validate` may read the table to check the sizes against its classes."""
        return False

    def cache_paths(self) -> list[Path]:
        """The files under the download cache (`fetch.data_dir`) `load` reads or writes."""
        return []

    def inputs(self) -> dict[str, Path]:
        """The user's own files `load` reads, by what the config calls them: a run must not
        write over them."""
        return {}

    def drawn_shape(self) -> tuple[int, int, str] | None:
        """(rows, features, kind) of a table drawn in memory before anything runs, for the
        planner's memory check (`planning.check_synthetic`); None for a table read from files."""
        return None


class UciSource(Source):
    """A dataset registered in `uci.REGISTRY`, by name: fetched (or found in the cache or
    a mirror folder), checked against its pinned sha256s."""

    spec: str

    def load(self) -> RawData:
        return uci.load_registered(self.spec, mirror=self.mirror)

    def provenance(self) -> str:
        return uci.provenance(uci.get_info(self.spec))

    def check_offline(self, attributes: str | list[str]) -> None:
        select_attributes(uci.get_info(self.spec), attributes)  # as a run checks them

    def cache_paths(self) -> list[Path]:
        return [fetch.data_dir() / file.path for file in uci.get_info(self.spec).files]

    def at_hand(self) -> bool:
        base = fetch.mirror_base(self.mirror)
        folder = fetch._local_path(base) if base and not fetch._is_url(base) else None
        files = uci.get_info(self.spec).files
        return all(
            (cached.is_file() and file_sha256(cached) == file.sha256)
            or (folder is not None and (folder / file.path).is_file())
            for file, cached in zip(files, self.cache_paths(), strict=True)
        )


class FileSource(Source):
    """A user's own CSV/TSV: local (`LocalFileSource`) or a URL (`UrlSource`)."""

    spec: FileDataset

    def load(self) -> RawData:
        return load_file_dataset(self.spec, base_dir=self.base_dir)

    def provenance(self) -> str:
        return _file_label(self.spec)


class LocalFileSource(FileSource):
    """A user's own CSV/TSV at `dataset.path` (read from the config's folder when relative)."""

    def check_offline(self, attributes: str | list[str]) -> None:
        table_path(self.spec, self.base_dir)  # there, and a regular file, as a run checks it

    def at_hand(self) -> bool:
        return (self.base_dir / str(self.spec.path)).is_file()

    def inputs(self) -> dict[str, Path]:
        return {"its dataset.path": self.base_dir / str(self.spec.path)}


class UrlSource(FileSource):
    """A user's own CSV/TSV at `dataset.url`, pinned by `dataset.sha256`, cached once fetched."""

    def cache_paths(self) -> list[Path]:
        return [fetch.url_cache_path(str(self.spec.url), str(self.spec.sha256))]


class SklearnTableSource(Source):
    """One of scikit-learn's bundled tables, `sklearn.datasets.<load_*>()`: no download."""

    spec: SklearnSource

    def load(self) -> RawData:
        return load_sklearn(self.spec.sklearn)

    def provenance(self) -> str:
        return _sklearn_label(self.spec.sklearn)


class SyntheticTableSource(Source):
    """Rows drawn from a known distribution (`synthetic`), a pure function of the spec."""

    spec: SyntheticSource

    def load(self) -> RawData:
        from genvdis.data import synthetic  # numba: loaded only where data are drawn

        return synthetic.load_synthetic(self.spec.synthetic)

    def provenance(self) -> str:
        from genvdis.data import synthetic

        return synthetic.provenance(self.spec.synthetic)

    def drawn_shape(self) -> tuple[int, int, str]:
        spec = self.spec.synthetic
        return spec.n_rows, spec.n_features, spec.kind


class OpenMLSource(Source):
    """A dataset on OpenML (`openml`): fetched once through scikit-learn's `fetch_openml`,
    then read from the data folder's cache; `at_hand` when every file a load reads is there.
    `openml` (and scikit-learn with it) is imported only when a config names OpenML."""

    spec: OpenMLDataset

    def load(self) -> RawData:
        from genvdis.data import openml

        return openml.load_openml(self.spec)

    def provenance(self) -> str:
        from genvdis.data import openml

        return openml.provenance(self.spec)

    def cache_paths(self) -> list[Path]:
        from genvdis.data import openml

        return openml.cached_files(self.spec)

    def at_hand(self) -> bool:
        from genvdis.data import openml

        return openml.fully_cached(self.spec)


def _file_source(spec: FileDataset, base_dir: Path, mirror: str | None) -> Source:
    """A file dataset names exactly one of a path and a URL (`FileDataset._one_source`)."""
    kind = LocalFileSource if spec.url is None else UrlSource
    return kind(spec, base_dir, mirror)


# A config's `dataset` by its spec's type (`sections.DatasetSpec`): a registered name, a file
# (local or URL), a synthetic draw, a bundled scikit-learn table, an OpenML dataset.
SOURCES: dict[type, Callable[[Any, Path, str | None], Source]] = {
    str: UciSource,
    FileDataset: _file_source,
    SyntheticSource: SyntheticTableSource,
    SklearnSource: SklearnTableSource,
    OpenMLDataset: OpenMLSource,
}


def source_of(dataset: Any, base_dir: Path = Path("."), mirror: str | None = None) -> Source:
    """The `Source` a config's `dataset` names; a relative path in it is read from `base_dir`."""
    make = SOURCES.get(type(dataset))
    if make is None:
        raise UserError(f"dataset: unsupported source {dataset!r}")
    return make(dataset, base_dir, mirror)


def load_data(
    config: ExperimentConfig, base_dir: Path = Path("."), mirror: str | None = None
) -> RawData:
    """The raw table a config names, from its source."""
    return source_of(config.dataset, base_dir, mirror).load()


FEW_VALUES = 10  # numbers with at most this many distinct values are inferred discrete


@dataclass(frozen=True)
class Inferred:
    """An attribute column's kind as inferred (`infer_kind`), for `run` and `genvdis init`
    alike: `why` says it in init's comment; `refused`, when set, is the one-line error a run
    gives if a config uses the column with that kind not declared."""

    kind: str
    why: str
    refused: str | None = None
    numbers_unread: bool = False  # numbers written with commas genvdis does not guess at


# A number dressed in a currency sign, a percent sign, spaces between digit groups or a
# Unicode minus: read as text, such a column would be one-hot coded level by level, silently.
DRESSED_NUMBER = (
    r"\s*[-+\u2212]?\s*[$\u20ac\u00a3\u00a5]?\s*[-+\u2212]?\s*"  # signs, currency
    r"\d[\d,\s\u00a0\u202f]*(\.\d+)?\s*%?\s*"  # digits, grouped by commas or spaces; percent
)


def infer_kind(column: pd.Series, label: str = "") -> Inferred:
    """Numbers (`preprocessing.read_numbers`: '12,345.6' too) with more than FEW_VALUES
    distinct values are continuous; other numbers, and text, are discrete. Refused: numbers
    whose commas cannot be read for sure ('1,5'; only '1,500's), numbers dressed in units
    ('$1,234.50', '45%', '1 234'; `DRESSED_NUMBER`), and many numbers with some
    text cells (most often a missing token the config does not list: inferred discrete, the
    column would silently leave `attributes: continuous`, or be one-hot coded value by value)."""
    where = f"{label}: column '{column.name}'"
    present = column.dropna()
    numbers = read_numbers(column)
    if numbers.unread:
        why = (
            f"{where} {numbers.problem} (or declare it discrete in dataset.kinds, "
            f"'{column.name}': discrete, to take its cells as levels)"
        )
        return Inferred("discrete", numbers.unread, why, numbers_unread=True)
    values = numbers.values[present.index]
    count, text = values.nunique(), values.isna().to_numpy()
    if text.all() and present.nunique() > FEW_VALUES:
        dressed = present.astype(str).str.fullmatch(DRESSED_NUMBER)
        if dressed.mean() >= 0.9:  # '$1,234.50', '45%', '1 234', '−3': numbers, not levels
            cell = present[dressed].iloc[0]
            why = (
                f"{where} holds numbers written with units or signs genvdis does not strip "
                f"(first '{cell}'); write them as plain numbers to use the column as continuous, "
                f"or declare it discrete in dataset.kinds ('{column.name}': discrete) to take "
                "each cell as a level"
            )
            return Inferred("discrete", f"numbers with units, first '{cell}'", why, True)
    if text.any():
        if count <= FEW_VALUES:
            return Inferred("discrete", f"text, {present.nunique()} values")
        row, cell = present.index[text][0], present[text].iloc[0]
        why = (
            f"text, {present.nunique()} values: numbers but for text in {int(text.sum())} rows, "
            f"first '{cell}'; if it means missing, list it in dataset.missing_values and make "
            "this continuous"
        )
        return Inferred("discrete", why, (
            f"{where} holds numbers ({count} distinct) and text: '{cell}' in data row "
            f"{row + 1} ({int(text.sum())} such cells); if it means missing, list it in "
            "dataset.missing_values, else declare the column's kind in dataset.kinds "
            f"('{column.name}': discrete)"
        ))  # fmt: skip
    written = " with thousands separators" if numbers.grouped else ""
    if count > FEW_VALUES:
        return Inferred("continuous", f"numbers{written}, {count} distinct values")
    whole = "whole numbers" if (values == values.round()).all() else "numbers"
    return Inferred("discrete", f"{whole}{written}, {count} values")


# How pandas reads a file by its name's ending (pandas.io.common.extension_to_compression),
# and what fails when the file is not so: said as the user's error, not an internal one.
_COMPRESSION = (
    (".tar.gz", "a gzip-compressed tar archive"),
    (".tar.bz2", "a bzip2-compressed tar archive"),
    (".tar.xz", "an xz-compressed tar archive"),
    (".tar", "a tar archive"),
    (".gz", "gzip-compressed"),
    (".bz2", "bzip2-compressed"),
    (".xz", "xz-compressed"),
    (".zst", "zstd-compressed"),
    (".zip", "a zip archive of one file"),
)
_UNPACKING_ERRORS = (
    OSError,
    EOFError,
    ImportError,
    lzma.LZMAError,
    tarfile.TarError,
    zipfile.BadZipFile,
)


WHITESPACE = r"\s+"  # the one `sep` read as pandas reads it: any run of spaces and tabs


def _read_table(path: Path, sep: str, spec: FileDataset, label: str) -> pd.DataFrame:
    """The file as stripped text cells, rows numbered from 0, a cell that is one of the
    missing tokens once stripped NaN. The header is read as a row:
    a data row with more fields than it is then an error (pandas would take the extra
    field for an index and shift every value), and its names must be distinct once stripped
    (pandas would rename a repeated 'a' to 'a.1', and keep 'a ' and 'a' apart)."""
    # pandas reads a separator of several characters as a regular expression: '||' would
    # split between every character, '**' fail inside `re`; `sep` is the characters written,
    # but for pandas' own r'\s+' (a run of spaces and tabs, as UCI files are laid out).
    # pandas' C reader takes one byte: '¦' (two in UTF-8) goes to the Python one, as does a
    # longer separator (which it reads without a warning then)
    engine = "python" if sep != WHITESPACE and len(sep.encode()) > 1 else "c"
    sep = re.escape(sep) if len(sep) > 1 and sep != WHITESPACE else sep
    try:
        frame = pd.read_csv(
            path, sep=sep, header=None, dtype=str, na_values=spec.missing_values,
            keep_default_na=False, skipinitialspace=True, engine=engine,
        )  # fmt: skip
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "empty file"
        raise UserError(f"{label}: cannot be read as a table: {first}") from None
    except (*_UNPACKING_ERRORS, ValueError) as error:  # pandas unpacks by the file's name
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        ending, kind = next((c for c in _COMPRESSION if path.name.lower().endswith(c[0])), ("", ""))
        why = f" (a file whose name ends in {ending} is read as {kind}; rename it if it is not)"
        raise UserError(
            f"{label}: cannot be read as a table: {first}{why if kind else ''}"
        ) from None
    names = [str(i) for i in range(frame.shape[1])]
    if spec.header:
        cells = frame.iloc[0]
        names = [c.strip() if isinstance(c, str) else f"Unnamed: {i}" for i, c in enumerate(cells)]
        frame = frame.iloc[1:].reset_index(drop=True)
        twice = [name for i, name in enumerate(names) if name in names[:i]]
        if twice:
            where = ", ".join(str(i + 1) for i, name in enumerate(names) if name == twice[0])
            raise UserError(
                f"{label}: the header names column '{twice[0]}' more than once (columns {where})"
            )
    frame.columns = names
    # pandas matches the missing tokens before the spaces around a cell are stripped: match
    # them again after ('? ' is '?', a quoted ' ' is ''), or they would be values and labels
    cells = frame.apply(lambda column: column.str.strip())
    return _mask_numbers(cells.mask(cells.isin(spec.missing_values)), spec.missing_values)


def _mask_numbers(cells: pd.DataFrame, tokens: list[str]) -> pd.DataFrame:
    """A missing token that spells a number ('-999') is missing however a cell writes that
    number ('-999.0', '-999.00'), as labels and levels are compared: matched as text only,
    such a sentinel was a value (rescaling squashed the column under it), exit 0."""
    listed = pd.Series(tokens, dtype=object)
    numeric = listed[read_numbers(listed).values.notna()]
    if numeric.empty:  # the default tokens: nothing to compare
        return cells
    sentinels = set(label_keys(numeric))
    return cells.mask(cells.apply(lambda column: label_keys(column).isin(sentinels)))


def table_path(spec: FileDataset, base_dir: Path = Path(".")) -> Path:
    """The local file `dataset.path` names, read from `base_dir` (the config's folder) when
    relative: there, and a regular file. `validate` checks it so too. Only its status is
    read: a named pipe is never opened (a read would wait for a writer)."""
    path = Path(spec.path)
    path = path if path.is_absolute() else base_dir / path
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        where = "" if path == Path(spec.path) else (
            f" (looked for {path}; a relative path is read from the config's folder)"
        )  # fmt: skip
        raise UserError(f"dataset.path: {spec.path} not found{where}") from None
    except OSError as error:  # a folder on its way that cannot be searched, a loop of links
        raise UserError(f"dataset.path: {spec.path}: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise UserError(f"dataset.path: {spec.path} is a folder; give the table's file")
    if not stat.S_ISREG(mode):
        what = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device or socket"
        raise UserError(
            f"dataset.path: {spec.path} is not a regular file but {what}; give the table's file"
        )
    return path


def read_file_table(spec: FileDataset, *, base_dir: Path = Path(".")) -> tuple[pd.DataFrame, Path]:
    """A user's own CSV/TSV (local, or a URL pinned by sha256) as stripped text cells, and
    the file read: its target column and at least one other are there, `kinds` names only
    its columns. (`genvdis init` reads a table so, then infers its own kinds.)"""
    path = _file_of(spec, base_dir)
    return _read_file(spec, path), path


def _file_of(spec: FileDataset, base_dir: Path) -> Path:
    """The file a file dataset reads: the cached download of its URL (sha256-checked), or
    its path."""
    return fetch_url(spec.url, spec.sha256) if spec.url is not None else table_path(spec, base_dir)


def _read_file(spec: FileDataset, path: Path) -> pd.DataFrame:
    """`read_file_table`'s table, from `path`."""
    sep = spec.sep or ("\t" if path.suffix.lower() in {".tsv", ".tab"} else ",")
    label = spec.path or spec.url
    frame = _read_table(path, sep, spec, label)
    if spec.target not in frame.columns:
        raise UserError(
            f"{label}: target column '{spec.target}' not found "
            f"(columns: {', '.join(frame.columns[:12])}{'...' if frame.shape[1] > 12 else ''})"
        )
    if frame.shape[1] == 1:
        raise UserError(f"{label}: no attribute columns, only the target '{spec.target}'")
    unknown = sorted(set(spec.kinds) - set(frame.columns))
    if unknown:
        raise UserError(f"dataset.kinds: no column named '{unknown[0]}' in {label}")
    return frame


def load_file_dataset(spec: FileDataset, *, base_dir: Path = Path(".")) -> RawData:
    """A user's own CSV/TSV (local, or a URL pinned by sha256): label column, kinds inferred
    unless declared. The checksum (which fingerprints the run) is of the bytes read: a file
    written while it was read is refused (its sha256 before and after differ), or the run
    would carry the new file's checksum and the old file's numbers, and a rerun on the new
    file would find it "up to date"."""
    path = _file_of(spec, base_dir)
    # a URL's download was just checked against its pinned sha256: no need to hash it again
    checksum = spec.sha256.lower() if spec.url is not None else file_sha256(path)
    frame = _read_file(spec, path)
    label = spec.path or spec.url
    if file_sha256(path) != checksum:
        raise UserError(
            f"{label}: the file changed while genvdis read it; run again once it is written"
        )
    columns = [column for column in frame.columns if column != spec.target]
    inferred = {c: infer_kind(frame[c], label) for c in columns if c not in spec.kinds}
    attributes = {c: spec.kinds.get(c) or inferred[c].kind for c in columns}
    return RawData(
        frame=frame,
        attributes=attributes,
        target=spec.target,
        checksums={path.name: checksum},
        source=_file_label(spec),
        doubtful={c: kind.refused for c, kind in inferred.items() if kind.refused},
    )


def _file_label(spec: FileDataset) -> str:
    return str(spec.url or spec.path)


def _sklearn_label(name: str) -> str:
    import sklearn

    return f"scikit-learn {sklearn.__version__}: sklearn.datasets.{name}()"


def load_sklearn(name: str) -> RawData:
    """One of scikit-learn's bundled tables, `sklearn.datasets.<name>()`: its features, and
    the label twice: `target` (scikit-learn's class codes, or values) and, when the Bunch
    names its classes, `target_name`, the default label column."""
    import sklearn
    import sklearn.datasets

    where = f"dataset: sklearn.datasets.{name}"
    loader = getattr(sklearn.datasets, name, None)
    if not callable(loader):
        raise UserError(f"{where}: no such loader in scikit-learn {sklearn.__version__}")
    try:
        bunch = loader()
    except TypeError as error:
        raise UserError(f"{where}: not a bundled table ({error})") from None
    if not all(hasattr(bunch, key) for key in ("data", "target", "feature_names")):
        raise UserError(f"{where}: not a table (it gives no data, target and feature_names)")
    X, y = np.asarray(bunch.data, dtype=float), np.asarray(bunch.target)
    if y.ndim != 1 or X.ndim != 2 or len(X) != len(y):  # load_linnerud: 3 targets per row
        targets = f"{y.shape[1]} target columns" if y.ndim == 2 else f"a target of shape {y.shape}"
        raise UserError(
            f"{where}: not a table of one label per row (it gives {targets}); genvdis takes "
            "one label column: save the table as a CSV and name its target in dataset.target"
        )
    frame = pd.DataFrame(X, columns=[str(c) for c in bunch.feature_names])
    frame["target"] = y.astype(str)
    names = getattr(bunch, "target_names", None)
    if names is not None and np.issubdtype(y.dtype, np.integer):
        frame["target_name"] = np.asarray(names).astype(str)[y]
    attributes = {c: infer_kind(frame[c]).kind for c in frame.columns[: X.shape[1]]}
    digest = hashlib.sha256(np.ascontiguousarray(X).tobytes() + y.tobytes()).hexdigest()
    return RawData(
        frame=frame,
        attributes=attributes,
        target=frame.columns[-1],
        checksums={f"sklearn.datasets.{name}": digest},
        source=_sklearn_label(name),
    )


__all__ = [
    "SOURCES",
    "FileSource",
    "Inferred",
    "LocalFileSource",
    "OpenMLSource",
    "SklearnTableSource",
    "Source",
    "SyntheticTableSource",
    "UciSource",
    "UrlSource",
    "infer_kind",
    "load_data",
    "load_file_dataset",
    "load_sklearn",
    "read_file_table",
    "source_of",
    "table_path",
]
