"""Theory configs: errors that name the file and field, the m grid, and the rules shared with
run configs (unique models, command-line overrides checked by the config's own bounds)."""

from __future__ import annotations

import pytest
import yaml

from genvdis.config import theory as theoryconfig
from genvdis.errors import UserError
from tests.clichecks import raises_user_error

BASE = {"name": "t", "kind": "binary", "n": [5], "effect": 0.3, "m": [10, 20], "epsilon": [0.01]}


def test_theory_config_errors_name_the_file_and_field(tmp_path):
    base = BASE
    cases = {
        "effect": {"effect": 1.5},
        "colour": {"colour": "red"},
        "models": {"models": ["lda"]},
        "m": {"m": [10, 200_000]},
    }
    for field, change in cases.items():
        path = tmp_path / f"{field}.yaml"
        path.write_text(yaml.safe_dump({**base, **change}))
        with pytest.raises(UserError, match=rf"{path.name}: {field}"):
            theoryconfig.load_theory_config(path)


def test_mgrid_is_one_sequence_for_every_n():
    grid = theoryconfig.MGrid(start=10, stop=8, min_stop=100, per_doubling=2)
    small, large = grid.values(4), grid.values(100)
    assert small == [10, 14, 20, 28, 40, 57, 80]
    assert large[: len(small)] == small and large[-1] <= 800 < large[-1] * 2**0.5 + 1


def test_a_model_listed_twice_is_refused_as_in_a_run_config():
    data = {**BASE, "models": ["naive_bayes", "naive_bayes"]}
    with raises_user_error("t.yaml", "models"):
        theoryconfig.parse_theory_config(data, "t.yaml")


def test_splits_override_is_checked_by_the_config_field():
    """--splits 1 would leave the bootstrap nothing to resample: the field's own bound (>= 2)
    refuses it, naming the option; a valid override replaces the config's value."""
    config = theoryconfig.parse_theory_config(BASE, "t.yaml")
    with raises_user_error("--splits 1", "splits", "2"):
        config.with_overrides(splits=1)
    assert config.with_overrides(splits=7).splits == 7
    assert config.with_overrides(splits=None) == config
