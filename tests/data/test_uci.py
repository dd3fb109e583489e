"""The registered parsers read the UCI originals as their documentation describes them, and the
15 panel configs (and the users'-own-data examples) prepare into the numbers docs/datasets.md
states.

The expected numbers are typed in here from the archive's own files (the row counts of the
offline copy's MANIFEST.tsv, and the attribute counts and class distributions that each
`.names` file states), not computed by the code under test. The tests that read UCI files ask
for `uci_dir` (or `mirror_env`), and are skipped without them (see conftest.py).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib.util
import math

import numpy as np
import pandas as pd
import pytest

from genvdis.config.experiment import load_config
from genvdis.config.sections import FileDataset
from genvdis.data import uci as datasets
from genvdis.data.fetch import RemoteFile
from genvdis.data.preprocessing import prepare
from genvdis.data.sources import load_data, load_file_dataset
from genvdis.data.uci import REGISTRY, RawData, load_registered
from genvdis.experiment import splits
from tests.clichecks import raises_user_error
from tests.conftest import REPO

CONFIGS = REPO / "configs"
EXAMPLES = CONFIGS / "examples"

# Data rows in each dataset's files, as MANIFEST.tsv counts them (adult.test's
# '|1x3 Cross validator' line and blank lines are not rows).
N_ROWS = {
    "adult": 32561 + 16281,  # adult.data + adult.test
    "breast-cancer": 286,
    "housing": 506,
    "ionosphere": 351,
    "lenses": 24,
    "liver": 345,
    "lymphography": 148,
    "optdigits": 3823 + 1797,  # optdigits.tra + optdigits.tes
    "pima": 768,
    "promoters": 106,
    "sick": 2800 + 972,  # sick.data + sick.test
    "sonar": 208,
    "voting": 435,
}

# Number of attributes (class and ids excluded), as each .names file states them.
N_ATTRIBUTES = {
    "pima": 8,  # "8 plus class"
    "adult": 14,  # 6 continuous + 8 nominal listed
    "housing": 13,  # 14 columns, MEDV (the "class") is the 14th
    "optdigits": 64,  # "64 input+1 class attribute"
    "ionosphere": 34,  # "34 plus the class attribute"
    "liver": 6,  # "7 overall", the 7th is the selector (our class)
    "sonar": 60,  # "a set of 60 numbers"
    "promoters": 57,  # 59 = class + instance name + 57 positions
    "lymphography": 18,  # "19 including the class attribute"
    "breast-cancer": 9,  # "9 + the class attribute"
    "lenses": 4,  # "4 (all nominal)"
    "sick": 29,  # the 29 attributes listed in sick.names
    "voting": 16,  # "16 + class name"
}

# Class distributions from the .names files (ionosphere, liver and sick state none: their
# counts were taken from the UCI dataset pages, 225/126, 145/200 and 231 sick of 3772).
CLASS_COUNTS = {
    "pima": {"0": 500, "1": 268},
    "adult": {">50K": 11687, "<=50K": 48842 - 11687},  # 23.93% of 48842
    "optdigits": {  # training + testing set counts, per digit
        str(d): a + b
        for d, (a, b) in enumerate(
            zip(
                [376, 389, 380, 389, 387, 376, 377, 387, 380, 382],
                [178, 182, 177, 183, 181, 182, 181, 179, 174, 180],
                strict=True,
            )
        )
    },
    "ionosphere": {"g": 225, "b": 126},
    "liver": {"1": 145, "2": 200},
    "sonar": {"M": 111, "R": 97},
    "promoters": {"+": 53, "-": 53},
    "lymphography": {"1": 2, "2": 81, "3": 61, "4": 4},
    "breast-cancer": {"no-recurrence-events": 201, "recurrence-events": 85},
    "lenses": {"1": 4, "2": 5, "3": 15},
    "sick": {"sick": 231, "negative": 3772 - 231},
    "voting": {"democrat": 267, "republican": 168},
}

# house-votes-84.names, "Missing Attribute Values", lists '?' counts 0, 0, 12, 48, ..., 28 for
# attributes 1..17. The table is off by one: the data's 16 votes hold its counts 12 .. 28 in
# order, and the last vote (export-administration-act-south-africa) holds 104, which the table
# omits (its two leading zeros both stand for the class).
VOTING_QUESTION_MARKS = [12, 48, 11, 11, 15, 11, 14, 15, 22, 7, 21, 31, 25, 17, 28, 104]

# What each panel config prepares into: (panel, title, n rows, negatives, positives).
# docs/datasets.md gives the same numbers and says where each comes from.
PANELS = {
    "pima": (1, "pima", 768, 500, 268),
    "adult-continuous": (2, "adult (continuous)", 48842, 37155, 11687),
    "boston": (3, "boston: predict if > median price", 506, 256, 250),
    "optdigits-0v1": (4, "optdigits: 0's and 1's", 1125, 571, 554),
    "optdigits-2v3": (5, "optdigits: 2's and 3's", 1129, 572, 557),
    "ionosphere": (6, "ionosphere", 351, 126, 225),
    "liver": (7, "liver disorders", 345, 145, 200),
    "sonar": (8, "sonar", 208, 97, 111),
    "adult-discrete": (9, "adult (discrete)", 45222, 34014, 11208),
    "promoters": (10, "promoters", 106, 53, 53),
    "lymphography": (11, "lymphography", 142, 81, 61),
    "breast-cancer": (12, "breast cancer", 277, 196, 81),
    "lenses": (13, "lenses: predict hard vs. soft", 9, 5, 4),
    "sick": (14, "sick", 3622, 3397, 225),
    "voting": (15, "voting records", 435, 168, 267),
}
PANEL_FILES = [CONFIGS / f"{name}.yaml" for name in PANELS]


@functools.cache
def _load(name: str) -> RawData:
    """Parse a registered dataset once per session (the env that mirror_env sets is the same
    for every test: the session's mirror and cache)."""
    return load_registered(name)


# --- the parsers against the archive's own documentation -------------------------------------


@pytest.mark.parametrize("name", sorted(N_ROWS))  # the study's: tests/data/test_uci_study.py
def test_row_count_matches_manifest(name, mirror_env):
    """Every data row is read, once: the parsed table has the rows MANIFEST.tsv counts in the
    dataset's files."""
    assert len(_load(name).frame) == N_ROWS[name]


@pytest.mark.parametrize("name", sorted(N_ATTRIBUTES))
def test_attribute_count_matches_names_file(name, mirror_env):
    raw = _load(name)
    assert len(raw.attributes) == N_ATTRIBUTES[name]
    assert set(raw.attributes) <= set(raw.frame.columns)
    assert raw.target in raw.frame.columns and raw.target not in raw.attributes


@pytest.mark.parametrize("name", sorted(CLASS_COUNTS))
def test_class_counts_match_names_file(name, mirror_env):
    labels = _load(name).frame[_load(name).target]
    assert labels.value_counts().to_dict() == CLASS_COUNTS[name]


def test_registered_classes_are_the_names_files():
    """The registry's class count (study.csv's K) is the number of classes typed in above
    from the .names files; housing's target is a number, split by a threshold: none."""
    assert {name: REGISTRY[name].classes for name in CLASS_COUNTS} == {
        name: len(counts) for name, counts in CLASS_COUNTS.items()
    }
    assert REGISTRY["housing"].classes is None


def test_housing_median_value_is_numeric_and_complete(mirror_env):
    """housing has no classes: its MEDV column must be 506 numbers (no '?', none lost)."""
    medv = pd.to_numeric(_load("housing").frame["MEDV"], errors="raise")
    assert medv.notna().all() and medv.between(5, 50).all()  # "$1000's", capped at 50
    assert medv.median() == 21.2


def test_adult_labels_and_test_file(mirror_env):
    """adult.test's labels end with '.' in the file; parsed, both files use the same two
    labels, and the first adult.test row follows the last adult.data row."""
    frame = _load("adult").frame
    assert set(frame["income"]) == {">50K", "<=50K"}
    assert not frame["income"].str.endswith(".").any()
    first_test = frame.iloc[32561]  # adult.data has 32561 rows
    assert first_test[["age", "workclass", "fnlwgt", "income"]].tolist() == [
        "25",
        "Private",
        "226802",
        "<=50K",
    ]
    assert not frame.isna().all(axis=1).any()


def test_sick_labels_have_no_record_id(mirror_env):
    frame = _load("sick").frame
    assert set(frame["class"]) == {"sick", "negative"}
    assert not frame["class"].str.contains(r"[|.]").any()
    assert frame.iloc[0][["age", "sex", "referral-source"]].tolist() == ["41", "F", "SVHC"]


def test_promoters_are_57_bases(mirror_env):
    raw = _load("promoters")
    positions = raw.frame[list(raw.attributes)]
    assert positions.shape == (106, 57)
    assert set(np.unique(positions.to_numpy())) == {"a", "c", "g", "t"}
    # The first and last records of promoters.data, read by eye from the file.
    first = "tactagcaatacgcttgcgttcggtggttaagtatgtataatgcgcgggcttgtcgt"
    last = "taacattaataaataaggaggctctaatggcactcattagccaatcaatcaagaact"
    assert "".join(positions.iloc[0]) == first and raw.frame["class"].iloc[0] == "+"
    assert "".join(positions.iloc[-1]) == last and raw.frame["class"].iloc[-1] == "-"


def test_missing_values_are_nan(mirror_env):
    """'?' becomes NaN (never a literal '?' value), in the numbers the .names files give."""
    cancer = _load("breast-cancer").frame
    assert cancer.isna().any(axis=1).sum() == 9
    assert cancer.isna().sum()[lambda s: s > 0].to_dict() == {"node-caps": 8, "breast-quad": 1}
    adult = _load("adult")
    assert adult.frame[datasets.ADULT_DISCRETE].isna().any(axis=1).sum() == 3620
    assert adult.frame[datasets.ADULT_CONTINUOUS].notna().all(axis=None)
    assert len(adult.frame.dropna()) == 45222  # adult.names: "45222 if ... unknown ... removed"
    voting = _load("voting").frame
    assert voting[datasets.VOTES].isna().sum().tolist() == VOTING_QUESTION_MARKS
    for name in REGISTRY:
        assert not (_load(name).frame == "?").any(axis=None), name


# --- the registry: registry.txt --------------------------------------------------------------

REGISTRY_TXT = REPO / "genvdis" / "data" / "registry.txt"
SHA_A, SHA_B = "a" * 64, "b" * 64


def _registered_files() -> dict[str, tuple[str, int]]:
    return {
        f.path: (f.sha256, f.size) for info in REGISTRY.values() for f in (*info.files, *info.docs)
    }


def test_the_registry_holds_the_datasets_of_the_papers_panels():
    """The 15 panel configs name the 13 datasets of N_ROWS (adult and optdigits serve two),
    all registered; every dataset with files in registry.txt is registered (the study's
    datasets: tests/data/test_uci_study.py)."""
    used = {load_config(path).dataset for path in PANEL_FILES}
    lines = [line.split() for line in REGISTRY_TXT.read_text().splitlines()]
    in_file = {fields[0] for fields in lines if fields and not fields[0].startswith("#")}
    assert used == set(N_ROWS) and used <= set(REGISTRY) == in_file


def test_registered_files_are_the_archive_bytes(uci_dir):
    """Each registered file's sha256 and size are those of the archive's file (the copy the
    tests use), and, where the copy has its MANIFEST.tsv, the manifest records every registered
    file with the same sha256 and size (the copy also holds files no dataset registers yet,
    for studies beyond the 15 panels)."""
    registered = _registered_files()
    for path, (sha256, size) in registered.items():
        data = (uci_dir / path).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (sha256, size), path
    manifest = uci_dir / "MANIFEST.tsv"
    if manifest.is_file():  # the project's copy has one; a test download cache has none
        with manifest.open(newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        recorded = {row["path"]: (row["sha256"], int(row["bytes"])) for row in rows}
        assert registered == {path: recorded.get(path) for path in registered}


def test_registry_lines_keep_their_order_and_addresses():
    """Comments and blank lines are skipped; data files keep their order (the parser stacks
    them so), and the other addresses theirs (they are tried in it)."""
    text = (
        "# dataset role path sha256 size addresses\n\n"
        f"x  data  x/x.train  {SHA_A}  10  https://a.example/x.train 'https://b.example/x y'\n"
        f"x  docs  x/x.names  {SHA_B}  5  # its description\n"
        f"x  data  x/x.test   {SHA_B}  7\n"
    )
    assert datasets._read_registry(text) == {
        "x": {
            "data": [
                RemoteFile(
                    "x/x.train", SHA_A, 10, ("https://a.example/x.train", "https://b.example/x y")
                ),
                RemoteFile("x/x.test", SHA_B, 7),
            ],
            "docs": [RemoteFile("x/x.names", SHA_B, 5)],
        }
    }


@pytest.mark.parametrize(
    "line",
    [f"x data x/x.data {SHA_A}", f"x doc x/x.data {SHA_A} 10", f"x data x/x.data {SHA_A[1:]} 10",
     f"x data x/x.data {SHA_A} ten", f"x data x/x.data {SHA_A.upper()} 10"],
    ids=["no-size", "role", "short-sha256", "size", "upper-case"],
)  # fmt: skip
def test_a_malformed_registry_line_is_named(line):
    with pytest.raises(ValueError, match=r"^registry.txt, line 2: expected 'dataset data\|docs"):
        datasets._read_registry(f"# a comment\n{line}\n")


# --- the panel configs -----------------------------------------------------------------------


def test_panel_configs_are_the_papers_15_panels():
    """One config per Figure 1 panel, numbered and titled as in the paper; no other config
    claims a panel number (Figure 1 would show it instead)."""
    configs = {path.stem: load_config(path) for path in PANEL_FILES}
    others = [
        p
        for p in [*CONFIGS.glob("*.yaml"), *EXAMPLES.glob("*.yaml")]
        if p.stem not in PANELS and not p.name.startswith("theory-")  # theory: another schema
    ]
    assert [p.name for p in others if load_config(p).panel is not None] == []
    for name, config in configs.items():
        panel, title, *_ = PANELS[name]
        assert (config.name, config.panel, config.title) == (name, panel, title)
        assert config.splits == 1000 and config.split == "stratified" and config.test == "rest"
        assert [m.name for m in config.models] == ["naive_bayes", "logistic_regression"]
        assert config.models[1].separable == "sample"
    kinds = {n: load_config(CONFIGS / f"{n}.yaml").attributes for n in PANELS}
    assert [kinds[n] for n in sorted(PANELS, key=lambda n: PANELS[n][0])] == (
        ["continuous"] * 8 + ["discrete"] * 7
    )


@pytest.mark.parametrize("path", PANEL_FILES, ids=lambda p: p.stem)
def test_panel_prepares_into_documented_counts(path, mirror_env):
    """n rows and class counts after the config's target mapping and missing policy, and a
    grid whose largest m still leaves at least a fifth of the rows to test on."""
    config = load_config(path)
    data = prepare(load_data(config, base_dir=path.parent), config)
    _, _, n, negatives, positives = PANELS[config.name]
    assert (data.n_rows, *data.class_counts) == (n, negatives, positives)
    grid = config.size_grid
    for m in grid:
        splits.check_size(m, data.class_counts, config.test)
    assert n - max(grid) >= 0.2 * n
    assert len(grid) >= 6 and min(grid) >= 2
    if data.layout.n_continuous:
        X = data.X[:, : data.layout.n_continuous]
        assert X.min() == 0.0 and X.max() == 1.0  # rescaled with the kept rows' min and max


def test_voting_keeps_question_mark_as_a_value(mirror_env):
    config = load_config(CONFIGS / "voting.yaml")
    data = prepare(load_data(config), config)
    assert data.layout.levels == (3,) * 16
    assert all(levels == ["?", "n", "y"] for levels in data.level_names.values())


def test_boston_keeps_chas_as_a_01_number(mirror_env):
    config = load_config(CONFIGS / "boston.yaml")
    data = prepare(load_data(config), config)
    chas = data.X[:, data.feature_names.index("CHAS")]
    assert set(np.unique(chas)) == {0.0, 1.0} and chas.sum() == 35  # 35 tracts bound the river


# --- users' own data ---------------------------------------------------------------------------


def _toy_rows() -> list[list[str]]:
    with (EXAMPLES / "toy.csv").open(newline="") as handle:
        return list(csv.reader(handle))


def test_toy_csv_is_what_make_toy_data_writes():
    """The committed toy.csv is reproducible from its script (and so is its sha256)."""
    spec = importlib.util.spec_from_file_location("make_toy_data", EXAMPLES / "make_toy_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.make_rows() == _toy_rows()


def test_own_data_example_uses_declared_kinds():
    path = EXAMPLES / "own-data.yaml"
    config = load_config(path)
    raw = load_data(config, base_dir=path.parent)
    assert raw.attributes == {
        "age": "continuous",
        "income": "continuous",
        "visits": "continuous",  # declared; inferred it would be discrete (9 values)
        "region": "discrete",
        "plan": "discrete",
    }
    undeclared = load_file_dataset(FileDataset(path="toy.csv", target="label"), base_dir=EXAMPLES)
    assert undeclared.attributes["visits"] == "discrete"
    data = prepare(raw, config)
    labels = [row[-1] for row in _toy_rows()[1:]]
    assert data.class_counts == (labels.count("no"), labels.count("yes"))
    assert data.layout.n_continuous == 3 and data.layout.levels == (4, 3)
    assert max(config.size_grid) < data.n_rows


def test_local_tsv_is_read_with_tabs(tmp_path):
    rows = _toy_rows()
    (tmp_path / "toy.tsv").write_text("".join("\t".join(r) + "\n" for r in rows))
    raw = load_file_dataset(FileDataset(path="toy.tsv", target="label"), base_dir=tmp_path)
    csv_raw = load_file_dataset(FileDataset(path="toy.csv", target="label"), base_dir=EXAMPLES)
    pd.testing.assert_frame_equal(raw.frame, csv_raw.frame)
    assert raw.attributes == csv_raw.attributes
    with raises_user_error("'label'"):
        load_file_dataset(FileDataset(path="toy.tsv", target="label", sep=","), base_dir=tmp_path)


def test_url_dataset_is_fetched_and_verified(http_mirror, uci_dir, tmp_path, monkeypatch):
    """A header-less UCI file named by URL + sha256, its label named by column index, reads
    like the registered parser reads it; a wrong sha256 is refused and nothing is cached."""
    monkeypatch.setenv("GENVDIS_DATA", str(tmp_path))
    sha = next(f.sha256 for f in REGISTRY["lenses"].files)
    spec = FileDataset(
        url=http_mirror + "lenses/lenses.data", sha256=sha, target="5", header=False, sep=r"\s+"
    )
    raw = load_file_dataset(spec)
    assert raw.frame.shape == (24, 6)
    assert raw.frame["5"].value_counts().to_dict() == CLASS_COUNTS["lenses"]
    monkeypatch.setenv("GENVDIS_MIRROR", str(uci_dir))
    registered = _load("lenses").frame
    assert raw.frame[["1", "2", "3", "4"]].to_numpy().tolist() == (
        registered[datasets.LENSES_ATTRIBUTES].to_numpy().tolist()
    )
    assert raw.checksums == {"lenses.data": sha}
    wrong = spec.model_copy(update={"sha256": "0" * 64})
    with raises_user_error("checksum"):
        load_file_dataset(wrong)
    assert not list((tmp_path / "user" / ("0" * 16)).glob("*"))


def test_toy_url_example_pins_toy_csv(serve, tmp_path, monkeypatch):
    """toy-url.yaml's sha256 is toy.csv's, so with its placeholder URL replaced (by
    configs/examples served over HTTP on 127.0.0.1, as its comment suggests) it runs."""
    examples_server = serve(EXAMPLES)
    monkeypatch.setenv("GENVDIS_DATA", str(tmp_path))
    config = load_config(EXAMPLES / "toy-url.yaml")
    assert config.dataset.sha256 == hashlib.sha256((EXAMPLES / "toy.csv").read_bytes()).hexdigest()
    served = config.with_overrides(
        dataset=config.dataset.model_copy(update={"url": examples_server + "toy.csv"})
    )
    raw = load_data(served)
    local = load_data(load_config(EXAMPLES / "own-data.yaml"), base_dir=EXAMPLES)
    pd.testing.assert_frame_equal(raw.frame, local.frame)
    assert raw.attributes == local.attributes


@pytest.mark.parametrize(
    "name",
    ["ionosphere-three-models", "sonar-max-margin", "sonar-ridge"],
)
def test_model_comparison_examples_keep_their_panels_settings(name):
    """The examples change only models and name, and carry no panel number (they must not
    replace a Figure 1 panel)."""
    example = load_config(EXAMPLES / f"{name}.yaml")
    base = load_config(CONFIGS / f"{name.split('-')[0]}.yaml")
    keep = {"name", "title", "panel", "models"}
    assert example.model_dump(exclude=keep) == base.model_dump(exclude=keep)
    assert example.panel is None and example.name == name
    lr = [m for m in example.models if m.name == "logistic_regression"][0]
    expected = {"sonar-max-margin": "max_margin", "sonar-ridge": "ridge"}.get(name, "sample")
    assert lr.separable == expected and math.isclose(lr.C, 1.0)


def test_docs_table_states_the_same_counts():
    """docs/datasets.md's panel table gives the n and class counts these tests check."""
    rows = {}
    for line in (REPO / "docs" / "datasets.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].isdigit():
            name = cells[1].strip("`").removesuffix(".yaml")
            positives, negatives = (int(c) for c in cells[6].split("/"))
            rows[name] = (int(cells[0]), int(cells[5]), negatives, positives)
    assert rows == {name: (p, n, neg, pos) for name, (p, _, n, neg, pos) in PANELS.items()}
