"""The dataset registry and the parsers that read the UCI originals as they are.

Each registered dataset names its archive files (path, sha256, size), a parser that turns them
into one table, the kind of every attribute and the label column. Adding a dataset is data
entry: a `DatasetInfo` and, if its format is new, a ten-line parser. Users' own files (a local
CSV/TSV, or a URL pinned by sha256) go through `load_file_dataset`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pooch

from genvdis.config import FileDataset
from genvdis.errors import UserError
from genvdis.fetch import RemoteFile, fetch_file, fetch_url

MISSING = ["?"]
UCI_LICENCE = "CC BY 4.0"
UCI_CITATION = (
    "Dua, D. and Graff, C. (2019). UCI Machine Learning Repository. "
    "Irvine, CA: University of California, School of Information and Computer Science."
)


@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset: where its bytes come from and how to read them."""

    name: str
    description: str
    files: tuple[RemoteFile, ...]
    parser: Callable[[list[Path]], pd.DataFrame]
    attributes: dict[str, str]
    target: str
    docs: tuple[RemoteFile, ...] = ()
    licence: str = UCI_LICENCE
    citation: str = UCI_CITATION


@dataclass
class RawData:
    """A dataset as read: one table, each attribute's kind, the label column, provenance."""

    frame: pd.DataFrame
    attributes: dict[str, str]
    target: str
    checksums: dict[str, str] = field(default_factory=dict)
    source: str = ""


# --- parsers: each reads the archive files exactly as the archive serves them ---------------


def _read_csv(path: Path, names: list[str], **options: object) -> pd.DataFrame:
    frame = pd.read_csv(
        path,
        header=None,
        names=names,
        na_values=MISSING,
        keep_default_na=False,
        skipinitialspace=True,
        dtype=str,
        **options,
    )
    return frame.apply(lambda column: column.str.strip())


def _csv_parser(names: list[str], **options: object) -> Callable[[list[Path]], pd.DataFrame]:
    """A parser for datasets whose files are plain CSV, read and stacked in order."""

    def parse(paths: list[Path]) -> pd.DataFrame:
        return pd.concat([_read_csv(p, names, **options) for p in paths], ignore_index=True)

    return parse


def _parse_adult(paths: list[Path]) -> pd.DataFrame:
    """adult.data + adult.test; the test file opens with '|1x3 Cross validator' and its
    labels end with '.' (">50K.")."""
    frames = [_read_csv(p, ADULT_COLUMNS, comment="|") for p in paths]
    frame = pd.concat(frames, ignore_index=True).dropna(how="all")
    frame["income"] = frame["income"].str.rstrip(".")
    return frame.reset_index(drop=True)


def _parse_whitespace(names: list[str]) -> Callable[[list[Path]], pd.DataFrame]:
    def parse(paths: list[Path]) -> pd.DataFrame:
        frames = [pd.read_csv(p, sep=r"\s+", header=None, names=names, dtype=str) for p in paths]
        return pd.concat(frames, ignore_index=True)

    return parse


def _parse_promoters(paths: list[Path]) -> pd.DataFrame:
    """'+,S10,\\t\\tsequence': the 57-base sequence becomes 57 categorical positions."""
    rows = []
    for line in paths[0].read_text().splitlines():
        if not line.strip():
            continue
        label, _id, sequence = (part.strip() for part in line.split(",", 2))
        rows.append([label, *sequence.lower()])
    names = ["class", *PROMOTER_POSITIONS]
    return pd.DataFrame(rows, columns=names)


def _parse_sick(paths: list[Path]) -> pd.DataFrame:
    """sick.data + sick.test; labels carry the record id: 'negative.|3733'."""
    frame = pd.concat([_read_csv(p, SICK_COLUMNS) for p in paths], ignore_index=True)
    frame["class"] = frame["class"].str.split("|").str[0].str.rstrip(".")
    return frame


def _parse_lenses(paths: list[Path]) -> pd.DataFrame:
    frame = _parse_whitespace(["id", *LENSES_ATTRIBUTES, "class"])(paths)
    return frame.drop(columns="id")


# --- the registry ----------------------------------------------------------------------------

ADULT_CONTINUOUS = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss"]
ADULT_CONTINUOUS += ["hours-per-week"]
ADULT_DISCRETE = ["workclass", "education", "marital-status", "occupation", "relationship"]
ADULT_DISCRETE += ["race", "sex", "native-country"]
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]  # fmt: skip
PIMA_ATTRIBUTES = ["pregnancies", "glucose", "blood-pressure", "skin-thickness", "insulin"]
PIMA_ATTRIBUTES += ["bmi", "pedigree", "age"]
HOUSING_ATTRIBUTES = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX"]
HOUSING_ATTRIBUTES += ["PTRATIO", "B", "LSTAT"]
OPTDIGITS_ATTRIBUTES = [f"pixel{i:02d}" for i in range(64)]
IONOSPHERE_ATTRIBUTES = [f"a{i:02d}" for i in range(1, 35)]
LIVER_ATTRIBUTES = ["mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks"]
SONAR_ATTRIBUTES = [f"band{i:02d}" for i in range(1, 61)]
PROMOTER_POSITIONS = [f"p{i:+d}" for i in range(-50, 7) if i != 0] + ["p+7"]
LYMPH_ATTRIBUTES = [
    "lymphatics", "block-of-affere", "bl-of-lymph-c", "bl-of-lymph-s", "by-pass",
    "extravasates", "regeneration-of", "early-uptake-in", "lym-nodes-dimin", "lym-nodes-enlar",
    "changes-in-lym", "defect-in-node", "changes-in-node", "changes-in-stru", "special-forms",
    "dislocation-of", "exclusion-of-no", "no-of-nodes-in",
]  # fmt: skip
BREAST_ATTRIBUTES = ["age", "menopause", "tumor-size", "inv-nodes", "node-caps", "deg-malig"]
BREAST_ATTRIBUTES += ["breast", "breast-quad", "irradiat"]
LENSES_ATTRIBUTES = ["age", "spectacle-prescription", "astigmatic", "tear-production-rate"]
SICK_CONTINUOUS = ["age", "TSH", "T3", "TT4", "T4U", "FTI", "TBG"]
SICK_COLUMNS = [
    "age", "sex", "on-thyroxine", "query-on-thyroxine", "on-antithyroid-medication", "sick",
    "pregnant", "thyroid-surgery", "I131-treatment", "query-hypothyroid", "query-hyperthyroid",
    "lithium", "goitre", "tumor", "hypopituitary", "psych", "TSH-measured", "TSH",
    "T3-measured", "T3", "TT4-measured", "TT4", "T4U-measured", "T4U", "FTI-measured", "FTI",
    "TBG-measured", "TBG", "referral-source", "class",
]  # fmt: skip
VOTES = [
    "handicapped-infants", "water-project-cost-sharing", "adoption-of-the-budget-resolution",
    "physician-fee-freeze", "el-salvador-aid", "religious-groups-in-schools",
    "anti-satellite-test-ban", "aid-to-nicaraguan-contras", "mx-missile", "immigration",
    "synfuels-corporation-cutback", "education-spending", "superfund-right-to-sue", "crime",
    "duty-free-exports", "export-administration-act-south-africa",
]  # fmt: skip

# pima and housing are no longer served by the UCI site. These public copies, pinned to a
# commit, hold the same bytes (the MANIFEST.tsv of the UCI mirror lists the agreeing copies);
# the sha256 check applies to them as to the archive.
PIMA_COPY = (
    "https://raw.githubusercontent.com/majestyhao/ecs256_hw4/"
    "907f0982cb5a97ddf840a6d739e4d86393187ada/pima-indians-diabetes.data"
)
HOUSING_COPY = (
    "https://raw.githubusercontent.com/Xinsen-Zhang/machine-learning-in-Java/"
    "95dc92e44242d32d75cc1c89f16e6e3255b28c91/data/housing.data"
)

_FILES = {
    f.path: f
    for f in [
        RemoteFile(
            "pima-indians-diabetes/pima-indians-diabetes.data",
            "06f5b7c2cd7bca686fda4f92eab5f61e7ff6426a9acefa2e3dda04fc54293cf5",
            23279,
            (PIMA_COPY,),
        ),
        RemoteFile(
            "pima-indians-diabetes/pima-indians-diabetes.names",
            "60d1939616d51c185add571f935309973eed52eb33a31764aaeeef18745374c5",
            3066,
        ),
        RemoteFile(
            "adult/adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            3974305,
        ),
        RemoteFile(
            "adult/adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            2003153,
        ),
        RemoteFile(
            "adult/adult.names",
            "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
            5229,
        ),
        RemoteFile(
            "housing/housing.data",
            "baadf72995725d76efe787b664e1f083388c79ba21ef9a7990d87f774184735a",
            49082,
            (HOUSING_COPY,),
        ),
        RemoteFile(
            "housing/housing.names",
            "e34759df81bce6c916aa2766b2b2d44a88c47d81b322517377714ee5cd64adcf",
            2080,
        ),
        RemoteFile(
            "optdigits/optdigits.tra",
            "e1b683cc211604fe8fd8c4417e6a69f31380e0c61d4af22e93cc21e9257ffedd",
            563639,
        ),
        RemoteFile(
            "optdigits/optdigits.tes",
            "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8",
            264712,
        ),
        RemoteFile(
            "optdigits/optdigits.names",
            "3e82f7202d72a2b7dbdbc324c8c90fe8853164f5d6ab978a071357ad3de89f02",
            2439,
        ),
        RemoteFile(
            "ionosphere/ionosphere.data",
            "46d52186b84e20be52918adb93e8fb9926b34795ff7504c24350ae0616a04bbd",
            76467,
        ),
        RemoteFile(
            "ionosphere/ionosphere.names",
            "a368e4fd9b910a3ac97fa306add17446c13105367e17f5b691455db2ea8411cf",
            3116,
        ),
        RemoteFile(
            "liver-disorders/bupa.data",
            "a166a3e7a6f4dc41aaaedc59a107e57d8adcaeb8821f0873d756982f1ea74c92",
            7297,
        ),
        RemoteFile(
            "liver-disorders/bupa.names",
            "b8c348733ec58bd1cb489a5307409f60226b9afa30fd99b24fb593e9abc08dfe",
            1272,
        ),
        RemoteFile(
            "undocumented/connectionist-bench/sonar/sonar.all-data",
            "e90434cdbf00fcf93ffa911fe447ae25606979658e60f1d32e155c3b5240234d",
            87776,
        ),
        RemoteFile(
            "undocumented/connectionist-bench/sonar/sonar.names",
            "f3d650ae9772b1a5021d977fe9f8194259f3dddec1922128c8104cf1c4e7250f",
            5872,
        ),
        RemoteFile(
            "molecular-biology/promoter-gene-sequences/promoters.data",
            "edd5f6f266ee04a78d4a8d88594e335fb8b5e8f204e63244eec3c2a9e5befd9d",
            7130,
        ),
        RemoteFile(
            "molecular-biology/promoter-gene-sequences/promoters.names",
            "595853987dfc477f22474136b0f33de888b075ec060b22f167fc13016cbe211b",
            3527,
        ),
        RemoteFile(
            "lymphography/lymphography.data",
            "e17d22d071341af08a505a10eb558afc835e302b02c8b381c1fa3dd305731935",
            5624,
        ),
        RemoteFile(
            "lymphography/lymphography.names",
            "65befbda99542348bb42f698fcb7bd4c24c8cd499bb542ce3ffa8db0f5691ac4",
            3236,
        ),
        RemoteFile(
            "breast-cancer/breast-cancer.data",
            "ca7d3fa97b62ff967b6894ffbb3acaaf4a51062e0149e5950b3ad6f685970b65",
            18654,
        ),
        RemoteFile(
            "breast-cancer/breast-cancer.names",
            "b6e210111f391d6f90380c0657e443f105c3b350e46833e091af4e96f7d05f33",
            3172,
        ),
        RemoteFile(
            "lenses/lenses.data",
            "711f22d5a4bed062bb715d39d23d54d2667206fbd97c94c7fd013ede47fb96c2",
            408,
        ),
        RemoteFile(
            "lenses/lenses.names",
            "b205b3d8c58f590efc344ad706e4c05fa9def8eafa1031f80914ba57e8421481",
            1644,
        ),
        RemoteFile(
            "thyroid-disease/sick.data",
            "81d4e8ae85233d453afc3ac721cfc5af8d83c0e8cd39d70aa9923089022f2c02",
            239515,
        ),
        RemoteFile(
            "thyroid-disease/sick.test",
            "e618b0a41f6df17ff297c8fbf7d15e8d97b37397d26e784e708ebb2297613018",
            83280,
        ),
        RemoteFile(
            "thyroid-disease/sick.names",
            "00ca5bfcdba355c910ab311de4b2dd3f4e344628435922aba1dec8427bfcf7ea",
            818,
        ),
        RemoteFile(
            "voting-records/house-votes-84.data",
            "c87c14110a5ba91d4a1e313ec7392824458152bf071fa5f5452340488337936e",
            18171,
        ),
        RemoteFile(
            "voting-records/house-votes-84.names",
            "5fab2dce4c8e311c2001c4eba22f8956273335698f2aab7714f85f694aad3449",
            6868,
        ),
    ]
}


def _files(*paths: str) -> tuple[RemoteFile, ...]:
    return tuple(_FILES[p] for p in paths)


def _kinds(continuous: list[str] = (), discrete: list[str] = ()) -> dict[str, str]:
    return {**dict.fromkeys(continuous, "continuous"), **dict.fromkeys(discrete, "discrete")}


REGISTRY: dict[str, DatasetInfo] = {
    info.name: info
    for info in [
        DatasetInfo(
            "pima", "Pima Indians diabetes (onset within 5 years)",
            _files("pima-indians-diabetes/pima-indians-diabetes.data"),
            _csv_parser([*PIMA_ATTRIBUTES, "class"]), _kinds(PIMA_ATTRIBUTES), "class",
            _files("pima-indians-diabetes/pima-indians-diabetes.names"),
        ),
        DatasetInfo(
            "adult", "Adult census income (> $50K), adult.data + adult.test",
            _files("adult/adult.data", "adult/adult.test"), _parse_adult,
            _kinds(ADULT_CONTINUOUS, ADULT_DISCRETE), "income", _files("adult/adult.names"),
        ),
        DatasetInfo(
            "housing", "Boston housing (median value MEDV)",
            _files("housing/housing.data"),
            _parse_whitespace([*HOUSING_ATTRIBUTES, "MEDV"]), _kinds(HOUSING_ATTRIBUTES), "MEDV",
            _files("housing/housing.names"),
        ),
        DatasetInfo(
            "optdigits", "Optical recognition of handwritten digits, 8x8 counts, .tra + .tes",
            _files("optdigits/optdigits.tra", "optdigits/optdigits.tes"),
            _csv_parser([*OPTDIGITS_ATTRIBUTES, "digit"]), _kinds(OPTDIGITS_ATTRIBUTES), "digit",
            _files("optdigits/optdigits.names"),
        ),
        DatasetInfo(
            "ionosphere", "Johns Hopkins ionosphere radar returns (good/bad)",
            _files("ionosphere/ionosphere.data"),
            _csv_parser([*IONOSPHERE_ATTRIBUTES, "class"]), _kinds(IONOSPHERE_ATTRIBUTES),
            "class", _files("ionosphere/ionosphere.names"),
        ),
        DatasetInfo(
            "liver", "BUPA liver disorders; the 7th field (selector) is the class",
            _files("liver-disorders/bupa.data"),
            _csv_parser([*LIVER_ATTRIBUTES, "selector"]), _kinds(LIVER_ATTRIBUTES), "selector",
            _files("liver-disorders/bupa.names"),
        ),
        DatasetInfo(
            "sonar", "Connectionist bench sonar, mines vs. rocks",
            _files("undocumented/connectionist-bench/sonar/sonar.all-data"),
            _csv_parser([*SONAR_ATTRIBUTES, "class"]), _kinds(SONAR_ATTRIBUTES), "class",
            _files("undocumented/connectionist-bench/sonar/sonar.names"),
        ),
        DatasetInfo(
            "promoters", "E. coli promoter gene sequences, 57 nucleotide positions",
            _files("molecular-biology/promoter-gene-sequences/promoters.data"), _parse_promoters,
            _kinds(discrete=PROMOTER_POSITIONS), "class",
            _files("molecular-biology/promoter-gene-sequences/promoters.names"),
        ),
        DatasetInfo(
            "lymphography", "Lymphography (Ljubljana), 4 classes",
            _files("lymphography/lymphography.data"),
            _csv_parser(["class", *LYMPH_ATTRIBUTES]), _kinds(discrete=LYMPH_ATTRIBUTES), "class",
            _files("lymphography/lymphography.names"),
        ),
        DatasetInfo(
            "breast-cancer", "Breast cancer recurrence (Ljubljana)",
            _files("breast-cancer/breast-cancer.data"),
            _csv_parser(["class", *BREAST_ATTRIBUTES]), _kinds(discrete=BREAST_ATTRIBUTES),
            "class", _files("breast-cancer/breast-cancer.names"),
        ),
        DatasetInfo(
            "lenses", "Contact lenses: hard, soft or none",
            _files("lenses/lenses.data"), _parse_lenses, _kinds(discrete=LENSES_ATTRIBUTES),
            "class", _files("lenses/lenses.names"),
        ),
        DatasetInfo(
            "sick", "Thyroid disease: sick vs. negative, sick.data + sick.test",
            _files("thyroid-disease/sick.data", "thyroid-disease/sick.test"), _parse_sick,
            _kinds(SICK_CONTINUOUS, [c for c in SICK_COLUMNS[:-1] if c not in SICK_CONTINUOUS]),
            "class", _files("thyroid-disease/sick.names"),
        ),
        DatasetInfo(
            "voting", "1984 US Congressional voting records (party)",
            _files("voting-records/house-votes-84.data"),
            _csv_parser(["party", *VOTES]), _kinds(discrete=VOTES), "party",
            _files("voting-records/house-votes-84.names"),
        ),
    ]
}  # fmt: skip


def get_info(name: str) -> DatasetInfo:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise UserError(f"dataset '{name}' is not registered (known: {known})") from None


def fetch_dataset(name: str, *, mirror: str | None = None, docs: bool = False) -> list[Path]:
    """Download (or find in the cache) a registered dataset's files, verified."""
    info = get_info(name)
    files = info.files + (info.docs if docs else ())
    return [fetch_file(f, mirror=mirror) for f in files]


def load_registered(name: str, *, mirror: str | None = None) -> RawData:
    info = get_info(name)
    paths = fetch_dataset(name, mirror=mirror)
    frame = info.parser(paths)
    return RawData(
        frame=frame,
        attributes=dict(info.attributes),
        target=info.target,
        checksums={f.path: f.sha256 for f in info.files},
        source=f"UCI: {', '.join(f.path for f in info.files)}",
    )


def _infer_kind(column: pd.Series) -> str:
    """Numbers with many distinct values are continuous; anything else is discrete."""
    values = pd.to_numeric(column.dropna(), errors="coerce")
    if values.isna().any() or values.nunique() <= 10:
        return "discrete"
    return "continuous"


def _read_table(path: Path, sep: str, spec: FileDataset, label: str) -> pd.DataFrame:
    """The file as stripped text cells, rows numbered from 0. The header is read as a row:
    a data row with more fields than it is then an error (pandas would take the extra
    field for an index and shift every value), and its names must be distinct once stripped
    (pandas would rename a repeated 'a' to 'a.1', and keep 'a ' and 'a' apart)."""
    try:
        frame = pd.read_csv(
            path, sep=sep, header=None, dtype=str, na_values=spec.missing_values,
            keep_default_na=False, skipinitialspace=True,
        )  # fmt: skip
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "empty file"
        raise UserError(f"{label}: cannot be read as a table: {first}") from None
    names = [str(i) for i in range(frame.shape[1])]
    if spec.header:
        cells = frame.iloc[0]
        names = [c.strip() if isinstance(c, str) else f"Unnamed: {i}" for i, c in enumerate(cells)]
        frame = frame.iloc[1:].reset_index(drop=True)
        twice = [name for i, name in enumerate(names) if name in names[:i]]
        if twice:
            where = ", ".join(str(i + 1) for i, name in enumerate(names) if name == twice[0])
            raise UserError(
                f"{label}: the header names column '{twice[0]}' more than once (columns {where})"
            )
    frame.columns = names
    return frame.apply(lambda column: column.str.strip())


def load_file_dataset(spec: FileDataset, *, base_dir: Path = Path(".")) -> RawData:
    """A user's own CSV/TSV (local, or a URL pinned by sha256): label column, kinds inferred
    unless declared."""
    if spec.url is not None:
        path = fetch_url(spec.url, spec.sha256)
    else:
        path = Path(spec.path)
        if not path.is_absolute():
            path = base_dir / path
        if not path.is_file():
            raise UserError(f"dataset file not found: {spec.path}")
    sep = spec.sep or ("\t" if path.suffix.lower() in {".tsv", ".tab"} else ",")
    label = spec.path or spec.url
    frame = _read_table(path, sep, spec, label)
    if spec.target not in frame.columns:
        raise UserError(
            f"{label}: target column '{spec.target}' not found "
            f"(columns: {', '.join(frame.columns[:12])}{'...' if frame.shape[1] > 12 else ''})"
        )
    if frame.shape[1] == 1:
        raise UserError(f"{label}: no attribute columns, only the target '{spec.target}'")
    unknown = sorted(set(spec.kinds) - set(frame.columns))
    if unknown:
        raise UserError(f"dataset.kinds: no column named '{unknown[0]}' in {label}")
    attributes = {
        column: spec.kinds.get(column) or _infer_kind(frame[column])
        for column in frame.columns
        if column != spec.target
    }
    return RawData(
        frame=frame,
        attributes=attributes,
        target=spec.target,
        checksums={path.name: pooch.file_hash(str(path))},
        source=str(spec.url or spec.path),
    )


def dataset_table() -> pd.DataFrame:
    """One row per registered dataset: what `genvdis datasets` prints (needs no download)."""
    rows = []
    for info in REGISTRY.values():
        kinds = list(info.attributes.values())
        rows.append(
            {
                "name": info.name,
                "description": info.description,
                "continuous": kinds.count("continuous"),
                "discrete": kinds.count("discrete"),
                "files": " + ".join(f.path.rsplit("/", 1)[-1] for f in info.files),
                "licence": info.licence,
            }
        )
    return pd.DataFrame(rows)


def summarize(raw: RawData) -> dict[str, object]:
    """Rows and classes of a loaded dataset (for `genvdis datasets --counts`)."""
    labels = raw.frame[raw.target]
    return {
        "rows": len(raw.frame),
        "classes": int(labels.nunique()),
        "missing": int(raw.frame[list(raw.attributes)].isna().any(axis=1).sum()),
        "class_counts": {str(k): int(v) for k, v in labels.value_counts().sort_index().items()},
    }


__all__ = [
    "REGISTRY",
    "DatasetInfo",
    "RawData",
    "dataset_table",
    "fetch_dataset",
    "get_info",
    "load_file_dataset",
    "load_registered",
    "summarize",
]
