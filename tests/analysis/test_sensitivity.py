"""The stability table's rows (genvdis/analysis/sensitivity.py): sensitivity.csv updated by several
sweeps into one folder keeps every panel's rows."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd

from genvdis.analysis import sensitivity
from genvdis.store import results


def _rows(name: str) -> pd.DataFrame:
    """One baseline row of sensitivity.csv for panel `name`."""
    row = dict(name=name, variant="baseline", changed="", same_as="", not_run="", n_splits=5,
               verdict="two regimes", keeps_verdict=True)  # fmt: skip
    table = pd.DataFrame([row], columns=sensitivity.COLUMNS)
    table["m_cross"] = table["m_cross"].astype("Int64")
    return table


def test_two_sweeps_updating_sensitivity_csv_at_once_keep_both_panels(tmp_path, monkeypatch):
    """Two sweeps of different panels into one --out finish together: each reads
    sensitivity.csv, adds its rows and writes it back. Unless the updates are one at a time,
    the second writer drops the first one's rows with exit 0: both panels must be kept."""
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
