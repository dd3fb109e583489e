"""`genvdis sweep`: variants expanded and named, refused on one line before any work, run
through the same run path as `genvdis run` (the same bytes), resumed after an interruption,
not run twice when a variant changes nothing, and summarised in sensitivity.csv with the
numbers `analysis` gives (the report's stability table is built from it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from genvdis.analysis import runs, sensitivity
from genvdis.cli import app
from genvdis.config import variants
from genvdis.report.markdown import write_reports
from genvdis.store import results
from tests.clichecks import raises_user_error
from tests.conftest import REPO

# toy.csv (300 rows: 3 continuous, 2 discrete attributes, nothing missing): a quick grid
GRID = ("sizes: [12, 40, 150]", "splits: 6", "block_size: 3")
FILES = ("errors.csv", "summary.csv", "config.yaml", "manifest.json")


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


def _bytes(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in FILES}


@pytest.fixture
def toy(tmp_path, toy_config, write_toy) -> Path:
    return write_toy(tmp_path, toy_config(*GRID), "toy.yaml")


@pytest.fixture(scope="module")
def swept(tmp_path_factory, toy_config, write_toy) -> tuple[Path, Path]:
    """One sweep of toy: separable x missing (missing changes nothing: toy has no gaps)."""
    root = tmp_path_factory.mktemp("swept")
    config = write_toy(root, toy_config(*GRID), "toy.yaml")
    code, stderr = _cli("sweep", config, "--vary", "separable=ridge,max_margin",
                        "--vary", "missing=drop,category", "--out", root / "out")  # fmt: skip
    assert code == 0, stderr
    return config, root / "out"


# --------------------------------------------------------------------------- variants and ids


def test_vary_options_expand_to_their_cross_product_with_stable_readable_ids():
    grid = variants.parse_vary(["split=random,stratified", "separable=ridge", "laplace=0.5,2"])
    ids = [v.id for v in variants.cross_product(grid, "--vary")]
    assert ids == [
        "laplace=0.5,separable=ridge,split=random",
        "laplace=2,separable=ridge,split=random",
        "laplace=0.5,separable=ridge,split=stratified",
        "laplace=2,separable=ridge,split=stratified",
    ]
    # values are YAML scalars; the full dotted key and its alias name the same variant
    (one,) = variants.cross_product(variants.parse_vary(["models.naive_bayes.laplace=1.0"]), "")
    assert one.overrides == (("models.naive_bayes.laplace", 1.0),) and one.id == "laplace=1.0"
    (flag,) = variants.cross_product({"preprocessing.bins": [7]}, "")
    assert flag.id == "bins=7" and isinstance(flag.overrides[0][1], int)


def test_a_variants_block_is_a_list_of_overrides_or_a_cross_product():
    listed = variants.from_block(
        [{"continuous": "discretize", "bins": 5}, {"split": "random"}], "x.yaml: variants"
    )
    assert [v.id for v in listed] == ["bins=5,continuous=discretize", "split=random"]
    crossed = variants.from_block({"vary": {"seed": [1, 2], "split": ["random"]}}, "x")
    assert [v.id for v in crossed] == ["seed=1,split=random", "seed=2,split=random"]


def test_the_baseline_runs_first_and_a_repeated_variant_once(toy):
    from genvdis import api

    base = api.load_config(toy)
    given = variants.from_block([{"split": "random"}, {"split": "random"}, {"seed": 3}], "b")
    expanded = variants.expand(base, given, "")
    assert [v.id for v, _ in expanded] == ["baseline", "split=random", "seed=3"]
    assert expanded[0][1] == base and expanded[1][1].split == "random"
    assert expanded[2][1].seed == 3 and expanded[2][1].data_dir == base.data_dir


# --------------------------------------------------------------------------- refused inputs


VARIANTS_FILE_ERRORS = [
    ("variants: [{separable: [a, b]}]", "variants[0]: separable: a variant's value must be a "
     "single YAML scalar, not ['a', 'b']"),
    ("variants: [{split: a/b}]", "variants[0]: split: 'a/b' cannot be part of a folder name "
     "(letters, digits and . _ + - only)"),
    ("variants: [{separable: ridge, models.logistic_regression.separable: sample}]",
     "variants[0]: 'models.logistic_regression.separable' is given twice (as "
     "models.logistic_regression.separable)"),
    ("variants: {vary: {split: random}}", "variants: vary: split: give a list of values"),
    ("variants: [separable]", "variants: write a list of overrides ([{separable: ridge}, ...]) "
     "or {vary: {key: [values]}}"),
    ("variants: [{split: random}]\nsplits: 3", "a variants file holds one key, variants:"),
    ("variants: [{seed: " + "1" * 210 + "}]", "variants[0]: the variant id is longer than 200 "
     "characters"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), VARIANTS_FILE_ERRORS)
def test_a_bad_variants_file_is_one_line_naming_it(toy, text, message):
    path = toy.parent / "sweep.yaml"
    path.write_text(text + "\n")
    code, stderr = _cli("sweep", toy, "--variants", path, "--out", toy.parent / "out")
    assert code == 2 and stderr == f"error: {path}: {message}\n"
    assert not (toy.parent / "out").exists()


VARY_ERRORS = [
    (["--vary", "separable"], "--vary separable: write KEY=V1,V2 (e.g. --vary "
     "separable=sample,ridge)"),
    (["--vary", "split=random", "--vary", "split=stratified"], "--vary split=stratified: split "
     "is varied twice; give its values once"),
    (["--vary", "seed=["], "--vary seed=[: a value is not a YAML scalar"),
    (["--vary", "bins=3,010"], "--vary bins=3,010: '010' would be read as 8 (a leading 0 makes "
     "it octal); write the number without it, or quote it for text"),  # ran as bins=8
    (["--vary", "seed=1:05"], "--vary seed=1:05: '1:05' would be read as 65 (colons make it "
     "base 60)"),
    (["--vary", "sparable=ridge"], "--vary sparable=ridge: no config key 'sparable' (a dotted "
     "config key, or laplace, separable, continuous, bins)"),
    (["--vary", "name=other"], "--vary name=other: 'name' cannot vary (it names the run "
     "folder)"),
    (["--vary", "split=a/b"], "--vary split=a/b: 'a/b' cannot be part of a folder name"),
    (["--vary", "separable=ridge,optimal"], "{toy}: --vary separable=optimal: "
     "models.1.separable: Input should be 'sample', 'max_margin' or 'ridge'"),
    (["--vary", "bins=1"], "{toy}: --vary bins=1: preprocessing.bins: Input should be greater "
     "than or equal to 2"),
    (["--vary", "models.lda.epsilon=0.1"], "{toy}: --vary models.lda.epsilon=0.1: the config "
     "has no model 'lda' (it has naive_bayes, logistic_regression)"),
    (["--vary", "models.naive_bayes=1"], "{toy}: --vary models.naive_bayes=1: write "
     "models.<model name>.<parameter>"),
    (["--vary", "dataset.path.x=1"], "{toy}: --vary dataset.path.x=1: 'path' is not a mapping "
     "in this config"),
    (["--vary", "target.column=nope"], "{toy}: --vary target.column=nope: target.column: no "
     "column named 'nope' in the dataset"),
    ([], "{toy}: no variants: give --vary KEY=V1,V2, --variants FILE, or a variants: block in "
     "the config"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), VARY_ERRORS)
def test_a_bad_vary_is_one_line_naming_the_option_and_the_field(toy, args, message):
    """Checked for every variant before any work: nothing is run, no folder is made."""
    code, stderr = _cli("sweep", toy, *args, "--out", toy.parent / "out")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert message.format(toy=toy) in stderr
    assert not (toy.parent / "out").exists()


def test_a_later_configs_bad_variant_stops_the_sweep_before_the_first_config_runs(toy):
    other = toy.parent / "other.yaml"
    other.write_text(
        toy.read_text().replace("name: toy", "name: other") + "models: [lda, logistic_regression]\n"
    )
    code, stderr = _cli("sweep", toy, other, "--vary", "laplace=2", "--out", toy.parent / "out")
    assert code == 2, stderr
    assert f"error: {other}: --vary laplace=2: the config has no model 'naive_bayes'" in stderr
    assert not (toy.parent / "out").exists()


# --------------------------------------------------------------------------- the run path


@pytest.mark.slow
def test_a_variant_is_byte_for_byte_a_plain_run_of_its_config(swept, toy_config, write_toy):
    config, out = swept
    plain = write_toy(
        config.parent / "plain",
        toy_config(*GRID, "models: [naive_bayes, {name: logistic_regression, separable: ridge}]"),
        "toy.yaml",
    )
    for source, folder in ((config, "baseline"), (plain, "missing=drop,separable=ridge")):
        code, stderr = _cli("run", source, "--out", config.parent / "plain-out" / folder)
        assert code == 0, stderr
        ran = config.parent / "plain-out" / folder / "toy"
        assert _bytes(out / "toy" / "variants" / folder) == _bytes(ran), folder


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_to_the_bytes_of_an_uninterrupted_one(swept, toy, monkeypatch):
    _, clean = swept
    args = ("sweep", toy, "--vary", "separable=ridge,max_margin", "--vary",
            "missing=drop,category", "--out", toy.parent / "out")  # fmt: skip
    save, saved = results.CheckpointStore.save, []

    def save_then_stop(self, m, start, frame):  # Ctrl-C in the third run
        save(self, m, start, frame)
        saved.append(start)
        if len(saved) == 6 + 6 + 2:  # two whole variants, 2 blocks of the third
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(results.CheckpointStore, "save", save_then_stop)
        code, stderr = _cli(*args)
    assert code == 130 and stderr.strip().splitlines()[-1].startswith("interrupted"), stderr
    code, stderr = _cli(*args)
    assert code == 0, stderr
    assert "toy: up to date" in stderr and "resuming, 2 of 6 blocks already done" in stderr
    for folder in ("baseline", "missing=drop,separable=ridge", "missing=drop,separable=max_margin"):
        assert _bytes(toy.parent / "out" / "toy" / "variants" / folder) == _bytes(
            clean / "toy" / "variants" / folder
        )
    assert (toy.parent / "out" / "sensitivity.csv").read_bytes() == (
        clean / "sensitivity.csv"
    ).read_bytes()


# --------------------------------------------------------------------------- same as baseline


@pytest.mark.slow
def test_variants_that_change_nothing_are_recorded_not_run(swept):
    _, out = swept
    index = pd.read_csv(out / "toy" / "variants" / "variants.csv", keep_default_na=False)
    assert list(index.columns) == ["variant", "changed", "same_as", "not_run", "folder"]
    same = dict(zip(index["variant"], index["same_as"], strict=True))
    assert same == {
        "baseline": "",
        "missing=drop,separable=ridge": "",  # missing=drop is the baseline's own value
        "missing=category,separable=ridge": "missing=drop,separable=ridge",  # toy has no gaps
        "missing=drop,separable=max_margin": "",
        "missing=category,separable=max_margin": "missing=drop,separable=max_margin",
    }
    changed = dict(zip(index["variant"], index["changed"], strict=True))
    assert changed["missing=drop,separable=ridge"] == "models.logistic_regression.separable"
    assert changed["missing=category,separable=ridge"] == (
        "missing;models.logistic_regression.separable"
    )
    folders = sorted(p.name for p in (out / "toy" / "variants").iterdir() if p.is_dir())
    assert folders == ["baseline", "missing=drop,separable=max_margin",
                       "missing=drop,separable=ridge"]  # fmt: skip


SAME_DESIGN = [  # (config lines, variant): each changes no number on toy
    ((), "missing=impute"),
    ((), "bins=10"),  # without discretizing
    (("attributes: continuous",), "laplace=2"),  # no discrete attribute
    (("attributes: discrete",), "continuous=discretize"),  # nothing continuous
    ((), "models.logistic_regression.C=5"),  # C is for separable: ridge only
]


@pytest.mark.parametrize(("lines", "vary"), SAME_DESIGN)
def test_a_variant_detected_as_the_baseline_would_give_the_baselines_numbers(
    tmp_path, toy_config, write_toy, lines, vary
):
    """The detection is checked against the truth: both configs run for real."""
    from genvdis import api
    from genvdis.experiment import sweeps

    config = api.load_config(write_toy(tmp_path, toy_config(*GRID, *lines), "toy.yaml"))
    given = sweeps.given_variants([vary], None)
    planned = sweeps.plan(variants.expand(config, given, ""), "", None)
    assert planned[1].same_as == "baseline", vary
    runs = [api.run(item.config, out=tmp_path / item.variant.id) for item in planned]
    assert (runs[0].path / "errors.csv").read_bytes() == (runs[1].path / "errors.csv").read_bytes()


def test_a_variant_that_matters_is_not_taken_for_the_baseline(toy):
    from genvdis import api
    from genvdis.experiment import sweeps

    config = api.load_config(toy)
    block = [{"laplace": 2}, {"continuous": "discretize"}, {"split": "random"},
             {"continuous": "discretize", "bins": 10}, {"separable": "ridge", "C": 1}]  # fmt: skip
    block[-1] = {"separable": "ridge", "models.logistic_regression.C": 0.5}
    planned = sweeps.plan(variants.expand(config, variants.from_block(block, "b"), ""), "", None)
    assert [p.same_as for p in planned] == [None] * 6


@pytest.mark.slow
def test_a_variant_that_leaves_too_few_rows_for_the_grid_is_recorded_not_run(
    tmp_path, toy_config, toy_csv
):
    table = pd.read_csv(toy_csv)
    table.loc[:199, "region"] = ""  # 200 gaps: missing: drop leaves 100 rows, < m = 150
    table.to_csv(tmp_path / "toy.csv", index=False)
    config = tmp_path / "toy.yaml"
    config.write_text(toy_config(*GRID, "missing: category"))
    code, stderr = _cli("sweep", config, "--vary", "missing=drop,impute", "--out", tmp_path / "o")
    assert code == 0, stderr
    assert "toy: missing=drop: does not apply, not run: sizes: m=150 is too large for 100 rows" in (
        stderr.splitlines()
    )
    rows = sensitivity.read_sensitivity(tmp_path / "o")
    assert list(rows["verdict"].iloc[1:2]) == [sensitivity.NOT_RUN]
    assert rows["not_run"].iloc[1] == "sizes: m=150 is too large for 100 rows"
    assert pd.isna(rows["m_min"].iloc[1]) and rows["not_run"].iloc[2] == ""
    assert not (tmp_path / "o" / "toy" / "variants" / "missing=drop").exists()
    config.write_text(toy_config(*GRID, "missing: drop"))  # the baseline itself cannot run
    code, stderr = _cli("sweep", config, "--vary", "seed=1", "--out", tmp_path / "o2")
    assert code == 2 and stderr == f"error: {config}: sizes: m=150 is too large for 100 rows\n"


# --------------------------------------------------------------------------- sensitivity.csv


@pytest.mark.slow
def test_sensitivity_rows_are_the_analysis_of_each_variant(swept):
    _, out = swept
    table = sensitivity.read_sensitivity(out)
    assert list(table.columns) == sensitivity.COLUMNS
    assert list(table["variant"]) == [
        "baseline", "missing=drop,separable=ridge", "missing=category,separable=ridge",
        "missing=drop,separable=max_margin", "missing=category,separable=max_margin",
    ]  # fmt: skip
    for row in table.itertuples():  # a repeated design has the numbers of the one it repeats
        folder = out / "toy" / "variants" / (row.same_as if row.same_as else row.variant)
        expected = runs.analyse_run(folder)
        assert row.verdict == expected["verdict"] and row.n_splits == 6
        assert row.m_min == 12 and row.m_max == 150 and row.gen_model == "naive_bayes"
        assert row.nb_err_m_min == expected["naive_bayes_err_m_min"]
        assert row.lr_err_m_min == expected["logistic_regression_err_m_min"]
        assert row.nb_err_m_max == expected["naive_bayes_err_m_max"]
        assert row.lr_err_m_max == expected["logistic_regression_err_m_max"]
        for key in ("m_cross_interp", "m_cross_ci_low", "m_cross_ci_high", "frac_no_cross"):
            value, want = getattr(row, key), expected[key]
            assert (pd.isna(value) and want is None) or value == want, key
        assert row.keeps_verdict == (row.verdict == table["verdict"].iloc[0])


@pytest.mark.slow
def test_a_second_panels_sweep_keeps_the_first_panels_rows(swept, tmp_path):
    _, out = swept
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    before = sensitivity.read_sensitivity(copy)
    other = before.assign(name="other", panel=3)
    sensitivity.update(copy, other)
    after = sensitivity.read_sensitivity(copy)
    assert list(after["name"]) == ["other"] * 5 + ["toy"] * 5  # panel order, then no panel
    sensitivity.update(copy, before.iloc[:2])  # toy swept again, with fewer variants
    assert list(sensitivity.read_sensitivity(copy)["name"]) == ["other"] * 5 + ["toy"] * 2


@pytest.mark.slow
def test_the_report_has_a_stability_table_only_after_a_sweep(swept, tmp_path):
    config, out = swept
    folder = tmp_path / "results"
    code, stderr = _cli("run", config, "--out", folder)
    assert code == 0, stderr
    write_reports([folder])[0]
    assert "Stability" not in (folder / "REPORT.md").read_text()
    table = sensitivity.read_sensitivity(out)
    flipped = table.assign(verdict=["two regimes", "two regimes", "two regimes", "mixed", "mixed"])
    flipped.to_csv(folder / "sensitivity.csv", index=False)
    write_reports([folder])[0]
    text = (folder / "REPORT.md").read_text()
    assert "The verdict holds under every variant in 0 of 1 panel." in text  # one panel, singular
    line = next(x for x in text.splitlines() if x.startswith("| — | toy |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2:6] == [
        "6",
        "two regimes",
        "1 of 2",
        "`missing=drop,separable=max_margin`: mixed",
    ]
    assert cells[7] == "2"  # the missing=category variants give the baseline's design
    assert "Stability under the sweep" in (folder / "REPORT.html").read_text()


SENSITIVITY_ERRORS = [
    ("name,variant\n", "no column 'panel'; delete it and rerun the sweep"),
    ('"a\n', "not a table genvdis wrote; delete it and rerun the sweep"),
]


@pytest.mark.parametrize(("text", "message"), SENSITIVITY_ERRORS)
@pytest.mark.slow
def test_a_damaged_sensitivity_csv_is_one_line_naming_it(swept, tmp_path, text, message):
    config, _ = swept
    folder = tmp_path / "results"
    assert _cli("run", config, "--out", folder)[0] == 0
    (folder / "sensitivity.csv").write_text(text.replace("\\n", "\n"))
    code, stderr = _cli("report", folder)
    assert code == 2 and stderr == f"error: {folder / 'sensitivity.csv'}: {message}\n"


@pytest.mark.slow
def test_a_sensitivity_csv_without_the_baseline_is_refused(swept, tmp_path):
    config, out = swept
    folder = tmp_path / "results"
    assert _cli("run", config, "--out", folder)[0] == 0
    table = sensitivity.read_sensitivity(out)
    table.iloc[1:].to_csv(folder / "sensitivity.csv", index=False)
    code, stderr = _cli("report", folder)
    assert code == 2
    assert stderr == "error: sensitivity.csv: panel 'toy' has no baseline row; rerun its sweep\n"


# --------------------------------------------------------------------------- config blocks, API


@pytest.mark.slow
def test_a_config_with_a_variants_block_runs_as_itself_and_sweeps_its_variants(toy, tmp_path):
    block = "variants:\n  - {split: random}\n  - {seed: 4}\n  - {missing: impute}\n"
    toy.write_text(toy.read_text() + block)
    code, stderr = _cli("run", toy, "--out", tmp_path / "run")
    assert code == 0, stderr
    result = CliRunner().invoke(app, ["validate", str(toy)])
    assert result.exit_code == 0 and result.stdout == f"{toy}: ok (toy, 3 sizes, 3 variants)\n"
    code, stderr = _cli("sweep", toy, "--out", tmp_path / "sweep")
    assert code == 0, stderr
    lines = stderr.splitlines()
    assert lines[0] == "toy: variant baseline (1 of 4)" and "toy: variant seed=4 (3 of 4)" in lines
    assert "toy: missing=impute: same design as baseline: not run again" in lines
    assert lines[-1] == f"wrote {tmp_path / 'sweep' / 'sensitivity.csv'}: 4 variants"
    ran = tmp_path / "sweep" / "toy" / "variants"
    assert _bytes(ran / "baseline") == _bytes(tmp_path / "run" / "toy")
    assert sorted(p.name for p in ran.iterdir()) == ["baseline", "seed=4", "split=random",
                                                    "variants.csv"]  # fmt: skip
    toy.write_text(toy.read_text().replace("{seed: 4}", "{seed: -4}"))
    result = CliRunner().invoke(app, ["validate", str(toy)])
    assert result.exit_code == 2
    assert f"error: {toy}: variants[1] seed=-4: seed: Input should be greater" in result.stderr


def test_the_api_sweep_returns_the_rows_it_wrote(toy, tmp_path):
    import genvdis

    table = genvdis.sweep(toy, vary=["laplace=0.5,1"], out=tmp_path / "out")
    assert list(table["variant"]) == ["baseline", "laplace=0.5", "laplace=1"]
    assert list(table["same_as"]) == ["", "", "baseline"]
    written = sensitivity.read_sensitivity(tmp_path / "out")
    assert list(written["variant"]) == list(table["variant"])
    with raises_user_error("--splits 0", "splits"):
        genvdis.sweep(toy, vary=["seed=1"], splits=0)


def test_every_panel_takes_every_variant_of_the_committed_sweep():
    """`make sweep` cannot stop half-way on a variant a panel refuses (data aside)."""
    from genvdis import api
    from genvdis.config import builtin

    committed = variants.read_block_file(REPO / "configs/sweeps/figure1.yaml")
    assert len(committed) == 17
    panels = [c for c in builtin.builtin_configs() if c.kind == "panel"]
    assert len(panels) == 15
    for panel in panels:
        expanded = variants.expand(api.load_config(panel.path), committed, f"{panel.name}: ")
        assert len(expanded) == 18  # the baseline and each entry


# --------------------------------------------------------------------------- issue 30 §5: bound


def _values(n: int) -> str:
    return ",".join(str(i) for i in range(1, n + 1))


def test_a_sweep_beyond_the_bound_is_counted_and_refused_before_any_variant_is_built(
    toy, monkeypatch
):
    """--vary seed=1..1000 --vary laplace=1..1000 is 10^6 variants: the cross product is
    counted from the value lists and refused at once, rather than built for minutes, silent,
    while memory grows."""
    built = []
    monkeypatch.setattr(variants, "make_variant", lambda *a: built.append(a))
    args = ("--vary", f"seed={_values(1000)}", "--vary", f"laplace={_values(1000)}")
    code, stderr = _cli("sweep", toy, *args, "--out", toy.parent / "out")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert "1,000,000 variants (1000 x 1000 values" in stderr and "--force" in stderr
    assert built == [] and not (toy.parent / "out").exists()


@pytest.mark.parametrize(
    "block",
    ["{vary: {seed: [1, 2], laplace: [1, 2]}}", "[{seed: 1}, {seed: 2}, {seed: 3}, {seed: 4}]"],
)
@pytest.mark.slow
def test_every_source_of_variants_is_bounded_and_force_goes_on(toy, tmp_path, monkeypatch, block):
    monkeypatch.setattr(variants, "MAX_VARIANTS", 3)
    (tmp_path / "v.yaml").write_text(f"variants: {block}\n")
    toy.write_text(toy.read_text() + f"variants: {block}\n")
    sources = {
        "--variants": (("--variants", tmp_path / "v.yaml"), "4 variants"),
        "--vary": (("--vary", "seed=1,2,3", "--vary", "laplace=1,2"), "6 variants (3 x 2 values"),
        "the config's block": ((), "4 variants"),
    }
    for options, count in sources.values():
        code, stderr = _cli("sweep", toy, *options, "--out", tmp_path / "out")
        assert code == 2 and stderr.count("\n") == 1 and count in stderr, stderr
        assert "beyond the bound of 3" in stderr and "--force" in stderr
    code, stderr = _cli("validate", toy)
    assert code == 2 and "beyond the bound of 3" in stderr, stderr
    import genvdis

    with raises_user_error("4 variants", "3"):
        genvdis.sweep(toy, splits=2, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    table = genvdis.sweep(toy, splits=2, out=tmp_path / "out", force=True)
    assert len(table) == 5  # the baseline and the 4 variants


def test_a_grid_prepares_each_data_setting_once(toy, tmp_path, monkeypatch):
    """Variants that share data settings share one preparation (~30 ms each: 1000 variants of
    seed x laplace plan in 1 s rather than 29 s); the designs and 'same as' are those of a
    preparation per variant."""
    from genvdis import api
    from genvdis.experiment import sweeps

    calls = []
    real = sweeps.prepare
    monkeypatch.setattr(sweeps, "prepare", lambda raw, config: calls.append(1) or real(raw, config))
    given = sweeps.given_variants(["seed=1,2,3", "laplace=1,2", "bins=4,5"], None)
    config = api.load_config(toy)
    planned = sweeps.plan_config(config, "toy", toy, given, None)
    assert len(planned) == 13  # prepared once per value of bins (a preprocessing setting)
    assert len(calls) == len({p.config.preprocessing.bins for p in planned}) == 2
    same = {p.variant.id: p.same_as for p in planned}
    for seed in (1, 2, 3):  # bins changes nothing without discretizing; laplace and seed do
        for laplace in (1, 2):
            first = f"bins=4,laplace={laplace},seed={seed}"
            assert same[first.replace("bins=4", "bins=5")] == (same[first] or first)
    assert len({p.design for p in planned}) == 7  # the baseline's seed is none of 1, 2, 3
    for item in planned:  # each design as from the variant's own prepared data
        assert item.design == sweeps.design_key(item.config, real(item.raw, item.config))
