"""Start-up and end to end: `genvdis run` against the per-split scikit-learn loop, in fresh
processes, side by side.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_startup.py [--splits 1000] [--repeat 3]

Every figure is the wall time of new processes (interpreter start, imports, data loading and
numba's cache load all counted) and the CPU time they used (steadier when other work shares
the machine), each the minimum of --repeat rounds; the rounds interleave the measurements so
that the machine's load drifts over all of them alike. It prints:
- `import genvdis.cli`: the import alone, timed inside a fresh interpreter (its CPU column is
  the whole interpreter's);
- first task: from process start to the first block of splits (imports and the run's set-up:
  config, data, plan, run folder), for `genvdis run CONFIG --jobs 1`;
- end to end, `--jobs 1`: `genvdis run CONFIG --splits S --jobs 1`, against the loop of
  benchmarks/bench_engine.py (`baseline`, one scikit-learn fit per split, BLAS on one thread)
  over the same splits of every m, data loading included;
- end to end, `--jobs 2`: `genvdis run ... --jobs 2` against that loop in two processes at
  once, each with half of the m grid.
--no-sklearn leaves the loop out (to compare genvdis before and after a change quickly).
A first untimed `genvdis run` fills the data cache and numba's cache for both sides.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMPORT_CLI = (
    "import time; t = time.perf_counter(); import genvdis.cli; print(time.perf_counter() - t)"
)


def _first_task(argv: list[str]) -> None:
    """Run the CLI in this process and leave it at once when the first task starts."""
    from genvdis import cli, engine

    def stop(*args: object) -> None:
        os._exit(0)

    engine._task = stop
    sys.argv = ["genvdis", *argv]
    cli.app()


def _sklearn(path: str, splits: int, part: int, parts: int) -> None:
    """The per-split scikit-learn loop over every `parts`-th m of the grid, from `part`."""
    import warnings

    from bench_engine import baseline
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    from _setup import load

    warnings.simplefilter("ignore", ConvergenceWarning)
    threadpool_limits(1)
    config, data, _, _, protocol = load(path)
    for m in config.size_grid[part::parts]:
        baseline(data, m, range(splits), protocol)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall(*commands: list[str]) -> tuple[float, float]:
    """Seconds from starting the commands (at once) until the last one ends, and the CPU
    seconds they used (steadier than wall time on a shared machine)."""
    started, cpu = time.perf_counter(), _cpu()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE) for c in commands]
    for proc, command in zip(procs, commands, strict=True):
        if proc.wait() != 0:
            sys.exit(f"failed: {' '.join(command)}")
    return time.perf_counter() - started, _cpu() - cpu


def _genvdis(config: str, splits: int, jobs: int, out: Path) -> list[str]:
    run = ["run", config, "--splits", str(splits), "--jobs", str(jobs), "--out", str(out), "-q"]
    return [str(Path(sys.executable).with_name("genvdis")), *run]  # the command users type


def _round(args: argparse.Namespace, scratch: Path, n: int) -> dict[str, tuple[float, float]]:
    """One measurement of everything, each in fresh processes and a fresh output folder."""
    me = [sys.executable, str(Path(__file__).resolve())]
    sk = [*me, "--sklearn", args.config, "--splits", str(args.splits)]
    cpu = _cpu()
    out = subprocess.run([sys.executable, "-c", IMPORT_CLI], capture_output=True, text=True)
    cpu = _cpu() - cpu
    first = ["run", args.config, "--splits", "10", "--jobs", "1", "--out", str(scratch / f"f{n}")]
    times = {
        "import genvdis.cli": (float(out.stdout), cpu),
        "first task (--jobs 1)": _wall([*me, "--first-task", *first, "-q"]),
        "genvdis --jobs 1": _wall(_genvdis(args.config, args.splits, 1, scratch / f"a{n}")),
        "genvdis --jobs 2": _wall(_genvdis(args.config, args.splits, 2, scratch / f"b{n}")),
    }
    if not args.no_sklearn:
        times["sklearn loop, 1 process"] = _wall([*sk, "--part", "0", "--parts", "1"])
        halves = [[*sk, "--part", str(k), "--parts", "2"] for k in (0, 1)]
        times["sklearn loop, 2 processes"] = _wall(*halves)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=1000, help="splits per m (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, min taken (default 3)")
    parser.add_argument("config", nargs="?", default="configs/pima.yaml")
    parser.add_argument("--no-sklearn", action="store_true", help="time genvdis only")
    parser.add_argument("--first-task", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--sklearn", help=argparse.SUPPRESS)
    parser.add_argument("--part", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--parts", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_task is not None:
        return _first_task(args.first_task)
    if args.sklearn:
        return _sklearn(args.sklearn, args.splits, args.part, args.parts)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        _wall(_genvdis(args.config, 10, 1, scratch / "warm"))  # data and numba caches, untimed
        rounds = [_round(args, scratch, n) for n in range(args.repeat)]
    best = {key: min(r[key][0] for r in rounds) for key in rounds[0]}
    cpu = {key: min(r[key][1] for r in rounds) for key in rounds[0]}
    print(f"{args.config}, {args.splits} splits per m, min of {args.repeat} rounds")
    print(f"  {'':28} {'wall s':>8} {'cpu s':>8}")
    for key, seconds in best.items():
        print(f"  {key:28} {seconds:8.2f} {cpu[key]:8.2f}")
    for jobs, loop in ((1, "sklearn loop, 1 process"), (2, "sklearn loop, 2 processes")):
        if loop not in best:
            continue
        ratio = best[loop] / best[f"genvdis --jobs {jobs}"]
        print(f"  end to end, --jobs {jobs}: {ratio:.1f}x the scikit-learn loop")


if __name__ == "__main__":
    main()
