"""Estimator entries (genvdis/models/estimators.py): the allow-list, the checks before any work, the
per-split loop against a hand-written scikit-learn loop on the same splits, random_state
derivation and warning counts, and estimators whose predictions are not class codes or whose
source changes between runs."""

from __future__ import annotations

import re
import sys
import textwrap
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.naive_bayes import CategoricalNB, GaussianNB
from sklearn.svm import LinearSVC
from typer.testing import CliRunner

from genvdis._runtime import streams
from genvdis.cli import app
from genvdis.config.experiment import parse_config
from genvdis.config.sections import EstimatorSpec
from genvdis.data import sources as datasource
from genvdis.data.preprocessing import FeatureLayout, prepare
from genvdis.errors import UserError
from genvdis.experiment import scoring, splits
from genvdis.models import estimators
from genvdis.store import results
from tests.clichecks import raises_user_error

# A package of the user's own, written to tmp_path: importing it leaves a mark, so a test can
# tell whether anything was imported. `Noisy` warns twice on every split with an odd number of
# positive training rows, and predicts the training set's majority; `MyNB` is written from
# scikit-learn's BaseEstimator and ClassifierMixin alone (no _parameter_constraints); `Picky` has no
# _validate_params and refuses alpha < 0 when fitted; `Fragile` fails on a training set with
# more than 30 rows; `Configured` records scikit-learn's configuration at each fit.
USER_PACKAGE = """
import pathlib, warnings
import numpy as np
pathlib.Path(__file__).with_name("imported").write_text("yes")

class Noisy:
    def __init__(self, random_state=None):
        self.random_state = random_state
    def fit(self, X, y):
        if int(np.sum(y)) % 2:
            warnings.warn("odd", UserWarning)
            warnings.warn("odd again", RuntimeWarning)
        self.majority_ = int(2 * np.sum(y) > len(y))
        return self
    def predict(self, X):
        return np.full(len(X), self.majority_)

class Picky(Noisy):
    def __init__(self, alpha=1.0):
        self.alpha = alpha
    def fit(self, X, y):
        if self.alpha < 0:
            raise ValueError("alpha must be >= 0")
        return super().fit(X, y)

class Fragile(Noisy):
    def fit(self, X, y):
        if len(y) > 30:
            raise FloatingPointError("too many rows\\nsecond line")
        return super().fit(X, y)

class Column(Noisy):
    def predict(self, X):
        return super().predict(X)[:, None]

class Configured(Noisy):
    seen = []
    def fit(self, X, y):
        import sklearn
        config = sklearn.get_config()
        Configured.seen.append((config["skip_parameter_validation"], config["assume_finite"]))
        return super().fit(X, y)

class NoPredict:
    def fit(self, X, y):
        return self

from sklearn.base import BaseEstimator, ClassifierMixin

class MyNB(ClassifierMixin, BaseEstimator):  # scikit-learn's public API only
    def __init__(self, alpha=1.0):
        self.alpha = alpha
    def fit(self, X, y):
        if self.alpha < 0:
            raise ValueError("alpha must be >= 0")
        self.classes_ = np.unique(y)
        counts = np.array([(y == c).sum() for c in self.classes_])
        self.means_ = np.array([X[y == c].sum(axis=0) for c in self.classes_])
        self.means_ = (self.means_ + self.alpha) / (counts[:, None] + 2 * self.alpha)
        return self
    def predict(self, X):
        distance = ((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2)
        return self.classes_[np.argmin(distance, axis=1)]

def not_a_class():
    pass
"""


@pytest.fixture
def user_package(tmp_path, monkeypatch):
    """`userpkg` importable from tmp_path (and forgotten after the test); returns its folder."""
    folder = tmp_path / "site" / "userpkg"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(USER_PACKAGE))
    (folder / "broken.py").write_text("raise RuntimeError('half-installed')\n")
    monkeypatch.syspath_prepend(str(folder.parent))
    yield folder
    for name in [n for n in sys.modules if n == "userpkg" or n.startswith("userpkg.")]:
        del sys.modules[name]


def spec(estimator: str, **fields) -> EstimatorSpec:
    return EstimatorSpec(name=fields.pop("name", "est"), estimator=estimator, **fields)


@pytest.fixture(scope="module")
def toy(toy_config, write_toy, tmp_path_factory):
    """toy.csv prepared as a run prepares it (2 continuous, 3 discrete attributes)."""
    folder = tmp_path_factory.mktemp("toy")
    path = write_toy(folder, toy_config("sizes: [10]"))
    from genvdis.config.experiment import load_config

    config = load_config(path)
    data = prepare(datasource.load_data(config, base_dir=folder), config)
    return data, scoring.EncodedData.from_prepared(data)


# --- the allow-list ----------------------------------------------------------------------------


def test_a_path_outside_the_allow_list_imports_nothing(user_package):
    with raises_user_error("sklearn.") as caught:
        estimators.resolve(spec("userpkg.Noisy"), estimators.allowed_prefixes())
    assert "--allow-import" in str(caught.value) and "models: 'est'" in str(caught.value)
    assert not (user_package / "imported").exists()
    assert "userpkg" not in sys.modules


def test_an_allowed_prefix_is_imported_from_option_or_environment(user_package, monkeypatch):
    assert estimators.resolve(spec("userpkg.Noisy"), estimators.allowed_prefixes(["userpkg"]))
    assert (user_package / "imported").read_text() == "yes"
    monkeypatch.setenv(estimators.ALLOW_ENV, " other , userpkg.")
    assert estimators.allowed_prefixes() == ("sklearn", "other", "userpkg")


def test_a_prefix_allows_whole_module_names_only():
    allowed = ("sklearn", "mypkg")
    assert estimators.is_allowed("mypkg.sub.Model", allowed)
    assert not estimators.is_allowed("mypkgx.Model", allowed)
    assert not estimators.is_allowed("sklearnx.svm.SVC", allowed)


@pytest.mark.parametrize("bad", ["my pkg", "1pkg", "pkg..sub"])
def test_a_bad_prefix_is_refused_by_name(bad, monkeypatch):
    with raises_user_error("--allow-import", f"'{bad}'"):
        estimators.allowed_prefixes([bad])
    monkeypatch.setenv(estimators.ALLOW_ENV, bad)
    with raises_user_error(estimators.ALLOW_ENV, f"'{bad}'"):
        estimators.allowed_prefixes()


# --- the checks before any work ------------------------------------------------------------------


BAD_ENTRIES = [
    (spec("sklearn.nosuch.Model"), "no module named 'sklearn.nosuch'"),
    (spec("sklearn.svm.NoSuchSVC"), "module sklearn.svm has no 'NoSuchSVC'"),
    (spec("userpkg.not_a_class"), "not_a_class is not a class"),
    (spec("userpkg.broken.Model"), "importing userpkg.broken failed: RuntimeError: half-installed"),
    (spec("userpkg.NoPredict"), "not a classifier (it needs fit and predict methods)"),
    (spec("sklearn.linear_model.LinearRegression"), "a regressor, not a classifier"),
    (spec("sklearn.multiclass.OneVsRestClassifier"), "cannot be built without arguments"),
    (spec("sklearn.svm.LinearSVC", params={"Cx": 1}), "params: ValueError: Invalid parameter 'Cx'"),
    (spec("sklearn.svm.LinearSVC", params={"C": -1}), "The 'C' parameter of LinearSVC must be"),
    (spec("userpkg.Picky", params={"alpha": -1}), "params: ValueError: alpha must be >= 0"),
]


@pytest.mark.parametrize(("entry", "message"), BAD_ENTRIES, ids=[m for _, m in BAD_ENTRIES])
def test_a_bad_entry_is_one_line_naming_it(entry, message, user_package):
    with pytest.raises(UserError) as caught:
        estimators.build(entry, FeatureLayout(2), estimators.allowed_prefixes(["userpkg"]))
    text = str(caught.value)
    assert text.startswith(f"models: 'est' ({entry.estimator}): ") and message in text, text
    assert len(text.splitlines()) == 1


def test_random_state_is_supplied_only_where_the_entry_leaves_it_out():
    layout, allowed = FeatureLayout(2), ("sklearn",)
    assert estimators.build(spec("sklearn.svm.LinearSVC"), layout, allowed).seeded
    fixed = estimators.build(spec("sklearn.svm.LinearSVC", params={"random_state": 7}), layout,
                             allowed)  # fmt: skip
    assert not fixed.seeded and fixed.make(123).random_state == 7
    assert not estimators.build(spec("sklearn.naive_bayes.GaussianNB"), layout, allowed).seeded


# --- the per-split loop ------------------------------------------------------------------------


def _reference_loop(make, X, y, m, seed, n_splits, test="rest"):
    """What a user would write: each split drawn alone, a fresh estimator fitted and scored."""
    errors = []
    for s in range(n_splits):
        train, tested = splits.draw_split(y, m, seed, s, "stratified", test)
        predicted = make(s).fit(X[train], y[train]).predict(X[tested])
        errors.append(int(np.sum(predicted != y[tested])))
    return errors


@pytest.mark.parametrize("test", ["rest", 50])
def test_errors_equal_a_hand_written_loop_on_the_same_splits(toy, test):
    data, encoded = toy
    model = estimators.build(spec("sklearn.naive_bayes.GaussianNB"), data.layout, ("sklearn",))
    block, m, seed = range(0, 12), 15, 9
    if test == "rest":
        train, mask = splits.draw_training_block(encoded.y, m, seed, block), None
    else:
        train, mask = splits.draw_block(encoded.y, m, seed, block, "stratified", test)
    errors, warned = estimators.score_block(model, encoded.onehot, encoded.y, train, mask, seed,
                                            block)  # fmt: skip
    expected = _reference_loop(lambda s: GaussianNB(), encoded.onehot, encoded.y, m, seed, 12, test)
    assert errors.tolist() == expected
    assert warned.tolist() == [0] * 12


def test_a_seeded_estimator_gets_its_split_s_random_state(toy):
    data, encoded = toy
    model = estimators.build(spec("sklearn.svm.LinearSVC", params={"max_iter": 3}), data.layout,
                             ("sklearn",))  # fmt: skip
    block, m, seed = range(4, 10), 30, 2
    train = splits.draw_training_block(encoded.y, m, seed, block)
    errors, warned = estimators.score_block(model, encoded.onehot, encoded.y, train, None, seed,
                                            block)  # fmt: skip
    states = estimators.random_states(seed, m, range(0, 10))

    def make(s):
        return LinearSVC(max_iter=3, random_state=states[s])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its ConvergenceWarnings
        expected = _reference_loop(make, encoded.onehot, encoded.y, m, seed, 10)[4:]
    assert errors.tolist() == expected
    assert warned.min() >= 1  # 3 iterations: a ConvergenceWarning on every split


def test_random_states_are_the_split_s_own_and_reproducible():
    first = estimators.random_states(5, 20, range(0, 50))
    assert first == estimators.random_states(5, 20, range(0, 50))
    assert estimators.random_states(5, 20, range(30, 50)) == first[30:]  # blocks do not matter
    assert len(set(first)) == 50 and all(0 <= s < 2**32 for s in first)
    assert first != estimators.random_states(5, 21, range(0, 50))
    model_keys = streams.stream_keys(5, 20, range(0, 50), stream=1)  # the built-ins' stream
    assert first != [int(k >> np.uint64(32)) for k in model_keys]


def test_ordinal_encoding_gives_the_integer_codes_and_categorical_nb_runs(toy):
    data, encoded = toy
    assert data.layout.n_continuous and data.layout.levels
    codes_of_mixed = spec("sklearn.naive_bayes.GaussianNB", encoding="ordinal")
    model = estimators.build(codes_of_mixed, data.layout, ("sklearn",))
    np.testing.assert_array_equal(model.design(encoded.onehot), data.X)
    ordinal = spec("sklearn.naive_bayes.CategoricalNB", encoding="ordinal")
    # on discrete attributes only, each one's number of levels is its min_categories
    discrete = FeatureLayout(0, data.layout.levels)
    codes = data.X[:, data.layout.n_continuous :]
    model = estimators.build(ordinal, discrete, ("sklearn",))
    assert model.params == {"min_categories": list(data.layout.levels)}
    onehot = discrete.onehot(codes)
    block, m = range(0, 8), 10  # small m: test rows hold levels no training row has
    train = splits.draw_training_block(encoded.y, m, 1, block)
    errors, _ = estimators.score_block(model, onehot, encoded.y, train, None, 1, block)

    def make(s):
        return CategoricalNB(min_categories=list(data.layout.levels))

    assert errors.tolist() == _reference_loop(make, codes, encoded.y, m, 1, 8)


def test_warnings_are_counted_per_split_and_never_shown(toy, user_package, recwarn):
    data, encoded = toy
    model = estimators.build(spec("userpkg.Noisy"), data.layout, ("sklearn", "userpkg"))
    block, m = range(0, 20), 25
    train = splits.draw_training_block(encoded.y, m, 0, block, "random")  # positives vary
    _, warned = estimators.score_block(model, encoded.onehot, encoded.y, train, None, 0, block)
    odd = encoded.y[train].sum(axis=1) % 2 == 1
    assert 0 < odd.sum() < 20
    assert warned.tolist() == (2 * odd).tolist()
    assert len(recwarn) == 0


def test_warning_counts_do_not_mix_across_threads(toy, user_package):
    """Threads (the threading backend, in-process dask) count their own warnings only."""
    data, encoded = toy
    model = estimators.build(spec("userpkg.Noisy"), data.layout, ("sklearn", "userpkg"))
    blocks = [range(i * 10, i * 10 + 10) for i in range(4)]
    trains = [splits.draw_training_block(encoded.y, 25, 0, b, "random") for b in blocks]
    together = [None] * 4

    def work(i):
        together[i] = estimators.score_block(
            model, encoded.onehot, encoded.y, trains[i], None, 0, blocks[i]
        )[1].tolist()

    for i in range(4):
        work(i)
    alone, together = together, [None] * 4
    assert sum(map(sum, alone)) > 0
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a count that leaked out would fail its thread
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert together == alone


def _block_error(model, encoded, m: int, block: range) -> str:
    """The one-line error `score_block` stops with on the block's training sets of size m."""
    train = splits.draw_training_block(encoded.y, m, 0, block)
    with pytest.raises(UserError) as caught:
        estimators.score_block(model, encoded.onehot, encoded.y, train, None, 0, block)
    return str(caught.value)


def test_an_estimator_failing_on_a_split_names_entry_m_and_split(toy, user_package):
    data, encoded = toy
    model = estimators.build(spec("userpkg.Fragile", name="weak"), data.layout,
                             ("sklearn", "userpkg"))  # fmt: skip
    assert _block_error(model, encoded, 60, range(0, 5)) == (
        "models: 'weak' failed at m=60, split 0: FloatingPointError: too many rows"
    )


def test_a_prediction_of_the_wrong_shape_stops_the_run(toy, user_package):
    data, encoded = toy
    model = estimators.build(spec("userpkg.Column"), data.layout, ("userpkg",))
    train = splits.draw_training_block(encoded.y, 10, 0, range(3))
    with pytest.raises(UserError, match=r"^models: 'est' failed at m=10, split 0: predict gave "
                       r"an array of shape \(290, 1\) for 290 rows$"):  # fmt: skip
        estimators.score_block(model, encoded.onehot, encoded.y, train, None, 0, range(3))


def test_an_invalid_parameter_fails_on_every_block_s_first_split(toy):
    """Parameters are checked by scikit-learn on the first split of each block (the others
    skip the check): a bad one that got past `build` still stops the run, naming the entry."""
    data, encoded = toy
    model = estimators.EstimatorModel("svm", LinearSVC, {"C": -1.0}, "onehot", data.layout)
    assert _block_error(model, encoded, 30, range(4, 10)) == (
        "models: 'svm' failed at m=30, split 4: InvalidParameterError: The 'C' parameter of "
        "LinearSVC must be a float in the range (0.0, inf). Got -1.0 instead."
    )


def test_a_design_with_nan_fails_on_the_first_split_that_reads_the_row(toy):
    """Finiteness is assumed only of a design checked finite: a NaN in a row that the block's
    first split neither trains nor tests on still stops the run where a split reads it."""
    data, encoded = toy
    model = estimators.build(spec("sklearn.naive_bayes.GaussianNB"), data.layout, ("sklearn",))
    block, m = range(0, 12), 15
    train, mask = splits.draw_block(encoded.y, m, 3, block, "stratified", 50)
    read = mask.copy()
    np.put_along_axis(read, train, True, axis=1)
    first = np.argmax(read, axis=0)  # the first split reading each row (0 if none does)
    row = int(np.flatnonzero(first >= 2)[0])
    onehot = encoded.onehot.copy()
    onehot[row, 0] = np.nan
    with pytest.raises(UserError) as caught:
        estimators.score_block(model, onehot, encoded.y, train, mask, 3, block)
    text = str(caught.value)
    assert text.startswith(f"models: 'est' failed at m=15, split {first[row]}: ValueError: ")
    assert "contains NaN" in text


@pytest.mark.parametrize("finite", [True, False])
def test_checks_are_skipped_after_the_first_split_only_within_the_block(toy, user_package,
                                                                        finite):  # fmt: skip
    import sklearn

    data, encoded = toy
    model = estimators.build(spec("userpkg.Configured"), data.layout, ("userpkg",))
    onehot = encoded.onehot.copy()
    if not finite:
        onehot[0, 0] = np.inf
    train = splits.draw_training_block(encoded.y, 10, 0, range(4))
    before = sklearn.get_config()
    seen = sys.modules["userpkg"].Configured.seen
    seen.clear()  # build's check fitted it once
    estimators.score_block(model, onehot, encoded.y, train, None, 0, range(4))
    assert seen == [(False, False)] + [(True, finite)] * 3
    assert sklearn.get_config() == before


def test_check_config_checks_every_estimator_entry_without_data(user_package):
    base = dict(name="x", dataset="pima", target={"positive": "1"}, sizes=[10])
    entries = ["naive_bayes", {"name": "p", "estimator": "userpkg.Picky"}]
    config = parse_config({**base, "models": entries})
    with raises_user_error("models: 'p'", "userpkg.Picky"):
        estimators.check_config(config.models)
    estimators.check_config(config.models, ["userpkg"])
    # not installed, no version: its source's hash stands for its version (an edit reruns)
    assert re.fullmatch(
        r"unknown\+source\.[0-9a-f]{16}", estimators.versions(config.models)["userpkg"]
    )


def test_warning_lines_say_each_model_once():
    import pandas as pd

    summary = pd.DataFrame({
        "model": ["naive_bayes", "naive_bayes", "svm", "svm", "svm"], "m": [10, 20, 10, 20, 40],
        "n_splits": [5] * 5, "warnings": [0, 0, 3, 0, 4],
    })  # fmt: skip
    assert estimators.warning_lines(summary) == [
        "svm: the estimator raised 7 warning(s) in 15 fits (per m: 10: 3, 40: 4); "
        "summary.csv's warnings column has the counts"
    ]
    assert estimators.warning_lines(summary.drop(columns="warnings")) == []


# --- through the command line ----------------------------------------------------------------

GNB = "{name: gnb, estimator: sklearn.naive_bayes.GaussianNB}"
GRID = ("sizes: [10, 40]", "splits: 6", "block_size: 4", "seed: 3")


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *parts: str) -> str:
    message = result.stderr.strip()
    assert result.exit_code == 2, result.output
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    for part in parts:
        assert part in message, (part, message)
    return message


@pytest.mark.parametrize("test", ["rest", "50"])
def test_a_run_pairs_the_entry_with_the_built_ins_split_by_split(tmp_path, toy, toy_config,
                                                                 write_toy, test):  # fmt: skip
    """The entry's errors on every (m, split) of a run equal the hand-written loop's on
    splits.draw_split's rows (the rows the built-in models get), and adding it changes no
    built-in number."""
    _, encoded = toy
    models = f"models: [naive_bayes, {GNB}, logistic_regression]"
    config = write_toy(tmp_path, toy_config(*GRID, models, f"test: {test}"))
    plain = write_toy(tmp_path, toy_config(*GRID, f"test: {test}"), "plain.yaml")
    for path, out in ((config, "out"), (plain, "plain")):
        assert invoke("run", path, "--out", tmp_path / out, "-q").exit_code == 0
    errors = pd.read_csv(tmp_path / "out" / "toy" / "errors.csv")
    assert list(errors["model"].unique()) == [
        "naive_bayes", "gnb", "logistic_regression", "majority"
    ]  # fmt: skip
    for m in (10, 40):
        ours = errors[(errors["model"] == "gnb") & (errors["m"] == m)]["errors"].tolist()
        size = test if test == "rest" else int(test)
        X, y = encoded.onehot, encoded.y
        assert ours == _reference_loop(lambda s: GaussianNB(), X, y, m, 3, 6, size)
    built_in = errors[errors["model"] != "gnb"].drop(columns="warnings")
    expected = pd.read_csv(tmp_path / "plain" / "toy" / "errors.csv")
    pd.testing.assert_frame_equal(built_in.reset_index(drop=True), expected)
    assert errors["warnings"].eq(0).all()


def test_validate_and_run_refuse_a_path_outside_the_allow_list(tmp_path, toy_config, write_toy,
                                                               user_package):  # fmt: skip
    config = write_toy(
        tmp_path, toy_config(*GRID, "models: [{name: mine, estimator: userpkg.Noisy}]")
    )
    for command in (["validate", config], ["run", config, "--out", tmp_path / "out"]):
        assert_one_line_error(invoke(*command), "models: 'mine' (userpkg.Noisy)",
                              "--allow-import")  # fmt: skip
    assert not (user_package / "imported").exists() and "userpkg" not in sys.modules
    assert not (tmp_path / "out").exists()
    result = invoke("validate", config, "--allow-import", "userpkg")
    assert result.exit_code == 0 and "ok" in result.stdout, result.output


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{name: s, estimator: sklearn.svm.Nope}", "models: 's' (sklearn.svm.Nope): module "),
        ("{name: s, estimator: sklearn.svm.SVR}", "a regressor, not a classifier"),
        ("{name: s, estimator: sklearn.svm.SVC, params: {C: -1}}", "The 'C' parameter of SVC"),
        (
            "{name: s, estimator: sklearn.svm.SVC, params: {random_state: null}}",
            "models.0.params: random_state must be an integer",
        ),
        ("{name: lda, estimator: sklearn.svm.SVC}", "models.0.name: 'lda' is a built-in"),
        ("svm", "models.0: 'svm' is not a built-in model"),
        ("{name: s, estimator: LinearSVC}", "models.0.estimator: String should match pattern"),
    ],
)
def test_validate_names_the_bad_entry_on_one_line(tmp_path, toy_config, write_toy, entry, message):
    config = write_toy(tmp_path, toy_config(*GRID, f"models: [{entry}]"))
    assert_one_line_error(invoke("validate", config), str(config), message)


def test_a_bad_allow_import_stops_the_run_before_any_config_is_read(tmp_path):
    result = invoke("run", tmp_path / "missing.yaml", "--allow-import", "not a module")
    assert_one_line_error(result, "--allow-import: 'not a module' is not a module name")


def test_an_entry_failing_mid_run_stops_with_m_and_split_and_keeps_finished_blocks(
    tmp_path, toy_config, write_toy, user_package
):
    entry = "models: [naive_bayes, {name: weak, estimator: userpkg.Fragile}]"
    config = write_toy(tmp_path, toy_config(*GRID, entry))
    out = tmp_path / "out"
    result = invoke("run", config, "--out", out, "--allow-import", "userpkg")
    assert_one_line_error(result, "models: 'weak' failed at m=40, split 0: FloatingPointError")
    kept = sorted(p.name[:8] for p in (out / "toy" / results.CHECKPOINTS).glob("m*.csv"))
    assert kept == ["m0000010", "m0000010"]  # m = 10's two blocks, finished before m = 40


def test_warnings_are_summed_into_summary_csv_and_said_once(tmp_path, toy_config, write_toy):
    sgd = "{name: sgd, estimator: sklearn.linear_model.SGDClassifier, params: {max_iter: 2}}"
    config = write_toy(tmp_path, toy_config(*GRID, f"models: [naive_bayes, {sgd}]"))
    result = invoke("run", config, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    errors = pd.read_csv(tmp_path / "out" / "toy" / "errors.csv")
    summary = pd.read_csv(tmp_path / "out" / "toy" / "summary.csv")
    per_m = errors.groupby(["model", "m"], sort=False)["warnings"].sum()
    assert summary["warnings"].tolist() == per_m.tolist()
    assert summary.loc[summary["model"] == "naive_bayes", "warnings"].eq(0).all()
    assert summary.loc[summary["model"] == "sgd", "warnings"].gt(0).all()
    said = [line for line in result.stderr.splitlines() if "warning(s)" in line]
    assert said == [f"toy: {line}" for line in estimators.warning_lines(summary)]
    assert "ConvergenceWarning" not in result.stderr  # never shown split by split


def test_an_interrupted_run_resumes_to_the_bytes_of_a_clean_one(
    tmp_path, toy_config, write_toy, monkeypatch
):
    sgd = "{name: sgd, estimator: sklearn.linear_model.SGDClassifier, params: {max_iter: 3}}"
    config = write_toy(tmp_path, toy_config(*GRID, f"models: [{sgd}, naive_bayes, {GNB}]"))
    save, saved = results.CheckpointStore.save, []

    def save_then_stop(self, m, start, frame):
        save(self, m, start, frame)
        saved.append(start)
        if len(saved) == 2:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(results.CheckpointStore, "save", save_then_stop)
        assert invoke("run", config, "--out", tmp_path / "out").exit_code == 130
    result = invoke("run", config, "--out", tmp_path / "out")
    assert result.exit_code == 0 and "resuming, 2 of 4 blocks already done" in result.stderr
    assert invoke("run", config, "--out", tmp_path / "clean", "-q").exit_code == 0
    for name in ("errors.csv", "summary.csv", "config.yaml", "manifest.json"):
        resumed = (tmp_path / "out" / "toy" / name).read_bytes()
        assert resumed == (tmp_path / "clean" / "toy" / name).read_bytes(), name


# --- dataset: {sklearn: load_*} ------------------------------------------------------------------

BUNDLED = (
    "name: bc\ndataset: {sklearn: load_breast_cancer}\nsizes: [20, 100]\nsplits: 3\n"
    "models: [naive_bayes, {name: gnb, estimator: sklearn.naive_bayes.GaussianNB}]\n"
)


def test_a_bundled_dataset_runs_with_no_download_by_name_or_code(tmp_path):
    from sklearn.datasets import load_breast_cancer

    runs = {
        "names": "target: {positive: [malignant]}",
        "codes": "target: {column: target, positive: [0]}",
    }
    for name, target in runs.items():
        (tmp_path / f"{name}.yaml").write_text(BUNDLED + target + "\n")
        result = invoke("run", tmp_path / f"{name}.yaml", "--out", tmp_path / name, "-q")
        assert result.exit_code == 0, result.output
    resolved = yaml.safe_load((tmp_path / "names" / "bc" / "config.yaml").read_text())
    bunch = load_breast_cancer()
    assert resolved["class_counts"] == {"negative": 357, "positive": 212}  # 0 is malignant
    assert resolved["features"]["continuous"] == 30 == len(bunch.feature_names)
    assert resolved["data_source"].endswith("sklearn.datasets.load_breast_cancer()")
    for file in ("errors.csv", "summary.csv"):  # the same rows, named either way
        assert (tmp_path / "names" / "bc" / file).read_bytes() == (
            tmp_path / "codes" / "bc" / file
        ).read_bytes()


@pytest.mark.parametrize(
    ("loader", "message"),
    [
        ("fetch_openml", "dataset: sklearn.datasets.fetch_openml downloads from the network"),
        ("iris", "dataset: 'iris' is not a sklearn.datasets loader"),
        ("load_nothing", "dataset: sklearn.datasets.load_nothing: no such loader"),
        ("load_files", "dataset: sklearn.datasets.load_files: not a bundled table"),
        ("load_sample_images", "sklearn.datasets.load_sample_images: not a table"),
    ],
)
def test_a_loader_that_is_not_a_bundled_table_is_refused(tmp_path, loader, message):
    config = tmp_path / "c.yaml"
    config.write_text(BUNDLED.replace("load_breast_cancer", loader) + "target: {positive: [x]}\n")
    assert_one_line_error(invoke("run", config, "--out", tmp_path / "out"), str(config), message)


# --- issue 30 §6: estimators' public API; CategoricalNB on mixed data ---------------------------


def test_an_estimator_from_base_estimator_alone_runs_end_to_end(tmp_path, toy_config, write_toy,
                                                                user_package):  # fmt: skip
    """A classifier built on BaseEstimator alone has no '_parameter_constraints', so its params
    cannot go through scikit-learn's private _validate_params: it runs, and its numbers are a
    hand-written loop's on the same splits."""
    entry = "{name: mine, estimator: userpkg.MyNB, params: {alpha: 0.5}}"
    config = write_toy(tmp_path, toy_config(*GRID, f"models: [naive_bayes, {entry}]"))
    result = invoke("run", config, "--out", tmp_path / "out", "--allow-import", "userpkg", "-q")
    assert result.exit_code == 0, result.output
    errors = pd.read_csv(tmp_path / "out" / "toy" / "errors.csv")
    config = parse_config(yaml.safe_load(config.read_text()), str(config))
    config._data_dir = tmp_path
    data = prepare(datasource.load_data(config, base_dir=tmp_path), config)
    onehot = data.layout.onehot(data.X)
    make = sys.modules["userpkg"].MyNB
    for m in (10, 40):
        ours = errors[(errors["model"] == "mine") & (errors["m"] == m)]["errors"].tolist()
        assert ours == _reference_loop(lambda s: make(alpha=0.5), onehot, data.y, m, 3, 6)


@pytest.mark.parametrize(
    ("params", "message"),
    [("{alhpa: 1}", "params: ValueError: Invalid parameter 'alhpa'"),
     ("{alpha: -1}", "params: ValueError: alpha must be >= 0")],
)  # fmt: skip
def test_a_bad_parameter_of_a_base_estimator_class_is_one_line(
    tmp_path, toy_config, write_toy, user_package, params, message
):
    entry = f"{{name: mine, estimator: userpkg.MyNB, params: {params}}}"
    config = write_toy(tmp_path, toy_config(*GRID, f"models: [{entry}]"))
    result = invoke("validate", config, "--allow-import", "userpkg")
    assert_one_line_error(result, "models: 'mine' (userpkg.MyNB)", message)


CNB = "{name: cnb, estimator: sklearn.naive_bayes.CategoricalNB, encoding: ordinal}"


def test_categorical_nb_on_continuous_attributes_is_refused_naming_it(tmp_path, toy_config,
                                                                      write_toy):  # fmt: skip
    """The rescaled continuous values, truncated to integers, would be read as categories and
    stop the run with scikit-learn's IndexError: refused before any work, naming it."""
    config = write_toy(tmp_path, toy_config(*GRID, f"models: [naive_bayes, {CNB}]"))
    result = invoke("run", config, "--out", tmp_path / "out")
    assert_one_line_error(result, "models: 'cnb'", "2 continuous attribute(s)", "discretize")
    assert "IndexError" not in result.output


def test_categorical_nb_on_discretized_mixed_data_is_scikit_learn_s(tmp_path, toy_config,
                                                                   write_toy):  # fmt: skip
    """Mixed data with its continuous attributes discretized: every column is discrete, each
    gets its levels as min_categories, and the errors are a direct CategoricalNB's."""
    lines = (*GRID, "preprocessing: {continuous: discretize, bins: 4}", f"models: [{CNB}]")
    config = write_toy(tmp_path, toy_config(*lines))
    assert invoke("run", config, "--out", tmp_path / "out", "-q").exit_code == 0
    errors = pd.read_csv(tmp_path / "out" / "toy" / "errors.csv")
    parsed = parse_config(yaml.safe_load(config.read_text()), str(config))
    data = prepare(datasource.load_data(parsed, base_dir=tmp_path), parsed)
    assert data.layout.n_continuous == 0 and len(data.layout.levels) == 5
    levels = list(data.layout.levels)
    for m in (10, 40):
        entry = errors[errors["model"] != "majority"]  # the baseline every run adds
        ours = entry[entry["m"] == m]["errors"].tolist()
        expected = _reference_loop(
            lambda s: CategoricalNB(min_categories=levels), data.X, data.y, m, 3, 6
        )
        assert ours == expected


def test_a_per_column_parameter_is_checked_on_a_sample_as_wide(tmp_path, toy_config, write_toy):
    """validate has no data: the parameter check fits on a sample as wide as min_categories."""
    entry = CNB.replace("}", ", params: {min_categories: [3, 4, 5]}}")
    config = write_toy(
        tmp_path, toy_config(*GRID, "attributes: [region, plan]", f"models: [{entry}]")
    )
    result = invoke("validate", config)
    assert result.exit_code == 0, result.output


# --- estimators whose predictions, labels or source are not what genvdis expects (the CLI) ---


# `labelpkg`, a package of the user's own: majority-class classifiers whose predict gives the
# majority in another form. Only `Majority`, `Floats` and `Bools` give class codes.
LABEL_PACKAGE = """
import numpy as np

class Majority:
    def fit(self, X, y):
        self.majority_ = int(2 * np.sum(y) > len(y))
        return self
    def predict(self, X):
        return np.full(len(X), self.majority_)

class Floats(Majority):
    def predict(self, X):
        return super().predict(X).astype(float)

class Bools(Majority):
    def predict(self, X):
        return super().predict(X).astype(bool)

class Strings(Majority):
    def predict(self, X):
        return super().predict(X).astype(str)

class PlusMinus(Majority):
    def predict(self, X):
        return 2 * super().predict(X) - 1

class Probability(Majority):
    def predict(self, X):
        return np.where(super().predict(X) == 1, 0.7, 0.3)

class Abstains(Majority):
    def predict(self, X):
        predicted = super().predict(X).astype(float)
        predicted[-1] = np.nan
        return predicted
"""


@pytest.fixture
def label_package(tmp_path, monkeypatch):
    folder = tmp_path / "site" / "labelpkg"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(LABEL_PACKAGE))
    monkeypatch.syspath_prepend(str(folder.parent))
    yield folder
    for name in [n for n in sys.modules if n == "labelpkg" or n.startswith("labelpkg.")]:
        del sys.modules[name]


def run_entry(tmp_path, toy_config, write_toy, cls: str):
    models = f"models: [naive_bayes, {{name: est, estimator: labelpkg.{cls}}}]"
    config = write_toy(tmp_path, toy_config("sizes: [10, 40]", "splits: 4", "seed: 3", models))
    out = tmp_path / cls
    args = ["run", str(config), "--out", str(out), "--allow-import", "labelpkg", "-q"]
    return CliRunner().invoke(app, args), out / "toy"


@pytest.mark.parametrize(
    ("cls", "value"),
    [("Strings", "'0'"), ("PlusMinus", "-1"), ("Probability", "0.3"), ("Abstains", "nan")],
)
def test_predictions_that_are_not_class_codes_stop_the_run(
    tmp_path, toy_config, write_toy, label_package, cls, value
):
    """`predict(X) != y` counts a string, a -1/+1 label, a probability or a NaN wrong on every
    row: such a run wrote error 1.0 (or one too many errors) with exit code 0."""
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, cls)
    message = result.stderr.strip()
    assert result.exit_code == 2, result.output
    assert len(message.splitlines()) == 1, message
    assert message.startswith("error: ") and "models: 'est' failed at m=10, split 0: " in message
    assert f"predict gave {value}, not one of the class codes fit was given (0, 1)" in message
    assert not (run_dir / "summary.csv").exists()


@pytest.mark.parametrize("cls", ["Floats", "Bools"])
def test_class_codes_as_floats_or_booleans_count_as_the_codes(
    tmp_path, toy_config, write_toy, label_package, cls
):
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, cls)
    assert result.exit_code == 0, result.output
    _, plain = run_entry(tmp_path, toy_config, write_toy, "Majority")
    ours, theirs = (pd.read_csv(d / "errors.csv") for d in (run_dir, plain))
    assert ours["errors"].tolist() == theirs["errors"].tolist()


def test_an_edited_package_of_ones_own_is_run_again(tmp_path, toy_config, write_toy, label_package):
    """A package outside site-packages is edited without a new version: its source is in the
    fingerprint, so a rerun after an edit neither calls the old run up to date nor keeps the
    blocks the old code computed beside the new code's."""
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, "Majority")
    assert result.exit_code == 0, result.output
    before = pd.read_csv(run_dir / "errors.csv")
    recorded = yaml.safe_load((run_dir / "config.yaml").read_text())["estimator_versions"]
    assert recorded["labelpkg"].startswith("unknown+source.")
    # the edit: the minority class instead of the majority
    source = label_package / "__init__.py"
    source.write_text(
        source.read_text().replace("2 * np.sum(y) > len(y)", "2 * np.sum(y) <= len(y)")
    )
    for name in [n for n in sys.modules if n == "labelpkg" or n.startswith("labelpkg.")]:
        del sys.modules[name]
    result, run_dir = run_entry(tmp_path, toy_config, write_toy, "Majority")
    assert result.exit_code == 0, result.output
    after = pd.read_csv(run_dir / "errors.csv")
    est = after["model"] == "est"
    # the new code's numbers: each split's errors are the test rows of the other class
    assert (after.loc[est, "errors"] + before.loc[est, "errors"] == after.loc[est, "n_test"]).all()
    assert (after.loc[~est, "errors"] == before.loc[~est, "errors"]).all()  # naive Bayes
