"""A user's own table, read as numbers: edge cases of the file, the target and missing values
that once gave a wrong result with exit code 0 (or an unclear error). Every table is a tiny
file written here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.config import parse_config
from genvdis.datasource import load_data
from genvdis.errors import UserError
from genvdis.preprocessing import PreparedData, prepare


def prepared(tmp_path: Path, csv: str, config: str, name: str = "data.csv") -> PreparedData:
    """The model-ready data a config (YAML text) names, its table `csv` written beside it."""
    (tmp_path / name).write_text(csv)
    parsed = parse_config(yaml.safe_load(config), "config.yaml")
    return prepare(load_data(parsed, tmp_path), parsed)


def config(target: str = '{positive: ["yes"]}', *extra: str) -> str:
    return "\n".join(
        ["name: t", "dataset: {path: data.csv, target: label}", f"target: {target}",
         "sizes: [2]", *extra]
    ) + "\n"  # fmt: skip


# --- missing-value tokens with spaces around them --------------------------------------------


def test_a_missing_token_with_a_trailing_space_is_missing(tmp_path):
    """'? ' is '?' once stripped: missing, never a level '?' or a label '?' (which, with
    `positive` alone, was counted in the negative class)."""
    csv = "a,b,label\n1,x,yes\n2,y,no\n3,? ,yes\n4,y,no\n5,x,? \n6,x,NA \n7,y,yes\n"
    data = prepared(tmp_path, csv, config())
    assert data.n_rows == 4  # rows 3 (b missing), 5 and 6 (label missing) dropped
    assert data.class_counts == (2, 2)
    assert data.level_names["b"] == ["x", "y"]


def test_a_quoted_blank_cell_is_missing(tmp_path):
    """A quoted blank cell, '" "', is empty once stripped: missing (listed as ''), not a level ''."""
    csv = 'a,b,label\n1,x,yes\n2," ",no\n3,y,yes\n4,y,no\n'
    data = prepared(tmp_path, csv, config("{positive: [\"yes\"]}", "missing: category"))
    assert data.level_names["b"] == ["?", "x", "y"]
