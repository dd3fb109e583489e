"""Files, interrupts and concurrency around runs, plots, reports and sweeps (audit of area G).

Each test does what two commands at once, a kill or a bad folder do to a results folder, and
checks that no result is lost or mixed, and that a partial file is never read as whole.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import genvdis
from genvdis.analysis import sensitivity
from genvdis.cli import app
from genvdis.data import fetch
from genvdis.errors import UserError
from genvdis.store import lock as runlock
from genvdis.store import results


@pytest.fixture(scope="module")
def finished(tmp_path_factory, write_toy, toy_config) -> Path:
    """A finished run of toy.csv (8 splits, 3 sizes): `<folder>/out/toy/`."""
    folder = tmp_path_factory.mktemp("finished")
    config = write_toy(folder, toy_config("sizes: [10, 20, 40]", "splits: 8"), "toy.yaml")
    genvdis.run(config, out=folder / "out")
    return folder / "out"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


class _Stopped(BaseException):
    """Ctrl-C, or a kill, at this point."""


def _rows(name: str) -> pd.DataFrame:
    """One baseline row of sensitivity.csv for panel `name`."""
    row = dict(name=name, variant="baseline", changed="", same_as="", not_run="", n_splits=5,
               verdict="two regimes", keeps_verdict=True)  # fmt: skip
    table = pd.DataFrame([row], columns=sensitivity.COLUMNS)
    table["m_cross"] = table["m_cross"].astype("Int64")
    return table


def test_two_sweeps_updating_sensitivity_csv_at_once_keep_both_panels(tmp_path, monkeypatch):
    """Two sweeps of different panels into one --out finish together: each reads
    sensitivity.csv, adds its rows and writes it back. Unlocked, the second writer dropped the
    first one's rows (exit 0); now the update is one at a time and both panels are kept."""
    write = results.atomic_write_csv
    other: list[threading.Thread] = []

    def meanwhile(path: Path, frame: pd.DataFrame) -> None:
        if not other:  # the first writer, between its read and its write: the other updates
            other.append(threading.Thread(target=sensitivity.update, args=(tmp_path, _rows("b"))))
            other[0].start()
            time.sleep(0.5)
        write(path, frame)

    monkeypatch.setattr(results, "atomic_write_csv", meanwhile)
    sensitivity.update(tmp_path, _rows("a"))
    other[0].join(timeout=30)
    table = sensitivity.read_sensitivity(tmp_path)
    assert sorted(table["name"]) == ["a", "b"]


def test_a_plot_stopped_while_it_writes_a_figure_leaves_the_earlier_one_whole(
    finished, tmp_path, monkeypatch
):
    """A plot interrupted (Ctrl-C) while matplotlib wrote toy.pdf left the first bytes of it
    in place of the figure an earlier plot had drawn (and REPORT.md links the figures as
    they are); now each figure is drawn in memory and renamed into place whole."""
    from matplotlib.backends import backend_pdf

    out = tmp_path / "out"
    shutil.copytree(finished, out)
    assert _cli("plot", out)[0] == 0
    before = (out / "toy" / "toy.pdf").read_bytes()

    def stopped(self):  # the PDF's objects are written, its cross-reference table is next
        raise _Stopped

    monkeypatch.setattr(backend_pdf.PdfFile, "writeXref", stopped)
    with pytest.raises(_Stopped):
        genvdis.report.plotting.plot_folders([out])
    assert (out / "toy" / "toy.pdf").read_bytes() == before
    assert not [p.name for p in (out / "toy").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("command", "in_the_way", "message"),
    [
        ("plot", "toy/toy.png", "toy.png in {out}/toy: toy.png"),
        ("report", "toy/fits.csv", "the analysis in {out}/toy: fits.csv"),
        ("report", "analysis.csv", "the analysis in {out}: analysis.csv"),
        ("report", "REPORT.md", "the report in {out}: REPORT.md"),
    ],
)
def test_plot_and_report_that_cannot_write_a_file_say_so_in_one_line(
    finished, tmp_path, command, in_the_way, message
):
    """A figure, an analysis table or the report that cannot be written (here a folder is in
    its place; a full disk or a read-only folder alike) was an internal error, exit 1; now one
    line names the folder and the file, exit 2, and no temporary file is left."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    (out / in_the_way).mkdir()
    code, stderr = _cli(command, out)
    then = "is a directory; fix this, then rerun the same command"
    assert (code, stderr) == (2, f"error: cannot write {message.format(out=out)}: {then}\n")
    assert not list(out.rglob("*.tmp"))


def test_a_rerun_committing_while_report_reads_errors_csv_is_not_passed_off(
    finished, tmp_path, monkeypatch, write_toy, toy_config
):
    """report (or plot) reads a run's errors.csv, then checks the file against manifest.json.
    A rerun (another seed) that committed in between made the check hash the new file against
    the new manifest, so the earlier run's numbers were analysed as the folder's, exit 0. Now
    the bytes checked are the bytes read: refused in one line, saying to run it again."""
    from genvdis.store import results, runfiles

    out = tmp_path / "out"
    shutil.copytree(finished, out)
    config = write_toy(tmp_path, toy_config("sizes: [10, 20, 40]", "splits: 8"), "toy.yaml")
    check = results.check_manifest

    def rerun_then_check(path, *args):
        monkeypatch.setattr(results, "check_manifest", check)
        genvdis.run(config, seed=1, out=out)
        check(path, *args)

    monkeypatch.setattr(results, "check_manifest", rerun_then_check)
    with pytest.raises(UserError) as error:
        runfiles.read_errors(out / "toy")
    assert str(error.value) == (
        f"{out / 'toy' / 'errors.csv'}: a run wrote its folder while it was read; run this "
        "command again (once no run writes there)"
    )
    assert runfiles.read_errors(out / "toy")["error"].equals(
        pd.read_csv(out / "toy" / "errors.csv")["error"]
    )


def test_a_data_cache_that_is_a_file_is_said_so_not_blamed_on_the_network(
    tmp_path, monkeypatch, toy_csv
):
    """GENVDIS_DATA naming a file (or a file where a dataset's subfolder goes): the download
    failed on NotADirectoryError and the message said 'could not download it ... check the
    network'; now it names the cache and the file in its path."""
    cache = tmp_path / "cache"
    cache.write_text("not a folder\n")
    monkeypatch.setenv("GENVDIS_DATA", str(cache))
    sha256 = fetch.file_sha256(toy_csv)
    config = tmp_path / "toy.yaml"
    config.write_text(
        f"name: toy\ndataset: {{url: {toy_csv}, sha256: {sha256}, target: label}}\n"
        'target: {positive: ["yes"]}\nsizes: [10, 20]\nsplits: 4\n'
    )
    code, stderr = _cli("run", config, "--out", tmp_path / "out", "-q")
    folder = cache / "user" / sha256[:16]
    assert (code, stderr) == (
        2,
        f"error: {config}: {toy_csv}: the data cache {folder} cannot be a folder: a file is in "
        "its path; set GENVDIS_DATA to a folder (or remove the file)\n",
    )


def test_plot_while_a_run_commits_into_the_folder_says_to_wait_not_to_rerun_it(finished, tmp_path):
    """plot or report during a run's commit found its mark (.committing) and said 'its last
    run was stopped while writing its results ... rerun that run', of a run that was not
    stopped; now, while a run holds the folder, they say a run is writing it."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    run_dir = out / "toy"
    (run_dir / results.COMMITTING).write_text("")
    with runlock.hold(run_dir):  # the run, committing
        code, stderr = _cli("plot", out)
    assert (code, stderr) == (
        2,
        f"error: {run_dir}: a run is writing its results now; run this command again when it "
        "has finished\n",
    )
    code, stderr = _cli("report", out)  # no run holds it: one was stopped in its commit
    assert code == 2 and "its last run was stopped while writing its results" in stderr


def test_a_rerun_committing_while_report_works_is_not_mixed_into_the_explorer(
    finished, tmp_path, monkeypatch, write_toy, toy_config
):
    """report analyses each run, then builds explorer.html from the runs' summary.csv and that
    analysis. A rerun (another seed) that committed in between gave a page with one run's
    curves and the other's differences and verdict, exit 0. Now the page checks the analysis
    against the summary it draws for every run: refused in one line saying to analyse again."""
    from genvdis.report import markdown as report

    out = tmp_path / "out"
    shutil.copytree(finished, out)
    config = write_toy(tmp_path, toy_config("sizes: [10, 20, 40]", "splits: 8"), "toy.yaml")
    write = report.write_explorer

    def rerun_then_write(folder, *args):
        genvdis.run(config, seed=1, out=out)
        return write(folder, *args)

    monkeypatch.setattr(report, "write_explorer", rerun_then_write)
    code, stderr = _cli("report", out, "--boot", "100")  # the rerun logs its lines first
    assert (code, stderr.splitlines()[-1]) == (
        2,
        f"error: {out / 'toy' / 'differences.csv'}: not the analysis of this run's summary.csv "
        f"(the run was rerun after it was analysed); analyse it again with `genvdis report {out}`",
    )
