"""The command line, through its real entry points: the good paths, and a catalogue of bad
inputs that must each end in exit code 2 with ONE line that names the problem (the config
field, the file, the dataset), no traceback, and nothing half-written in the results folder.
docs/troubleshooting.md lists the same messages for users.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import genvdis
from genvdis.cli import app
from genvdis.data import uci as datasets
from genvdis.experiment import engine
from tests.clichecks import assert_user_error
from tests.conftest import REPO

# The catalogue's good config: the shared toy config (toy.csv, "yes" positive), m = 10 and 20,
# 4 splits in blocks of 2. Each bad case below changes it.
TINY = ("sizes: [10, 20]", "splits: 4", "block_size: 2")
TOY_DATASET = "dataset: {path: toy.csv, target: label}"
PIMA_FILE = "pima-indians-diabetes/pima-indians-diabetes.data"


class Toy(NamedTuple):
    """A case's config: the good config plus `lines`, with `replace` applied."""

    lines: tuple[str, ...]
    replace: dict[str, str]


def toy(*lines: str, replace: dict[str, str] | None = None) -> Toy:
    return Toy(lines, replace or {})


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def work(tmp_path, toy_csv) -> Path:
    """A folder holding toy.csv and the user files of the catalogue."""
    shutil.copyfile(toy_csv, tmp_path / "toy.csv")
    (tmp_path / "one-label.csv").write_text("a,b,y\n1,2,x\n3,4,x\n5,6,x\n")
    (tmp_path / "text.csv").write_text("a,b,y\n1,2,x\n3,oops,z\n5,6,x\n7,8,z\n")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00\x81\x82 not a table")
    (tmp_path / "empty.csv").write_text("")
    return tmp_path


@pytest.fixture
def tiny(toy_config) -> str:
    return toy_config(*TINY)


def write(folder: Path, text: str, name: str = "config.yaml") -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


USER_CSV = "name: own\ndataset: {{path: {file}, target: {target}{kinds}}}\n"
USER_CSV += "target: {{positive: [x]}}\nsizes: [2]\nsplits: 2\n"


def user_csv(file: str, target: str = "y", kinds: str = "") -> str:
    return USER_CSV.format(file=file, target=target, kinds=kinds)


# (id, config text or a change of the good config, extra options, words the one-line message must
# contain)
RUN_CASES = [
    ("malformed-yaml", "name: [tiny\nsplits: 4\n", [], ["config.yaml", "malformed YAML", "line"]),
    ("tab-indented-yaml", "name: tiny\n\tdataset: pima\n", [], ["malformed YAML", "line 2"]),
    ("yaml-list", "- pima\n- voting\n", [], ["config.yaml", "mapping"]),
    ("empty-config", "", [], ["config.yaml", "mapping"]),
    ("unknown-top-level-key", toy("colour: red"), [], ["colour", "unknown key"]),
    (
        "unknown-key-in-model",
        toy("models: [{name: naive_bayes, lapalce: 2}]"),
        [],
        ["models.0", "lapalce", "unknown key"],
    ),
    ("splits-not-a-number", toy(replace={"splits: 4": "splits: many"}), [], ["splits"]),
    ("negative-splits-yaml", toy(replace={"splits: 4": "splits: -5"}), [], ["splits"]),
    ("negative-splits-option", toy(), ["--splits", "-5"], ["--splits", "-5"]),
    ("negative-seed-option", toy(), ["--seed", "-1"], ["--seed"]),
    (
        "unknown-dataset",
        toy(replace={TOY_DATASET: "dataset: pimaa"}),
        [],
        ["'pimaa'", "not registered", "voting"],
    ),
    ("unknown-model", toy("models: [naive_bayes, svm]"), [], ["models.1", "'svm'"]),
    ("duplicate-model", toy("models: [naive_bayes, naive_bayes]"), [], ["once"]),
    ("empty-size-list", toy(replace={"[10, 20]": "[]"}), [], ["sizes"]),
    ("m-too-small", toy(replace={"[10, 20]": "[1, 20]"}), [], ["sizes", ">= 2"]),
    ("m-too-large", toy(replace={"[10, 20]": "[10, 300]"}), [], ["m=300", "300 rows"]),
    ("escaping-name", toy(replace={"name: toy": 'name: "../evil"'}), [], ["config.yaml", "name"]),
    (
        "positive-label-absent",
        toy(replace={'["yes"]': '["maybe"]'}),
        [],
        ["target.positive", "'maybe'"],
    ),
    (
        "target-column-override-absent",
        toy(replace={"target: {": "target: {column: outcome, "}),
        [],
        ["target.column", "'outcome'"],
    ),
    ("attribute-absent", toy("attributes: [age, shoe-size]"), [], ["attributes", "'shoe-size'"]),
    (
        "no-attributes-of-that-kind",  # visits has 9 values: discrete unless declared
        toy(
            "attributes: continuous",
            replace={"label}": "label, kinds: {age: discrete, income: discrete}}"},
        ),
        [],
        ["attributes", "no continuous attributes"],
    ),
    (
        "negative-label-absent",  # was "negative class is empty": it names the label now
        toy(replace={'["yes"]': '["yes"], negative: ["maybe"]'}),
        [],
        ["target.negative", "'maybe'", "does not occur"],
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
    ("jobs-zero", toy(), ["--jobs", "0"], ["--jobs"]),
    ("bogus-backend", toy(), ["--backend", "bogus"], ["--backend", "'bogus'"]),
    ("scheduler-without-dask", toy(), ["--scheduler", "tcp://127.0.0.1:1"], ["--scheduler"]),
    (
        "scheduler-not-an-address",
        toy(),
        ["--backend", "dask", "--scheduler", "bogus:::"],
        ["--scheduler", "bogus:::"],
    ),
]


@pytest.mark.parametrize(("text", "options", "names"), [c[1:] for c in RUN_CASES],
                         ids=[c[0] for c in RUN_CASES])  # fmt: skip
def test_bad_run_input(work, toy_config, text, options, names):
    if "--scheduler" in options and "dask" in options:  # dask reaches (or not) the address
        pytest.importorskip("distributed")
    if isinstance(text, Toy):
        text = toy_config(*TINY, *text.lines, replace=text.replace)
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


def test_yaml_python_tag_is_refused_and_never_executed(work, tiny):
    marker = work / "pwned"
    text = tiny.replace("toy", f"!!python/object/apply:os.system ['touch {marker}']", 1)
    result = invoke("run", write(work, text), "--out", str(work / "results"))
    assert_user_error(result, "malformed YAML", "python/object", out=work / "results")
    assert not marker.exists()


def test_output_path_that_is_a_file(work, tiny):
    target = work / "results"
    target.write_text("not a folder")
    result = invoke("run", write(work, tiny), "--out", str(target))
    assert_user_error(result, "--out", "is a file")
    assert target.read_text() == "not a folder"


def test_every_config_is_checked_before_any_runs(work, tiny):
    out = work / "results"
    good = write(work, tiny, "good.yaml")
    bad = write(work, tiny + "colour: red\n", "bad.yaml")
    assert_user_error(invoke("run", good, bad, "--out", str(out)), "bad.yaml", "colour", out=out)


def test_a_later_configs_data_error_names_that_config(work, tiny):
    out = work / "results"
    good = write(work, tiny, "good.yaml")
    big = tiny.replace("[10, 20]", "[10, 300]").replace("name: toy", "name: big")
    bad = write(work, big, "big.yaml")
    result = invoke("run", good, bad, "--out", str(out), "--quiet")
    message = assert_user_error(result, "big.yaml", "m=300")
    assert "good.yaml" not in message
    assert (out / "toy" / "errors.csv").is_file()  # the good one, before it, did finish


def _source(kind: str, work: Path, base: str, tiny: str) -> str:
    """The catalogue's config on a registered dataset fetched from the mirror `base`, or on a
    copy of toy.csv named by URL (under `base`) and pinned by toy.csv's sha256."""
    if kind == "registered":
        return write(work, tiny.replace(TOY_DATASET, "dataset: pima"))
    sha = hashlib.sha256((work / "toy.csv").read_bytes()).hexdigest()
    dataset = f"dataset: {{url: {base}toy.csv, sha256: {sha}, target: label}}"
    return write(work, tiny.replace(TOY_DATASET, dataset))


@pytest.mark.parametrize("kind", ["registered", "url"])
def test_checksum_mismatch(kind, work, tiny, serve, monkeypatch):
    served = work / "served"  # other bytes where the file should be
    (served / PIMA_FILE).parent.mkdir(parents=True)
    (served / PIMA_FILE).write_bytes(b"6,148,72,35,0,33.6,0.627,50,1\n")
    (served / "toy.csv").write_bytes((work / "toy.csv").read_bytes().replace(b"yes", b"no", 1))
    base = serve(served)
    cache = work / "fresh-cache"
    monkeypatch.setenv("GENVDIS_DATA", str(cache))
    monkeypatch.setenv("GENVDIS_MIRROR", base)
    out = work / "results"
    result = invoke("run", _source(kind, work, base, tiny), "--out", str(out))
    name = Path(PIMA_FILE).name if kind == "registered" else "toy.csv"
    assert_user_error(result, name, "checksum mismatch", out=out)
    assert not any(p.is_file() for p in cache.rglob("*"))  # the bad copy was not kept


@pytest.mark.parametrize("kind", ["registered", "url"])
def test_offline_with_no_cache(kind, work, tiny, dead_mirror, monkeypatch):
    monkeypatch.setenv("GENVDIS_DATA", str(work / "fresh-cache"))
    out = work / "results"
    config = _source(kind, work, dead_mirror, tiny)
    result = invoke("run", config, "--mirror", dead_mirror, "--out", str(out))
    name = Path(PIMA_FILE).name if kind == "registered" else "toy.csv"
    assert_user_error(result, name, "could not download", out=out)


def test_plot_without_results(work):
    (work / "results").mkdir()
    assert_user_error(invoke("plot", str(work / "results")), "no runs", "results")
    assert_user_error(invoke("plot", str(work / "absent")), "absent", "not found")
    assert not any((work / "results").iterdir())


def test_fetch_unknown_dataset(work):
    assert_user_error(invoke("fetch", "pimaa"), "'pimaa'", "not registered")
    assert_user_error(invoke("fetch"), "--all")


def test_validate_bad_configs(work, tiny):
    assert_user_error(invoke("validate", write(work, tiny + "colour: red\n")), "colour")
    unknown = write(work, tiny.replace(TOY_DATASET, "dataset: pimaa"), "u.yaml")
    assert_user_error(invoke("validate", unknown), "'pimaa'")


def test_keyboard_interrupt_is_one_line(work, tiny, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "run_experiment", interrupted)
    result = invoke("run", write(work, tiny), "--out", str(work / "results"))
    assert result.exit_code == 130
    assert result.stderr.strip().splitlines() == [
        "interrupted: finished blocks are kept; rerun to resume"
    ]


def test_a_bug_is_one_line_and_exit_code_1(work, tiny, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(engine, "run_experiment", broken)
    result = invoke("run", write(work, tiny), "--out", str(work / "results"))
    assert result.exit_code == 1
    assert result.stderr.strip() == "internal error: ZeroDivisionError: division by zero"


# --- the real executable ------------------------------------------------------------------


def _module(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "genvdis.cli", *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_python_dash_m_reports_bad_inputs_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [tiny\n")
    for args in (["run", str(bad), "--out", str(tmp_path / "r")], ["validate", str(bad)]):
        done = _module(*args)
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr and str(tmp_path) in done.stderr
    assert not (tmp_path / "r").exists()


def test_python_dash_m_genvdis_is_the_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "genvdis", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip().endswith(genvdis.__version__)


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


def test_datasets_lists_every_registered_dataset_in_full():
    result = invoke("datasets")
    assert result.exit_code == 0
    assert len(datasets.REGISTRY) > 13  # the panels' 13 and the study's
    cells = {cell.strip() for line in result.stdout.splitlines() for cell in line.split("│")}
    assert set(datasets.REGISTRY) <= cells  # names whole, never cut short with an ellipsis


def test_validate_the_shipped_config():
    config = REPO / "configs" / "pima.yaml"
    result = invoke("validate", str(config))
    assert result.exit_code == 0, result.output
    assert "ok" in result.stdout and "pima" in result.stdout


def test_run_then_plot_a_tiny_run(work, tiny):
    config = write(work, tiny)
    out = work / "results"
    result = invoke("run", config, "--out", str(out))
    assert result.exit_code == 0, result.output
    run_dir = out / "toy"

    errors = pd.read_csv(run_dir / "errors.csv")
    columns = ["model", "m", "split", "n_test", "errors", "error", "separable", "trajectories"]
    assert list(errors.columns) == columns
    assert len(errors) == 3 * 2 * 4  # (2 models + the majority class) x sizes x splits
    assert (errors["n_test"] == 300 - errors["m"]).all()  # tested on all the rest
    assert (errors["error"] == errors["errors"] / errors["n_test"]).all()
    summary = pd.read_csv(run_dir / "summary.csv")
    means = errors.groupby(["model", "m"])["error"].mean()
    for row in summary.itertuples():
        assert row.mean == pytest.approx(means[(row.model, row.m)])
        assert row.ci_low <= row.mean <= row.ci_high
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert resolved["genvdis_version"]
    assert resolved["data_checksums"] == {
        "toy.csv": hashlib.sha256((work / "toy.csv").read_bytes()).hexdigest()
    }
    assert resolved["sizes"] == [10, 20] and resolved["splits"] == 4
    assert not (run_dir / ".checkpoints").exists()

    result = invoke("plot", str(out))
    assert result.exit_code == 0, result.output
    for ext in ("png", "pdf"):
        picture = run_dir / f"toy.{ext}"
        assert picture.is_file() and picture.stat().st_size > 1000
    assert (run_dir / "toy.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "toy.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_two_configs_of_one_name_in_one_command_are_refused_before_anything_runs(
    work, tiny, command
):
    """They would write one folder, the second replacing the first's results with exit 0."""
    first = write(work, tiny, "first.yaml")
    second = write(work, tiny.replace("splits: 4", "splits: 5"), "second.yaml")
    assert tiny != tiny.replace("splits: 4", "splits: 5")
    extra = ["--vary", "split=random"] if command == "sweep" else []
    result = invoke(command, first, second, *extra, "--out", str(work / "out"))
    message = assert_user_error(result, "first.yaml", "second.yaml", out=work / "out")
    assert "both are named 'toy'" in message


def test_the_same_config_twice_in_one_command_is_one_run(work, tiny):
    config = write(work, tiny)
    result = invoke("run", config, config, "--out", str(work / "out"))
    assert result.exit_code == 0, result.output
    assert "toy: up to date" in result.stderr


def test_a_run_found_up_to_date_says_only_that(work, tiny):
    """Not "up to date", then "wrote": nothing was written (issue 30)."""
    config = write(work, tiny)
    first = invoke("run", config, "--out", str(work / "out"))
    assert first.exit_code == 0, first.output
    assert "toy: wrote" in first.stderr and "up to date" not in first.stderr
    again = invoke("run", config, "--out", str(work / "out"))
    assert again.exit_code == 0, again.output
    assert "toy: up to date" in again.stderr and "wrote" not in again.stderr
    (work / "out" / "toy" / "summary.csv").unlink()  # rebuilt from errors.csv: written again
    rebuilt = invoke("run", config, "--out", str(work / "out"))
    assert "rebuilt" in rebuilt.stderr and "toy: wrote" in rebuilt.stderr


def test_two_theory_configs_of_one_name_are_refused(tmp_path):
    theory = (REPO / "configs" / "theory-binary.yaml").read_text()
    first, second = tmp_path / "t1.yaml", tmp_path / "t2.yaml"
    first.write_text(theory)
    second.write_text(theory.replace("seed: 0", "seed: 9"))
    result = invoke("theory", str(first), str(second), "--out", str(tmp_path / "out"))
    assert_user_error(result, "t1.yaml", "t2.yaml", "theory-binary", out=tmp_path / "out")


def _edit_a_number(path: Path) -> None:
    """Change one error count of errors.csv (or one mean of summary.csv), keeping its shape."""
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[1].split(",")
    column = 4 if path.name == "errors.csv" else 3  # errors, mean
    fields[column] = str(float(fields[column]) + 1).removesuffix(".0")
    lines[1] = ",".join(fields)
    path.write_text("".join(lines))


@pytest.mark.parametrize(
    ("command", "name"),
    [("report", "errors.csv"), ("report", "summary.csv"), ("plot", "summary.csv")],
)  # report's explorer page shows summary.csv's means
def test_plot_and_report_refuse_numbers_changed_since_the_run(work, tiny, command, name):
    """A file whose bytes are not those manifest.json lists is not the run's: refused, naming
    it, rather than drawn or analysed with exit 0. Without a manifest (which `run` finds no
    finished run in) it is refused too: it was read as it was (issue 30 §3)."""
    config = write(work, tiny)
    assert invoke("run", config, "--out", str(work / "out"), "-q").exit_code == 0
    run_dir = work / "out" / "toy"
    _edit_a_number(run_dir / name)
    assert_user_error(invoke(command, str(work / "out")), str(run_dir / name), "manifest.json")
    (run_dir / "manifest.json").unlink()
    assert_user_error(invoke(command, str(work / "out")), str(run_dir), "no manifest.json")


# --- issue 30 §2: genvdis init never proposes an m that leaves a class without test rows --------


def test_init_proposes_no_m_that_takes_every_row_of_the_smaller_class(tmp_path):
    """2 positives in 60 rows: at m = 45 both positives would be in every stratified training
    set, leaving test sets without one. init's sizes stop at 44, and the written config
    validates against its table."""
    rows = "".join(f"{i * 0.37:.2f},{i % 7},{'p' if i in (3, 40) else 'n'}\n" for i in range(60))
    (tmp_path / "rare.csv").write_text("a,b,y\n" + rows)
    result = invoke("init", str(tmp_path / "rare.csv"), "--target", "y", "--positive", "p",
                    "-o", str(tmp_path / "rare.yaml"))  # fmt: skip
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((tmp_path / "rare.yaml").read_text())
    assert config["sizes"] == [30, 44]
    result = invoke("validate", str(tmp_path / "rare.yaml"))
    assert result.exit_code == 0, result.output
    (tmp_path / "rare.yaml").write_text((tmp_path / "rare.yaml").read_text().replace("44]", "45]"))
    assert_user_error(invoke("validate", str(tmp_path / "rare.yaml")), "m=45", "'positive'")


def test_study_refuses_a_bad_config_before_anything_runs(work, tiny):
    out, folder = work / "results", work / "configs"
    folder.mkdir()
    shutil.copyfile(work / "toy.csv", folder / "toy.csv")
    write(folder, tiny, "good.yaml")
    write(folder, tiny.replace("name: toy", "name: other") + "colour: red\n", "bad.yaml")
    result = invoke("study", str(folder), "--out", str(out))
    assert_user_error(result, "bad.yaml", "colour", out=out)


def test_study_runs_a_folder_and_says_what_it_wrote(work, tiny):
    out, folder = work / "results", work / "configs"
    folder.mkdir()
    shutil.copyfile(work / "toy.csv", folder / "toy.csv")
    write(folder, tiny, "one.yaml")
    write(folder, tiny.replace("name: toy", "name: two"), "two.yaml")
    result = invoke("study", str(folder), "--out", str(out), "--splits", "2")
    assert result.exit_code == 0, result.output
    for name in ("toy", "two"):
        assert f"{name}: wrote {out / name}" in result.stderr
        assert (out / name / "manifest.json").is_file()
    again = invoke("study", str(folder), "--out", str(out), "--splits", "2")
    assert "toy: up to date" in again.stderr and "wrote" not in again.stderr


def test_study_ends_with_its_cross_dataset_report_over_every_run(work, tiny):
    """After the runs: each run's figure, the folder's REPORT and analysis, and the study's own
    files, one study.csv row per config, the same bytes when the study is asked again."""
    out, folder = work / "results", work / "configs"
    folder.mkdir()
    shutil.copyfile(work / "toy.csv", folder / "toy.csv")
    write(folder, tiny, "one.yaml")
    write(folder, tiny.replace("name: toy", "name: two"), "two.yaml")
    result = invoke("study", str(folder), "--out", str(out), "--splits", "3")
    assert result.exit_code == 0, result.output
    for name in ("toy/toy.png", "REPORT.md", "STUDY.md", "study-explorer.html"):
        assert str(out / name) in result.stdout, name
    assert (out / "analysis.csv").is_file()
    study = pd.read_csv(out / "study.csv")
    assert sorted(study["name"]) == ["toy", "two"]
    first = (out / "study.csv").read_bytes(), (out / "STUDY.md").read_bytes()
    again = invoke("study", str(folder), "--out", str(out), "--splits", "3")
    assert again.exit_code == 0, again.output
    assert ((out / "study.csv").read_bytes(), (out / "STUDY.md").read_bytes()) == first
