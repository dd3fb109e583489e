"""How a run is cut into tasks, what it will cost, estimated before it starts, and the hard
bounds beyond which it is refused unless --force.

A typo (`--splits 10000000000000000000`, `n_rows: 1e11`, a 10,000-column file) should end in one
line at once, not in hours of silence or in the kernel killing the process at 24 GB. The
estimates come from the shapes alone: CPU time from a cost per split fitted to the paper's
panels (Newton's m x width^2 products and width^3 solves, scoring every row, a fixed part),
doubled; memory from the arrays a worker holds, with room to spare. The bounds sit orders
of magnitude above the paper's protocol (all of Figure 1 at 1000 splits is ~3 CPU-minutes), so
only a mistake, or a run that really is enormous, meets them; `--force` runs it anyway.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from genvdis.errors import FORCE, UserError
from genvdis.models import registry

log = logging.getLogger(__name__)

MAX_CPU_HOURS = 100.0
MAX_WIDTH = 2000  # design columns for the models that solve width x width systems
# the models that solve a width x width system (a Hessian, a covariance) per fit
SQUARE_MODELS = {info.name for info in registry.builtin_models() if info.square}

# Seconds per split and model on one core, fitted to the 15 panels of Figure 1 (each within
# 0.5-1.4x of its measured time: 100 splits, genvdis 0.3.0, the 2-core machine), then doubled:
# a fixed cost, the passes over the training rows (naive Bayes, copies, the sampler's
# bounces), Newton's m x width^2 products and width^3 solves (logistic regression and LDA
# only), and scoring every row. The panels reach width 229 only: the width^3 term is the
# solve's operation count at ~3 Gflop/s.
SLOWER = 2.0  # a slower machine than the one measured
PER_SPLIT, PER_ROW_COLUMN, PER_TEST_CELL = 5e-5, 1.25e-8, 5e-10
PER_SQUARE, PER_CUBE = 5.4e-10, 1e-10
HUMAN = 10 * 60  # estimates above 10 CPU-minutes are shown before the run starts

# Runs estimated below this many CPU seconds keep their finished blocks in memory only: writing
# and verifying a checkpoint per block costs more than a kill could lose (under the estimate,
# which is doubled, so about a second of real work). The environment variable overrides it
# (0: checkpoint every run).
CHECKPOINT_FROM = 2.0
CHECKPOINT_ENV = "GENVDIS_CHECKPOINT_FROM"

BLOCK_BYTES = 128 * 2**20  # a block's training tensor stays near this
MAX_BLOCK = 250


def auto_block_size(m: int, width: int, n_rows: int = 0) -> int:
    """Splits per task: big enough to amortise Python overhead (a block of 250 splits costs
    about half as much per split as one of 16), small enough that a task's arrays (the
    training tensor, splits x m x width, a few copies of it, and for fixed-size test sets the
    test marks, rows x splits) keep a worker under ~600 MB. Scoring works in cache-sized
    chunks of rows and Newton in cache-sized groups of splits, so neither grows with the
    block."""
    per_split = 8 * m * max(width, 1) + n_rows
    return int(np.clip(BLOCK_BYTES // per_split, 5, MAX_BLOCK))


@dataclass(frozen=True)
class Plan:
    """(m, block of split indices) for every m, generated one at a time: nothing is built up
    front, however many splits. Results do not depend on the blocks: each split has its own
    random streams, so blocks only set memory use and checkpoint size."""

    sizes: tuple[int, ...]
    n_splits: int
    blocks: dict[int, int]  # m -> splits per block

    def __iter__(self) -> Iterator[tuple[int, range]]:
        for m in self.sizes:
            size = self.blocks[m]
            for start in range(0, self.n_splits, size):
                yield m, range(start, min(start + size, self.n_splits))

    @property
    def count(self) -> int:
        """The number of tasks (len() cannot say more than 2^63)."""
        return sum(-(-self.n_splits // self.blocks[m]) for m in self.sizes)

    def first_blocks(self) -> dict[int, int]:
        """Splits in each m's first block (what config.yaml records)."""
        return {m: min(self.blocks[m], self.n_splits) for m in self.sizes}


def plan_tasks(
    sizes: list[int], n_splits: int, block_size: int | None, width: int = 1, n_rows: int = 0
) -> Plan:
    """The blocks of a run: `block_size` splits each, or sized by m, width and rows."""
    blocks = {m: block_size or auto_block_size(m, width, n_rows) for m in sizes}
    return Plan(tuple(sizes), n_splits, blocks)


@dataclass(frozen=True)
class Workload:
    """The shape of one run: its plan, its data, its models and workers."""

    plan: Plan
    width: int  # design columns: one-hot features + intercept
    n_rows: int
    models: list[str]
    jobs: int = 1

    def split_seconds(self, m: int) -> float:
        """CPU seconds to fit every model on one split of size m and score it."""
        W, seconds = self.width, 0.0
        for model in self.models:
            seconds += PER_SPLIT + PER_ROW_COLUMN * m * W + PER_TEST_CELL * self.n_rows * W
            if model in SQUARE_MODELS:
                seconds += PER_SQUARE * m * W * W + PER_CUBE * W**3
        return SLOWER * seconds

    def cpu_seconds(self) -> float:
        return sum(self.plan.n_splits * self.split_seconds(m) for m in self.plan.sizes)

    def worker_bytes(self) -> int:
        """A worker's peak: the encoded data, a block's training tensors and test marks, and
        a group of Newton's width x width systems (each with a few copies)."""
        from genvdis.models.logistic._layouts import (
            group_size,  # here: it loads numba, which no-op runs skip
        )

        W, square = self.width, bool(set(self.models) & SQUARE_MODELS)
        peak = 0
        for m, block in self.plan.first_blocks().items():
            group = min(block, group_size(m, W))
            tensors = 3 * 8 * block * m * W + block * self.n_rows
            peak = max(peak, tensors + square * 3 * 8 * group * W * W)
        return data_bytes(self.n_rows, W) + peak

    def peak_bytes(self) -> int:
        """The main process (raw and encoded data) plus every worker."""
        return 2 * data_bytes(self.n_rows, self.width) + self.jobs * self.worker_bytes()


def checkpointed(cpu_seconds: float) -> bool:
    """Whether a run of this estimated cost writes .checkpoints/ (see CHECKPOINT_FROM)."""
    text = os.environ.get(CHECKPOINT_ENV, "").strip()
    try:
        threshold = float(text) if text else CHECKPOINT_FROM
    except ValueError:
        threshold = math.nan
    if not threshold >= 0:  # NaN too
        raise UserError(f"{CHECKPOINT_ENV}={text!r}: give CPU seconds, a number >= 0")
    return cpu_seconds >= threshold


def data_bytes(n_rows: int, width: int) -> int:
    """The encoded data: one-hot and reference-coded designs and the scoring rows in double,
    and the scoring rows again in single precision."""
    return 28 * n_rows * width


def check(work: Workload, force: bool = False, name: str = "the run") -> None:
    """Refuse a run beyond a hard bound (unless `force`); say what a long one will cost."""
    square = sorted(set(work.models) & SQUARE_MODELS)
    if square and work.width - 1 > MAX_WIDTH and not force:
        gb = 8 * work.width**2 / 1e9
        raise UserError(
            f"the data has {work.width - 1} feature columns (after one-hot encoding), beyond "
            f"the bound of {MAX_WIDTH} for {square[0]}: every fit solves a {work.width} x "
            f"{work.width} system ({gb:.2g} GB); choose fewer columns (attributes:), {FORCE}"
        )
    hours = work.cpu_seconds() / 3600
    sizes, n_splits = len(work.plan.sizes), work.plan.n_splits
    if hours > MAX_CPU_HOURS and not force:
        raise UserError(
            f"the run would take about {_amount(hours)} CPU-hours ({n_splits} splits at each "
            f"of {sizes} sizes), beyond the bound of {MAX_CPU_HOURS:g}; lower splits or "
            f"sizes, {FORCE}"
        )
    check_memory(work.peak_bytes(), f"{work.jobs} worker(s)", force)
    if hours * 3600 > HUMAN:
        log.info(
            "%s: about %s CPU-hours by a rough estimate (%s splits; up to %s per worker)",
            name, _amount(hours), _amount(sizes * n_splits), _bytes(work.worker_bytes()),
        )  # fmt: skip


def check_memory(needed: int, what: str, force: bool = False) -> None:
    """Refuse (unless `force`) what would need more memory than the machine has."""
    total = physical_memory()
    if total and needed > total and not force:
        raise UserError(
            f"the run would need about {_bytes(needed)} of memory ({what}), more than the "
            f"{_bytes(total)} this machine has; use fewer rows, columns, sizes or --jobs, "
            f"{FORCE}"
        )


def check_synthetic(n_rows: int, n_features: int, kind: str, force: bool = False) -> None:
    """Synthetic data is drawn in memory before anything else: check its size first."""
    width = n_features * (2 if kind == "binary" else 1) + 1
    needed = 24 * n_rows * n_features + 2 * data_bytes(n_rows, width)
    check_memory(needed, f"{n_rows} rows x {n_features} features drawn", force)


def physical_memory() -> int:
    """The machine's memory in bytes; 0 where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _amount(x: float) -> str:
    if x < 10:
        return f"{x:.1f}"
    return f"{x:,.0f}" if x < 1e6 else f"{x:.2g}"


def _bytes(n: float) -> str:
    if n < 1024:
        return f"{n:.0f} bytes"
    for unit in ("KB", "MB", "GB"):
        n /= 1024
        if n < 1024:
            return f"{n:.1f} {unit}"
    return f"{n / 1024:,.1f} TB"
