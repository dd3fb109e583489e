"""The report's building block and its cell formatting, shared by the report modules.

A block is a renderer-independent piece (heading, paragraph, image, table, list);
genvdis.report.markdown
renders the list of blocks as Markdown and as HTML.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class Block:
    """One piece of the report: kind is h1/h2/h3, p, img, table or ul."""

    kind: str
    text: str = ""
    src: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def is_missing(x: Any) -> bool:
    """None, NA and NaN: the cells a table shows as a dash."""
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x))


def fmt(x: Any, digits: int = 3, signed: bool = False) -> str:
    """A number for a table cell; a dash for missing values."""
    if is_missing(x):
        return "—"
    return f"{float(x):+.{digits}f}" if signed else f"{float(x):.{digits}f}"


def fmt_int(x: Any) -> str:
    return "—" if is_missing(x) else str(int(x))


def fmt_ci(lo: Any, hi: Any, digits: int = 3, signed: bool = False) -> str:
    if is_missing(lo) or is_missing(hi):
        return "—"
    return f"[{fmt(lo, digits, signed)}, {fmt(hi, digits, signed)}]"


def fmt_asym(a: Any, se: Any) -> str:
    if is_missing(a):
        return "—"
    return f"{fmt(a)} ± {fmt(se)}" if not is_missing(se) else fmt(a)


def fmt_cross(row: pd.Series) -> str:
    """Interpolated crossover m with its bootstrap interval, then the grid m."""
    if is_missing(row.get("m_cross")):
        return "none"
    ci = fmt_ci(row.get("m_cross_ci_low"), row.get("m_cross_ci_high"), 1)
    return f"{fmt(row['m_cross_interp'], 1)} {ci} (grid {fmt_int(row['m_cross'])})"


def panel_label(row: pd.Series) -> str:
    return fmt_int(row["panel"]) if not is_missing(row["panel"]) else "–"


def get_col(row: pd.Series, col: str) -> Any:
    """The value of `col` in `row`, None when the column is absent (an older analysis.csv)."""
    return row[col] if col in row.index else None
