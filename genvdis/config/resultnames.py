"""The files genvdis writes at the top of a results folder (`--out`), beside the run folders.

Each writer names its file with these constants (report.markdown, analysis.runs,
report.plotting, report.explorer, analysis.sensitivity), and `TOP_LEVEL` is built from them: a
run's or a theory's name may be none of them (config.RunName), or its folder would take the
file's place and break every later report of that folder. It lives in config, the lowest layer
that needs it (the name check), and imports nothing, so the config's check stays light.
"""

from __future__ import annotations

REPORT_MD = "REPORT.md"  # report.markdown
REPORT_HTML = "REPORT.html"  # report.markdown
ANALYSIS = "analysis.csv"  # analysis.runs: the table of every run
PAIRS = "pairs.csv"  # analysis.runs: every pair, when a panel compares several
FIGURE1 = "figure1"  # report.plotting, once in each of FIGURE_FORMATS
FIGURE_FORMATS = ("png", "pdf")  # report.plotting.save_figure's, for every figure
EXPLORER = "explorer.html"  # report.explorer
SENSITIVITY = "sensitivity.csv"  # analysis.sensitivity, after `genvdis sweep`

TOP_LEVEL = (REPORT_MD, REPORT_HTML, ANALYSIS, PAIRS)
TOP_LEVEL += tuple(f"{FIGURE1}.{ext}" for ext in FIGURE_FORMATS)
TOP_LEVEL += (EXPLORER, SENSITIVITY)
