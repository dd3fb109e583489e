"""Progress reporting, passed into a run from outside: the engine and the Python API never
print. A run calls `progress(name, total)` once and gets a function it calls with the number of
blocks just finished (first with those a resumed run already had); the CLI passes `rich_bar`,
`--quiet` (or no terminal) passes nothing. A notebook may pass its own, e.g. one on tqdm.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

Advance = Callable[[int], object]
Progress = Callable[[str, int], contextlib.AbstractContextManager[Advance]]


@contextlib.contextmanager
def silent(name: str, total: int) -> Iterator[Advance]:
    """No progress shown."""
    yield lambda n: None


@contextlib.contextmanager
def rich_bar(name: str, total: int) -> Iterator[Advance]:
    """A rich progress bar with an ETA, on stderr's terminal."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns += [TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task(name, total=total)
        yield lambda n: bar.advance(task, n)
