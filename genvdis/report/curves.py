"""The report's blocks about curve shape, fitted families and dataset caveats.

Built from each panel's shape.csv and fits.csv (written by genvdis.analysis.differences) so the
report
says exactly what those files hold; docs/analysis.md explains the tests and the fits.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from genvdis.analysis import fits, shape
from genvdis.report._format import Block, fmt, fmt_asym, fmt_int, get_col, is_missing, panel_label
from genvdis.store import runfiles

NOT_IDENTIFIABLE = "not identifiable"
RAW_ALPHA = 0.05  # a step up with a raw p below this is listed as a candidate

LIVER_NOTE = (
    "**Which label?** The class of this panel is the 7th field of bupa.data, `selector`. "
    'bupa.names describes it as a "field used to split data into two sets" and says that '
    '"drinks>5 is some sort of a selector on this database"; it is not a diagnosis. '
    'McDermott & Forsyth (2016, "Diagnosing a disorder in a classification benchmark", '
    "Pattern Recognition Letters 73) show that it is a train/test selector, not a diagnosis, "
    "and recommend the dichotomised 6th field, drinks, as the class instead (Turney 1995 "
    "used drinks < 3 vs ≥ 3). Because the paper's panel used `selector`, so does this one, "
    "but its curves say nothing about liver disease, and a label that is a data-split marker "
    "need not follow the generative model naive Bayes assumes. The majority class alone has "
    "error 145/345 = 0.420."
)
# dataset -> (the label column a note is about, the note): a run with another target (liver's
# drinks, say) gets no note, which would name the wrong label and baseline
DATASET_NOTES = {"liver": ("selector", LIVER_NOTE)}


def _read(results_dir: Path, folder: str, name: str) -> pd.DataFrame | None:
    path = results_dir / folder / name
    return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.exists() else None


def asym_cell(r: pd.Series, model: str, why: bool = False) -> str:
    """The power-law asymptote ± se, or "not identifiable" (with the reason when `why`)."""
    reason = get_col(r, f"{model}_asymptote_reason")
    if not is_missing(reason) and str(reason):
        return str(reason) if why else NOT_IDENTIFIABLE
    return fmt_asym(get_col(r, f"{model}_asymptote"), get_col(r, f"{model}_asymptote_se"))


def shape_cell(r: pd.Series, model: str) -> str:
    """The significant shape findings of one curve, "" when there are none."""
    parts = []
    rises, bends = get_col(r, f"{model}_rises"), get_col(r, f"{model}_nonconvex")
    if not is_missing(rises) and str(rises):
        parts.append(f"rises {rises}")
    if not is_missing(bends) and str(bends):
        parts.append(f"non-convex at m = {str(bends).replace(';', ', ')}")
    return "; ".join(parts)


def fit_table(results_dir: Path, r: pd.Series) -> list[Block]:
    """Each family's asymptote and held-out RMSE per model, the winner marked."""
    t = _read(results_dir, str(r["folder"]), "fits.csv")
    if t is None or t.empty:
        return []
    header = ["model", "family", "asymptote ± se", "held-out RMSE", "chosen"]
    rows = [
        [
            str(x.model),
            str(x.family),
            fmt_asym(x.asymptote, x.asymptote_se)
            if x.identifiable
            else f"{NOT_IDENTIFIABLE} ({x.reason or 'no fit'})",
            fmt(x.holdout_rmse, 4),
            "✓" if x.best else "",
        ]
        for x in t.itertuples()
    ]
    return [Block("table", header=header, rows=rows)]


def dataset_note(r: pd.Series, target: object = None) -> list[Block]:
    """A caveat about the dataset itself (liver: which field is the label), when the run's
    target (config.yaml's `target`) uses the label column it is about."""
    column, note = DATASET_NOTES.get(str(get_col(r, "dataset") or ""), (None, None))
    chosen = target.get("column") if isinstance(target, dict) else None
    return [Block("p", text=note)] if note and chosen in (None, column) else []


# --------------------------------------------------------------------------- report sections


def shape_section(results_dir: Path, table: pd.DataFrame) -> list[Block]:
    """Every curve with a significant finding or a nominally significant step up."""
    rows = []
    for _, r in table.iterrows():
        t = _read(results_dir, str(r["folder"]), "shape.csv")
        if t is not None and not t.empty:
            tested = set(t["model"])  # a baseline has no shape tests: a reference line
            rows += [_shape_row(r, t, m) for m in str(r["models"]).split(";") if m in tested]
    rows = [x for x in rows if x is not None]
    text = (
        "Each curve is tested for a rise (error at a larger m significantly above the error "
        "at a smaller m, every pair of grid m) and for non-convexity (the slope on the m scale "
        "significantly steeper after a grid point than before it), with one-sided Welch tests "
        "on the independent per-m means, Holm-corrected over all tests of a panel at 0.05. "
        "Listed: curves with a significant finding, or a step up whose own p is below 0.05. "
        "All tests are in each panel's `shape.csv`."
    )
    blocks = [Block("h2", text="Curve shape"), Block("p", text=text)]
    if not rows:
        return blocks + [Block("p", text="No curve rises or bends, even nominally.")]
    header = ["#", "panel", "model", "largest step up", "significant rise", "non-convex at",
              "rise is"]  # fmt: skip
    return blocks + [Block("table", header=header, rows=rows)]


def _shape_row(r: pd.Series, t: pd.DataFrame, model: str) -> list[str] | None:
    t = t[t["model"] == model]
    steps = _consecutive_rises(t)
    sig_rise = t[(t["test"] == shape.RISE) & t["significant"]]
    bends = t[(t["test"] == shape.BEND) & t["significant"]]
    candidate = not steps.empty and steps["p"].min() < RAW_ALPHA
    if sig_rise.empty and bends.empty and not candidate:
        return None
    top = steps.sort_values("estimate", ascending=False, kind="stable").head(1)
    return [
        panel_label(r),
        str(r["title"]),
        model,
        "; ".join(_step(x) for _, x in top.iterrows()) or "none",
        _sig_rise(sig_rise),
        "; ".join(f"{int(x.m_at)} (p_holm {x.p_holm:.2g})" for x in bends.itertuples()) or "none",
        "real" if not sig_rise.empty else ("noise" if candidate else "no rise"),
    ]


def _consecutive_rises(t: pd.DataFrame) -> pd.DataFrame:
    """Rise tests between neighbouring grid m whose mean goes up."""
    rise = t[t["test"] == shape.RISE]
    ms = sorted(set(rise["m_from"]) | set(rise["m_to"]))
    nxt = dict(zip(ms[:-1], ms[1:], strict=True))
    step = rise[[nxt.get(a) == b for a, b in zip(rise["m_from"], rise["m_to"], strict=True)]]
    return step[step["estimate"] > 0]


def _step(x: pd.Series) -> str:
    return (
        f"m = {x['m_from']}→{x['m_to']}: {fmt(x['estimate'], 4, True)} "
        f"(p {x['p']:.2g}, p_holm {x['p_holm']:.2g})"
    )


def _sig_rise(sig: pd.DataFrame) -> str:
    if sig.empty:
        return "none"
    top = sig.sort_values(["p", "m_from", "m_to"], kind="stable").iloc[0]
    return (
        f"{len(sig)} pair(s) of m, from m = {int(sig['m_from'].min())} on; strongest {_step(top)}"
    )


def fit_section(table: pd.DataFrame) -> list[Block]:
    """Which family extrapolates best, and which asymptotes cannot be read."""
    wins: dict[str, list[str]] = {name: [] for name in fits.FAMILIES}
    unread = []
    for _, r in table.iterrows():
        for m in (x for x in str(r["models"]).split(";") if x):
            best = get_col(r, f"{m}_best_family")
            if not is_missing(best) and str(best) in wins:
                wins[str(best)].append(f"{r['name']} {m}")
            reason = get_col(r, f"{m}_asymptote_reason")
            if not is_missing(reason) and str(reason):
                unread.append(f"{r['name']} {m}: {reason}")
    text = (
        "Three families are fitted to each curve: the power law a + b m^-c (`pow3`), the "
        "exponential a + b exp(-c m / m_max) (`exp3`) and the 4-parameter MMF (`mmf4`). Each "
        f"is refitted without the {fits.N_HOLDOUT} largest m and scored by its RMSE there; the "
        "lowest wins. An asymptote is printed only when its fit is identifiable: no parameter "
        "on a bound and a 95% interval narrower than the curve's own range."
    )
    rows = [[name, str(len(w)), ", ".join(w) or "none"] for name, w in wins.items()]
    return [
        Block("h2", text="Fitted families and asymptotes"),
        Block("p", text=text),
        Block("table", header=["family", "curves won", "which"], rows=rows),
        Block("p", text=f"Power-law asymptotes not identifiable ({len(unread)}):"),
        Block("ul", rows=[[x] for x in unread] or [["none"]]),
    ]


def _significance(diffs: pd.DataFrame) -> str:
    """How many grid m the LR − NB difference is significantly negative at (for a note)."""
    n_lr = int((diffs["significant"] == -1).sum())
    first = diffs.loc[diffs["significant"] == -1, "m"]
    start = f", from m = {fmt_int(first.min())}" if len(first) else ""
    return f"Here logistic regression is significantly better at {n_lr} of {len(diffs)} m{start}."


def note_blocks(results_dir: Path, r: pd.Series) -> list[Block]:
    """The dataset note with this panel's significance count appended."""
    config = runfiles.read_run_config(results_dir / str(r["folder"]))
    blocks = dataset_note(r, config.get("target"))
    diffs = _read(results_dir, str(r["folder"]), "differences.csv")
    if blocks and diffs is not None and not diffs.empty:
        blocks[0] = Block("p", text=blocks[0].text + " " + _significance(diffs))
    return blocks
