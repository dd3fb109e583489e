"""Linear separability and separating hyperplanes drawn at random from the version space.

On a linearly separable training set, unregularised logistic regression has no maximum. Ng &
Jordan then picked a separating hyperplane at random with an MCMC sampler. The version space is
V = {z = (w, b) : a_i . z > 0 for all i, ||z|| <= 1}, with a_i = s_i (x_i, 1) and s_i = +-1 the
label. A classifier depends only on the direction of z, and the uniform law on V has the
direction uniform (in solid angle) over the cone {A z > 0}.

The sampler uses two facts to be fast and exact in law:
- a standard normal vector conditioned on the cone {A z > 0} has that same direction law
  (the normal is rotation invariant and the cone is scale invariant);
- the constraints only see the part of z in the row space of A (rank r <= m). So z = Q w + v,
  with Q an orthonormal basis of the row space, w ~ N(0, I_r) truncated to {A Q w > 0}, and
  v ~ N(0, I) projected on the orthogonal complement, independent and drawn exactly.
w is drawn by exact Hamiltonian Monte Carlo for the truncated normal (each iteration: an
exactly solved Hamiltonian trajectory that bounces off the walls), which costs O(m) per bounce
instead of O(m d).
Finally the radius is drawn as U^(1/d), so the returned point is uniform on V itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import linprog

# A training set is called separable when its L-infinity maximum margin exceeds this. The same
# threshold makes the cheap non-separability certificate below agree with the LP.
MARGIN_TOL = 1e-7


def signed_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """a_i = s_i (x_i, 1): the constraint rows of the version space (last axis gets the 1)."""
    ones = np.ones(X.shape[:-1] + (1,))
    sign = (2.0 * y - 1.0)[..., None]
    return sign * np.concatenate([X, ones], axis=-1)


def max_margin(A: np.ndarray) -> tuple[bool, np.ndarray]:
    """Solve max t s.t. A z >= t, -1 <= z <= 1 (an LP, HiGHS). Separable iff t > MARGIN_TOL;
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


def margin_bound(A: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """An upper bound on the L-infinity max margin from any weights lambda >= 0 (Gordan):
    for ||z||_inf <= 1, min_i a_i.z <= lambda.A z / sum(lambda) <= ||A^T lambda||_1 / sum(lambda).
    With lambda_i = sigmoid(-a_i.beta) at the logistic MLE, A^T lambda is the likelihood's
    gradient (~0), so a bound <= MARGIN_TOL proves non-separability without an LP."""
    gradient = np.einsum("smd,sm->sd", A, weights)
    return np.abs(gradient).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-300)


def has_conflicting_duplicates(X: np.ndarray, y: np.ndarray) -> bool:
    """Two identical inputs with different labels: a cheap, exact proof of non-separability."""
    _, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    labels_per_row = np.zeros((inverse.max() + 1, 2), dtype=bool)
    labels_per_row[inverse, y.astype(int)] = True
    return bool(labels_per_row.all(axis=1).any())


def _exact_hmc_step(
    B: np.ndarray,
    G: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    duration: np.ndarray,
    max_bounces: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One exact HMC trajectory for N(0, I) truncated to {B w > 0}, batched; problem s
    travels for time duration[s], or until max_bounces walls. Returns w and the time
    travelled.

    Under the Gaussian's Hamiltonian a particle moves on w cos t + p sin t, so the time it
    meets each wall has a closed form; at the first wall the momentum is reflected
    (Pakman & Paninski, 2014). Constraint values are tracked through the Gram matrix
    G = B B^T, so a bounce costs O(m) per problem rather than O(m r).
    """
    S = w.shape[0]
    c = np.einsum("smr,sr->sm", B, w)  # a_i . w
    v = np.einsum("smr,sr->sm", B, p)  # a_i . p
    diag = np.einsum("smm->sm", G)
    remaining = duration.astype(float).copy()
    last = np.full(S, -1)
    active = np.arange(S)
    for _ in range(max_bounces):
        ca, va = c[active], v[active]
        t = np.arctan2(va, ca) + np.pi / 2  # first zero of c cos t + v sin t after 0
        just = last[active]
        t[np.flatnonzero(just >= 0), just[just >= 0]] = np.inf  # the wall it stands on
        j = t.argmin(axis=1)
        first = t[np.arange(active.size), j]
        hit = first < remaining[active]
        tt = np.where(hit, first, remaining[active])
        cos, sin = np.cos(tt)[:, None], np.sin(tt)[:, None]
        w_a, p_a = w[active], p[active]
        w[active], p[active] = w_a * cos + p_a * sin, p_a * cos - w_a * sin
        c[active], v[active] = ca * cos + va * sin, va * cos - ca * sin
        remaining[active] -= tt
        bounce = active[hit]
        if bounce.size:
            jb = j[hit]
            scale = 2.0 * v[bounce, jb] / diag[bounce, jb]
            p[bounce] -= scale[:, None] * B[bounce, jb]
            v[bounce] -= scale[:, None] * G[bounce, jb]
            c[bounce, jb] = np.abs(c[bounce, jb])
        last[active] = np.where(hit, j, -1)
        active = bounce
        if active.size == 0:
            break
    return w, duration - remaining


def _normals(rngs: Sequence[np.random.Generator], size: int) -> np.ndarray:
    return np.stack([rng.standard_normal(size) for rng in rngs])


WARMUP_BOUNCES = 200


def sample_version_space(
    A: np.ndarray,
    z0: np.ndarray,
    iterations: int,
    rngs: Sequence[np.random.Generator],
    warmup_bounces: int = WARMUP_BOUNCES,
) -> np.ndarray:
    """One draw per problem from the uniform law on {A_s z > 0, ||z|| <= 1}, batched.

    A: (S, m, d) constraint rows, z0: (S, d) strictly feasible starts (any scale), rngs: one
    generator per problem, so a problem's draw does not depend on which others share its batch.
    `iterations` trajectories are run from z0 (docs/separable.md). The first, a warm-up, lasts
    pi/2 or `warmup_bounces` walls, whichever comes first; the time it reached becomes the
    problem's fixed trajectory duration from then on, so that a very thin version space (where
    the particle meets a wall at every turn) costs about `warmup_bounces` bounces per trajectory
    instead of millions. With a fixed duration each later trajectory is an exact HMC move, which
    leaves the target law invariant. A trajectory that ends off the cone through rounding is
    rejected, so every draw separates.
    """
    S, m, d = A.shape
    Q, _ = np.linalg.qr(np.swapaxes(A, 1, 2))  # (S, d, r): a basis of each row space
    r = Q.shape[2]
    B = A @ Q
    G = B @ np.swapaxes(B, 1, 2)
    w = np.einsum("sdr,sd->sr", Q, z0)
    w *= np.sqrt(r) / np.linalg.norm(w, axis=1, keepdims=True)  # the typical radius
    duration = np.full(S, np.pi / 2)
    for iteration in range(iterations):
        budget = warmup_bounces if iteration == 0 else 20 * warmup_bounces
        proposal, travelled = _exact_hmc_step(B, G, w.copy(), _normals(rngs, r), duration, budget)
        if iteration == 0:
            duration = np.where(travelled > 0, travelled, duration)
        feasible = (np.einsum("smr,sr->sm", B, proposal) > 0).all(axis=1)
        w = np.where(feasible[:, None], proposal, w)
    v = _normals(rngs, d)
    v -= np.einsum("sdr,sr->sd", Q, np.einsum("sdr,sd->sr", Q, v))
    z = np.einsum("sdr,sr->sd", Q, w) + (v if d > r else 0.0)
    radius = np.array([rng.uniform() for rng in rngs])[:, None] ** (1.0 / d)
    return radius * z / np.linalg.norm(z, axis=1, keepdims=True)
