"""Audit of the Python API, `genvdis validate` and `genvdis fetch`: each test is a bug found by
running it (a stale or mixed result with no error, a traceback instead of a one-line error, a
config that validates and then fails at run for a reason validate could see)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import genvdis
from genvdis.cli import app
from tests.conftest import _toy_config, _write_toy

SIZES = "sizes: [10, 20]\n"


def _toy(write_toy, toy_config, folder: Path, *lines: str) -> Path:
    return write_toy(folder, toy_config(SIZES.strip(), *lines))


def test_results_reread_files_a_later_run_replaced(tmp_path, write_toy, toy_config):
    """An open Results whose folder a later run rewrote mixed the two runs: its config and
    errors (read before) from the first, its summary (read after) from the second."""
    config = _toy(write_toy, toy_config, tmp_path / "cfg")
    old = genvdis.run(config, splits=3, out=tmp_path / "out")
    assert old.splits == 3 and set(old.errors["split"]) == {0, 1, 2}
    genvdis.run(config, splits=5, out=tmp_path / "out")
    assert old.splits == 5  # config.yaml as it is now
    assert set(old.errors["split"]) == set(range(5))
    assert set(old.summary["n_splits"]) == {5}
    assert set(old.differences()["n_splits"]) == {5}
    assert "5 splits per m" in repr(old)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: genvdis.run(3), "^config: .*a path.*not int"),
        (lambda: genvdis.run(None), "^config: .*not NoneType"),
        (lambda: genvdis.load_config({"name": "x"}), "^config: .*not dict"),
        (lambda: genvdis.run("pima", out=None), "^out: .*a path.*not NoneType"),
        (lambda: genvdis.run("pima", jobs="2"), "^--jobs: .*a whole number.*not str"),
        (lambda: genvdis.run("pima", jobs=2.5), "^--jobs: .*a whole number.*not float"),
        (lambda: genvdis.run("pima", jobs=None), "^--jobs: .*not NoneType"),
        (lambda: genvdis.run("pima", allow_imports="numpy"), "^--allow-import: .*a list"),
        (lambda: genvdis.run("pima", mirror=3), "^--mirror: .*not int"),
        (lambda: genvdis.open_results(3), "^path: .*a path.*not int"),
        (lambda: genvdis.sweep("pima", jobs="2"), "^--jobs: .*not str"),
        (lambda: genvdis.sweep(["pima", 3]), "^configs: .*not int"),
    ],
)
def test_arguments_of_a_wrong_type_are_one_line_user_errors(call, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(genvdis.UserError, match=message):
        call()
    assert not (tmp_path / "results").exists()


def test_a_mirror_given_as_a_path_is_used(tmp_path, monkeypatch, uci_dir, shared_cache):
    """mirror=Path(...) raised AttributeError ('PosixPath' has no attribute 'decode')."""
    monkeypatch.delenv("GENVDIS_MIRROR", raising=False)
    monkeypatch.setenv("GENVDIS_DATA", str(tmp_path / "data"))
    res = genvdis.run("pima", splits=2, out=tmp_path / "out", mirror=Path(uci_dir))
    assert res.splits == 2


def _validate(*args: str):
    return CliRunner().invoke(app, ["validate", *args])


def test_validate_refuses_two_configs_of_one_name_as_run_does(tmp_path, write_toy, toy_config):
    a = _toy(write_toy, toy_config, tmp_path / "a")
    b = write_toy(tmp_path / "b", toy_config(SIZES.strip(), "seed: 3"))
    done = _validate(str(a), str(b))
    assert done.exit_code == 2
    assert "both are named 'toy'" in done.output and str(b) in done.output
    assert _validate(str(a), str(a)).exit_code == 0  # the same config twice is one run


def test_validate_refuses_a_missing_data_file_as_run_does(tmp_path, toy_config):
    (tmp_path / "c.yaml").write_text(toy_config(SIZES.strip()))  # no toy.csv beside it
    done = _validate(str(tmp_path / "c.yaml"))
    assert done.exit_code == 2
    assert f"{tmp_path / 'c.yaml'}: dataset.path: " in done.output
    assert "toy.csv" in done.output and "not found" in done.output


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        (["attributes: [glucose, nosuch]"], "attributes: no attribute named 'nosuch'"),
        (["attributes: [glucose, class]"], "attributes: 'class' is the dataset's label column"),
    ],
)
def test_validate_checks_a_registered_datasets_columns(tmp_path, lines, field):
    config = tmp_path / "p.yaml"
    config.write_text("name: p\ndataset: pima\n" + SIZES + "".join(x + "\n" for x in lines))
    if not any(x.startswith("target") for x in lines):
        config.write_text(config.read_text() + "target: {positive: ['1']}\n")
    done = _validate(str(config))
    assert done.exit_code == 2, done.output
    assert field in done.output and str(config) in done.output


def test_fetch_all_with_a_name_checks_the_name(tmp_path, monkeypatch):
    monkeypatch.setenv("GENVDIS_DATA", str(tmp_path / "data"))
    done = CliRunner().invoke(app, ["fetch", "--all", "nosuch"])
    assert done.exit_code == 2
    assert "dataset 'nosuch' is not registered" in done.output
    assert not (tmp_path / "data").exists()  # refused before any download


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):

    folder = tmp_path_factory.mktemp("toy_run")
    config = _write_toy(folder / "cfg", _toy_config(SIZES.strip()))
    return genvdis.run(config, splits=4, out=folder / "out")


def test_one_model_given_is_compared_with_the_other(toy_run):
    """differences(a='naive_bayes') paired naive Bayes with itself: zeros, no error."""
    both = toy_run.differences("naive_bayes", "logistic_regression")
    one = toy_run.differences(a="naive_bayes")
    assert one.equals(both) and (one["mean_diff"] != 0).any()
    assert toy_run.differences(b="logistic_regression").equals(both)
    flipped = toy_run.differences(a="logistic_regression")
    assert list(flipped["mean_diff"]) == list(-both["mean_diff"])
    assert toy_run.crossover(a="naive_bayes", n_boot=10) == toy_run.crossover(
        "naive_bayes", "logistic_regression", n_boot=10
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: r.differences(a="nosuch"), "^a: no model 'nosuch' in toy .*naive_bayes"),
        (lambda r: r.crossover(b="Naive_Bayes"), "^b: no model 'Naive_Bayes'"),
        (lambda r: r.differences("naive_bayes", "naive_bayes"), "^a and b: both are"),
        (lambda r: r.differences(level=95), "^level: .*between 0 and 1.*not 95"),
        (lambda r: r.differences(level="0.9"), "^level: "),
        (lambda r: r.crossover(level=2), "^level: "),
        (lambda r: r.crossover(n_boot=0), "^n_boot: .*from 10 to 10000, not 0"),
        (lambda r: r.crossover(n_boot=-5), "^n_boot: "),
        (lambda r: r.crossover(seed=-1), "^seed: .*not -1"),
        (lambda r: r.comparisons(n_boot=1), "^n_boot: "),
        (lambda r: r.comparisons(n_boot="10"), "^n_boot: "),
    ],
)
def test_bad_statistics_options_are_user_errors(toy_run, call, message):
    """Before: an empty table (a misspelt model), zeros (a model against itself), intervals
    of NaN (level=95) or None (n_boot=0), or a traceback."""
    with pytest.raises(genvdis.UserError, match=message):
        call(toy_run)


def test_numpy_numbers_are_statistics_options(toy_run):
    """The API takes numpy's integers wherever it takes an int (issue 30); the statistics'
    options refused np.int64(100) as not a whole number."""
    import numpy as np

    assert toy_run.crossover(n_boot=np.int64(10), seed=np.int32(1)) == toy_run.crossover(
        n_boot=10, seed=1
    )
    assert toy_run.differences(level=np.float64(0.9)).equals(toy_run.differences(level=0.9))
    with pytest.raises(genvdis.UserError, match="^n_boot: "):
        toy_run.crossover(n_boot=True)


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
