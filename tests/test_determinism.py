"""Any number of workers and any backend give the same bytes.

Every split's rows and every random draw of the sampler are pure functions of (seed, m, split
index) (`streams`), so a run's CSVs must not depend on --jobs, on loky vs. threads vs. dask, on
a cluster genvdis starts itself or one it is pointed at, nor on the order tasks finish in.
Two configs on toy.csv: all its attributes (2 continuous, 3 discrete; at m = 10 every training
set is separable, so the version-space sampler runs, and at m = 40 most are not, so Newton does)
and only its discrete ones (at m = 6 most training sets are separable). A third adds scikit-learn
estimator entries, one seeded from the split's stream and warning on most splits (its
warning counts must not depend on the backend either).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from genvdis._runtime import parallel
from genvdis.cli import app
from genvdis.config.experiment import load_config
from genvdis.experiment import engine
from tests.conftest import REPO

# (name, lines added to the shared toy config)
PANELS = {
    "toy": ("sizes: [10, 40]", "splits: 6", "block_size: 2", "seed: 3"),
    "toy-discrete": (
        "attributes: discrete",
        "missing: category",
        "sizes: [6, 30]",
        "splits: 5",
        "block_size: 2",
        "seed: 4",
    ),
    "toy-estimators": (
        "models: [naive_bayes, {name: gnb, estimator: sklearn.naive_bayes.GaussianNB},"
        " {name: sgd, estimator: sklearn.linear_model.SGDClassifier, params: {max_iter: 3}}]",
        "sizes: [10, 40]",
        "splits: 6",
        "block_size: 2",
        "seed: 5",
    ),
}
FILES = ("errors.csv", "summary.csv", "config.yaml")
NAMES = tuple(PANELS)


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["run", *args])
    assert result.exit_code == 0, result.output
    return result.stderr


def _bytes(out: Path) -> dict[tuple[str, str], bytes]:
    return {(n, f): (out / n / f).read_bytes() for n in NAMES for f in FILES}


@pytest.fixture(scope="module")
def setup(tmp_path_factory, toy_config, write_toy):
    """The two configs, and the reference run: --jobs 1, in this process."""
    folder = tmp_path_factory.mktemp("determinism")
    configs = []
    for name, lines in PANELS.items():
        text = toy_config(*lines, replace={"name: toy": f"name: {name}"})
        configs.append(str(write_toy(folder, text, f"{name}.yaml")))
    _run([*configs, "--jobs", "1", "--out", str(folder / "jobs1"), "-q"])
    return folder, configs, _bytes(folder / "jobs1")


def test_reference_run_is_complete_and_exercises_the_sampler(setup):
    folder, _, _ = setup
    ran = {}
    for name, (sizes, splits) in {"toy": ([10, 40], 6), "toy-discrete": ([6, 30], 5)}.items():
        errors = pd.read_csv(folder / "jobs1" / name / "errors.csv")
        # every (model, m, split) exactly once, though blocks of 2 split 5 splits unevenly
        assert len(errors) == 3 * len(sizes) * splits  # 2 models + the majority class
        assert not errors.duplicated(["model", "m", "split"]).any()
        summary = pd.read_csv(folder / "jobs1" / name / "summary.csv")
        lr = summary[summary["model"] == "logistic_regression"]
        assert lr["frac_separable"].max() > 0  # the separable branch really ran
        assert lr["frac_separable"].min() < 1  # and so did Newton
        sampled = errors[(errors["model"] == "logistic_regression") & errors["separable"]]
        ran[name] = sampled["trajectories"].tolist()
    # each chain stopped by its own rule (`sampler.UntilMixed`): not one count for all
    assert len(set(ran["toy"] + ran["toy-discrete"])) > 1
    assert not (folder / "jobs1" / "toy" / ".checkpoints").exists()
    summary = pd.read_csv(folder / "jobs1" / "toy-estimators" / "summary.csv")
    assert summary.loc[summary["model"] == "sgd", "warnings"].gt(0).all()


@pytest.mark.slow
def test_two_loky_workers_give_identical_bytes(setup):
    folder, configs, reference = setup
    # --force: two loky workers, though runs this short would otherwise stay in-process
    _run([*configs, "--jobs", "2", "--force", "--backend", "loky", "--out", str(folder / "jobs2")])
    assert _bytes(folder / "jobs2") == reference


# a fresh process (pytest's own may hold threads: xdist's, a dask client's), which forks
FORKED_RUN = """\
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
from genvdis.config.experiment import load_config
from genvdis.experiment import engine
for path in sys.argv[2:]:
    config = load_config(path)
    engine.run_experiment(config, Path(sys.argv[1]), jobs=2, force=True, base_dir=Path(path).parent)
"""


@pytest.mark.skipif(not parallel.can_fork(), reason="forked workers are for Linux")
def test_forked_workers_give_identical_bytes_and_fork_only_where_safe(setup):
    """The default backend forks its two workers from the run's process, which then sends no
    data with the tasks; a run with estimator entries (scikit-learn loads OpenMP, whose threads
    do not survive a fork) gets loky's workers instead. The same bytes either way."""
    folder, configs, reference = setup
    out = folder / "forked"
    done = subprocess.run([sys.executable, "-c", FORKED_RUN, str(out), *configs],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _bytes(out) == reference
    forked = done.stderr.count("2 workers forked from this process")
    assert forked == 2, done.stderr  # toy and toy-discrete; not toy-estimators


def test_threading_backend_through_the_python_api(setup):
    folder, configs, reference = setup
    for path in configs:
        engine.run_experiment(
            load_config(path),
            folder / "threads",
            jobs=2,
            backend="threading",
            base_dir=folder,  # where toy.csv is, as the CLI takes it from the config's folder
        )
    assert _bytes(folder / "threads") == reference


@pytest.mark.slow
def test_dask_local_cluster_gives_identical_bytes_and_no_dask_chatter(setup):
    pytest.importorskip("distributed")
    folder, configs, reference = setup
    stderr = _run([*configs, "--backend", "dask", "--jobs", "2", "--out", str(folder / "dask")])
    assert _bytes(folder / "dask") == reference
    # dask's INFO logging ("Scheduler at ...", "Start Nanny ...") is not shown to the user
    assert "Scheduler" not in stderr and "Nanny" not in stderr, stderr


@pytest.mark.slow
def test_one_local_dask_cluster_serves_every_config_of_a_command(setup, monkeypatch):
    """A LocalCluster costs ~4 CPU s to start (its workers import everything): `genvdis run`
    of several configs starts one for all of them, with the same bytes, and closes it at
    the end; a run on another worker count gets a cluster of its own, the first closed."""
    distributed = pytest.importorskip("distributed")
    import dask.distributed
    from distributed.core import Status

    import genvdis

    started = []

    class Counted(distributed.LocalCluster):
        def __init__(self, **kwargs) -> None:  # noqa: ANN003
            started.append(self)
            super().__init__(**kwargs)

    monkeypatch.setattr(dask.distributed, "LocalCluster", Counted)
    folder, configs, reference = setup
    dask = ["--backend", "dask", "--jobs", "2", "--force", "-q"]
    _run([*configs, *dask, "--out", str(folder / "kept")])
    assert len(started) == 1
    assert started[0].status == Status.closed
    assert _bytes(folder / "kept") == reference
    with parallel.local_cluster_kept():
        for jobs in (2, 3):
            genvdis.run(configs[0], out=folder / f"on{jobs}", jobs=jobs, backend="dask", force=True)
        assert len(started) == 3
        assert started[1].status == Status.closed
        assert started[2].status == Status.running
    assert started[2].status == Status.closed


def test_dask_external_scheduler_gets_the_data_once_and_the_tasks(setup, dask_cluster):
    # two single-threaded workers, threads of this process (`dask_cluster`; the test above
    # uses worker processes)
    folder, configs, reference = setup
    address = dask_cluster.address
    _run([configs[0], "--backend", "dask", "--scheduler", address, "--out", str(folder / "x")])
    stored = {key for key, *states in dask_cluster.transitions if "memory" in states}
    computed = {key for key, start, _ in dask_cluster.transitions if start == "processing"}
    out = folder / "x" / "toy"
    assert {f: (out / f).read_bytes() for f in FILES} == {f: reference[("toy", f)] for f in FILES}
    scattered = stored - computed  # keys held in a worker's memory that no worker computed
    assert len(scattered) == 1, sorted(stored)  # the data went to the cluster once ...
    assert computed  # ... and the blocks ran on its workers, not in the client


def test_every_compiled_function_names_its_own_floating_point_flags():
    """numba compiles a function that names no fast-math or error-model flags with those of
    whichever caller compiles it first, and keeps that version for every caller: its bits
    would then depend on which kernel a process (or a fresh cache) used first. Scoring's
    double-precision recount was such a callee of a contracted and a plain kernel."""
    import importlib
    import pkgutil

    import numba.core.registry

    import genvdis

    unnamed = []
    for info in pkgutil.walk_packages(genvdis.__path__, "genvdis."):
        if info.name == "genvdis.__main__":
            continue  # runs the command line
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                if value.__module__ != module.__name__:
                    continue  # imported from the module that defines it
                missing = {"fastmath", "error_model"} - set(value.targetoptions)
                unnamed += [f"{module.__name__}.{name} lacks {sorted(missing)}"] if missing else []
    assert not unnamed, unnamed


# --- the same bits on every CPU (issue 30 §7) --------------------------------------------------

# Newton's fits (the gathered layout, at m below, near and above d), the sampler's draws (m < d:
# the row-space basis; m >= d: the chain on z itself), naive Bayes's and LDA's weights, and the
# K-class scoring, on scikit-learn's bundled breast-cancer table: their bytes' digest.
PROBE = """
import hashlib, numpy as np
from sklearn.datasets import load_breast_cancer
from genvdis.experiment import scoring as multiclass
from genvdis.models.logistic import _newton as newton
from genvdis.models.logistic.separable import hyperplanes, sampler
from genvdis.models.logistic._layouts import Gathered
from genvdis.models.lda import LDA
from genvdis.models.naive_bayes import NaiveBayes
from genvdis.data.preprocessing import FeatureLayout
X, y = load_breast_cancer(return_X_y=True)
Z = (X - X.min(0)) / (X.max(0) - X.min(0))
idx = np.stack([np.random.default_rng(s).choice(len(y), 200, replace=False) for s in range(4)])
out = hashlib.sha256()
for m in (10, 40, 200):
    rows = np.concatenate([Z[idx[:, :m]], np.ones((4, m, 1))], axis=2)
    design = Gathered(rows, y[idx[:, :m]].astype(float))
    out.update(newton.newton_logistic(design, np.zeros(31), max_iter=8).beta.tobytes())
for m in (10, 40):
    A = np.stack([hyperplanes.signed_rows(Z[i[:m]], y[i[:m]]) for i in idx])
    z0 = np.stack([hyperplanes.max_margin(a)[1] for a in A])
    keys = np.arange(4, dtype=np.uint64) + 7
    out.update(sampler.sample_version_space(A, z0, 20, keys).tobytes())
    draws, ran = sampler.draw(A, z0, keys, sampler.UntilMixed())
    out.update(draws.tobytes() + ran.tobytes())
for model in (NaiveBayes(FeatureLayout(30)), LDA(FeatureLayout(30))):
    fit = model.fit_batch(Z, y, idx[:, :40], np.arange(4, dtype=np.uint64))
    out.update(fit.coef.tobytes() + fit.intercept.tobytes())
coef = np.random.default_rng(9).normal(size=(3, 4, 31))
Z1 = np.concatenate([Z, np.ones((len(y), 1))], axis=1)
out.update(multiclass._count_argmax_errors(Z1, y * 3 // 1, coef, idx[:3, :40]).tobytes())
print(out.hexdigest())
"""


# the report's numbers: the three curve families fitted, the crossover interpolated in log m,
# the study's slope of log m* on log d (analysis/fits, differences, study)
ANALYSIS_PROBE = """
import hashlib, numpy as np, pandas as pd
from genvdis.analysis import differences, fits, study
m = np.array([10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 400.0])
out = hashlib.sha256()
for k, family in enumerate(fits.FAMILIES):
    err = 0.2 + 0.3 * m ** -0.6 + 0.004 * np.sin(m + k)
    fit = fits.fit_family(family, m, err, np.full(len(m), 0.004))
    out.update(repr(sorted(fit.items())).encode())
rng = np.random.default_rng(3)
rows = [(model, int(mm), s, 0.3 + (0.2 if model == "logistic_regression" else 0.05) * 30 / mm
         + rng.normal(0, 0.05)) for mm in m for s in range(40)
        for model in ("naive_bayes", "logistic_regression")]
errors = pd.DataFrame(rows, columns=["model", "m", "split", "error"])
out.update(repr(sorted(differences.crossover(errors, n_boot=50).items())).encode())
slope = study.loglog_slope([3, 9, 20, 57, 64, 120], [40, 60, 150, 300, 500, 900], n_boot=50)
out.update(repr(sorted(slope.items())).encode())
print(out.hexdigest())
"""


def _probe(probe: str = PROBE, **env: str) -> str:
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _uses_openblas() -> bool:
    from threadpoolctl import threadpool_info

    return any(info.get("internal_api") == "openblas" for info in threadpool_info())


@pytest.mark.slow
def test_fits_and_draws_do_not_depend_on_the_blas_kernel():
    """OpenBLAS picks its kernels per CPU, and each sums in its own order: Newton's X^T W X
    and the sampler's QR and Gram matrix through BLAS moved in the last bits between the
    Haswell, SkylakeX and Prescott kernels, and the sampler's chain amplifies such bits into
    other hyperplanes. So every product is a fixed-order sum (`portable`), checked here under
    two kernels."""
    if not _uses_openblas():
        pytest.skip("numpy's BLAS is not OpenBLAS: OPENBLAS_CORETYPE chooses nothing")
    assert _probe(OPENBLAS_CORETYPE="Haswell") == _probe(OPENBLAS_CORETYPE="Prescott")


@pytest.mark.slow
def test_fits_and_draws_do_not_depend_on_avx512(tmp_path):
    """numpy's exp, log and power take AVX-512 code where the CPU has it, with other last bits
    than the C library's that a CPU without it runs; numba compiles for the host's vector
    width. A narrower CPU emulated (numpy's AVX-512 features off, numba compiling for
    Haswell, into a cache of its own) must give the same bits."""
    import numpy as np

    features = np._core._multiarray_umath.__cpu_features__
    if not features.get("AVX512F"):
        pytest.skip("this CPU has no AVX-512: there is no wider code to compare with")
    narrow = " ".join(
        name
        for name in ("AVX512F", "AVX512CD", "AVX512_SKX", "AVX512_CLX", "AVX512_CNL",
                     "AVX512_ICL", "AVX512_SPR", "X86_V4")
        if features.get(name)
    )  # fmt: skip
    emulated = dict(
        NPY_DISABLE_CPU_FEATURES=narrow,
        NUMBA_CPU_NAME="haswell",
        NUMBA_CACHE_DIR=str(tmp_path),
        OPENBLAS_CORETYPE="Haswell",
    )
    assert _probe() == _probe(**emulated)
    # the analysis files too (fits.csv, analysis.csv, study.csv): their exp, log and power are
    # the C library's (`portable`), which numpy's AVX-512 code would change in the last bits
    assert _probe(ANALYSIS_PROBE) == _probe(ANALYSIS_PROBE, **emulated)


@pytest.mark.slow
def test_a_separable_run_writes_the_same_errors_under_two_blas_kernels(
    tmp_path, mirror_env, monkeypatch
):
    """The issue's run, cut down: boston's separable sizes (30 to 60 rows for 14 weights,
    thin version spaces where the sampler's chain amplifies the last bit) under the Haswell
    and Prescott kernels gave different errors.csv (up to 12 test errors on a split)."""
    import os
    import subprocess
    import sys

    if not _uses_openblas():
        pytest.skip("numpy's BLAS is not OpenBLAS: OPENBLAS_CORETYPE chooses nothing")
    config = tmp_path / "boston.yaml"
    text = (REPO / "configs" / "boston.yaml").read_text()
    config.write_text(text.replace("sizes: [10, 15, 20, 30, 40, 60", "sizes: [30, 40, 60]#"))
    written = {}
    for kernel in ("Haswell", "Prescott"):
        out = tmp_path / kernel
        command = [sys.executable, "-m", "genvdis", "run", str(config), "--splits", "40"]
        done = subprocess.run(
            [*command, "--jobs", "1", "--out", str(out), "--quiet"],
            env={**os.environ, "OPENBLAS_CORETYPE": kernel}, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        written[kernel] = (out / "boston" / "errors.csv").read_bytes()
    assert written["Haswell"] == written["Prescott"]


@pytest.mark.slow
def test_the_analysis_files_do_not_depend_on_the_blas_kernel(tmp_path):
    """The curve fits, the shape tests' contrasts and the crossover's bootstrap sum in fixed
    order or exactly rounded, with a Levenberg-Marquardt of genvdis's own (`fits`): through
    BLAS (curve_fit's LAPACK trust region, np.dot, a matrix product) another kernel rewrites
    fits.csv, shape.csv and analysis.csv in their last digits. A report under two kernels
    must write the same bytes."""
    import os
    import shutil
    import subprocess
    import sys

    if not _uses_openblas():
        pytest.skip("numpy's BLAS is not OpenBLAS: OPENBLAS_CORETYPE chooses nothing")
    config = tmp_path / "bcw.yaml"
    text = REPO / "configs" / "examples" / "breast-cancer-wisconsin.yaml"
    sizes = "sizes: [10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 400]"
    config.write_text(text.read_text().replace(sizes, "sizes: [10, 20, 40, 80, 150, 300]"))
    command = [sys.executable, "-m", "genvdis", "run", str(config), "--splits", "40"]
    done = subprocess.run(
        [*command, "--jobs", "1", "--out", str(tmp_path / "run"), "--quiet"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = {}
    for kernel in ("Haswell", "Prescott"):
        folder = tmp_path / kernel
        shutil.copytree(tmp_path / "run", folder)
        done = subprocess.run(
            [sys.executable, "-m", "genvdis", "report", str(folder)],
            env={**os.environ, "OPENBLAS_CORETYPE": kernel}, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        written[kernel] = {
            path.relative_to(folder): path.read_bytes()
            for name in ("fits.csv", "shape.csv", "analysis.csv", "differences.csv")
            for path in folder.rglob(name)
        }
    assert len(written["Haswell"]) == 4
    assert written["Haswell"] == written["Prescott"]
