"""REPORT.md and REPORT.html for a results folder, built from the analysis CSVs.

The report is a list of simple blocks (heading, paragraph, image, table, list) rendered twice,
once as Markdown and once as HTML, so both say exactly the same thing and no Markdown library
is needed. Nothing time-dependent goes in, so a committed report only changes with the data.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from genvdis.analysis import differences, runs
from genvdis.config import resultnames
from genvdis.report import curves
from genvdis.report._format import (
    Block,
    fmt,
    fmt_ci,
    fmt_cross,
    fmt_int,
    get_col,
    is_missing,
    panel_label,
)
from genvdis.report.explorer import write_explorer
from genvdis.report.stability import stability_blocks
from genvdis.store import results

PAIRS = runs.PAIRS_FILE
DOCS = Path(__file__).resolve().parents[2] / "docs" / "analysis.md"
PAPER_QUOTE = (
    "Ng & Jordan (2001) found the two regimes (naive Bayes better at small m, logistic "
    'regression better at large m) "borne out surprisingly well"; where logistic regression '
    "did not catch up, this was observed primarily on particularly small datasets."
)


# --------------------------------------------------------------------------- content


def _gen(row: pd.Series) -> str:
    gen = get_col(row, "gen_model")
    return differences.NB if is_missing(gen) else str(gen)


def _gen_tag(row: pd.Series) -> str:
    return "" if _gen(row) == differences.NB else f" ({_gen(row)})"


def _disc(row: pd.Series) -> str:
    """The pair's second model, whose errors the "LR" columns show beside the pair's
    crossover (logistic regression, unless `compare:` made another pair the first)."""
    disc = get_col(row, "disc_model")
    return differences.LR if is_missing(disc) else str(disc)


def _disc_tag(row: pd.Series) -> str:
    return "" if _disc(row) == differences.LR else f" ({_disc(row)})"


def summary_table(table: pd.DataFrame) -> Block:
    header = [
        "#",
        "panel",
        "n",
        "m range",
        "NB @ m_min",
        "LR @ m_min",
        "NB @ m_max",
        "LR @ m_max",
        "crossover m [95% CI]",
        "NB asymptote",
        "LR asymptote",
        "majority class @ m_max",
        "beats majority from m (NB / LR)",
        "verdict",
    ]
    rows = [_summary_row(r) for _, r in table.iterrows()]
    return Block("table", header=header, rows=rows)


def _summary_row(r: pd.Series) -> list[str]:
    g, tag, d, dtag = _gen(r), _gen_tag(r), _disc(r), _disc_tag(r)
    return [
        panel_label(r),
        str(r["title"]),
        fmt_int(r["n_rows"]),
        f"{fmt_int(r['m_min'])}–{fmt_int(r['m_max'])}",
        fmt(get_col(r, f"{g}_err_m_min")) + tag,
        fmt(get_col(r, f"{d}_err_m_min")) + dtag,
        fmt(get_col(r, f"{g}_err_m_max")) + tag,
        fmt(get_col(r, f"{d}_err_m_max")) + dtag,
        fmt_cross(r),
        curves.asym_cell(r, g) + tag,
        curves.asym_cell(r, d) + dtag,
        fmt(get_col(r, f"{differences.MAJORITY}_err_m_max")),
        f"{_beats(r, g)} / {_beats(r, d)}",
        _verdict(r),
    ]


def _beats(r: pd.Series, model: str) -> str:
    """The smallest m where `model` beats the majority class (`differences.BEATS`): "never",
    or "—" for a run without the baseline."""
    if is_missing(get_col(r, f"{differences.MAJORITY}_err_m_max")):
        return "—"
    first = get_col(r, f"{model}{differences.BEATS}")
    return "never" if is_missing(first) else fmt_int(first)


def _verdict(r: pd.Series) -> str:
    """The row's verdict in the words of its pair (`differences.shown_verdict`)."""
    return differences.shown_verdict(
        r["verdict"], get_col(r, "gen_model"), get_col(r, "disc_model")
    )


def _figure(results_dir: Path, folder: str, name: str) -> Block:
    for stem in dict.fromkeys([name, folder]):
        if (results_dir / folder / f"{stem}.png").exists():
            return Block("img", text=f"{name} learning curves", src=f"{folder}/{stem}.png")
    return Block("p", text="(no figure found)")


def panel_section(results_dir: Path, r: pd.Series) -> list[Block]:
    head = f"Panel {panel_label(r)}: {r['title']}" if not is_missing(r["panel"]) else r["title"]
    blocks = [Block("h2", text=f"{head} (`{r['name']}`)")]
    blocks.append(_figure(results_dir, str(r["folder"]), str(r["name"])))
    blocks.append(Block("p", text=_panel_sentence(r)))
    blocks.append(_model_table(r))
    blocks += curves.fit_table(results_dir, r)
    blocks += curves.note_blocks(results_dir, r)
    blocks += _pairs_table(results_dir, r)
    diff_path = results_dir / str(r["folder"]) / "differences.csv"
    if r["verdict"] != differences.NO_PAIR and diff_path.exists():
        diffs = pd.read_csv(diff_path)
        for _, d in diffs.groupby(["a", "b"], sort=False):
            blocks.append(_diff_table(d))
    return blocks


def _pairs_table(results_dir: Path, r: pd.Series) -> list[Block]:
    """Every pair of a panel that has more than one (pairs.csv), each with its verdict."""
    pairs = runs.read_pairs(results_dir)
    if pairs is None:
        return []
    mine = pairs[pairs["folder"].astype(str) == str(r["folder"])]
    if len(mine) < 2:
        return []
    header = ["first", "second", "second − first @ m_min", "@ m_max", "crossover m [95% CI]"]
    rows = [
        [
            f"`{p['first']}`",
            f"`{p['second']}`",
            fmt(p["diff_m_min"], 4, True),
            fmt(p["diff_m_max"], 4, True),
            fmt_cross(p),
            str(p["verdict"]),
        ]
        for _, p in mine.iterrows()
    ]
    text = f"{len(mine)} pairs compared, differences second − first, traced in `{PAIRS}`:"
    return [Block("p", text=text), Block("table", header=[*header, "verdict"], rows=rows)]


def _panel_sentence(r: pd.Series) -> str:
    n = fmt_int(r["n_rows"])
    if r["verdict"] == differences.NO_PAIR:
        return f"n = {n}. Models: {r['models']}. No generative/discriminative pair: verdict n/a."
    cross = fmt_cross(r)
    no_cross = fmt(get_col(r, "frac_no_cross"), 2)
    return (
        f"n = {n}. Compared: `{r['disc_model']}` − `{r['gen_model']}` (paired over splits). "
        f"Verdict: **{_verdict(r)}**. Crossover m: {cross}; fraction of bootstrap resamples "
        f"without a crossover: {no_cross}. Traced in `{r['folder']}/differences.csv`."
        + _baseline_sentence(r)
    )


def _baseline_sentence(r: pd.Series) -> str:
    """Where each model of the pair beats the majority class, traced in baseline.csv."""
    if is_missing(get_col(r, f"{differences.MAJORITY}_err_m_max")):
        return ""
    parts = []
    for model in (_gen(r), _disc(r)):
        first = _beats(r, model)
        where = "at no m" if first == "never" else f"from m = {first} (first m where it does)"
        parts.append(f"`{model}` beats it {where}")
    return (
        f" Against the majority class: {'; '.join(parts)}. Traced in "
        f"`{r['folder']}/{differences.BASELINE_FILE}`."
    )


def _model_table(r: pd.Series) -> Block:
    header = [
        "model",
        f"error @ m={fmt_int(r['m_min'])}",
        f"error @ m={fmt_int(r['m_max'])}",
        "asymptote ± se (power-law fit)",
        "best family (held-out)",
        "shape (significant)",
        "beats majority class from m",
    ]
    rows = [_model_row(r, m) for m in str(r["models"]).split(";") if m]
    return Block("table", header=header, rows=rows)


def _model_row(r: pd.Series, m: str) -> list[str]:
    """A model's line of a panel's table; the baseline's is its errors alone."""
    ends = [m, fmt(get_col(r, f"{m}_err_m_min")), fmt(get_col(r, f"{m}_err_m_max"))]
    if m in differences.BASELINES:
        return [*ends, "—", "—", "(baseline)", "—"]
    return [
        *ends,
        curves.asym_cell(r, m, why=True),
        str(get_col(r, f"{m}_best_family") or "—"),
        curves.shape_cell(r, m) or "none",
        _beats(r, m),
    ]


def _diff_table(d: pd.DataFrame) -> Block:
    a, b = str(d["a"].iloc[0]), str(d["b"].iloc[0])
    header = ["m", f"{b}", f"{a}", f"{a} − {b}", "95% CI", "splits", "significant"]
    signs = {1: f"{b} better", -1: f"{a} better", 0: ""}
    rows = [
        [
            fmt_int(x.m),
            fmt(x.mean_b),
            fmt(x.mean_a),
            fmt(x.mean_diff, 4, True),
            fmt_ci(x.ci_low, x.ci_high, 4, True),
            fmt_int(x.n_splits),
            signs[int(x.significant)],
        ]
        for x in d.itertuples()
    ]
    return Block("table", header=header, rows=rows)


def comparison(table: pd.DataFrame) -> list[Block]:
    """Verdict counts against the paper's claim, including its small-dataset caveat."""
    blocks = [Block("h2", text="Comparison with the paper"), Block("p", text=PAPER_QUOTE)]
    # a panel whose first pair is no generative/discriminative one says nothing of the claim
    gen, disc = (
        table["gen_model"].isin(differences.GENERATIVE),
        table["disc_model"].isin(differences.DISCRIMINATIVE),
    )
    table = table[(gen & disc) | (table["verdict"] == differences.NO_PAIR)]
    paired = table[table["verdict"] != differences.NO_PAIR]
    n_two = _count(paired, differences.TWO_REGIMES)
    text = (
        f"Two regimes in {n_two} of {_count_of(len(paired), 'panel')} with a "
        "generative/discriminative pair."
    )
    blocks.append(Block("p", text=text))
    blocks.append(_verdict_counts(table))
    blocks.append(Block("ul", rows=[[x] for x in _agreement_lines(paired)]))
    present = {int(p) for p in table["panel"].dropna()}
    missing = sorted(set(range(1, 16)) - present)
    if missing and present:  # a folder of the figure's panels lacks some; else it holds none
        blocks.append(
            Block(
                "p", text="Paper panels not in these results: " + ", ".join(map(str, missing)) + "."
            )
        )
    return blocks


def _count(t: pd.DataFrame, v: str) -> int:
    return int((t["verdict"] == v).sum())


def _names(t: pd.DataFrame) -> str:
    if t.empty:
        return "none"
    return "; ".join(
        f"{panel_label(r)} {r['title']} (n={fmt_int(r['n_rows'])})" for _, r in t.iterrows()
    )


def _median_n(t: pd.DataFrame) -> str:
    n = pd.to_numeric(t["n_rows"], errors="coerce").dropna()
    return fmt_int(n.median()) if len(n) else "—"


def _verdict_counts(table: pd.DataFrame) -> Block:
    order = [
        differences.TWO_REGIMES,
        differences.NB_BETTER,
        differences.LR_BETTER,
        differences.MIXED,
        differences.NOT_DISTINGUISHABLE,
        differences.NO_BETTER,
        differences.NO_PAIR,
    ]
    rows = []
    for v in order:
        t = table[table["verdict"] == v]
        if len(t):
            rows.append([v, str(len(t)), _median_n(t), _names(t)])
    return Block("table", header=["verdict", "panels", "median n", "which"], rows=rows)


def _agreement_lines(paired: pd.DataFrame) -> list[str]:
    nb_small = paired[paired["diff_m_min_ci_low"] > 0]
    lr_large = paired[paired["diff_m_max_ci_high"] < 0]
    nb_only = paired[paired["verdict"] == differences.NB_BETTER]
    no_better = paired[paired["verdict"] == differences.NO_BETTER]
    return [
        f"Agree with two regimes: {_names(paired[paired['verdict'] == differences.TWO_REGIMES])}.",
        f"NB significantly better at the smallest m: {_names(nb_small)}.",
        f"LR significantly better at the largest m: {_names(lr_large)}.",
        f"LR never significantly better (median n {_median_n(nb_only)}, against "
        f"{_median_n(paired)} over all paired panels): {_names(nb_only)}.",
        "Neither model significantly better than the majority class at any m: "
        f"{_names(no_better)}.",
    ]


def docs_reference(results_dir: Path) -> str:
    """docs/analysis.md as a link where the docs are beside this genvdis (a checkout: the
    committed reports link the repo's file); an installed wheel has no docs, and there is no
    stable address to link instead, so its reports name the file without a link."""
    if not DOCS.exists():
        return "docs/analysis.md in genvdis's source repository (not installed with the package)"
    return f"[docs/analysis.md]({os.path.relpath(DOCS, results_dir.resolve())})"


def method(results_dir: Path) -> list[Block]:
    text = (
        "Per m, the logistic-regression minus naive-Bayes error is averaged over the same "
        "train/test splits (paired), with a t-based 95% interval; a difference is significant "
        "when that interval excludes 0. The crossover is the smallest grid m from which the "
        "mean difference stays negative, interpolated in log m, with a bootstrap interval over "
        "splits. Asymptotes come from a power-law fit err(m) = a + b m^-c and are printed only "
        "when the fit identifies them. These intervals are not corrected for multiple "
        "comparisons across m; the curve-shape tests below are (Holm). Every run also scores "
        "the majority class (the training set's most frequent class) on the same splits: a "
        "model beats it at m when its paired difference with it is significantly negative, "
        "by the same test; a pair neither of whose models beats it at any m is "
        f'"{differences.NO_BETTER}". '
        f"Details and limits: {docs_reference(results_dir)}."
    )
    return [Block("h2", text="Method"), Block("p", text=text)]


def _count_of(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _what_this_is(table: pd.DataFrame) -> str:
    """The report's first sentence: a reproduction of Figure 1 only where the runs are its
    panels (a `panel:` number); a user's own runs are the same protocol, not the figure."""
    n = len(table)
    paper = int(pd.to_numeric(table["panel"], errors="coerce").between(1, 15).sum())
    if paper == n:
        return f"Reproduction of Ng & Jordan (2001), Figure 1: {_count_of(n, 'panel')}."
    if paper == 0:
        return (
            f"{_count_of(n, 'panel')} run with the protocol of Ng & Jordan (2001), Figure 1 "
            f"({'it is' if n == 1 else 'they are'} not among that figure's panels)."
        )
    return (
        f"{_count_of(n, 'panel')}: {paper} of Ng & Jordan (2001), Figure 1, reproduced, and "
        f"{n - paper} more run with its protocol."
    )


def build_blocks(results_dir: Path, table: pd.DataFrame) -> list[Block]:
    """The whole report, in order, as renderer-independent blocks."""
    blocks = [
        Block("h1", text="Naive Bayes vs logistic regression: learning curves"),
        Block(
            "p",
            text=f"{_what_this_is(table)} "
            "Error is the mean test error over random train/test splits at each "
            "training-set size m; NB columns show the generative model of the pair "
            "(named in brackets when it is not naive Bayes).",
        ),
    ]
    if (results_dir / "figure1.png").exists():
        blocks.append(Block("img", text="Figure 1 reproduction", src="figure1.png"))
    blocks += [Block("h2", text="All panels"), summary_table(table)]
    blocks += method(results_dir)
    blocks += curves.shape_section(results_dir, table)
    blocks += curves.fit_section(table)
    blocks += stability_blocks(results_dir)  # after `genvdis sweep` (sensitivity.csv)
    for _, r in table.iterrows():
        blocks += panel_section(results_dir, r)
    blocks += comparison(table)
    return blocks


# --------------------------------------------------------------------------- rendering


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _one_line(text: str) -> str:
    """A heading's or list item's text on one line: a title with line breaks ('a\\n\\n# b')
    would otherwise end the heading and start Markdown of its own (a heading, a list)."""
    return re.sub(r"\s*[\r\n]+\s*", " ", text)


def to_markdown(blocks: list[Block]) -> str:
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append("#" * int(b.kind[1]) + " " + _one_line(b.text))
        elif b.kind == "p":
            out.append(b.text)
        elif b.kind == "img":
            out.append(f"![{_one_line(b.text)}]({b.src})")
        elif b.kind == "ul":
            out.append("\n".join(f"- {_one_line(r[0])}" for r in b.rows))
        elif b.kind == "table":
            lines = [
                "| " + " | ".join(map(_md_cell, b.header)) + " |",
                "|" + "---|" * len(b.header),
            ]
            lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in b.rows]
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _link(match: re.Match) -> str:
    """A Markdown link as an <a>, if its target is a relative path or a web address; else its
    text as it is. A title (or any text a config gives) written `[x](javascript:...)` would
    otherwise be a live script link in REPORT.html (browsers drop tabs, newlines and leading
    spaces from an address before reading its scheme)."""
    target = re.sub(r"[\x00-\x20\x7f]", "", html.unescape(match[2]))
    scheme = _SCHEME.match(target)
    if scheme and scheme[0].lower() not in ("http:", "https:"):
        return match[0]
    return f'<a href="{html.escape(match[2])}">{match[1]}</a>'


def inline_html(text: str) -> str:
    """Escape, then the three inline forms the report uses: links, `code`, **bold**."""
    s = html.escape(text, quote=False)
    s = _LINK.sub(_link, s)
    s = _CODE.sub(r"<code>\1</code>", s)
    return _BOLD.sub(r"<strong>\1</strong>", s)


def _html_table(b: Block) -> str:
    head = "".join(f"<th>{inline_html(h)}</th>" for h in b.header)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{inline_html(c)}</td>" for c in r) + "</tr>" for r in b.rows
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


_CSS = (
    "body{font-family:sans-serif;max-width:75em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
    "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left}"
    "th{background:#f3f3f3}img{max-width:100%}"
)


def to_html(blocks: list[Block], title: str) -> str:
    parts = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            parts.append(f"<{b.kind}>{inline_html(b.text)}</{b.kind}>")
        elif b.kind == "p":
            parts.append(f"<p>{inline_html(b.text)}</p>")
        elif b.kind == "img":
            src, alt = html.escape(b.src), html.escape(b.text)
            parts.append(f'<p><img src="{src}" alt="{alt}"></p>')
        elif b.kind == "ul":
            parts.append(
                "<ul>\n" + "\n".join(f"<li>{inline_html(r[0])}</li>" for r in b.rows) + "\n</ul>"
            )
        elif b.kind == "table":
            parts.append(_html_table(b))
    head = (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
    )
    return head + "\n".join(parts) + "\n</body>\n</html>\n"


def write_reports(
    folders: list[Path],
    reanalyse: bool = True,
    n_boot: int = 1000,
    jobs: int = 1,
    apart: Sequence[Path] = (),
) -> list[tuple[Path, Path]]:
    """Each folder's REPORT.md and REPORT.html, and (md, html) paths in `folders`' order. By
    default every folder's runs are analysed again first (in one pool, on up to `jobs`
    processes), so the report, analysis.csv and each differences.csv always agree; then each
    folder's report and explorer are written, so an explorer that shows another folder's runs
    (results/ shows results/examples/) finds their analysis whatever the order of `folders`.
    `apart`: study folders whose report is still to be written, which no other folder's
    explorer shows (`explorer.find_explorer_runs`)."""
    folders = [Path(f) for f in folders]
    stale = [f for f in folders if reanalyse or not (f / "analysis.csv").exists()]
    if stale:
        runs.analyse_folders(stale, n_boot=n_boot, jobs=jobs)
    written = []
    for results_dir in folders:
        table = runs.read_analysis(results_dir)
        blocks = build_blocks(results_dir, table)
        md, page = results_dir / resultnames.REPORT_MD, results_dir / resultnames.REPORT_HTML
        with results.writing(results_dir, "the report", results.AGAIN):
            results.atomic_write_text(md, to_markdown(blocks))
            results.atomic_write_text(page, to_html(blocks, "genvdis report"))
            write_explorer(results_dir, apart=apart)
        written.append((md, page))
    return written
