"""The cost of CPU-independent arithmetic (issue 30 §7): a run's CPU time under two installs.

    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_determinism.py \
        --before /work/main/.venv/bin/python --after .venv/bin/python [--splits 100] [CONFIG...]

Each interpreter runs each config in a fresh process of its own, `--jobs 1` (`genvdis.run` in
that process, after a two-split warm-up run that loads the compiled kernels), and reports the
run's CPU time (process time: the machine may be busy), the minimum of `--repeats`. The
interpreters' own genvdis are compared, so `--before` is a checkout before the change (its
venv) and `--after` this one. Each run also writes the sha256 of its errors.csv, so the
table shows whether the bytes moved (they do once: the fixed-order sums round differently).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

CONFIGS = ["configs/pima.yaml", "configs/voting.yaml", "configs/optdigits-2v3.yaml"]

DRIVER = """
import hashlib, json, sys, time
from pathlib import Path
import genvdis
config, splits, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
genvdis.run(config, splits=2, out=out / "warm", jobs=1)
start = time.process_time()
genvdis.run(config, splits=splits, out=out / "timed", jobs=1)
seconds = time.process_time() - start
errors = next((out / "timed").rglob("errors.csv")).read_bytes()
print(json.dumps({"seconds": seconds, "sha256": hashlib.sha256(errors).hexdigest()[:12]}))
"""


def measure(python: str, config: str, splits: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [python, "-c", DRIVER, str(Path(config).resolve()), str(splits), out],
            capture_output=True, text=True, check=True, cwd=out,  # not this checkout's package
        )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", default=CONFIGS)
    parser.add_argument("--before", required=True, help="the python of the install before")
    parser.add_argument("--after", required=True, help="the python of this install")
    parser.add_argument("--splits", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'config':28} {'before s':>9} {'after s':>9} {'ratio':>6}  errors.csv before/after")
    for config in args.configs:
        runs = {"before": [], "after": []}
        for _ in range(args.repeats):  # interleaved: a busy spell slows both alike
            for side in runs:
                runs[side].append(measure(getattr(args, side), config, args.splits))
        best = {side: min(r["seconds"] for r in rs) for side, rs in runs.items()}
        sums = {side: rs[0]["sha256"] for side, rs in runs.items()}
        print(
            f"{config:28} {best['before']:9.2f} {best['after']:9.2f} "
            f"{best['after'] / best['before']:6.3f}  {sums['before']} / {sums['after']}"
        )


if __name__ == "__main__":
    main()
