"""What the client spends on each block a worker sends back: the save of a checkpoint, before
and after the block's CSV text and its parse moved to the worker (`results.Block`); and, with
--study, one LocalCluster run of `genvdis study`, its client's CPU a task.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_client.py \
        [--config configs/pima.yaml configs/voting.yaml configs/adult-discrete.yaml] \
        [--splits 1000] [--repeat 20]
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_client.py --study \
        [--study-configs pima voting sonar optdigits-2v3 lenses liver] [--study-splits 1000] \
        [--jobs 2] [--repeat 1] [--against OTHER_CHECKOUT]

Per block: one real block at each m of each config (the first of the run's plan at --splits,
the run's models with the majority baseline, as `genvdis run` fits them), each received as a
client receives it (unpickled from what the task returns) and saved into a checkpoint folder:
- before: the task returns the rows; the client writes them as CSV text, hashes the text,
  writes the file and parses the text back (the old `CheckpointStore.save`, spelled out here
  from the store's own pieces);
- after: the task returns `results.Block.of(rows)`, the text and the rows parsed back; the
  client hashes and writes the text and keeps the rows (`CheckpointStore.save`).
Both run on the same blocks in interleaved rounds (the order alternating), CPU time of this
process (`time.process_time`), min of --repeat per block; also the pickled size of what a task
returns and the worker's added CPU (making the block and pickling it, against pickling rows).

--study runs `genvdis study CONFIGS --splits S --jobs J --backend dask` (a LocalCluster of J
single-threaded workers) in a fresh process that reports its wall time, its own CPU
(`getrusage`: the client, with the local scheduler, which runs in it), the CPU of the tasks'
phase alone (from the first task handed out to the last block saved) and its wall time, the
CPU inside `CheckpointStore.save`, the blocks a dask task (`parallel.dask_batch`; 1 for a
checkout without it), and its workers' CPU (reaped children). Figures are per block. First,
the client's CPU a wall second with nothing to run is measured (`idle_main`, 30 s) and
taken off the phase's ("less idle"): a LocalCluster's client spends it on its scheduler's
loop and heartbeats whatever the blocks. --against DIR runs another
checkout's genvdis too (its code first on PYTHONPATH, this venv's libraries), in the same
rounds. A first untimed round at 20 splits per side fills the data and numba caches.
--external runs each study on a dask scheduler and J workers (no nanny) started as processes
of their own, as on a cluster (`--scheduler ADDRESS`): the client's CPU is then genvdis's
alone, and the scheduler's and the workers' CPU during the study are read from their
processes (psutil); the scheduler's idle CPU over the study's wall time is taken off too."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = "--child"  # runs the study in this process and prints its figures as JSON


def _old_save(store, m: int, start: int, frame) -> None:
    """The client's save with the text and the parse on its side (the rows sent)."""
    import pandas as pd

    from genvdis.store import results

    count = frame["split"].nunique()
    text = results._csv(frame)
    digest = results._sha256(store._identity(m, start, count) + text)
    name = f"m{m:07d}_s{start:07d}_n{count}_{store.key}_{digest}.csv"
    results.atomic_write_text(store.dir / name, text, durable=False)
    store.frames[(m, start)] = pd.read_csv(io.StringIO(text))


def _blocks(path: str, splits: int, out: Path) -> tuple[object, list]:
    """The run of `path` (prepared as `genvdis run` prepares it) and one (m, block range,
    rows) per m: the first block of its plan."""
    from genvdis.config.experiment import load_config
    from genvdis.experiment import engine

    config = load_config(path).model_copy(update={"splits": splits})
    run, _ = engine.prepare_run(config, out, base_dir=config.data_dir, force=True)
    protocol = engine.Protocol.of(config)
    firsts = {}
    for m, block in run.plan:
        firsts.setdefault(m, block)
    rows = [
        (m, block, engine.run_block(run.encoded, run.models, m, block, protocol))
        for m, block in firsts.items()
    ]
    return run, rows


def blocks_main(configs: list[str], splits: int, repeat: int) -> None:
    """Client CPU a block, before against after, on the same real blocks."""
    from genvdis._runtime import tuning
    from genvdis.store import results

    tuning.tune_process()
    print(f"client CPU ms a block, min of {repeat} interleaved rounds (shared 2-core machine)")
    print(f"{'config':16} {'blocks':>6} {'rows':>5} {'before ms':>9} {'after ms':>8} {'ratio':>6} "
          f"{'pickle B before':>15} {'after':>6} {'worker +ms':>10}")  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        for path in configs:
            run, rows = _blocks(path, splits, Path(scratch) / "prepare")
            plan = run.plan
            stores = {
                side: results.CheckpointStore(
                    Path(scratch) / Path(path).stem / side,
                    run.key,
                    plan.blocks,
                    plan.n_splits,
                    len(run.models),
                )
                for side in ("before", "after")
            }
            for store in stores.values():
                store.open()
            sent = {
                "before": [pickle.dumps((m, b.start, f), protocol=5) for m, b, f in rows],
                "after": [
                    pickle.dumps((m, b.start, results.Block.of(f)), protocol=5) for m, b, f in rows
                ],
            }
            best: dict[tuple[str, int], float] = {}
            worker: dict[tuple[str, int], float] = {}
            for n in range(repeat):
                for i, (_, _, frame) in enumerate(rows):
                    sides = ("before", "after") if (n + i) % 2 == 0 else ("after", "before")
                    for side in sides:
                        started = time.process_time()
                        m, start, got = pickle.loads(sent[side][i])
                        if side == "before":
                            _old_save(stores[side], m, start, got)
                        else:
                            stores[side].save(m, start, got)
                        took = time.process_time() - started
                        best[side, i] = min(best.get((side, i), took), took)
                        started = time.process_time()
                        returned = frame if side == "before" else results.Block.of(frame)
                        pickle.dumps((m, start, returned), protocol=5)
                        took = time.process_time() - started
                        worker[side, i] = min(worker.get((side, i), took), took)
            for m, block, _ in rows:  # both sides keep the same frames
                key = (m, block.start)
                assert stores["before"].frames[key].equals(stores["after"].frames[key]), (path, m)
            k = len(rows)
            mean = {side: sum(best[side, i] for i in range(k)) / k * 1e3 for side in sent}
            size = {side: sum(map(len, sent[side])) / k for side in sent}
            added = sum(worker["after", i] - worker["before", i] for i in range(k)) / k * 1e3
            n_rows = sum(len(f) for _, _, f in rows) / k
            print(f"{Path(path).stem:16} {k:6d} {n_rows:5.0f} {mean['before']:9.2f} "
                  f"{mean['after']:8.2f} {mean['after'] / mean['before']:6.2f} "
                  f"{size['before']:15.0f} {size['after']:6.0f} {added:10.2f}")  # fmt: skip


def child_main(argv: list[str]) -> None:
    """`genvdis` with `argv` in this process; prints wall, client CPU (whole, the tasks'
    phase, the saves) and the reaped workers' CPU as JSON on the last line of stdout."""
    import resource

    from genvdis import cli
    from genvdis._runtime import parallel
    from genvdis.store import results

    started = time.perf_counter()
    phase = {"saves": 0.0, "tasks": 0, "from": None, "to": None}
    mapped, save = parallel.map_unordered, results.CheckpointStore.save

    def timed_map(*args, **kwargs):
        phase["from"], phase["wall from"] = time.process_time(), time.perf_counter()
        yield from mapped(*args, **kwargs)

    def timed_save(self, *args, **kwargs):
        cpu = time.process_time()
        save(self, *args, **kwargs)
        now = time.process_time()
        phase["saves"] += now - cpu
        phase["tasks"] += 1
        phase["to"], phase["wall to"] = now, time.perf_counter()

    parallel.map_unordered, results.CheckpointStore.save = timed_map, timed_save
    batch = getattr(parallel, "dask_batch", None)  # None: a checkout with one block a task
    if batch:

        def sized(*args) -> int:
            phase["batch"] = batch(*args)
            return phase["batch"]

        parallel.dask_batch = sized
    getattr(cli, "_load_engine", lambda: None)()
    sys.argv = ["genvdis", *argv]
    try:
        cli.app()
    except SystemExit as stop:
        if stop.code:
            raise
    self = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {
        "wall": time.perf_counter() - started,
        "client": self.ru_utime + self.ru_stime,
        "phase": (phase["to"] or 0.0) - (phase["from"] or 0.0),
        "phase wall": phase.get("wall to", 0.0) - phase.get("wall from", 0.0),
        "saves": phase["saves"],
        "tasks": phase["tasks"],
        "batch": phase.get("batch", 1),
        "workers": children.ru_utime + children.ru_stime,
    }
    print(json.dumps(figures))


def _study(
    tree: str | None, configs: list[str], splits: int, jobs: int, out: Path, external: bool
) -> dict:
    """One `genvdis study` in a child (`child_main`); with `external`, on a scheduler and
    `jobs` workers started here as processes of their own, whose CPU during the study is
    added to the figures (`scheduler`; `workers` then is theirs, not reaped children's)."""
    from bench_startup import child_env

    command = [sys.executable, str(Path(__file__).resolve()), CHILD, "study", *configs]
    command += ["--splits", str(splits), "--jobs", str(jobs), "--backend", "dask", "--force"]
    command += ["--out", str(out), "-q"]
    with contextlib.ExitStack() as stack:
        if external:
            address, scheduler, workers = stack.enter_context(_cluster(tree, jobs, out.parent))
            command += ["--scheduler", address]
            before = [_cpu(scheduler), sum(map(_cpu, workers))]
        done = subprocess.run(command, env=child_env(tree), capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(command)}\n{done.stderr[-2000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        if external:
            figures["scheduler"] = _cpu(scheduler) - before[0]
            figures["workers"] = sum(map(_cpu, workers)) - before[1]
    return figures


def _cpu(pid: int) -> float:
    import psutil  # a dependency of dask's distributed

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


@contextlib.contextmanager
def _cluster(tree: str | None, jobs: int, folder: Path):
    """(address, scheduler pid, worker pids) of a dask scheduler and `jobs` single-threaded
    workers (no nanny) started here with `tree`'s genvdis; ended (by pid) afterwards."""
    from bench_startup import child_env
    from dask.distributed import Client

    file = folder / f"scheduler-{time.monotonic_ns()}.json"
    env, quiet = child_env(tree), {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    module = [sys.executable, "-m"]
    started = [
        subprocess.Popen([*module, "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                          "--port", "0", "--no-dashboard", "--scheduler-file", str(file)],
                         env=env, **quiet)
    ]  # fmt: skip
    try:
        while not file.exists():
            time.sleep(0.1)
        time.sleep(0.2)  # written whole
        address = json.loads(file.read_text())["address"]
        started += [
            subprocess.Popen([*module, "distributed.cli.dask_worker", address, "--nthreads",
                              "1", "--no-nanny", "--no-dashboard"], env=env, **quiet)
            for _ in range(jobs)
        ]  # fmt: skip
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(jobs, timeout=120)
        yield address, started[0].pid, [p.pid for p in started[1:]]
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait()


def idle_main(jobs: int, external: bool, seconds: float = 30.0) -> dict:
    """The client's CPU a wall second with nothing to run (its event loop and heartbeats; a
    LocalCluster's scheduler too, in the same process), and with `external` the scheduler's:
    what a study's client spends whatever its blocks, to take from its tasks' phase."""
    from dask.distributed import Client, LocalCluster

    with contextlib.ExitStack() as stack:
        if external:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            address, scheduler, _ = stack.enter_context(_cluster(None, jobs, folder))
            client = stack.enter_context(Client(address))
        else:
            cluster = stack.enter_context(
                LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                             host="127.0.0.1", dashboard_address=None)
            )  # fmt: skip
            client = stack.enter_context(Client(cluster))
        time.sleep(3)  # past the workers' start
        cpu, wall = time.process_time(), time.perf_counter()
        before = _cpu(scheduler) if external else 0.0
        time.sleep(seconds)
        wall = time.perf_counter() - wall
        figures = {"client": (time.process_time() - cpu) / wall * 1e3}
        if external:
            figures["scheduler"] = (_cpu(scheduler) - before) / wall * 1e3
        client.close()
    return figures


def study_main(
    configs: list[str], splits: int, jobs: int, repeat: int, against: str | None, external: bool
) -> None:
    sides = {"this": None, **({"against": against} if against else {})}
    figures: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(repeat + 1):  # round 0 untimed: data cache, numba's cache, .pyc files
            for side, tree in sides.items():
                out = Path(scratch) / f"{side}-{n}"
                got = _study(tree, configs, splits if n else 20, jobs, out, external)
                if n:
                    figures.setdefault(side, []).append(got)
    idle = idle_main(jobs, external)
    where = "an external scheduler and" if external else "a LocalCluster of"
    print(f"genvdis study {' '.join(configs)} --splits {splits} --jobs {jobs} --backend dask")
    print(f"({where} {jobs} single-threaded workers; shared 2-core machine; min of {repeat})")
    print("idle, CPU ms a wall second: " + ", ".join(f"{k} {v:.1f}" for k, v in idle.items()))
    print(f"{'side':8} {'blocks':>6} {'batch':>5} {'wall s':>7} {'client CPU s':>12} "
          f"{'tasks phase s':>13} {'phase wall s':>12} {'ms a block':>10} "
          f"{'less idle':>9} {'saves ms a block':>16} "
          f"{'workers CPU s':>13}"
          + (f" {'scheduler ms a block':>20} {'less idle':>9}" if external else ""))  # fmt: skip
    for side, rounds in figures.items():
        best = {key: min(r[key] for r in rounds) for key in rounds[0]}
        tasks = best["tasks"]
        scheduler = ""
        if external:  # over the whole study; less its idle rate over the study's wall time
            ran = best["scheduler"] - idle["scheduler"] / 1e3 * best["wall"]
            scheduler = f" {best['scheduler'] / tasks * 1e3:20.1f} {ran / tasks * 1e3:9.1f}"
        saves = best["saves"] / tasks * 1e3
        busy = best["phase"] - idle["client"] / 1e3 * best["phase wall"]
        print(f"{side:8} {tasks:6d} {rounds[0]['batch']:5d} {best['wall']:7.1f} "
              f"{best['client']:12.2f} {best['phase']:13.2f} {best['phase wall']:12.1f} "
              f"{best['phase'] / tasks * 1e3:10.1f} {busy / tasks * 1e3:9.1f} {saves:16.2f} "
              f"{best['workers']:13.1f}{scheduler}")  # fmt: skip


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        child_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config",
        nargs="+",
        default=["configs/pima.yaml", "configs/voting.yaml", "configs/adult-discrete.yaml"],
    )
    parser.add_argument("--splits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=None, help="default: 20; --study: 1")
    parser.add_argument("--study", action="store_true", help="a LocalCluster run of a study")
    parser.add_argument(
        "--study-configs",
        nargs="+",
        default=["pima", "voting", "sonar", "optdigits-2v3", "lenses", "liver"],
    )
    parser.add_argument("--study-splits", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--against", help="another checkout, measured in the same rounds")
    parser.add_argument(
        "--external", action="store_true", help="--study on a scheduler of its own (a cluster's)"
    )
    args = parser.parse_args()
    if args.study:
        repeat = args.repeat or 1
        study_main(
            args.study_configs, args.study_splits, args.jobs, repeat, args.against, args.external
        )
    else:
        blocks_main(args.config, args.splits, args.repeat or 20)


if __name__ == "__main__":
    main()
