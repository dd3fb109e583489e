"""What workers cost: the CPU seconds of `genvdis run --jobs 1` against two workers (forked, the
default backend's, and loky's), a dask LocalCluster of two workers started for the run, and a
dask cluster of two workers already up, on the same config and splits, in fresh processes;
and, with --study, the wall time of `genvdis study` of several configs against `genvdis run` of
the same.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_workers.py \
        [--config configs/optdigits-2v3.yaml:1000 configs/adult-discrete.yaml:500] [--repeat 3] \
        [--against OTHER_CHECKOUT]
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_workers.py --study \
        [--study-configs pima voting sonar optdigits-2v3] [--study-splits 1000] [--repeat 3]

Each --config is PATH:SPLITS. Workers cost CPU the run's own process does not spend: their
start-up (imports, numba's cache), and whatever the data's passing costs (pickling it per task,
or sending it once). The figure is CPU, not wall, time: the sum over the run's process and its
workers (reaped at the run's end, so counted in RUSAGE_CHILDREN), steadier than wall time when
other work shares the machine. Every case is the minimum of --repeat rounds; the rounds
interleave the cases so that the machine's load drifts over all of them alike. The runs use
--force, so that a short run is not kept in-process by the planner.

"dask, cluster up" is what a run costs on a cluster whose workers are already running (as on a
real cluster, where they outlive the runs): a LocalCluster of two single-threaded worker
processes is started once, in its own process, before the rounds, and each run is pointed at
it with --scheduler. Its CPU is the run's own plus what the cluster's processes (scheduler and
workers, read from /proc: Linux only) spent during it, less what they spend idle (their
heartbeats and monitors, measured over 10 s before the rounds) for as long as the run took.

--against DIR measures another checkout's genvdis too (its code first on PYTHONPATH, this
venv's libraries), in the same rounds, side by side.

--study times one command running every config against `genvdis run` of the same configs (one
after another in one process), both on 2 workers (loky, then a dask LocalCluster), in
interleaved rounds: wall seconds (min of --repeat, the shared machine's load included) and CPU
seconds, and the study's ratio to the run's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_startup import child_env, children_cpu

CASES = {  # name: extra arguments of `genvdis run`
    "--jobs 1": ["--jobs", "1"],
    "forked, 2 workers": ["--jobs", "2", "--force"],  # the default backend, processes
    "loky, 2 workers": ["--jobs", "2", "--force", "--backend", "loky"],
    "dask, 2 workers": ["--jobs", "2", "--force", "--backend", "dask"],
    "dask, cluster up": ["--jobs", "2", "--force", "--backend", "dask", "--scheduler"],
}
CASE_NUMBER = {case: n for n, case in enumerate(CASES)}  # for the runs' folder names
UP = "dask, cluster up"  # its address is added to its arguments
IDLE_SECONDS = 10.0

CLUSTER = """
import sys
from dask.distributed import LocalCluster
if __name__ == "__main__":
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()  # until the benchmark closes it
    cluster.close()
"""


class Cluster:
    """A dask cluster of two workers in a process of its own, and the CPU its processes use."""

    def __init__(self, process: subprocess.Popen, address: str) -> None:
        self.process, self.address = process, address
        self.idle_rate = 0.0  # CPU seconds a second, spent with no work

    def cpu(self) -> float:
        """CPU seconds (user + system) of the cluster's process and its live children."""
        ticks = 0
        for pid in _process_tree(self.process.pid):
            with contextlib.suppress(OSError):
                fields = _stat(pid)
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")


def _stat(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat after the command's name (its state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _process_tree(pid: int) -> list[int]:
    """pid and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                children.setdefault(int(_stat(entry.name)[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


@contextlib.contextmanager
def running_cluster(tree: str | None) -> Iterator[Cluster]:
    """A cluster started for the whole benchmark (`tree`'s genvdis on its workers' path), its
    idle CPU rate measured before it is handed out."""
    process = subprocess.Popen(
        [sys.executable, "-c", CLUSTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=child_env(tree), text=True,
    )  # fmt: skip
    try:
        cluster = Cluster(process, process.stdout.readline().strip())
        if not cluster.address:
            sys.exit("the dask cluster did not start")
        time.sleep(2.0)  # its workers settle
        before, started = cluster.cpu(), time.perf_counter()
        time.sleep(IDLE_SECONDS)
        cluster.idle_rate = (cluster.cpu() - before) / (time.perf_counter() - started)
        yield cluster
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _run(
    config: str, splits: int, case: str, out: Path, tree: str | None, cluster: Cluster | None
) -> float:
    """CPU seconds of one `genvdis run` (python -m genvdis: the same for every checkout); on
    a running cluster, with the cluster's CPU beyond its idle rate during the run."""
    command = [sys.executable, "-m", "genvdis", "run", config, "--splits", str(splits)]
    command += [*CASES[case], *([cluster.address] if case == UP else []), "--out", str(out), "-q"]
    if case != UP:
        return _timed(command, tree)[1]
    before = cluster.cpu()
    wall, cpu = _timed(command, tree)
    return cpu + cluster.cpu() - before - cluster.idle_rate * wall


# extra arguments of `genvdis run` and `genvdis study`: the cases with workers
STUDY_CASES = {
    case: CASES[case] for case in ("forked, 2 workers", "loky, 2 workers", "dask, 2 workers")
}


def _timed(command: list[str], tree: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one command, its workers' CPU included (`tree`: `child_env`'s)."""
    started, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(command, env=child_env(tree), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr[-2000:]}")
    return time.perf_counter() - started, children_cpu() - cpu


def study_main(configs: list[str], splits: int, repeat: int) -> None:
    """`genvdis study` of `configs` against `genvdis run` of them, interleaved rounds."""
    seconds: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(repeat + 1):  # round 0 untimed: data cache, numba's cache, .pyc files
            for case, extra in STUDY_CASES.items():
                for command in ("run", "study"):
                    out = Path(scratch) / f"{n}-{command}-{case[:4]}"
                    args = [sys.executable, "-m", "genvdis", command, *configs]
                    args += ["--splits", str(splits if n else 20), *extra, "--out", str(out), "-q"]
                    took = _timed(args)
                    if n:
                        seconds.setdefault((case, command), []).append(took)
    print(f"{len(configs)} configs at {splits} splits: {' '.join(configs)}")
    print(f"min of {repeat} interleaved rounds (shared machine); ratio: study over run")
    print(f"{'case':16} {'run wall':>9} {'study wall':>11} {'ratio':>6} {'run CPU':>8} "
          f"{'study CPU':>10} {'ratio':>6}")  # fmt: skip
    for case in STUDY_CASES:
        run = [min(x[i] for x in seconds[case, "run"]) for i in (0, 1)]
        study = [min(x[i] for x in seconds[case, "study"]) for i in (0, 1)]
        print(f"{case:16} {run[0]:9.1f} {study[0]:11.1f} {study[0] / run[0]:6.2f} "
              f"{run[1]:8.1f} {study[1]:10.1f} {study[1] / run[1]:6.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config",
        nargs="+",
        default=["configs/optdigits-2v3.yaml:1000", "configs/adult-discrete.yaml:500"],
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", help="another checkout, measured in the same rounds")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--study", action="store_true", help="study against run, wall time")
    parser.add_argument(
        "--study-configs", nargs="+", default=["pima", "voting", "sonar", "optdigits-2v3"]
    )
    parser.add_argument("--study-splits", type=int, default=1000)
    args = parser.parse_args()
    if args.study:
        study_main(args.study_configs, args.study_splits, args.repeat)
        return
    sides = {"this": None, **({"against": args.against} if args.against else {})}
    configs = [(path, int(splits)) for path, splits in (c.rsplit(":", 1) for c in args.config)]
    cpu: dict[tuple, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        clusters = {  # one per side: its workers import that side's genvdis
            side: stack.enter_context(running_cluster(tree)) if UP in args.cases else None
            for side, tree in sides.items()
        }
        for config, _ in configs:  # untimed: data cache, numba's cache (a worker's read-only
            for case in args.cases:  # arrays are kernel signatures of their own), .pyc files
                for side, tree in sides.items():
                    warm = Path(scratch) / f"warm-{CASE_NUMBER[case]}-{side}"
                    _run(config, 20, case, warm, tree, clusters[side])
        for n in range(args.repeat):
            for config, splits in configs:
                for case in args.cases:
                    for side, tree in sides.items():
                        out = Path(scratch) / f"{side}-{n}-{Path(config).stem}-{CASE_NUMBER[case]}"
                        took = _run(config, splits, case, out, tree, clusters[side])
                        cpu.setdefault((config, case, side), []).append(took)
        idle = ", ".join(f"{s} {c.idle_rate:.3f}" for s, c in clusters.items() if c)
    print(f"CPU s, min of {args.repeat} (shared machine); ratio: over --jobs 1 of the same side")
    if idle:
        print(f"the running cluster's idle CPU, subtracted (CPU s a second): {idle}")
    header = "".join(f" {side + ' CPU s':>14} {'ratio':>6}" for side in sides)
    print(f"{'config':34} {'case':16}{header}")
    for config, splits in configs:
        for case in args.cases:
            row = ""
            for side in sides:
                best, base = min(cpu[config, case, side]), min(cpu[config, "--jobs 1", side])
                row += f" {best:14.2f} {best / base:6.2f}"
            print(f"{Path(config).stem + f' ({splits} splits)':34} {case:16}{row}")


if __name__ == "__main__":
    main()
