"""Linear separability and separating hyperplanes drawn at random from the version space.

On a linearly separable training set, unregularised logistic regression has no maximum. Ng &
Jordan then picked a separating hyperplane at random with an MCMC sampler. Here the version
space is V = {z = (w, b) : a_i . z > 0 for all i, ||z|| <= 1}, with a_i = s_i (x_i, 1) and
s_i = +-1 the label; it is a convex body (a polyhedral cone cut by the unit ball), and
hit-and-run, started at an interior point, has the uniform distribution on V as its stationary
law. Classification depends only on the direction of z, so a uniform draw from V is a draw of
a separating hyperplane uniform in solid angle.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

MARGIN_TOL = 1e-9


def signed_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """a_i = s_i (x_i, 1): the constraint rows of the version space (last axis gets the 1)."""
    ones = np.ones(X.shape[:-1] + (1,))
    sign = (2.0 * y - 1.0)[..., None]
    return sign * np.concatenate([X, ones], axis=-1)


def max_margin(A: np.ndarray) -> tuple[bool, np.ndarray]:
    """Solve max t s.t. A z >= t, -1 <= z <= 1 (an LP, HiGHS). Strictly separable iff t > 0;
    then z is the maximum-margin hyperplane in the L-infinity normalisation."""
    m, d1 = A.shape
    c = np.zeros(d1 + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-A, np.ones((m, 1))])
    bounds = [(-1.0, 1.0)] * d1 + [(0.0, 1.0)]
    result = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), bounds=bounds, method="highs")
    if result.status != 0:
        return False, np.zeros(d1)
    z, t = result.x[:-1], result.x[-1]
    separable = t > MARGIN_TOL and bool(np.all(A @ z > 0))
    return separable, z


def has_conflicting_duplicates(X: np.ndarray, y: np.ndarray) -> bool:
    """Two identical inputs with different labels: a cheap, exact proof of non-separability."""
    _, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    labels_per_row = np.zeros((inverse.max() + 1, 2), dtype=bool)
    labels_per_row[inverse, y.astype(int)] = True
    return bool(labels_per_row.all(axis=1).any())


def default_steps(dim: int) -> int:
    """Hit-and-run steps per draw: 10 per dimension, at least 200 (see docs/separable.md)."""
    return max(200, 10 * dim)


def hit_and_run(
    A: np.ndarray, z0: np.ndarray, steps: int, rng: np.random.Generator
) -> np.ndarray:
    """One draw per problem from the uniform law on {A_s z > 0, ||z|| <= 1}, batched.

    A: (S, m, d) constraint rows, z0: (S, d) strictly interior starts. Each step picks a
    uniformly random direction u and moves to a uniform point of the chord through z along u.
    """
    z = z0 / (2.0 * np.linalg.norm(z0, axis=1, keepdims=True))
    S, _, d = A.shape
    r = np.einsum("smd,sd->sm", A, z)
    for step in range(steps):
        u = rng.standard_normal((S, d))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        q = np.einsum("smd,sd->sm", A, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = -r / q
        lower = np.where(q > 0, ratio, -np.inf).max(axis=1)
        upper = np.where(q < 0, ratio, np.inf).min(axis=1)
        zu = np.einsum("sd,sd->s", z, u)
        root = np.sqrt(np.maximum(zu**2 - np.einsum("sd,sd->s", z, z) + 1.0, 0.0))
        lower = np.maximum(lower, -zu - root)
        upper = np.minimum(upper, -zu + root)
        t = lower + (upper - lower) * rng.uniform(size=S)
        t = np.where(upper > lower, t, 0.0)
        z += t[:, None] * u
        if step % 50 == 49:
            r = np.einsum("smd,sd->sm", A, z)
        else:
            r += t[:, None] * q
    return z
