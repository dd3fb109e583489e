"""genvdis as an installed package: the built-in configs (one source, configs/, in the wheel,
the sdist and this editable install), names instead of paths, `genvdis configs`, and
`genvdis init`, whose starter configs must validate and run. (.ci/run also installs the wheel
into a fresh virtual environment and runs a built-in config from a temporary folder.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.datasets import load_breast_cancer
from typer.testing import CliRunner

import genvdis
from genvdis import starter
from genvdis.cli import app
from genvdis.config import builtin
from genvdis.experiment import splits
from tests.conftest import REPO

SHIPPED = sorted((REPO / "configs").glob("*.yaml"))
EXAMPLES = sorted((REPO / "configs" / "examples").glob("*.yaml"))
TOY = REPO / "configs" / "examples" / "toy.csv"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(result, *words: str) -> str:
    """Exit 2 and one `error:` line holding every word."""
    message = result.stderr.strip()
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    for word in words:
        assert word in message, (word, message)
    return message


# --- the built-in configs -------------------------------------------------------------------


def test_the_built_in_configs_are_the_repo_files():
    shipped = builtin.builtin_configs()
    assert sorted(c.name for c in shipped) == sorted(p.stem for p in SHIPPED + EXAMPLES)
    for config in shipped:  # this install reads configs/ itself: no second copy
        where = REPO / "configs" / ("examples" if config.kind == "example" else "")
        assert config.path.read_bytes() == (where / config.path.name).read_bytes()
    assert [c.name for c in shipped if c.kind == "example"] == [p.stem for p in EXAMPLES]
    panels = [c for c in shipped if c.kind == "panel"]
    assert [c.panel for c in panels] == list(range(1, 16))  # Figure 1's order
    assert [c.name for c in shipped if c.kind == "theory"] == ["theory-binary", "theory-gaussian"]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """An sdist, and a wheel built from it, as `python -m build` makes them in a fresh clone:
    from a copy of the files git does not ignore, since setuptools also packs whatever an
    earlier build listed in the checkout's genvdis.egg-info (a wheel would pass here and lack
    the file in CI)."""
    out = tmp_path_factory.mktemp("dist")
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    for name in filter(None, listed):
        if (REPO / name).is_file() and name.split("/")[0] not in {"results", "tests", "benchmarks"}:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


@pytest.mark.slow
def test_the_wheel_ships_every_config_and_the_command(dist):
    (wheel,) = dist.glob("genvdis-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for path in SHIPPED:
            assert archive.read(f"genvdis/configs/{path.name}") == path.read_bytes(), path.name
        entry_points = next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
        assert "genvdis = genvdis.cli:app" in archive.read(entry_points).decode()
        assert "genvdis/api.py" in archive.namelist()
        # the UCI files, read by genvdis.data.uci
        registry = REPO / "genvdis" / "data" / "registry.txt"
        assert archive.read("genvdis/data/registry.txt") == registry.read_bytes()
        for path in [*EXAMPLES, TOY]:  # the worked examples, and the one table they read
            assert archive.read(f"genvdis/configs/examples/{path.name}") == path.read_bytes()
        # the built-in study (`genvdis study` with no path) and the OpenML suite file
        for path in sorted([*REPO.glob("configs/study/*.yaml"), *REPO.glob("configs/suites/*")]):
            named = f"genvdis/configs/{path.parent.name}/{path.name}"
            assert archive.read(named) == path.read_bytes(), named
        assert len([n for n in archive.namelist() if "/configs/study/" in n]) == 46
        for page in ("explorer", "study-explorer"):  # the explorers' pages
            for ext in ("html", "css", "js"):
                assert f"genvdis/report/{page}.{ext}" in archive.namelist()
        assert not [n for n in archive.namelist() if n.endswith("make_toy_data.py")]


@pytest.mark.slow
def test_the_wheel_offers_the_worked_examples_by_name(dist, tmp_path):
    """Installed from the wheel alone (no clone beside it), `genvdis configs` lists the worked
    examples and their names are configs that `validate` (which reads own-data's toy.csv)
    accepts from any folder."""
    (wheel,) = dist.glob("genvdis-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}

    def genvdis_(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "genvdis", *args],
            cwd=work, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    where = genvdis_("configs")
    assert where.returncode == 0, where.stderr
    assert str(site / "genvdis" / "configs") in " ".join(where.stdout.split())  # the wheel's
    for path in EXAMPLES:
        assert re.search(rf"{path.stem}\s.*example", where.stdout), path.stem
    names = ["own-data", "breast-cancer-wisconsin", "gnb-vs-svm"]
    checked = genvdis_("validate", *names)
    assert checked.returncode == 0, checked.stderr
    for name in names:
        assert f"{name}: ok" in checked.stdout
    assert list(work.iterdir()) == []


def test_run_a_worked_example_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "own-data", "--splits", "3", "--quiet")
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "results" / "own-data" / "summary.csv")
    assert (
        sorted(set(summary["m"]))
        == yaml.safe_load(TOY.with_name("own-data.yaml").read_text())["sizes"]
    )
    one_line_error(invoke("theory", "own-data"), "'own-data'", "genvdis run own-data")


@pytest.mark.slow
def test_the_sdist_holds_configs_once(dist):
    (sdist,) = dist.glob("genvdis-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        root = names[0].split("/")[0]
        for path in SHIPPED:
            member = archive.extractfile(f"{root}/configs/{path.name}")
            assert member is not None and member.read() == path.read_bytes()
    assert not [n for n in names if "/genvdis/configs/" in n]  # one source, not two copies


def test_the_version_has_one_source():
    """genvdis/_version.py declares the version; pyproject.toml reads it from there (so the
    installed metadata agrees), and genvdis.__version__ and `genvdis --version` are it."""
    from genvdis._version import __version__

    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = {attr = "genvdis._version.__version__"}' in pyproject
    assert re.search(r'^version = "', pyproject, re.M) is None  # no second copy
    assert genvdis.__version__ == __version__ == metadata.version("genvdis")
    assert invoke("--version").stdout.strip() == __version__


# --- names instead of paths -----------------------------------------------------------------


def test_an_unknown_name_lists_the_built_in_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = one_line_error(invoke("run", "pimaa"), "'pimaa'", "built-in", "pima", "voting")
    assert "theory-binary" not in message  # `run` takes panels only
    one_line_error(invoke("theory", "nope"), "'nope'", "theory-binary", "theory-gaussian")
    one_line_error(invoke("validate", "nope"), "'nope'", "pima", "theory-binary")
    one_line_error(invoke("theory", "pima"), "'pima'", "genvdis run pima")
    one_line_error(invoke("run", "theory-binary"), "genvdis theory theory-binary")
    assert not (tmp_path / "results").exists()


def test_a_file_that_exists_wins_over_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pima").write_text("name: mine\n")
    assert builtin.resolve("pima", "panel") == Path("pima")
    one_line_error(invoke("validate", "pima"), "pima: ")  # the local file, which is not valid
    (tmp_path / "pima").unlink()
    assert builtin.resolve("pima", "panel") == builtin.folder() / "pima.yaml"
    result = invoke("validate", "pima", "theory-gaussian")
    assert result.exit_code == 0, result.output
    assert "pima: ok (pima, 13 sizes)" in result.stdout
    assert "theory-gaussian: ok (theory theory-gaussian" in result.stdout


def test_run_a_built_in_name_from_any_folder(tmp_path, monkeypatch, mirror_env):
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "pima", "--splits", "3", "--quiet")
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "results" / "pima" / "summary.csv")
    resolved = yaml.safe_load((tmp_path / "results" / "pima" / "config.yaml").read_text())
    assert resolved["panel"] == 1 and resolved["splits"] == 3
    assert sorted(set(summary["m"])) == resolved["sizes"] == builtin_sizes("pima")


def builtin_sizes(name: str) -> list[int]:
    return yaml.safe_load((REPO / "configs" / f"{name}.yaml").read_text())["sizes"]


def test_configs_lists_every_built_in_config():
    result = invoke("configs")
    assert result.exit_code == 0, result.output
    for config in builtin.builtin_configs():
        line = next(ln for ln in result.stdout.splitlines() if f" {config.name} " in ln)
        assert config.kind in line and config.dataset.split()[0] in line
    assert str(builtin.folder()) in " ".join(result.stdout.split())


# --- genvdis init ---------------------------------------------------------------------------


def kinds_of(config: Path) -> dict[str, str]:
    return yaml.safe_load(config.read_text())["dataset"]["kinds"]


def validate_and_run(config: Path, out: Path) -> pd.DataFrame:
    result = invoke("validate", str(config))
    assert result.exit_code == 0 and "ok" in result.stdout, result.output
    result = invoke("run", str(config), "--splits", "3", "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    return pd.read_csv(next(out.glob("*/summary.csv")))


def test_init_on_the_toy_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("init", str(TOY), "--target", "label")
    assert result.exit_code == 0, result.output
    config = tmp_path / "toy.yaml"
    data = yaml.safe_load(config.read_text())
    assert kinds_of(config) == {
        "age": "continuous", "income": "continuous", "visits": "discrete",  # 8 whole numbers
        "region": "discrete", "plan": "discrete",
    }  # fmt: skip
    assert data["target"] == {"positive": ["yes"]}  # 138 yes against 162 no: the smaller
    assert (config.parent / data["dataset"]["path"]).resolve() == TOY.resolve()
    assert data["sizes"][0] == 10 and data["sizes"][-1] == 225  # 3/4 of 300 rows
    text = config.read_text()
    assert '"no" 162, "yes" 138' in text and "at most 10 distinct values" in text
    summary = validate_and_run(config, tmp_path / "results")
    assert sorted(set(summary["m"])) == data["sizes"]


def test_init_on_breast_cancer_from_scikit_learn(tmp_path, monkeypatch):
    bunch = load_breast_cancer(as_frame=True)
    table = bunch.frame.drop(columns="target")
    table["diagnosis"] = bunch.target_names[bunch.target]
    (tmp_path / "data").mkdir()
    table.to_csv(tmp_path / "data" / "wdbc.csv", index=False)
    monkeypatch.chdir(tmp_path)
    result = invoke("init", "data/wdbc.csv", "--target", "diagnosis", "-o", "cfg/bc.yaml")
    assert result.exit_code == 0, result.output
    config = tmp_path / "cfg" / "bc.yaml"
    data = yaml.safe_load(config.read_text())
    assert data["dataset"]["path"] == "../data/wdbc.csv"  # read from the config's folder
    assert set(kinds_of(config).values()) == {"continuous"} and len(kinds_of(config)) == 30
    assert data["target"] == {"positive": ["malignant"]}  # 212 of 569
    assert data["sizes"][-1] == int(0.75 * 569)
    summary = validate_and_run(config, tmp_path / "results")
    assert set(summary["model"]) == {"naive_bayes", "logistic_regression", "majority"}


def test_init_with_positive_and_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("init", str(TOY), "--target", "label").exit_code == 0
    before = (tmp_path / "toy.yaml").read_text()
    one_line_error(invoke("init", str(TOY), "--target", "label"), "toy.yaml", "--force")
    assert (tmp_path / "toy.yaml").read_text() == before  # kept
    result = invoke("init", str(TOY), "--target", "label", "--positive", "no", "--force")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load((tmp_path / "toy.yaml").read_text())["target"] == {"positive": ["no"]}


def test_init_threshold_multiclass_missing_and_unusable_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({
        "x": rng.normal(size=n).round(3), "level": rng.integers(0, 3, n).astype(str),
        "id": [f"row{i}" for i in range(n)], "constant": "same",
        "score": rng.normal(50, 10, n).round(2), "grade": rng.choice(list("ABCD"), n),
    })  # fmt: skip
    frame.loc[:39, "level"] = "?"  # 20% missing, all in a discrete column
    frame.to_csv("t.csv", index=False)
    assert invoke("init", "t.csv", "--target", "score").exit_code == 0
    data = yaml.safe_load(Path("t.yaml").read_text())
    assert data["target"] == {"threshold": {"op": ">", "value": "median"}}
    assert data["attributes"] == ["x", "level", "grade"]  # no id, no constant
    assert data["missing"] == "category"
    assert invoke("init", "t.csv", "--target", "grade", "--force").exit_code == 0
    data = yaml.safe_load(Path("t.yaml").read_text())
    largest = frame["grade"].value_counts().idxmax()
    assert data["target"] == {"positive": [largest]}  # one against the rest
    frame["x"] = frame["x"].astype(str)
    frame.loc[:39, "x"] = ""  # now continuous cells are missing too
    frame.to_csv("t.csv", index=False)
    assert invoke("init", "t.csv", "--target", "grade", "--force").exit_code == 0
    assert yaml.safe_load(Path("t.yaml").read_text())["missing"] == "impute"
    validate_and_run(Path("t.yaml"), tmp_path / "results")


def test_init_bad_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke("init", "nope.csv", "--target", "y"), "nope.csv", "not found")
    one_line_error(invoke("init", str(TOY), "--target", "lable"), "'lable'", "columns: age")
    one_line_error(invoke("init", str(TOY), "--target", "label", "--positive", "maybe"),
                   "--positive", "'maybe'", '"yes" 138')  # fmt: skip
    Path("one.csv").write_text("a,y\n" + "".join(f"{i},x\n" for i in range(20)))
    one_line_error(invoke("init", "one.csv", "--target", "y"), "'y'", "two classes")
    Path("few.csv").write_text("a,y\n1,x\n2,x\n3,z\n4,x\n")
    one_line_error(invoke("init", "few.csv", "--target", "y"), "too few")
    Path("bare.csv").write_text("a,y\n" + "".join(f"1,{i % 2}\n" for i in range(20)))
    one_line_error(invoke("init", "bare.csv", "--target", "y"), "no usable attribute")
    one_line_error(invoke("init", "bare.csv", "--target", "y", "-o", "bare.csv", "--force"),
                   "--output", "the table itself")  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bare.csv", "few.csv", "one.csv"]


@pytest.mark.parametrize(("n", "smaller"), [(9, 4), (40, 5), (106, 53), (768, 268), (45222, 11208)])
def test_the_m_grid_fits_the_table(n, smaller):
    grid = starter.size_grid(n, smaller)
    assert grid == sorted(set(grid)) and grid[-1] <= 0.75 * n and grid[-1] <= starter.MAX_M
    assert grid[0] * smaller >= n  # one example of the smaller class on average
    for m in grid:
        splits.check_size(m, (n - smaller, smaller), "rest")
    if n >= 768:
        assert grid[:3] == [10, 15, 20]
