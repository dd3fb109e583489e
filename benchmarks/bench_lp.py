"""The separability LPs alone (`hyperplanes.max_margin`): this checkout against another genvdis,
side by side, on the LPs the sonar-max-margin example solves (one a split and m).

    git worktree add /tmp/genvdis-before 064f926
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_lp.py --against /tmp/genvdis-before \
        [--splits 20] [--repeat 5] [CONFIG]

Each round solves the LPs of `--splits` splits at every m of CONFIG once with each code, in a
fresh process that imports that checkout's genvdis (PYTHONPATH), the two alternating so that
the machine's load drifts over both alike. It prints the minimum over the rounds of the wall
and CPU seconds of the solves (the rows built beforehand, scipy imported and one LP solved
untimed), their ratio, and whether both gave the same solutions bit for bit (the LP's optimum
is not unique: a change of solver or options would show here). The whole example, end to end:
`benchmarks/bench_adult.py configs/examples/sonar-max-margin.yaml --splits 200 --jobs 2`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "configs/examples/sonar-max-margin.yaml"


def _solve_all(config: str, splits: int) -> dict[str, float | str]:
    """Time max_margin on every split's rows with the genvdis this process imports."""
    from genvdis.experiment import splits as drawing
    from genvdis.models.logistic.separable import hyperplanes

    from _setup import load

    setup = load(config)
    Z, y = setup.encoded.reference, setup.encoded.y
    problems = []
    for m in setup.config.size_grid:
        idx = drawing.draw_training_block(y, m, setup.protocol.seed, range(splits),
                                          setup.protocol.policy)  # fmt: skip
        problems += [hyperplanes.signed_rows(Z[rows], y[rows]) for rows in idx]
    hyperplanes.max_margin(problems[0])  # scipy's import and HiGHS's first call
    digest = hashlib.sha256()
    wall, cpu = time.perf_counter(), time.process_time()
    for A in problems:
        separable, z = hyperplanes.max_margin(A)
        digest.update(bytes([separable]) + z.tobytes())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu, "lps": len(problems), "digest": digest.hexdigest()}


def _round(config: str, splits: int, code: Path | None) -> dict:
    """`_solve_all` in a child process that imports `code`'s genvdis (or this one's)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(code)] * (code is not None) + [str(ROOT / "benchmarks")]
    ))  # fmt: skip
    child = [sys.executable, __file__, config, "--splits", str(splits), "--child"]
    answer = subprocess.run(child, env=env, check=True, capture_output=True, text=True)
    return json.loads(answer.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=CONFIG)
    parser.add_argument("--against", type=Path, help="the root of another genvdis checkout")
    parser.add_argument("--splits", type=int, default=20, help="per m (default 20)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds, min taken (default 5)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_solve_all(args.config, args.splits)))
        return
    sides = {"this checkout": None}
    if args.against is not None:
        sides["--against"] = args.against.resolve()
    runs: dict[str, list[dict]] = {label: [] for label in sides}
    for _ in range(args.repeat):
        for label, code in sides.items():
            runs[label].append(_round(args.config, args.splits, code))
    lps = runs["this checkout"][0]["lps"]
    print(f"{args.config}: {lps} LPs ({args.splits} splits per m), min of {args.repeat} rounds")
    best = {label: [min(r[k] for r in rs) for k in ("wall", "cpu")] for label, rs in runs.items()}
    for label, (wall, cpu) in best.items():
        print(f"  {label:14} wall {wall:6.2f} s  cpu {cpu:6.2f} s  ({1e3 * cpu / lps:.2f} ms/LP)")
    if args.against is not None:
        ratio = [best["--against"][i] / best["this checkout"][i] for i in (0, 1)]
        print(f"  this checkout: {ratio[0]:.2f}x as fast (wall), {ratio[1]:.2f}x (cpu)")
        digests = {r["digest"] for rs in runs.values() for r in rs}
        same = "the same" if len(digests) == 1 else "DIFFERENT"
        print(f"solutions (separable, z) of every LP: bit for bit {same}")


if __name__ == "__main__":
    main()
