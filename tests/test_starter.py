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


# --- init --dataset: a registered dataset, by the same rules ---


def test_several_positive_labels_form_one_class():
    """heart-disease's natural split (0 absence, 1-4 presence) is --positive given four times:
    the rows of every listed label are positive, the rest negative."""
    import pandas as pd

    from genvdis.starter import choose_target

    labels = pd.Series(["0", "1", "2", "0", "4", "3", None, "0"])
    chosen = choose_target(labels, "num", ["1", "2", "3", "4.0"])
    assert chosen.rule == '{positive: ["1", "2", "3", "4.0"]}'
    assert chosen.y.tolist()[:6] == [0, 1, 1, 0, 1, 1] and chosen.y.isna().sum() == 1
    assert "every other label" not in chosen.why  # 0 is the one negative label


def test_positive_labels_that_cover_every_class_are_a_user_error():
    import pandas as pd
    import pytest

    from genvdis.errors import UserError
    from genvdis.starter import choose_target

    with pytest.raises(UserError, match="every label of column 'c' is positive"):
        choose_target(pd.Series(["a", "b", "a"]), "c", ["a", "b"])


def test_init_dataset_follows_the_rules(tmp_path, mirror_env):
    """pima: kinds from the registry (8 continuous), the smaller class "1" positive (268 of
    768), no missing cell, and size_grid's grid for 768 rows with 268 positive."""
    from genvdis.starter import size_grid

    out = tmp_path / "pima.yaml"
    done = CliRunner().invoke(app, ["init", "--dataset", "pima", "-o", str(out)])
    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert "attributes: continuous" in text and "8 continuous (pregnancies" in text
    config = genvdis.load_config(out)
    assert config.dataset == "pima" and config.missing == "drop"
    assert config.target.positive == ["1"]
    assert config.size_grid == size_grid(768, 268) == [10, 15, 20, 30, 40, 60, 80, 100, 150,
                                                       200, 300, 400, 576]  # fmt: skip
    assert (config.splits, config.split, config.test, config.seed) == (1000, "stratified",
                                                                       "rest", 0)  # fmt: skip


def test_init_dataset_with_several_positives(tmp_path, mirror_env):
    """lymphography's classes 1 (normal, 2 rows) and 4 (fibrosis, 4 rows) as the positive
    class: 6 of 148 rows, so the grid starts at ceil(148 / 6) = 25."""
    out = tmp_path / "lymph.yaml"
    args = ["init", "--dataset", "lymphography", "--positive", "1", "--positive", "4"]
    done = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert done.exit_code == 0, done.output
    config = genvdis.load_config(out)
    assert config.target.positive == ["1", "4"]
    assert config.size_grid[0] == 25
    assert "preprocessing" not in out.read_text()  # every attribute is discrete


def test_init_dataset_refusals(tmp_path):
    cases = [
        (["init"], "give either a table"),
        (["init", "t.csv", "--dataset", "pima"], "give either a table"),
        (["init", "--dataset", "pima", "--target", "class"], "--target"),
        (["init", "--dataset", "no-such-set"], "dataset 'no-such-set' is not registered"),
        (["init", "t.csv"], "--target"),
    ]
    for args, message in cases:
        done = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "x.yaml")])
        assert done.exit_code == 2, (args, done.output)
        assert message in done.output, (args, done.output)
