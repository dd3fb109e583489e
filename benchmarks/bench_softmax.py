"""The ten-digit example (multinomial logistic regression), end to end: this checkout against
another genvdis, side by side, as `bench_adult.py` does (same options), with this example, 200
splits per m and two workers as defaults.

    git worktree add /tmp/genvdis-before 75f5d91    # 0.6.0 (6b45a30: before Newton-CG)
    GENVDIS_MIRROR=../shared/uci python benchmarks/bench_softmax.py --against /tmp/genvdis-before \
        [--splits 200] [--jobs 2] [--repeat 3] [CONFIG]

It prints the minimum over the interleaved rounds of the wall and CPU seconds of `genvdis run`,
their ratios, and whether errors.csv stayed byte for byte the same (else, per model and m, the
splits that changed and the move of the mean error in standard errors).
"""

from __future__ import annotations

import bench_adult

if __name__ == "__main__":
    bench_adult.main("configs/examples/optdigits-10class.yaml", splits=200, jobs=2)
