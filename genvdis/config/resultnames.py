"""The files genvdis writes at the top of a results folder (`--out`), beside the run folders.

Each writer names its file with these constants (report.markdown, analysis.runs,
report.plotting, report.explorer, analysis.sensitivity, report.study), and `TOP_LEVEL` is
built from them: a run's or a theory's name may be none of them (config.RunName), or its folder
would take the file's place and break every later report of that folder. It lives in config,
the lowest layer that needs it (the name check), and imports nothing, so the config's check
stays light.
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

STUDY_CSV = "study.csv"  # report.study: one row per dataset of the study
STUDY_MD = "STUDY.md"  # report.study
STUDY_HTML = "STUDY.html"  # report.study
# report.study's explorer page: not "study.html", which STUDY.html is on a case-insensitive disk
STUDY_EXPLORER = "study-explorer.html"
STUDY_MSTAR = "study-mstar-d"  # report.study: m* against d, once in each of FIGURE_FORMATS
STUDY_VERDICTS = "study-verdicts"  # report.study: the verdict counts, in each of FIGURE_FORMATS

TOP_LEVEL += (STUDY_CSV, STUDY_MD, STUDY_HTML, STUDY_EXPLORER)
TOP_LEVEL += tuple(f"{s}.{ext}" for s in (STUDY_MSTAR, STUDY_VERDICTS) for ext in FIGURE_FORMATS)
