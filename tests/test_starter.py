"""`genvdis init` (genvdis/starter.py): the starter config it writes for a user's own table, the
kinds it infers, the columns it leaves out, and its one-line refusals."""

from __future__ import annotations

from typer.testing import CliRunner

import genvdis
from genvdis.cli import app

# --- the columns init leaves out ---


def test_init_leaves_out_a_row_number(tmp_path):
    """A numeric id column (1..n) was made a continuous attribute: in a table sorted by class
    it gives the label away, and logistic regression's error fell to ~1% on pure noise."""
    rows = [f"{i + 1},{(i * 37) % 101 / 10},{(i * 53) % 97 / 10},{'pos' if i >= 120 else 'neg'}"
            for i in range(200)]  # fmt: skip
    table = tmp_path / "sorted.csv"
    table.write_text("id,a,b,label\n" + "\n".join(rows) + "\n")
    out = tmp_path / "sorted.yaml"
    done = CliRunner().invoke(app, ["init", str(table), "--target", "label", "-o", str(out)])
    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert 'attributes: ["a", "b"]' in text
    assert "from 1 to 200, one per row: a row number, left out" in text
    config = genvdis.load_config(out)
    assert config.attributes == ["a", "b"]


def test_init_keeps_whole_numbers_that_are_not_a_row_number(tmp_path):
    rows = [f"{(i * 7919) % 1000 + 5 * i},{i % 3},{'y' if i % 4 else 'n'}" for i in range(100)]
    table = tmp_path / "t.csv"
    table.write_text("income,kids,label\n" + "\n".join(rows) + "\n")
    out = tmp_path / "t.yaml"
    done = CliRunner().invoke(app, ["init", str(table), "--target", "label", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "attributes: all" in out.read_text()


# --- where init writes ---


THREE = "a,b,label\n1,x,yes\n2,y,no\n3,x,yes\n4,y,no\n5,x,maybe\n6,y,maybe\n"


def test_init_output_that_is_a_folder_is_a_user_error(tmp_path):
    """--output naming a folder (with --force) was 'internal error: IsADirectoryError', exit 1."""
    (tmp_path / "data.csv").write_text(
        THREE * 1 + "".join(f"{i},x,yes\n{i},y,no\n" for i in range(9))
    )
    (tmp_path / "out").mkdir()
    args = [
        "init",
        str(tmp_path / "data.csv"),
        "--target",
        "label",
        "--output",
        str(tmp_path / "out"),
    ]
    result = CliRunner().invoke(app, [*args, "--force"])
    assert result.exit_code == 2, result.output
    assert "--output" in result.output and "is a folder" in result.output, result.output
    assert (tmp_path / "out").is_dir()


def test_init_output_that_cannot_be_written_is_a_user_error(tmp_path):
    (tmp_path / "data.csv").write_text("".join(f"{i},x,yes\n{i},y,no\n" for i in range(9)))
    (tmp_path / "data.csv").write_text("a,b,label\n" + (tmp_path / "data.csv").read_text())
    out = tmp_path / "data.csv" / "c.yaml"  # under a file
    args = ["init", str(tmp_path / "data.csv"), "--target", "label", "--output", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "--output: cannot write" in result.output, result.output
