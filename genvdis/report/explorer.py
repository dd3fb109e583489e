"""results/explorer.html: every run's learning curves on one interactive, self-contained page.

The page is built from the committed files alone (summary.csv, differences.csv, config.yaml,
analysis.csv; never the per-split errors.csv), so a fresh clone can open it. Runs on the same
data (dataset, attributes, target) form one panel: the paper panel is its base and the others
(another rule for separable sets, a third model, a sweep's variants) are variants to toggle.
The drawing code is genvdis/explorer.js (plain SVG, no library) and is inlined with the data,
so the file works offline from file:// and nothing is fetched at view time. Same inputs give
the same bytes: no timestamps, and numbers rounded to 6 significant digits.
"""

from __future__ import annotations

import errno
import functools
import http.server
import json
import math
import os
import signal
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from genvdis.analysis import differences as an
from genvdis.analysis.runs import check_analysis, read_analysis
from genvdis.config import resultnames
from genvdis.errors import UserError
from genvdis.report.styles import BASELINES, SHORT, STYLES, TABLEAU, separable_span
from genvdis.store import results
from genvdis.store.runfiles import read_run_config, read_summary

PAGE = resultnames.EXPLORER
HOST = "127.0.0.1"
# config keys that name, place or fingerprint a run rather than change its numbers
NOT_SETTINGS = {
    "name", "title", "panel", "fingerprint", "genvdis_version", "data_checksums", "data_source",
    "n_rows", "class_counts", "features", "splits_per_block", "block_size",
}  # fmt: skip
DASHES = {"-": "", "--": "7 4", ":": "2 3", "-.": "7 3 2 3"}
OTHER_COLOURS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]


def json_number(x: Any) -> float | None:
    """A JSON number with 6 significant digits (short, and the same bytes on every machine),
    None for missing (None, NA, NaN, infinite): every number an explorer page inlines."""
    if x is None or x is pd.NA or not math.isfinite(float(x)):
        return None
    return float(f"{float(x):.6g}")


def _nums(values) -> list[float | None]:
    return [json_number(x) for x in values]


def _ints(values) -> list[int]:
    return [int(x) for x in values]


# --------------------------------------------------------------------------- runs


# what a study's report leaves in its folder (`genvdis study`, report.study): such a folder has
# pages of its own (its explorer.html and study-explorer.html)
STUDY_PAGES = (
    resultnames.STUDY_CSV,
    resultnames.STUDY_MD,
    resultnames.STUDY_HTML,
    resultnames.STUDY_EXPLORER,
)


def has_own_pages(folder: Path) -> bool:
    """Whether `folder` holds a study's report: its runs are that study's explorer's."""
    return any((folder / name).is_file() for name in STUDY_PAGES)


def find_explorer_runs(results_dir: Path, apart: Sequence[Path] = ()) -> list[tuple[Path, dict]]:
    """Runs (folders with summary.csv) at any depth, e.g. results/examples/* and a sweep's
    results/<panel>/variants/*, with their config.yaml; not the theory experiments' synthetic
    runs, which have their own figures, nor those in a folder below `results_dir` that has
    pages of its own: a study's (`has_own_pages`, e.g. results/study/), or one of `apart`
    (a study's folder whose report is still to be written)."""
    results_dir = Path(results_dir)
    apart_ids = {_folder_id(Path(folder)) for folder in apart} - {None}

    def shown(folder: Path) -> bool:
        return not has_own_pages(folder) and not (apart_ids and _folder_id(folder) in apart_ids)

    found = []
    for folder, subfolders, files in os.walk(results_dir):
        here = Path(folder)
        subfolders[:] = [name for name in subfolders if shown(here / name)]
        if "summary.csv" in files:
            found.append(here / "summary.csv")
    runs = []
    for summary in sorted(found):
        config = read_run_config(summary.parent) or {"name": summary.parent.name}
        dataset = config.get("dataset")
        if not (isinstance(dataset, dict) and "synthetic" in dataset):
            runs.append((summary.parent, config))
    return runs


def _folder_id(folder: Path) -> tuple[int, int] | None:
    """The folder itself (device and inode), whatever path names it; None if it is not one."""
    try:
        stat = folder.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def _data_key(config: dict, folder: str) -> str:
    """Runs with equal keys read the same rows and predict the same target: one panel. A run
    without a config (so no dataset) is a panel of its own. The files' checksums count: two
    configs of `dataset: {path: data.csv}` in two folders read two tables."""
    if config.get("dataset") is None:
        return json.dumps(["folder", folder])
    parts = [config.get(k) for k in ("dataset", "attributes", "target", "data_checksums")]
    return json.dumps(parts, sort_keys=True, default=str)


def _base_order(item: tuple[str, dict]) -> tuple:
    """The base of a panel: the paper panel if there is one, else the shallowest folder."""
    folder, config = item
    panel = config.get("panel")
    return (panel is None, panel or 0, folder.count("/"), folder)


def _models(config: dict) -> dict[str, dict]:
    """A config's models by name, with their parameters (a bare name has none)."""
    out = {}
    for model in config.get("models") or []:
        spec = model if isinstance(model, dict) else {"name": model}
        out[str(spec.get("name"))] = {k: v for k, v in spec.items() if k != "name"}
    return out


def _flat_settings(config: dict) -> dict[str, str]:
    """Dotted keys -> values; models keyed by name, so their order does not count."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}.{key}", sub)
        else:
            out[prefix] = json.dumps(value, default=str)

    for key, value in config.items():
        if key == "models":
            for name, params in _models(config).items():
                walk(name, params)
        elif key not in NOT_SETTINGS:
            walk(key, value)
    return out


def settings_diff(base: dict, other: dict) -> str:
    """What `other` changes from `base`, e.g. 'logistic_regression.separable: "ridge"'."""
    a, b = _flat_settings(base), _flat_settings(other)
    base_models, other_models = set(_models(base)), set(_models(other))
    parts = [f"+{m}" for m in sorted(other_models - base_models)]
    parts += [f"-{m}" for m in sorted(base_models - other_models)]
    for key in sorted(a.keys() | b.keys()):
        if key.split(".")[0] in base_models ^ other_models or a.get(key) == b.get(key):
            continue
        parts.append(f"{key}: {b.get(key, '(unset)')}")
    return "; ".join(parts) or "same settings"


# --------------------------------------------------------------------------- one run


def _curves(summary: pd.DataFrame) -> list[dict[str, Any]]:
    sep = summary[summary["model"] == an.LR].set_index("m")["frac_separable"]
    curves = []
    for model, c in summary.groupby("model", sort=False):
        curves.append(
            dict(
                model=str(model),
                m=_ints(c["m"]),
                mean=_nums(c["mean"]),
                lo=_nums(c["ci_low"]),
                hi=_nums(c["ci_high"]),
                n=_ints(c["n_splits"]),
                sep=_nums(c["m"].map(sep)) if len(sep) else None,
            )
        )
    return curves


def _differences(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "differences.csv"
    if not path.is_file():
        return None
    d = pd.read_csv(path)
    if d.empty:
        return None
    # differences.csv stacks every pair of the run: the page draws the first (the verdict's)
    d = d[(d["a"] == d["a"].iloc[0]) & (d["b"] == d["b"].iloc[0])]
    return dict(
        a=str(d["a"].iloc[0]),
        b=str(d["b"].iloc[0]),
        m=_ints(d["m"]),
        mean=_nums(d["mean_diff"]),
        lo=_nums(d["ci_low"]),
        hi=_nums(d["ci_high"]),
        n=_ints(d["n_splits"]),
    )


def _analysis_rows(folder: Path) -> dict[str, dict[str, Any]]:
    """analysis.csv beside a run (results/analysis.csv for results/<name>), by run folder."""
    if not (folder / resultnames.ANALYSIS).is_file():
        return {}
    table = read_analysis(folder)
    return {str(r["folder"]): r.to_dict() for _, r in table.iterrows()}


def _verdict(row: dict[str, Any] | None) -> dict[str, Any]:
    """The run's verdict and crossover with its interval, from its row of analysis.csv."""
    if row is None:
        return dict(verdict=None, crossover=None)
    cross = None
    if json_number(row.get("m_cross_interp")) is not None:
        cross = dict(
            m=json_number(row["m_cross_interp"]),
            lo=json_number(row.get("m_cross_ci_low")),
            hi=json_number(row.get("m_cross_ci_high")),
        )
    verdict = an.shown_verdict(row["verdict"], row.get("gen_model"), row.get("disc_model"))
    return dict(verdict=verdict, crossover=cross)


def _run_data(
    results_dir: Path, run_dir: Path, config: dict, base: dict, analysed: dict | None
) -> dict[str, Any]:
    """Everything the page shows of one run (`analysed`: its row of analysis.csv, if any)."""
    summary = read_summary(run_dir)  # checked: a table genvdis wrote, the bytes its manifest lists
    # a nested run was analysed by some earlier report; results_dir's own by this one, which a
    # rerun that committed while the report worked makes stale (the curves would be one run's,
    # the differences and verdict another's)
    check_analysis(run_dir, summary, analysed)
    folder = run_dir.relative_to(results_dir).as_posix()
    if folder == ".":
        folder = run_dir.name
    out = dict(
        id=folder,
        label=str(config.get("title") or config.get("name") or folder),
        settings="" if config is base else settings_diff(base, config),
        splits=config.get("splits"),
        curves=_curves(summary),
        separable=separable_span(summary),
        diff=_differences(run_dir),
    )
    out.update(_verdict(analysed))
    return out


# --------------------------------------------------------------------------- the page's data


def collect(results_dir: Path, apart: Sequence[Path] = ()) -> dict[str, Any]:
    """Panels in paper order (then the other runs by folder), each with its runs
    (`find_explorer_runs`: `apart`, folders below with pages of their own)."""
    results_dir = Path(results_dir)
    groups: dict[str, list[tuple[str, dict, Path]]] = {}
    for run_dir, config in find_explorer_runs(results_dir, apart):
        folder = run_dir.relative_to(results_dir).as_posix()
        groups.setdefault(_data_key(config, folder), []).append((folder, config, run_dir))
    analyses: dict[Path, dict] = {}
    panels = []
    for members in groups.values():
        members.sort(key=lambda x: _base_order(x[:2]))
        base = members[0][1]
        runs = []
        for _, config, run_dir in members:
            if run_dir.parent not in analyses:
                analyses[run_dir.parent] = _analysis_rows(run_dir.parent)
            row = analyses[run_dir.parent].get(run_dir.name)
            runs.append(_run_data(results_dir, run_dir, config, base, row))
        panels.append(
            dict(
                id=runs[0]["id"],
                title=runs[0]["label"],
                panel=base.get("panel"),
                n_rows=base.get("n_rows"),
                runs=runs,
            )
        )
    panels.sort(key=lambda p: (p["panel"] is None, p["panel"] or 0, p["id"]))
    return dict(panels=panels, models=_model_styles(panels))


def _model_styles(panels: list[dict]) -> list[dict[str, str]]:
    """Every model on the page with styles.STYLES' colour, dash and label, and its short label
    (styles.SHORT: the page's differences name models by it); models it does not know get
    dash-dots in colours of their own, and their name. A baseline (the majority class) is
    marked: the page draws it as a thin line under the others, without a band."""
    names = [c["model"] for p in panels for r in p["runs"] for c in r["curves"]]
    others = iter(OTHER_COLOURS * len(names))
    out = []
    for name in dict.fromkeys(names):
        style = STYLES.get(name) or {"linestyle": "-.", "color": next(others), "label": name}
        out.append(
            dict(
                name=name,
                label=style["label"],
                short=SHORT.get(name, name),
                color=TABLEAU[style["color"]],
                dash=DASHES[style["linestyle"]],
                baseline=name in BASELINES,
            )
        )
    return out


# --------------------------------------------------------------------------- the page


def _asset(name: str) -> str:
    return resources.files("genvdis.report").joinpath(name).read_text(encoding="utf-8")


def _script_safe(text: str) -> str:
    """Inline text that cannot close its <script> or <style> element early."""
    return text.replace("</", "<\\/")


def inline_page(stem: str, data: dict[str, Any], **fields: Any) -> str:
    """A page shipped beside this module as `<stem>`.html, .css and .js, whole: its CSS, its
    data (JSON) and its script inline, so it works from file://; `fields` fill the rest of
    the template."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _asset(f"{stem}.html").format(
        css=_asset(f"{stem}.css"),
        data=_script_safe(payload),
        script=_script_safe(_asset(f"{stem}.js")),
        **fields,
    )


def build_page(data: dict[str, Any]) -> str:
    """The whole page: CSS, data (JSON) and script inline."""
    return inline_page("explorer", data, panels=len(data["panels"]))


def page_path(results_dir: Path) -> Path:
    return Path(results_dir) / PAGE


def write_explorer(results_dir: Path, path: Path | None = None, apart: Sequence[Path] = ()) -> Path:
    """Write the explorer for `results_dir` (default `<results_dir>/explorer.html`); `apart`:
    folders below it whose runs have pages of their own (`find_explorer_runs`)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise UserError(f"results folder not found: {results_dir}")
    path = Path(path) if path is not None else page_path(results_dir)
    results.atomic_write_text(path, build_page(collect(results_dir, apart)))
    return path


# --------------------------------------------------------------------------- --serve


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Files of one folder, without a log line per request on the terminal."""

    def log_message(self, *args: Any) -> None:
        pass


def make_server(directory: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """An HTTP server for `directory` on 127.0.0.1 (port 0: any free port), not yet serving."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, not {port}")
    handler = functools.partial(_QuietHandler, directory=str(directory))
    try:
        return http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as error:
        if error.errno in (errno.EADDRINUSE, errno.EACCES):
            reason = "is in use" if error.errno == errno.EADDRINUSE else "needs privileges"
            raise UserError(
                f"--port: {port} {reason} on {HOST}; choose another, or 0 for any free port"
            ) from None
        raise


def page_url(server: http.server.HTTPServer) -> str:
    return f"http://{HOST}:{server.server_address[1]}/{PAGE}"


def serve(server: http.server.HTTPServer, say: Callable[[str], Any] = print) -> None:
    """Serve until Ctrl-C, after saying the explorer's address. Ctrl-C (SIGINT) stops it even
    where the process inherited SIGINT ignored (started in the background by a script, or by
    a test runner that was): Python then installs no KeyboardInterrupt of its own, and the
    server could only be killed."""
    say(f"serving {page_url(server)} (Ctrl-C stops it)")
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler) if in_main else None
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopped")
    finally:
        server.server_close()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
