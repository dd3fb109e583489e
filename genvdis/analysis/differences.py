"""Statistics on learning curves: paired differences, crossover, power-law fits, verdicts.

Everything here is a pure function of the per-split `errors.csv` table: no file is read or
written (`runs.analyse_folders` reads the runs and writes the CSVs each verdict is traced
to). The method and its limits are explained in docs/analysis.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from genvdis._runtime import portable
from genvdis.analysis import fits, shape
from genvdis.errors import UserError
from genvdis.models import registry
from genvdis.store.results import t_quantile

NB = "naive_bayes"  # the paper's pair, whose verdicts are named NB_BETTER, LR_BETTER
LR = "logistic_regression"
GENERATIVE = registry.family("generative")
DISCRIMINATIVE = registry.family("discriminative")
BASELINES = registry.family("baseline")  # read against, never a side of a default pair
MAJORITY = "majority"  # the baseline every run adds (experiment.engine.with_baseline)

TWO_REGIMES = "two regimes"
NB_BETTER = "NB better throughout"
LR_BETTER = "LR better throughout"
MIXED = "mixed"
NOT_DISTINGUISHABLE = "not distinguishable"
NO_BETTER = "no better than the majority class"  # neither model of the pair beats the baseline
NO_PAIR = "n/a"
BEATS = f"_beats_{MAJORITY}_from"  # a model's column: the smallest m where it beats the baseline

DIFF_COLUMNS = ["m", "mean_diff", "sem", "ci_low", "ci_high", "n_splits"]
_ERROR_COLUMNS = {"model", "m", "split", "error"}
MODEL_SUFFIXES = (
    "_err_m_min",
    "_err_m_max",
    "_asymptote",
    "_asymptote_se",
    "_fit_ok",
    "_asymptote_reason",
    "_best_family",
    "_rises",
    "_nonconvex",
    BEATS,
)
BASELINE_COLUMNS = ["model", "baseline", *DIFF_COLUMNS, "beats"]
BASELINE_FILE = "baseline.csv"  # a run's baseline_differences, beside its differences.csv


# --------------------------------------------------------------------------- paired differences


def _check_errors(errors: pd.DataFrame) -> None:
    missing = _ERROR_COLUMNS - set(errors.columns)
    if missing:
        raise UserError(f"errors table lacks columns {sorted(missing)}")


def _paired_matrix(errors: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Rows m, columns split id, values error_a - error_b (NaN where a split lacks a model)."""
    _check_errors(errors)
    wide = errors[errors["model"].isin([a, b])].pivot_table(
        index=["m", "split"], columns="model", values="error", aggfunc="mean"
    )
    if a not in wide.columns or b not in wide.columns:
        return pd.DataFrame(dtype=float)
    diff = (wide[a] - wide[b]).dropna()
    return diff.unstack("split").sort_index()


def paired_differences(
    errors: pd.DataFrame,
    a: str = LR,
    b: str = NB,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per m, mean of the paired difference error_a - error_b over splits, with a t interval.

    Pairing removes the split-to-split variation both models share (an easy or hard test set),
    so the interval is far narrower than one built from the two curves' own intervals.
    """
    mat = _paired_matrix(errors, a, b)
    rows = [_diff_row(int(m), vals[~np.isnan(vals)], level) for m, vals in _iter_rows(mat)]
    return pd.DataFrame(rows, columns=DIFF_COLUMNS)


def _iter_rows(mat: pd.DataFrame):
    for m, row in mat.iterrows():
        yield m, row.to_numpy(dtype=float)


def _diff_row(m: int, d: np.ndarray, level: float) -> dict[str, Any]:
    n = len(d)
    mean = float(np.mean(d)) if n else math.nan
    if n < 2:
        return dict(
            m=m, mean_diff=mean, sem=math.nan, ci_low=math.nan, ci_high=math.nan, n_splits=n
        )
    sem = float(np.std(d, ddof=1) / math.sqrt(n))
    half = float(t_quantile(0.5 + level / 2, n - 1)) * sem
    return dict(m=m, mean_diff=mean, sem=sem, ci_low=mean - half, ci_high=mean + half, n_splits=n)


# --------------------------------------------------------------------------- crossover


def _crossover_columns(ms: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised crossover over columns of `means` (shape M x B): grid m and interpolated m.

    The crossover index k is one past the last m whose mean difference is not < 0 (NaN counts
    as not < 0), valid when k is inside the grid and some earlier mean is > 0. NaN = none.
    """
    n_m, n_b = means.shape
    not_neg = ~(means < 0)
    any_not_neg = not_neg.any(axis=0)
    last = np.where(any_not_neg, n_m - 1 - np.argmax(not_neg[::-1], axis=0), -1)
    k = last + 1
    pos_before = np.cumsum(means > 0, axis=0)  # pos_before[i] = #positives in 0..i
    has_pos = np.zeros(n_b, dtype=bool)
    inside = (k >= 1) & (k < n_m)
    cols = np.arange(n_b)
    has_pos[inside] = pos_before[k[inside] - 1, cols[inside]] > 0
    valid = inside & has_pos
    grid = np.full(n_b, np.nan)
    interp = np.full(n_b, np.nan)
    if not valid.any():
        return grid, interp
    kv, cv = k[valid], cols[valid]
    d_hi, d_lo = means[kv - 1, cv], means[kv, cv]  # d_hi >= 0 > d_lo
    log_m = portable.log(ms.astype(float))
    frac = d_hi / (d_hi - d_lo)
    grid[valid] = ms[kv]
    interp[valid] = portable.exp(log_m[kv - 1] + frac * (log_m[kv] - log_m[kv - 1]))
    return grid, interp


def crossover(
    errors: pd.DataFrame,
    a: str = LR,
    b: str = NB,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Smallest grid m from which a - b stays < 0 (a better for good), after being > 0 earlier.

    The bootstrap resamples split ids jointly across m (see docs/analysis.md) and recomputes
    the crossover, so the interval reflects how much the crossing point moves with the splits.
    With one split there is nothing to resample (every resample is that split): no interval.
    """
    mat = _paired_matrix(errors, a, b)
    out: dict[str, Any] = dict(
        m_cross=None, m_cross_interp=None, ci_low=None, ci_high=None, frac_no_cross=None, n_boot=0
    )
    if mat.empty:
        return out
    ms = mat.index.to_numpy(dtype=np.int64)
    vals = mat.to_numpy(dtype=float)
    grid, interp = _crossover_columns(ms, np.nanmean(vals, axis=1)[:, None])
    if not np.isnan(grid[0]):
        out.update(m_cross=int(grid[0]), m_cross_interp=float(interp[0]))
    if n_boot > 0 and vals.shape[1] > 1:
        out.update(_bootstrap_crossover(ms, vals, n_boot, seed, level, out["m_cross"] is not None))
    return out


def _weighted_sums(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """x (M, S) @ weights.T (S, B), each sum in numpy's pairwise order over the splits, not
    a BLAS product: a BLAS kernel sums in its own order, chosen per CPU, and the bootstrap's
    interval then moved in its last bits from one machine to another."""
    out = np.empty((x.shape[0], weights.shape[0]))
    for i, row in enumerate(x):
        out[i] = (weights * row).sum(axis=1)
    return out


def _bootstrap_crossover(
    ms: np.ndarray, vals: np.ndarray, n_boot: int, seed: int, level: float, crossed: bool
) -> dict[str, Any]:
    """Resample split ids with replacement (same ids at every m) as a count-weight matrix."""
    rng = np.random.default_rng(seed)
    n_splits = vals.shape[1]
    weights = rng.multinomial(n_splits, np.full(n_splits, 1 / n_splits), size=n_boot)
    weights = weights.astype(float)
    present = ~np.isnan(vals)
    sums = _weighted_sums(np.where(present, vals, 0.0), weights)
    counts = _weighted_sums(present.astype(float), weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / counts, np.nan)
    _, interp = _crossover_columns(ms, means)
    hit = interp[~np.isnan(interp)]
    res: dict[str, Any] = dict(frac_no_cross=float(1 - len(hit) / n_boot), n_boot=n_boot)
    if crossed and len(hit):
        tail = 100 * (1 - level) / 2
        res.update(
            ci_low=float(np.percentile(hit, tail)), ci_high=float(np.percentile(hit, 100 - tail))
        )
    return res


# --------------------------------------------------------------------------- verdict


def verdict(diffs: pd.DataFrame) -> str:
    """Classify a panel from its paired LR - NB differences (significant = CI excludes 0).

    `two regimes` needs every m where NB is significantly better to lie below every m where LR
    is; significant results on both sides in any other order give `mixed`.
    """
    if diffs.empty:
        return NO_PAIR
    nb_better = diffs.loc[diffs["ci_low"] > 0, "m"]
    lr_better = diffs.loc[diffs["ci_high"] < 0, "m"]
    if len(nb_better) and len(lr_better):
        return TWO_REGIMES if nb_better.max() < lr_better.min() else MIXED
    if len(nb_better):
        return NB_BETTER
    if len(lr_better):
        return LR_BETTER
    return NOT_DISTINGUISHABLE


# --------------------------------------------------------------------------- the baseline


def baseline_differences(errors: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Each model's paired difference with the majority-class baseline (model - majority, per
    m, over the same splits), and whether it beats it there: significantly negative, by the
    verdicts' own test (the 95% t interval excludes 0, at each m on its own). Empty when the
    run has no baseline rows (a run made without it)."""
    if MAJORITY not in set(errors["model"]):
        return pd.DataFrame(columns=BASELINE_COLUMNS)
    tables = []
    for model in models:
        if model == MAJORITY:
            continue
        diffs = paired_differences(errors, model, MAJORITY)
        diffs.insert(0, "model", model)
        diffs.insert(1, "baseline", MAJORITY)
        diffs["beats"] = diffs["ci_high"] < 0
        tables.append(diffs)
    if not tables:
        return pd.DataFrame(columns=BASELINE_COLUMNS)
    return pd.concat(tables, ignore_index=True)[BASELINE_COLUMNS]


def beats_from(table: pd.DataFrame) -> dict[str, int | None]:
    """Per model of `baseline_differences`, the smallest m where it beats the baseline (None:
    at no m)."""
    out: dict[str, int | None] = {}
    for model, rows in table.groupby("model", sort=False):
        won = rows.loc[rows["beats"].astype(bool), "m"]
        out[str(model)] = int(won.min()) if len(won) else None
    return out


def with_baseline(verdict_: str, first: str, second: str, beats: dict[str, int | None]) -> str:
    """A pair's verdict read against the baseline: `NO_BETTER` when neither model beats it at
    any m (their differences with each other then lie between two guesses no better than the
    majority class's); else the verdict as it is. Unchanged without baseline rows."""
    if first not in beats or second not in beats:
        return verdict_
    if beats[first] is None and beats[second] is None:
        return NO_BETTER
    return verdict_


# --------------------------------------------------------------------------- panels


def choose_pair(models: list[str]) -> tuple[str, str] | None:
    """(discriminative, generative) to compare: NB vs LR if both ran, else the first generative
    model in config order vs LR; None when there is no such pair."""
    if LR not in models:
        return None
    if NB in models:
        return LR, NB
    gen = [x for x in models if x in GENERATIVE]
    return (LR, gen[0]) if gen else None


def choose_pairs(models: list[str], compare: list | None = None) -> list[tuple[str, str]]:
    """The comparisons as (first, second) pairs, whose differences are second - first: the
    config's `compare` (pairs of models that ran), else the paper's generative-vs-
    discriminative pair when present, else every other model against the first. A baseline
    is in a pair only where `compare` names it: every model is read against it already."""
    if compare:
        return [(x, y) for x, y in compare if x in models and y in models]
    models = [x for x in models if x not in BASELINES]
    pair = choose_pair(models)
    if pair is not None:
        return [(pair[1], pair[0])]
    return [(models[0], other) for other in models[1:]]


def model_curves(errors: pd.DataFrame) -> pd.DataFrame:
    """Mean error and its sem per model and m (from the per-split rows)."""
    g = errors.groupby(["model", "m"])["error"]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    out["sem"] = out["std"] / np.sqrt(out["n"])
    return out


def _model_numbers(
    curves: pd.DataFrame, shapes: pd.DataFrame, fitted: pd.DataFrame, model: str, m_min: int,
    m_max: int,
) -> dict[str, Any]:  # fmt: skip
    c = curves[curves["model"] == model]
    at = dict(zip(c["m"], c["mean"], strict=True))
    ends = {
        f"{model}_err_m_min": at.get(m_min, math.nan),
        f"{model}_err_m_max": at.get(m_max, math.nan),
    }
    if model in BASELINES:  # a reference line: its ends, no fit or shape of its own
        return ends
    f = fitted[fitted["model"] == model].set_index("family")
    pow3 = f.loc[fits.POW3]
    best = f.index[f["best"]]
    return {
        **ends,
        f"{model}_asymptote": pow3["asymptote"],
        f"{model}_asymptote_se": pow3["asymptote_se"],
        f"{model}_fit_ok": bool(pow3["ok"]),
        f"{model}_asymptote_reason": fits.not_identifiable(pow3),
        f"{model}_best_family": best[0] if len(best) else "",
        f"{model}_rises": shape.flags(shapes, model, shape.RISE),
        f"{model}_nonconvex": shape.flags(shapes, model, shape.BEND),
    }


def _diff_at(diffs: pd.DataFrame, which: str) -> dict[str, Any]:
    if diffs.empty:
        return {
            f"diff_{which}": math.nan,
            f"diff_{which}_ci_low": math.nan,
            f"diff_{which}_ci_high": math.nan,
        }
    row = diffs.iloc[0] if which == "m_min" else diffs.iloc[-1]
    return {
        f"diff_{which}": row["mean_diff"],
        f"diff_{which}_ci_low": row["ci_low"],
        f"diff_{which}_ci_high": row["ci_high"],
    }


def _differences_table(errors: pd.DataFrame, diffs: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """The paired differences plus the curves and the sign used by the verdict, for tracing."""
    curves = model_curves(errors).pivot(index="m", columns="model", values="mean")
    out = diffs.copy()
    out.insert(0, "a", a)
    out.insert(1, "b", b)
    out["mean_a"] = out["m"].map(curves[a])
    out["mean_b"] = out["m"].map(curves[b])
    out["significant"] = np.select([out["ci_low"] > 0, out["ci_high"] < 0], [1, -1], 0)
    return out


@dataclass
class PanelAnalysis:
    """One run's analysis: its row of the results table (its first pair's numbers), a row per
    pair (pairs.csv), and the tables that trace them, by the file name they are written to in
    the run's folder (differences.csv only with a pair)."""

    row: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    pairs: list[dict[str, Any]]


def analyse_panel(
    errors: pd.DataFrame, config: dict[str, Any], folder: str, n_boot: int = 1000, seed: int = 0
) -> PanelAnalysis:
    """One run from its per-split errors and its config's keys (`runfiles.read_panel_config`)."""
    found = set(errors["model"].unique())  # once: errors.csv has a row per model, m and split
    present = [x for x in dict.fromkeys(config["models"] + sorted(found)) if x in found]
    m_min, m_max = int(errors["m"].min()), int(errors["m"].max())
    row: dict[str, Any] = dict(
        folder=folder,
        name=config["name"],
        title=config["title"],
        panel=config["panel"],
        n_rows=config["n_rows"],
        dataset=config["dataset"],
        models=";".join(present),
        m_min=m_min,
        m_max=m_max,
    )
    pairs = choose_pairs(present, config.get("compare"))
    against = baseline_differences(errors, present)
    beats = beats_from(against)
    compared, differences = comparisons(errors, pairs, n_boot, seed, beats)
    row.update(_row_numbers(compared[0] if compared else None))
    curves = model_curves(errors)
    learners = curves[curves["model"].isin([x for x in present if x not in BASELINES])]
    shapes = shape.shape_tests(learners)
    fitted = fits.fits_table(learners)
    for model in present:
        row.update(_model_numbers(curves, shapes, fitted, model, m_min, m_max))
    row.update({f"{model}{BEATS}": first for model, first in beats.items()})
    tables = {"shape.csv": shapes, "fits.csv": fitted}
    if differences:
        tables["differences.csv"] = pd.concat(differences, ignore_index=True)
    if not against.empty:
        tables[BASELINE_FILE] = against
    named = [dict(folder=folder, name=config["name"], **c) for c in compared]
    return PanelAnalysis(row, tables, named)


def comparisons(
    errors: pd.DataFrame,
    pairs: list[tuple[str, str]],
    n_boot: int = 1000,
    seed: int = 0,
    beats: dict[str, int | None] | None = None,
) -> tuple[list[dict[str, Any]], list[pd.DataFrame]]:
    """For each (first, second) pair: its numbers (the differences second - first at the
    smallest and largest m, the crossover with its interval, the verdict in the pair's names,
    read against the baseline: `with_baseline`) and its differences table. `beats`: each
    model's `beats_from`, computed here when not given."""
    if beats is None:
        models = list(dict.fromkeys(x for pair in pairs for x in pair))
        beats = beats_from(baseline_differences(errors, models))
    numbers, tables = [], []
    for first, second in pairs:
        diffs = paired_differences(errors, second, first)
        cross = crossover(errors, second, first, n_boot=n_boot, seed=seed)
        numbers.append(
            dict(
                first=first,
                second=second,
                **_cross_cols(cross),
                **_diff_at(diffs, "m_min"),
                **_diff_at(diffs, "m_max"),
                verdict=named_verdict(
                    with_baseline(verdict(diffs), first, second, beats), first, second
                ),
            )
        )
        tables.append(_differences_table(errors, diffs, second, first))
    return numbers, tables


def comparisons_columns() -> list[str]:
    """The columns of `comparisons`'s rows (pairs.csv's, after folder and name)."""
    empty = pd.DataFrame(columns=DIFF_COLUMNS)
    numbers = {**_cross_cols({}), **_diff_at(empty, "m_min"), **_diff_at(empty, "m_max")}
    return ["first", "second", *numbers, "verdict"]


def named_verdict(verdict_: str, first: str, second: str) -> str:
    """A verdict in the pair's own model names (NB: the pair's first model, LR: its second)."""
    names = {NB_BETTER: f"{first} better throughout", LR_BETTER: f"{second} better throughout"}
    return names.get(verdict_, verdict_)


def shown_verdict(verdict_: str, gen_model: Any, disc_model: Any) -> str:
    """A results-table verdict (NB/LR: its pair's first and second model) as a reader sees it:
    in the paper's words when the pair is naive Bayes against logistic regression, else in
    the pair's own model names (`compare: [[logistic_regression, naive_bayes]]`:
    "logistic_regression better throughout", never "NB better throughout"; LDA against LR:
    "lda better throughout", not "NB better throughout" in a run without naive Bayes)."""
    if not (isinstance(gen_model, str) and isinstance(disc_model, str)):
        return str(verdict_)
    if (gen_model, disc_model) == (NB, LR):
        return str(verdict_)
    return named_verdict(str(verdict_), gen_model, disc_model)


def _row_numbers(pair: dict[str, Any] | None) -> dict[str, Any]:
    """The results table's pair columns: disc_model is the pair's second model, gen_model its
    first (the paper's roles), the verdict in NB/LR words."""
    if pair is None:
        empty = pd.DataFrame(columns=DIFF_COLUMNS)
        return dict(
            disc_model=None,
            gen_model=None,
            **_cross_cols({}),
            **_diff_at(empty, "m_min"),
            **_diff_at(empty, "m_max"),
            verdict=NO_PAIR,
        )
    first, second = pair["first"], pair["second"]
    numbers = {k: v for k, v in pair.items() if k not in ("first", "second")}
    paper_words = {named_verdict(v, first, second): v for v in (NB_BETTER, LR_BETTER)}
    numbers["verdict"] = paper_words.get(numbers["verdict"], numbers["verdict"])
    return dict(disc_model=second, gen_model=first, **numbers)


def _cross_cols(cross: dict[str, Any]) -> dict[str, Any]:
    return {
        "m_cross": cross.get("m_cross"),
        "m_cross_interp": cross.get("m_cross_interp"),
        "m_cross_ci_low": cross.get("ci_low"),
        "m_cross_ci_high": cross.get("ci_high"),
        "frac_no_cross": cross.get("frac_no_cross"),
    }


def results_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The per-panel table (analysis.csv), ordered by paper panel then name, the per-model
    columns last."""
    table = pd.DataFrame(rows)
    table["panel"] = table["panel"].astype("Int64")
    table["n_rows"] = table["n_rows"].astype("Int64")
    table["m_cross"] = table["m_cross"].astype("Int64")
    for column in [c for c in table.columns if c.endswith(BEATS)]:
        table[column] = table[column].astype("Int64")
    table = table.sort_values(["panel", "name"], na_position="last", kind="stable")
    fixed = [c for c in table.columns if not _is_model_col(c)]
    per_model = sorted(c for c in table.columns if _is_model_col(c))
    return table[fixed + per_model].reset_index(drop=True)


def _is_model_col(col: str) -> bool:
    return any(col.endswith(s) for s in MODEL_SUFFIXES)
