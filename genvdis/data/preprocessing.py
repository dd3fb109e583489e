"""From a raw table to the numbers the models see: attributes, labels, missing values, scaling.

Every choice here is made once for the whole dataset, before any split (as in the paper):
continuous attributes are rescaled to [0, 1] with the dataset's own min and max, and a discrete
attribute's number of values k is counted over the whole dataset, not the training split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import numpy as np
import pandas as pd

from genvdis.config.experiment import ExperimentConfig
from genvdis.config.sections import Preprocessing, TargetSpec
from genvdis.data.uci import DatasetInfo, RawData
from genvdis.errors import UserError
from genvdis.models.base import FeatureLayout

MISSING_LEVEL = "?"
# The largest continuous value accepted: its square, summed over a million rows, is still far
# from double precision's overflow (~1.8e308), so no model's sums or Hessians overflow.
MAX_VALUE = 1e100


# Numbers written with commas, which float() does not read: ',' grouping thousands (12,345.6,
# 1,234,567), or ',' as the decimal mark (1,5; 1.234,5). 1,500 fits both.
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d*),\d+")
_DOT_DECIMAL = re.compile(r"[+-]?\d*\.(?!\d{3}$)\d*")  # 3.5, not 1.500 (a grouped 1500?)


@dataclass(frozen=True)
class Numbers:
    """A column's cells read as numbers (`read_numbers`): `values` NaN where a cell is
    missing or text; `unread`, when set, which numbers cannot be read for sure, and `fix`, what
    to do (cells written with commas are then left NaN); `grouped`, whether some cells group
    thousands."""

    values: pd.Series
    unread: str | None = None
    fix: str = ""
    grouped: bool = False

    @property
    def problem(self) -> str | None:
        """Why the column's numbers are refused, after its name ("column 'x' holds ...")."""
        return f"holds {self.unread}; {self.fix}" if self.unread else None


def read_numbers(cells: pd.Series) -> Numbers:
    """Each cell as the number it spells. A cell float() reads is that number; one with
    thousands separators ('12,345.6') is read without them when the column settles that ','
    groups thousands: some cell has a decimal point ('12,345.6', '3.5') or two groups
    ('1,234,567'). A decimal comma ('1,5'), or only cells like '1,500' (1500, or 1.5 where ','
    is the decimal mark), cannot be read for sure (`unread`): refused where the numbers are
    used, never guessed."""
    values = pd.to_numeric(cells, errors="coerce").astype(float)
    failed = cells.notna() & values.isna()
    if not failed.any():
        return Numbers(values)
    text = cells[failed].astype(str)
    grouped, comma = text.str.fullmatch(_GROUPED), text.str.fullmatch(_DECIMAL_COMMA)
    if not (grouped | comma).any():  # text, as any text
        return Numbers(values)
    if (comma & ~grouped).any():
        row, cell = _first(text[comma & ~grouped])
        return Numbers(
            values,
            f"numbers written with a decimal comma ('{cell}' in data row {row})",
            "genvdis reads '.' as the decimal mark and ',' only between groups of thousands: "
            "write the numbers with '.'",
        )
    settled = text[grouped].str.contains(r"\.|,\d{3},", regex=True).any() or (
        cells[~failed].dropna().astype(str).str.fullmatch(_DOT_DECIMAL).any()
    )
    if not settled:
        row, cell = _first(text[grouped])
        return Numbers(
            values,
            f"numbers whose ',' may group thousands or mark decimals ('{cell}' in data row "
            f"{row}: {cell.replace(',', '')} or {cell.replace(',', '.')}?)",
            "no cell settles which: write the numbers without thousands separators",
        )
    values = values.copy()
    values[text[grouped].index] = pd.to_numeric(text[grouped].str.replace(",", "", regex=False))
    return Numbers(values, grouped=True)


def _first(cells: pd.Series) -> tuple[int, str]:
    """The first of some cells: its data row (1 = the first row after any header), its text."""
    return int(cells.index[0]) + 1, str(cells.iloc[0])


def label_text(labels: pd.Series) -> pd.Series:
    """Labels as stripped text (object dtype), NaN where missing."""
    return labels.astype("string").str.strip().astype(object).where(labels.notna(), np.nan)


def _number_key(text: str, value: float) -> str:
    """The key of a cell that spells the number `value`: the number written exactly, in one
    spelling ('1', '1.0', '01', '1e0', '+1' are all '1'; '-0' is '0'). Exact, not the double
    it rounds to: '9007199254740993' and '9007199254740992', or two 20-digit codes, are one
    double but two labels (they were one class, or one level)."""
    try:
        exact = Decimal(text.replace(",", ""))  # read_numbers read its commas as grouping
    except InvalidOperation:  # a spelling pandas reads and Decimal does not: its double
        return repr(value + 0.0)
    if exact.is_zero():
        return "0"
    return str(exact.normalize()) if exact.is_finite() else repr(value)


def label_keys(text: pd.Series) -> pd.Series:
    """Each label (`label_text`) as what it is: its text, or, when it spells a number, that
    number however written ('1', '1.0', '01', '1e0' are one label, keyed '1', `_number_key`);
    NaN where missing. A number's key is never a text label's (that would be a number)."""
    distinct = pd.Series(text.dropna().unique(), dtype=object)  # a few labels, many rows
    numbers = read_numbers(distinct).values
    keys = [
        cell if np.isnan(number) else _number_key(str(cell), number)
        for cell, number in zip(distinct, numbers, strict=True)
    ]
    return text.map(dict(zip(distinct, keys, strict=True)))


def keys_of(listed: list[str], text: pd.Series, keys: pd.Series) -> list[str]:
    """The keys of labels a config lists: as the column's cells of that text are keyed, else
    as the number the label spells, else its text."""
    first = text.notna() & ~text.duplicated()  # each label's first row: its key
    known = dict(zip(text[first], keys[first], strict=True))
    plain = pd.to_numeric(pd.Series(listed, dtype=object), errors="coerce")
    return [
        known.get(label, label if np.isnan(number) else _number_key(label.strip(), number))
        for label, number in zip(listed, plain, strict=True)
    ]


@dataclass
class PreparedData:
    """Model-ready data: X = [continuous in [0,1] | discrete codes], y in {0, 1}, or in
    0..K-1 for a `classes` target (class_names: each class's name, in code order)."""

    X: np.ndarray
    y: np.ndarray
    layout: FeatureLayout
    feature_names: list[str]
    level_names: dict[str, list[str]] = field(default_factory=dict)
    checksums: dict[str, str] = field(default_factory=dict)
    source: str = ""
    class_names: list[str] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def class_counts(self) -> tuple[int, ...]:
        """Rows per class, in code order: (negative, positive) for a binary target."""
        return tuple(int(c) for c in np.bincount(self.y, minlength=2))


def select_attributes(raw: RawData | DatasetInfo, attributes: str | list[str]) -> list[str]:
    """The attribute names `attributes` picks from a dataset's (its `attributes` by kind and
    its label column `target`): read data, or a registered dataset's info (`validate`)."""
    if isinstance(attributes, list):
        unknown = [a for a in attributes if a not in raw.attributes]
        if raw.target in unknown:
            raise UserError(
                f"attributes: '{raw.target}' is the dataset's label column, not an attribute"
            )
        if unknown:
            raise UserError(f"attributes: no attribute named '{unknown[0]}' in the dataset")
        return list(attributes)
    if attributes == "all":
        return list(raw.attributes)
    chosen = [name for name, kind in raw.attributes.items() if kind == attributes]
    if not chosen:
        raise UserError(f"attributes: the dataset has no {attributes} attributes")
    return chosen


def _without_target(names: list[str], target: str, attributes: str | list[str]) -> list[str]:
    """The attributes but the target column: a `target.column` that names an attribute would
    otherwise be a feature of its own label (error 0). Left out of `all` or a kind, refused
    when listed by name."""
    if target not in names:
        return names
    if isinstance(attributes, list):
        raise UserError(
            f"attributes: '{target}' is the target column (target.column); leave it out"
        )
    names = [name for name in names if name != target]
    if not names:
        kind = "" if attributes == "all" else f"{attributes} "
        raise UserError(
            f"attributes: the dataset has no {kind}attributes besides the target column '{target}'"
        )
    return names


def class_groups(labels: pd.Series, target: TargetSpec) -> list[list[str]]:
    """A `classes` target's classes in code order, each a list of labels: `all` is every label
    as its own class (the spellings of one number, '1' and '1.0', one class of both), sorted
    as numbers when every label is one, else as text."""
    if target.classes != "all":
        return target.classes
    text = label_text(labels)
    keys = label_keys(text)
    pairs = pd.DataFrame({"key": keys, "text": text}).dropna().drop_duplicates()
    spellings: dict[str, set[str]] = {}
    for key, cell in zip(pairs["key"], pairs["text"], strict=True):
        spellings.setdefault(key, set()).add(cell)
    numbers = pd.to_numeric(pd.Series(list(spellings), dtype=object), errors="coerce")
    if numbers.notna().all():  # every key a number's
        return [sorted(spellings[key]) for _, key in sorted(zip(numbers, spellings, strict=True))]
    return sorted(sorted(group) for group in spellings.values())


def _class_codes(labels: pd.Series, groups: list[list[str]]) -> pd.Series:
    """Class codes 0..K-1 (groups in order), NaN for rows in no class (dropped). A label
    matches the cells that spell it, or the same number ('1' matches '1.0')."""
    text = label_text(labels)
    keys = label_keys(text)
    listed = sorted({label for group in groups for label in group})
    unknown = _not_present(listed, keys_of(listed, text, keys), keys)
    if unknown:
        raise UserError(f"target.classes: {_absent(unknown[0])}")
    _one_class_each(
        "target.classes", [(label, i) for i, group in enumerate(groups) for label in group],
        text, keys, "so they are one label: list them in one class",
    )  # fmt: skip
    codes = pd.Series(np.nan, index=labels.index)
    for code, group in enumerate(groups):
        codes[keys.isin(keys_of(group, text, keys)).to_numpy(dtype=bool)] = float(code)
    return codes


def _one_class_each(
    field: str, listed: list[tuple[str, object]], text: pd.Series, keys: pd.Series, fix: str
) -> None:
    """Labels a config puts in different classes (label, class) that spell one number ('1'
    and '1.0'): refused, naming both, or the rows of one would silently go to the other."""
    seen: dict[str, tuple[str, object]] = {}
    for (label, where), key in zip(
        listed, keys_of([x for x, _ in listed], text, keys), strict=True
    ):
        other, there = seen.setdefault(key, (label, where))
        if there != where:
            raise UserError(f"{field}: labels '{other}' and '{label}' spell one number, {fix}")


def _not_present(listed: list[str], listed_keys: list[str], keys: pd.Series) -> list[str]:
    """The listed labels (sorted) whose key no row has."""
    present = set(keys.dropna().unique())
    return sorted(
        label for label, key in zip(listed, listed_keys, strict=True) if key not in present
    )


def _absent(label: str) -> str:
    """Why a label a config lists is in no row: YAML reads unquoted yes/no/on/off/true/false
    as a boolean, which the config's labels hold as 'True' or 'False'."""
    why = f"label '{label}' does not occur in the data"
    if label in ("True", "False"):
        why += " (YAML reads an unquoted yes, no, on, off, true or false as a boolean: quote it)"
    return why


def make_labels(labels: pd.Series, target: TargetSpec) -> pd.Series:
    """1 for positive, 0 for negative, NaN for rows that belong to neither (dropped); for a
    `classes` target, the class codes 0..K-1 (`class_groups`)."""
    if target.classes is not None:
        return _class_codes(labels, class_groups(labels, target))
    if target.threshold is not None:
        numbers = read_numbers(labels)
        if numbers.problem:
            raise UserError(
                f"target.threshold: the target column '{labels.name}' {numbers.problem}"
            )
        values = numbers.values
        if values.isna().all():
            raise UserError("target.threshold: the target column is not numeric")
        text = labels.notna() & values.isna()  # dropped as in no class, before
        if text.any():
            row = int(np.argmax(text.to_numpy()))
            raise UserError(
                f"target.threshold: the target column '{labels.name}' holds text: "
                f"'{labels.iloc[row]}' in data row {row + 1}; fix it, or list it in "
                "dataset.missing_values to treat it as missing"
            )
        rule = target.threshold
        cut = values.median() if rule.value == "median" else values.mean()
        cut = cut if isinstance(rule.value, str) else rule.value
        ops = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal}
        out = ops[rule.op](values, cut).astype(float)
        return out.where(values.notna())
    text = label_text(labels)
    keys = label_keys(text)  # compared as what they are: '1' is '1.0'
    chosen = {}
    for role, listed in (("positive", target.positive), ("negative", target.negative or [])):
        chosen[role] = keys_of(listed, text, keys)
        unknown = _not_present(listed, chosen[role], keys)
        if unknown:  # a negative label no row has would drop the rows of the one meant
            raise UserError(f"target.{role}: {_absent(unknown[0])}")
    both = [(label, "positive") for label in target.positive]
    both += [(label, "negative") for label in target.negative or []]
    _one_class_each("target", both, text, keys, "so one label: it cannot be positive and negative")
    positive = keys.isin(chosen["positive"]).to_numpy(dtype=bool)
    in_negative = keys.isin(chosen["negative"]) if target.negative else keys.notna()
    negative = in_negative.to_numpy(dtype=bool) & ~positive
    return pd.Series(np.where(positive, 1.0, np.where(negative, 0.0, np.nan)), index=labels.index)


def _to_numbers(column: pd.Series, name: str) -> pd.Series:
    """A continuous attribute's cells as finite numbers of size <= MAX_VALUE (missing: NaN).
    Each refusal names the attribute and its first bad data row (1 = the first row after
    any header)."""
    numbers = read_numbers(column)
    if numbers.problem:
        raise UserError(f"attribute '{name}' {numbers.problem}")
    values = numbers.values
    bad = column.notna() & ~np.isfinite(values)  # text, or nan / inf written out
    if bad.any():
        row = bad.idxmax()
        cell = str(column[row])
        if np.isnan(values[row]) and cell.lower().lstrip("+-") != "nan":
            raise UserError(f"attribute '{name}' is continuous but holds text: '{cell}'")
        raise UserError(
            f"attribute '{name}': non-finite value '{cell}' in data row {row + 1}; fix it, "
            "or list it in dataset.missing_values to treat it as missing"
        )
    big = values.abs() > MAX_VALUE
    if big.any():
        row = big.idxmax()
        raise UserError(
            f"attribute '{name}': value '{column[row]}' in data row {row + 1} is larger than "
            f"{MAX_VALUE:g} in size, where the models' sums of squares could overflow; "
            "change its units"
        )
    return values


def _check_not_empty(frame: pd.DataFrame, labelled: pd.Series) -> None:
    """An attribute missing in every labelled row would be NaN everywhere (imputed from
    nothing) or drop every row: refused, by name."""
    empty = frame[labelled].isna().all()
    if empty.any():
        raise UserError(
            f"attribute '{empty.idxmax()}' is missing in every row; "
            "leave it out (list the attributes to use in attributes:)"
        )


def _check_classes(y: np.ndarray, labels: pd.Series, target: TargetSpec) -> list[str]:
    """Every class keeps a row after filtering, or a user error naming it; returns the
    classes' names for a `classes` target (a group's labels joined by '+'), else []."""
    if target.classes is None:
        if len(y) == 0 or y.min() == y.max():
            empty = "positive" if len(y) == 0 or y.max() == 0 else "negative"
            raise UserError(f"target: the {empty} class is empty after filtering rows")
        return []
    names = ["+".join(group) for group in class_groups(labels, target)]
    counts = np.bincount(y, minlength=len(names))
    if len(names) < 2:
        raise UserError(f"target.classes: the data have a single class, '{names[0]}'")
    if counts.min() == 0:
        empty = names[int(np.argmin(counts))]
        raise UserError(f"target.classes: class '{empty}' is empty after filtering rows")
    return names


def _discretize(values: np.ndarray, options: Preprocessing) -> np.ndarray:
    if options.strategy == "uniform":
        edges = np.linspace(values.min(), values.max(), options.bins + 1)
    else:
        edges = np.quantile(values, np.linspace(0, 1, options.bins + 1))
    inner = np.unique(edges[1:-1])
    return np.searchsorted(inner, values, side="right")


def _level_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """A discrete attribute's codes and its levels, the values as text in sorted order, the
    spellings of one number one level (named by its shortest spelling: '1' for '1', '1.0'). A
    column already categorical with text levels and no missing cell (synthetic data) is
    recoded as it is, not cell by cell as text: the same codes, 10 times faster."""
    levels = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else None
    if levels is not None and all(isinstance(x, str) for x in levels) and column.notna().all():
        used = column.cat.remove_unused_categories()
        ordered = used.cat.reorder_categories(sorted(used.cat.categories))
        return ordered.cat.codes.to_numpy().astype(float), list(ordered.cat.categories)
    categories = pd.Categorical(column.astype(str))
    levels = [str(c) for c in categories.categories]
    spelt = label_keys(pd.Series(levels, dtype=object))  # '1' and '1.0': one level, '1'
    if spelt.nunique() == len(levels):
        return categories.codes.astype(float), levels
    name: dict[str, str] = {}
    for level, key in sorted(zip(levels, spelt, strict=True), key=lambda p: (len(p[0]), p[0])):
        name.setdefault(key, level)
    merged = sorted(set(name.values()))
    recode = np.array([merged.index(name[key]) for key in spelt], dtype=float)
    return recode[categories.codes], merged


def _most_frequent(column: pd.Series) -> str:
    """The discrete value `missing: impute` fills in: the most frequent level, its spellings
    counted together as `_level_codes` makes them one level ('1' and '1.0': 6 rows, not 3 and
    3 against 4 of '2'); ties go to the smallest spelling, as pandas' mode does."""
    cells = column.dropna().astype(str)
    if cells.empty:
        return MISSING_LEVEL
    keys = label_keys(cells)
    counts = keys.value_counts()
    best = counts[counts == counts.max()].index
    return str(cells[keys.isin(best)].min())


def _missing_level(column: pd.Series) -> str:
    """The level `missing: category` gives a column's missing cells: '?', or, where '?' is a
    real value of the column (not a missing token), '??' (and so on), never one of its values:
    a real '?' and the missing cells were one level."""
    taken, level = set(column.dropna()), MISSING_LEVEL
    while level in taken:
        level += MISSING_LEVEL
    return level


def prepare(raw: RawData, config: ExperimentConfig) -> PreparedData:
    """Apply the config's attribute subset, target mapping, missing policy and scaling."""
    names = select_attributes(raw, config.attributes)
    target_column = config.target.column or raw.target
    if target_column not in raw.frame.columns:
        raise UserError(f"target.column: no column named '{target_column}' in the dataset")
    names = _without_target(names, target_column, config.attributes)
    listed = config.attributes if isinstance(config.attributes, list) else list(raw.attributes)
    for name, why in raw.doubtful.items():  # its kind unclear: refused wherever it may be used
        if name in listed and name != target_column:
            raise UserError(why)
    frame = raw.frame[names].copy()
    continuous = [n for n in names if raw.attributes[n] == "continuous"]
    discrete = [n for n in names if raw.attributes[n] == "discrete"]
    for name in continuous:
        frame[name] = _to_numbers(frame[name], name)
    y = make_labels(raw.frame[target_column], config.target)
    keep = y.notna()
    _check_not_empty(frame, keep)
    if config.missing == "drop":
        keep &= frame.notna().all(axis=1)
    elif config.missing == "category":
        for name in discrete:
            frame[name] = frame[name].fillna(_missing_level(frame[name]))
        keep &= frame[continuous].notna().all(axis=1)
    else:  # impute: mean for continuous, most frequent value for discrete
        for name in continuous:
            frame[name] = frame[name].fillna(frame.loc[keep, name].mean())
        for name in (name for name in discrete if frame[name].isna().any()):
            frame[name] = frame[name].fillna(_most_frequent(frame.loc[keep, name]))
    frame, y = frame[keep], y[keep].astype(int).to_numpy()
    names = _check_classes(y, raw.frame[target_column], config.target)
    if config.preprocessing.continuous == "discretize":
        for name in continuous:
            frame[name] = _discretize(frame[name].to_numpy(), config.preprocessing).astype(str)
        discrete, continuous = continuous + discrete, []
    cont = frame[continuous].to_numpy(dtype=float) if continuous else np.zeros((len(y), 0))
    if config.preprocessing.continuous == "rescale" and continuous:
        low, span = cont.min(axis=0), np.ptp(cont, axis=0)
        cont = (cont - low) / np.where(span > 0, span, 1.0)
    codes, level_names = [], {}
    for name in discrete:
        column_codes, level_names[name] = _level_codes(frame[name])
        codes.append(column_codes)
    disc = np.column_stack(codes) if codes else np.zeros((len(y), 0))
    return PreparedData(
        X=np.hstack([cont, disc]),
        y=y.astype(np.int64),
        layout=FeatureLayout(
            len(continuous),
            tuple(len(level_names[n]) for n in discrete),
            config.preprocessing.encoding,
        ),
        feature_names=continuous + discrete,
        level_names=level_names,
        checksums=dict(raw.checksums),
        source=raw.source,
        class_names=names,
    )
