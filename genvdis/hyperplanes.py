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

Whether a training set is separable at all is a linear program's answer (`max_margin`);
`decide` usually reaches it without the LP, through certificates of that answer that are
checked with their rounding error bounded, so a shortcut never decides wrongly
(docs/separable.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

from genvdis import streams

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

# A training set is called separable when its L-infinity maximum margin exceeds this: the LP
# below is the definition, and every shortcut in `decide` is a certificate of its answer.
MARGIN_TOL = 1e-7
# Splits whose constraint rows are built at once when certifying: bounds the memory.
CHUNK_BYTES = 32 * 2**20


def _gamma(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u): a sum of n products computed in floating point, in
    any order, is off by at most gamma_n times the sum of the products' absolute values."""
    unit = np.finfo(float).eps / 2
    return n * unit / (1 - n * unit)


def signed_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """a_i = s_i (x_i, 1): the constraint rows of the version space (last axis gets the 1)."""
    ones = np.ones(X.shape[:-1] + (1,))
    sign = (2.0 * y - 1.0)[..., None]
    return sign * np.concatenate([X, ones], axis=-1)


def widest(Z: np.ndarray) -> float:
    """1 + max_i ||z_i||_1 over the rows of Z: bounds ||a_i||_1 for every constraint row."""
    return 1.0 + (float(np.abs(Z).sum(axis=-1).max()) if Z.size else 0.0)


def _certified(lowest: np.ndarray, z: np.ndarray, row_norm: np.ndarray | float) -> np.ndarray:
    """min_i a_i.z / ||z||_inf, from the computed min_i a_i.z, lowered by its rounding: a sum of
    d products is off by at most gamma_d ||a_i||_1 ||z||_inf, row_norm bounding ||a_i||_1."""
    g = _gamma(z.shape[-1] + 4)
    scale = np.abs(z).max(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = lowest / scale
    return np.where(scale > 0, ratio - g * np.abs(ratio) - g * (1 + g) * row_norm, -np.inf)


def margin_of(A: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A lower bound, rounding included, on the L-infinity margin min_i a_i.z / ||z||_inf that
    z achieves (A (..., m, d), z (..., d)); -inf for z = 0. Above MARGIN_TOL it proves the set
    separable in the LP's sense."""
    lowest = np.einsum("...md,...d->...m", A, z).min(axis=-1)
    return _certified(lowest, z, np.abs(A).sum(axis=-1).max(axis=-1))


def _margins_on_data(Z: np.ndarray, y: np.ndarray, idx: np.ndarray, z: np.ndarray) -> np.ndarray:
    """`margin_of` for the training sets idx (S, m) of (Z, y), with z (S, d): one product with
    the data instead of a copy of every training set's rows, in pieces of CHUNK_BYTES."""
    sign, row_norm = 2.0 * y - 1.0, widest(Z)
    out = np.empty(len(idx))
    for part in _chunks(np.arange(len(idx)), len(y), 1):
        eta = Z @ z[part, :-1].T + z[part, -1]  # (n, S)
        lowest = (sign[idx[part]] * eta[idx[part], np.arange(part.size)[:, None]]).min(axis=1)
        out[part] = _certified(lowest, z[part], row_norm)
    return out


def margin_bound(A: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """An upper bound on the L-infinity max margin from any weights lambda >= 0, not all 0
    (Gordan): for ||z||_inf <= 1, min_i a_i.z <= lambda.A z / sum(lambda) <= ||A^T lambda||_1 /
    sum(lambda). A (..., m, d), weights (..., m). The weights are scaled to a maximum of 1 (no
    underflow) and the bound covers the rounding of A^T lambda; weights that are all 0, negative
    or not finite prove nothing: inf. With lambda_i = sigmoid(-a_i.beta) at the logistic MLE,
    A^T lambda is the likelihood's gradient (~0), so a bound <= MARGIN_TOL proves
    non-separability without an LP."""
    weights = np.asarray(weights, dtype=float)
    top = weights.max(axis=-1, keepdims=True)
    valid = (top[..., 0] > 0) & np.isfinite(top[..., 0]) & (weights.min(axis=-1) >= 0)
    lam = weights / np.where(valid[..., None], top, 1.0)
    gradient = np.einsum("...md,...m->...d", A, lam)
    spread = np.einsum("...m,...m->...", lam, np.abs(A).sum(axis=-1))
    g = _gamma(A.shape[-2] + A.shape[-1] + 4)
    numerator = (np.abs(gradient).sum(axis=-1) + g * spread) * (1 + g) ** 2
    total = np.where(valid, lam.sum(axis=-1), 1.0)  # >= 1 where valid
    return np.where(valid, numerator / (total * (1 - g)), np.inf)


def newton_bound(bound: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Newton's margin bounds (`newton.NewtonFit.margin_bound`: ||A^T r||_1 / sum |r| with the
    residuals r of its last iterate, on data Z) made rigorous: plus the rounding of A^T r, summed
    over at most all n rows of Z. Valid where that iterate misclassifies a point (a residual of
    at least 1/2: no underflow matters), i.e. where Newton did not stop on a separating one."""
    g = _gamma(Z.shape[0] + Z.shape[1] + 5)
    return (bound + g * widest(Z)) * (1 + g) ** 2


def _solve_lp(A: np.ndarray) -> OptimizeResult:
    """max t s.t. A z >= t, -1 <= z <= 1, 0 <= t <= 1 by HiGHS (its default solver, then interior
    point if that fails). The LP is always feasible (z = 0) and bounded, so a failure is a bug:
    raised, never read as "not separable". scipy.optimize is imported here, on the rare LP,
    not with the module: it costs ~0.3 s of every run's start-up."""
    from scipy.optimize import linprog

    m, d1 = A.shape
    c = np.zeros(d1 + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-A, np.ones((m, 1))])
    bounds = [(-1.0, 1.0)] * d1 + [(0.0, 1.0)]
    for method in ("highs", "highs-ipm"):
        result = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), bounds=bounds, method=method)
        if result.status == 0:
            return result
    raise RuntimeError(f"the separability LP failed: {result.message}")


def max_margin(A: np.ndarray) -> tuple[bool, np.ndarray]:
    """Solve max t s.t. A z >= t, -1 <= z <= 1 (an LP, HiGHS). Separable iff t > MARGIN_TOL;
    then z is the maximum-margin hyperplane in the L-infinity normalisation. The answer is
    certified from both of the LP's solutions: the primal z by the margin it achieves
    (`margin_of`), the dual's weights by `margin_bound`. Only if the maximum margin lies within
    the solver's tolerance of MARGIN_TOL does neither settle it, and the LP's t decides."""
    result = _solve_lp(A)
    z, t = result.x[:-1], result.x[-1]
    achieved = float(margin_of(A, z))
    if achieved > MARGIN_TOL:
        return True, z
    if margin_bound(A, np.maximum(-result.ineqlin.marginals, 0.0)) <= MARGIN_TOL:
        return False, z
    return bool(t > MARGIN_TOL and achieved > 0), z


def prove_inseparable(A: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Which of the S sets {A_s z > 0} are proven empty by `margin_bound`, with weights built
    from a logistic fit beta (S, d): where the set overlaps, lambda = sigmoid(-A beta) makes the
    likelihood's gradient A^T lambda ~ 0. Under quasi-complete separation the fit drifts off to
    infinity and the gradient shrinks slowly, so more weightings are tried: lambda with its
    vanishing weights (the separated points) zeroed, at three thresholds, and each of those
    projected onto A^T lambda = 0 within its support, by least squares. Any lambda >= 0, not all
    0, gives a valid bound, and `margin_bound` proves nothing from weights that are all 0 (the
    projection can clip every weight away), so this only saves linear programs; it never
    decides wrongly."""
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


def _chunks(splits: np.ndarray, m: int, width: int) -> list[np.ndarray]:
    """`splits` in pieces whose constraint rows (m x width each) fit in CHUNK_BYTES."""
    size = max(1, CHUNK_BYTES // (8 * m * width))
    return [splits[i : i + size] for i in range(0, splits.size, size)]


def decide(
    Z: np.ndarray, y: np.ndarray, idx: np.ndarray, beta: np.ndarray, separating: np.ndarray,
    bound: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Which training sets (Z[idx[s]], y[idx[s]]) are separable: the LP's answer (`max_margin`),
    reached by certificates of it where they exist. From a Newton fit (`newton.NewtonFit`:
    beta (S, d), separating, bound), for each split: an iterate that separates with a margin
    above MARGIN_TOL (`margin_of`) proves yes; Newton's own bound (`newton_bound`), the
    weightings of `prove_inseparable` or two identical inputs with different labels prove no;
    the rest go to the LP. Returns separable (S,), a start (S, d) for the sampler (a certified
    separating z where separable: Newton's iterate or the LP's), and which starts are the LP's.
    """

    def rows(s: np.ndarray | int) -> np.ndarray:
        return signed_rows(Z[idx[s]], y[idx[s]])

    m, width = idx.shape[1], Z.shape[1] + 1
    separable, start = separating.copy(), beta.copy()
    from_lp = np.zeros(len(idx), dtype=bool)
    claimed = np.flatnonzero(separating)
    separable[claimed] = _margins_on_data(Z, y, idx[claimed], beta[claimed]) > MARGIN_TOL
    thin = claimed[~separable[claimed]]  # Newton's bound is no certificate where it separated
    unproven = ~separating & ~(newton_bound(bound, Z) <= MARGIN_TOL)
    undecided = np.union1d(np.flatnonzero(unproven), thin)
    for part in _chunks(undecided, m, width):
        proven = prove_inseparable(rows(part), beta[part])
        for s in part[~proven]:
            if has_conflicting_duplicates(Z[idx[s]], y[idx[s]]):
                continue
            separable[s], z = max_margin(rows(s))
            if separable[s]:
                start[s], from_lp[s] = z, True
    return separable, start, from_lp


# The per-wall loops divide by c_i <= 0 on purpose (the result is never read): numpy's error
# model lets them do so without a check, which is what lets them vectorise.
_walls_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@streams.jit
def _values(Bt: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """out = B x, from B transposed (r, m): each wall's sum runs over k in order, as a loop
    over B's rows would (the same bits), but the walls are summed side by side, which
    vectorises."""
    r, m = Bt.shape
    out[:] = 0.0
    for k in range(r):
        xk = x[k]
        for i in range(m):
            out[i] += Bt[k, i] * xk


@_walls_jit
def _ratios(c: np.ndarray, v: np.ndarray, key: np.ndarray) -> int:
    """key_i = v_i / c_i for the walls in front (c_i > 0), inf for the others; returns how many
    others there are (walls reached or crossed through rounding)."""
    behind = 0
    for i in range(c.size):
        ahead = c[i] > 0.0
        key[i] = v[i] / c[i] if ahead else np.inf
        behind += not ahead
    return behind


@_walls_jit
def _turn(
    c: np.ndarray, v: np.ndarray, key: np.ndarray, cos: float, sin: float, scale: float,
    g: np.ndarray,
) -> int:  # fmt: skip
    """Every wall's (c_i, v_i) rotated by the time travelled, v_i reflected off the wall just
    hit (v_i -= scale G_ji), and the scan's keys as in `_ratios`: one pass that vectorises,
    with each value rounded as the step-by-step formulas round it."""
    behind = 0
    for i in range(c.size):
        ci, vi = c[i], v[i]
        cn = ci * cos + vi * sin
        vn = (vi * cos - ci * sin) - scale * g[i]
        c[i], v[i] = cn, vn
        ahead = cn > 0.0
        key[i] = vn / cn if ahead else np.inf
        behind += not ahead
    return behind


@streams.jit
def _least(key: np.ndarray) -> int:
    """The first index of the smallest key (-1 if none is below inf), with four running minima
    side by side: each keeps its first smallest, so ties go to the lowest index as in a plain
    scan, which compares one key at a time and is four times slower."""
    b0 = b1 = b2 = b3 = np.inf
    j0 = j1 = j2 = j3 = -1
    n = key.size - key.size % 4
    for i in range(0, n, 4):
        x0, x1, x2, x3 = key[i], key[i + 1], key[i + 2], key[i + 3]
        if x0 < b0:
            b0, j0 = x0, i
        if x1 < b1:
            b1, j1 = x1, i + 1
        if x2 < b2:
            b2, j2 = x2, i + 2
        if x3 < b3:
            b3, j3 = x3, i + 3
    for i in range(n, key.size):  # later than every index above
        if key[i] < b0:
            b0, j0 = key[i], i
    best, j = b0, j0
    for b, k in ((b1, j1), (b2, j2), (b3, j3)):
        if b < best or (b == best and k < j):
            best, j = b, k
    return j if best < np.inf else -1


@streams.jit
def _first_wall(
    c: np.ndarray, v: np.ndarray, key: np.ndarray, last: int, behind: int
) -> tuple[float, int]:
    """The time to the first wall met and its index (inf, -1 for none), skipping `last`, the
    wall the particle stands on (its key is inf). Wall i is met at t_i = atan2(v_i, c_i) + pi/2;
    in front of it (c_i > 0) that is increasing in the key v_i / c_i, so one arctan serves all
    of those; the `behind` others (rare) take the general formula."""
    best_time, j_time = np.inf, -1
    if behind > 0:
        for i in range(c.size):
            if i != last and not c[i] > 0.0:
                t = np.arctan2(v[i], c[i]) + np.pi / 2
                if t < best_time:
                    best_time, j_time = t, i
    first, j = best_time, j_time
    j_key = _least(key)
    if j_key >= 0:
        t = np.arctan(key[j_key]) + np.pi / 2
        if t < first:
            first, j = t, j_key
    return first, j


@streams.jit
def _trajectory(
    B: np.ndarray, G: np.ndarray, w: np.ndarray, p: np.ndarray, c: np.ndarray, v: np.ndarray,
    key: np.ndarray, duration: float, max_bounces: int,
) -> float:  # fmt: skip
    """One exact HMC trajectory for N(0, I) truncated to {B w > 0}: moves w and p in place for
    time `duration`, or until `max_bounces` walls; returns the time travelled. On entry c = B w
    and v = B p (the wall values); they are left stale.

    Under the Gaussian's Hamiltonian a particle moves on w cos t + p sin t, so the time it
    meets each wall has a closed form; at the first wall the momentum is reflected
    (Pakman & Paninski, 2014). The wall values are tracked through the Gram matrix G = B B^T,
    so a bounce costs O(m) rather than O(m r).
    """
    r = B.shape[1]
    behind = _ratios(c, v, key)
    remaining = duration
    last = -1
    for _ in range(max_bounces):
        first, j = _first_wall(c, v, key, last, behind)
        hit = first < remaining
        tt = first if hit else remaining
        cos, sin = np.cos(tt), np.sin(tt)
        for k in range(r):
            wk = w[k]
            w[k] = wk * cos + p[k] * sin
            p[k] = p[k] * cos - wk * sin
        remaining -= tt
        if not hit:
            break
        scale = 2.0 * (v[j] * cos - c[j] * sin) / G[j, j]
        for k in range(r):
            p[k] -= scale * B[j, k]
        behind = _turn(c, v, key, cos, sin, scale, G[j])
        behind -= not c[j] > 0.0  # the wall just hit is skipped next, not counted
        c[j] = abs(c[j])
        key[j] = np.inf
        last = j
    return duration - remaining


@streams.jit
def _chains(
    B: np.ndarray, Bt: np.ndarray, G: np.ndarray, w0: np.ndarray, keys: np.ndarray,
    iterations: int, warmup_bounces: int, d: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Each problem's chain from w0[s], with its own stream: the final w (S, r), then d
    normals (S, d) and a uniform (S,) for the parts of the draw outside the row space.
    The feasibility check of a trajectory's end computes B w there for every wall; where the
    move is accepted those are the next trajectory's starting wall values."""
    S, m, r = B.shape
    W = np.empty((S, r))
    V = np.empty((S, d))
    U = np.empty(S)
    state = np.empty(1, dtype=np.uint64)
    w, proposal, p = np.empty(r), np.empty(r), np.empty(r)
    here, ahead = np.empty(m), np.empty(m)
    c, v, key = np.empty(m), np.empty(m), np.empty(m)
    for s in range(S):
        state[0] = keys[s]
        w[:] = w0[s]
        _values(Bt[s], w, here)
        duration = np.pi / 2
        for iteration in range(iterations):
            budget = warmup_bounces if iteration == 0 else 20 * warmup_bounces
            proposal[:] = w
            for k in range(r):
                p[k] = streams.next_normal(state)
            c[:] = here
            _values(Bt[s], p, v)
            travelled = _trajectory(B[s], G[s], proposal, p, c, v, key, duration, budget)
            if iteration == 0 and travelled > 0:
                duration = travelled
            _values(Bt[s], proposal, ahead)
            feasible = True
            for i in range(m):
                if not ahead[i] > 0.0:
                    feasible = False
                    break
            if feasible:
                w[:] = proposal
                here[:] = ahead
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
    Bt = np.ascontiguousarray(np.swapaxes(B, 1, 2))
    w = np.einsum("sdr,sd->sr", Q, z0)
    w *= np.sqrt(r) / np.linalg.norm(w, axis=1, keepdims=True)  # the typical radius
    keys = np.asarray(keys, dtype=np.uint64)
    w, v, u = _chains(B, Bt, G, w, keys, int(iterations), int(warmup_bounces), d)
    v -= np.einsum("sdr,sr->sd", Q, np.einsum("sdr,sd->sr", Q, v))
    z = np.einsum("sdr,sr->sd", Q, w) + (v if d > r else 0.0)
    radius = u[:, None] ** (1.0 / d)
    return radius * z / np.linalg.norm(z, axis=1, keepdims=True)
