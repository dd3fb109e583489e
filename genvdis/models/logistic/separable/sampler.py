"""Separating hyperplanes drawn at random, uniformly, from a version space.

The version space of a separable training set is V = {z : A z > 0, ||z|| <= 1} (rows
a_i = s_i (x_i, 1), `hyperplanes.signed_rows`). A classifier depends only on the direction of
z, and the uniform law on V has the direction uniform (in solid angle) over the cone
{A z > 0}. The sampler uses two facts to be fast and exact in law:
- a standard normal vector conditioned on the cone {A z > 0} has that same direction law
  (the normal is rotation invariant and the cone is scale invariant);
- the constraints only see the part of z in the row space of A (rank r <= m). So where m < d,
  z = Q w + v, with Q an orthonormal basis of the row space, w ~ N(0, I_m) truncated to
  {A Q w > 0}, and v ~ N(0, I) projected on the orthogonal complement, independent and drawn
  exactly; where m >= d the chain runs on z itself (w = z, B = A: a basis of R^d is not needed,
  and any would only rotate the chain).
w is drawn by exact Hamiltonian Monte Carlo for the truncated normal (each iteration: an
exactly solved Hamiltonian trajectory that bounces off the walls), which costs O(m) per bounce
instead of O(m d). Each chain runs until its own statistic says it has forgotten its start
(`UntilMixed`), or a fixed number of trajectories (`Fixed`). Finally the radius is drawn as
U^(1/d), so the returned point is uniform on V itself (docs/separable.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from genvdis._runtime import portable, shortcalls, streams
from genvdis._runtime.jit import jit

# The per-wall loops divide by c_i <= 0 on purpose (the result is never read): numpy's error
# model lets them do so without a check, which is what lets them vectorise.
_walls_jit = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")


@jit
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


@jit
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


@jit
def _hit_behind(
    c: np.ndarray, v: np.ndarray, key: np.ndarray, last: int, rc: float, rs: float
) -> tuple[bool, int, float, float]:
    """`_next_hit` where some walls are behind (c_i <= 0, rare: reached or crossed through
    rounding): every wall's hit time t_i = atan2(v_i, c_i) + pi/2 is compared explicitly."""
    best_time, j = np.inf, -1
    for i in range(c.size):
        if i != last and not c[i] > 0.0:
            t = np.arctan2(v[i], c[i]) + np.pi / 2
            if t < best_time:
                best_time, j = t, i
    j_key = _least(key)
    if j_key >= 0:
        t = np.arctan(key[j_key]) + np.pi / 2
        if t < best_time:
            best_time, j = t, j_key
    if best_time < np.arctan2(rs, rc):
        return True, j, np.cos(best_time), np.sin(best_time)
    return False, -1, rc, rs


@jit
def _next_hit(
    c: np.ndarray, v: np.ndarray, key: np.ndarray, last: int, behind: int, rc: float, rs: float
) -> tuple[bool, int, float, float]:
    """Whether a wall is met before the time left runs out, which (skipping `last`, the wall
    the particle stands on), and the cosine and sine of the time to it; else the time left's,
    (rc, rs). Wall i in front (c_i > 0) is met at t_i = arctan(v_i / c_i) + pi/2, increasing
    in the key v_i / c_i, so the first is the smallest key, and neither t_i nor a
    trigonometric function is needed: cos t = -k / sqrt(1 + k^2), sin t = 1 / sqrt(1 + k^2),
    and t < time left (in (0, pi), with cosine rc and sine rs > 0) iff k rs < -rc."""
    if behind > 0:
        return _hit_behind(c, v, key, last, rc, rs)
    j = _least(key)
    if j < 0 or not rs > 0.0:
        return False, -1, rc, rs
    k = key[j]
    if not k * rs < -rc:
        return False, -1, rc, rs
    if abs(k) < 1e150:
        h = np.sqrt(1.0 + k * k)
        return True, j, -k / h, 1.0 / h
    return True, j, (-1.0 if k > 0 else 1.0), 1.0 / abs(k)


@jit
def _gram_row(B: np.ndarray, Bt: np.ndarray, G: np.ndarray, have: np.ndarray, j: int) -> None:
    """Row j of the Gram matrix G = B B^T, on the first bounce off wall j (`portable.gram_row`:
    a fixed order, the bits of `portable.matmuls`(B, B^T)). A chain meets few of the walls,
    so most rows are never needed (BLAS formed all of them, in an order of its CPU's
    choosing)."""
    if not have[j]:
        portable.gram_row(B, Bt, j, G[j])
        have[j] = True


@jit
def _trajectory(
    B: np.ndarray, Bt: np.ndarray, G: np.ndarray, have: np.ndarray, w: np.ndarray,
    p: np.ndarray, c: np.ndarray, v: np.ndarray, key: np.ndarray, rc: float, rs: float,
    max_bounces: int,
) -> tuple[float, float]:  # fmt: skip
    """One exact HMC trajectory for N(0, I) truncated to {B w > 0}: moves w and p in place for
    the time whose cosine and sine are (rc, rs), or until `max_bounces` walls; returns the
    cosine and sine of the time left (1, 0 if none). On entry c = B w and v = B p (the wall
    values); they are left stale. G's rows are formed as walls are first hit (`_gram_row`;
    have[j]: row j is there).

    Under the Gaussian's Hamiltonian a particle moves on w cos t + p sin t, so the time it
    meets each wall has a closed form; at the first wall the momentum is reflected
    (Pakman & Paninski, 2014). The wall values are tracked through the Gram matrix G = B B^T,
    so a bounce costs O(m) rather than O(m r). Times are carried as rotations (cosine, sine):
    the time left after a hit at t is the rotation by -t of the time left, so a bounce takes
    one square root instead of an arctangent, a cosine and a sine.
    """
    r = B.shape[1]
    behind = _ratios(c, v, key)
    last = np.int64(-1)  # not a literal -1: numba would compile _next_hit for it too
    for _ in range(max_bounces):
        hit, j, cos, sin = _next_hit(c, v, key, last, behind, rc, rs)
        for k in range(r):
            wk = w[k]
            w[k] = wk * cos + p[k] * sin
            p[k] = p[k] * cos - wk * sin
        if not hit:
            return 1.0, 0.0
        rc, rs = rc * cos + rs * sin, rs * cos - rc * sin
        _gram_row(B, Bt, G, have, j)
        scale = 2.0 * (v[j] * cos - c[j] * sin) / G[j, j]
        for k in range(r):
            p[k] -= scale * B[j, k]
        behind = _turn(c, v, key, cos, sin, scale, G[j])
        behind -= not c[j] > 0.0  # the wall just hit is skipped next, not counted
        c[j] = abs(c[j])
        key[j] = np.inf
        last = j
    return rc, rs


@jit
def _copy(out: np.ndarray, values: np.ndarray) -> None:
    """out[:] = values, as a loop: numba compiles slice assignment generically, which cost
    ~1.9 s on an empty cache, for the same bits."""
    for i in range(values.size):
        out[i] = values[i]


@jit
def _cosine(w: np.ndarray, w0: np.ndarray) -> float:
    """The cosine of the angle between w and the start w0: the statistic the stopping rule
    watches (1 at the start, about 0 once the chain has forgotten it)."""
    dot = ww = w0w0 = 0.0
    for k in range(w.size):
        dot += w[k] * w0[k]
        ww += w[k] * w[k]
        w0w0 += w0[k] * w0[k]
    return dot / np.sqrt(ww * w0w0)


@jit
def _mixed(history: np.ndarray, n: int, effective: float) -> bool:
    """Whether the n trajectories after the start (history[0], the start's statistic, then one
    per trajectory) are worth `effective` independent draws: n >= effective tau, with tau the
    integrated autocorrelation time (1 + rho) / (1 - rho) of an AR(1) series with the
    statistic's lag-1 autocorrelation rho. The start is in the series on purpose: a chain that
    still drifts away from it reads as strongly correlated, so as not yet mixed."""
    mean = 0.0
    for i in range(n + 1):
        mean += history[i]
    mean /= n + 1
    var = lag = 0.0
    for i in range(n + 1):
        dev = history[i] - mean
        var += dev * dev
    for i in range(n):
        lag += (history[i] - mean) * (history[i + 1] - mean)
    if not var > 0.0:  # the chain never moved: nothing is measured yet
        return False
    rho = lag / var
    if not rho < 1.0:
        return False
    return n * (1.0 - rho) >= effective * (1.0 + rho)


@jit
def _chains(
    B: np.ndarray, Bt: np.ndarray, w0: np.ndarray, keys: np.ndarray, iterations: int,
    warmup_bounces: int, d: int, floor: int, effective: float, after: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Each problem's chain from w0[s], with its own stream: the final w (S, r), then d
    normals (S, d) and a uniform (S,) for the parts of the draw outside the row space, and the
    trajectories each chain ran (S,). A chain runs `iterations` trajectories, or with
    `effective` > 0 runs `after` more once `_mixed` first holds at a trajectory n >= `floor`
    (at most `iterations` in all): a rule on its own statistics alone, so a problem's draw
    does not depend on its batch.
    The feasibility check of a trajectory's end computes B w there for every wall; where the
    move is accepted those are the next trajectory's starting wall values."""
    S, m, r = B.shape
    W = np.empty((S, r))
    V = np.empty((S, d))
    U = np.empty(S)
    ran = np.empty(S, dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    w, proposal, p = np.empty(r), np.empty(r), np.empty(r)
    here, ahead = np.empty(m), np.empty(m)
    c, v, key = np.empty(m), np.empty(m), np.empty(m)
    G, have = np.empty((m, m)), np.zeros(m, dtype=np.bool_)  # B_s B_s^T, row by row
    history = np.empty(iterations + 1)
    for s in range(S):
        state[0] = keys[s]
        for i in range(m):
            have[i] = False
        _copy(w, w0[s])
        _values(Bt[s], w, here)
        history[0] = 1.0
        rc, rs = 0.0, 1.0  # the warm-up's time, pi/2, as (cosine, sine)
        ran[s] = iterations
        stop = iterations
        for iteration in range(iterations):
            budget = warmup_bounces if iteration == 0 else 20 * warmup_bounces
            _copy(proposal, w)
            for k in range(r):
                p[k] = streams.next_normal(state)
            _copy(c, here)
            _values(Bt[s], p, v)
            left_c, left_s = _trajectory(
                B[s], Bt[s], G, have, proposal, p, c, v, key, rc, rs, budget
            )
            if iteration == 0:  # the time travelled, pi/2 less the time left, from now on
                travelled = np.pi / 2 - np.arctan2(left_s, left_c)
                if travelled > 0:
                    rc, rs = np.cos(travelled), np.sin(travelled)
            _values(Bt[s], proposal, ahead)
            feasible = True
            for i in range(m):
                if not ahead[i] > 0.0:
                    feasible = False
                    break
            if feasible:
                _copy(w, proposal)
                _copy(here, ahead)
            n = iteration + 1
            if effective > 0.0 and stop == iterations:
                history[n] = _cosine(w, w0[s])
                if n >= floor and _mixed(history, n, effective):
                    stop = min(n + after, iterations)
            if n == stop:
                ran[s] = n
                break
        _copy(W[s], w)
        for k in range(d):
            V[s, k] = streams.next_normal(state)
        U[s] = streams.next_uniform(state)
    return W, V, U, ran


WARMUP_BOUNCES = 200


@dataclass(frozen=True)
class Fixed:
    """Every chain runs `iterations` trajectories."""

    iterations: int

    @property
    def cap(self) -> int:
        return int(self.iterations)

    floor, effective, after = 0, 0.0, 0  # no rule


@dataclass(frozen=True)
class UntilMixed:
    """Each chain runs until the first trajectory n >= `floor` where its n trajectories are
    worth `effective` independent draws of its statistic (the cosine to its start, the start
    included: `_mixed`), then `after` more, `cap` in all at most (docs/separable.md, "How
    many trajectories"). The draw is taken `after` trajectories past the decision because a
    chain stopped the moment its path looked mixed is drawn at a moment its path chose, which
    biases the draw (+6.4 standard errors on a 3-D version space, tests/models/test_models.py);
    from a fixed number of trajectories later the chain has forgotten that moment."""

    floor: int = 10
    cap: int = 30
    effective: float = 10.0
    after: int = 5


def sample_version_space(
    A: np.ndarray,
    z0: np.ndarray,
    iterations: int,
    keys: np.ndarray,
    warmup_bounces: int = WARMUP_BOUNCES,
) -> np.ndarray:
    """One draw per problem from the uniform law on {A_s z > 0, ||z|| <= 1}, batched, after a
    fixed number of trajectories (`draw` with `Fixed(iterations)`)."""
    return draw(A, z0, keys, Fixed(iterations), warmup_bounces)[0]


def draw(
    A: np.ndarray,
    z0: np.ndarray,
    keys: np.ndarray,
    length: Fixed | UntilMixed,
    warmup_bounces: int = WARMUP_BOUNCES,
) -> tuple[np.ndarray, np.ndarray]:
    """One draw per problem from the uniform law on {A_s z > 0, ||z|| <= 1}, batched, and the
    trajectories each problem's chain ran (S,).

    A: (S, m, d) constraint rows, z0: (S, d) strictly feasible starts (any scale), keys: one
    random stream per problem (`streams`), so a problem's draw does not depend on which others
    share its batch. Each chain runs from z0 for `length`'s trajectories: a fixed number, or
    until its own statistics say it has mixed (`UntilMixed`; docs/separable.md). The first,
    a warm-up, lasts pi/2 or `warmup_bounces` walls, whichever comes first; the time it reached
    becomes the problem's fixed trajectory duration from then on, so that a very thin version
    space (where the particle meets a wall at every turn) costs about `warmup_bounces` bounces
    per trajectory instead of millions. With a fixed duration each later trajectory is an exact
    HMC move, which leaves the target law invariant. A trajectory that ends off the cone through
    rounding is rejected, so every draw separates.
    """
    S, m, d = A.shape
    keys = np.asarray(keys, dtype=np.uint64)
    A = np.ascontiguousarray(A, dtype=float)
    z0 = np.ascontiguousarray(z0, dtype=float)
    # Every product, factorisation and power below is `portable`'s (fixed-order loops, not
    # BLAS, LAPACK or numpy's AVX-512 power): the chain amplifies the last bits of its start
    # and walls, so a CPU's own kernel changed which hyperplane was drawn (issue 30 §7).
    if m >= d:  # the row space is (at most) all of R^d: z's own coordinates serve, no QR
        B = A
        w = z0.copy()
    else:
        Qt = portable.row_space_bases(A)  # (S, m, d): an orthonormal basis of each row space
        B = portable.products(A, Qt)  # A Q
        w = portable.matvecs(Qt, z0)  # Q^T z0
    r = B.shape[2]
    Bt = np.ascontiguousarray(np.swapaxes(B, 1, 2))
    w *= np.sqrt(r) / portable.norms(w)[:, None]  # the typical radius
    start = w
    w, v, u, ran = shortcalls.in_short_calls(  # each problem its own stream: pieces change nothing
        lambda a, b: _chains(B[a:b], Bt[a:b], start[a:b], keys[a:b], length.cap,
                             int(warmup_bounces), d, length.floor, length.effective,
                             length.after),
        S,
    )  # fmt: skip
    if m >= d:
        z = w
    else:  # the part outside the row space: d normals projected off it, drawn exactly
        Q = np.ascontiguousarray(np.swapaxes(Qt, 1, 2))
        v -= portable.matvecs(Q, portable.matvecs(Qt, v))
        z = portable.matvecs(Q, w) + v
    radius = portable.power(u, 1.0 / d)[:, None]
    return radius * z / portable.norms(z)[:, None], ran
