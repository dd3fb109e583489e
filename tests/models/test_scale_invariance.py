"""The models do not depend on a feature's units.

Naive Bayes, LDA and logistic regression's maximum likelihood are invariant to rescaling a
feature: the same classifier, so the same test errors. Code can break that wherever an absolute
constant meets the data's units (a vanishing ridge, a variance floor, LDA's epsilon, the
separability LP's margin): pima in other units would change errors split by split, values near
1e-170 give every model an error of 0.5, values near 1e15 stop a run (the LP fails). Here each
attribute is put in other units (one factor for all, and a factor per attribute from 1e-150 to
1e15) and every model's error counts, split by split, must not change; logistic regression's
separability decisions must not change either. The random separating hyperplane is drawn in
the data's basis and cannot be invariant (docs/separable.md): under `separable: sample` only
the non-separable splits are compared; the maximum-margin hyperplane (`max_margin`) is the
standard basis's, and is.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine

from genvdis.data.preprocessing import FeatureLayout
from genvdis.experiment import splits
from genvdis.models.lda import LDA, MultiLDA
from genvdis.models.logistic.binary import LogisticRegression
from genvdis.models.logistic.softmax import MultiLogisticRegression
from genvdis.models.naive_bayes import MultiNaiveBayes, NaiveBayes

# factors for every attribute at once, and one of a factor per attribute (see `_factors`)
FACTORS = [1e-6, 1e6, 1e-150, 1e15, "mixed"]


def _factors(factor: float | str, width: int) -> np.ndarray:
    """Each attribute's factor: one for all, or ("mixed") powers of ten from 1e-150 to 1e15."""
    if factor == "mixed":
        return 10.0 ** np.random.default_rng(7).integers(-150, 16, width)
    return np.full(width, factor)


def _synthetic(n: int = 300, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes in 4 attributes of unequal spread, one far from 0."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < 0.4).astype(np.int64)
    X = rng.normal(size=(n, 4)) * [1.0, 3.0, 0.2, 50.0] + np.outer(y, [0.8, 1.5, 0.1, 20.0])
    X[:, 3] += 1000.0
    return X, y


def _breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled breast-cancer table, its first 6 attributes (not separable at
    the larger m below)."""
    data = load_breast_cancer()
    return data.data[:, :6], data.target.astype(np.int64)


def _wine() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled wine table: 3 classes, 13 attributes of very unequal units."""
    data = load_wine()
    return data.data, data.target.astype(np.int64)


PANELS = {"synthetic": _synthetic, "breast_cancer": _breast_cancer}


def _errors(model, X: np.ndarray, y: np.ndarray, idx: np.ndarray):
    """Each split's test errors (on every row it does not train on) and separability."""
    fit = model.fit_batch(model.encode(X), y, idx)
    Z = model.encode(X)
    tested = np.ones((len(idx), len(y)), dtype=bool)
    tested[np.arange(len(idx))[:, None], idx] = False
    if fit.coef.ndim == 2:
        predicted = (np.einsum("nd,sd->sn", Z, fit.coef) + fit.intercept[:, None] > 0).astype(int)
    else:
        scores = np.einsum("nd,skd->snk", Z, fit.coef) + fit.intercept[:, None, :]
        predicted = scores.argmax(axis=2)
    return ((predicted != y) & tested).sum(axis=1), fit.separable


def _splits(y: np.ndarray, m: int, count: int = 8) -> np.ndarray:
    return splits.draw_training_block(y, m, 0, range(count))


def _compare(make, X: np.ndarray, y: np.ndarray, factor, sizes, separable_too: bool) -> None:
    """make(layout) fits the same error counts on X and on X in other units, split by split
    (on non-separable splits only, unless separable_too), with the same separability."""
    scaled = X * _factors(factor, X.shape[1])
    layout = FeatureLayout(X.shape[1])
    for m in sizes:
        idx = _splits(y, m)
        errors, separable = _errors(make(layout), X, y, idx)
        errors_scaled, separable_scaled = _errors(make(layout), scaled, y, idx)
        np.testing.assert_array_equal(separable_scaled, separable, err_msg=f"m={m}")
        compared = np.ones(len(idx), dtype=bool) if separable_too else ~separable
        np.testing.assert_array_equal(
            errors_scaled[compared], errors[compared], err_msg=f"m={m}, {factor}"
        )


@pytest.mark.parametrize("factor", FACTORS, ids=str)
@pytest.mark.parametrize("panel", sorted(PANELS))
def test_naive_bayes_and_lda_do_not_depend_on_units(panel, factor):
    X, y = PANELS[panel]()
    for make in (NaiveBayes, LDA):
        _compare(make, X, y, factor, (10, 40, 150), separable_too=True)


@pytest.mark.parametrize("factor", FACTORS, ids=str)
@pytest.mark.parametrize("panel", sorted(PANELS))
def test_logistic_regression_does_not_depend_on_units(panel, factor):
    """The default policy on non-separable splits; max_margin on all (its hyperplane is the
    standard basis's); the separability decision everywhere (m = 10 is mostly separable)."""
    X, y = PANELS[panel]()
    _compare(LogisticRegression, X, y, factor, (10, 40, 150), separable_too=False)

    def max_margin(layout):
        return LogisticRegression(layout, separable="max_margin")

    _compare(max_margin, X, y, factor, (10, 40), separable_too=True)


@pytest.mark.parametrize("factor", [1e-6, 1e-150, "mixed"], ids=str)
def test_k_class_models_do_not_depend_on_units(factor):
    """wine, 3 classes: K-class naive Bayes, LDA and multinomial logistic regression (its
    K-class policy `max_margin`: `sample` is binary only, `ridge` is the data's)."""
    X, y = _wine()

    def max_margin(layout):
        return MultiLogisticRegression(layout, separable="max_margin")

    for make in (MultiNaiveBayes, MultiLDA, max_margin):
        _compare(make, X, y, factor, (12, 60), separable_too=True)


def test_naive_bayes_variance_floor_is_relative_to_each_attribute():
    """An attribute in large units does not swamp another's variance: a floor of var_smoothing
    times the largest variance would make, beside an attribute's variance 1e12 times larger,
    the other's 1e3 (its own 1) and its weight nothing."""
    X, y = _synthetic()
    idx = _splits(y, 100, 1)
    wide = X.copy()
    wide[:, 3] *= 1e12
    model = NaiveBayes(FeatureLayout(4))
    coef = model.fit_batch(X, y, idx).coef[0]
    coef_wide = model.fit_batch(wide, y, idx).coef[0]
    np.testing.assert_allclose(coef_wide[:3], coef[:3], rtol=1e-9)
    assert coef_wide[3] == pytest.approx(coef[3] / 1e12, rel=1e-9)


def test_a_far_sentinel_moves_only_the_splits_that_train_on_it():
    """One sentinel value (-1e9) in a column rescaled to [0, 1] with the data's min and max
    squashes the other values into ~1e-6 of the range. Both models are invariant to that
    affine map, so on splits that do not train on the sentinel row the test errors (on the
    other rows) are those of the data without it (0.38 on pima, where a model that met the
    units would fall to 0.52-0.55)."""
    X, y = _synthetic()
    planted = X.copy()
    planted[0, 1] = -1e9

    def rescaled(data: np.ndarray) -> np.ndarray:
        low, high = data.min(axis=0), data.max(axis=0)
        return (data - low) / (high - low)

    rest = np.arange(1, len(y))
    idx = rest[_splits(y[rest], 40, 20)]  # no split trains on row 0
    for make in (NaiveBayes, LogisticRegression):
        model = make(FeatureLayout(4))
        errors, separable = _errors(model, rescaled(X)[rest], y[rest], idx - 1)
        errors_planted, separable_planted = _errors(
            model, rescaled(planted)[rest], y[rest], idx - 1
        )
        np.testing.assert_array_equal(separable_planted, separable)
        np.testing.assert_array_equal(errors_planted[~separable], errors[~separable])


def _pima(uci_dir) -> tuple[np.ndarray, np.ndarray]:
    raw = np.loadtxt(
        uci_dir / "pima-indians-diabetes" / "pima-indians-diabetes.data", delimiter=","
    )
    return raw[:, :8], raw[:, 8].astype(np.int64)


@pytest.mark.parametrize("factor", [1e-6, 1e6, 1e-150], ids=str)
def test_pima_in_other_units_gives_the_same_errors(uci_dir, factor):
    """The issue's case: pima's attributes (raw, `continuous: none`) times 1e-6, 1e6 and
    1e-150: naive Bayes and logistic regression make the same errors split by split (20 splits,
    logistic regression's non-separable ones)."""
    X, y = _pima(uci_dir)
    sizes = (15, 60, 400)
    for make in (NaiveBayes, LogisticRegression):
        _compare(make, X, y, factor, sizes, separable_too=make is NaiveBayes)


@pytest.mark.parametrize("factor", [1e-6, 1e15], ids=str)
def test_wide_one_hot_data_in_other_units(factor):
    """Wide, mostly-zero data (the sparse layout, one standard basis for the whole table):
    logistic regression's and naive Bayes' errors do not depend on the continuous columns'
    units either."""
    rng = np.random.default_rng(5)
    n, levels = 400, (8, 8, 8, 8, 8)
    codes = rng.integers(0, 8, size=(n, len(levels)))
    cont = rng.normal(size=(n, 2)) * [1.0, 40.0] + [0.0, 300.0]
    score = cont[:, 0] + (cont[:, 1] - 300) / 40 + (codes[:, 0] < 3) - (codes[:, 1] > 5)
    y = (score + 2 * rng.normal(size=n) > 0).astype(np.int64)
    layout = FeatureLayout(2, levels)
    X = np.column_stack([cont, codes]).astype(float)
    scaled = X.copy()
    scaled[:, :2] *= factor
    model = LogisticRegression(layout)
    assert model.shared(model.encode(X), y).sparse is not None  # the sparse layout
    for make in (NaiveBayes, LogisticRegression):
        for m in (150, 300):
            idx = _splits(y, m)
            errors, separable = _errors(make(layout), X, y, idx)
            errors_scaled, separable_scaled = _errors(make(layout), scaled, y, idx)
            np.testing.assert_array_equal(separable_scaled, separable)
            np.testing.assert_array_equal(errors_scaled[~separable], errors[~separable])
            assert (~separable).sum() >= 4
