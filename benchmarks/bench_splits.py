"""Drawing a block's splits (`splits.draw_block`), against another checkout's, side by side.

    python benchmarks/bench_splits.py [--repeat 5] [--against DIR]

On adult's class sizes (34,014 / 11,208 rows), for training rows alone (`test: rest`) and for
fixed-size test sets, the min of --repeat calls of each case, interleaved with --against's
(DIR's genvdis/experiment/splits.py loaded beside this one; the other modules are this
checkout's), and whether both drew the same rows. No data files are needed.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np

from genvdis.experiment import splits

Y = np.array([0] * 34014 + [1] * 11208)
CASES = [  # (m, splits, test), test None: the training rows alone
    (30, 1000, None),
    (3000, 200, None),
    (30, 1000, 1000),
    (50, 200, 10000),
    (30, 1000, 50),
]


def _load(tree: str):
    spec = importlib.util.spec_from_file_location(
        "other_splits", Path(tree) / "genvdis/experiment/splits.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _draw(module, m: int, count: int, test: int | None):
    if test is None:
        return module.draw_training_block(Y, m, 0, range(count))
    return module.draw_block(Y, m, 0, range(count), "stratified", test)


def _parts(draw) -> tuple:
    """A draw as a tuple of arrays: training rows, and the test mask where there is one."""
    return draw if isinstance(draw, tuple) else (draw,)


def _time(module, case: tuple) -> float:
    started = time.perf_counter()
    _draw(module, *case)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="calls per case, min (default 5)")
    parser.add_argument("--against", help="another checkout's folder")
    args = parser.parse_args()
    sides = {"this": splits, **({"against": _load(args.against)} if args.against else {})}
    print(f"{'m':>5} {'splits':>6} {'test':>6} " + " ".join(f"{s:>9}" for s in sides), end="")
    print("   ratio  same rows" if args.against else "")
    for case in CASES:
        draws = {side: _draw(module, *case) for side, module in sides.items()}  # compiled
        best = {side: float("inf") for side in sides}
        for _ in range(args.repeat):
            for side, module in sides.items():
                best[side] = min(best[side], _time(module, case))
        m, count, test = case
        line = f"{m:5d} {count:6d} {test or 'rest':>6} " + " ".join(
            f"{best[s] * 1e3:7.1f}ms" for s in sides
        )
        if args.against:
            pairs = zip(_parts(draws["this"]), _parts(draws["against"]), strict=True)
            same = all(np.array_equal(a, b) for a, b in pairs)
            line += f"  {best['against'] / best['this']:6.2f}x  {same}"
        print(line)


if __name__ == "__main__":
    main()
