"""Preprocessing (genvdis/data/preprocessing.py): a table read as numbers and labels, its target
and attribute kinds, missing values and levels, each case a tiny file written here; `genvdis
init` infers the same kinds as a run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from genvdis.cli import app
from genvdis.config.experiment import parse_config
from genvdis.config.sections import TargetSpec
from genvdis.data.preprocessing import PreparedData, make_labels, prepare, read_numbers
from genvdis.data.sources import load_data
from genvdis.errors import UserError
from tests.clichecks import raises_user_error


def prepared(tmp_path: Path, csv: str, config: str, name: str = "data.csv") -> PreparedData:
    """The model-ready data a config (YAML text) names, its table `csv` written beside it."""
    (tmp_path / name).write_text(csv)
    parsed = parse_config(yaml.safe_load(config), "config.yaml")
    return prepare(load_data(parsed, tmp_path), parsed)


def config(target: str = '{positive: ["yes"]}', *extra: str) -> str:
    return "\n".join(
        ["name: t", "dataset: {path: data.csv, target: label}", f"target: {target}",
         "sizes: [2]", *extra]
    ) + "\n"  # fmt: skip


SPELT = "a,label\n" + "".join(
    f"{i * 0.37:.2f},{('1' if i % 4 == 0 else '1.0') if i % 2 == 0 else '0'}\n" for i in range(80)
)  # 40 positives, half written 1 and half 1.0


@pytest.mark.parametrize(
    ("target", "counts", "names"),
    [
        ('{positive: ["1"]}', (40, 40), []),
        ('{positive: ["1.0"]}', (40, 40), []),
        ('{positive: ["01"], negative: ["0.0"]}', (40, 40), []),
        ("{classes: all}", (40, 40), ["0", "1+1.0"]),
        ('{classes: [["0"], ["1"]]}', (40, 40), ["0", "1"]),
        ('{threshold: {op: ">", value: 0.5}}', (40, 40), []),
    ],
)
def test_one_number_spelt_two_ways_is_one_class(tmp_path, target, counts, names):
    """'1' and '1.0' in one label column were two labels: `positive: ["1"]` made the 20 rows
    spelt '1.0' negatives (class counts 20/60), with exit 0; `classes: all` made 3 classes."""
    data = prepared(tmp_path, SPELT, config(target))
    assert data.class_counts == counts and data.class_names == names


def test_init_counts_one_number_spelt_two_ways_as_one_class(tmp_path):
    """init counted '1' and '1.0' as two classes of 20 (three classes: '0' against the rest)."""
    (tmp_path / "data.csv").write_text(SPELT)
    out = tmp_path / "data.yaml"
    args = ["init", str(tmp_path / "data.csv"), "--target", "label", "--output", str(out)]
    assert CliRunner().invoke(app, [*args, "--positive", "1.0"]).exit_code == 0
    text = " ".join(out.read_text().split())
    assert '"0" 40, "1" (with "1.0") 40. Positive: "1.0"' in text, text
    cfg = parse_config(yaml.safe_load(out.read_text()), str(out))
    data = prepare(load_data(cfg, tmp_path), cfg)
    assert data.class_counts == (40, 40)


@pytest.mark.parametrize(
    ("target", "field"),
    [('{positive: ["1"], negative: ["1.0"]}', "target: "),
     ('{classes: [["1"], ["1.0", "0"]]}', "target.classes: ")],
)  # fmt: skip
def test_two_spellings_of_one_number_in_two_classes_are_refused(tmp_path, target, field):
    """Each config label is one class; '1' and '1.0' are one label, which cannot be in two
    (the second class took every row of the first, which was then 'empty')."""
    with pytest.raises(UserError) as error:
        prepared(tmp_path, SPELT, config(target))
    message = str(error.value)
    assert message.startswith(field) and "'1'" in message and "'1.0'" in message, message


def test_one_number_spelt_two_ways_is_one_level_of_a_discrete_attribute(tmp_path):
    """A discrete column holding 1, 1.0 and 0 had three levels, two of them the number 1."""
    csv = "g,label\n" + "".join(
        f"{['1', '1.0', '0', '2.0', '2'][i % 5]},{'yes' if i % 2 else 'no'}\n" for i in range(40)
    )
    data = prepared(tmp_path, csv, config())
    assert data.level_names["g"] == ["0", "1", "2"] and data.layout.levels == (3,)
    np.testing.assert_array_equal(data.X[:5, 0], [1, 1, 0, 2, 2])


def test_a_label_spelt_as_no_row_spells_it_is_still_one_no_row_has(tmp_path):
    with raises_user_error("target.positive", "'2'"):
        prepared(tmp_path, SPELT, config('{positive: ["2.0", "2"]}'))


def _grouped_table() -> str:
    """60 rows: 'money' written with thousands separators (every cell quoted, '12,345.6'),
    larger for 'yes'; 'dose' 3 non-integer values; 'count' 4 whole numbers; 'x' noise."""
    rows = ["x,money,dose,count,label"]
    for i in range(60):
        money = 1000 + 20000 * (i % 2) + (i * 7919 % 3000)
        dose, label = [0.5, 1.5, 2.5][i % 3], "yes" if i % 2 else "no"
        rows.append(f'{i * 0.37 % 5:.2f},"{money:,.1f}",{dose},{i % 4},{label}')
    return "\n".join(rows) + "\n"


def test_numbers_with_thousands_separators_are_numbers(tmp_path):
    """'12,345.6' was text: 60 levels, one per row, and both models at chance, exit 0."""
    data = prepared(tmp_path, _grouped_table(), config())
    assert data.feature_names[:2] == ["x", "money"] and data.layout.n_continuous == 2
    money = [float(r.split('"')[1].replace(",", "")) for r in _grouped_table().splitlines()[1:]]
    expected = (np.array(money) - min(money)) / (max(money) - min(money))
    np.testing.assert_allclose(data.X[:, 1], expected)


def test_init_and_run_infer_the_same_kinds(tmp_path):
    """One rule: init called 'dose' (3 non-integer values) continuous where a run inferred it
    discrete, and dropped 'money' as an identifier where a run kept it as 60 levels."""
    (tmp_path / "data.csv").write_text(_grouped_table())
    out = tmp_path / "data.yaml"
    args = ["init", str(tmp_path / "data.csv"), "--target", "label", "--output", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    written = yaml.safe_load(out.read_text())
    parsed = parse_config(yaml.safe_load(config()), "config.yaml")
    assert written["dataset"]["kinds"] == load_data(parsed, tmp_path).attributes
    assert written["dataset"]["kinds"]["money"] == "continuous"
    assert written["attributes"] == "all"


DECIMAL_COMMA = "x,d,label\n" + "".join(
    f'{i * 0.37:.2f},"{i % 13},{i % 7}5",{"yes" if i % 2 else "no"}\n' for i in range(40)
)


AMBIGUOUS = "x,d,label\n" + "".join(
    f'{i * 0.37:.2f},"{i + 1},{i * 37 % 1000:03d}",{"yes" if i % 2 else "no"}\n' for i in range(40)
)


@pytest.mark.parametrize(
    ("csv", "words"),
    [(DECIMAL_COMMA, ["decimal comma", "'0,05'", "data row 1"]),
     (AMBIGUOUS, ["'1,000'", "data row 1", "1000 or 1.000"])],
    ids=["decimal-comma", "1,000"],
)  # fmt: skip
def test_numbers_whose_commas_cannot_be_read_for_sure_are_refused_not_levels(tmp_path, csv, words):
    """Read as text they were 40 levels, one per row, with exit 0; read as numbers, '1,5'
    could only be guessed. Refused by name when used, inferred or declared continuous; left
    out by init; declared discrete, they are levels, as asked."""
    for attributes in ("all", "[d]"):
        with pytest.raises(UserError) as error:
            prepared(tmp_path, csv, config('{positive: ["yes"]}', f"attributes: {attributes}"))
        assert all(w in str(error.value) for w in ["data.csv", "'d'", *words]), error.value
    declared = config().replace("target: label}", "target: label, kinds: {d: continuous}}")
    with raises_user_error("'d'"):
        prepared(tmp_path, csv, declared)
    assert prepared(tmp_path, csv, config('{positive: ["yes"]}', "attributes: [x]")).n_rows == 40
    discrete = declared.replace("d: continuous", "d: discrete")
    assert len(prepared(tmp_path, csv, discrete).level_names["d"]) > 10
    out = tmp_path / "data.yaml"
    args = ["init", str(tmp_path / "data.csv"), "--target", "label", "--output", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert yaml.safe_load(out.read_text())["attributes"] == ["x"]
    assert words[0] in " ".join(out.read_text().split())


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        (["12,345.6", "1,234", "7"], [12345.6, 1234, 7]),  # a decimal point settles it
        (["1,234,567", "2,000"], [1234567, 2000]),  # two groups settle it
        (["1,500", "3.5"], [1500, 3.5]),
        (["1,500", "2,000"], None),  # 1500 or 1.5: refused
        (["1,500", "1.500"], None),  # '1.500' is 1.5, or a grouped 1500: settles nothing
        (["1,5", "2.5"], None),  # a decimal comma
        (["1.234,5"], None),
        (["a,b", "1.5"], [np.nan, 1.5]),  # text, as ever
    ],
)
def test_read_numbers(cells, expected):
    numbers = read_numbers(pd.Series(cells, dtype=object))
    if expected is None:
        assert numbers.unread and cells[0] in numbers.unread
    else:
        assert numbers.unread is None
        np.testing.assert_array_equal(numbers.values.to_numpy(), expected)


def test_a_threshold_target_reads_thousands_separators_and_refuses_decimal_commas(tmp_path):
    rows = "".join(f'{i},"{1000 + i * 1500:,.1f}"\n' for i in range(20))
    data = prepared(tmp_path, "a,label\n" + rows, config('{threshold: {op: ">", value: 15000}}'))
    assert data.class_counts == (10, 10)
    rows = "".join(f'{i},"{i},5"\n' for i in range(20))
    with raises_user_error("target.threshold", "'label'", "comma"):
        prepared(tmp_path, "a,label\n" + rows, config('{threshold: {op: ">", value: 5}}'))


def test_a_missing_token_with_a_trailing_space_is_missing(tmp_path):
    """'? ' is '?' once stripped: missing, never a level '?' or a label '?' (which, with
    `positive` alone, was counted in the negative class)."""
    csv = "a,b,label\n1,x,yes\n2,y,no\n3,? ,yes\n4,y,no\n5,x,? \n6,x,NA \n7,y,yes\n"
    data = prepared(tmp_path, csv, config())
    assert data.n_rows == 4  # rows 3 (b missing), 5 and 6 (label missing) dropped
    assert data.class_counts == (2, 2)
    assert data.level_names["b"] == ["x", "y"]


def test_a_quoted_blank_cell_is_missing(tmp_path):
    """A quoted blank cell, '" "', is '' once stripped: missing, not a level ''."""
    csv = 'a,b,label\n1,x,yes\n2," ",no\n3,y,yes\n4,y,no\n'
    data = prepared(tmp_path, csv, config('{positive: ["yes"]}', "missing: category"))
    assert data.level_names["b"] == ["?", "x", "y"]


THREE = "a,b,label\n1,x,yes\n2,y,no\n3,x,yes\n4,y,no\n5,x,maybe\n6,y,maybe\n"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        # YAML reads an unquoted no as a boolean: the label 'False', which no row has; the
        # rows labelled no were dropped as in neither class
        ('{positive: ["yes"], negative: [no, "maybe"]}', ["target.negative", "'False'", "quote"]),
        ('{positive: ["yes"], negative: ["no", "mabye"]}', ["target.negative", "'mabye'"]),
        ("{positive: [yes]}", ["target.positive", "'True'", "quote"]),
    ],
)
def test_a_listed_label_that_no_row_has_is_refused(tmp_path, target, words):
    with pytest.raises(UserError) as error:
        prepared(tmp_path, THREE, config(target))
    assert all(word in str(error.value) for word in words), str(error.value)


def test_negative_labels_that_occur_keep_their_rows(tmp_path):
    data = prepared(tmp_path, THREE, config('{positive: ["yes"], negative: ["no", "maybe"]}'))
    assert data.class_counts == (4, 2)


LEAK = "x,grp,label\n" + "".join(f"{i % 7},{'abc'[i % 3]},{'yes' if i % 2 else 'no'}\n"
                                 for i in range(30))  # fmt: skip


def test_the_target_column_is_never_an_attribute(tmp_path):
    """target.column naming an attribute made the label a feature of itself: error 0."""
    data = prepared(tmp_path, LEAK, config('{column: grp, positive: ["a"]}'))
    assert data.feature_names == ["x"]
    assert data.class_counts == (20, 10)


def test_the_target_column_listed_in_attributes_is_refused(tmp_path):
    with raises_user_error("attributes", "'grp'", "target"):
        prepared(tmp_path, LEAK, config('{column: grp, positive: ["a"]}', "attributes: [x, grp]"))


def test_a_kind_with_only_the_target_column_is_refused(tmp_path):
    csv = "x,grp,label\n" + "".join(f"{i % 3},{i * 1.5},yes\n" for i in range(30))
    cfg = config("{column: grp, threshold: {value: median}}", "attributes: continuous")
    with raises_user_error("continuous", "target"):
        prepared(tmp_path, csv, cfg)


@pytest.mark.slow
def test_a_run_with_the_target_column_an_attribute_learns_from_the_others(tmp_path):
    """End to end: labels unrelated to x cannot be learnt (the leak gave error 0)."""
    rng = np.random.default_rng(0)
    rows = [f"{rng.normal():.4f},{rng.choice(['a', 'b'])},{rng.choice(['yes', 'no'])}\n"
            for _ in range(120)]  # fmt: skip
    (tmp_path / "data.csv").write_text("x,grp,label\n" + "".join(rows))
    text = config('{column: grp, positive: ["a"]}', "splits: 5").replace("[2]", "[40]")
    (tmp_path / "t.yaml").write_text(text)
    out = tmp_path / "results"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "t.yaml"), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    summary = (out / "t" / "summary.csv").read_text().splitlines()[1:]
    means = [float(line.split(",")[3]) for line in summary]
    assert min(means) > 0.2, summary


def test_a_threshold_target_with_text_is_refused(tmp_path):
    """Text labels in a threshold's column were dropped as rows in no class, with exit 0."""
    csv = "a,label\n1,10\n2,20\n3,n/a\n4,30\n5,40\n6,5\n"
    with raises_user_error("target.threshold", "'label'", "'n/a'", "row 3"):
        prepared(tmp_path, csv, config("{threshold: {value: median}}"))
    listed = "dataset: {path: data.csv, target: label, missing_values: ['n/a']}"
    data = prepared(tmp_path, csv, config("{threshold: {value: median}}").replace(
        "dataset: {path: data.csv, target: label}", listed))  # fmt: skip
    assert data.class_counts == (3, 2)


MOSTLY_NUMBERS = "x1,x2,label\n" + "".join(
    f"{i * 0.37:.2f},{'unknown' if i % 9 == 4 else f'{i * 1.3:.1f}'},{'yes' if i % 2 else 'no'}\n"
    for i in range(40)
)


def test_numbers_with_a_few_text_cells_are_not_silently_discrete(tmp_path):
    """x2 holds 35 distinct numbers and 'unknown' (an unlisted missing token): inferred
    discrete, it was left out of `attributes: continuous` (or one-hot coded with 36 levels
    under `all`), with exit 0."""
    cfg = config('{positive: ["yes"]}', "attributes: continuous")
    with pytest.raises(UserError) as error:
        prepared(tmp_path, MOSTLY_NUMBERS, cfg)
    words = ["data.csv", "'x2'", "'unknown'", "data row 5", "missing_values", "kinds"]
    assert all(word in str(error.value) for word in words), str(error.value)


@pytest.mark.parametrize(
    "dataset",
    [
        "{path: data.csv, target: label, missing_values: ['unknown']}",
        "{path: data.csv, target: label, kinds: {x2: discrete}}",
    ],
)
def test_numbers_with_text_cells_read_as_the_config_says(tmp_path, dataset):
    cfg = config('{positive: ["yes"]}').replace("{path: data.csv, target: label}", dataset)
    data = prepared(tmp_path, MOSTLY_NUMBERS, cfg)
    if "missing_values" in dataset:
        assert data.feature_names == ["x1", "x2"] and data.layout.n_continuous == 2
        assert data.n_rows == 40 - 4
    else:
        assert data.layout.n_continuous == 1 and data.level_names["x2"][-1] == "unknown"


def test_init_on_numbers_with_a_few_text_cells(tmp_path):
    """init still writes a config (the column discrete, as text) and says what the text is."""
    (tmp_path / "data.csv").write_text(MOSTLY_NUMBERS)
    out = tmp_path / "data.yaml"
    result = CliRunner().invoke(
        app, ["init", str(tmp_path / "data.csv"), "--target", "label", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    text = " ".join(out.read_text().split())
    assert "x2: discrete" in text and "'unknown'" in text and "missing_values" in text, text


def test_numbers_with_text_cells_in_a_column_not_used_are_no_error(tmp_path):
    data = prepared(tmp_path, MOSTLY_NUMBERS, config('{positive: ["yes"]}', "attributes: [x1]"))
    assert data.feature_names == ["x1"] and data.n_rows == 40


def test_the_dataset_target_listed_in_attributes_is_named_as_the_target(tmp_path):
    with raises_user_error("attributes", "'label'", "label column"):
        prepared(tmp_path, THREE, config('{positive: ["yes"]}', "attributes: [a, label]"))


def test_missing_cells_are_a_level_apart_from_a_real_question_mark(tmp_path):
    """With '?' not a missing token, a cell '?' is a real value: `missing: category` gave the
    missing cells the level '?' too, one level of both (3 levels here, not 4), exit 0."""
    csv = "a,b,label\n1,x,yes\n2,?,no\n3,NA,yes\n4,y,no\n5,?,yes\n6,NA,no\n"
    data = prepared(
        tmp_path,
        csv,
        config('{positive: ["yes"]}', "missing: category").replace(
            "target: label}", "target: label, missing_values: [NA]}"
        ),
    )
    assert data.layout.levels[data.feature_names.index("b") - data.layout.n_continuous] == 4
    assert data.level_names["b"] == ["?", "??", "x", "y"]
    codes = data.X[:, data.feature_names.index("b")].astype(int).tolist()
    assert codes[1] == codes[4] != codes[2] == codes[5]  # '?' rows: one level; NA rows: another


BIG = ["12345678901234567890", "12345678901234567891", "9007199254740993", "9007199254740992"]


@pytest.mark.parametrize(
    ("target", "counts", "names"),
    [
        (f'{{positive: ["{BIG[0]}"]}}', (30, 10), []),
        ("{classes: all}", (10, 10, 10, 10), [BIG[3], BIG[2], BIG[0], BIG[1]]),
    ],
)
def test_numbers_one_double_apart_are_two_labels(tmp_path, target, counts, names):
    """Long codes that round to one double were one label: `positive` took the other's rows
    too (exit 0), `classes: all` made one class of two. The labels are numbers written
    exactly; '1' and '1.0' stay one."""
    csv = "a,label\n" + "".join(f"{i * 0.37:.2f},{BIG[i % 4]}\n" for i in range(40))
    data = prepared(tmp_path, csv, config(target))
    assert data.class_counts == counts
    assert data.class_names == names


def test_numbers_one_double_apart_are_two_levels(tmp_path):
    csv = "a,b,label\n" + "".join(
        f"{i * 0.37:.2f},{BIG[2 + i % 2] if i % 3 else '1.0'},{'yes' if i % 2 else 'no'}\n"
        for i in range(40)
    )
    data = prepared(tmp_path, csv.replace(",1.0,", ",1,", 3), config())
    assert data.level_names["b"] == ["1", BIG[3], BIG[2]]  # '1' and '1.0' one level


def test_impute_counts_the_spellings_of_one_level_together(tmp_path):
    """`missing: impute` filled a discrete gap with pandas' mode of the cells: '2' (4 rows)
    over '1' and '1.0' (3 + 3), which are one level of 6 rows."""
    cells = ["1"] * 3 + ["1.0"] * 3 + ["2"] * 4 + ["?"] * 2
    csv = "a,b,label\n" + "".join(
        f"{i * 0.37:.2f},{cell},{'yes' if i % 2 else 'no'}\n" for i, cell in enumerate(cells)
    )
    data = prepared(tmp_path, csv, config('{positive: ["yes"]}', "missing: impute"))
    assert data.level_names["b"] == ["1", "2"]
    assert data.X[-2:, data.feature_names.index("b")].tolist() == [0.0, 0.0]  # level '1'


def test_impute_breaks_a_tie_as_before(tmp_path):
    csv = "a,b,label\n1,q,yes\n2,p,no\n3,q,yes\n4,p,no\n5,?,yes\n6,r,no\n"
    data = prepared(tmp_path, csv, config('{positive: ["yes"]}', "missing: impute"))
    assert data.X[4, data.feature_names.index("b")] == 0.0  # 'p', the smaller of the tie


def test_a_numeric_missing_token_matches_the_number_however_written(tmp_path):
    """`missing_values: ["-999"]` names a number: rows holding '-999.0' are dropped as the
    ones written '-999' are, not kept as a value that a continuous column is rescaled under."""
    rows = [f"{i * 0.37:.2f},{'yes' if i % 2 else 'no'}" for i in range(40)]
    text = "a,label\n" + "\n".join(rows) + "\n"
    listed = config().replace("target: label}", 'target: label, missing_values: ["-999"]}')
    written = {3: "-999.0", 8: "-999.00", 12: "-9.99e2", 20: "-999"}
    odd = text.splitlines()
    for row, cell in written.items():
        odd[row + 1] = f"{cell},{odd[row + 1].split(',')[1]}"
    data = prepared(tmp_path, "\n".join(odd) + "\n", listed)
    kept = [r for i, r in enumerate(rows) if i not in written]
    (tmp_path / "plain").mkdir()
    plain = prepared(tmp_path / "plain", "a,label\n" + "\n".join(kept) + "\n", listed)
    assert data.n_rows == 36
    np.testing.assert_array_equal(data.X, plain.X)


# --- K-class labels: codes in numeric or text order, groups merged ---


def test_all_classes_are_coded_in_numeric_order_or_text_order():
    numbers = pd.Series(["10", " 9", "2", None, "9"])
    codes = make_labels(numbers, TargetSpec(classes="all"))
    np.testing.assert_array_equal(codes.to_numpy(), [2, 1, 0, np.nan, 1])
    words = pd.Series(["b", "a", "10", "c"])
    np.testing.assert_array_equal(make_labels(words, TargetSpec(classes="all")), [2, 1, 0, 3])


def test_groups_merge_labels_and_drop_the_rest():
    labels = pd.Series(["a", "b", "c", "d", "a"])
    codes = make_labels(labels, TargetSpec(classes=[["c"], ["a", "b"]]))
    np.testing.assert_array_equal(codes, [1, 1, 0, np.nan, 1])
    with raises_user_error("target.classes", "'z'"):
        make_labels(labels, TargetSpec(classes=[["a"], ["z"]]))
