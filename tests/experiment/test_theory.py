"""The synthetic sources, their exact asymptotic errors, m*(eps), the fits, and `genvdis theory`
end to end on a minute config; run again, it verifies what is up to date from the manifests and
rebuilds the rest to the same bytes."""

from __future__ import annotations

import itertools
import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from genvdis import api
from genvdis.analysis import theory as theory_stats
from genvdis.cli import app
from genvdis.config.sections import SyntheticDataset
from genvdis.config.theory import parse_theory_config
from genvdis.data import synthetic
from genvdis.errors import UserError
from genvdis.experiment import engine, theory
from genvdis.report import plotting
from tests.clichecks import raises_user_error


def _class_frames(spec: SyntheticDataset) -> tuple[np.ndarray, np.ndarray]:
    raw = synthetic.load_synthetic(spec)
    X = raw.frame.drop(columns=raw.target).to_numpy(dtype=float)
    return X, raw.frame[raw.target].to_numpy()


@pytest.mark.parametrize("kind", ["binary", "gaussian"])
def test_generator_matches_its_distribution(kind):
    """Balanced classes, class-conditional means as specified, features independent within a
    class, and the right number of informative features."""
    spec = SyntheticDataset(
        kind=kind, n_features=12, informative=0.5, effect=0.4, n_rows=40_000, seed=3
    )
    params = synthetic.parameters(spec)
    X, y = _class_frames(spec)
    assert abs(y.mean() - 0.5) < 4 * math.sqrt(0.25 / len(y))
    assert params.informative.sum() == 6
    if kind == "binary":
        gap = params.p[1] - params.p[0]
        assert np.allclose(np.abs(gap[params.informative]), 0.4)
        assert np.allclose(gap[~params.informative], 0.0)
        assert set(np.unique(X)) == {0.0, 1.0}
    else:
        gap = (params.mu[1] - params.mu[0]) / params.sigma
        assert np.allclose(np.abs(gap[params.informative]), 0.4)
        assert np.allclose(gap[~params.informative], 0.0)
    for label in (0, 1):
        rows = X[y == label]
        expected = params.p[label] if kind == "binary" else params.mu[label]
        sd = (
            np.sqrt(expected * (1 - expected) / len(rows))
            if kind == "binary"
            else params.sigma / np.sqrt(len(rows))
        )
        assert np.all(np.abs(rows.mean(axis=0) - expected) < 4.5 * sd)
        if kind == "gaussian":
            assert np.allclose(rows.std(axis=0), params.sigma, rtol=0.03)
        corr = np.corrcoef(rows, rowvar=False)
        off = corr[~np.eye(len(corr), dtype=bool)]
        assert np.abs(off).max() < 5 / math.sqrt(len(rows))


def test_load_synthetic_is_seeded_and_typed():
    spec = SyntheticDataset(kind="binary", n_features=5, n_rows=200, seed=1)
    a, b = synthetic.load_synthetic(spec), synthetic.load_synthetic(spec)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert set(a.attributes.values()) == {"discrete"} and a.target == "y"
    assert a.source.startswith("synthetic:") and len(a.checksums["spec"]) == 64
    other = synthetic.load_synthetic(spec.model_copy(update={"seed": 2}))
    assert not a.frame.equals(other.frame)
    gauss = synthetic.load_synthetic(SyntheticDataset(kind="gaussian", n_features=3, n_rows=50))
    assert set(gauss.attributes.values()) == {"continuous"}


def _brute_force_binary(p0: np.ndarray, p1: np.ndarray) -> float:
    """sum over all 2^n inputs x of min(P(x, y=0), P(x, y=1))."""
    total = 0.0
    for bits in itertools.product((0, 1), repeat=len(p0)):
        x = np.array(bits)
        like0 = np.prod(np.where(x, p0, 1 - p0))
        like1 = np.prod(np.where(x, p1, 1 - p1))
        total += 0.5 * min(like0, like1)
    return total


@pytest.mark.parametrize("n_features", [6, 8])  # k = 3, and k = 4 (ties at log-odds 0)
def test_binary_bayes_error_is_exact(n_features):
    spec = SyntheticDataset(kind="binary", n_features=n_features, effect=0.3, seed=5)
    params = synthetic.parameters(spec)
    exact, method = synthetic.asymptotic_error(spec)
    assert method == "exact"
    assert exact == pytest.approx(_brute_force_binary(params.p[0], params.p[1]), abs=1e-12)


def test_binary_bayes_error_with_mixed_groups_and_monte_carlo():
    """Features of different strengths (several groups), and the Monte Carlo fallback."""
    p0 = np.array([0.3, 0.3, 0.6, 0.8, 0.5, 0.45])
    p1 = np.array([0.6, 0.6, 0.2, 0.85, 0.5, 0.7])
    brute = _brute_force_binary(p0, p1)
    exact, method = synthetic.bayes_error_binary(p0, p1)
    assert method == "exact" and exact == pytest.approx(brute, abs=1e-12)
    draws = 400_000
    mc, method = synthetic.bayes_error_binary(p0, p1, max_outcomes=1, draws=draws, seed=1)
    assert method == "monte carlo"
    assert abs(mc - brute) < 4 * math.sqrt(brute * (1 - brute) / draws)


@pytest.mark.parametrize("kind", ["binary", "gaussian"])
def test_asymptotic_error_agrees_with_monte_carlo(kind):
    """The exact Bayes error against the true Bayes rule's error on 300,000 fresh draws."""
    spec = SyntheticDataset(kind=kind, n_features=20, informative=0.5, effect=0.5, seed=2)
    params = synthetic.parameters(spec)
    exact, _ = synthetic.asymptotic_error(spec)
    X, y = synthetic.sample(params, 300_000, np.random.default_rng(9))
    mc = np.mean((synthetic.bayes_log_odds(params, X) > 0) != y)
    assert abs(mc - exact) < 4 * math.sqrt(exact * (1 - exact) / len(y))
    if kind == "gaussian":  # Phi(-Delta/2) with Delta^2 = k effect^2
        assert exact == pytest.approx(stats.norm.cdf(-0.5 * math.sqrt(10) / 2))


@pytest.mark.parametrize("kind", ["binary", "gaussian"])
def test_draws_are_the_stream_s_by_the_documented_formula(kind):
    """The rows are a pure function of the spec, whatever way they are computed: y first, then
    x | y from the same generator, bit for bit (the committed theory outputs depend on it)."""
    spec = SyntheticDataset(kind=kind, n_features=7, n_rows=5000, effect=0.5, seed=4)
    params = synthetic.parameters(spec)
    X, y = synthetic.draw(spec)
    rng = np.random.default_rng([spec.seed, 1])
    expected_y = rng.integers(0, 2, size=spec.n_rows)
    if kind == "binary":
        expected = (rng.random((spec.n_rows, 7)) < params.p[expected_y]).astype(np.int8)
    else:
        expected = params.mu[expected_y] + params.sigma * rng.standard_normal((spec.n_rows, 7))
    np.testing.assert_array_equal(y, expected_y)
    assert X.dtype == expected.dtype and X.tobytes() == expected.tobytes()


def test_m_star_on_a_hand_made_curve():
    sizes = np.array([10, 20, 40, 80, 160])
    curve = np.array([0.40, 0.305, 0.33, 0.308, 0.302])  # within 0.01 of 0.3 at 20, 80, 160
    assert theory_stats.m_star(sizes, curve, 0.3, 0.01) == 80  # 20 does not count: it leaves again
    assert theory_stats.m_star(sizes, curve, 0.3, 0.05) == 20
    assert math.isnan(theory_stats.m_star(sizes, np.r_[curve[:-1], 0.32], 0.3, 0.01))
    errors = np.repeat(curve[:, None], 30, axis=1)  # every split the same: no uncertainty
    rng = np.random.default_rng(0)
    low, high = theory_stats.m_star_interval(sizes, errors, 0.3, 0.01, 200, rng)
    assert (low, high) == (80, 80)


def test_m_star_interval_covers_and_counts_never_as_inf():
    rng = np.random.default_rng(4)
    sizes = np.array([10, 20, 40, 80])
    errors = np.array([0.45, 0.33, 0.312, 0.305])[:, None] + rng.normal(0, 0.02, (4, 40))
    star = theory_stats.m_star(sizes, errors.mean(axis=1), 0.3, 0.01)
    low, high = theory_stats.m_star_interval(sizes, errors, 0.3, 0.01, 500, rng)
    assert low <= star <= high
    never = np.full((4, 10), 0.5)
    assert theory_stats.m_star_interval(sizes, never, 0.3, 0.01, 50, rng) == (math.inf, math.inf)


def test_fits_recover_known_lines():
    n = np.array([10, 20, 50, 100, 200])
    table = pd.DataFrame(
        {
            "n": np.r_[n, n],
            "model": ["naive_bayes"] * 5 + ["logistic_regression"] * 5,
            "epsilon": 0.01,
            "m_star": np.r_[30 + 40 * np.log(n), 5 + 12 * n],
        }
    )
    fits = theory_stats.fit_forms(table).set_index(["model", "form"])
    nb, lr = fits.loc["naive_bayes"], fits.loc["logistic_regression"]
    assert nb.loc["log n", ["a", "b", "r2"]].tolist() == pytest.approx([30, 40, 1])
    assert lr.loc["n", ["a", "b", "r2"]].tolist() == pytest.approx([5, 12, 1])
    assert nb.loc["n", "r2"] < 0.95 and lr.loc["log n", "r2"] < 0.95
    assert lr.loc["power", "b"] == pytest.approx(1, abs=0.05)


@pytest.mark.slow
def test_theory_cli_end_to_end(tmp_path):
    """A minute run: NB and LR reach the exact Bayes error at large m, files are written."""
    config = {
        "name": "tiny",
        "kind": "gaussian",
        "n": [3, 6],
        "effect": 1.0,
        "n_rows": 20_000,
        "m": [10, 30, 100, 1000],
        "splits": 6,
        "epsilon": [0.02],
        "boot": 50,
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app, ["theory", str(path), "--out", str(out), "--quiet", "--splits", "5"]
    )
    assert result.exit_code == 0, result.output
    root = out / "tiny"
    table = pd.read_csv(root / "sample_complexity.csv")
    assert list(table.columns) == theory_stats.SAMPLE_COMPLEXITY_COLUMNS
    assert len(table) == 2 * 2  # n values x models x epsilons
    for n in (3, 6):
        spec = SyntheticDataset(
            kind="gaussian", n_features=n, effect=1.0, n_rows=20_000, informative=0.5
        )
        bayes = synthetic.bayes_error_gaussian(synthetic.parameters(spec))
        rows = table[table["n"] == n]
        assert np.allclose(rows["asymptotic_error"], bayes)
        # m* is measured against the Bayes rule's error on the drawn rows: the same up to noise
        assert np.all(np.abs(rows["reference_error"] - bayes) < 4 * np.sqrt(bayes / 20_000))
        errors = pd.read_csv(root / f"n{n}" / "errors.csv")
        assert errors["split"].nunique() == 5  # --splits overrides the config
        big = errors[errors["m"] == 1000].groupby("model")["error"].mean()
        assert np.all(np.abs(big - bayes) < 0.02)  # both converge to the Bayes error
    assert np.all(table["m_star"] <= 1000) and np.all(table["ci_low"] <= table["m_star"])
    fits = pd.read_csv(root / "fits.csv")
    assert list(fits.columns) == theory_stats.FIT_COLUMNS
    assert (root / "tiny.png").stat().st_size > 0 and (root / "tiny.pdf").stat().st_size > 0


def test_theory_cli_bad_config_exits_2(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nkind: binary\nn: [5]\neffect: 0.3\nm: [10]\nepsilon: [0.7]\n")
    result = CliRunner().invoke(app, ["theory", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "bad.yaml: epsilon" in result.output


def test_a_categorical_column_is_coded_as_its_text_would_be():
    """`prepare`'s shortcut for categorical columns (synthetic binary data): the same codes and
    levels as the column's values written out as text, unused and unsorted levels included."""
    from genvdis.data.preprocessing import _level_codes

    rng = np.random.default_rng(0)
    values = rng.choice(["b", "a", "c", "10", "9"], size=500)
    column = pd.Series(pd.Categorical(values, categories=["c", "zz", "b", "9", "a", "10"]))
    codes, levels = _level_codes(column)
    text_codes, text_levels = _level_codes(pd.Series(values, dtype=object))
    assert levels == text_levels == ["10", "9", "a", "b", "c"]
    assert np.array_equal(codes, text_codes) and codes.dtype == text_codes.dtype
    with_missing = column.copy()
    with_missing[3] = np.nan  # a missing cell takes the text path ('nan'), as before
    assert _level_codes(with_missing)[1] == _level_codes(with_missing.astype(object))[1]


def test_the_bayes_errors_use_scipy_stats_formulas_bit_for_bit():
    """`synthetic.binom_logpmf` and the Gaussian Bayes error avoid importing scipy.stats (about a
    second per process) but give its very doubles, so asymptotes.csv does not move."""
    from scipy import stats

    for c in (1, 2, 5, 17, 35, 50, 200, 1000):
        t = np.arange(c + 1)
        for p in (1e-9, 0.1, 0.35, 0.5, 0.65, 0.8, 0.999):
            assert np.array_equal(synthetic.binom_logpmf(t, c, p), stats.binom.logpmf(t, c, p))
    for n in (1, 10, 100):
        spec = SyntheticDataset(kind="gaussian", n_features=n, effect=0.5, n_rows=1000)
        params = synthetic.parameters(spec)
        delta = np.sqrt((((params.mu[1] - params.mu[0]) / params.sigma) ** 2).sum())
        assert synthetic.bayes_error_gaussian(params) == float(stats.norm.cdf(-delta / 2))


# --- `genvdis theory` run again: up-to-date work verified from the manifests, the rest rebuilt ---


CONFIG = {
    "name": "mini",
    "kind": "binary",
    "n": [3, 5],
    "effect": 0.4,
    "n_rows": 2000,
    "m": [10, 30, 60],
    "splits": 4,
    "epsilon": [0.05],
    "boot": 20,
}


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _forbid(monkeypatch, *names: str) -> None:
    """Make the named steps fail the test if they are called."""

    def refuse(*args, **kwargs):
        raise AssertionError("called although everything was up to date")

    for name in names:
        module, attribute = {"engine": (engine, "run_experiment"),
                             "asymptote": (theory, "asymptote_row"),
                             "plot": (plotting, "plot_theory")}[name]  # fmt: skip
        monkeypatch.setattr(module, attribute, refuse)


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    out = tmp_path_factory.mktemp("theory")
    root = api.run_theory(parse_theory_config(CONFIG), out)
    return root, _files(root)


def _copy(first, tmp_path: Path) -> Path:
    root, files = first
    for name, data in files.items():
        (tmp_path / "mini" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mini" / name).write_bytes(data)
    return tmp_path


@pytest.mark.slow
def test_the_manifest_lists_every_output(first):
    root, files = first
    manifest = json.loads(files[theory.MANIFEST])
    assert set(manifest["files"]) == {"sample_complexity.csv", "fits.csv", "asymptotes.csv",
                                      "mini.png", "mini.pdf"}  # fmt: skip


@pytest.mark.slow
def test_a_rerun_of_an_up_to_date_folder_does_nothing(first, tmp_path, monkeypatch, caplog):
    out = _copy(first, tmp_path)
    _forbid(monkeypatch, "engine", "asymptote", "plot")
    with caplog.at_level(logging.INFO, logger="genvdis"):
        root = api.run_theory(parse_theory_config(CONFIG), out)
    assert _files(root) == first[1]
    assert f"mini: up to date ({root})" in caplog.messages


@pytest.mark.parametrize("damage", ["change mini.png", "delete mini.pdf", "delete fits.csv"])
@pytest.mark.slow
def test_a_damaged_output_is_rebuilt_without_running_the_n_again(
    first, tmp_path, monkeypatch, caplog, damage
):
    out = _copy(first, tmp_path)
    action, name = damage.split()
    if action == "change":
        (out / "mini" / name).write_bytes(b"not a figure")
    else:  # gone, and struck from the manifest too: the manifest must list every output
        (out / "mini" / name).unlink()
        manifest = json.loads((out / "mini" / theory.MANIFEST).read_text())
        del manifest["files"][name]
        (out / "mini" / theory.MANIFEST).write_text(json.dumps(manifest))
    _forbid(monkeypatch, "engine")
    with caplog.at_level(logging.INFO, logger="genvdis"):
        root = api.run_theory(parse_theory_config(CONFIG), out)
    assert _files(root) == first[1]
    assert f"n3: up to date ({root / 'n3'})" in caplog.messages
    assert not any(message.startswith("mini: up to date") for message in caplog.messages)


@pytest.mark.slow
def test_a_changed_run_is_run_again_and_only_it(first, tmp_path, monkeypatch):
    out = _copy(first, tmp_path)
    with open(out / "mini" / "n5" / "errors.csv", "a") as handle:
        handle.write("logistic_regression,60,99,1940,0,0.0,False,0\n")
    ran, real = [], engine.run_experiment
    monkeypatch.setattr(
        engine, "run_experiment", lambda c, *a, **k: ran.append(c.name) or real(c, *a, **k)
    )
    root = api.run_theory(parse_theory_config(CONFIG), out)
    assert ran == ["n5"]
    assert _files(root) == first[1]


@pytest.mark.parametrize(
    "change, reruns",
    [
        ({"epsilon": [0.05, 0.1]}, []),
        ({"splits": 5}, ["n3", "n5"]),
        ({"effect": 0.3}, ["n3", "n5"]),
    ],
)
@pytest.mark.slow
def test_a_changed_config_is_never_taken_for_up_to_date(
    first, tmp_path, monkeypatch, change, reruns
):
    """epsilon changes only the folder's own outputs; splits and effect change every run."""
    out = _copy(first, tmp_path)
    ran, real = [], engine.run_experiment
    monkeypatch.setattr(
        engine, "run_experiment", lambda c, *a, **k: ran.append(c.name) or real(c, *a, **k)
    )
    config = parse_theory_config({**CONFIG, **change})
    root = api.run_theory(config, out)
    assert sorted(ran) == reruns
    fresh = api.run_theory(config, tmp_path / "fresh")
    assert _files(root) == _files(fresh)


@pytest.mark.slow
def test_a_run_and_a_theory_of_one_name_are_refused_in_either_order(
    first, tmp_path, write_toy, toy_config
):
    """A run named like a theory wrote its summary.csv into the theory's folder and `plot`
    drew its figure over the theory's (the theory never up to date again); the theory into a
    run's folder likewise. Both are refused before anything runs, the other's files intact."""
    from typer.testing import CliRunner

    from genvdis.cli import app

    out = _copy(first, tmp_path / "out")
    before = _files(out / "mini")
    text = toy_config("sizes: [10, 20]", "splits: 4", replace={"name: toy": "name: mini"})
    config = write_toy(tmp_path, text, "mini.yaml")
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "-q"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert message.startswith(f"error: {config}: {out / 'mini'}") and "'mini'" in message
    assert "theory" in message and len(message.splitlines()) == 1
    assert _files(out / "mini") == before
    runs = tmp_path / "runs"
    assert CliRunner().invoke(app, ["run", str(config), "--out", str(runs), "-q"]).exit_code == 0
    made = _files(runs / "mini")
    theory_config = tmp_path / "theory.yaml"
    theory_config.write_text(json.dumps(CONFIG))
    result = CliRunner().invoke(app, ["theory", str(theory_config), "--out", str(runs), "-q"])
    assert result.exit_code == 2, result.output
    assert f"{runs / 'mini'}" in result.stderr and "a run named 'mini'" in result.stderr
    assert _files(runs / "mini") == made
    with raises_user_error("'mini'"):  # the API alike
        api.run_theory(parse_theory_config(CONFIG), runs)


@pytest.mark.slow
def test_an_ns_errors_are_read_through_the_runs_check(first, tmp_path, monkeypatch):
    """theory reads each n's errors.csv after deciding the n's run is up to date: the bytes
    read must be the bytes checked against the n's manifest, as every reader of a run does,
    or a file replaced in between gives m* of numbers that are not the run's."""
    out = _copy(first, tmp_path)
    errors = out / "mini" / "n3" / "errors.csv"
    lines = errors.read_text().splitlines(keepends=True)
    errors.write_text("".join([lines[0], *lines[1:]][:-1]))  # one split's row fewer
    monkeypatch.setattr(theory, "_recorded_run", lambda experiment, run_dir: "up to date")
    with pytest.raises(UserError, match=r"n3/errors.csv: changed since its run wrote it"):
        theory._one_n(parse_theory_config(CONFIG), out / "mini", 3, 1, None, False, 0.0)
