"""config/_yaml.py's two parsers: libyaml's C parser (fast) and PyYAML's own must read every
shipped config alike and refuse every unsafe document with the same message."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genvdis.config import _yaml
from genvdis.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(ROOT.glob("configs/**/*.yaml"))

pytestmark = pytest.mark.skipif(
    _yaml.FAST_LOADER is None, reason="PyYAML without libyaml: only the Python parser runs"
)


def _python_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_yaml, "FAST_LOADER", None)


def test_every_shipped_config_reads_the_same_with_either_parser(monkeypatch):
    assert len(SHIPPED) > 60
    fast = [_yaml.read_yaml(path) for path in SHIPPED]
    _python_only(monkeypatch)
    assert fast == [_yaml.read_yaml(path) for path in SHIPPED]


def test_a_run_config_as_genvdis_writes_it_reads_the_same_with_either_parser(monkeypatch):
    config = {"name": "x", "sizes": [10, 20], "models": [{"name": "naive_bayes", "tol": 1e-8}],
              "target": {"positive": ["1"], "negative": None}, "title": "a: b"}  # fmt: skip
    text = yaml.safe_dump(config, sort_keys=False)
    assert _yaml._load(text, Path("c.yaml")) == config
    _python_only(monkeypatch)
    assert _yaml._load(text, Path("c.yaml")) == config


UNSAFE = {
    "octal": ("splits: 010\n", "would be read as 8"),
    "base 60": ("seed: 1:05\n", "would be read as 65"),
    "duplicate key": ("a: 1\nb: 2\na: 3\n", "duplicate key 'a' at lines 1 and 3"),
    "billion laughs": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n"
            for p, c in zip("abcdef", "bcdefg", strict=True)
        )
        + "z: *g\n",
        "expands to more than 100000 values",
    ),
    "too deep": ("a: " + "[" * 60 + "]" * 60 + "\n", "nested more than 50 levels deep"),
    "deeper than libyaml allows": ("a: " + "[" * 2000 + "]" * 2000 + "\n", "nested more than"),
    "malformed": ("a: [1, 2\nb: 3\n", "malformed YAML at line"),
    "merged twice": ("x: &x {k: 1}\ny: &y {k: 2}\nz:\n  <<: [*x, *y]\n", "merged (<<)"),
}


@pytest.mark.parametrize("name", list(UNSAFE))
def test_an_unsafe_document_is_refused_with_the_same_message_by_either_parser(
    name, tmp_path, monkeypatch
):
    text, says = UNSAFE[name]
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as fast:
        _yaml.read_yaml(path)
    _python_only(monkeypatch)
    with pytest.raises(UserError) as slow:
        _yaml.read_yaml(path)
    assert str(fast.value) == str(slow.value)
    assert says in str(fast.value) and str(path) in str(fast.value)


def test_bytes_read_already_give_what_the_file_gives(tmp_path):
    """read_yaml(path, data) reads as read_text would: universal newlines, one size limit."""
    path = tmp_path / "c.yaml"
    path.write_bytes(b"a: |\r\n  one\r\n  two\r\nb: 2\r\n")
    assert _yaml.read_yaml(path, path.read_bytes()) == _yaml.read_yaml(path) == {
        "a": "one\ntwo\n", "b": 2
    }  # fmt: skip
    with pytest.raises(UserError, match="too large for a config file"):
        _yaml.read_yaml(path, b"#" * (_yaml.MAX_BYTES + 1))
    with pytest.raises(UserError, match="not a UTF-8 text file"):
        _yaml.read_yaml(path, b"a: \xff\n")
