"""Hostile inputs, as careless users and damaged files make them (issue 18).

One table: each row is an input (a config, data files, results files), a command line, the
exit code it must end with and words its one line on stderr must hold. Exit 2 means one line
`error: ...`, no traceback, and (for `run` and `theory`) no results folder; a row checked by
`validate` too must be refused there, without the data. Then specific tests: a planted inf or
NaN never becomes a score, the scorer counts a NaN decision as an error and fails loudly, a
full disk during a download is named as such, and `-q` shows errors only. All data are tiny
files written here (a 40-row CSV), never the UCI files.
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.data import fetch
from genvdis.data.preprocessing import FeatureLayout
from genvdis.experiment import scoring
from genvdis.experiment.scoring import EncodedData, NonFiniteDecisions, count_errors
from genvdis.models import naive_bayes as models
from genvdis.models.logistic._solves import pseudo_inverse_steps

N_ROWS = 40
COLUMNS = ["a", "b", "c", "d", "y"]


def _cells(i: int) -> list[str]:
    """Row i of the tiny data: three continuous attributes (> 10 distinct values each), one
    discrete, the label y in {x, z}; x rows have larger a."""
    label = "x" if i % 2 else "z"
    a = (i * 37 % 50) / 10 + (1.5 if label == "x" else 0.0)
    return [f"{a:.2f}", f"{(i * 7 % 11) / 3:.4f}", f"{(i * 13 % 17) / 4:.2f}", "uvw"[i % 3], label]


def table(
    set_cell: tuple[int, str, str] | None = None,
    header: str | None = None,
    columns: list[str] | None = None,
    fill: tuple[str, str] | None = None,
) -> str:
    """The tiny CSV, optionally with one cell replaced (data row r, 1-based; column; text), a
    header written as given, only some columns, or every cell of a column filled with one
    text (a column name: a copy of that column's)."""
    rows = [_cells(i) for i in range(N_ROWS)]
    if set_cell:
        row, column, text = set_cell
        rows[row - 1][COLUMNS.index(column)] = text
    for cells in rows if fill else []:
        text = cells[COLUMNS.index(fill[1])] if fill[1] in COLUMNS else fill[1]
        cells[COLUMNS.index(fill[0])] = text
    keep = [COLUMNS.index(c) for c in columns or COLUMNS]
    head = header or ",".join(COLUMNS[k] for k in keep)
    return "\n".join([head, *(",".join(r[k] for k in keep) for r in rows)]) + "\n"


def scaled(factor: float) -> str:
    """The tiny CSV with its continuous attributes a, b, c in other units (times factor)."""
    lines = table().splitlines()
    rows = [line.split(",") for line in lines[1:]]
    for cells in rows:
        cells[:3] = [repr(float(cell) * factor) for cell in cells[:3]]
    return "\n".join([lines[0], *(",".join(cells) for cells in rows)]) + "\n"


BASE = """\
name: tiny
dataset: {path: data.csv, target: y}
target: {positive: [x]}
sizes: [4, 10]
splits: 3
"""


def edited(text: str, *extra: str, replace: dict[str, str] | None = None) -> str:
    """A config's text with some of it replaced and lines added."""
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    return text + "".join(line + "\n" for line in extra)


def config(*extra: str, replace: dict[str, str] | None = None) -> str:
    return edited(BASE, *extra, replace=replace)


def dataset(extra: str) -> str:
    """BASE with more keys in its dataset mapping."""
    return config(replace={"target: y}": f"target: y, {extra}}}"})


THEORY = """\
name: th
kind: binary
n: [2, 4]
effect: 0.4
n_rows: 400
m: [10, 20]
splits: 4
epsilon: [0.05]
"""


def theory(*extra: str, replace: dict[str, str] | None = None) -> str:
    return edited(THEORY, *extra, replace=replace)


def alias_bomb() -> str:
    """A "billion laughs": nine levels of nine aliases, 9^9 strings inside target.positive."""
    lines = ['  - &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 9):
        lines.append(f"  - &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    return config(replace={"target: {positive: [x]}": "target:\n positive:\n" + "\n".join(lines)})


SUMMARY = (
    "model,m,n_splits,mean,std,sem,ci_low,ci_high,frac_separable\n"
    "naive_bayes,4,3,0.3,0.1,0.05,0.2,0.4,0.0\n"
    "logistic_regression,4,3,0.4,0.1,0.05,0.3,0.5,0.5\n"
)
ERRORS = (
    "model,m,split,n_test,errors,error,separable\n"
    "naive_bayes,4,0,36,9,0.25,False\n"
    "logistic_regression,4,0,36,12,0.3333,True\n"
)
RUN = "results/run"


class Row(NamedTuple):
    id: str
    files: dict[str, str | bytes]  # besides data.csv (the clean tiny table), by relative path
    config: str | None  # written to config.yaml
    args: list[str]  # {config}, {out} and {dir} are filled in
    code: int
    words: list[str]
    validate: bool = False  # `genvdis validate` must refuse it too, without the data
    leaves_folder: bool = False  # found while running, after the run folder was made


RUN_ARGS = ["run", "{config}", "--out", "{out}", "-q"]


def bad_config(id: str, text: str, *words: str) -> Row:
    """A config refused by its text alone: by `run` and by `validate`."""
    return Row(id, {}, text, RUN_ARGS, 2, ["config.yaml", *words], validate=True)


def bad_data(id: str, files: dict, text: str, *words: str, **flags) -> Row:
    """A config `validate` accepts, refused once `run` reads the data."""
    return Row(id, files, text, RUN_ARGS, 2, list(words), **flags)


def bad_theory(id: str, text: str, *words: str) -> Row:
    return Row(id, {}, text, ["theory", "{config}", "--out", "{out}", "-q"], 2, list(words), True)


def bad_results(id: str, command: str, files: dict, *words: str, manifest: bool = True) -> Row:
    """`plot` or `report` on a results folder holding a damaged file. With `manifest`, the
    run's other files are good ones and its manifest.json lists every file's bytes as laid
    out (as if the damage were a run's), so the reader's own check of the file is what
    refuses it."""
    if manifest:
        files = _listed(files)
    return Row(id, files, None, [command, "{dir}/results"], 2, list(words))


def _listed(files: dict) -> dict:
    """`files` with a good summary.csv and config.yaml where they lack one, and a manifest
    listing each run file's sha256 (errors.csv's, where there is none: of ERRORS)."""
    files = {RUN + "/summary.csv": SUMMARY, RUN + "/config.yaml": "name: run\n", **files}

    def sha(name: str) -> str:
        content = files.get(f"{RUN}/{name}", ERRORS)
        data = content.encode() if isinstance(content, str) else content
        return hashlib.sha256(data).hexdigest()

    names = ("errors.csv", "summary.csv", "config.yaml")
    listed = {"fingerprint": None, "files": {name: sha(name) for name in names}}
    return {**files, RUN + "/manifest.json": json.dumps(listed)}


SEED_2_64 = str(2**64)
SEED_2_63 = str(2**63)
LONG_NAME = "n" * 300
HUGE = "x" * (2**20 + 1)

ROWS = [
    # --- the config file: YAML itself -------------------------------------------------------
    bad_config("duplicate-key", config("splits: 5"), "duplicate key 'splits'", "lines 5 and 6"),
    bad_config(
        "duplicate-nested-key",
        config(replace={"[x]}": "[x], positive: [z]}"}),
        "duplicate key 'positive'",
    ),
    bad_config("alias-bomb-in-target", alias_bomb(), "expands to more than 100000 values"),
    bad_config("recursive-alias", config("extra: &a [1, *a]"), "contains itself"),
    bad_config("nested-too-deep", config("extra: " + "[" * 80 + "]" * 80), "50 levels"),
    bad_config("config-over-1-MB", config("# " + HUGE), "too large for a config"),
    # --- strict types -----------------------------------------------------------------------
    bad_config("splits-true", config(replace={"splits: 3": "splits: true"}), "splits", "integer"),
    bad_config("test-true", config("test: true"), "test"),
    bad_config("seed-true", config("seed: true"), "seed", "integer"),
    bad_config("seed-float", config("seed: 1.5"), "seed", "integer"),
    bad_config("block-size-true", config("block_size: true"), "block_size"),
    bad_config("panel-true", config("panel: true"), "panel"),
    bad_config("size-true", config(replace={"[4, 10]": "[true, 10]"}), "sizes.0"),
    bad_config("splits-float", config(replace={"splits: 3": "splits: 3.0"}), "splits"),
    bad_config("header-not-bool", dataset("header: maybe"), "dataset.header"),
    bad_config("title-not-text", config("title: 5"), "title", "string"),
    # --- seeds, names, titles ---------------------------------------------------------------
    bad_config("seed-2^64", config(f"seed: {SEED_2_64}"), "seed", "less than or equal"),
    bad_config("seed-2^63", config(f"seed: {SEED_2_63}"), "seed", "9223372036854775807"),
    bad_config("name-300-characters", config(replace={"tiny": LONG_NAME}), "name", "100"),
    bad_config("name-REPORT.md", config(replace={"tiny": "REPORT.md"}), "'REPORT.md'", "results"),
    bad_config("name-figure1.png", config(replace={"tiny": "figure1.png"}), "'figure1.png'"),
    bad_config("name-figure1.pdf", config(replace={"tiny": "figure1.pdf"}), "'figure1.pdf'"),
    bad_config("name-analysis.csv", config(replace={"tiny": "analysis.csv"}), "'analysis.csv'"),
    bad_config("name-report.html-any-case", config(replace={"tiny": "report.HTML"}), "results"),
    bad_config("title-unbalanced-tex", config(r'title: "$\\frac{a$"'), "title", "mathtext"),
    bad_config("title-unknown-tex", config(r'title: "cost $\\foo$"'), "title", r"\foo"),
    bad_config("title-empty-math", config('title: "$$"'), "title", "mathtext"),
    # --- fields -----------------------------------------------------------------------------
    bad_config("attributes-twice", config("attributes: [a, a]"), "attributes", "'a'", "once"),
    bad_config("attributes-empty", config("attributes: []"), "attributes", "at least one"),
    bad_config(
        "positive-empty", config(replace={"[x]}": "[]}"}), "target.positive", "at least one"
    ),
    bad_config("negative-empty", config(replace={"[x]}": "[x], negative: []}"}), "negative"),
    bad_config(
        "threshold-op", config(replace={"{positive: [x]}": "{threshold: {op: '=='}}"}), "op"
    ),
    bad_config("range-num-0", config(replace={"[4, 10]": "{start: 4, stop: 9, num: 0}"}), "num"),
    bad_config("missing-policy", config("missing: zero"), "missing"),
    bad_config("bins-1", config("preprocessing: {continuous: discretize, bins: 1}"), "bins"),
    bad_config("lda-epsilon-negative", config("models: [{name: lda, epsilon: -1}]"), "epsilon"),
    bad_config("laplace-0", config("models: [{name: naive_bayes, laplace: 0}]"), "laplace"),
    bad_config("kind-unknown", dataset("kinds: {a: ordinal}"), "dataset.kinds.a"),
    # --- options ----------------------------------------------------------------------------
    Row("seed-option-2^64", {}, BASE, [*RUN_ARGS, "--seed", SEED_2_64], 2, ["--seed", "less than"]),
    Row("seed-option-2^63", {}, BASE, [*RUN_ARGS, "--seed", SEED_2_63], 2, ["--seed"]),
    Row("boot-negative", {}, None, ["report", "{dir}/results", "--boot", "-5"], 2, ["-5"]),
    Row("boot-0", {}, None, ["report", "{dir}/results", "--boot", "0"], 2, ["--boot", "0"]),
    Row("boot-5", {}, None, ["report", "{dir}/results", "--boot", "5"], 2, ["--boot", "10"]),
    Row("boot-huge", {}, None, ["report", "{dir}/results", "--boot", "10001"], 2, ["--boot"]),
    # --- theory configs ---------------------------------------------------------------------
    bad_theory("theory-seed-2^64", theory(f"seed: {SEED_2_64}"), "seed"),
    bad_theory("theory-name-REPORT.md", theory(replace={"name: th": "name: REPORT.md"}), "name"),
    bad_theory("theory-title-tex", theory(r'title: "$\\frac{a$"'), "title", "mathtext"),
    bad_theory("theory-duplicate-key", theory("splits: 8"), "duplicate key 'splits'"),
    bad_theory("theory-splits-true", theory(replace={"splits: 4": "splits: true"}), "splits"),
    bad_theory("theory-boot-5", theory("boot: 5"), "boot"),
    bad_theory("theory-boot-huge", theory("boot: 1000000000"), "boot"),
    # --- the data, read -----------------------------------------------------------------------
    bad_data("inf-cell", {"data.csv": table((5, "b", "inf"))}, BASE,
             "attribute 'b'", "non-finite value 'inf'", "data row 5", "missing_values"),
    bad_data("minus-inf-cell", {"data.csv": table((7, "a", "-inf"))}, BASE,
             "attribute 'a'", "'-inf'", "data row 7"),
    bad_data("overflowing-cell", {"data.csv": table((2, "c", "1e400"))}, BASE,
             "attribute 'c'", "'1e400'", "data row 2"),
    bad_data("nan-cell-not-missing", {"data.csv": table((3, "a", "nan"))},
             dataset('missing_values: ["?"], kinds: {a: continuous}'), "attribute 'a'", "'nan'",
             "data row 3"),
    bad_data("huge-cell-raw", {"data.csv": table((4, "b", "1e160"))},
             config("preprocessing: {continuous: none}"), "attribute 'b'", "1e160",
             "data row 4", "1e+100"),
    bad_data("huge-cell-rescaled", {"data.csv": table((9, "b", "-3e101"))}, BASE,
             "attribute 'b'", "-3e101", "data row 9"),
    bad_data("all-missing-impute", {"data.csv": table(fill=("c", "?"))},
             dataset("kinds: {c: continuous}") + "missing: impute\n",
             "attribute 'c'", "missing in every row"),
    bad_data("all-missing-drop", {"data.csv": table(fill=("d", "?"))}, BASE,
             "attribute 'd'", "missing in every row"),
    bad_data("header-names-repeat-once-stripped", {"data.csv": table(header="a ,a,c,d,y")}, BASE,
             "data.csv", "'a'", "columns 1, 2"),
    bad_data("header-target-repeated", {"data.csv": table(header="a,b,c,y ,y")}, BASE,
             "data.csv", "'y'", "columns 4, 5"),
    bad_data("header-exact-repeat", {"data.csv": table(header="a,b,b,d,y")}, BASE,
             "'b'", "more than once"),
    bad_data("row-longer-than-header", {"data.csv": table(header="a,b,c,y")}, BASE,
             "data.csv", "cannot be read", "Expected 4 fields"),
    bad_data("only-the-target-column", {"data.csv": table(columns=["y"])}, BASE,
             "data.csv", "no attribute columns", "'y'"),
    bad_data("header-only", {"data.csv": "a,b,c,d,y\n"}, BASE, "target.positive", "'x'"),
    bad_data("target-as-attribute", {}, config("attributes: [a, y]"), "attributes", "'y'"),
    bad_data("data-path-is-a-folder", {"folder/x": ""},
             config(replace={"path: data.csv": "path: folder"}), "folder", "is a folder"),
    bad_data("lda-epsilon-0-collinear", {"data.csv": table(fill=("c", "b"))},
             config("models: [{name: lda, epsilon: 0}]", "attributes: [b, c]"),
             "lda", "singular covariance", "epsilon", leaves_folder=True),
    # --- plot and report on damaged results -------------------------------------------------
    bad_results("plot-summary-garbage", "plot", {RUN + "/summary.csv": "hello\nworld\n"},
                "summary.csv", "no column 'model'"),
    bad_results("plot-summary-binary", "plot", {RUN + "/summary.csv": b"\xff\xfe\x00\x81"},
                "summary.csv", "not a table"),
    bad_results("plot-summary-missing-column", "plot",
                {RUN + "/summary.csv": SUMMARY.replace(",ci_low", ",low")},
                "summary.csv", "'ci_low'"),
    bad_results("plot-summary-text-mean", "plot",
                {RUN + "/summary.csv": SUMMARY.replace(",0.3,", ",lots,", 1)},
                "summary.csv", "'mean'", "'lots'", "row 1"),
    bad_results("plot-summary-empty", "plot", {RUN + "/summary.csv": ""}, "summary.csv"),
    bad_results("plot-summary-no-rows", "plot",
                {RUN + "/summary.csv": SUMMARY.splitlines()[0] + "\n"}, "summary.csv", "no rows"),
    bad_results("plot-config-malformed", "plot",
                {RUN + "/summary.csv": SUMMARY, RUN + "/config.yaml": "name: [run\n"},
                "config.yaml", "malformed YAML"),
    bad_results("plot-config-escaping-name", "plot",
                {RUN + "/summary.csv": SUMMARY, RUN + "/config.yaml": "name: ../../evil\n"},
                "config.yaml", "'../../evil'"),
    bad_results("plot-config-bad-title", "plot",
                {RUN + "/summary.csv": SUMMARY, RUN + "/config.yaml": 'title: "$\\\\frac{a$"\n'},
                "config.yaml", "title", "mathtext"),
    bad_results("report-errors-garbage", "report", {RUN + "/errors.csv": "hello\nworld\n"},
                "errors.csv", "'model'"),
    bad_results("report-errors-binary", "report", {RUN + "/errors.csv": b"\x00\xff\xfe\x81\n"},
                "errors.csv"),
    bad_results("report-errors-missing-column", "report",
                {RUN + "/errors.csv": ERRORS.replace(",error,", ",err,")}, "errors.csv", "'error'"),
    bad_results("report-errors-nan", "report",
                {RUN + "/errors.csv": ERRORS.replace("0.25", "nan")}, "errors.csv", "'nan'"),
    bad_results("report-config-duplicate-key", "report",
                {RUN + "/errors.csv": ERRORS, RUN + "/config.yaml": "panel: 1\npanel: 2\n"},
                "config.yaml", "duplicate key 'panel'"),
    # --- downloads ------------------------------------------------------------------------------
    Row("download-over-its-cap", {"mirror/lenses/lenses.data": "1 1 1 1 1 3\n" * 500}, None,
        ["fetch", "lenses", "--mirror", "{dir}/mirror"], 2,
        ["lenses.data", "more than 4080 bytes", "not kept"]),  # fmt: skip
    Row("download-bad-checksum", {"mirror/lenses/lenses.data": "1 1 1 1 1 3\n"}, None,
        ["fetch", "lenses", "--mirror", "{dir}/mirror"], 2, ["checksum mismatch"]),  # fmt: skip
    # --- good inputs near the bad ones: these must run ------------------------------------
    Row("inf-listed-as-missing", {"data.csv": table((5, "b", "inf"))},
        dataset('missing_values: ["?", "inf"]'), RUN_ARGS, 0, []),  # fmt: skip
    Row("constant-column-rescaled", {"data.csv": table(fill=("a", "2.5"))},
        dataset("kinds: {a: continuous}"), RUN_ARGS, 0, []),  # fmt: skip
    Row("seed-2^63-minus-1", {}, config(f"seed: {2**63 - 1}"), RUN_ARGS, 0, []),
    Row("dollar-in-plain-title", {}, config('title: "cost in $"'), RUN_ARGS, 0, []),
    Row("yaml-merge-key-overridden", {},
        config(replace={"{positive: [x]}": "{<<: {positive: [z]}, positive: [x]}"}),
        RUN_ARGS, 0, []),  # fmt: skip
    # issue 30 §4: numbers written with commas (they were text: a level per row, exit 0)
    bad_data("decimal-comma-column",
             {"data.csv": "a,y\n" + "".join(f'"{i},{i % 7}5",{"xz"[i % 2]}\n' for i in range(40))},
             BASE, "data.csv", "column 'a'", "decimal comma", "'0,05'", "data row 1"),
    bad_data("thousands-or-decimal-comma-column",
             {"data.csv": "a,y\n" + "".join(f'"{i + 1},{i * 37 % 1000:03d}",{"xz"[i % 2]}\n'
                                             for i in range(40))},
             BASE, "data.csv", "column 'a'", "'1,000'", "1000 or 1.000"),
    # numbers dressed in units (currency, percent, spaced groups) were text: a level per row
    *(
        bad_data(f"numbers-written-{kind}",
                 {"data.csv": "a,y\n" + "".join(f'"{cell(i)}",{"xz"[i % 2]}\n' for i in range(40))},
                 BASE, "data.csv", "column 'a'", "units")
        for kind, cell in (("in-dollars", lambda i: f"${i * 37},{i % 10}00.50"),
                           ("as-percent", lambda i: f"{i * 2.5}%"),
                           ("with-spaced-groups", lambda i: f"{i + 1} {i * 37 % 1000:03d}"))
    ),
    bad_data("decimal-comma-declared-continuous",
             {"data.csv": "a,y\n" + "".join(f'"{i},{i % 7}5",{"xz"[i % 2]}\n' for i in range(40))},
             dataset("kinds: {a: continuous}"), "attribute 'a'", "decimal comma", "'0,05'"),
    Row("thousands-separators-read-as-numbers",
        {"data.csv": "a,y\n" + "".join(f'"{i * 7919 % 40 * 1000.5 + i % 2 * 5000:,.1f}",'
                                        f'{"xz"[i % 2]}\n' for i in range(40))},
        BASE, RUN_ARGS, 0, []),  # fmt: skip
    # issue 30 §6: a dataset.path that is not a regular file
    Row("data-path-is-a-device", {}, config(replace={"path: data.csv": "path: /dev/null"}),
        RUN_ARGS, 2, ["dataset.path", "/dev/null", "not a regular file"], validate=True),
    # issue 30 §5: a run and a theory of one name in one --out
    Row("run-into-a-theorys-folder", {"out/tiny/sample_complexity.csv": "n\n"}, config(),
        RUN_ARGS, 2, ["config.yaml", "out/tiny", "a theory named 'tiny'"], leaves_folder=True),
    Row("run-into-a-theorys-first-n", {"out/tiny/n10/.checkpoints/fingerprint": "0\n"},
        config(), RUN_ARGS, 2, ["out/tiny", "a theory named 'tiny'"], leaves_folder=True),
    Row("theory-into-a-runs-folder", {"out/th/summary.csv": SUMMARY}, theory(),
        ["theory", "{config}", "--out", "{out}", "-q"], 2, ["out/th", "a run named 'th'"],
        leaves_folder=True),
    Row("validate-a-run-and-a-theory-of-one-name", {"theory.yaml": theory()},
        config(replace={"name: tiny": "name: th"}),
        ["validate", "{config}", "{dir}/theory.yaml"], 2,
        ["config.yaml", "theory.yaml", "'th'"]),
    # issue 30 §6: an --out path too long, names of files a report writes
    Row("out-name-too-long-run", {}, config(),
        ["run", "{config}", "--out", "{dir}/o/" + LONG_NAME, "-q"], 2,
        ["--out", LONG_NAME, "file name too long"]),
    Row("out-name-too-long-theory", {}, theory(),
        ["theory", "{config}", "--out", "{dir}/o/" + LONG_NAME, "-q"], 2,
        ["--out", LONG_NAME, "file name too long"]),
    Row("out-name-too-long-sweep", {}, config(),
        ["sweep", "{config}", "--vary", "split=random", "--out", "{dir}/o/" + LONG_NAME, "-q"],
        2, ["--out", LONG_NAME, "file name too long"]),
    Row("results-folder-name-too-long-report", {}, None, ["report", "{dir}/o/" + LONG_NAME], 2,
        [LONG_NAME, "file name too long"]),
    Row("results-folder-name-too-long-plot", {}, None, ["plot", "{dir}/o/" + LONG_NAME], 2,
        [LONG_NAME, "file name too long"]),
    bad_config("name-explorer.html", config(replace={"name: tiny": "name: explorer.html"}),
               "'explorer.html'", "a file genvdis writes"),
    bad_config("name-pairs.csv", config(replace={"name: tiny": "name: Pairs.CSV"}),
               "'Pairs.CSV'", "a file genvdis writes"),
    bad_theory("theory-name-explorer.html", theory(replace={"name: th": "name: explorer.html"}),
               "name", "explorer.html"),
    # issue 30 §1: values of any size within the documented bound run (under `none`)
    *(
        Row(f"values-near-{factor:g}-raw-{policy}", {"data.csv": scaled(factor)},
            config("preprocessing: {continuous: none}",
                   f"models: [naive_bayes, {{name: logistic_regression, separable: {policy}}}]"),
            RUN_ARGS, 0, [])
        for factor in (1e15, 1e-150) for policy in ("sample", "max_margin", "ridge")
    ),
    # issue 30 §2: every test set holds every class (the m and the class are named)
    bad_data("one-positive-row", {"data.csv": table(fill=("y", "z")).replace(",z\n", ",x\n", 1)},
             BASE, "m=4", "'positive'", "1 row", validate=True),
    bad_data("stratified-m-takes-every-positive",
             {"data.csv": table(fill=("y", "z")).replace(",z\n", ",x\n", 2)},
             config(replace={"[4, 10]": "[4, 30]"}), "m=30", "'positive'", validate=True),
    bad_data("random-m-leaves-one-test-row", {},
             config("split: random", replace={"[4, 10]": "[4, 39]"}), "m=39", validate=True),
    bad_data("test-set-of-one-row", {}, config("test: 1"), "test: 1", "2 classes", validate=True),
    # issue 30: second adversarial pass
    bad_data("sklearn-table-of-several-targets", {},
             "name: sk\ndataset: {sklearn: load_linnerud}\n"
             "target: {threshold: {op: '>', value: median}}\nsizes: [5]\nsplits: 2\n",
             "sklearn.datasets.load_linnerud", "3 target columns", "one label"),
    Row("separator-of-regex-characters-read-as-written",  # was an internal error from `re`
        {"data.csv": table().replace(",", "**")}, dataset('sep: "**"'), RUN_ARGS, 0, []),
    Row("separator-that-splits-a-cell-as-a-regex",  # '. ' matched 'u ' inside 'u v'
        {"data.csv": table().replace(",", ". ").replace(". u. ", ". u v. ")},
        dataset('sep: ". "'), RUN_ARGS, 0, []),
    Row("separator-of-one-non-ascii-character",  # was refused: "the 'c' engine does not ..."
        {"data.csv": table().replace(",", "¦")}, dataset('sep: "¦"'), RUN_ARGS, 0, []),
    Row("separator-whitespace-runs-as-pandas-reads-it",  # r'\s+', the one regular expression
        {"data.csv": table().replace(",", " \t  ")}, dataset("sep: '\\s+'"), RUN_ARGS, 0, []),
    bad_data("stray-quotes-run-a-cell-across-lines",  # the message quoted its line breaks
             {"data.csv": table((5, "a", '"x')).replace("\n4.20,", '\n4.20"', 1)}, BASE,
             "column 'a'", "text", "\\n"),
    Row("validate-two-configs-of-one-name-on-two-files",  # `run` refuses them; validate said ok
        {"two/config.yaml": BASE, "two/data.csv": table()}, BASE,
        ["validate", "{config}", "{dir}/two/config.yaml"], 2, ["two/config.yaml", "'tiny'"]),
    Row("config-kept-in-its-own-run-folder",  # the run replaced it with its resolved config
        {"out/tiny/config.yaml": BASE, "out/tiny/data.csv": table()}, None,
        ["run", "{out}/tiny/config.yaml", "--out", "{out}", "-q"], 2,
        ["--out", "out/tiny/config.yaml", "the config file itself"], leaves_folder=True),
]  # fmt: skip


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GENVDIS_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv("GENVDIS_MIRROR", raising=False)
    (tmp_path / "data.csv").write_text(table())
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _lay_out(folder: Path, row: Row) -> list[str]:
    for name, content in row.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if row.config is not None:
        (folder / "config.yaml").write_text(row.config)
    fill = {"config": str(folder / "config.yaml"), "out": str(folder / "out"), "dir": str(folder)}
    return [arg.format(**fill) for arg in row.args]


def _assert_one_line(result, code: int, words: list[str]) -> None:
    message = result.stderr.strip()
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if code == 0:
        return
    assert len(message.splitlines()) == 1, message
    assert message.startswith("error: "), message
    for word in words:
        assert word in message, (word, message)


def test_the_table_has_enough_rows():
    assert len(ROWS) >= 65
    assert len({row.id for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_hostile_input(folder, row):
    args = _lay_out(folder, row)
    result = invoke(*args)
    _assert_one_line(result, row.code, row.words)
    out = folder / "out"
    if row.code == 2 and not row.leaves_folder:
        assert not out.exists(), sorted(out.rglob("*"))
    if row.code == 0 and args[0] == "run":
        summary = pd.read_csv(next(out.glob("*/summary.csv")))
        assert np.isfinite(summary[["mean", "ci_low", "ci_high"]].to_numpy()).all()
        assert (summary["mean"] > 0).all()  # no perfect classifier on this noisy table
    if row.validate:
        _assert_one_line(invoke("validate", str(folder / "config.yaml")), 2, row.words)


# --- a planted inf or NaN never becomes a score -----------------------------------------------


def _run(folder: Path, text: str, data: str, out: str) -> Path:
    (folder / "data.csv").write_text(data)
    (folder / "config.yaml").write_text(text)
    result = invoke("run", str(folder / "config.yaml"), "--out", str(folder / out), "-q")
    assert result.exit_code == 0, result.output
    return folder / out / "tiny"


def test_an_inf_listed_as_missing_is_dropped_with_its_row(folder):
    """`inf` in missing_values: the row holding it is dropped (missing: drop), so the errors
    are those of the file without that row, byte for byte."""
    text = dataset('missing_values: ["?", "inf"]')
    planted = _run(folder, text, table((5, "b", "inf")), "planted")
    lines = table().splitlines()
    without = _run(folder, text, "\n".join(lines[:5] + lines[6:]) + "\n", "without")
    errors = (planted / "errors.csv").read_bytes()
    assert errors == (without / "errors.csv").read_bytes()
    assert pd.read_csv(planted / "summary.csv")["mean"].gt(0).all()  # no perfect classifier


def test_a_constant_attribute_changes_no_naive_bayes_error(folder):
    """A constant continuous attribute rescales to 0 (not 0/0), and naive Bayes gives it
    weight 0: the same errors as without it."""
    text = dataset("kinds: {a: continuous}") + "models: [naive_bayes]\n"
    with_it = _run(folder, text, table(fill=("a", "2.5")), "with")
    without = _run(folder, text.replace("{a: continuous}", "{}"), table(columns=COLUMNS[1:]), "w")
    assert (with_it / "errors.csv").read_bytes() == (without / "errors.csv").read_bytes()


def _scoring_problem(scale: float = 1.0, seed: int = 0):
    """Encoded data (continuous columns times `scale`, one discrete), 3 splits of m = 20."""
    rng = np.random.default_rng(seed)
    n, layout = 120, FeatureLayout(2, (3,))
    X = np.column_stack([rng.normal(size=(n, 2)) * scale, rng.integers(0, 3, n)])
    y = (X[:, 0] / scale + rng.normal(size=n) > 0).astype(np.int64)
    train = np.array([rng.choice(n, size=20, replace=False) for _ in range(3)])
    return EncodedData.encode(X, y, layout), train, rng


def _reference_counts(data: EncodedData, classifiers: np.ndarray, train: np.ndarray):
    """Errors on every row but each split's training rows, from numpy's decisions in double;
    a decision that is not finite is wrong."""
    decisions = data.onehot @ classifiers[:, :-1].T + classifiers[:, -1]  # (n, K)
    wrong = ~np.isfinite(decisions) | ((decisions > 0) != data.y[:, None].astype(bool))
    counts = []
    for k in range(classifiers.shape[0]):
        test = np.ones(len(data.y), dtype=bool)
        test[train[k % train.shape[0]]] = False
        counts.append(int(wrong[test, k].sum()))
    return np.array(counts)


def test_the_scorer_counts_nan_weights_as_errors_and_fails_loudly():
    data, train, rng = _scoring_problem()
    classifiers = rng.normal(size=(6, data.width))  # 2 models x 3 splits
    classifiers[4, 1] = np.nan  # model 2, split 1
    with pytest.raises(NonFiniteDecisions, match=r"m=20: 1 classifier\(s\) of model\(s\) \[2\]"):
        count_errors(data, classifiers, train)
    try:
        count_errors(data, classifiers, train)
    except NonFiniteDecisions as failure:
        counted = failure.errors
    np.testing.assert_array_equal(counted, _reference_counts(data, classifiers, train))
    assert counted[4] == len(data.y) - 20  # every test row of the NaN classifier: wrong
    mask = np.ones((3, len(data.y)), dtype=bool)
    mask[np.arange(3)[:, None], train] = False
    with pytest.raises(NonFiniteDecisions) as failure:
        count_errors(data, classifiers, train, mask)
    np.testing.assert_array_equal(failure.value.errors, counted)  # same count, marked rows


def test_the_scoring_kernel_counts_a_nan_decision_as_wrong():
    """A NaN decision value with a finite tolerance: wrong on a positive row and on a negative
    one, marked or not."""
    decision = np.array([[np.nan, 1.0, -1.0]], dtype=np.float32)
    tolerance = np.full(3, 1e-3, dtype=np.float32)
    rows, coef, ties = np.zeros((1, 2)), np.zeros((2, 3)), np.zeros(3)
    for positive, expected in ((True, [1, 0, 1]), (False, [1, 1, 0])):
        errors = np.zeros(3, dtype=np.int32)
        scoring._count_wrong(decision, tolerance, rows, coef, positive, errors, None, ties)
        assert errors.tolist() == expected
        errors[:] = 0
        marks = np.ones((1, 3), dtype=np.bool_)
        scoring._count_wrong(decision, tolerance, rows, coef, positive, errors, marks, ties)
        assert errors.tolist() == expected


@pytest.mark.parametrize("scale", [1e-30, 1e50, 1e100])
def test_values_beyond_single_precision_are_scored_exactly(scale):
    """Values past single precision's range (~3e38) overflow a single-precision product to inf
    and NaN, which no count would include (1e50-scale data would score 0 errors): the counts
    equal double precision's."""
    data, train, rng = _scoring_problem(scale)
    classifiers = rng.normal(size=(3, data.width))
    classifiers[:, :2] /= scale  # weights that suit the data's scale
    counts = count_errors(data, classifiers, train)
    np.testing.assert_array_equal(counts, _reference_counts(data, classifiers, train))
    assert counts.min() > 0


def test_a_run_whose_model_gives_nan_weights_fails_with_exit_1(folder, monkeypatch):
    """Finite data cannot make NaN weights, so they are a bug: exit 1, one line naming m."""
    fit = models.NaiveBayes._fit_group

    def broken(self, *args, **kwargs):
        batch = fit(self, *args, **kwargs)
        batch.coef[:, 0] = np.nan
        return batch

    monkeypatch.setattr(models.NaiveBayes, "_fit_group", broken)
    (folder / "config.yaml").write_text(BASE)
    result = invoke("run", str(folder / "config.yaml"), "--out", str(folder / "out"))
    assert result.exit_code == 1, result.output
    message = result.stderr.strip()
    assert message.startswith("internal error: NonFiniteDecisions: m=4: 3 classifier(s)")
    assert len(message.splitlines()) == 1


def test_newton_takes_no_pseudo_inverse_step_from_an_overflowed_hessian():
    """LAPACK's SVD may fail ("did not converge") or never return on inf and NaN: such a
    problem takes no step; the others take the pseudo-inverse's."""
    hess = np.array([[[1.0, 1.0], [1.0, 1.0]], [[np.nan, 1.0], [1.0, 2.0]], [[np.inf, 0], [0, 1]]])
    grad = np.array([[1.0, 2.0], [1.0, 1.0], [1.0, 1.0]])
    delta = pseudo_inverse_steps(hess, grad)
    np.testing.assert_allclose(delta[0], np.linalg.pinv(hess[0]) @ grad[0])
    assert delta[1:].tolist() == [[0.0, 0.0], [0.0, 0.0]]


# --- downloads --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, ["no space left", "data cache"]),
        (errno.EACCES, ["cannot write to the data cache", "GENVDIS_DATA"]),
    ],
)
def test_a_disk_problem_during_a_download_is_named_as_such(folder, monkeypatch, code, words):
    (folder / "mirror" / "lenses").mkdir(parents=True)
    (folder / "mirror" / "lenses" / "lenses.data").write_text("1 1 1 1 1 3\n")

    def failing_copy(source, target):
        raise OSError(code, "simulated")

    monkeypatch.setattr(fetch.shutil, "copyfile", failing_copy)
    result = invoke("fetch", "lenses", "--mirror", str(folder / "mirror"))
    _assert_one_line(result, 2, ["lenses.data", str(folder / "cache"), *words])
    assert "network" not in result.stderr


class _Endless(http.server.BaseHTTPRequestHandler):
    """Serves 4 KB blocks, with or without a Content-Length that says so. genvdis hangs up at
    its cap, which is the point: the broken pipe is not printed (socketserver would print it
    on stderr, which the CLI runner is capturing at that moment)."""

    declare = False

    def do_GET(self) -> None:
        self.send_response(200)
        if self.declare:
            self.send_header("Content-Length", str(4096 * 10))
        self.end_headers()
        try:
            for _ in range(10):
                self.wfile.write(b"1" * 4096)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "streamed"])
def test_an_http_download_stops_at_its_cap(folder, declare):
    handler = type("Handler", (_Endless,), {"declare": declare})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        mirror = f"http://127.0.0.1:{server.server_address[1]}/"
        result = invoke("fetch", "lenses", "--mirror", mirror)
    finally:
        server.shutdown()
        server.server_close()
    _assert_one_line(result, 2, ["lenses.data", "more than 4080 bytes", "not kept"])
    assert not any(p.is_file() for p in (folder / "cache").rglob("*"))


# --- -q -------------------------------------------------------------------------------------

QUIET_SCRIPT = """
import logging, sys, warnings
from pathlib import Path
from types import SimpleNamespace
from genvdis import api, cli

def run(*args, **kwargs):
    logging.getLogger("genvdis.experiment.engine").warning("a genvdis warning")
    logging.getLogger("genvdis.experiment.engine").info("a genvdis notice")
    warnings.warn("a Python warning")
    return SimpleNamespace(path=Path("nowhere"))

api.run = run
cli.app(sys.argv[1:])
"""


@pytest.mark.parametrize("quiet", [True, False])
def test_quiet_shows_errors_only(folder, quiet):
    (folder / "config.yaml").write_text(BASE)
    args = ["run", str(folder / "config.yaml"), "--out", str(folder / "out")]
    done = subprocess.run(
        [sys.executable, "-c", QUIET_SCRIPT, *args, *(["-q"] if quiet else [])],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [w for w in ("genvdis warning", "notice", "Python warning") if w in done.stderr]
    assert said == ([] if quiet else ["genvdis warning", "notice", "Python warning"])
