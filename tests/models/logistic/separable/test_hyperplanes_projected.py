"""The cheaper paths behind adult (discrete)'s speed (issue 17, round 4): the separability
proofs' projection from the smaller Gram matrix (`hyperplanes._projected`). A proof is a proof
whatever weights it uses, so what is checked is that the weights are the ones meant: lambda
minus its least-squares projection onto the support rows' column space (computed here by
numpy's lstsq, independently), and that real quasi-separated one-hot sets are still proven."""

from __future__ import annotations

import numpy as np
import pytest

from genvdis.models.logistic.separable import hyperplanes


def _reference(A: np.ndarray, lam: np.ndarray, support: np.ndarray) -> np.ndarray:
    """lam - A_s c with c minimising |lam - A_s c| (A_s: A's rows off the support zeroed),
    clipped at 0: the projection `prove_inseparable` always meant."""
    A_s = A * support[:, None]
    c = np.linalg.lstsq(A_s, lam * support, rcond=None)[0]
    return np.maximum(lam * support - A_s @ c, 0.0)


@pytest.mark.parametrize("m, d", [(12, 40), (60, 15), (30, 30)])
def test_the_projection_is_the_least_squares_one_from_either_gram_matrix(m, d):
    """Rows fewer or more than the nonzero columns (the p x p and q x q Gram matrices), some
    columns all 0 (absent one-hot levels), a rank-deficient repeat: numpy's answer."""
    rng = np.random.default_rng(m + d)
    A = np.where(rng.random((m, d)) < 0.3, 1.0, 0.0) * rng.choice([-1.0, 1.0], size=(m, 1))
    A[:, 3] = 0.0
    A[:, -1] = np.sign(A[:, 0] + 0.5)  # the intercept's +-1
    A[1] = A[0]
    lam = rng.random(m)
    support = rng.random(m) < 0.8
    lam = np.where(support, lam, 0.0)
    got = hyperplanes._projected(A, lam, support)
    assert np.all(got[~support] == 0.0)
    np.testing.assert_allclose(got, _reference(A, lam, support), atol=1e-10)
