"""`genvdis init`: a commented starter config for a user's own table, or for a registered
dataset (`--dataset`: the study configs, kinds from the registry instead of inferred);
`genvdis suite`: one for each dataset of an OpenML suite file, by the same rules.

It reads the table as a run would (`sources.read_file_table`), then writes out every
choice, inferred or defaulted, with a comment saying why: each column's kind, the two classes,
what to do with missing values, an m grid that fits the table, and the choices the paper
leaves open. The rules are in docs/config.md ("Starting from your own table").
"""

from __future__ import annotations

import json
import math
import os
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml
from pydantic import Field

from genvdis._version import __version__
from genvdis.config.experiment import parse_config, validate_mapping
from genvdis.config.sections import FileDataset, OpenMLDataset, StrictModel
from genvdis.data import openml
from genvdis.data.preprocessing import keys_of, label_keys, label_text, read_numbers
from genvdis.data.sources import FEW_VALUES, OpenMLSource, infer_kind, read_file_table
from genvdis.data.uci import DatasetInfo, RawData, get_info, load_registered
from genvdis.errors import UserError
from genvdis.store.results import atomic_write_text

FIRST_M = 10  # where most of the paper's panels start their m grid
MAX_M = 3000  # adult's largest m: beyond it, runs get long and curves flat
TRAIN_SHARE = 0.75  # the largest m leaves a quarter of the rows to test on
NICE = (1, 1.5, 2, 3, 4, 6, 8)  # grid steps per decade, as in the panels' grids
MANY_MISSING = 0.10  # drop rows with missing cells unless more than this share has one
COMMENT_AT = 30
WIDTH = 99


@dataclass(frozen=True)
class Column:
    """One attribute column as the starter sees it."""

    name: str
    kind: str
    why: str
    usable: bool = True


def is_row_number(present: pd.Series) -> bool:
    """Whole numbers, a different one on each row and consecutive: a row number or an id."""
    numbers = read_numbers(present).values
    if len(numbers) <= FEW_VALUES or numbers.isna().any() or (numbers != numbers.round()).any():
        return False
    return numbers.nunique() == len(numbers) == numbers.max() - numbers.min() + 1


def _span(present: pd.Series) -> str:
    numbers = read_numbers(present).values
    return f"{numbers.min():g} to {numbers.max():g}"


def describe_columns(frame: pd.DataFrame, target: str, label: str = "") -> list[Column]:
    """Every column but the target, with its kind inferred as a run infers it
    (`sources.infer_kind`); empty and constant columns, text with a different value on
    every row (an identifier), row numbers, and numbers whose commas cannot be read for sure
    are marked unusable."""
    columns = []
    for name in frame.columns:
        if name == target:
            continue
        inferred = infer_kind(frame[name], label)
        kind, why = inferred.kind, inferred.why
        present = frame[name].dropna()
        distinct = present.nunique()
        if distinct <= 1:
            why, usable = ("empty" if distinct == 0 else "a single value") + ": left out", False
        elif inferred.numbers_unread:  # a run refuses it: never levels, one per number
            why = f"{why}: left out; genvdis does not guess, write the numbers plainly to use it"
            usable = False
        elif why.startswith("text") and distinct == len(present) > FEW_VALUES:
            why, usable = f"text, a different value on each of {distinct} rows: left out", False
        elif kind == "continuous" and is_row_number(present):
            why = (
                f"whole numbers from {_span(present)}, one per row: a row "
                "number, left out (in a table sorted by class it would give the label away)"
            )
            usable = False
        else:
            usable = True
        columns.append(Column(str(name), kind, why, usable))
    if not any(c.usable for c in columns):
        raise UserError("the table has no usable attribute column besides the target")
    return columns


@dataclass(frozen=True)
class Target:
    """How the label column becomes two classes, and the rows' classes (1, 0, NaN)."""

    rule: str  # the YAML value of `target:`
    why: str
    y: pd.Series


def _threshold(numbers: pd.Series) -> Target:
    cut = numbers.median()
    y = (numbers > cut).astype(float).where(numbers.notna())
    why = (
        f"the label column holds numbers ({numbers.nunique()} distinct values): positive means "
        f"above their median, {cut:g}; give --positive LABEL to pick one value instead"
    )
    return Target('{threshold: {op: ">", value: median}}', why, y)


def choose_target(labels: pd.Series, column: str, positive: str | list[str] | None) -> Target:
    """The positive class: --positive (one label, or several that form the positive class
    together); else, for numbers with many values, above the median; else the smaller of two
    classes, or, with more, the largest (the most even one-vs-rest split). Labels are counted
    as a run compares them: '1' and '1.0' are one."""
    positives = [positive] if isinstance(positive, str) else list(positive or [])
    positive = positives or None
    numbers = read_numbers(labels).values
    many = labels.dropna().nunique() > FEW_VALUES
    if positive is None and many and numbers.notna().sum() == labels.notna().sum():
        return _threshold(numbers)
    text = label_text(labels)
    keys = label_keys(text)
    spellings = {key: sorted(set(text[keys == key])) for key in keys.dropna().unique()}
    sizes = {spellings[key][0]: int(n) for key, n in keys.value_counts().items()}
    counts = pd.Series(sizes, dtype=int).sort_index()  # each label by its first spelling
    also = {group[0]: group[1:] for group in spellings.values() if len(group) > 1}
    listed = ", ".join(
        f"{json.dumps(str(k))}{_also(also.get(k))} {v}" for k, v in list(counts.items())[:12]
    )
    listed += ", ..." if len(counts) > 12 else ""
    if len(counts) < 2:
        found = f": {listed} rows" if listed else ""
        raise UserError(
            f"--target: column '{column}' needs two classes, it has {len(counts)}{found}"
        )
    present = set(keys.dropna().unique())
    for label, key in zip(positives, keys_of(positives, text, keys), strict=True):
        if key not in present:
            raise UserError(f"--positive: '{label}' is not a label in column '{column}' ({listed})")
    if positive is None:
        by_size = counts.sort_values(kind="stable")
        two = len(counts) == 2
        positives = [str(by_size.index[0] if two else by_size.index[-1])]
        why = "the smaller class" if two else "the largest class, against all the others"
    else:
        why = "chosen with --positive"
    chosen = keys_of(positives, text, keys)
    if len(set(chosen)) == len(counts):
        raise UserError(f"--positive: every label of column '{column}' is positive ({listed})")
    y = keys.isin(chosen).astype(float).where(keys.notna())
    named = ", ".join(json.dumps(p) for p in positives)
    why = f"classes (rows): {listed}. Positive: {named}, {why}; " + (
        "every other label is negative"
        if len(counts) > len(positives) + 1
        else "the other is negative"
    )
    return Target(f"{{positive: [{named}]}}", why, y)


def _also(spellings: list[str] | None) -> str:
    """Other spellings of a label's number, as a run counts them with it."""
    return f" (with {', '.join(json.dumps(s) for s in spellings)})" if spellings else ""


def choose_missing(
    frame: pd.DataFrame,
    columns: list[Column],
    labelled: pd.Series,
    tokens: str = "'?', '', 'NA' or 'nan'",
):
    """(policy, reason, rows kept): drop rows with a missing cell unless that loses more than
    MANY_MISSING of them; then missing discrete values become a value of their own if only
    discrete columns have any, else they are imputed. `tokens`: how the file writes one."""
    used = [c.name for c in columns if c.usable]
    gaps = frame.loc[labelled, used].isna()
    share = gaps.any(axis=1).mean()
    rows = f"{int(gaps.any(axis=1).sum())} of {int(labelled.sum())} labelled rows"
    if share <= MANY_MISSING:
        keep = labelled & frame[used].notna().all(axis=1)
        why = f"{rows} have a missing cell ({tokens}); a row with one is dropped"
        return "drop", why, keep
    continuous = [c.name for c in columns if c.usable and c.kind == "continuous"]
    if not gaps[continuous].any().any():
        why = f"{rows} have a missing cell, all in discrete columns: too many to drop, so "
        return "category", why + "a missing value is a value of its own, '?'", labelled
    why = f"{rows} have a missing cell: too many to drop, so they are filled in with the "
    return "impute", why + "column's mean (continuous) or most frequent value", labelled


def _tests_every_class(m: int, n: int, smaller: int) -> bool:
    """Whether a stratified training set of m rows leaves each class a test row, whichever
    class is the positive one (`splits.check_size`, the run's own check)."""
    from genvdis.experiment import (
        splits,  # here: it loads numba, which the rest of init does not need
    )

    try:
        for counts in ((n - smaller, smaller), (smaller, n - smaller)):
            splits.check_size(m, counts, "rest")
    except UserError:
        return False
    return True


def size_grid(n: int, smaller: int) -> list[int]:
    """Training-set sizes m: from FIRST_M (fewer on small tables; at least n / smaller, so
    a stratified training set holds one example of the smaller class on average) to
    TRAIN_SHARE of the rows (at most MAX_M), at the panels' 1-1.5-2-3-4-6-8 steps."""
    top = min(int(TRAIN_SHARE * n), MAX_M)
    while top > 2 and not _tests_every_class(top, n, smaller):
        top -= 1  # a stratified m that takes all of the smaller class leaves none to test on
    bottom = max(math.ceil(n / max(smaller, 1)), min(FIRST_M, top // 8), 2)
    if smaller < 2 or top < bottom:
        raise UserError(
            f"{n} usable rows, {smaller} of them in the smaller class, are too few for a "
            "learning curve: it needs room for several training-set sizes and a test set"
        )
    steps = {round(s * 10**k) for k in range(5) for s in NICE}
    inner = sorted(m for m in steps if bottom < m and m * 1.15 < top)
    return [bottom, *inner, top] if top > bottom else [top]


def _labelled_grid(y: pd.Series) -> tuple[int, int, list[int]]:
    """(rows, rows of the smaller class, m grid) of the rows a run keeps, `y` their 0/1 labels."""
    n = len(y)
    smaller = int(min(y.sum(), n - y.sum()))
    return n, smaller, size_grid(n, smaller)


def _commented(code: str, comment: str = "", at: int = COMMENT_AT) -> list[str]:
    """`code`, then `comment` wrapped into a column from `at` on."""
    if not comment:
        return [code]
    parts = [
        " " * at + f"# {p}" for p in textwrap.wrap(comment, WIDTH - at - 2, break_on_hyphens=False)
    ]
    if len(code) >= at:  # a long value: the comment goes below it
        return [code, *parts]
    return [code.ljust(at) + parts[0][at:], *parts[1:]]


def _note(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(text, WIDTH - 2, break_on_hyphens=False)]


def _key(name: str) -> str:
    """A YAML mapping key: bare when plainly a name, else quoted."""
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name)
    special = name.lower() in {"yes", "no", "true", "false", "on", "off", "null", "y", "n"}
    return name if plain and not special else json.dumps(name)


def _dataset_lines(table: Path, data_path: str, target: str, columns: list[Column]) -> list[str]:
    sep = "tab-separated" if table.suffix.lower() in {".tsv", ".tab"} else "comma-separated"
    lines = ["dataset:"]
    lines += _commented(
        f"  path: {json.dumps(data_path)}", f"read from this config's folder; {sep}"
    )
    lines += _commented(f"  target: {json.dumps(target)}", "the label column")
    lines += _commented(
        "  kinds:",
        "each column's kind, as a run infers it: text is discrete, and so are numbers with "
        f"at most {FEW_VALUES} distinct values; other numbers are continuous. Written out so "
        "that you can change it",
    )
    codes = [f"    {_key(c.name)}: {c.kind}" for c in columns]
    at = max(COMMENT_AT, *(len(code) + 1 for code in codes))  # one column for all the kinds
    at = at if at <= WIDTH - 40 else COMMENT_AT
    pairs = zip(codes, columns, strict=True)
    return lines + [line for code, c in pairs for line in _commented(code, c.why, at)]


def _attribute_lines(columns: list[Column]) -> list[str]:
    if all(c.usable for c in columns):
        return _commented("attributes: all", "every column but the label")
    kept = json.dumps([c.name for c in columns if c.usable])
    left = ", ".join(c.name for c in columns if not c.usable)
    return [*_note(f"every column but the label, except {left} (see kinds)"), f"attributes: {kept}"]


def _protocol_lines(sizes: list[int], n: int, smaller: int, continuous: bool = True) -> list[str]:
    full = min(int(TRAIN_SHARE * n), MAX_M) > sizes[-1]
    lower = "; lower, so that every test set holds the smaller class" if full else ""
    grid = (
        f"m grid: {n} usable rows, {smaller} in the smaller class. From {sizes[0]} (most of the "
        f"paper's panels start at {FIRST_M}; at least n / smaller class, {math.ceil(n / smaller)}, "
        "so that a training set holds one example of the smaller class on average) to "
        f"{sizes[-1]}, {int(TRAIN_SHARE * 100)}% of the rows (at most {MAX_M}{lower}), leaving "
        f"{n - sizes[-1]} to test on. The paper does not state its grids."
    )
    scaling = (
        [
            "preprocessing:",
            *_commented(
                "  continuous: rescale",
                "continuous columns to [0, 1] with the table's min "
                "and max, as in the paper; or discretize (bins: 5)",
            ),
        ]
        if continuous
        else []
    )
    return [
        *scaling,
        "models:",
        *_commented("  - naive_bayes", "Gaussian with a variance shared by the classes on "
                    "continuous columns, Laplace-smoothed counts (l = 1) on discrete ones"),
        "  - name: logistic_regression",
        *_commented("    separable: sample", "on a linearly separable training set the maximum "
                    "likelihood does not exist: sample draws a random separating hyperplane, "
                    "as the paper did; max_margin and ridge are the alternatives "
                    "(docs/separable.md)"),
        *_note(grid),
        f"sizes: {json.dumps(sizes)}",
        *_commented("splits: 1000", "random splits per m, as in the paper (--splits 100 for a "
                    "first look)"),
        *_commented("split: stratified", "training sets keep the class shares (at least one of "
                    "each); or random"),
        *_commented("test: rest", "test on every row outside the training set"),
        *_commented("seed: 0", "split s at size m is a function of (seed, m, s)"),
    ]  # fmt: skip


def config_name(table: Path) -> str:
    """The config's `name` (its results folder) from the file's name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", table.stem).strip("-._") or "own-data"


def _relative(table: Path, folder: Path) -> str:
    """The table's path as seen from the config's folder (runs read it from there)."""
    try:
        return Path(os.path.relpath(table.resolve(), folder.resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return table.resolve().as_posix()


def starter_text(table: Path, target: str, positive: str | list[str] | None, output: Path) -> str:
    """The commented config for `table`, to be written at `output`; validated before return."""
    frame, _ = read_file_table(FileDataset(path=str(table), target=target))
    chosen = choose_target(frame[target], target, positive)  # first: the more basic problem
    columns = describe_columns(frame, target, table.name)
    missing, missing_why, keep = choose_missing(frame, columns, chosen.y.notna())
    n, smaller, sizes = _labelled_grid(chosen.y[keep])
    header = (
        f"A starter config for {table.name}, written by `genvdis init` (genvdis {__version__}): "
        "Ng & Jordan's protocol on your table. Each value was inferred from the file or is a "
        "default, and its comment says which and why. Check them, edit freely (docs/config.md "
        "has every key), then:"
    )
    lines = [
        *_note(header),
        f"#   genvdis validate {output.as_posix()}",
        f"#   genvdis run {output.as_posix()}",
        *_commented(f"name: {config_name(table)}", "the results folder: results/<name>/"),
        *_commented(f"title: {json.dumps(table.name)}", "the figure's title"),
        *_dataset_lines(table, _relative(table, output.parent), target, columns),
        *_attribute_lines(columns),
        *_note(chosen.why),
        f"target: {chosen.rule}",
        *_commented(f"missing: {missing}", missing_why),
        *_protocol_lines(sizes, n, smaller),
    ]
    text = "\n".join(lines) + "\n"
    parse_config(yaml.safe_load(text), str(output))  # a starter that does not validate is a bug
    return text


# --- a registered dataset: the study configs (docs/datasets.md, "Study datasets") ---


@dataclass(frozen=True)
class DatasetChoices:
    """What `init --dataset` chooses for a registered dataset, by the same rules as for a
    table: the attributes (kinds from the registry), target, missing rule and m grid."""

    info: DatasetInfo
    rows: int
    columns: list[Column]
    target: Target
    missing: str
    missing_why: str
    n: int
    smaller: int
    sizes: list[int]


def registered_columns(raw: RawData, name: str) -> list[Column]:
    """The registry's attributes with the kinds its `.names` file gives (never inferred);
    only an empty or single-valued column is left out, as for a table."""
    columns = []
    for column, kind in raw.attributes.items():
        distinct = raw.frame[column].dropna().nunique()
        if distinct <= 1:
            why = ("empty" if distinct == 0 else "a single value") + ": left out"
            columns.append(Column(column, kind, why, usable=False))
        else:
            columns.append(Column(column, kind, "as registered"))
    if not any(c.usable for c in columns):
        raise UserError(f"dataset '{name}': no usable attribute besides the target")
    return columns


def dataset_choices(
    name: str,
    positive: str | list[str] | None = None,
    *,
    attributes: list[str] | None = None,
    mirror: str | None = None,
) -> DatasetChoices:
    """The rules of `genvdis init` applied to the registered dataset `name` (read through
    the cache or the mirror, checked against its sha256); `attributes`, a subset of the
    registered ones, when a config leaves some out (the rules then apply to the rest)."""
    info = get_info(name)
    raw = load_registered(name, mirror=mirror)
    if attributes is not None:
        kept = set(attributes)
        raw.attributes = {a: k for a, k in raw.attributes.items() if a in kept}
    chosen = choose_target(raw.frame[raw.target], raw.target, positive)
    columns = registered_columns(raw, name)
    missing, missing_why, keep = choose_missing(raw.frame, columns, chosen.y.notna(), "'?'")
    n, smaller, sizes = _labelled_grid(chosen.y[keep])
    return DatasetChoices(
        info, len(raw.frame), columns, chosen, missing, missing_why, n, smaller, sizes
    )


def _kinds_note(columns: list[Column]) -> str:
    parts = []
    for kind in ("continuous", "discrete"):
        names = [c.name for c in columns if c.usable and c.kind == kind]
        if names:
            parts.append(f"{len(names)} {kind} ({', '.join(names)})")
    return " and ".join(parts)


def _registered_attribute_lines(columns: list[Column]) -> list[str]:
    kinds = {c.kind for c in columns if c.usable}
    value = kinds.pop() if len(kinds) == 1 else "all"
    note = f"kinds from the registry (the dataset's .names file): {_kinds_note(columns)}"
    left = [c for c in columns if not c.usable]
    if left:
        note += "; left out: " + ", ".join(f"{c.name} ({c.why})" for c in left)
        value = json.dumps([c.name for c in columns if c.usable])
    return [*_note(note), *_flow(f"attributes: {value}")]


def _flow(line: str) -> list[str]:
    """A YAML line with a long flow list, wrapped (the list's items go on indented lines)."""
    return textwrap.wrap(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False) or [line]


def dataset_starter_text(
    name: str, positive: str | list[str] | None, output: Path, *, mirror: str | None = None
) -> str:
    """The commented study config for the registered dataset `name`; validated before return."""
    chosen = dataset_choices(name, positive, mirror=mirror)
    info = chosen.info
    files = " + ".join(f.path.rsplit("/", 1)[-1] for f in info.files)
    header = (
        f"Study config for {name}, written by `genvdis init --dataset {name}` (genvdis "
        f'{__version__}) by the rules of docs/datasets.md ("Study datasets"): Ng & Jordan\'s '
        "protocol on a registered UCI dataset. Each comment says why; a comment that begins "
        "with the word judgement marks a choice that departs from the rules, and says why."
    )
    lines = [
        *_note(header),
        *_commented(f"name: {name}", "the results folder: results/<name>/"),
        *_commented(f"title: {json.dumps(name)}", "the figure's title"),
        *_commented(f"dataset: {name}", f"{info.description}; UCI {files}, {chosen.rows} rows"),
        *_registered_attribute_lines(chosen.columns),
        *_note(chosen.target.why),
        f"target: {chosen.target.rule}",
        *_commented(f"missing: {chosen.missing}", chosen.missing_why),
        *_protocol_lines(
            chosen.sizes,
            chosen.n,
            chosen.smaller,
            any(c.usable and c.kind == "continuous" for c in chosen.columns),
        ),
    ]
    text = "\n".join(lines) + "\n"
    parse_config(yaml.safe_load(text), str(output))  # a starter that does not validate is a bug
    return text


def write_dataset_starter(
    name: str,
    *,
    positive: str | list[str] | None = None,
    output: str | Path | None = None,
    force: bool = False,
    mirror: str | None = None,
) -> Path:
    """Write the study config for the registered dataset `name` (default: ./<name>.yaml)."""
    output = Path(output) if output is not None else Path(f"{name}.yaml")
    _check_output(output, force)
    _write(output, dataset_starter_text(name, positive, output, mirror=mirror))
    return output


def _check_output(output: Path, force: bool) -> None:
    """A config file's path that is no folder, and no file already there unless `force`."""
    if output.is_dir():
        raise UserError(f"--output: {output} is a folder; give the config file's path")
    if output.exists() and not force:
        raise UserError(f"{output}: already exists (--force overwrites it)")


def _write(output: Path, text: str) -> None:
    try:
        atomic_write_text(output, text)
    except OSError as error:  # a read-only folder, a file where a folder should be
        where = f" ({error.filename})" if error.filename else ""
        raise UserError(
            f"--output: cannot write {output}: {error.strerror or error}{where}"
        ) from None


def write_starter(
    table: str | Path,
    target: str,
    *,
    positive: str | list[str] | None = None,
    output: str | Path | None = None,
    force: bool = False,
) -> Path:
    """Write the starter config for `table` (default: ./<file name>.yaml) and return its path;
    an existing file is kept unless `force`."""
    table = Path(table)
    output = Path(output) if output is not None else Path(f"{config_name(table)}.yaml")
    if output.exists() and output.resolve() == table.resolve():
        raise UserError(f"--output: {output} is the table itself")
    _check_output(output, force)
    _write(output, starter_text(table, target, positive, output))
    return output


def write_init(
    table: str | Path | None,
    target: str | None,
    *,
    dataset: str | None = None,
    positive: str | list[str] | None = None,
    output: str | Path | None = None,
    force: bool = False,
    mirror: str | None = None,
) -> Path:
    """`genvdis init`: a table with its label column, or a registered dataset, never both."""
    if (table is None) == (dataset is None):
        raise UserError("init: give either a table (with --target) or --dataset NAME")
    if dataset is not None:
        if target is not None:
            raise UserError("--target: a registered dataset has its label column already")
        return write_dataset_starter(
            dataset, positive=positive, output=output, force=force, mirror=mirror
        )
    if target is None:
        raise UserError("--target: the table's label column is needed")
    if mirror is not None:
        raise UserError("--mirror: only with --dataset (a table is read where it is)")
    return write_starter(table, target, positive=positive, output=output, force=force)


# --- an OpenML suite: one config per dataset, by the rules above ----------------------------


class SuiteDataset(StrictModel):
    """One dataset of a suite file (configs/suites/): its OpenML data id, the suite's task id
    and name for it, and its recorded size (rows, attributes besides the target, rows of the
    smaller class), from which `suite_cost` estimates a run without the data."""

    data_id: int = Field(ge=1)
    task_id: int | None = Field(default=None, ge=1)
    name: str
    rows: int = Field(ge=2)
    features: int = Field(ge=1)
    minority: int = Field(ge=1)


class Suite(StrictModel):
    """A suite file: a name, the OpenML study it comes from, its datasets."""

    name: str
    study: int | None = None
    datasets: list[SuiteDataset] = Field(min_length=1)


def read_suite(path: str | Path) -> Suite:
    """A suite file, checked: errors name the file and the field, on one line."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserError(f"{path}: cannot read it: {error.strerror or error}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not YAML: {str(error).splitlines()[0]}") from None
    suite = validate_mapping(Suite, data, str(path))
    ids = [entry.data_id for entry in suite.datasets]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise UserError(f"{path}: datasets: data id {twice[0]} is listed twice")
    return suite


def suite_config_name(entry: SuiteDataset) -> str:
    """`openml-<data id>-<name>`: the config's file and results folder."""
    return f"openml-{entry.data_id}-{config_name(Path(entry.name + '.x'))}".lower()


def openml_starter_text(entry: SuiteDataset, suite: str, output: Path) -> str:
    """The commented config of one suite dataset, from its data (fetched by the OpenML
    source, or read from its cache): `genvdis init`'s rules for the classes, missing values
    and the m grid; the kinds are OpenML's own (nominal discrete, numeric continuous)."""
    spec = OpenMLDataset(openml=entry.data_id)
    raw = OpenMLSource(spec).load()
    _, version = openml.resolved(raw)
    chosen = choose_target(raw.frame[raw.target], raw.target, None)
    columns = [
        Column(name, kind, "OpenML: " + ("nominal" if kind == "discrete" else "numeric"))
        for name, kind in raw.attributes.items()
    ]
    missing, missing_why, keep = choose_missing(raw.frame, columns, chosen.y.notna())
    n, smaller, sizes = _labelled_grid(chosen.y[keep])
    counts = {kind: sum(c.kind == kind for c in columns) for kind in ("discrete", "continuous")}
    task = f", task {entry.task_id}" if entry.task_id else ""
    header = (
        f"{entry.name} (OpenML data id {entry.data_id}{task}) from the suite {suite}, written by "
        f"`genvdis suite` (genvdis {__version__}) from the data by `genvdis init`'s rules: "
        "each value's comment says why. Check them, edit freely, then:"
    )
    kinds = (
        f"every attribute but the label, with OpenML's kinds: {counts['discrete']} nominal "
        f"(discrete), {counts['continuous']} numeric (continuous); string and date columns, "
        "row ids and ignored columns are left out"
    )
    lines = [
        *_note(header),
        f"#   genvdis run {output.as_posix()}",
        *_commented(f"name: {suite_config_name(entry)}", "the results folder"),
        *_commented(f"title: {json.dumps(f'{entry.name} (OpenML {entry.data_id})')}"),
        *_commented(
            f"dataset: {{openml: {entry.data_id}}}",
            f"version {version} of '{entry.name}': a data id names one version; the label is "
            f"OpenML's default target, '{raw.target}'",
        ),
        *_commented("attributes: all", kinds),
        *_note(chosen.why),
        f"target: {chosen.rule}",
        *_commented(f"missing: {missing}", missing_why),
        *_protocol_lines(sizes, n, smaller),
    ]
    text = "\n".join(lines) + "\n"
    parse_config(yaml.safe_load(text), str(output))  # a config that does not validate is a bug
    return text


def write_suite(
    suite_file: str | Path, out: str | Path, *, force: bool = False
) -> Iterator[tuple[Path, bool]]:
    """Write one config per suite dataset into `out` (each dataset fetched once, then read
    from the cache), yielding (path, written); a config already there is kept unless
    `force`, so an interrupted suite resumes where it stopped."""
    suite, out = read_suite(suite_file), Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out: {out} is a file; give a folder for the configs")
    for entry in suite.datasets:
        path = out / f"{suite_config_name(entry)}.yaml"
        if path.exists() and not force:
            yield path, False
            continue
        text = openml_starter_text(entry, suite.name, path)
        try:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
        except OSError as error:
            raise UserError(f"--out: cannot write {path}: {error.strerror or error}") from None
        yield path, True


@dataclass(frozen=True)
class SuiteCost:
    """A suite dataset's run as `genvdis init`'s grid would make it, and its estimated CPU
    seconds (`planning.Workload`) with naive Bayes and logistic regression."""

    entry: SuiteDataset
    sizes: list[int]
    cpu_seconds: float


def suite_cost(suite: Suite, splits: int = 1000) -> list[SuiteCost]:
    """Each dataset's estimate from the suite's recorded sizes alone (no data, no network):
    the m grid from its rows and smaller class, the design width taken as its attributes plus
    the intercept, a lower bound where attributes are nominal (each level is a column)."""
    from genvdis.experiment import planning

    costs = []
    for entry in suite.datasets:
        sizes = size_grid(entry.rows, entry.minority)
        plan = planning.plan_tasks(sizes, splits, None, entry.features + 1, entry.rows)
        models = ["naive_bayes", "logistic_regression"]
        work = planning.Workload(plan, entry.features + 1, entry.rows, models)
        costs.append(SuiteCost(entry, sizes, work.cpu_seconds()))
    return costs
