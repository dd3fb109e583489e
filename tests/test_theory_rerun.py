"""`genvdis theory` run again: what is up to date is verified from the manifests, without
drawing data, fitting or drawing figures, and what is not is rebuilt to the same bytes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from genvdis import api
from genvdis.config.theory import parse_theory_config
from genvdis.errors import UserError
from genvdis.experiment import engine, theory
from genvdis.report import plotting

CONFIG = {
    "name": "mini",
    "kind": "binary",
    "n": [3, 5],
    "effect": 0.4,
    "n_rows": 2000,
    "m": [10, 30, 60],
    "splits": 4,
    "epsilon": [0.05],
    "boot": 20,
}


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _forbid(monkeypatch, *names: str) -> None:
    """Make the named steps fail the test if they are called."""

    def refuse(*args, **kwargs):
        raise AssertionError("called although everything was up to date")

    for name in names:
        module, attribute = {"engine": (engine, "run_experiment"),
                             "asymptote": (theory, "asymptote_row"),
                             "plot": (plotting, "plot_theory")}[name]  # fmt: skip
        monkeypatch.setattr(module, attribute, refuse)


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    out = tmp_path_factory.mktemp("theory")
    root = api.run_theory(parse_theory_config(CONFIG), out)
    return root, _files(root)


def _copy(first, tmp_path: Path) -> Path:
    root, files = first
    for name, data in files.items():
        (tmp_path / "mini" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mini" / name).write_bytes(data)
    return tmp_path


@pytest.mark.slow
def test_the_manifest_lists_every_output(first):
    root, files = first
    manifest = json.loads(files[theory.MANIFEST])
    assert set(manifest["files"]) == {"sample_complexity.csv", "fits.csv", "asymptotes.csv",
                                      "mini.png", "mini.pdf"}  # fmt: skip


@pytest.mark.slow
def test_a_rerun_of_an_up_to_date_folder_does_nothing(first, tmp_path, monkeypatch, caplog):
    out = _copy(first, tmp_path)
    _forbid(monkeypatch, "engine", "asymptote", "plot")
    with caplog.at_level(logging.INFO, logger="genvdis"):
        root = api.run_theory(parse_theory_config(CONFIG), out)
    assert _files(root) == first[1]
    assert f"mini: up to date ({root})" in caplog.messages


@pytest.mark.parametrize("damage", ["change mini.png", "delete mini.pdf", "delete fits.csv"])
@pytest.mark.slow
def test_a_damaged_output_is_rebuilt_without_running_the_n_again(
    first, tmp_path, monkeypatch, caplog, damage
):
    out = _copy(first, tmp_path)
    action, name = damage.split()
    if action == "change":
        (out / "mini" / name).write_bytes(b"not a figure")
    else:  # gone, and struck from the manifest too: the manifest must list every output
        (out / "mini" / name).unlink()
        manifest = json.loads((out / "mini" / theory.MANIFEST).read_text())
        del manifest["files"][name]
        (out / "mini" / theory.MANIFEST).write_text(json.dumps(manifest))
    _forbid(monkeypatch, "engine")
    with caplog.at_level(logging.INFO, logger="genvdis"):
        root = api.run_theory(parse_theory_config(CONFIG), out)
    assert _files(root) == first[1]
    assert f"n3: up to date ({root / 'n3'})" in caplog.messages
    assert not any(message.startswith("mini: up to date") for message in caplog.messages)


@pytest.mark.slow
def test_a_changed_run_is_run_again_and_only_it(first, tmp_path, monkeypatch):
    out = _copy(first, tmp_path)
    with open(out / "mini" / "n5" / "errors.csv", "a") as handle:
        handle.write("logistic_regression,60,99,1940,0,0.0,False,0\n")
    ran, real = [], engine.run_experiment
    monkeypatch.setattr(
        engine, "run_experiment", lambda c, *a, **k: ran.append(c.name) or real(c, *a, **k)
    )
    root = api.run_theory(parse_theory_config(CONFIG), out)
    assert ran == ["n5"]
    assert _files(root) == first[1]


@pytest.mark.parametrize(
    "change, reruns",
    [
        ({"epsilon": [0.05, 0.1]}, []),
        ({"splits": 5}, ["n3", "n5"]),
        ({"effect": 0.3}, ["n3", "n5"]),
    ],
)
@pytest.mark.slow
def test_a_changed_config_is_never_taken_for_up_to_date(
    first, tmp_path, monkeypatch, change, reruns
):
    """epsilon changes only the folder's own outputs; splits and effect change every run."""
    out = _copy(first, tmp_path)
    ran, real = [], engine.run_experiment
    monkeypatch.setattr(
        engine, "run_experiment", lambda c, *a, **k: ran.append(c.name) or real(c, *a, **k)
    )
    config = parse_theory_config({**CONFIG, **change})
    root = api.run_theory(config, out)
    assert sorted(ran) == reruns
    fresh = api.run_theory(config, tmp_path / "fresh")
    assert _files(root) == _files(fresh)


# --- issue 30 §5: a run and a theory of one name in one --out ----------------------------------


@pytest.mark.slow
def test_a_run_and_a_theory_of_one_name_are_refused_in_either_order(
    first, tmp_path, write_toy, toy_config
):
    """A run named like a theory wrote its summary.csv into the theory's folder and `plot`
    drew its figure over the theory's (the theory never up to date again); the theory into a
    run's folder likewise. Both are refused before anything runs, the other's files intact."""
    from typer.testing import CliRunner

    from genvdis.cli import app

    out = _copy(first, tmp_path / "out")
    before = _files(out / "mini")
    text = toy_config("sizes: [10, 20]", "splits: 4", replace={"name: toy": "name: mini"})
    config = write_toy(tmp_path, text, "mini.yaml")
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "-q"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert message.startswith(f"error: {config}: {out / 'mini'}") and "'mini'" in message
    assert "theory" in message and len(message.splitlines()) == 1
    assert _files(out / "mini") == before
    runs = tmp_path / "runs"
    assert CliRunner().invoke(app, ["run", str(config), "--out", str(runs), "-q"]).exit_code == 0
    made = _files(runs / "mini")
    theory_config = tmp_path / "theory.yaml"
    theory_config.write_text(json.dumps(CONFIG))
    result = CliRunner().invoke(app, ["theory", str(theory_config), "--out", str(runs), "-q"])
    assert result.exit_code == 2, result.output
    assert f"{runs / 'mini'}" in result.stderr and "a run named 'mini'" in result.stderr
    assert _files(runs / "mini") == made
    with pytest.raises(UserError, match="a run named 'mini'"):  # the API alike
        api.run_theory(parse_theory_config(CONFIG), runs)


@pytest.mark.slow
def test_an_ns_errors_are_read_through_the_runs_check(first, tmp_path, monkeypatch):
    """theory read each n's errors.csv as it was, after deciding the n's run was up to date:
    a file replaced in between gave m* of numbers that are not the run's. Now the bytes read
    are the bytes checked against the n's manifest, as every reader of a run does."""
    out = _copy(first, tmp_path)
    errors = out / "mini" / "n3" / "errors.csv"
    lines = errors.read_text().splitlines(keepends=True)
    errors.write_text("".join([lines[0], *lines[1:]][:-1]))  # one split's row fewer
    monkeypatch.setattr(theory, "_recorded_run", lambda experiment, run_dir: "up to date")
    with pytest.raises(UserError, match=r"n3/errors.csv: changed since its run wrote it"):
        theory._one_n(parse_theory_config(CONFIG), out / "mini", 3, 1, None, False, 0.0)
