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

import numpy as np
from scipy.optimize import linprog

from genvdis import streams

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


def prove_inseparable(A: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Which of the S sets {A_s z > 0} are proven empty by `margin_bound`, with weights built
    from a logistic fit beta (S, d): where the set overlaps, lambda = sigmoid(-A beta) makes the
    likelihood's gradient A^T lambda ~ 0. Under quasi-complete separation the fit drifts off to
    infinity and the gradient shrinks slowly, so more weightings are tried: lambda with its
    vanishing weights (the separated points) zeroed, at three thresholds, and each of those
    projected onto A^T lambda = 0 within its support, by least squares. Any lambda >= 0 gives
    a valid bound, so this only saves linear programs; it never decides wrongly."""
    lam = 0.5 - 0.5 * np.tanh(0.5 * np.einsum("smd,sd->sm", A, beta))  # sigmoid(-A beta)
    proven = margin_bound(A, lam) <= MARGIN_TOL
    for threshold in (1e-6, 1e-3, 1e-2):
        rest = np.flatnonzero(~proven)
        if rest.size == 0:
            break
        A_r, lam_r = A[rest], lam[rest]
        support = lam_r >= threshold * lam_r.max(axis=1, keepdims=True)
        lam_r = np.where(support, lam_r, 0.0)
        A_s = A_r * support[..., None]
        gram = np.swapaxes(A_s, 1, 2) @ A_s
        residual = np.einsum("smd,sm->sd", A_r, lam_r)
        correction = np.einsum("sde,se->sd", np.linalg.pinv(gram), residual)
        projected = np.maximum(lam_r - np.einsum("smd,sd->sm", A_s, correction), 0.0)
        proven[rest] = (margin_bound(A_r, lam_r) <= MARGIN_TOL) | (
            margin_bound(A_r, projected) <= MARGIN_TOL
        )
    return proven


def has_conflicting_duplicates(X: np.ndarray, y: np.ndarray) -> bool:
    """Two identical inputs with different labels: a cheap, exact proof of non-separability."""
    _, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    labels_per_row = np.zeros((inverse.max() + 1, 2), dtype=bool)
    labels_per_row[inverse, y.astype(int)] = True
    return bool(labels_per_row.all(axis=1).any())


@streams.jit
def _trajectory(
    B: np.ndarray, G: np.ndarray, w: np.ndarray, p: np.ndarray, c: np.ndarray, v: np.ndarray,
    duration: float, max_bounces: int,
) -> float:  # fmt: skip
    """One exact HMC trajectory for N(0, I) truncated to {B w > 0}: moves w and p in place for
    time `duration`, or until `max_bounces` walls; returns the time travelled.

    Under the Gaussian's Hamiltonian a particle moves on w cos t + p sin t, so the time it
    meets each wall has a closed form; at the first wall the momentum is reflected
    (Pakman & Paninski, 2014). The wall values c = B w and v = B p are tracked through the
    Gram matrix G = B B^T, so a bounce costs O(m) rather than O(m r). Wall i is met at
    t_i = atan2(v_i, c_i) + pi/2; on the feasible side (c_i > 0) that is increasing in
    v_i / c_i, so the first wall is found with one division per wall and one arctan.
    """
    m, r = B.shape
    for i in range(m):
        c[i] = 0.0
        v[i] = 0.0
        for k in range(r):
            c[i] += B[i, k] * w[k]
            v[i] += B[i, k] * p[k]
    remaining = duration
    last = -1
    for _ in range(max_bounces):
        best_ratio, j_ratio = np.inf, -1
        best_time, j_time = np.inf, -1
        for i in range(m):
            if i == last:
                continue  # the wall it stands on
            if c[i] > 0.0:
                ratio = v[i] / c[i]
                if ratio < best_ratio:
                    best_ratio, j_ratio = ratio, i
            else:  # on or past the wall through rounding: the general formula
                t = np.arctan2(v[i], c[i]) + np.pi / 2
                if t < best_time:
                    best_time, j_time = t, i
        first, j = best_time, j_time
        if j_ratio >= 0:
            t = np.arctan(best_ratio) + np.pi / 2
            if t < first:
                first, j = t, j_ratio
        hit = first < remaining
        tt = first if hit else remaining
        cos, sin = np.cos(tt), np.sin(tt)
        for k in range(r):
            wk = w[k]
            w[k] = wk * cos + p[k] * sin
            p[k] = p[k] * cos - wk * sin
        for i in range(m):
            ci = c[i]
            c[i] = ci * cos + v[i] * sin
            v[i] = v[i] * cos - ci * sin
        remaining -= tt
        if not hit:
            break
        scale = 2.0 * v[j] / G[j, j]
        for k in range(r):
            p[k] -= scale * B[j, k]
        for i in range(m):
            v[i] -= scale * G[j, i]
        c[j] = abs(c[j])
        last = j
    return duration - remaining


@streams.jit
def _chains(
    B: np.ndarray, G: np.ndarray, w0: np.ndarray, keys: np.ndarray, iterations: int,
    warmup_bounces: int, d: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Each problem's chain from w0[s], with its own stream: the final w (S, r), then d
    normals (S, d) and a uniform (S,) for the parts of the draw outside the row space."""
    S, m, r = B.shape
    W = np.empty((S, r))
    V = np.empty((S, d))
    U = np.empty(S)
    state = np.empty(1, dtype=np.uint64)
    w, proposal, p = np.empty(r), np.empty(r), np.empty(r)
    c, v = np.empty(m), np.empty(m)
    for s in range(S):
        state[0] = keys[s]
        w[:] = w0[s]
        duration = np.pi / 2
        for iteration in range(iterations):
            budget = warmup_bounces if iteration == 0 else 20 * warmup_bounces
            proposal[:] = w
            for k in range(r):
                p[k] = streams.next_normal(state)
            travelled = _trajectory(B[s], G[s], proposal, p, c, v, duration, budget)
            if iteration == 0 and travelled > 0:
                duration = travelled
            feasible = True
            for i in range(m):
                total = 0.0
                for k in range(r):
                    total += B[s, i, k] * proposal[k]
                if not total > 0.0:
                    feasible = False
                    break
            if feasible:
                w[:] = proposal
        W[s] = w
        for k in range(d):
            V[s, k] = streams.next_normal(state)
        U[s] = streams.next_uniform(state)
    return W, V, U


WARMUP_BOUNCES = 200


def sample_version_space(
    A: np.ndarray,
    z0: np.ndarray,
    iterations: int,
    keys: np.ndarray,
    warmup_bounces: int = WARMUP_BOUNCES,
) -> np.ndarray:
    """One draw per problem from the uniform law on {A_s z > 0, ||z|| <= 1}, batched.

    A: (S, m, d) constraint rows, z0: (S, d) strictly feasible starts (any scale), keys: one
    random stream per problem (`streams`), so a problem's draw does not depend on which others
    share its batch. `iterations` trajectories are run from z0 (docs/separable.md). The first,
    a warm-up, lasts pi/2 or `warmup_bounces` walls, whichever comes first; the time it reached
    becomes the problem's fixed trajectory duration from then on, so that a very thin version
    space (where the particle meets a wall at every turn) costs about `warmup_bounces` bounces
    per trajectory instead of millions. With a fixed duration each later trajectory is an exact
    HMC move, which leaves the target law invariant. A trajectory that ends off the cone through
    rounding is rejected, so every draw separates.
    """
    S, m, d = A.shape
    Q, _ = np.linalg.qr(np.swapaxes(A, 1, 2))  # (S, d, r): a basis of each row space
    r = Q.shape[2]
    B = np.ascontiguousarray(A @ Q)
    G = B @ np.swapaxes(B, 1, 2)
    w = np.einsum("sdr,sd->sr", Q, z0)
    w *= np.sqrt(r) / np.linalg.norm(w, axis=1, keepdims=True)  # the typical radius
    keys = np.asarray(keys, dtype=np.uint64)
    w, v, u = _chains(B, G, w, keys, int(iterations), int(warmup_bounces), d)
    v -= np.einsum("sdr,sr->sd", Q, np.einsum("sdr,sd->sr", Q, v))
    z = np.einsum("sdr,sr->sd", Q, w) + (v if d > r else 0.0)
    radius = u[:, None] ** (1.0 / d)
    return radius * z / np.linalg.norm(z, axis=1, keepdims=True)
