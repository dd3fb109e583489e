"""A dataset on OpenML, `dataset: {openml: <data id>}` or `{openml: <name>, version: <n>}`:
what `sources.OpenMLSource` loads, reads from the cache and records.

scikit-learn's `fetch_openml` does the fetching: it downloads the dataset's description,
feature list, qualities and ARFF file, caches each (gzipped) under the data folder
(`fetch.data_dir()/openml/openml.org/...`, so a second run sends no request), and checks the
ARFF file against the md5 OpenML's description gives. The attribute kinds come from OpenML's
feature list, not from inference: nominal is discrete, numeric continuous; string and date
columns are left out (free text and dates are neither). The label is OpenML's default target
attribute unless the spec names another. The data id, version and md5 are the run's
`data_checksums`, so another version, or a changed file, is another fingerprint.
"""

from __future__ import annotations

import gzip
import json
import re
import warnings
from http.client import HTTPException
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse

import pandas as pd

from genvdis.config.sections import OpenMLDataset
from genvdis.data import fetch
from genvdis.data.uci import RawData
from genvdis.errors import UserError

# OpenML's feature types to genvdis's kinds; the others (string, date) are left out
KINDS = {"nominal": "discrete", "numeric": "continuous"}
# scikit-learn's own ARFF reader (vendored liac-arff: no extra dependency): levels stay the
# text the file writes. Its pandas reader is faster, but fails on levels that are numbers
# (anneal's, scikit-learn 1.9 with pandas 3: tests/data/test_openml.py)
PARSER = "liac-arff"
# fetch_openml's retries of a failed request, and the seconds between them
RETRIES, DELAY = 3, 1.0
API = "api/v1/json/data"  # where fetch_openml caches OpenML's JSON answers, by URL path
# a loaded dataset's `data_checksums` key: what the data id resolved to, and the file read
CHECKSUM_KEY = "OpenML data_id {data_id} version {version}: {file}"


def provenance(spec: OpenMLDataset) -> str:
    """config.yaml's `data_source`: the dataset as the config names it (the version a data
    id resolves to, and the file's md5, are its `data_checksums`)."""
    if isinstance(spec.openml, int):
        return f"OpenML: data_id {spec.openml}"
    return f"OpenML: {spec.openml} version {spec.version}"


def _label(spec: OpenMLDataset) -> str:
    """The dataset in an error message."""
    if isinstance(spec.openml, int):
        return f"OpenML data id {spec.openml}"
    return f"OpenML dataset '{spec.openml}' version {spec.version}"


def cache_root() -> Path:
    """Where fetch_openml keeps OpenML's files (it adds openml/ to the `data_home` given)."""
    return fetch.data_dir() / "openml" / "openml.org"


def _cached_json(path: Path) -> dict[str, Any] | None:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def cached_files(spec: OpenMLDataset) -> list[Path]:
    """The cache files a load reads, as far as the cache tells them: the name's lookup
    (a name), then the description, features, qualities and, once the description is
    cached, the ARFF file it points to."""
    metadata, data = _cache_layout(spec)
    return metadata + ([data] if data is not None else [])


def fully_cached(spec: OpenMLDataset) -> bool:
    """Whether every file a load reads is in the cache: the metadata, and the data file the
    cached description names (a description that names none is not a complete cache)."""
    metadata, data = _cache_layout(spec)
    return data is not None and all(path.is_file() for path in [*metadata, data])


def _cache_layout(spec: OpenMLDataset) -> tuple[list[Path], Path | None]:
    """The metadata files a load reads (a name's lookup, the description, features and
    qualities) and the data file, where the cache already says which it is (else None)."""
    root, paths = cache_root(), []
    data_id = spec.openml
    if isinstance(data_id, str):
        name = f"{data_id.lower()}/limit/2/data_version/{spec.version}.gz"
        lookup = root / API / "list/data_name" / name
        paths.append(lookup)
        found = _cached_json(lookup)
        try:
            data_id = int(found["data"]["dataset"][0]["did"]) if found else None
        except (KeyError, IndexError, TypeError, ValueError):
            data_id = None
        if data_id is None:
            return paths, None
    description = root / API / f"{data_id}.gz"
    paths += [description, root / API / f"features/{data_id}.gz"]
    paths.append(root / API / f"qualities/{data_id}.gz")
    described = _cached_json(description)
    url = (described or {}).get("data_set_description", {}).get("url")
    return paths, (root / (urlparse(url).path.lstrip("/") + ".gz") if url else None)


def _fetch(spec: OpenMLDataset) -> Any:
    """fetch_openml's Bunch (a frame of every usable column, `details` its description),
    each failure a one-line `UserError` naming the dataset."""
    from sklearn.datasets import fetch_openml
    from sklearn.datasets._openml import OpenMLError

    by = {"data_id": spec.openml} if isinstance(spec.openml, int) else {
        "name": spec.openml, "version": spec.version,
    }  # fmt: skip
    label = _label(spec)
    try:
        with warnings.catch_warnings():  # inactive versions, retries: said by the errors below
            warnings.simplefilter("ignore")
            return fetch_openml(
                **by, data_home=str(fetch.data_dir()), target_column=None, as_frame=True,
                parser=PARSER, n_retries=RETRIES, delay=DELAY,
            )  # fmt: skip
    except OpenMLError:
        what = "no dataset with this data id" if "data_id" in by else "no such name and version"
        raise UserError(f"dataset.openml: {label}: OpenML has {what}") from None
    except HTTPError as error:  # openml.org answered, but not with the file
        raise UserError(
            f"dataset: {label}: openml.org answered HTTP {error.code} ({error.reason}) for "
            f"{error.url}; try again later"
        ) from None
    except (URLError, TimeoutError, ConnectionError, HTTPException) as error:
        reason = getattr(error, "reason", None) or type(error).__name__
        raise UserError(
            f"dataset: {label} needs the network: it is not in the cache {cache_root()} and "
            f"openml.org could not be reached ({reason}); run it once online (it is cached "
            f"then), or set {fetch.DATA_ENV} to a folder that holds its cache"
        ) from None
    except OSError as error:  # the cache folder cannot be written
        raise UserError(f"dataset: {label}: {error.strerror or error} ({error.filename})") from None
    except (KeyError, TypeError) as error:  # an answer not laid out as scikit-learn reads it
        raise UserError(
            f"dataset: {label}: scikit-learn cannot read OpenML's answer "
            f"({type(error).__name__}: {error}); try again, or report it with the data id"
        ) from None
    except ValueError as error:
        first = str(error).strip().splitlines()[0]
        if "md5" in first.lower():
            first = "its file does not match the md5 OpenML gives for it, twice downloaded"
        raise UserError(f"dataset: {label}: {first}") from None


def load_openml(spec: OpenMLDataset) -> RawData:
    """The dataset as genvdis reads a table: every usable column as text (NaN missing),
    kinds from OpenML's feature list, the label OpenML's default target unless `spec.target`
    names one. A data id given with a version must be that version."""
    from sklearn.datasets._openml import _get_data_features

    bunch = _fetch(spec)
    details, label = bunch.details, _label(spec)
    data_id, version = int(details["id"]), int(details["version"])
    if isinstance(spec.openml, int) and spec.version not in (None, version):
        raise UserError(
            f"dataset.version: OpenML data id {data_id} is version {version} of "
            f"'{details['name']}', not version {spec.version} (a data id names one version: "
            f"leave version out, or give the data id of version {spec.version})"
        )
    target = spec.target or details.get("default_target_attribute")
    if not target or "," in target:
        found = f"names several ({target})" if target else "names none"
        raise UserError(
            f"dataset.target: {label}: OpenML's default target {found}; name the label "
            "column in dataset.target"
        )
    frame = bunch.frame
    if target not in frame.columns:
        raise UserError(
            f"dataset.target: {label} has no column '{target}' (columns: "
            f"{', '.join(map(str, frame.columns[:12]))}{'...' if frame.shape[1] > 12 else ''})"
        )
    features = _get_data_features(data_id, str(fetch.data_dir() / "openml"))
    types = {feature["name"]: feature["data_type"] for feature in features}
    attributes = {
        name: KINDS[types[name]]
        for name in frame.columns
        if name != target and types.get(name) in KINDS
    }
    if not attributes:
        raise UserError(f"{label}: no nominal or numeric attribute besides the target '{target}'")
    columns = [*attributes, target]
    file, md5 = urlparse(details["url"]).path.rsplit("/", 1)[-1], details["md5_checksum"]
    return RawData(
        frame=pd.DataFrame({name: _as_text(frame[name]) for name in columns}),
        attributes=attributes,
        target=target,
        checksums={CHECKSUM_KEY.format(data_id=data_id, version=version, file=file): f"md5:{md5}"},
        source=provenance(spec),
    )


def resolved(raw: RawData) -> tuple[int, int]:
    """(data id, version) of a table `load_openml` read, from its `data_checksums` key."""
    found = re.fullmatch(r"OpenML data_id (\d+) version (\d+): .*", next(iter(raw.checksums)))
    if found is None:
        raise ValueError(f"not a table read from OpenML: {raw.source}")
    return int(found[1]), int(found[2])


def _as_text(column: pd.Series) -> pd.Series:
    """A column as the text cells the other sources give (missing stays NaN): a number as
    Python writes it, which reads back to the same float."""
    values = column.astype(object)
    return values.where(values.isna(), values.map(str)).reset_index(drop=True)


__all__ = ["cache_root", "cached_files", "fully_cached", "load_openml", "provenance", "resolved"]
