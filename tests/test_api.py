"""The Python API: cheap to import, the same bytes as the command line, statistics that agree
with their definitions, the figure `genvdis plot` saves, and docs/usage.md's notebook snippet and
the docstrings' examples, executed; arguments of a wrong type, a results folder a later run
replaced, and `validate` and `fetch` refusing what a run would refuse."""

from __future__ import annotations

import contextlib
import doctest
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import genvdis
from genvdis import api, runresults
from genvdis.analysis import differences as analysis
from genvdis.cli import app
from genvdis.config import builtin
from genvdis.report import plotting
from genvdis.store import results
from tests.clichecks import raises_user_error
from tests.conftest import REPO, _toy_config, _write_toy

HEAVY = ("numba", "scipy", "matplotlib", "sklearn", "pandas", "numpy", "pydantic")


def _python(code: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_loads_no_numeric_library():
    code = "import sys, genvdis; print(sorted(set(sys.modules) & set(sys.argv[1:])))"
    loaded = _python(code.replace("sys.argv[1:]", repr(HEAVY)))
    assert loaded == "[]"
    for name in genvdis.__all__:  # each public name is there on first use
        assert getattr(genvdis, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        genvdis.nope  # noqa: B018


def test_importing_plotting_keeps_the_backend_and_settings():
    code = (
        "import matplotlib; before = dict(matplotlib.rcParams); import genvdis.report.plotting; "
        "print(matplotlib.get_backend(), dict(matplotlib.rcParams) == before)"
    )
    assert _python(code, MPLBACKEND="svg") == "svg True"


def test_load_config_takes_names_and_paths(tmp_path):
    by_name = genvdis.load_config("pima")
    assert by_name == genvdis.load_config(REPO / "configs" / "pima.yaml")
    with raises_user_error("'pimaa'", "pima, adult"):
        genvdis.load_config("pimaa")
    with raises_user_error("theory-binary", "theory"):
        genvdis.load_config("theory-binary")


@pytest.fixture(scope="module")
def pima_run(tmp_path_factory, uci_dir, shared_cache):
    """pima at 20 splits, by the API (2 workers) and by the CLI (1), into separate folders."""
    folder = tmp_path_factory.mktemp("api")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GENVDIS_MIRROR", str(uci_dir))
        patch.setenv("GENVDIS_DATA", str(shared_cache))
        res = genvdis.run("pima", splits=20, seed=3, jobs=2, out=folder / "api")
        cli = CliRunner().invoke(
            app, ["run", "pima", "--splits", "20", "--seed", "3", "--out", str(folder / "cli")]
        )
    assert cli.exit_code == 0, cli.output
    return res, folder / "cli" / "pima"


@pytest.mark.slow
def test_the_api_writes_the_cli_bytes(pima_run):
    res, cli_dir = pima_run
    for name in ("summary.csv", "errors.csv", "config.yaml"):
        assert (res.path / name).read_bytes() == (cli_dir / name).read_bytes(), name
    assert res.summary.equals(pd.read_csv(cli_dir / "summary.csv"))
    assert len(res.errors) == 3 * 13 * 20 and res.config["seed"] == 3  # NB, LR, majority


@pytest.mark.slow
def test_differences_and_crossover_agree_with_their_definitions(pima_run):
    res, _ = pima_run
    wide = res.errors.pivot_table(index=["m", "split"], columns="model", values="error")
    by_hand = (wide["logistic_regression"] - wide["naive_bayes"]).groupby("m").mean()
    diffs = res.differences()
    assert list(diffs["m"]) == list(by_hand.index)
    np.testing.assert_allclose(diffs["mean_diff"], by_hand.to_numpy(), rtol=0, atol=1e-15)
    assert (diffs["ci_low"] < diffs["mean_diff"]).all() and (diffs["n_splits"] == 20).all()
    cross = res.crossover()
    signs = by_hand.to_numpy() < 0  # LR better at m, on average over the splits
    first = next(i for i in range(len(signs)) if signs[i:].all())
    assert cross["m_cross"] == by_hand.index[first] and (by_hand.to_numpy()[:first] > 0).any()
    assert cross["ci_low"] <= cross["m_cross_interp"] <= cross["ci_high"]
    assert cross == analysis.crossover(res.errors)  # the report's numbers
    swapped = res.differences("naive_bayes", "logistic_regression")
    np.testing.assert_allclose(swapped["mean_diff"], -diffs["mean_diff"], atol=1e-15)


@pytest.mark.slow
def test_plot_is_the_figure_genvdis_plot_saves(pima_run, tmp_path):
    res, cli_dir = pima_run
    ax = res.plot()
    assert ax.get_title() == "pima"
    curves = {line.get_label(): line for line in ax.get_lines()}
    nb = res.summary[res.summary["model"] == "naive_bayes"]
    np.testing.assert_array_equal(curves["naive Bayes"].get_ydata(), nb["mean"])
    mine = plotting.save_figure(ax.figure, tmp_path / "mine")
    saved = plotting.plot_run(cli_dir)
    for a, b in zip(mine, saved, strict=True):
        assert a.read_bytes() == b.read_bytes(), b.name
    fig, axes = matplotlib.pyplot.subplots(1, 2)
    assert res.plot(ax=axes[1]) is axes[1] and axes[1].get_legend() and not axes[0].lines
    matplotlib.pyplot.close(fig)


@pytest.mark.slow
def test_open_results_and_its_errors(pima_run, tmp_path):
    res, cli_dir = pima_run
    opened = genvdis.open_results(cli_dir)
    assert opened.summary.equals(res.summary) and opened.models == res.models
    assert repr(opened).endswith("pima, 2 models, 13 sizes, 20 splits per m)")
    with raises_user_error("summary.csv"):
        genvdis.open_results(tmp_path)
    summary_only = tmp_path / "pima"  # as the committed results/ keep it
    summary_only.mkdir()
    for name in ("summary.csv", "config.yaml", "manifest.json"):
        (summary_only / name).write_bytes((cli_dir / name).read_bytes())
    with raises_user_error("errors.csv"):
        genvdis.open_results(summary_only).differences()
    nb_only = tmp_path / "nb"
    nb_errors = res.errors[res.errors["model"] == "naive_bayes"]
    config = {"name": "nb", "models": [{"name": "naive_bayes"}]}
    results.write_results(nb_only, nb_errors, config, ["naive_bayes"])  # as a run leaves it
    with raises_user_error("nb: ", "pair"):
        genvdis.open_results(nb_only).crossover()


def test_a_relative_data_path_is_read_from_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the config's folder
    config = genvdis.load_config(REPO / "configs" / "examples" / "own-data.yaml")
    assert config.data_dir == REPO / "configs" / "examples"
    assert config.with_overrides(splits=2).data_dir == config.data_dir
    res = genvdis.run(config, splits=2)
    assert res.path == Path("results") / "own-data"
    assert res.config["dataset"]["path"] == "toy.csv"  # recorded as written


def test_bad_options_are_user_errors():
    with raises_user_error("--jobs", "1"):
        genvdis.run("pima", jobs=0)
    with raises_user_error("--backend"):
        genvdis.run("pima", backend="mpi")
    # splits and seed: checked once, by the config's own fields
    with raises_user_error("--splits 0", "splits", "2"):
        genvdis.run("pima", splits=0)
    with raises_user_error("--seed -1", "seed"):
        genvdis.run("pima", seed=-1)


def test_a_run_reports_progress_only_to_its_callback(
    tmp_path, write_toy, toy_config, capfd, monkeypatch
):
    """The API prints nothing (in a process where logging is not set up, as in a fresh
    notebook; the CLI's log handler is gone); a progress callback is told the run's name and
    block count, then the blocks already done (none here), then every block once."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]", "block_size: 2"))
    calls: list[tuple] = []

    @contextlib.contextmanager
    def progress(name: str, total: int):
        calls.append((name, total))
        yield lambda n: calls.append(n)

    genvdis.run(config, splits=5, out=tmp_path / "quiet")
    assert capfd.readouterr() == ("", "")
    genvdis.run(config, splits=5, out=tmp_path / "out", progress=progress)
    assert capfd.readouterr() == ("", "")
    assert calls[0] == ("toy", 6)  # 2 sizes x 3 blocks of at most 2 splits
    assert calls[1] == 0 and calls[2:] == [1] * 6


@pytest.mark.slow
def test_the_docstring_examples(tmp_path, monkeypatch, mirror_env):
    monkeypatch.chdir(tmp_path)
    for module in (api, runresults, builtin):
        outcome = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert outcome.attempted > 3 and outcome.failed == 0, module.__name__
    for name in genvdis.__all__:  # numpydoc, with an example, for every public function
        doc = getattr(genvdis, name).__doc__
        if callable(getattr(genvdis, name)) and name != "UserError":
            assert "Examples\n    --------" in doc or "Examples\n        --------" in doc, name
    matplotlib.pyplot.close("all")


def usage_snippet() -> str:
    """The "Python API" code block of docs/usage.md."""
    text = (REPO / "docs" / "usage.md").read_text()
    section = text.split("\n## Python API\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_usage_snippet_runs(tmp_path, monkeypatch, mirror_env):
    code = usage_snippet()
    assert "splits=200" in code
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code.replace("splits=200", "splits=20"), "docs/usage.md", "exec"), namespace)
    res = namespace["res"]
    assert res.path.resolve() == (tmp_path / "results" / "pima").resolve()
    assert list(res.summary.columns) == [
        "model", "m", "n_splits", "mean", "std", "sem", "ci_low", "ci_high", "frac_separable",
        "warnings",
    ]  # fmt: skip
    assert res.crossover()["m_cross"] is not None
    matplotlib.pyplot.close("all")


# --- issue 30 §6: API arguments, checked once, one line naming the argument ---------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: genvdis.run("pima", force="no"), "^force: .*True or False.*not str"),
        (lambda: genvdis.run("pima", force=1), "^force: .*not int"),
        (lambda: genvdis.run("pima", wait="yes"), "^wait: .*not str"),
        (lambda: genvdis.run("pima", progress=True), "^progress: .*callable.*not bool"),
        (lambda: genvdis.run("pima", allow_imports=[5]), "^--allow-import: .*holding 5"),
        (lambda: genvdis.run("pima", allow_imports=5), "^--allow-import: .*not int"),
        (lambda: genvdis.run("pima", splits=20.0), "^splits: .*whole number.*not float"),
        (lambda: genvdis.run("pima", splits=True), "^splits: .*not bool"),
        (lambda: genvdis.run("pima", seed=np.float64(1)), "^seed: .*not float64"),
        (lambda: genvdis.run("pima", jobs=np.True_), "^--jobs: .*not bool"),
        (lambda: genvdis.run("pima", scheduler=5, backend="dask"), "^--scheduler: .*not int"),
        (lambda: genvdis.sweep([], vary=["split=random"]), "^configs: .*empty"),
        (lambda: genvdis.sweep((), vary=["split=random"]), "^configs: .*empty"),
        (lambda: genvdis.sweep("pima", vary=[3]), "^vary: .*holding 3"),
        (lambda: genvdis.sweep("pima", vary=["split=random"], force="no"), "^force: .*not str"),
        (lambda: genvdis.sweep("pima", vary=["split=random"], job=2), "^sweep: .*'job'"),
        (lambda: genvdis.sweep("pima", variants=3), "^variants: .*not int"),
        (lambda: list(api.validate([])), "^configs: .*empty"),
        (lambda: list(api.validate(["pima"], allow_imports="x")), "^--allow-import: .*str"),
    ],
)
def test_api_arguments_of_a_wrong_type_are_one_line_errors(call, message, tmp_path, monkeypatch):
    """Each argument is checked once, by type: force="no" must not run as force=True, and
    progress=True, allow_imports=[5], sweep([]) or an unknown sweep option must not reach a
    traceback (TypeError, AttributeError, ValueError)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(genvdis.UserError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "results").exists()


def test_numpy_integers_and_bools_are_taken_as_python_ones(tmp_path, write_toy, toy_config):
    """A notebook's numbers are often numpy's: splits=np.int64(2) and jobs=np.int64(1) are
    taken as the ints they are."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    res = genvdis.run(
        config, splits=np.int64(2), seed=np.int32(3), jobs=np.int64(1), force=np.bool_(False),
        out=tmp_path / "out",
    )  # fmt: skip
    assert res.splits == 2 and res.config["seed"] == 3


def test_a_lone_string_is_one_config_or_one_vary_item(tmp_path, write_toy, toy_config):
    """A string is a sequence: vary="split=random" must not be read letter by letter ('--vary
    s: write KEY=V1,V2'), nor validate("pima") as the configs 'p', 'i', 'm', 'a'."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    table = genvdis.sweep(config, vary="split=random", splits=2, out=tmp_path / "out")
    assert list(table["variant"]) == ["baseline", "split=random"]
    assert list(api.validate("pima")) == ["pima: ok (pima, 13 sizes)"]


# --- issue 30: second adversarial pass ----------------------------------------------------------


def test_run_refuses_to_write_over_its_own_config_file(tmp_path):
    """`genvdis.run("out/tiny/config.yaml", out="out")` would replace the config file with the
    run's resolved config, and the user's file would be lost: refused, and the file kept."""
    folder = tmp_path / "out" / "tiny"
    folder.mkdir(parents=True)
    text = (
        "name: tiny  # mine\ndataset: {path: data.csv, target: y}\ntarget: {positive: [x]}\n"
        "sizes: [4]\nsplits: 2\n"
    )
    (folder / "config.yaml").write_text(text)
    (folder / "data.csv").write_text(
        "a,y\n" + "".join(f"{i * 0.37:.2f},{'xz'[i % 2]}\n" for i in range(20))
    )
    with raises_user_error("config.yaml"):
        genvdis.run(folder / "config.yaml", out=tmp_path / "out")
    assert (folder / "config.yaml").read_text() == text


# --- the API's arguments, results read back and statistics options; `validate` and `fetch` ---


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
    """Each is one line naming the option, not an empty table (a misspelt model), zeros (a
    model against itself), intervals of NaN (level=95) or None (n_boot=0), or a traceback."""
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
