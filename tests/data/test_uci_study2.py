"""The study datasets of issue 32, part 2 (spambase ... arrhythmia), read as their archive
files and documentation describe them.

The expected numbers are typed in from the offline copy's MANIFEST.tsv (rows; a header line
counts there, so transfusion and parkinsons have one row fewer here) and from each dataset's
`.names` file or UCI page (attributes, classes), not computed by the code under test. The
tests ask for `mirror_env` and are skipped without the UCI files (see conftest.py).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import pytest

from genvdis.config.experiment import load_config
from genvdis.data.uci import REGISTRY, RawData, load_registered
from genvdis.experiment.engine import run_experiment

# name: (rows, continuous attributes, discrete attributes, rows per class)
STUDY = {
    "spambase": (4601, 57, 0, {"1": 1813, "0": 2788}),  # .names: 1813 spam (39.4%)
    "haberman": (306, 3, 0, {"1": 225, "2": 81}),
    "blood-transfusion": (749 - 1, 4, 0, {"1": 178, "0": 570}),  # a header line
    "banknote": (1372, 4, 0, {"0": 762, "1": 610}),
    "magic": (19020, 10, 0, {"g": 12332, "h": 6688}),  # magic04.names, "Class Distribution"
    "letter-recognition": (20000, 16, 0, {"U": 813, "A": 789, "Z": 734}),  # three of 26
    "vehicle": (9 * 94, 18, 0, {"opel": 212, "saab": 217, "bus": 218, "van": 199}),
    "segment": (2310, 19, 0, {str(c): 330 for c in range(1, 8)}),  # 330 per class
    "satimage": (
        4435 + 2000, 36, 0,
        {"1": 1533, "2": 703, "3": 1358, "4": 626, "5": 707, "7": 1508},  # no class 6
    ),
    "spectf": (187, 44, 0, {"1": 172, "0": 15}),  # SPECTF.test: 172 abnormal, 15 normal
    "monks-1": (432, 0, 6, {"1": 216, "0": 216}),
    "monks-2": (432, 0, 6, {"1": 142, "0": 290}),
    "monks-3": (432, 0, 6, {"1": 228, "0": 204}),
    "zoo": (101, 0, 16, {"1": 41, "2": 20, "3": 5, "4": 13, "5": 4, "6": 8, "7": 10}),
    "parkinsons": (196 - 1, 22, 0, {"1": 147, "0": 48}),  # a header line
    "seeds": (210, 7, 0, {"1": 70, "2": 70, "3": 70}),
    "dermatology": (
        366, 1, 33, {"1": 112, "2": 61, "3": 72, "4": 49, "5": 52, "6": 20},
    ),
    "hayes-roth": (132, 0, 4, {"1": 51, "2": 51, "3": 30}),
    "abalone": (4177, 7, 1, {"9": 689, "10": 634, "1": 1, "29": 1}),  # rings: four of 28
    "pendigits": (7494 + 3498, 16, 0, {"2": 1144, "4": 1144, "3": 1055}),  # three of 10
    "cmc": (1473, 2, 7, {"1": 629, "2": 333, "3": 511}),
    "tae": (151, 1, 4, {"1": 49, "2": 50, "3": 52}),
    "flags": (
        194, 10, 18, {"0": 40, "1": 60, "2": 36, "3": 8, "4": 4, "5": 27, "6": 15, "7": 4},
    ),
    "post-operative": (90, 1, 7, {"A": 64, "S": 24, "I": 2}),
    "arrhythmia": (
        452, 206, 73,
        {"1": 245, "2": 44, "3": 15, "4": 15, "5": 13, "6": 25, "7": 3, "8": 2, "9": 9,
         "10": 50, "14": 4, "15": 5, "16": 22},  # .names: none of classes 11, 12, 13
    ),
}  # fmt: skip


@functools.cache
def _load(name: str) -> RawData:
    return load_registered(name)


def test_every_part_2_dataset_is_registered_with_its_label():
    for name in STUDY:
        info = REGISTRY[name]
        assert info.target not in info.attributes, name
        assert info.files and info.description, name


@pytest.mark.parametrize("name", sorted(STUDY))
def test_rows_kinds_and_classes(name, mirror_env):
    """Each file row is read once, each registered attribute is a column of its kind, and the
    label column holds the documented classes."""
    rows, continuous, discrete, counts = STUDY[name]
    raw = _load(name)
    assert len(raw.frame) == rows
    kinds = list(raw.attributes.values())
    assert (kinds.count("continuous"), kinds.count("discrete")) == (continuous, discrete)
    assert set(raw.frame.columns) == {*raw.attributes, raw.target}  # no id or name left
    labels = raw.frame[raw.target].value_counts().to_dict()
    assert {label: labels.get(label) for label in counts} == counts
    assert not (raw.frame == "?").any(axis=None)
    numbers = raw.frame[[a for a, kind in raw.attributes.items() if kind == "continuous"]]
    assert numbers.apply(pd.to_numeric).notna().sum().sum() == numbers.notna().sum().sum()


def test_missing_values_where_the_files_have_them(mirror_env):
    """'?' only where the documentation says: dermatology's age (8), post-operative's
    COMFORT (3) and arrhythmia's five vector angles and heart rate."""
    for name in STUDY:
        gaps = _load(name).frame.isna().sum()
        gaps = gaps[gaps > 0].to_dict()
        expected = {
            "dermatology": {"age": 8},
            "post-operative": {"COMFORT": 3},
            "arrhythmia": {
                "T-angle": 8, "P-angle": 22, "QRST-angle": 1, "J-angle": 376, "heart-rate": 1,
            },
        }.get(name, {})  # fmt: skip
        assert gaps == expected, name


def test_first_rows_read_by_eye(mirror_env):
    """Fields land in the right columns, identifiers and header lines are gone, stacked files
    keep their order."""
    first = {name: _load(name).frame.iloc[0] for name in STUDY}
    assert first["blood-transfusion"].tolist() == ["2", "50", "12500", "98", "1"]
    assert first["monks-1"].tolist() == ["1", "1", "1", "1", "1", "1", "1"]
    assert first["zoo"][["hair", "legs", "type"]].tolist() == ["1", "4", "1"]  # aardvark
    park = first["parkinsons"]
    assert park[["MDVP:Fo(Hz)", "status", "PPE"]].tolist() == ["119.99200", "1", "0.284654"]
    assert first["flags"][["landmass", "religion", "mainhue", "botright"]].tolist() == [
        "5", "2", "green", "green",
    ]  # Afghanistan  # fmt: skip
    assert first["hayes-roth"].tolist() == ["2", "1", "1", "2", "1"]  # name 92 dropped
    arrhythmia = first["arrhythmia"]
    assert arrhythmia[["age", "sex", "height", "heart-rate", "class"]].tolist() == [
        "75", "0", "190", "63", "8",
    ]  # fmt: skip
    assert arrhythmia[["DI-Q-width", "V6-QRSTA-amplitude"]].tolist() == ["0", "49.4"]
    vehicle = _load("vehicle").frame  # xai.dat's first row follows xah.dat's 94th
    assert vehicle.iloc[8 * 94][["compactness", "class"]].tolist() == ["100", "bus"]
    satimage = _load("satimage").frame  # sat.tst follows sat.trn
    assert satimage.iloc[4435][["p1b1", "p9b4", "class"]].tolist() == ["80", "87", "3"]


CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "study"
PART_2_CONFIGS = [CONFIGS / f"{name}.yaml" for name in STUDY]  # one per dataset above


def test_every_part_2_dataset_has_its_study_config():
    for path in PART_2_CONFIGS:
        config = load_config(path)
        assert (config.name, config.dataset) == (path.stem, path.stem)
        assert (config.splits, config.split, config.test, config.seed) == (
            1000, "stratified", "rest", 0,
        )  # fmt: skip
        assert [m.name for m in config.models] == ["naive_bayes", "logistic_regression"]


@pytest.mark.slow
@pytest.mark.parametrize("path", PART_2_CONFIGS, ids=lambda p: p.stem)
def test_study_config_runs_at_two_splits(path, mirror_env, tmp_path):
    """The config runs end to end (its data prepared, every m of its grid, both models) at 2
    splits; the test set at the largest m holds each class (the run would refuse it)."""
    config = load_config(path).model_copy(update={"splits": 2})
    folder = run_experiment(config, tmp_path)
    summary = pd.read_csv(folder / "summary.csv")
    assert sorted(summary["m"].unique()) == sorted(config.size_grid)
    assert set(summary["model"]) == {"naive_bayes", "logistic_regression"}
    assert (summary["n_splits"] == 2).all() and summary["mean"].between(0, 1).all()
