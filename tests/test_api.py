"""The Python API: cheap to import, the same bytes as the command line, statistics that agree
with their definitions, the figure `genvdis plot` saves, and docs/usage.md's notebook snippet and
the docstrings' examples, executed."""

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
from tests.conftest import REPO

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
    with pytest.raises(genvdis.UserError, match="'pimaa' is neither.*built-in: pima, adult"):
        genvdis.load_config("pimaa")
    with pytest.raises(genvdis.UserError, match="is a built-in theory config"):
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
    assert len(res.errors) == 2 * 13 * 20 and res.config["seed"] == 3


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
    with pytest.raises(genvdis.UserError, match="no finished run .summary.csv. in"):
        genvdis.open_results(tmp_path)
    summary_only = tmp_path / "pima"  # as the committed results/ keep it
    summary_only.mkdir()
    for name in ("summary.csv", "config.yaml", "manifest.json"):
        (summary_only / name).write_bytes((cli_dir / name).read_bytes())
    with pytest.raises(genvdis.UserError, match="errors.csv not found: rerun"):
        genvdis.open_results(summary_only).differences()
    nb_only = tmp_path / "nb"
    nb_errors = res.errors[res.errors["model"] == "naive_bayes"]
    config = {"name": "nb", "models": [{"name": "naive_bayes"}]}
    results.write_results(nb_only, nb_errors, config, ["naive_bayes"])  # as a run leaves it
    with pytest.raises(genvdis.UserError, match="nb: no pair of models to compare"):
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
    with pytest.raises(genvdis.UserError, match="--jobs must be >= 1"):
        genvdis.run("pima", jobs=0)
    with pytest.raises(genvdis.UserError, match="--backend must be"):
        genvdis.run("pima", backend="mpi")
    # splits and seed: checked once, by the config's own fields
    with pytest.raises(genvdis.UserError, match="^--splits 0: splits: .* equal to 2"):
        genvdis.run("pima", splits=0)
    with pytest.raises(genvdis.UserError, match="^--seed -1: seed: .* equal to 0"):
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
    """Before: force="no" ran as force=True; progress=True, allow_imports=[5], sweep([]) and an
    unknown sweep option were tracebacks (TypeError, AttributeError, ValueError)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(genvdis.UserError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "results").exists()


def test_numpy_integers_and_bools_are_taken_as_python_ones(tmp_path, write_toy, toy_config):
    """Before: splits=np.int64(2) and jobs=np.int64(1) were refused."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    res = genvdis.run(
        config, splits=np.int64(2), seed=np.int32(3), jobs=np.int64(1), force=np.bool_(False),
        out=tmp_path / "out",
    )  # fmt: skip
    assert res.splits == 2 and res.config["seed"] == 3


def test_a_lone_string_is_one_config_or_one_vary_item(tmp_path, write_toy, toy_config):
    """Before: vary="split=random" was read letter by letter ('--vary s: write KEY=V1,V2'),
    and validate("pima") as the configs 'p', 'i', 'm', 'a'."""
    config = write_toy(tmp_path / "cfg", toy_config("sizes: [10, 20]"))
    table = genvdis.sweep(config, vary="split=random", splits=2, out=tmp_path / "out")
    assert list(table["variant"]) == ["baseline", "split=random"]
    assert list(api.validate("pima")) == ["pima: ok (pima, 13 sizes)"]


# --- issue 30: second adversarial pass ----------------------------------------------------------


def test_run_refuses_to_write_over_its_own_config_file(tmp_path):
    """`genvdis.run("out/tiny/config.yaml", out="out")` replaced the config file with the
    run's resolved config (exit 0, the user's file lost); it is refused and the file kept."""
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
    with pytest.raises(genvdis.UserError, match="the config file itself"):
        genvdis.run(folder / "config.yaml", out=tmp_path / "out")
    assert (folder / "config.yaml").read_text() == text
