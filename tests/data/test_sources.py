"""genvdis.data.sources: each `Source` loads its table with the provenance a run records,
checks offline what needs no download, and names the files it reads or caches; `source_of`
maps a config's `dataset` to its source by type, so a new source runs end to end."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from genvdis import api
from genvdis.cli import app
from genvdis.config.experiment import parse_config
from genvdis.config.sections import FileDataset, SklearnSource, SyntheticSource
from genvdis.data import fetch, sources, synthetic, uci
from genvdis.data.preprocessing import prepare
from genvdis.data.sources import (
    SOURCES,
    LocalFileSource,
    SklearnTableSource,
    Source,
    SyntheticTableSource,
    UciSource,
    UrlSource,
    load_data,
    source_of,
)
from genvdis.data.uci import RawData
from tests.clichecks import raises_user_error

ROWS = (f"{i},{'xy'[i % 2]},{'no' if i % 3 else 'yes'}\n" for i in range(30))
TABLE = "a,b,label\n" + "".join(ROWS)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(TABLE)
    return path


def test_source_of_maps_each_spec_type_to_its_source(tmp_path):
    """The table keyed by spec type: a name, a path, a URL, a bundled and a drawn table."""
    drawn = SyntheticSource.model_validate({"synthetic": {"kind": "gaussian", "n_features": 2}})
    cases = [
        ("lenses", UciSource),
        (FileDataset(path="t.csv", target="label"), LocalFileSource),
        (FileDataset(url="http://x/t.csv", sha256="0" * 64, target="label"), UrlSource),
        (SklearnSource(sklearn="load_iris"), SklearnTableSource),
        (drawn, SyntheticTableSource),
    ]
    for spec, kind in cases:
        source = source_of(spec, tmp_path)
        assert type(source) is kind and source.spec is spec and source.base_dir == tmp_path
    with raises_user_error("dataset"):
        source_of(3.5)


def test_a_relative_path_is_read_from_the_config_folder(tmp_path):
    """Only a relative `dataset.path` ties a config to its file's folder (`read_from`)."""
    from genvdis.config.experiment import read_from

    assert FileDataset(path="t.csv", target="y").relative_path == "t.csv"
    assert FileDataset(path=str(tmp_path / "t.csv"), target="y").relative_path is None
    assert FileDataset(url="http://x/t.csv", sha256="0" * 64, target="y").relative_path is None
    base = {"name": "x", "target": {"positive": ["1"]}, "sizes": [10]}
    own = parse_config({**base, "dataset": {"path": "t.csv", "target": "y"}})
    assert read_from(own, tmp_path / "c.yaml").data_dir == tmp_path
    registered = parse_config({**base, "dataset": "lenses"})
    assert read_from(registered, tmp_path / "c.yaml").data_dir == Path(".")


def test_uci_source(mirror_env):
    """A registered set: loads from the mirror with the line config.yaml records, checks its
    name and attribute names offline, caches its files under the data folder."""
    source = source_of("lenses")
    raw = source.load()
    assert raw.source == source.provenance() == "UCI: lenses/lenses.data"
    assert raw.checksums == {f.path: f.sha256 for f in uci.get_info("lenses").files}
    assert source.cache_paths() == [fetch.data_dir() / "lenses/lenses.data"]
    assert source.at_hand() and source.drawn_shape() is None and source.inputs() == {}
    source.check_offline("all")
    with raises_user_error("nonsense"):
        source.check_offline(["nonsense"])
    with raises_user_error("'nowhere'"):
        source_of("nowhere").check_offline("all")


def test_uci_source_not_at_hand_without_its_files(tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(fetch.MIRROR_ENV, "https://example.invalid/uci/")
    assert not source_of("lenses").at_hand()


def test_local_file_source(table):
    """A local file: read from the config's folder, recorded by its path and its bytes'
    sha256; offline, it must be there and a regular file; a run may not write over it."""
    spec = FileDataset(path="t.csv", target="label")
    source = source_of(spec, table.parent)
    raw = source.load()
    assert raw.source == source.provenance() == "t.csv"
    assert raw.checksums == {"t.csv": hashlib.sha256(table.read_bytes()).hexdigest()}
    assert raw.attributes == {"a": "continuous", "b": "discrete"}
    assert source.inputs() == {"its dataset.path": table}
    assert source.at_hand() and source.cache_paths() == []
    source.check_offline("all")
    with raises_user_error("dataset.path", "t.csv"):
        source_of(spec, table.parent / "elsewhere").check_offline("all")
    os.mkfifo(table.parent / "pipe.csv")
    pipe = source_of(FileDataset(path="pipe.csv", target="label"), table.parent)
    with raises_user_error("dataset.path", "pipe.csv", "not a regular file"):
        pipe.check_offline("all")


def test_url_source(serve, table, tmp_path, monkeypatch):
    """A URL pinned by sha256: fetched into its cache path, recorded by its URL and pin;
    nothing to check offline (no download in `validate`), never at hand."""
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path / "cache"))
    sha = hashlib.sha256(table.read_bytes()).hexdigest()
    url = serve(table.parent) + "t.csv"
    source = source_of(FileDataset(url=url, sha256=sha, target="label"))
    assert source.cache_paths() == [tmp_path / "cache" / "user" / sha[:16] / "t.csv"]
    source.check_offline("all")  # no network
    assert not source.cache_paths()[0].exists() and not source.at_hand()
    raw = source.load()
    assert raw.source == source.provenance() == url
    assert raw.checksums == {"t.csv": sha}
    assert source.cache_paths()[0].read_bytes() == table.read_bytes()
    assert source.inputs() == {}


def test_sklearn_source():
    """A bundled table: recorded by scikit-learn's version and loader; a loader that
    downloads is refused when the config is read, the error naming `dataset`."""
    import sklearn

    source = source_of(SklearnSource(sklearn="load_iris"))
    raw = source.load()
    assert raw.source == source.provenance()
    version = sklearn.__version__
    assert source.provenance() == f"scikit-learn {version}: sklearn.datasets.load_iris()"
    assert list(raw.checksums) == ["sklearn.datasets.load_iris"] and raw.target == "target_name"
    assert not source.at_hand() and source.cache_paths() == [] and source.inputs() == {}
    config = {"name": "x", "target": {"positive": ["1"]}, "sizes": [10]}
    with raises_user_error("c: ", "dataset", "fetch_covtype"):
        parse_config({**config, "dataset": {"sklearn": "fetch_covtype"}}, "c")


def test_synthetic_source():
    """A drawn table: recorded by every setting it is drawn from; its shape goes to the
    planner's memory check before it is drawn."""
    spec = SyntheticSource.model_validate(
        {"synthetic": {"kind": "binary", "n_features": 3, "n_rows": 50}}
    )
    source = source_of(spec)
    raw = source.load()
    assert raw.source == source.provenance() == synthetic.provenance(spec.synthetic)
    assert raw.checksums == {"spec": synthetic.spec_hash(spec.synthetic)}
    assert source.drawn_shape() == (50, 3, "binary")
    assert not source.at_hand() and source.cache_paths() == []


class ToySource(Source):
    """A source added in a test: a fixed table, not read from anywhere."""

    def load(self) -> RawData:
        rows = 40
        frame = pd.DataFrame(
            {
                "u": [str(i / rows) for i in range(rows)],
                "v": ["p" if i % 4 else "q" for i in range(rows)],
                "y": ["1" if i % 2 else "0" for i in range(rows)],
            }
        )
        return RawData(
            frame=frame,
            attributes={"u": "continuous", "v": "discrete"},
            target="y",
            checksums={"toy": "0" * 64},
            source=self.provenance(),
        )

    def provenance(self) -> str:
        return f"toy: {self.spec.sklearn}"


def test_a_new_source_runs_end_to_end(tmp_path, monkeypatch):
    """A `Source` registered in the table runs through `api.run` as the built-in ones do:
    its table is fitted and its provenance recorded in config.yaml."""
    monkeypatch.setitem(SOURCES, SklearnSource, ToySource)
    config = parse_config(
        {
            "name": "toy",
            "dataset": {"sklearn": "load_toy"},
            "target": {"positive": ["1"]},
            "sizes": [6, 10],
            "splits": 3,
        }
    )
    results = api.run(config, out=tmp_path)
    assert results.config["data_source"] == "toy: load_toy"
    assert results.config["data_checksums"] == {"toy": "0" * 64}
    assert results.config["n_rows"] == 40
    assert set(results.models) == {"naive_bayes", "logistic_regression"}
    assert sources.source_of(config.dataset).provenance() == "toy: load_toy"


# --- a file dataset's path, folder and compression: one-line errors naming the field or file ---


def config(target: str = '{positive: ["yes"]}', *extra: str) -> str:
    return "\n".join(
        ["name: t", "dataset: {path: data.csv, target: label}", f"target: {target}",
         "sizes: [2]", *extra]
    ) + "\n"  # fmt: skip


THREE = "a,b,label\n1,x,yes\n2,y,no\n3,x,yes\n4,y,no\n5,x,maybe\n6,y,maybe\n"


@pytest.mark.parametrize(
    ("dataset", "words"),
    [
        # each was "dataset.synthetic: Field required (and 7 more problems)"
        ("{url: 'https://host/a.csv', target: label}", "dataset: a 'url' needs its 'sha256'"),
        ("{path: a.csv, url: 'https://host/a.csv', target: label}", "dataset: give exactly one"),
        ("{path: , target: label}", "dataset: give exactly one of 'path' or 'url'"),
        ("{path: a.csv, target: label, header: 'no'}", "dataset.header: Input should be a valid"),
        ("{file: a.csv, target: label}", "dataset.file: unknown key"),
    ],
)
def test_a_file_dataset_error_names_its_field(tmp_path, dataset, words):
    (tmp_path / "c.yaml").write_text(config().replace("{path: data.csv, target: label}", dataset))
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2
    assert words in result.output and "synthetic" not in result.output, result.output


def _zip(path: Path, members: int) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for i in range(members):
            archive.writestr(f"part{i}.csv", THREE)


def _gzip_cut() -> bytes:
    """A gzip file cut in the middle."""
    import gzip

    rows = "".join(f"{i},{i % 3},no\n" for i in range(999))
    packed = gzip.compress(("a,b,label\n" + rows).encode())
    return packed[: len(packed) // 2]


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("two.zip", lambda path: _zip(path, 2)),
        ("none.zip", lambda path: _zip(path, 0)),
        ("plain.csv.gz", lambda path: path.write_text(THREE)),
        ("plain.csv.bz2", lambda path: path.write_text(THREE)),
        ("plain.csv.xz", lambda path: path.write_text(THREE)),
        ("plain.csv.tar", lambda path: path.write_text(THREE)),
        (
            "cut.csv.gz",
            lambda path: path.write_bytes(_gzip_cut()),
        ),
    ],
)
def test_a_damaged_compressed_file_is_a_user_error(tmp_path, name, write):
    """Each was 'internal error: ...' with exit 1 (BadGzipFile, LZMAError, tarfile's
    ReadError, EOFError, pandas' ValueError for a zip of two files)."""
    write(tmp_path / name)
    text = config().replace("data.csv", name)
    (tmp_path / "c.yaml").write_text(text)
    result = CliRunner().invoke(app, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: ") and f"{name}: cannot be read as a table" in line, line
    assert "compressed" in line or "archive" in line, line


def test_a_folder_is_not_called_missing(tmp_path):
    (tmp_path / "data.csv").mkdir()
    parsed = parse_config(yaml.safe_load(config()), "config.yaml")
    with raises_user_error("dataset.path", "data.csv", "folder"):
        prepare(load_data(parsed, tmp_path), parsed)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_as_the_data_path_is_the_same_error_to_validate_and_run(tmp_path):
    """A FIFO: `run` and `validate` both say, in the same words, that it is not a regular
    file (not that it is missing), and neither opens it (which would wait for a writer)."""
    os.mkfifo(tmp_path / "data.csv")
    (tmp_path / "c.yaml").write_text(config())
    lines = []
    for args in (["validate", "c.yaml"], ["run", "c.yaml", "--out", "out", "-q"]):
        result = CliRunner().invoke(app, [args[0], str(tmp_path / args[1]), *args[2:]])
        assert result.exit_code == 2, result.output
        lines.append(result.output.strip().splitlines()[-1].split("dataset.path: ", 1)[-1])
    assert lines[0] == lines[1], lines
    assert "data.csv" in lines[0] and "not a regular file" in lines[0], lines[0]


def test_a_data_path_that_cannot_be_looked_at_is_a_user_error(tmp_path, monkeypatch):
    """A folder on the way that cannot be searched (here faked: tests may run as root)."""
    from genvdis.config.sections import FileDataset
    from genvdis.data.sources import table_path

    def denied(self, **_):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "stat", denied)
    with raises_user_error("dataset.path", "locked/data.csv", "Permission denied"):
        table_path(FileDataset(path="locked/data.csv", target="y"), tmp_path)
