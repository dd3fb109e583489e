"""The files genvdis writes at the top of a results folder (`--out`), beside the run folders.

Each writer names its file with these constants (report.py, runfiles.py, plotting.py,
explorer.py, sensitivity.py), and `TOP_LEVEL` is built from them: a run's or a theory's name
may be none of them (config.RunName), or its folder would take the file's place and break every
later report of that folder. Imports nothing, so the config's check stays light.
"""

from __future__ import annotations

REPORT_MD = "REPORT.md"  # report.py
REPORT_HTML = "REPORT.html"  # report.py
ANALYSIS = "analysis.csv"  # runfiles.py: the table of every run
PAIRS = "pairs.csv"  # runfiles.py: every pair, when a panel compares several
FIGURE1 = "figure1"  # plotting.py, once in each of FIGURE_FORMATS
FIGURE_FORMATS = ("png", "pdf")  # plotting.save_figure's, for every figure
EXPLORER = "explorer.html"  # explorer.py
SENSITIVITY = "sensitivity.csv"  # sensitivity.py, after `genvdis sweep`

TOP_LEVEL = (REPORT_MD, REPORT_HTML, ANALYSIS, PAIRS)
TOP_LEVEL += tuple(f"{FIGURE1}.{ext}" for ext in FIGURE_FORMATS)
TOP_LEVEL += (EXPLORER, SENSITIVITY)
