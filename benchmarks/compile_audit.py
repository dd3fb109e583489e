"""What a run's first use of the kernels compiles, and what makes it slow to compile.

    GENVDIS_MIRROR=../shared/uci python benchmarks/compile_audit.py [--splits 20]
        configs/pima.yaml [configs/adult-discrete.yaml ...]

Runs `genvdis run CONFIG... --splits S --jobs 1` in this process with numba's cache empty (a
fresh NUMBA_CACHE_DIR), so that every kernel the configs need is compiled here, then prints:
- each compiled kernel's compile time (numba's own timers: the compiler lock held, and of it
  the LLVM part), longest first; a kernel's time includes that of the kernels it calls that
  were compiled for it, and whichever kernel first needs one of numba's generic
  implementations (slice assignment, `.sort()`, `np.flatnonzero`...) pays its one-time cost;
- kernels compiled more than once (another signature each: a literal argument such as a
  constant -1, or an array of another layout), each costing its compile again;
- assignments of an array to an array's slice or row (`a[:] = b`, `A[i] = b`): numba
  compiles them generically (~1.9 s the first time in a process); loops are the same bits.
`bench_startup.py --cold` times the first run end to end against another checkout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _dispatchers() -> list:
    """Every compiled function of genvdis's loaded modules, once each."""
    from numba.core.dispatcher import Dispatcher

    found: dict[int, Dispatcher] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("genvdis"):
            for value in vars(module).values():
                if isinstance(value, Dispatcher):
                    found.setdefault(id(value), value)
    return list(found.values())


def _name(dispatcher) -> str:
    return f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__name__}"


def _array_setitems(dispatcher) -> list[str]:
    """Lines where an array is assigned into another array's slice or row."""
    lines = []
    for result in dispatcher.overloads.values():
        annotation = result.type_annotation
        if annotation is None:
            continue
        for block in annotation.blocks.values():
            for statement in block.body:
                if type(statement).__name__ in ("SetItem", "StaticSetItem"):
                    kind = str(annotation.typemap[statement.value.name])
                    if "array" in kind.lower():
                        lines.append(f"{_name(dispatcher)}:{statement.loc.line} ({kind})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--splits", type=int, default=20, help="splits per m (default 20)")
    args = parser.parse_args()
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()  # before genvdis picks its folder
    from typer.testing import CliRunner

    from genvdis.cli import app

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        run = ["run", *args.configs, "--splits", str(args.splits), "--jobs", "1", "-q"]
        result = CliRunner().invoke(app, [*run, "--out", out])
    if result.exit_code != 0:
        sys.exit(f"the run failed: {result.output.strip()}")
    wall = time.perf_counter() - started
    dispatchers = _dispatchers()
    rows = []
    for dispatcher in dispatchers:
        for signature in dispatcher.signatures:
            timers = dispatcher.get_metadata(signature).get("timers", {})
            rows.append((timers.get("compiler_lock", 0.0), timers.get("llvm_lock", 0.0),
                         _name(dispatcher)))  # fmt: skip
    print(f"{' '.join(args.configs)}, {args.splits} splits per m: {wall:.1f} s on an empty cache")
    print(f"{'compile s':>9} {'LLVM s':>7}  kernel (its callees' first compiles included)")
    for total, llvm, name in sorted(rows, reverse=True):
        print(f"{total:9.2f} {llvm:7.2f}  {name}")
    again = [d for d in dispatchers if len(d.signatures) > 1]
    print(f"kernels compiled more than once: {len(again)}")
    for dispatcher in again:
        print(f"  {_name(dispatcher)}")
        for signature in dispatcher.signatures:
            print(f"    {signature}")
    setitems = [line for d in dispatchers for line in _array_setitems(d)]
    print(f"arrays assigned into slices or rows: {len(setitems)}")
    for line in setitems:
        print(f"  {line}")


if __name__ == "__main__":
    main()
