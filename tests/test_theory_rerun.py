"""`genvdis theory` run again: what is up to date is verified from the manifests, without
drawing data, fitting or drawing figures, and what is not is rebuilt to the same bytes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from genvdis import engine, plotting, theory
from genvdis.theoryconfig import parse_theory_config

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
    root = theory.run_theory(parse_theory_config(CONFIG), out)
    return root, _files(root)


def _copy(first, tmp_path: Path) -> Path:
    root, files = first
    for name, data in files.items():
        (tmp_path / "mini" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mini" / name).write_bytes(data)
    return tmp_path


def test_the_manifest_lists_every_output(first):
    root, files = first
    manifest = json.loads(files[theory.MANIFEST])
    assert set(manifest["files"]) == {"sample_complexity.csv", "fits.csv", "asymptotes.csv",
                                      "mini.png", "mini.pdf"}  # fmt: skip


def test_a_rerun_of_an_up_to_date_folder_does_nothing(first, tmp_path, monkeypatch, caplog):
    out = _copy(first, tmp_path)
    _forbid(monkeypatch, "engine", "asymptote", "plot")
    with caplog.at_level(logging.INFO, logger="genvdis"):
        root = theory.run_theory(parse_theory_config(CONFIG), out)
    assert _files(root) == first[1]
    assert f"mini: up to date ({root})" in caplog.messages


@pytest.mark.parametrize("damage", ["change mini.png", "delete mini.pdf", "delete fits.csv"])
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
        root = theory.run_theory(parse_theory_config(CONFIG), out)
    assert _files(root) == first[1]
    assert f"n3: up to date ({root / 'n3'})" in caplog.messages
    assert not any(message.startswith("mini: up to date") for message in caplog.messages)


def test_a_changed_run_is_run_again_and_only_it(first, tmp_path, monkeypatch):
    out = _copy(first, tmp_path)
    with open(out / "mini" / "n5" / "errors.csv", "a") as handle:
        handle.write("logistic_regression,60,99,1940,0,0.0,False,0\n")
    ran, real = [], engine.run_experiment
    monkeypatch.setattr(
        engine, "run_experiment", lambda c, *a, **k: ran.append(c.name) or real(c, *a, **k)
    )
    root = theory.run_theory(parse_theory_config(CONFIG), out)
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
    root = theory.run_theory(config, out)
    assert sorted(ran) == reruns
    fresh = theory.run_theory(config, tmp_path / "fresh")
    assert _files(root) == _files(fresh)
