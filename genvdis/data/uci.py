"""The dataset registry and the parsers that read the UCI originals as they are.

A registered dataset is its files, a parser that turns them into one table, each attribute's
kind and its label column. The files are lines of registry.txt, beside this module, each path
written once: checksums are data, so they sit in one table (as in pooch's registries) that
reads like a mirror's MANIFEST.tsv, away from the parsers. pooch's own `Pooch.load_registry`
does not read it: its `path sha256 [url]` lines have no room for the file's dataset and role,
its size (downloads stop at `fetch.SIZE_FACTOR` times it) or several addresses (pima and
housing, which UCI withdrew), so `_read_registry` reads the same lines with those added.
Adding a dataset is its lines there, a `_registered` entry below and, if its format is new, a
ten-line parser. Users' own files (a local CSV/TSV, or a URL pinned by sha256) and
scikit-learn's bundled tables are read in `sources`, where each kind of dataset is one `Source`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from genvdis.data.fetch import RemoteFile, fetch_file
from genvdis.errors import UserError

if TYPE_CHECKING:  # pandas is imported where a table is read: `genvdis fetch` needs none
    import pandas as pd

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
    # the label column's distinct values in the registered files, before a config makes the
    # target binary (study.csv's K); None for a numeric target a threshold splits (housing)
    classes: int | None
    docs: tuple[RemoteFile, ...] = ()
    licence: str = UCI_LICENCE


@dataclass
class RawData:
    """A dataset as read: one table, each attribute's kind, the label column, provenance."""

    frame: pd.DataFrame
    attributes: dict[str, str]
    target: str
    checksums: dict[str, str] = field(default_factory=dict)
    source: str = ""
    # attributes whose kind could not be inferred (a few text cells among many numbers,
    # numbers with a decimal comma), each with the error that refuses it if a config uses it
    # (sources.infer_kind)
    doubtful: dict[str, str] = field(default_factory=dict)


# --- parsers: each reads the archive files exactly as the archive serves them ---------------


def _read_csv(path: Path, names: list[str], **options: object) -> pd.DataFrame:
    import pandas as pd

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
        import pandas as pd

        return pd.concat([_read_csv(p, names, **options) for p in paths], ignore_index=True)

    return parse


def _parse_adult(paths: list[Path]) -> pd.DataFrame:
    """adult.data + adult.test; the test file opens with '|1x3 Cross validator' and its
    labels end with '.' (">50K.")."""
    import pandas as pd

    frames = [_read_csv(p, ADULT_COLUMNS, comment="|") for p in paths]
    frame = pd.concat(frames, ignore_index=True).dropna(how="all")
    frame["income"] = frame["income"].str.rstrip(".")
    return frame.reset_index(drop=True)


def _parse_whitespace(names: list[str]) -> Callable[[list[Path]], pd.DataFrame]:
    def parse(paths: list[Path]) -> pd.DataFrame:
        import pandas as pd

        frames = [pd.read_csv(p, sep=r"\s+", header=None, names=names, dtype=str) for p in paths]
        return pd.concat(frames, ignore_index=True)

    return parse


def _parse_promoters(paths: list[Path]) -> pd.DataFrame:
    """'+,S10,\\t\\tsequence': the 57-base sequence becomes 57 categorical positions."""
    import pandas as pd

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
    import pandas as pd

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

# --- study datasets, part 1: columns and parsers ---
IRIS_ATTRIBUTES = ["sepal-length", "sepal-width", "petal-length", "petal-width"]
WINE_ATTRIBUTES = [
    "alcohol", "malic-acid", "ash", "alcalinity-of-ash", "magnesium", "total-phenols",
    "flavanoids", "nonflavanoid-phenols", "proanthocyanins", "color-intensity", "hue",
    "od280-od315", "proline",
]  # fmt: skip
GLASS_ATTRIBUTES = ["RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"]
ECOLI_CONTINUOUS, ECOLI_DISCRETE = ["mcg", "gvh", "aac", "alm1", "alm2"], ["lip", "chg"]
ECOLI_COLUMNS = ["sequence-name", "mcg", "gvh", "lip", "chg", "aac", "alm1", "alm2", "class"]
YEAST_CONTINUOUS = ["mcg", "gvh", "alm", "mit", "pox", "vac", "nuc"]  # erl: "Binary attribute"
YEAST_COLUMNS = ["sequence-name", "mcg", "gvh", "alm", "mit", "erl", "pox", "vac", "nuc"]
YEAST_COLUMNS += ["class"]
# heart-disease's 13 attributes, as statlog heart's doc types them: Real 1,4,5,8,10,12 (ca, a
# count of vessels 0-3, among them); Ordered 11 (slope: discrete, its 3 levels not evenly
# spaced in meaning); Binary 2,6,9; Nominal 3,7,13
HEART_CONTINUOUS = ["age", "trestbps", "chol", "thalach", "oldpeak", "ca"]
HEART_DISCRETE = ["sex", "cp", "fbs", "restecg", "exang", "slope", "thal"]
HEART_COLUMNS = [
    "age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach", "exang", "oldpeak",
    "slope", "ca", "thal",
]  # fmt: skip
AUSTRALIAN_CONTINUOUS = ["A2", "A3", "A7", "A10", "A13", "A14"]
AUSTRALIAN_DISCRETE = ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]
GERMAN_COLUMNS = [
    "status", "duration", "credit-history", "purpose", "credit-amount", "savings",
    "employment-since", "installment-rate", "personal-status-sex", "other-debtors",
    "residence-since", "property", "age", "other-installment-plans", "housing",
    "existing-credits", "job", "people-liable", "telephone", "foreign-worker",
]  # fmt: skip
GERMAN_CONTINUOUS = ["duration", "credit-amount", "installment-rate", "residence-since", "age"]
GERMAN_CONTINUOUS += ["existing-credits", "people-liable"]  # german.doc's "(numerical)"
CRX_CONTINUOUS = ["A2", "A3", "A8", "A11", "A14", "A15"]
CRX_DISCRETE = ["A1", "A4", "A5", "A6", "A7", "A9", "A10", "A12", "A13"]
HEPATITIS_CONTINUOUS = ["age", "bilirubin", "alk-phosphate", "sgot", "albumin", "protime"]
HEPATITIS_COLUMNS = [
    "class", "age", "sex", "steroid", "antivirals", "fatigue", "malaise", "anorexia",
    "liver-big", "liver-firm", "spleen-palpable", "spiders", "ascites", "varices", "bilirubin",
    "alk-phosphate", "sgot", "albumin", "protime", "histology",
]  # fmt: skip
HORSE_COLUMNS = [
    "surgery", "age", "hospital-number", "rectal-temperature", "pulse", "respiratory-rate",
    "temperature-of-extremities", "peripheral-pulse", "mucous-membranes",
    "capillary-refill-time", "pain", "peristalsis", "abdominal-distension", "nasogastric-tube",
    "nasogastric-reflux", "nasogastric-reflux-ph", "rectal-examination-feces", "abdomen",
    "packed-cell-volume", "total-protein", "abdominocentesis-appearance",
    "abdomcentesis-total-protein", "outcome", "surgical-lesion", "lesion-site", "lesion-type",
    "lesion-subtype", "cp-data",
]  # fmt: skip
# attributes 1, 2 and 4-22: not the hospital number (an id), nor what is known only afterwards
# (23 outcome, 24-27 the lesion, the other class candidates), nor 28 cp_data ("of no
# significance"); continuous: the .names's "linear" ones
HORSE_CONTINUOUS = ["rectal-temperature", "pulse", "respiratory-rate", "nasogastric-reflux-ph"]
HORSE_CONTINUOUS += ["packed-cell-volume", "total-protein", "abdomcentesis-total-protein"]
HORSE_DISCRETE = [c for c in HORSE_COLUMNS[:22] if c not in HORSE_CONTINUOUS]
HORSE_DISCRETE.remove("hospital-number")
MUSHROOM_ATTRIBUTES = [
    "cap-shape", "cap-surface", "cap-color", "bruises", "odor", "gill-attachment",
    "gill-spacing", "gill-size", "gill-color", "stalk-shape", "stalk-root",
    "stalk-surface-above-ring", "stalk-surface-below-ring", "stalk-color-above-ring",
    "stalk-color-below-ring", "veil-type", "veil-color", "ring-number", "ring-type",
    "spore-print-color", "population", "habitat",
]  # fmt: skip
KRKP_ATTRIBUTES = [
    "bkblk", "bknwy", "bkon8", "bkona", "bkspr", "bkxbq", "bkxcr", "bkxwp", "blxwp", "bxqsq",
    "cntxt", "dsopp", "dwipd", "hdchk", "katri", "mulch", "qxmsq", "r2ar8", "reskd", "reskr",
    "rimmx", "rkxwp", "rxmsq", "simpl", "skach", "skewr", "skrxp", "spcop", "stlmt", "thrsk",
    "wkcti", "wkna8", "wknck", "wkovl", "wkpos", "wtoeg",
]  # fmt: skip
TICTACTOE_ATTRIBUTES = [
    f"{row}-{column}-square"
    for row in ("top", "middle", "bottom")
    for column in ("left", "middle", "right")
]
CAR_ATTRIBUTES = ["buying", "maint", "doors", "persons", "lug_boot", "safety"]
NURSERY_ATTRIBUTES = ["parents", "has_nurs", "form", "children", "housing", "finance"]
NURSERY_ATTRIBUTES += ["social", "health"]
BALANCE_ATTRIBUTES = ["left-weight", "left-distance", "right-weight", "right-distance"]
WDBC_ATTRIBUTES = [
    f"{feature}-{statistic}"
    for statistic in ("mean", "se", "worst")
    for feature in (
        "radius", "texture", "perimeter", "area", "smoothness", "compactness", "concavity",
        "concave-points", "symmetry", "fractal-dimension",
    )
]  # fmt: skip
BCW_ATTRIBUTES = [
    "clump-thickness", "uniformity-of-cell-size", "uniformity-of-cell-shape",
    "marginal-adhesion", "single-epithelial-cell-size", "bare-nuclei", "bland-chromatin",
    "normal-nucleoli", "mitoses",
]  # fmt: skip


def _parse_whitespace_missing(names: list[str]) -> Callable[[list[Path]], pd.DataFrame]:
    """Whitespace-separated files with '?' for a missing value (horse-colic)."""
    read = _parse_whitespace(names)

    def parse(paths: list[Path]) -> pd.DataFrame:
        frame = read(paths)
        return frame.mask(frame.isin(MISSING))

    return parse


# --- study datasets, part 2: columns and parsers ---
def _ids_dropped(
    parser: Callable[[list[Path]], pd.DataFrame], *columns: str
) -> Callable[[list[Path]], pd.DataFrame]:
    """`parser`, then `columns` (names, record ids) dropped: an identifier is no attribute."""

    def parse(paths: list[Path]) -> pd.DataFrame:
        return parser(paths).drop(columns=list(columns))

    return parse


SPAM_WORDS = [
    "make", "address", "all", "3d", "our", "over", "remove", "internet", "order", "mail",
    "receive", "will", "people", "report", "addresses", "free", "business", "email", "you",
    "credit", "your", "font", "000", "money", "hp", "hpl", "george", "650", "lab", "labs",
    "telnet", "857", "data", "415", "85", "technology", "1999", "parts", "pm", "direct", "cs",
    "meeting", "original", "project", "re", "edu", "table", "conference",
]  # fmt: skip
SPAM_CHARS = ["semicolon", "parenthesis", "bracket", "exclamation", "dollar", "hash"]
SPAMBASE_ATTRIBUTES = [f"word_freq_{w}" for w in SPAM_WORDS]
SPAMBASE_ATTRIBUTES += [f"char_freq_{c}" for c in SPAM_CHARS]
SPAMBASE_ATTRIBUTES += ["capital_run_length_average", "capital_run_length_longest"]
SPAMBASE_ATTRIBUTES += ["capital_run_length_total"]
HABERMAN_ATTRIBUTES = ["age", "year", "nodes"]
TRANSFUSION_ATTRIBUTES = ["recency", "frequency", "monetary", "time"]
BANKNOTE_ATTRIBUTES = ["variance", "skewness", "curtosis", "entropy"]
MAGIC_ATTRIBUTES = ["fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long"]
MAGIC_ATTRIBUTES += ["fM3Trans", "fAlpha", "fDist"]
LETTER_ATTRIBUTES = [
    "x-box", "y-box", "width", "high", "onpix", "x-bar", "y-bar", "x2bar", "y2bar", "xybar",
    "x2ybr", "xy2br", "x-ege", "xegvy", "y-ege", "yegvx",
]  # fmt: skip
VEHICLE_ATTRIBUTES = [
    "compactness", "circularity", "distance-circularity", "radius-ratio",
    "pr-axis-aspect-ratio", "max-length-aspect-ratio", "scatter-ratio", "elongatedness",
    "pr-axis-rectangularity", "max-length-rectangularity", "scaled-variance-major",
    "scaled-variance-minor", "scaled-radius-of-gyration", "skewness-about-major",
    "skewness-about-minor", "kurtosis-about-minor", "kurtosis-about-major", "hollows-ratio",
]  # fmt: skip
SEGMENT_ATTRIBUTES = [
    "region-centroid-col", "region-centroid-row", "region-pixel-count",
    "short-line-density-5", "short-line-density-2", "vedge-mean", "vedge-sd", "hedge-mean",
    "hedge-sd", "intensity-mean", "rawred-mean", "rawblue-mean", "rawgreen-mean", "exred-mean",
    "exblue-mean", "exgreen-mean", "value-mean", "saturation-mean", "hue-mean",
]  # fmt: skip
# sat.doc: each row is a 3x3 neighbourhood, pixel by pixel, 4 spectral values a pixel
SATIMAGE_ATTRIBUTES = [f"p{pixel}b{band}" for pixel in range(1, 10) for band in range(1, 5)]
SPECTF_ATTRIBUTES = [f"F{i}{phase}" for i in range(1, 23) for phase in "RS"]
MONKS_ATTRIBUTES = ["a1", "a2", "a3", "a4", "a5", "a6"]
ZOO_ATTRIBUTES = [
    "hair", "feathers", "eggs", "milk", "airborne", "aquatic", "predator", "toothed",
    "backbone", "breathes", "venomous", "fins", "legs", "tail", "domestic", "catsize",
]  # fmt: skip
PARKINSONS_ATTRIBUTES = [
    "MDVP:Fo(Hz)", "MDVP:Fhi(Hz)", "MDVP:Flo(Hz)", "MDVP:Jitter(%)", "MDVP:Jitter(Abs)",
    "MDVP:RAP", "MDVP:PPQ", "Jitter:DDP", "MDVP:Shimmer", "MDVP:Shimmer(dB)", "Shimmer:APQ3",
    "Shimmer:APQ5", "MDVP:APQ", "Shimmer:DDA", "NHR", "HNR", "RPDE", "DFA", "spread1",
    "spread2", "D2", "PPE",
]  # fmt: skip
PARKINSONS_COLUMNS = ["name", *PARKINSONS_ATTRIBUTES[:16], "status", *PARKINSONS_ATTRIBUTES[16:]]
SEEDS_ATTRIBUTES = ["area", "perimeter", "compactness", "kernel-length", "kernel-width"]
SEEDS_ATTRIBUTES += ["asymmetry", "groove-length"]
DERMATOLOGY_DISCRETE = [
    "erythema", "scaling", "definite-borders", "itching", "koebner-phenomenon",
    "polygonal-papules", "follicular-papules", "oral-mucosal-involvement",
    "knee-and-elbow-involvement", "scalp-involvement", "family-history",
    "melanin-incontinence", "eosinophils-in-the-infiltrate", "PNL-infiltrate",
    "fibrosis-of-the-papillary-dermis", "exocytosis", "acanthosis", "hyperkeratosis",
    "parakeratosis", "clubbing-of-the-rete-ridges", "elongation-of-the-rete-ridges",
    "thinning-of-the-suprapapillary-epidermis", "spongiform-pustule", "munro-microabcess",
    "focal-hypergranulosis", "disappearance-of-the-granular-layer",
    "vacuolisation-and-damage-of-basal-layer", "spongiosis", "saw-tooth-appearance-of-retes",
    "follicular-horn-plug", "perifollicular-parakeratosis",
    "inflammatory-monoluclear-inflitrate", "band-like-infiltrate",
]  # fmt: skip
HAYES_ROTH_ATTRIBUTES = ["hobby", "age", "educational-level", "marital-status"]
ABALONE_CONTINUOUS = ["length", "diameter", "height", "whole-weight", "shucked-weight"]
ABALONE_CONTINUOUS += ["viscera-weight", "shell-weight"]
PENDIGITS_ATTRIBUTES = [f"{axis}{i}" for i in range(1, 9) for axis in "xy"]
CMC_CONTINUOUS = ["wife-age", "children"]
CMC_DISCRETE = ["wife-education", "husband-education", "wife-religion", "wife-working"]
CMC_DISCRETE += ["husband-occupation", "standard-of-living", "media-exposure"]
CMC_COLUMNS = [
    "wife-age", "wife-education", "husband-education", "children", "wife-religion",
    "wife-working", "husband-occupation", "standard-of-living", "media-exposure", "method",
]  # fmt: skip
TAE_DISCRETE = ["native-english", "instructor", "course", "summer"]
TAE_COLUMNS = [*TAE_DISCRETE, "class-size", "score"]
FLAGS_CONTINUOUS = ["area", "population", "bars", "stripes", "colours", "circles", "crosses"]
FLAGS_CONTINUOUS += ["saltires", "quarters", "sunstars"]
FLAGS_COLUMNS = [
    "name", "landmass", "zone", "area", "population", "language", "religion", "bars",
    "stripes", "colours", "red", "green", "blue", "gold", "white", "black", "orange",
    "mainhue", "circles", "crosses", "saltires", "quarters", "sunstars", "crescent",
    "triangle", "icon", "animate", "text", "topleft", "botright",
]  # fmt: skip
FLAGS_DISCRETE = [c for c in FLAGS_COLUMNS[1:] if c not in [*FLAGS_CONTINUOUS, "religion"]]
POSTOP_DISCRETE = ["L-CORE", "L-SURF", "L-O2", "L-BP", "SURF-STBL", "CORE-STBL", "BP-STBL"]
POSTOP_COLUMNS = [*POSTOP_DISCRETE, "COMFORT", "ADM-DECS"]
ARRHYTHMIA_LEADS = ["DI", "DII", "DIII", "AVR", "AVL", "AVF", "V1", "V2", "V3", "V4", "V5", "V6"]
ARRHYTHMIA_WAVES = ["Q-width", "R-width", "S-width", "R'-width", "S'-width", "deflections"]
ARRHYTHMIA_FLAGS = ["ragged-R", "diphasic-R", "ragged-P", "diphasic-P", "ragged-T"]
ARRHYTHMIA_FLAGS += ["diphasic-T"]
ARRHYTHMIA_AMPLITUDES = ["JJ", "Q", "R", "S", "R'", "S'", "P", "T", "QRSA", "QRSTA"]
ARRHYTHMIA_CONTINUOUS = [
    "age", "height", "weight", "QRS-duration", "P-R-interval", "Q-T-interval", "T-interval",
    "P-interval", "QRS-angle", "T-angle", "P-angle", "QRST-angle", "J-angle", "heart-rate",
]  # fmt: skip
ARRHYTHMIA_CONTINUOUS += [f"{lead}-{w}" for lead in ARRHYTHMIA_LEADS for w in ARRHYTHMIA_WAVES]
ARRHYTHMIA_CONTINUOUS += [
    f"{lead}-{a}-amplitude" for lead in ARRHYTHMIA_LEADS for a in ARRHYTHMIA_AMPLITUDES
]
ARRHYTHMIA_DISCRETE = ["sex"]
ARRHYTHMIA_DISCRETE += [f"{lead}-{f}" for lead in ARRHYTHMIA_LEADS for f in ARRHYTHMIA_FLAGS]
ARRHYTHMIA_COLUMNS = [
    "age", "sex", *ARRHYTHMIA_CONTINUOUS[1:14],
    *[
        column
        for lead in ARRHYTHMIA_LEADS
        for column in [
            *(f"{lead}-{w}" for w in ARRHYTHMIA_WAVES),
            *(f"{lead}-{f}" for f in ARRHYTHMIA_FLAGS),
        ]
    ],
    *(f"{lead}-{a}-amplitude" for lead in ARRHYTHMIA_LEADS for a in ARRHYTHMIA_AMPLITUDES),
    "class",
]  # fmt: skip


REGISTRY_FILE = "registry.txt"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _read_registry(text: str) -> dict[str, dict[str, list[RemoteFile]]]:
    """registry.txt as {dataset: {"data": files, "docs": files}}, each list in file order.
    Read as pooch's `Pooch.load_registry` reads its files (shlex-split lines, '#' comments);
    the columns pooch has no room for are why it is not pooch's loader."""
    files: dict[str, dict[str, list[RemoteFile]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = shlex.split(line, comments=True)
        if not fields:
            continue
        name, role, path, sha256, size, *urls = fields if len(fields) >= 5 else [""] * 5
        if role not in ("data", "docs") or not _SHA256.fullmatch(sha256) or not size.isdigit():
            raise ValueError(
                f"{REGISTRY_FILE}, line {number}: expected 'dataset data|docs path sha256 size "
                f"[url ...]', got {line.strip()!r}"
            )
        roles = files.setdefault(name, {"data": [], "docs": []})
        roles[role].append(RemoteFile(path, sha256, int(size), tuple(urls)))
    return files


_FILES = _read_registry(resources.files("genvdis.data").joinpath(REGISTRY_FILE).read_text("utf-8"))


def _kinds(continuous: list[str] = (), discrete: list[str] = ()) -> dict[str, str]:
    return {**dict.fromkeys(continuous, "continuous"), **dict.fromkeys(discrete, "discrete")}


def _registered(
    name: str,
    description: str,
    parser: Callable[[list[Path]], pd.DataFrame],
    attributes: dict[str, str],
    target: str,
    classes: int | None,
) -> DatasetInfo:
    """A dataset whose files are its lines in registry.txt."""
    files = _FILES.get(name, {}).get("data")
    if not files:
        raise LookupError(f"{REGISTRY_FILE} lists no data file for the dataset '{name}'")
    docs = _FILES[name]["docs"]
    return DatasetInfo(
        name, description, tuple(files), parser, attributes, target, classes, tuple(docs)
    )


REGISTRY: dict[str, DatasetInfo] = {
    info.name: info
    for info in [
        _registered(
            "pima", "Pima Indians diabetes (onset within 5 years)",
            _csv_parser([*PIMA_ATTRIBUTES, "class"]), _kinds(PIMA_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "adult", "Adult census income (> $50K), adult.data + adult.test", _parse_adult,
            _kinds(ADULT_CONTINUOUS, ADULT_DISCRETE), "income",
            classes=2,
        ),
        _registered(
            "housing", "Boston housing (median value MEDV)",
            _parse_whitespace([*HOUSING_ATTRIBUTES, "MEDV"]), _kinds(HOUSING_ATTRIBUTES), "MEDV",
            classes=None,
        ),
        _registered(
            "optdigits", "Optical recognition of handwritten digits, 8x8 counts, .tra + .tes",
            _csv_parser([*OPTDIGITS_ATTRIBUTES, "digit"]), _kinds(OPTDIGITS_ATTRIBUTES), "digit",
            classes=10,
        ),
        _registered(
            "ionosphere", "Johns Hopkins ionosphere radar returns (good/bad)",
            _csv_parser([*IONOSPHERE_ATTRIBUTES, "class"]), _kinds(IONOSPHERE_ATTRIBUTES),
            "class",
            classes=2,
        ),
        _registered(
            "liver", "BUPA liver disorders; the 7th field (selector) is the class",
            _csv_parser([*LIVER_ATTRIBUTES, "selector"]), _kinds(LIVER_ATTRIBUTES), "selector",
            classes=2,
        ),
        _registered(
            "sonar", "Connectionist bench sonar, mines vs. rocks",
            _csv_parser([*SONAR_ATTRIBUTES, "class"]), _kinds(SONAR_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "promoters", "E. coli promoter gene sequences, 57 nucleotide positions",
            _parse_promoters, _kinds(discrete=PROMOTER_POSITIONS), "class",
            classes=2,
        ),
        _registered(
            "lymphography", "Lymphography (Ljubljana), 4 classes",
            _csv_parser(["class", *LYMPH_ATTRIBUTES]), _kinds(discrete=LYMPH_ATTRIBUTES), "class",
            classes=4,
        ),
        _registered(
            "breast-cancer", "Breast cancer recurrence (Ljubljana)",
            _csv_parser(["class", *BREAST_ATTRIBUTES]), _kinds(discrete=BREAST_ATTRIBUTES),
            "class",
            classes=2,
        ),
        _registered(
            "lenses", "Contact lenses: hard, soft or none", _parse_lenses,
            _kinds(discrete=LENSES_ATTRIBUTES), "class",
            classes=3,
        ),
        _registered(
            "sick", "Thyroid disease: sick vs. negative, sick.data + sick.test", _parse_sick,
            _kinds(SICK_CONTINUOUS, [c for c in SICK_COLUMNS[:-1] if c not in SICK_CONTINUOUS]),
            "class",
            classes=2,
        ),
        _registered(
            "voting", "1984 US Congressional voting records (party)",
            _csv_parser(["party", *VOTES]), _kinds(discrete=VOTES), "party",
            classes=2,
        ),
        # --- study datasets, part 1 ---
        _registered(
            "iris", "Fisher's iris plants, 3 species",
            _csv_parser([*IRIS_ATTRIBUTES, "class"]), _kinds(IRIS_ATTRIBUTES), "class",
            classes=3,
        ),
        _registered(
            "wine", "Wine recognition: 3 cultivars from a chemical analysis",
            _csv_parser(["class", *WINE_ATTRIBUTES]), _kinds(WINE_ATTRIBUTES), "class",
            classes=3,
        ),
        _registered(
            "glass", "Glass identification, 6 types (Id number not an attribute)",
            _csv_parser(["id", *GLASS_ATTRIBUTES, "type"]), _kinds(GLASS_ATTRIBUTES), "type",
            classes=6,
        ),
        _registered(
            "ecoli", "E. coli protein localization sites, 8 classes",
            _parse_whitespace(ECOLI_COLUMNS), _kinds(ECOLI_CONTINUOUS, ECOLI_DISCRETE), "class",
            classes=8,
        ),
        _registered(
            "yeast", "Yeast protein localization sites, 10 classes",
            _parse_whitespace(YEAST_COLUMNS), _kinds(YEAST_CONTINUOUS, ["erl"]), "class",
            classes=10,
        ),
        _registered(
            "heart-cleveland", "Heart disease, Cleveland Clinic (processed, 14 attributes)",
            _csv_parser([*HEART_COLUMNS, "num"]), _kinds(HEART_CONTINUOUS, HEART_DISCRETE),
            "num",
            classes=5,
        ),
        _registered(
            "heart-hungarian", "Heart disease, Hungarian Institute of Cardiology (processed)",
            _csv_parser([*HEART_COLUMNS, "num"]), _kinds(HEART_CONTINUOUS, HEART_DISCRETE),
            "num",
            classes=2,
        ),
        _registered(
            "statlog-heart", "Statlog heart disease: absence (1) or presence (2)",
            _parse_whitespace([*HEART_COLUMNS, "class"]),
            _kinds(HEART_CONTINUOUS, HEART_DISCRETE), "class",
            classes=2,
        ),
        _registered(
            "australian", "Statlog Australian credit approval (anonymized attributes)",
            _parse_whitespace([f"A{i}" for i in range(1, 16)]),
            _kinds(AUSTRALIAN_CONTINUOUS, AUSTRALIAN_DISCRETE), "A15",
            classes=2,
        ),
        _registered(
            "german", "Statlog German credit: good (1) or bad (2), categorical original",
            _parse_whitespace([*GERMAN_COLUMNS, "class"]),
            _kinds(GERMAN_CONTINUOUS, [c for c in GERMAN_COLUMNS if c not in GERMAN_CONTINUOUS]),
            "class",
            classes=2,
        ),
        _registered(
            "credit-screening", "Japanese credit screening (crx), anonymized attributes",
            _csv_parser([f"A{i}" for i in range(1, 17)]), _kinds(CRX_CONTINUOUS, CRX_DISCRETE),
            "A16",
            classes=2,
        ),
        _registered(
            "hepatitis", "Hepatitis: die or live",
            _csv_parser(HEPATITIS_COLUMNS),
            _kinds(HEPATITIS_CONTINUOUS,
                   [c for c in HEPATITIS_COLUMNS[1:] if c not in HEPATITIS_CONTINUOUS]),
            "class",
            classes=2,
        ),
        _registered(
            "horse-colic", "Horse colic: was the lesion surgical? .data + .test",
            _parse_whitespace_missing(HORSE_COLUMNS), _kinds(HORSE_CONTINUOUS, HORSE_DISCRETE),
            "surgical-lesion",
            classes=2,
        ),
        _registered(
            "mushroom", "Mushrooms (Agaricus and Lepiota): edible or poisonous",
            _csv_parser(["class", *MUSHROOM_ATTRIBUTES]), _kinds(discrete=MUSHROOM_ATTRIBUTES),
            "class",
            classes=2,
        ),
        _registered(
            "kr-vs-kp", "Chess endgame king+rook vs. king+pawn on a7: can white win?",
            _csv_parser([*KRKP_ATTRIBUTES, "class"]), _kinds(discrete=KRKP_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "tic-tac-toe", "Tic-tac-toe endgame boards: does x win?",
            _csv_parser([*TICTACTOE_ATTRIBUTES, "class"]), _kinds(discrete=TICTACTOE_ATTRIBUTES),
            "class",
            classes=2,
        ),
        _registered(
            "car", "Car evaluation, 4 acceptability classes",
            _csv_parser([*CAR_ATTRIBUTES, "class"]), _kinds(discrete=CAR_ATTRIBUTES), "class",
            classes=4,
        ),
        _registered(
            "nursery", "Nursery school applications, 5 classes",
            _csv_parser([*NURSERY_ATTRIBUTES, "class"]), _kinds(discrete=NURSERY_ATTRIBUTES),
            "class",
            classes=5,
        ),
        _registered(
            "balance-scale", "Balance scale: tips left, right or balanced",
            _csv_parser(["class", *BALANCE_ATTRIBUTES]), _kinds(BALANCE_ATTRIBUTES), "class",
            classes=3,
        ),
        _registered(
            "wdbc", "Wisconsin diagnostic breast cancer: malignant or benign (ID not used)",
            _csv_parser(["id", "diagnosis", *WDBC_ATTRIBUTES]), _kinds(WDBC_ATTRIBUTES),
            "diagnosis",
            classes=2,
        ),
        _registered(
            "breast-cancer-wisconsin", "Wisconsin breast cancer (original): benign 2 or "
            "malignant 4 (sample code not used)",
            _csv_parser(["id", *BCW_ATTRIBUTES, "class"]), _kinds(BCW_ATTRIBUTES), "class",
            classes=2,
        ),
        # --- study datasets, part 2 ---
        _registered(
            "spambase", "Spambase: e-mail spam (1) or not (0), 57 word/character statistics",
            _csv_parser([*SPAMBASE_ATTRIBUTES, "spam"]), _kinds(SPAMBASE_ATTRIBUTES), "spam",
            classes=2,
        ),
        _registered(
            "haberman", "Haberman's survival after breast cancer surgery (2: died within 5 years)",
            _csv_parser([*HABERMAN_ATTRIBUTES, "survival"]), _kinds(HABERMAN_ATTRIBUTES),
            "survival",
            classes=2,
        ),
        _registered(
            "blood-transfusion", "Blood transfusion service center: donated in March 2007 (1)",
            _csv_parser([*TRANSFUSION_ATTRIBUTES, "donated"], skiprows=1),
            _kinds(TRANSFUSION_ATTRIBUTES), "donated",
            classes=2,
        ),
        _registered(
            "banknote", "Banknote authentication, 4 wavelet statistics of an image (class 0/1)",
            _csv_parser([*BANKNOTE_ATTRIBUTES, "class"]), _kinds(BANKNOTE_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "magic", "MAGIC gamma telescope: gamma (g, signal) or hadron (h, background)",
            _csv_parser([*MAGIC_ATTRIBUTES, "class"]), _kinds(MAGIC_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "letter-recognition", "Letter recognition: 26 capital letters, 16 integer features",
            _csv_parser(["letter", *LETTER_ATTRIBUTES]), _kinds(LETTER_ATTRIBUTES), "letter",
            classes=26,
        ),
        _registered(
            "vehicle", "Statlog vehicle silhouettes (opel, saab, bus, van), xaa..xai.dat stacked",
            _parse_whitespace([*VEHICLE_ATTRIBUTES, "class"]), _kinds(VEHICLE_ATTRIBUTES),
            "class",
            classes=4,
        ),
        _registered(
            "segment", "Statlog image segmentation, 7 classes (1..7: brickface ... grass)",
            _parse_whitespace([*SEGMENT_ATTRIBUTES, "class"]), _kinds(SEGMENT_ATTRIBUTES),
            "class",
            classes=7,
        ),
        _registered(
            "satimage", "Statlog Landsat satellite image, 6 soil classes, sat.trn + sat.tst",
            _parse_whitespace([*SATIMAGE_ATTRIBUTES, "class"]), _kinds(SATIMAGE_ATTRIBUTES),
            "class",
            classes=6,
        ),
        _registered(
            "spectf", "SPECTF heart: cardiac SPECT image features (1: abnormal); SPECTF.test only",
            _csv_parser(["diagnosis", *SPECTF_ATTRIBUTES]), _kinds(SPECTF_ATTRIBUTES),
            "diagnosis",
            classes=2,
        ),
        _registered(
            "monks-1", "MONK's problem 1: monks-1.test, all 432 attribute combinations",
            _ids_dropped(_parse_whitespace(["class", *MONKS_ATTRIBUTES, "id"]), "id"),
            _kinds(discrete=MONKS_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "monks-2", "MONK's problem 2: monks-2.test, all 432 attribute combinations",
            _ids_dropped(_parse_whitespace(["class", *MONKS_ATTRIBUTES, "id"]), "id"),
            _kinds(discrete=MONKS_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "monks-3", "MONK's problem 3: monks-3.test, all 432 attribute combinations",
            _ids_dropped(_parse_whitespace(["class", *MONKS_ATTRIBUTES, "id"]), "id"),
            _kinds(discrete=MONKS_ATTRIBUTES), "class",
            classes=2,
        ),
        _registered(
            "zoo", "Zoo: 7 animal types (1: mammal), 15 boolean attributes and legs",
            _ids_dropped(_csv_parser(["animal", *ZOO_ATTRIBUTES, "type"]), "animal"),
            _kinds(discrete=ZOO_ATTRIBUTES), "type",
            classes=7,
        ),
        _registered(
            "parkinsons", "Oxford Parkinson's disease detection from voice (status 1: disease)",
            _ids_dropped(_csv_parser(PARKINSONS_COLUMNS, skiprows=1), "name"),
            _kinds(PARKINSONS_ATTRIBUTES), "status",
            classes=2,
        ),
        _registered(
            "seeds", "Seeds: wheat kernels, 3 varieties (1 Kama, 2 Rosa, 3 Canadian)",
            _parse_whitespace([*SEEDS_ATTRIBUTES, "variety"]), _kinds(SEEDS_ATTRIBUTES),
            "variety",
            classes=3,
        ),
        _registered(
            "dermatology", "Dermatology: 6 erythemato-squamous diseases (1: psoriasis)",
            _csv_parser([*DERMATOLOGY_DISCRETE, "age", "class"]),
            _kinds(["age"], DERMATOLOGY_DISCRETE), "class",
            classes=6,
        ),
        _registered(
            "hayes-roth", "Hayes-Roth: 3 classes of people, 4 nominal attributes (.data only)",
            _ids_dropped(_csv_parser(["name", *HAYES_ROTH_ATTRIBUTES, "class"]), "name"),
            _kinds(discrete=HAYES_ROTH_ATTRIBUTES), "class",
            classes=3,
        ),
        _registered(
            "abalone", "Abalone: age (rings) from physical measurements",
            _csv_parser(["sex", *ABALONE_CONTINUOUS, "rings"]),
            _kinds(ABALONE_CONTINUOUS, ["sex"]), "rings",
            classes=28,
        ),
        _registered(
            "pendigits", "Pen-based handwritten digits, 8 (x, y) points, .tra + .tes",
            _csv_parser([*PENDIGITS_ATTRIBUTES, "digit"]), _kinds(PENDIGITS_ATTRIBUTES), "digit",
            classes=10,
        ),
        _registered(
            "cmc", "Contraceptive method choice (1 no use, 2 long-term, 3 short-term)",
            _csv_parser(CMC_COLUMNS), _kinds(CMC_CONTINUOUS, CMC_DISCRETE), "method",
            classes=3,
        ),
        _registered(
            "tae", "Teaching assistant evaluation: score 1 low, 2 medium, 3 high",
            _csv_parser(TAE_COLUMNS), _kinds(["class-size"], TAE_DISCRETE), "score",
            classes=3,
        ),
        _registered(
            "flags", "Flags of 194 countries: religion (0..7) from the flag and the country",
            _ids_dropped(_csv_parser(FLAGS_COLUMNS), "name"),
            _kinds(FLAGS_CONTINUOUS, FLAGS_DISCRETE), "religion",
            classes=8,
        ),
        _registered(
            "post-operative", "Post-operative patients: where to send them (A, S or I)",
            _csv_parser(POSTOP_COLUMNS), _kinds(["COMFORT"], POSTOP_DISCRETE), "ADM-DECS",
            classes=3,
        ),
        _registered(
            "arrhythmia", "Cardiac arrhythmia: 16 classes (1: normal), 279 ECG attributes",
            _csv_parser(ARRHYTHMIA_COLUMNS),
            _kinds(ARRHYTHMIA_CONTINUOUS, ARRHYTHMIA_DISCRETE), "class",
            classes=13,
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
        source=provenance(info),
    )


def provenance(info: DatasetInfo) -> str:
    """A registered dataset's `data_source` line in config.yaml: the files it is read from."""
    return f"UCI: {', '.join(f.path for f in info.files)}"


def dataset_table() -> pd.DataFrame:
    """One row per registered dataset: what `genvdis datasets` prints (needs no download)."""
    import pandas as pd

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
    "load_registered",
    "provenance",
    "summarize",
]
