"""The command line, through its real entry points: the good paths, and a catalogue of bad
inputs that must each end in exit code 2 with ONE line that names the problem (the config
field, the file, the dataset), no traceback, and nothing half-written in the results folder.
docs/troubleshooting.md lists the same messages for users.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from genvdis import datasets, engine
from genvdis.cli import app

PIMA = """\
name: tiny
dataset: pima
attributes: continuous
target: {positive: ["1"]}
sizes: [10, 20]
splits: 4
block_size: 2
"""
PIMA_FILE = "pima-indians-diabetes/pima-indians-diabetes.data"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_user_error(result, *names: str, out: Path | None = None) -> str:
    """Exit 2, one line starting 'error:' that names every one of `names`, no traceback, and
    nothing written under `out`."""
    message = result.stderr.strip()
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert len(message.splitlines()) == 1, message
    assert message.startswith("error: "), message
    assert "Traceback" not in result.output
    for name in names:
        assert name in message, (name, message)
    if out is not None:
        assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))
    return message


@pytest.fixture
def work(tmp_path, mirror_env) -> Path:
    """A folder holding user files for the catalogue (the registered data come from the
    offline mirror)."""
    (tmp_path / "one-label.csv").write_text("a,b,y\n1,2,x\n3,4,x\n5,6,x\n")
    (tmp_path / "text.csv").write_text("a,b,y\n1,2,x\n3,oops,z\n5,6,x\n7,8,z\n")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00\x81\x82 not a table")
    (tmp_path / "empty.csv").write_text("")
    return tmp_path


def write(folder: Path, text: str, name: str = "config.yaml") -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def with_lines(*extra: str, replace: dict[str, str] | None = None) -> str:
    text = PIMA
    for old, new in (replace or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text + "".join(line + "\n" for line in extra)


USER_CSV = "name: own\ndataset: {{path: {file}, target: {target}{kinds}}}\n"
USER_CSV += "target: {{positive: [x]}}\nsizes: [2]\nsplits: 2\n"


def user_csv(file: str, target: str = "y", kinds: str = "") -> str:
    return USER_CSV.format(file=file, target=target, kinds=kinds)


# (id, config text, extra options, words the one-line message must contain)
RUN_CASES = [
    ("malformed-yaml", "name: [tiny\nsplits: 4\n", [], ["config.yaml", "malformed YAML", "line"]),
    ("tab-indented-yaml", "name: tiny\n\tdataset: pima\n", [], ["malformed YAML", "line 2"]),
    ("yaml-list", "- pima\n- voting\n", [], ["config.yaml", "mapping"]),
    ("empty-config", "", [], ["config.yaml", "mapping"]),
    ("unknown-top-level-key", with_lines("colour: red"), [], ["colour", "unknown key"]),
    (
        "unknown-key-in-model",
        with_lines("models: [{name: naive_bayes, lapalce: 2}]"),
        [],
        ["models.0", "lapalce", "unknown key"],
    ),
    ("splits-not-a-number", with_lines(replace={"splits: 4": "splits: many"}), [], ["splits"]),
    ("negative-splits-yaml", with_lines(replace={"splits: 4": "splits: -5"}), [], ["splits"]),
    ("negative-splits-option", PIMA, ["--splits", "-5"], ["--splits", "-5"]),
    ("negative-seed-option", PIMA, ["--seed", "-1"], ["--seed"]),
    (
        "unknown-dataset",
        with_lines(replace={"dataset: pima": "dataset: pimaa"}),
        [],
        ["'pimaa'", "not registered", "voting"],
    ),
    ("unknown-model", with_lines("models: [naive_bayes, svm]"), [], ["models.1", "'svm'"]),
    ("duplicate-model", with_lines("models: [naive_bayes, naive_bayes]"), [], ["once"]),
    ("empty-size-list", with_lines(replace={"[10, 20]": "[]"}), [], ["sizes"]),
    ("m-too-small", with_lines(replace={"[10, 20]": "[1, 20]"}), [], ["sizes", ">= 2"]),
    ("m-too-large", with_lines(replace={"[10, 20]": "[10, 768]"}), [], ["m=768", "768 rows"]),
    (
        "escaping-name",
        with_lines(replace={"name: tiny": 'name: "../evil"'}),
        [],
        ["config.yaml", "name"],
    ),
    (
        "positive-label-absent",
        with_lines(replace={'["1"]': '["yes"]'}),
        [],
        ["target.positive", "'yes'"],
    ),
    (
        "registered-target-column-absent",
        with_lines(replace={"target: {": "target: {column: outcome, "}),
        [],
        ["target.column", "'outcome'"],
    ),
    (
        "attribute-absent",
        with_lines(replace={"attributes: continuous": "attributes: [glucose, shoe-size]"}),
        [],
        ["attributes", "'shoe-size'"],
    ),
    (
        "no-attributes-of-that-kind",
        "name: l\ndataset: lenses\nattributes: continuous\ntarget: {positive: ['1']}\n"
        "sizes: [4]\nsplits: 2\n",
        [],
        ["attributes", "no continuous attributes"],
    ),
    (
        "negative-class-empty",
        "name: l\ndataset: lenses\ntarget: {positive: ['1'], negative: ['9']}\n"
        "sizes: [4]\nsplits: 2\n",
        [],
        ["target", "negative class is empty"],
    ),
    ("one-label-csv", user_csv("one-label.csv"), [], ["target", "negative class is empty"]),
    ("missing-data-file", user_csv("nope.csv"), [], ["nope.csv", "not found"]),
    ("target-column-absent", user_csv("one-label.csv", "label"), [], ["one-label.csv", "'label'"]),
    (
        "text-in-continuous-column",
        user_csv("text.csv", kinds=", kinds: {b: continuous}"),
        [],
        ["'b'", "continuous", "'oops'"],
    ),
    (
        "kinds-for-absent-column",
        user_csv("text.csv", kinds=", kinds: {zz: continuous}"),
        [],
        ["dataset.kinds", "'zz'"],
    ),
    ("binary-data-file", user_csv("binary.csv"), [], ["binary.csv", "cannot be read"]),
    ("empty-data-file", user_csv("empty.csv"), [], ["empty.csv", "cannot be read"]),
    ("jobs-zero", PIMA, ["--jobs", "0"], ["--jobs"]),
    ("bogus-backend", PIMA, ["--backend", "bogus"], ["--backend", "'bogus'"]),
    ("scheduler-without-dask", PIMA, ["--scheduler", "tcp://127.0.0.1:1"], ["--scheduler"]),
    (
        "scheduler-not-an-address",
        PIMA,
        ["--backend", "dask", "--scheduler", "bogus:::"],
        ["--scheduler", "bogus:::"],
    ),
]


@pytest.mark.parametrize(("text", "options", "names"), [c[1:] for c in RUN_CASES],
                         ids=[c[0] for c in RUN_CASES])  # fmt: skip
def test_bad_run_input(work, text, options, names):
    out = work / "results"
    config = write(work, text)
    before = sorted(work.iterdir())
    message = assert_user_error(invoke("run", config, "--out", str(out), *options), *names)
    assert message.startswith(f"error: {config}: ") or message.startswith("error: --")
    assert sorted(work.iterdir()) == before  # no results folder, nothing beside it either


def test_missing_config_file(work):
    out = work / "results"
    result = invoke("run", str(work / "nope.yaml"), "--out", str(out))
    assert_user_error(result, "nope.yaml", "not found", out=out)


def test_yaml_python_tag_is_refused_and_never_executed(work):
    marker = work / "pwned"
    text = PIMA.replace("tiny", f"!!python/object/apply:os.system ['touch {marker}']")
    result = invoke("run", write(work, text), "--out", str(work / "results"))
    assert_user_error(result, "malformed YAML", "python/object", out=work / "results")
    assert not marker.exists()


def test_output_path_that_is_a_file(work):
    target = work / "results"
    target.write_text("not a folder")
    result = invoke("run", write(work, PIMA), "--out", str(target))
    assert_user_error(result, "--out", "is a file")
    assert target.read_text() == "not a folder"


def test_every_config_is_checked_before_any_runs(work):
    out = work / "results"
    good = write(work, PIMA, "good.yaml")
    bad = write(work, with_lines("colour: red"), "bad.yaml")
    assert_user_error(invoke("run", good, bad, "--out", str(out)), "bad.yaml", "colour", out=out)


def test_a_later_configs_data_error_names_that_config(work):
    out = work / "results"
    good = write(work, PIMA, "good.yaml")
    bad = write(work, with_lines(replace={"[10, 20]": "[10, 768]"}), "big.yaml")
    result = invoke("run", good, bad, "--out", str(out), "--quiet")
    message = assert_user_error(result, "big.yaml", "m=768")
    assert "good.yaml" not in message
    assert (out / "tiny" / "errors.csv").is_file()  # the good one, before it, did finish


def _corrupt_mirror(tmp_path: Path, uci_dir: Path) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / PIMA_FILE).parent.mkdir(parents=True)
    good = (uci_dir / PIMA_FILE).read_bytes()
    (mirror / PIMA_FILE).write_bytes(good.replace(b"\n6,", b"\n7,", 1))
    return mirror


def test_checksum_mismatch(work, uci_dir, monkeypatch):
    cache = work / "fresh-cache"
    monkeypatch.setenv("GENVDIS_DATA", str(cache))
    monkeypatch.setenv("GENVDIS_MIRROR", str(_corrupt_mirror(work, uci_dir)))
    out = work / "results"
    result = invoke("run", write(work, PIMA), "--out", str(out))
    assert_user_error(result, "pima-indians-diabetes.data", "checksum mismatch", out=out)
    assert not any(p.is_file() for p in cache.rglob("*"))  # the bad copy was not kept


def test_offline_with_no_cache(work, monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("GENVDIS_DATA", str(work / "fresh-cache"))
    out = work / "results"
    options = ["--mirror", f"http://127.0.0.1:{port}/", "--out", str(out)]
    result = invoke("run", write(work, PIMA), *options)
    assert_user_error(result, "pima-indians-diabetes.data", "could not download", out=out)


def test_plot_without_results(work):
    (work / "results").mkdir()
    assert_user_error(invoke("plot", str(work / "results")), "no runs", "results")
    assert_user_error(invoke("plot", str(work / "absent")), "absent", "not found")
    assert not any((work / "results").iterdir())


def test_fetch_unknown_dataset(work):
    assert_user_error(invoke("fetch", "pimaa"), "'pimaa'", "not registered")
    assert_user_error(invoke("fetch"), "--all")


def test_validate_bad_configs(work):
    assert_user_error(invoke("validate", write(work, with_lines("colour: red"))), "colour")
    unknown = write(work, with_lines(replace={"dataset: pima": "dataset: pimaa"}), "u.yaml")
    assert_user_error(invoke("validate", unknown), "'pimaa'")


def test_keyboard_interrupt_is_one_line(work, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "run_experiment", interrupted)
    result = invoke("run", write(work, PIMA), "--out", str(work / "results"))
    assert result.exit_code == 130
    assert result.stderr.strip().splitlines() == [
        "interrupted: finished blocks are kept; rerun to resume"
    ]


def test_a_bug_is_one_line_and_exit_code_1(work, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(engine, "run_experiment", broken)
    result = invoke("run", write(work, PIMA), "--out", str(work / "results"))
    assert result.exit_code == 1
    assert result.stderr.strip() == "internal error: ZeroDivisionError: division by zero"


# --- the real executable ------------------------------------------------------------------


def _module(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "genvdis.cli", *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_python_dash_m_reports_bad_inputs_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [tiny\n")
    for args in (["run", str(bad), "--out", str(tmp_path / "r")], ["validate", str(bad)]):
        done = _module(*args)
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr and str(tmp_path) in done.stderr
    assert not (tmp_path / "r").exists()


def test_the_entry_point_script_runs():
    script = Path(sys.executable).with_name("genvdis")
    if not script.is_file():
        pytest.skip("genvdis is not installed as a script next to this python")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip()


# --- good paths -----------------------------------------------------------------------------


def test_help_lists_the_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("run", "plot", "fetch", "datasets", "validate", "report"):
        assert command in result.stdout


def test_datasets_lists_all_thirteen_in_full():
    result = invoke("datasets")
    assert result.exit_code == 0
    assert len(datasets.REGISTRY) == 13
    cells = {cell.strip() for line in result.stdout.splitlines() for cell in line.split("│")}
    assert set(datasets.REGISTRY) <= cells  # names whole, never cut short with an ellipsis


def test_validate_the_shipped_config():
    config = Path(__file__).resolve().parents[1] / "configs" / "pima.yaml"
    result = invoke("validate", str(config))
    assert result.exit_code == 0, result.output
    assert "ok" in result.stdout and "pima" in result.stdout


def test_run_then_plot_a_tiny_pima(work):
    config = write(work, PIMA.replace("name: tiny", "name: pima"))
    out = work / "results"
    result = invoke("run", config, "--out", str(out))
    assert result.exit_code == 0, result.output
    run_dir = out / "pima"

    errors = pd.read_csv(run_dir / "errors.csv")
    assert list(errors.columns) == ["model", "m", "split", "n_test", "errors", "error", "separable"]
    assert len(errors) == 2 * 2 * 4  # models x sizes x splits
    assert (errors["n_test"] == 768 - errors["m"]).all()  # tested on all the rest
    assert (errors["error"] == errors["errors"] / errors["n_test"]).all()
    summary = pd.read_csv(run_dir / "summary.csv")
    means = errors.groupby(["model", "m"])["error"].mean()
    for row in summary.itertuples():
        assert row.mean == pytest.approx(means[(row.model, row.m)])
        assert row.ci_low <= row.mean <= row.ci_high
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert resolved["genvdis_version"]
    assert resolved["data_checksums"] == {PIMA_FILE: datasets.REGISTRY["pima"].files[0].sha256}
    assert resolved["sizes"] == [10, 20] and resolved["splits"] == 4
    assert not (run_dir / ".checkpoints").exists()

    result = invoke("plot", str(out))
    assert result.exit_code == 0, result.output
    for ext in ("png", "pdf"):
        picture = run_dir / f"pima.{ext}"
        assert picture.is_file() and picture.stat().st_size > 1000
    assert (run_dir / "pima.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "pima.pdf").read_bytes()[:5] == b"%PDF-"
