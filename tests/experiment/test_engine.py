"""The engine's blocks: error counts equal a plain count per split, whatever the grouping of
splits into blocks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genvdis._runtime.streams import stream_keys
from genvdis.experiment import engine
from genvdis.experiment.engine import Protocol, run_block
from genvdis.experiment.scoring import EncodedData
from genvdis.experiment.splits import draw_block, draw_training_block
from genvdis.models.lda import LDA
from genvdis.models.logistic_regression import LogisticRegression
from genvdis.models.naive_bayes import NaiveBayes
from tests.clichecks import raises_user_error
from tests.tables import mixed_data


@pytest.mark.parametrize("test", ["rest", 60])
def test_error_counts_equal_a_plain_count_per_split(test):
    """Chunked, class-ordered scoring of every model at once = predict and compare, split by
    split, on each model's own encoding (reference coding for LR and LDA)."""
    X, y, layout = mixed_data()
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout), LDA(layout)]
    block = range(4, 24)
    frame = run_block(data, models, 30, block, Protocol(2, "stratified", test))
    train, test_mask = draw_block(y, 30, 2, block, test=test)
    if test == "rest":
        np.testing.assert_array_equal(train, draw_training_block(y, 30, 2, block))
    for model in models:
        rows = frame[frame.model == model.name]
        Z = data.reference if model.reference_coding else data.onehot
        for s, split in enumerate(block):
            keys = stream_keys(2, 30, [split], stream=1)  # the split's own stream, as the engine
            fit = model.fit_batch(Z, y, train[s : s + 1], keys)
            wrong = ((Z @ fit.coef[0] + fit.intercept[0]) > 0) != y.astype(bool)
            expected = int(wrong[test_mask[s]].sum())
            got = rows[rows.split == split]
            assert int(got.errors.iloc[0]) == expected, (model.name, split)
            assert int(got.n_test.iloc[0]) == int(test_mask[s].sum())


@pytest.mark.parametrize("m", [8, 40, 110])  # separable (sampler), gathered, most rows
def test_results_do_not_depend_on_how_splits_are_grouped(m):
    X, y, layout = mixed_data(seed=3)
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout)]
    protocol = Protocol(5, "stratified", "rest")
    whole = run_block(data, models, m, range(0, 24), protocol)
    parts = pd.concat(
        [run_block(data, models, m, r, protocol) for r in (range(0, 5), range(5, 6), range(6, 24))]
    )
    key = ["model", "split"]
    pd.testing.assert_frame_equal(
        whole.sort_values(key).reset_index(drop=True), parts.sort_values(key).reset_index(drop=True)
    )
    if m == 8:
        assert whole.separable.any()


def test_a_task_returns_its_block_as_the_checkpoint_text_and_the_rows_read_back():
    """A task sends the client its block's checkpoint text and the rows parsed back from it
    (`results.Block`), which hold run_block's very numbers: the client only hashes and
    writes the text, and keeps the rows a resumed run would read."""
    X, y, layout = mixed_data(seed=3)
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout)]
    protocol = Protocol(5, "stratified", "rest")
    m, start, block = engine._task(data, models, 8, range(6, 18), protocol)
    rows = run_block(data, models, 8, range(6, 18), protocol)
    assert (m, start, block.splits) == (8, 6, 12)
    assert block.data == rows.to_csv(index=False, lineterminator="\n").encode()
    pd.testing.assert_frame_equal(block.frame, rows)
    assert rows.separable.any() and (rows.error % 1 != 0).any()  # the sampler's rows too


# --- issue 30 §2 and §5: every class in every test set; Ctrl-C within a second -----------------


def _classes_table(path, counts: dict[str, int]) -> None:
    """A CSV of one continuous attribute and a label column with these class sizes."""
    labels = [label for label, count in counts.items() for _ in range(count)]
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.normal(size=len(labels)).round(4), "y": labels}).to_csv(
        path, index=False
    )


K_CLASS = """\
name: k
dataset: {{path: data.csv, target: y}}
target: {{classes: all}}
models: [naive_bayes]
sizes: {sizes}
splits: {splits}
split: {split}
block_size: {splits}
"""


def test_a_k_class_m_that_takes_a_whole_class_is_refused_naming_it(tmp_path):
    """classes 30 + 30 + 3 rows: a stratified m = 60 takes all 3 rows of 'c' (largest
    remainder), leaving every test set without it; run and validate refuse it, naming m and
    class, before any folder is made; a random split at m = 60 is drawn holding it on both
    sides instead."""
    from genvdis import api

    _classes_table(tmp_path / "data.csv", {"a": 30, "b": 30, "c": 3})
    config = tmp_path / "k.yaml"
    config.write_text(K_CLASS.format(sizes="[10, 60]", splits=4, split="stratified"))
    for call in (
        lambda: api.run(config, out=tmp_path / "out"),
        lambda: list(api.validate([config])),
    ):
        with raises_user_error("m=60", "'c'"):
            call()
    assert not (tmp_path / "out").exists()
    config.write_text(K_CLASS.format(sizes="[10, 60]", splits=4, split="random"))
    summary = api.run(config, out=tmp_path / "out").summary
    assert (summary["n_splits"] == 4).all()


def test_validate_checks_the_grid_only_where_the_data_are_at_hand(tmp_path, monkeypatch):
    """A registered dataset that is not in the cache is not fetched by validate."""
    from genvdis.config.experiment import parse_config
    from genvdis.experiment import engine

    monkeypatch.setenv("GENVDIS_DATA", str(tmp_path / "empty"))
    monkeypatch.delenv("GENVDIS_MIRROR", raising=False)
    config = parse_config(
        {"name": "l", "dataset": "lenses", "target": {"positive": ["1"]}, "sizes": [4, 20]}
    )
    assert not engine.check_sizes_at_hand(config, tmp_path)
    assert not (tmp_path / "empty").exists()


# Runs `genvdis` as a terminal does: SIGINT raises KeyboardInterrupt (a process started in the
# background inherits SIGINT ignored, and Python then installs no handler of its own).
CTRL_C = """\
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from genvdis.cli import app
app(args=sys.argv[1:], prog_name="genvdis")
"""


@pytest.mark.slow
def test_ctrl_c_stops_a_run_within_a_second_and_keeps_finished_blocks(tmp_path):
    """Three two-row classes among 5000 rows, split: random: at m = 10 the rejection loop
    alone needed ~10^7 draws a split, in one compiled call Ctrl-C could not stop; at m = 4990
    a block of 1000 splits takes seconds to draw, in calls of ~0.1 s. SIGINT during it ends
    the run at once, with the usual message, and m = 10's finished block stays on disk."""
    import signal
    import subprocess
    import sys
    import time

    from genvdis.store import results

    _classes_table(tmp_path / "data.csv", {"a": 2497, "b": 2497, "c": 2, "d": 2, "e": 2})
    (tmp_path / "k.yaml").write_text(
        K_CLASS.format(sizes="[10, 4990]", splits=1000, split="random")
    )
    run = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, "run", "k.yaml", "--out", "out"],
        cwd=tmp_path, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    checkpoints = tmp_path / "out" / "k" / results.CHECKPOINTS
    try:
        deadline = time.monotonic() + 90
        while not list(checkpoints.glob("m*.csv")) and time.monotonic() < deadline:
            assert run.poll() is None, run.stderr.read()
            time.sleep(0.05)
        done = list(checkpoints.glob("m*.csv"))
        assert done, "m = 10's block did not finish in 90 s"
        time.sleep(0.5)  # into m = 4990's draw
        assert run.poll() is None, "the run ended before Ctrl-C"
        sent = time.monotonic()
        run.send_signal(signal.SIGINT)
        stderr = run.communicate(timeout=30)[1]
        waited = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, stderr
    assert "interrupted: finished blocks are kept" in stderr and "Traceback" not in stderr
    assert waited < 3, waited
    assert [p.name for p in checkpoints.glob("m*.csv")] == [p.name for p in done]


def test_the_sampler_runs_in_short_calls_with_the_same_draws(monkeypatch):
    """The sampler's chains (up to ~0.8 s a call on sonar's 250-split blocks) run in pieces
    of about shortcalls.CALL_SECONDS, between which Ctrl-C is seen; each problem has its own
    stream, so the pieces give the very draws of one call."""
    from genvdis._runtime import shortcalls
    from genvdis.models.logistic.separable import hyperplanes, sampler

    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 5))
    A = np.stack(
        [hyperplanes.signed_rows(X, (X[:, 0] + 0.1 * s > 0).astype(int)) for s in range(9)]
    )
    z0 = np.stack([hyperplanes.max_margin(a)[1] for a in A])
    keys = stream_keys(1, 12, range(9), stream=1)
    whole = sampler.sample_version_space(A, z0, 5, keys)
    calls, chains = [], sampler._chains

    def counted(B, *args):
        calls.append(len(B))
        return chains(B, *args)

    monkeypatch.setattr(sampler, "_chains", counted)
    monkeypatch.setattr(shortcalls, "CALL_SECONDS", 0.0)  # one problem a call after the first
    np.testing.assert_array_equal(sampler.sample_version_space(A, z0, 5, keys), whole)
    assert calls == [4, 1, 1, 1, 1, 1]


def test_in_short_calls_sizes_pieces_by_time_and_joins_them(monkeypatch):
    from genvdis._runtime import shortcalls

    pieces = []

    def call(a, b):
        pieces.append((a, b))
        return np.arange(a, b), np.arange(a, b)[:, None] * 2

    first, second = shortcalls.in_short_calls(call, 100)
    np.testing.assert_array_equal(first, np.arange(100))
    np.testing.assert_array_equal(second[:, 0], 2 * np.arange(100))
    assert pieces[0] == (0, 4) and pieces[1][1] - pieces[1][0] == 16  # fast: grows fourfold
    assert shortcalls.in_short_calls(call, 0)[0].size == 0


@pytest.mark.parametrize("test", ["rest", 60])
def test_scoring_in_pieces_of_splits_gives_the_same_errors(monkeypatch, test):
    """A block is scored in pieces of splits when it is large (a 1,000,000-row table's took
    10 s in one call, deaf to Ctrl-C): one split a piece here, the same rows as one call."""
    from genvdis._runtime import shortcalls
    from genvdis.experiment import engine

    X, y, layout = mixed_data()
    data = EncodedData.encode(X, y, layout)
    models = [NaiveBayes(layout), LogisticRegression(layout), LDA(layout)]
    protocol = Protocol(2, "stratified", test)
    whole = run_block(data, models, 30, range(0, 12), protocol)
    pieces, score = [], engine.count_errors

    def counted(data, coef, train, *args):
        pieces.append(len(train))
        return score(data, coef, train, *args)

    monkeypatch.setattr(engine, "count_errors", counted)
    monkeypatch.setattr(engine, "SCORE_WORK", 1)
    monkeypatch.setattr(shortcalls, "CALL_SECONDS", 0.0)
    pd.testing.assert_frame_equal(run_block(data, models, 30, range(0, 12), protocol), whole)
    assert pieces == [1] * 12


# --- the majority-class baseline every run adds ------------------------------------------------

BINARY = "models: [naive_bayes, logistic_regression]"
REGION_TARGET = "dataset: {path: toy.csv, target: region}"  # region's 4 values: a 4-class target


def _toy_run(folder, write_toy, toy_config, *lines, baseline=True, replace=None):
    """A toy config run by the engine itself; its config, prepared data and errors.csv."""
    from genvdis.config.experiment import load_config
    from genvdis.data.preprocessing import prepare
    from genvdis.data.sources import source_of

    path = write_toy(folder, toy_config(*lines, "sizes: [12, 40]", "splits: 7", replace=replace))
    config = load_config(path)
    run_dir = engine.run_experiment(config, folder / "out", base_dir=folder, baseline=baseline)
    data = prepare(source_of(config.dataset, folder).load(), config)
    return config, data, pd.read_csv(run_dir / "errors.csv", dtype={"errors": int})


@pytest.mark.parametrize(
    ("lines", "replace"),
    [
        ((BINARY,), None),
        (("models: [naive_bayes]",), {"dataset: {path: toy.csv, target: label}": REGION_TARGET,
                                       'target: {positive: ["yes"]}': "target: {classes: all}"}),
    ],
    ids=["binary", "4 classes"],
)  # fmt: skip
def test_every_run_scores_the_majority_class_as_dummy_most_frequent(
    tmp_path, write_toy, toy_config, lines, replace
):
    """A config that does not name `majority` gets it, last; its per-split errors are those of
    scikit-learn's DummyClassifier(strategy="most_frequent") on the engine's own splits."""
    from sklearn.dummy import DummyClassifier

    config, data, errors = _toy_run(tmp_path, write_toy, toy_config, *lines, replace=replace)
    assert len(data.class_counts) == (2 if replace is None else 4)
    assert errors["model"].iloc[-1] == "majority" and config.test == "rest"
    names = [spec.name for spec in config.models]
    assert list(dict.fromkeys(errors["model"])) == [*names, "majority"]
    n = len(data.y)
    for m in config.size_grid:
        train = draw_training_block(data.y, m, config.seed, range(7), config.split)
        rows = errors[(errors["model"] == "majority") & (errors["m"] == m)]
        for s, at in enumerate(train):
            test = np.setdiff1d(np.arange(n), at)
            dummy = DummyClassifier(strategy="most_frequent").fit(data.X[at], data.y[at])
            wrong = int((dummy.predict(data.X[test]) != data.y[test]).sum())
            assert rows["errors"].iloc[s] == wrong, (m, s)


def test_the_baseline_moves_no_other_model_s_rows_and_is_never_doubled(
    tmp_path, write_toy, toy_config
):
    """The other models' rows of errors.csv, byte for byte, are a run's without the baseline;
    a config that lists `majority` itself gets it once, with the same numbers."""
    _, _, plain = _toy_run(tmp_path / "a", write_toy, toy_config, BINARY, baseline=False)
    _, _, added = _toy_run(tmp_path / "b", write_toy, toy_config, BINARY)
    assert "majority" not in set(plain["model"])
    pd.testing.assert_frame_equal(added[added["model"] != "majority"], plain)
    listed = "models: [majority, naive_bayes, logistic_regression]"
    _, _, own = _toy_run(tmp_path / "c", write_toy, toy_config, listed)
    assert list(dict.fromkeys(own["model"])) == ["majority", "naive_bayes", "logistic_regression"]
    key = ["model", "m", "split"]
    pd.testing.assert_frame_equal(
        own.sort_values(key).reset_index(drop=True), added.sort_values(key).reset_index(drop=True)
    )
    text = (tmp_path / "b" / "out" / "toy" / "config.yaml").read_text()
    assert "\nbaseline: majority\n" in text  # fingerprinted: a run with it is another run
