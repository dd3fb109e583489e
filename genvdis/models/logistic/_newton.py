"""Logistic regression (maximum likelihood, optionally with a ridge) on S training sets at once,
by batched Newton.

The solver reads each problem's training data through a design layout (`layouts.Design`);
its iteration is cut into named steps, as scikit-learn's `NewtonSolver` is: `_setup`,
`_newton_update` (gradient, Hessian and solve), `_line_search`, `_creep`, `_take_step`,
`_check_convergence`, and `_retire` (margin bounds; finished problems dropped).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genvdis._runtime import portable
from genvdis.models.logistic._kernels import log_lamberts, separates
from genvdis.models.logistic._layouts import Design, Gathered, along, group_size

# Newton stops on a decrement (twice the distance to the minimum) below DECREMENT_TOL, or
# after a full step taken from a decrement below QUADRATIC_TOL (see `newton_logistic`).
DECREMENT_TOL = 1e-9
QUADRATIC_TOL = 1e-7
CREEP_DECREMENT, CREEP_FACTOR = 1e-2, 4.0  # see `_creep`
# With `exponential_creep`: creeping from a decrement below 1, and modelled lengths from 1.5
# (1 is Newton's own step) are tried first (`_creep`).
EXPONENTIAL_CREEP_DECREMENT, CREEP_MIN_LENGTH = 1.0, 1.5
SETTLED_STEP = 1e-4  # the quadratic stop also needs a step this small (relative to |beta|)
# The line search: a step may raise the loss by rounding (LOSS_SLACK of it, relative), no more;
# one still raising it after MAX_HALVINGS halvings (to ~1e-9 of Newton's) is not taken.
LOSS_SLACK, MAX_HALVINGS = 1e-12, 30
BOUND_FLOOR = 1e-300  # the margin bound divides by sum |t - p|, floored here (never 0 / 0)


@dataclass
class NewtonFit:
    """S logistic fits: the coefficients, which problems stopped on a separating iterate, and
    for each a bound on its training set's maximum margin (see `hyperplanes.margin_bound`)."""

    beta: np.ndarray
    separating: np.ndarray
    margin_bound: np.ndarray


def newton_logistic(
    design: Design,
    penalty: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-8,
    stop_if_separating: bool = False,
    start: np.ndarray | None = None,
    stop_unseparated_after: int | None = None,
    exponential_creep: bool = False,
) -> NewtonFit:
    """Batched Newton-Raphson (IRLS) with backtracking, for S problems at once.

    penalty (d,): ridge weights (0 for the intercept); start (S, d): the first iterate (zeros
    by default). Converged problems are dropped; a step that does not lower the loss is
    halved, so every problem converges (the loss is strictly convex). A problem stops when its
    step is below `tol`, when its Newton decrement is below DECREMENT_TOL, or after a full step
    taken from a decrement below QUADRATIC_TOL that moved it by less than SETTLED_STEP: Newton
    converges quadratically there, so that step leaves a decrement of ~1e-14 (no iteration is
    spent confirming it; the step-size condition keeps a flat valley from passing for
    convergence). A problem whose full steps move it far while the decrement is tiny is
    creeping along a direction where the loss decays like e^-|w| (quasi-separation): it tries
    steps CREEP_FACTOR and CREEP_FACTOR^2 times longer, kept only if they lower the loss. With
    `stop_if_separating`, a problem also stops as soon as its iterate classifies every training
    point correctly: that iterate proves the set separable, and the likelihood then has no
    maximum to converge to. With `stop_unseparated_after` = k, problems whose k-th iterate
    does not classify every training point correctly stop there (for warm starts, see
    `logistic.LogisticRegression._warm_start`). With `exponential_creep`, creeping problems
    first try the length where the loss along their step would be least if it decayed like
    e^-L (`_exponential_length`), and from a decrement below EXPONENTIAL_CREEP_DECREMENT.

    Gathered problems are solved in groups small enough to stay in cache (`layouts.group_size`:
    out of cache each iteration is slower); problems are independent, so the grouping changes
    no result.
    """
    size = design.problems
    if isinstance(design, Gathered):
        size = group_size(design.m, design.width)
    rules = StopRules(max_iter, tol, stop_if_separating, stop_unseparated_after, exponential_creep)
    if design.problems <= size:
        return _newton_group(design, penalty, rules, start)
    fits = [
        _newton_group(
            design.take(slice(g, g + size)), penalty, rules,
            None if start is None else start[g : g + size],
        )
        for g in range(0, design.problems, size)
    ]  # fmt: skip
    return NewtonFit(
        np.concatenate([fit.beta for fit in fits]),
        np.concatenate([fit.separating for fit in fits]),
        np.concatenate([fit.margin_bound for fit in fits]),
    )


@dataclass(frozen=True)
class StopRules:
    """When a problem stops (see `newton_logistic`): max_iter iterations, a relative move below
    tol, a separating iterate (stop_if_separating), or a k-th iterate that does not separate
    (stop_unseparated_after = k); and how a creeping one steps (`_creep`)."""

    max_iter: int = 100
    tol: float = 1e-8
    stop_if_separating: bool = False
    stop_unseparated_after: int | None = None
    exponential_creep: bool = False


@dataclass
class _Active:
    """The problems of a group not yet done: their indices in the group (`problems`), their
    iterates `coef`, linear predictors `eta` and e = exp(-|eta|), penalised losses, design."""

    problems: np.ndarray
    coef: np.ndarray
    eta: np.ndarray
    e: np.ndarray
    loss: np.ndarray
    design: Design

    def keep(self, kept: np.ndarray) -> _Active:
        """The problems at positions `kept` only."""
        return _Active(
            self.problems[kept], self.coef[kept], self.eta[kept], self.e[kept],
            self.loss[kept], self.design.take(kept),
        )  # fmt: skip


@dataclass
class _Step:
    """One iteration's step for the active problems: the gradient, the Newton direction delta
    and its change of the linear predictors X delta, the decrement g . delta, the largest
    |delta_j|, the length taken (a multiple of delta: 1 for Newton's step, 0 for none) and
    the linear predictors, exp(-|eta|) and penalised loss where it leads."""

    grad: np.ndarray
    delta: np.ndarray
    direction: np.ndarray
    decrement: np.ndarray
    longest: np.ndarray
    length: np.ndarray
    eta: np.ndarray
    e: np.ndarray
    loss: np.ndarray


def _setup(design: Design, penalty: np.ndarray, start: np.ndarray) -> _Active:
    """Every problem of the group active, from iterates `start` (copied)."""
    coef = start.copy()
    eta = design.predictor(coef)
    loss, e = design.nll(eta)
    loss += _penalty(coef, penalty)
    return _Active(np.arange(design.problems), coef, eta, e, loss, design)


def _newton_update(active: _Active, penalty: np.ndarray) -> _Step:
    """The gradient, Hessian and Newton step of every active problem (sklearn's
    `update_gradient_hessian` and `inner_solve` in one: `Gathered` fuses them), full length."""
    grad, delta, direction, eta, nll, e = active.design.newton_step(
        active.eta, active.e, active.coef, penalty
    )
    loss = nll + _penalty(active.coef + delta, penalty)
    decrement = np.einsum("sd,sd->s", grad, delta)
    longest = np.abs(delta).max(axis=1)
    return _Step(grad, delta, direction, decrement, longest, np.ones(grad.shape[0]), eta, e, loss)


def _line_search(active: _Active, step: _Step, penalty: np.ndarray) -> None:
    """Backtracking: halve each step whose loss exceeds the current one (by more than
    rounding, LOSS_SLACK relative), at most MAX_HALVINGS times; a step that still does not
    lower the loss is not taken (length 0: the problem then stops, `_check_convergence`)."""
    ceiling = active.loss + LOSS_SLACK * np.abs(active.loss)
    for _ in range(MAX_HALVINGS):
        worse = np.flatnonzero(step.loss > ceiling)
        if worse.size == 0:
            break
        step.length[worse] /= 2
        _try_lengths(active, step, worse, step.length[worse], penalty, into=step)
    stuck = step.loss > ceiling
    if stuck.any():
        step.length[stuck] = 0.0
        step.eta[stuck], step.e[stuck], step.loss[stuck] = (
            active.eta[stuck], active.e[stuck], active.loss[stuck]
        )  # fmt: skip


def _try_lengths(
    active: _Active, step: _Step, which: np.ndarray, length: np.ndarray, penalty: np.ndarray,
    into: _Step | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """For active problems `which`, steps of `length` times delta: the linear predictors, the
    penalised loss and exp(-|eta|) there (written into `into`'s, if given)."""
    eta, loss, e = along(active.design, active.eta, step.direction, which, length)
    loss += _penalty(active.coef[which] + length[:, None] * step.delta[which], penalty)
    if into is not None:
        into.eta[which], into.loss[which], into.e[which] = eta, loss, e
    return eta, loss, e


def _creep(active: _Active, step: _Step, penalty: np.ndarray, exponential: bool) -> None:
    """Creeping: a full step taken, a small decrement, yet a large move. That is a direction
    where the loss decays like e^-|w| (an attribute value seen in one class only) or a far,
    flat maximum: Newton then gains ~1 in |w| per iteration. Tried while they lower the loss
    further (so they only ever improve the iterate): if `exponential`, first the length where
    the loss along delta would be least if it decayed so (`_exponential_length`); then steps
    CREEP_FACTOR and CREEP_FACTOR^2 times longer."""
    relative = step.longest / (1 + np.abs(active.coef + step.delta).max(axis=1))
    small = EXPONENTIAL_CREEP_DECREMENT if exponential else CREEP_DECREMENT
    creeping = np.flatnonzero(
        (step.length == 1.0) & (step.decrement < small) & (relative > SETTLED_STEP)
    )
    if exponential and creeping.size:
        length = _exponential_length(active, step, creeping, penalty)
        modelled = length > CREEP_MIN_LENGTH  # False where NaN: no such length
        taken = _try_longer(active, step, creeping[modelled], length[modelled], penalty)
        creeping = np.setdiff1d(creeping, taken, assume_unique=True)
    for factor in (CREEP_FACTOR, CREEP_FACTOR**2):
        if creeping.size == 0:
            break
        creeping = _try_longer(active, step, creeping, np.full(creeping.size, factor), penalty)


def _try_longer(
    active: _Active, step: _Step, which: np.ndarray, length: np.ndarray, penalty: np.ndarray
) -> np.ndarray:
    """Steps of `length` times delta for problems `which`, taken where they lower the loss
    below the step's own; returns those problems."""
    eta, loss, e = _try_lengths(active, step, which, length, penalty)
    better = loss < step.loss[which]
    taken = which[better]
    step.length[taken] = length[better]
    step.eta[taken], step.e[taken], step.loss[taken] = eta[better], e[better], loss[better]
    return taken


def _exponential_length(
    active: _Active, step: _Step, which: np.ndarray, penalty: np.ndarray
) -> np.ndarray:
    """For creeping problems `which`: the length L along delta where the slope of the loss,
    modelled as -A e^-L + B + C L, vanishes. Creeping rows' losses decay like e^-L along a
    Newton step (each gains ~1 in margin per unit of L); B + C L is the ridge's slope, exact
    (B = (penalty beta) . delta, C = delta' diag(penalty) delta), and A = decrement + B
    matches the slope at 0. With u = L + B / C, u + log u = log(A / C) + B / C
    (`logistic_kernels.log_lambert`); where C = 0, L = log(A / B). NaN where the model has no
    root (A <= 0, or C = 0 and B <= 0)."""
    delta, coef = step.delta[which], active.coef[which]
    B = np.einsum("sd,sd->s", coef * penalty, delta)
    C = np.einsum("sd,sd->s", delta * penalty, delta)
    A = step.decrement[which] + B
    length = np.full(which.size, np.nan)
    flat, curved = (A > 0) & (C == 0) & (B > 0), (A > 0) & (C > 0)
    length[flat] = portable.log(A[flat] / B[flat])
    ratio = B[curved] / C[curved]
    length[curved] = log_lamberts(portable.log(A[curved] / C[curved]) + ratio) - ratio
    return length


def _take_step(active: _Active, step: _Step) -> None:
    """Move the active problems by their steps (predictors and losses were computed there)."""
    active.coef += step.length[:, None] * step.delta
    active.eta, active.e, active.loss = step.eta, step.e, step.loss


def _check_convergence(
    active: _Active, step: _Step, rules: StopRules, iteration: int, separating: np.ndarray
) -> np.ndarray:
    """Which active problems stop after the step just taken (the rules of `newton_logistic`);
    records in `separating` (by group index) whose iterate now separates, if asked."""
    t = active.design.labels()
    change = step.length * step.longest / (1 + np.abs(active.coef).max(axis=1))  # relative
    small, settled = change <= rules.tol, change <= SETTLED_STEP
    # A quasi-separated direction (an attribute value seen in one class only) lets the
    # weights grow forever while the loss creeps down by e^-|w|: the decrement stops it.
    done = small | (step.decrement < DECREMENT_TOL) | ~np.isfinite(active.loss)
    done |= (step.decrement < QUADRATIC_TOL) & (step.length == 1.0) & settled
    if rules.stop_if_separating:
        split = separates(active.eta, t)
        separating[active.problems] = split
        done |= split
    if iteration == rules.stop_unseparated_after:
        done |= ~separates(active.eta, t)
    return done


def _retire(active: _Active, done: np.ndarray, bound: np.ndarray) -> _Active | None:
    """Record the margin bounds (by group index) of the problems `done`, and drop them; None
    when none is left. The bound comes free with the last gradient: with lambda_i =
    |t_i - p_i|, A^T lambda is the likelihood's gradient X^T (t - p), ~0 at a maximum."""
    finished = np.flatnonzero(done)
    gradient, total = active.design.residual_sums(
        active.eta[finished], active.e[finished], finished
    )
    bound[active.problems[finished]] = np.abs(gradient).sum(axis=1) / np.maximum(total, BOUND_FLOOR)
    kept = np.flatnonzero(~done)
    return active.keep(kept) if kept.size else None


def _penalty(beta: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """The ridge term of each problem's loss, penalty . beta^2 / 2."""
    return 0.5 * np.einsum("sd,d->s", beta * beta, penalty)  # numpy's loop, not BLAS's


def _newton_group(
    design: Design, penalty: np.ndarray, rules: StopRules, start: np.ndarray | None
) -> NewtonFit:
    """`newton_logistic` on one group. Each iteration costs two products with the design, one
    X^T W X, one batched d x d solve, and one exponential and logarithm per row: the linear
    predictor of the accepted step is carried to the next iteration."""
    S, d = design.problems, design.width
    beta = np.zeros((S, d)) if start is None else np.array(start, dtype=float)
    separating = np.zeros(S, dtype=bool)
    bound = np.full(S, np.inf)
    active: _Active | None = _setup(design, penalty, beta)
    for iteration in range(1, rules.max_iter + 1):
        step = _newton_update(active, penalty)
        _line_search(active, step, penalty)
        _creep(active, step, penalty, rules.exponential_creep)
        _take_step(active, step)
        done = _check_convergence(active, step, rules, iteration, separating)
        beta[active.problems] = active.coef
        if done.any():
            active = _retire(active, done, bound)
            if active is None:
                break
    return NewtonFit(beta, separating, bound)
