"""Which table a config's `dataset` names: a registered UCI dataset, a user's own file, a
synthetic draw, or a table scikit-learn bundles. The UCI registry and its parsers live in
`datasets`, synthetic draws in `synthetic`; a user's own file and scikit-learn's tables are
read here. `load_data` is the one place that chooses among them."""

from __future__ import annotations

import hashlib
import lzma
import re
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from genvdis.config.experiment import ExperimentConfig
from genvdis.config.sections import FileDataset, SklearnSource, SyntheticSource
from genvdis.data import uci as datasets
from genvdis.data.fetch import fetch_url, file_sha256
from genvdis.data.preprocessing import label_keys, read_numbers
from genvdis.data.uci import RawData
from genvdis.errors import UserError


def load_data(
    config: ExperimentConfig, base_dir: Path = Path("."), mirror: str | None = None
) -> datasets.RawData:
    """The raw table a config names: registered, a user's file, or synthetic."""
    source = config.dataset
    if isinstance(source, str):
        return datasets.load_registered(source, mirror=mirror)
    if isinstance(source, FileDataset):
        return load_file_dataset(source, base_dir=base_dir)
    if isinstance(source, SyntheticSource):
        from genvdis.data import synthetic

        return synthetic.load_synthetic(source.synthetic)
    if isinstance(source, SklearnSource):
        return load_sklearn(source.sklearn)
    raise UserError(f"dataset: unsupported source {source!r}")


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
        source=str(spec.url or spec.path),
        doubtful={c: kind.refused for c, kind in inferred.items() if kind.refused},
    )


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
        source=f"scikit-learn {sklearn.__version__}: sklearn.datasets.{name}()",
    )
