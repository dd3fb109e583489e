"""Start-up and end to end: `genvdis run` against the per-split scikit-learn loop, in fresh
processes, side by side.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_startup.py [--splits 1000] [--repeat 3]

Every figure is the wall time of new processes (interpreter start, imports, data loading and
numba's cache load all counted) and the CPU time they used (steadier when other work shares
the machine), each the minimum of --repeat rounds; the rounds interleave the measurements so
that the machine's load drifts over all of them alike. It prints:
- `import genvdis.cli`: the import alone, timed inside a fresh interpreter (its CPU column is
  the whole interpreter's);
- `genvdis --help`, `genvdis fetch DATASET` (--dataset, default pima; a cache hit after the
  first round): the whole process, as a user types it;
- the libraries a run loads, imported: `python -c "import numpy, numba, pandas, pydantic,
  scipy, typer, yaml"`, the floor of any run's start-up on this stack;
- `--jobs 1, 2 splits per m`: a run with next to no work (the smallest --splits), so its fixed
  cost: imports, numba's cache loads, config, data, plan and the results written;
- first task: from process start to the first block of splits (imports and the run's set-up:
  config, data, plan, run folder), for `genvdis run CONFIG --jobs 1`;
- `--jobs 1, every run checkpointed`: the same run with GENVDIS_CHECKPOINT_FROM=0, which
  writes .checkpoints/ however short the run (what a run below planning.CHECKPOINT_FROM saves);
- end to end, `--jobs 1`: `genvdis run CONFIG --splits S --jobs 1`, against the loop of
  benchmarks/bench_engine.py (`baseline`, one scikit-learn fit per split, BLAS on one thread)
  over the same splits of every m, data loading included;
- end to end, `--jobs 2`: `genvdis run ... --jobs 2` against that loop in two processes at
  once, each with half of the m grid.
--no-sklearn leaves the loop out (to compare genvdis before and after a change quickly).
--against DIR times another checkout's genvdis too (its code on PYTHONPATH, this venv's
libraries), each round measuring both sides in turn. Run it from outside both checkouts: a
child `python -c` puts the current folder first on its path.
A first untimed `genvdis run` per side fills the data cache, numba's cache and the .pyc files;
the children run without PYTHONDONTWRITEBYTECODE (else every process compiles genvdis's
modules from source, ~0.1 s, which an installed package never does).

--cold [CONFIG...] times a user's first run, `genvdis run CONFIG... --splits S --jobs J`
(default: the positional CONFIG), with numba's cache empty (a fresh NUMBA_CACHE_DIR each
time), so every kernel it needs is compiled, as on a fresh install or after an update that
changed a kernel module (genvdis/_runtime/kernelcache.py); with --against, both sides in turn each
round.

--crossover CONFIG... times `--jobs 1` against `--jobs 2 --force` (two workers of the default
backend: forked where that is safe) on each config, next to the run's CPU estimate
(genvdis.experiment.planning): where the workers start to pay is what
`parallel.FORKED_IN_PROCESS_BELOW` (and, with loky's workers, `IN_PROCESS_BELOW`) is set from.
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
CHECKPOINT_ENV = "GENVDIS_CHECKPOINT_FROM"  # genvdis.experiment.planning's (not imported here)
IMPORT_CLI = (
    "import time; t = time.perf_counter(); import genvdis.cli; print(time.perf_counter() - t)"
)
# the third-party libraries every `genvdis run` loads (and nothing of genvdis): the floor of
# a run's start-up on this stack, whatever genvdis does
IMPORT_LIBRARIES = "import numpy, numba, pandas, pydantic, scipy, typer, yaml"


def _first_task(argv: list[str]) -> None:
    """Run the CLI in this process and leave it at once when the first task starts."""
    from genvdis import cli

    getattr(cli, "_load_engine", lambda: None)()  # as `genvdis run` imports it (collector paused)
    from genvdis.experiment import engine

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


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's reaped children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_env(tree: str | None) -> dict[str, str]:
    """The children's environment: bytecode caching on; `tree`'s genvdis first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
    return env


def _wall(*commands: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Seconds from starting the commands (at once) until the last one ends, and the CPU
    seconds they used (steadier than wall time on a shared machine)."""
    started, cpu = time.perf_counter(), children_cpu()
    env = env or child_env(None)
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, env=env) for c in commands]
    for proc, command in zip(procs, commands, strict=True):
        if proc.wait() != 0:
            sys.exit(f"failed: {' '.join(command)}")
    return time.perf_counter() - started, children_cpu() - cpu


def _genvdis(config: str, splits: int, jobs: int, out: Path, *extra: str) -> list[str]:
    run = ["run", config, "--splits", str(splits), "--jobs", str(jobs), "--out", str(out), "-q"]
    return [str(Path(sys.executable).with_name("genvdis")), *run, *extra]  # as users type it


def _genvdis_round(config: str, splits: int, out: Path, tree: str | None, dataset: str) -> dict:
    """The genvdis measurements of one round, on one side, in fresh processes and folders."""
    env, me = child_env(tree), [sys.executable, str(Path(__file__).resolve())]
    cpu = children_cpu()
    done = subprocess.run([sys.executable, "-c", IMPORT_CLI], capture_output=True, text=True,
                          env=env)  # fmt: skip
    cpu = children_cpu() - cpu
    first = ["run", config, "--splits", "10", "--jobs", "1", "--out", str(out / "first")]
    cli = str(Path(sys.executable).with_name("genvdis"))
    return {
        "import genvdis.cli": (float(done.stdout), cpu),
        "genvdis --help": _wall([cli, "--help"], env=env),
        f"genvdis fetch {dataset}": _wall([cli, "fetch", dataset], env=env),
        "first task (--jobs 1)": _wall([*me, "--first-task", *first, "-q"], env=env),
        "the libraries a run loads, imported": _wall([sys.executable, "-c", IMPORT_LIBRARIES]),
        "genvdis --jobs 1, 2 splits per m": _wall(_genvdis(config, 2, 1, out / "fixed"), env=env),
        "genvdis --jobs 1": _wall(_genvdis(config, splits, 1, out / "j1"), env=env),
        "genvdis --jobs 1, every run checkpointed": _wall(
            _genvdis(config, splits, 1, out / "j1c"), env={**env, CHECKPOINT_ENV: "0"}
        ),
        "genvdis --jobs 2": _wall(_genvdis(config, splits, 2, out / "j2"), env=env),
    }


def _round(args: argparse.Namespace, scratch: Path, n: int) -> dict[str, tuple[float, float]]:
    """One measurement of everything: this checkout, then --against's, then the loop."""
    times = _genvdis_round(args.config, args.splits, scratch / f"this{n}", None, args.dataset)
    if args.against:
        other = _genvdis_round(
            args.config, args.splits, scratch / f"other{n}", args.against, args.dataset
        )
        times.update({f"{key} [against]": value for key, value in other.items()})
    if not args.no_sklearn:
        sk = [sys.executable, str(Path(__file__).resolve()), "--sklearn", args.config]
        sk += ["--splits", str(args.splits)]
        times["sklearn loop, 1 process"] = _wall([*sk, "--part", "0", "--parts", "1"])
        halves = [[*sk, "--part", str(k), "--parts", "2"] for k in (0, 1)]
        times["sklearn loop, 2 processes"] = _wall(*halves)
    return times


def _crossover(configs: list[str], splits: int, repeat: int, scratch: Path) -> None:
    """--jobs 1 against two workers (--jobs 2 --force) per config, min of `repeat` rounds."""
    from genvdis.experiment.planning import Workload, plan_tasks

    from _setup import load

    print(f"{'config':32} {'estimate s':>10} {'--jobs 1':>9} {'2 workers':>9}")
    for config in configs:
        setup = load(config)
        layout, data = setup.data.layout, setup.data
        width = layout.n_continuous + sum(layout.levels) + 1
        plan = plan_tasks(setup.config.size_grid, splits, setup.config.block_size, width,
                          data.n_rows)  # fmt: skip
        names = [spec.name for spec in setup.config.models]
        estimate = Workload(plan, width, data.n_rows, names).cpu_seconds()
        walls: dict[int, list[float]] = {1: [], 2: []}
        for n in range(repeat):
            for jobs in (1, 2):
                out = scratch / f"x{n}-{jobs}-{Path(config).stem}"
                walls[jobs].append(_wall(_genvdis(config, splits, jobs, out, "--force"))[0])
        print(f"{config:32} {estimate:10.2f} {min(walls[1]):9.2f} {min(walls[2]):9.2f}")


def _cold(args: argparse.Namespace, scratch: Path) -> None:
    """The run on an empty numba cache, per side, min of --repeat interleaved rounds."""
    sides = {"this": None, "against": args.against} if args.against else {"this": None}
    configs = args.cold or [args.config]
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for n in range(args.repeat):
        for side, tree in sides.items():
            env = {**child_env(tree), "NUMBA_CACHE_DIR": str(scratch / f"numba-{side}-{n}")}
            command = _genvdis(configs[0], args.splits, args.jobs, scratch / f"{side}{n}")
            command[3:3] = configs[1:]  # `run CONFIG CONFIG...`: one run of them all
            times[side].append(_wall(command, env=env))
    print(
        f"{' '.join(configs)}, {args.splits} splits per m, --jobs {args.jobs}, "
        f"numba's cache empty, min of {args.repeat} rounds"
    )
    for side, pairs in times.items():
        wall, cpu = min(p[0] for p in pairs), min(p[1] for p in pairs)
        print(f"  {side:10} {wall:8.2f} s wall {cpu:8.2f} s CPU")
    if args.against:
        ratio = min(p[0] for p in times["against"]) / min(p[0] for p in times["this"])
        print(f"  first run {ratio:.2f}x as fast as --against (wall)")


def _report(args: argparse.Namespace, rounds: list[dict]) -> None:
    best = {key: min(r[key][0] for r in rounds) for key in rounds[0]}
    cpu = {key: min(r[key][1] for r in rounds) for key in rounds[0]}
    print(f"{args.config}, {args.splits} splits per m, min of {args.repeat} rounds")
    print(f"  {'':38} {'wall s':>8} {'cpu s':>8}")
    for key, seconds in best.items():
        print(f"  {key:38} {seconds:8.2f} {cpu[key]:8.2f}")
    for side in ("", " [against]") if args.against else ("",):
        for jobs, loop in ((1, "sklearn loop, 1 process"), (2, "sklearn loop, 2 processes")):
            if loop in best:
                ratio = best[loop] / best[f"genvdis --jobs {jobs}{side}"]
                print(f"  end to end, --jobs {jobs}{side}: {ratio:.1f}x the scikit-learn loop")
    checkpointed = "genvdis --jobs 1, every run checkpointed"
    ratio = best[checkpointed] / best["genvdis --jobs 1"]
    saved = cpu[checkpointed] - cpu["genvdis --jobs 1"]
    print(f"  --jobs 1, every run checkpointed: {ratio:.2f}x the wall time ({saved:+.2f} s CPU)")
    if args.against:
        for jobs in (1, 2):
            key = f"genvdis --jobs {jobs}"
            ratio = best[f"{key} [against]"] / best[key]
            print(f"  {key}: {ratio:.2f}x as fast as --against (wall)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=1000, help="splits per m (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, min taken (default 3)")
    parser.add_argument("config", nargs="?", default="configs/pima.yaml")
    parser.add_argument("--no-sklearn", action="store_true", help="time genvdis only")
    parser.add_argument("--against", help="another checkout's folder, timed alongside")
    parser.add_argument("--crossover", nargs="+", help="configs: --jobs 1 vs two workers")
    parser.add_argument("--cold", nargs="*", help="the first run (numba's cache empty) of configs")
    parser.add_argument("--jobs", type=int, default=1, help="--cold's --jobs (default 1)")
    parser.add_argument("--dataset", default="pima", help="what `genvdis fetch` is timed on")
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
        if args.cold is not None:
            return _cold(args, scratch)
        for tree in (None, args.against) if args.against else (None,):  # caches, untimed
            _wall(_genvdis(args.config, 10, 1, scratch / "warm"), env=child_env(tree))
        if args.crossover:
            return _crossover(args.crossover, args.splits, args.repeat, scratch)
        rounds = [_round(args, scratch, n) for n in range(args.repeat)]
    _report(args, rounds)


if __name__ == "__main__":
    main()
