"""`python -m genvdis ...`: the same command line as the `genvdis` script, for environments
where the script is not on PATH (a venv not activated, a cluster job)."""

from genvdis.cli import app

app(prog_name="genvdis")
