"""genvdis.data.openml: an OpenML dataset loads through scikit-learn's `fetch_openml` with
OpenML's own kinds and default target, its id, version and md5 in the run's config.yaml, and
is read from the cache once fetched. Nothing here goes online: as scikit-learn's own tests of
`fetch_openml` do, `sklearn.datasets._openml.urlopen` is replaced by one that serves the
small files in tests/data/fixtures/openml/ (a made-up 40-row table, `genvdis-toy`, data id
424242: one nominal and two numeric attributes, a string column and a row id that are left
out, a nominal target) and counts the requests."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path
from urllib.error import HTTPError, URLError

import pytest
import yaml
from typer.testing import CliRunner

from genvdis import api, starter
from genvdis.cli import app
from genvdis.config.experiment import parse_config
from genvdis.config.sections import OpenMLDataset
from genvdis.data import fetch, openml
from genvdis.data.openml import load_openml
from genvdis.data.sources import OpenMLSource, source_of
from tests.clichecks import assert_user_error, raises_user_error

FIXTURES = Path(__file__).parent / "fixtures" / "openml"
DATA_ID, NAME = 424242, "genvdis-toy"
API = "https://www.openml.org/api/v1/json/data"
ROUTES = {
    f"{API}/{DATA_ID}": "description.json",
    f"{API}/features/{DATA_ID}": "features.json",
    f"{API}/qualities/{DATA_ID}": "qualities.json",
    f"{API}/list/data_name/{NAME}/limit/2/data_version/1": "list-by-name.json",
    "https://www.openml.org/data/v1/download/9900001/genvdis-toy.arff": "genvdis-toy.arff",
}


class _Response(io.BytesIO):
    """What urlopen gives: the body (gzipped, as OpenML serves it) and its headers."""

    def info(self) -> dict[str, str]:
        return {"Content-Encoding": "gzip"}


class FakeOpenML:
    """Stands in for openml.org: serves the fixtures by URL, answers 412 (OpenML's "not
    found") for any other API path, and records every request."""

    def __init__(self, files: dict[str, bytes] | None = None, online: bool = True) -> None:
        self.files = files or {url: (FIXTURES / name).read_bytes() for url, name in ROUTES.items()}
        self.online, self.requests = online, []

    def __call__(self, request, *args, **kwargs) -> _Response:
        url = request.full_url
        self.requests.append(url)
        if not self.online:
            raise URLError("[Errno -3] Temporary failure in name resolution")
        if url not in self.files:
            raise HTTPError(url, 412, "Precondition Failed", {}, io.BytesIO(b"{}"))
        return _Response(gzip.compress(self.files[url]))


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path) -> None:
    """Each test its own data folder: what one test fetched another must fetch again."""
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path / "data"))


@pytest.fixture
def fake_openml(monkeypatch) -> FakeOpenML:
    fake = FakeOpenML()
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    monkeypatch.setattr(openml, "DELAY", 1e-6)
    return fake


def spec(**fields) -> OpenMLDataset:
    return OpenMLDataset.model_validate({"openml": DATA_ID, **fields})


def test_load_takes_kinds_and_target_from_openml(fake_openml):
    """nominal -> discrete, numeric -> continuous; the string column and the row id are left
    out; the label is OpenML's default target; cells are text as the other sources give."""
    raw = load_openml(spec())
    assert raw.attributes == {"colour": "discrete", "width": "continuous", "height": "continuous"}
    assert raw.target == "class"
    assert list(raw.frame.columns) == ["colour", "width", "height", "class"]
    arff = (FIXTURES / "genvdis-toy.arff").read_text().split("@DATA\n")[1].splitlines()
    first = arff[0].split(",")  # 1,red,1.795,6.27,'n0',yes
    assert list(raw.frame.iloc[0]) == [first[1], first[2], first[3], first[5]]
    assert raw.frame["colour"].isna().sum() == 1  # '?' in row 8
    assert raw.frame["class"].value_counts().to_dict() == {"no": 24, "yes": 16}
    md5 = hashlib.md5((FIXTURES / "genvdis-toy.arff").read_bytes()).hexdigest()
    assert raw.checksums == {f"OpenML data_id {DATA_ID} version 1: genvdis-toy.arff": f"md5:{md5}"}
    assert raw.source == openml.provenance(spec()) == f"OpenML: data_id {DATA_ID}"


def test_a_name_and_version_resolve_to_the_same_table(fake_openml):
    by_name = load_openml(OpenMLDataset(openml=NAME, version=1))
    by_id = load_openml(spec())
    assert by_name.frame.equals(by_id.frame) and by_name.checksums == by_id.checksums
    assert by_name.source == f"OpenML: {NAME} version 1"


def test_scikit_learns_own_fixture_of_a_real_response(monkeypatch):
    """OpenML's real answers for anneal (data id 2, cut to 11 rows), as scikit-learn ships them
    for its own tests: every kind as its feature list says (38 attributes, the default target
    'class'), the md5 its description gives. Skipped where the wheel leaves its tests out."""
    import sklearn

    folder = Path(sklearn.__file__).parent / "datasets" / "tests" / "data" / "openml" / "id_2"
    if not (folder / "api-v1-jdf-2.json.gz").is_file():
        pytest.skip(f"scikit-learn's OpenML test files are not installed ({folder})")
    read = {name: gzip.decompress((folder / name).read_bytes()) for name in (
        "api-v1-jd-2.json.gz", "api-v1-jdf-2.json.gz", "api-v1-jdq-2.json.gz",
        "data-v1-dl-1666876.arff.gz",
    )}  # fmt: skip
    fake = FakeOpenML({
        f"{API}/2": read["api-v1-jd-2.json.gz"],
        f"{API}/features/2": read["api-v1-jdf-2.json.gz"],
        f"{API}/qualities/2": read["api-v1-jdq-2.json.gz"],
        "https://www.openml.org/data/v1/download/1666876/anneal.arff": read[
            "data-v1-dl-1666876.arff.gz"
        ],
    })  # fmt: skip
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    raw = load_openml(spec(openml=2))
    features = json.loads(read["api-v1-jdf-2.json.gz"])["data_features"]["feature"]
    expected = {f["name"]: openml.KINDS[f["data_type"]] for f in features if f["name"] != "class"}
    assert raw.attributes == expected and len(expected) == 38 and raw.target == "class"
    assert sorted(set(raw.attributes.values())) == ["continuous", "discrete"]
    assert len(raw.frame) == 11 and raw.frame["class"].notna().all()
    md5 = json.loads(read["api-v1-jd-2.json.gz"])["data_set_description"]["md5_checksum"]
    assert raw.checksums == {"OpenML data_id 2 version 1: anneal.arff": f"md5:{md5}"}


def test_a_second_load_reads_the_cache_and_sends_no_request(fake_openml):
    source = source_of(spec())
    assert isinstance(source, OpenMLSource) and not source.at_hand()
    first = source.load()
    assert len(fake_openml.requests) == 4  # description, features, qualities, the ARFF file
    assert source.at_hand()
    assert all(path.is_file() for path in source.cache_paths())
    assert all(path.is_relative_to(fetch.data_dir() / "openml") for path in source.cache_paths())
    fake_openml.online = False
    again = source.load()
    assert len(fake_openml.requests) == 4
    assert again.frame.equals(first.frame) and again.checksums == first.checksums


def test_a_cache_is_at_hand_only_with_the_data_file_its_description_names(fake_openml):
    """A dataset named by name: its lookup, description, features and qualities cached but
    no data file named (a description without its URL) is not a complete cache, nor is one
    whose data file is missing; `validate` would otherwise read it as at hand."""
    source = source_of(OpenMLDataset(openml=NAME, version=1))
    source.load()
    assert source.at_hand()
    *metadata, data = source.cache_paths()
    description = metadata[1]
    with gzip.open(description, "rt", encoding="utf-8") as stream:
        cached = json.load(stream)
    del cached["data_set_description"]["url"]
    with gzip.open(description, "wt", encoding="utf-8") as stream:
        json.dump(cached, stream)
    assert len(source.cache_paths()) == 4 and all(p.is_file() for p in source.cache_paths())
    assert not source.at_hand()
    data.unlink()
    assert not source.at_hand()


def test_a_target_named_in_the_spec_replaces_the_default(fake_openml):
    raw = load_openml(spec(target="colour"))
    assert raw.target == "colour" and "colour" not in raw.attributes
    with raises_user_error("dataset.target", "'height2'"):
        load_openml(spec(target="height2"))


def test_offline_without_a_cache_is_one_line_naming_the_dataset(monkeypatch):
    fake = FakeOpenML(online=False)
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    monkeypatch.setattr(openml, "DELAY", 1e-6)
    with raises_user_error(f"OpenML data id {DATA_ID}", "needs the network", "cache"):
        load_openml(spec())
    assert len(fake.requests) == 1 + openml.RETRIES  # the description, tried and retried


def test_a_server_error_is_said_as_such(monkeypatch):
    """openml.org reached but failing (HTTP 500 for the file) is not "offline"."""
    fake = FakeOpenML()
    url = next(u for u in ROUTES if u.endswith(".arff"))

    def failing(request, *args, **kwargs):
        if request.full_url == url:
            raise HTTPError(url, 500, "Internal Server Error", {}, io.BytesIO(b""))
        return fake(request)

    monkeypatch.setattr("sklearn.datasets._openml.urlopen", failing)
    monkeypatch.setattr(openml, "DELAY", 1e-6)
    with raises_user_error(f"OpenML data id {DATA_ID}", "HTTP 500", "genvdis-toy.arff"):
        load_openml(spec())


def test_unknown_id_and_name_are_refused(fake_openml):
    with raises_user_error("dataset.openml", "data id 7", "no dataset"):
        load_openml(spec(openml=7))
    with raises_user_error("dataset.openml", "'genvdis-toy' version 2"):
        load_openml(OpenMLDataset(openml=NAME, version=2))


def test_an_id_with_another_version_is_refused(fake_openml):
    """A data id is one version: a version that contradicts it is an error, not ignored."""
    assert load_openml(spec(version=1)).target == "class"
    with raises_user_error("dataset.version", f"data id {DATA_ID} is version 1", "not version 3"):
        load_openml(spec(version=3))


def test_a_changed_file_fails_its_md5(monkeypatch):
    fake = FakeOpenML()
    url = next(u for u in ROUTES if u.endswith(".arff"))
    fake.files[url] = fake.files[url].replace(b"1,red,1.795", b"1,red,9.795")
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    monkeypatch.setattr(openml, "DELAY", 1e-6)
    with raises_user_error(f"OpenML data id {DATA_ID}", "md5"):
        load_openml(spec())


def test_an_answer_laid_out_otherwise_is_one_line(monkeypatch):
    fake = FakeOpenML()
    url = f"{API}/{DATA_ID}"
    description = json.loads(fake.files[url])
    description["data_set_description"].pop("description")
    fake.files[url] = json.dumps(description).encode()
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    with raises_user_error(f"OpenML data id {DATA_ID}", "cannot read OpenML's answer"):
        load_openml(spec())


def test_no_default_target_asks_for_one(monkeypatch):
    fake = FakeOpenML()
    url = f"{API}/{DATA_ID}"
    description = json.loads(fake.files[url])
    description["data_set_description"].pop("default_target_attribute")
    fake.files[url] = json.dumps(description).encode()
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    with raises_user_error("dataset.target", "names none"):
        load_openml(spec())


@pytest.mark.parametrize(
    ("dataset", "names"),
    [
        ({"openml": "credit-g"}, ["dataset", "'credit-g'", "version"]),
        ({"openml": 0}, ["dataset.openml", "from 1"]),
        ({"openml": ""}, ["dataset.openml"]),
        ({"openml": 31, "version": 0}, ["dataset.version"]),
        ({"openml": 31, "sha": 1}, ["dataset.sha"]),
    ],
)
def test_spec_errors_name_the_field(dataset, names):
    raw = {"name": "x", "dataset": dataset, "target": {"positive": ["yes"]}, "sizes": [10]}
    with raises_user_error(*names):
        parse_config(raw, "c.yaml")


def test_the_spec_adds_no_unset_keys_to_the_resolved_config():
    """A config that leaves version and target out has no trace of them (fingerprint)."""
    config = {"name": "x", "dataset": {"openml": 31}, "target": {"positive": ["yes"]}}
    parsed = parse_config({**config, "sizes": [10]}, "c.yaml")
    assert parsed.model_dump(mode="json")["dataset"] == {"openml": 31}


CONFIG = f"""\
name: toy-openml
dataset: {{openml: {DATA_ID}}}
target: {{positive: ["yes"]}}
missing: drop
sizes: [6, 10]
splits: 4
"""


def test_a_full_run_offline_on_the_fixture(fake_openml, tmp_path):
    """`genvdis run` of an OpenML config: kinds as OpenML's, the id, version and md5 in
    config.yaml; a second run in a new folder sends no request."""
    config = tmp_path / "toy-openml.yaml"
    config.write_text(CONFIG)
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    resolved = yaml.safe_load((tmp_path / "r" / "toy-openml" / "config.yaml").read_text())
    md5 = hashlib.md5((FIXTURES / "genvdis-toy.arff").read_bytes()).hexdigest()
    assert resolved["data_source"] == f"OpenML: data_id {DATA_ID}"
    assert resolved["data_checksums"] == {
        f"OpenML data_id {DATA_ID} version 1: genvdis-toy.arff": f"md5:{md5}"
    }
    assert resolved["features"]["continuous"] == 2 and resolved["features"]["discrete"] == 1
    assert resolved["n_rows"] == 39  # the row with a missing colour dropped
    requests = len(fake_openml.requests)
    fake_openml.online = False
    again = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "r2")])
    assert again.exit_code == 0, again.output
    assert len(fake_openml.requests) == requests
    first = (tmp_path / "r" / "toy-openml" / "errors.csv").read_bytes()
    assert (tmp_path / "r2" / "toy-openml" / "errors.csv").read_bytes() == first


def test_a_run_offline_without_the_cache_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", FakeOpenML(online=False))
    monkeypatch.setattr(openml, "DELAY", 1e-6)
    config = tmp_path / "toy-openml.yaml"
    config.write_text(CONFIG)
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "r")])
    assert_user_error(result, f"OpenML data id {DATA_ID}", "needs the network")


def test_validate_offline_checks_the_spec_and_reads_nothing(monkeypatch, tmp_path):
    fake = FakeOpenML(online=False)
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", fake)
    config = tmp_path / "toy-openml.yaml"
    config.write_text(CONFIG)
    list(api.validate([config]))
    assert fake.requests == []
    assert not fetch.data_dir().exists()  # nothing fetched, nothing cached


# --- `genvdis suite`: one config per dataset of a suite file (genvdis/starter.py) ------------

SUITE = f"""\
name: toy-suite
datasets:
  - {{data_id: {DATA_ID}, task_id: 1, name: {NAME}, rows: 40, features: 3, minority: 16}}
"""
CC18 = Path(__file__).parents[2] / "configs" / "suites" / "openml-cc18-binary.yaml"


def test_suite_writes_a_config_per_dataset_by_init_rules(fake_openml, tmp_path):
    """From the data: OpenML's kinds, the smaller class positive, the row with a missing cell
    dropped, init's m grid; the config runs; a second call keeps it and sends no request."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    out = tmp_path / "configs"
    result = CliRunner().invoke(app, ["suite", str(suite), "--out", str(out)])
    assert result.exit_code == 0, result.output
    path = out / f"openml-{DATA_ID}-{NAME}.yaml"
    assert result.output.strip() == f"wrote {path}"
    config = yaml.safe_load(path.read_text())
    assert config["dataset"] == {"openml": DATA_ID}
    assert config["target"] == {"positive": ["yes"]}  # 16 of 40 rows: the smaller class
    assert config["missing"] == "drop" and config["attributes"] == "all"
    assert config["sizes"][-1] < 39 and config["splits"] == 1000
    words = " ".join(path.read_text().replace("#", " ").split())
    assert "1 nominal (discrete), 2 numeric (continuous)" in words
    requests = len(fake_openml.requests)
    fake_openml.online = False
    again = CliRunner().invoke(app, ["suite", str(suite), "--out", str(out)])
    assert again.output.strip() == f"kept {path}" and len(fake_openml.requests) == requests
    run = CliRunner().invoke(app, ["run", str(path), "--splits", "3", "--out", str(tmp_path / "r")])
    assert run.exit_code == 0, run.output
    resolved = yaml.safe_load((tmp_path / "r" / path.stem / "config.yaml").read_text())
    assert resolved["class_counts"] == {"negative": 23, "positive": 16}


def test_suite_offline_without_a_cache_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr("sklearn.datasets._openml.urlopen", FakeOpenML(online=False))
    monkeypatch.setattr(openml, "DELAY", 1e-6)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    result = CliRunner().invoke(app, ["suite", str(suite), "--out", str(tmp_path / "c")])
    assert_user_error(result, f"OpenML data id {DATA_ID}", "needs the network")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (SUITE.replace("rows: 40, ", ""), ["datasets.0.rows"]),
        (SUITE + SUITE.splitlines()[-1] + "\n", ["datasets", f"data id {DATA_ID}", "twice"]),
        ("name: x\ndatasets: []\n", ["datasets"]),
        ("name: [x\n", ["not YAML"]),
    ],
)
def test_suite_file_errors_name_the_field(tmp_path, text, names):
    suite = tmp_path / "suite.yaml"
    suite.write_text(text)
    result = CliRunner().invoke(app, ["suite", str(suite), "--cost"])
    assert_user_error(result, str(suite), *names)


def test_the_cc18_suite_lists_35_binary_datasets_and_its_cost_offline():
    """The shipped suite: 35 distinct data and task ids, a smaller class below half the
    rows; --cost reads nothing but the file, and is linear in the splits."""
    suite = starter.read_suite(CC18)
    assert len(suite.datasets) == 35 and suite.study == 99
    assert len({e.data_id for e in suite.datasets}) == len({e.task_id for e in suite.datasets})
    assert all(0 < e.minority <= e.rows / 2 for e in suite.datasets)
    few, many = starter.suite_cost(suite, 10), starter.suite_cost(suite, 20)
    for a, b in zip(few, many, strict=True):
        assert b.cpu_seconds == pytest.approx(2 * a.cpu_seconds) and a.sizes == b.sizes
    result = CliRunner().invoke(app, ["suite", str(CC18), "--cost", "--splits", "10"])
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) == 36 and "total at 10 splits" in result.output
