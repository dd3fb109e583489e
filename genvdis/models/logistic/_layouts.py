"""How S logistic problems' training data are laid out for Newton's method (`newton`).

The solver only needs a few products with each problem's design, so it is written against a
small interface (`Design`, a Protocol) with two implementations:

- `Gathered`: each split's training rows copied out, feature-major (S, d, m); a compiled
  kernel takes each problem's Newton step in one visit to its rows (one pass scales them, one
  BLAS product gives X^T W X and the gradient, one pass after the solve gives the new linear
  predictors). The default.
- `Sparse`: each split's training rows held sparse (CSR: as indices into the data, or copied
  out by `Sparse.gather`); products loop over nonzeros only (compiled). For wide one-hot
  data: adult's discrete attributes are 92 columns with 15 nonzeros a row, so a Hessian
  costs ~40x fewer multiplications.

Both give the same fits (up to rounding): the choice is the caller's, by speed. (A third,
masked layout, every data row weighted 0/1 per split, was deleted: it was no faster where it
was chosen; docs/scaling.md.)
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from genvdis.models.logistic._kernels import (
    dense_csr,
    gathered_predictor,
    gathered_residuals,
    gathered_step,
    nll_terms,
    shifted_terms,
    sparse_directions,
    sparse_gradient,
    sparse_hessian,
    sparse_predictor,
    stack_rows,
    sum_nll,
)
from genvdis.models.logistic._solves import pseudo_inverse_steps
from genvdis.models.logistic._sparsest_first import (
    Plan,
    grouped_gradient,
    grouped_predictor,
    plan,
    sparse_steps,
)

# Gathered problems per group: larger groups share each iteration's fixed cost (Python between
# the kernels) over more problems, smaller ones stay in cache; 4 MB of design measured fastest.
# Newton's groups (`newton_logistic`), the models' groups of splits and the planner's memory
# estimate all size groups by `group_size`.
GROUP_BYTES = 4 * 2**20


def group_size(m: int, width: int) -> int:
    """Problems of m training rows and `width` coefficients per group (GROUP_BYTES of design)."""
    return max(1, GROUP_BYTES // (8 * m * width))


class Design(Protocol):
    """S logistic problems' training data, as `newton.newton_logistic` reads it; `Gathered` and
    `Sparse` lay it out differently. `which` (problem positions, or all where None) selects
    problems; eta (S, n) are linear predictors X beta, e = exp(-|eta|)."""

    @property
    def problems(self) -> int:
        """S, the number of problems."""

    @property
    def width(self) -> int:
        """d, the coefficients of a problem (the intercept's included)."""

    def take(self, which: np.ndarray | slice) -> Design:
        """Problems `which` only, sharing the data (no copy of a design)."""

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        """The labels t in {0, 1}, a row per problem."""

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        """X beta (S, n), for coefficients beta (S, d)."""

    def nll(
        self, eta: np.ndarray, which: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The negative log-likelihood (S,) at eta, and e."""

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """gradient, Newton step delta, X delta, and at beta + delta: eta, nll and e."""

    def advance(
        self, eta: np.ndarray, delta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """X delta, and at eta + X delta: eta, the negative log-likelihood and e."""

    def residual_sums(
        self, eta: np.ndarray, e: np.ndarray, which: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """X^T r and sum |r| (r = t - p) for problems which: the margin bound's."""


class _Products:
    """`Design`'s methods from three products, `predictor`, `gradient` (X^T r) and
    `directions` (Newton's steps, from X^T W X), with `labels`. `Gathered` has no `gradient`
    or `directions`: it overrides the two methods that use them with compiled kernels."""

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """From iterates beta (S, d) with linear predictors eta (e = exp(-|eta|)): the penalised
        log-likelihood's gradient g, the Newton step H^-1 g (H = X^T W X + diag(penalty), W the
        weights p (1 - p)), and what `advance` gives for it."""
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        residual, w = self.labels() - p, p * (1.0 - p)
        grad = self.gradient(residual) - penalty * beta
        delta = self.directions(w, penalty, grad)
        return (grad, delta, *self.advance(eta, delta))

    def residual_sums(
        self, eta: np.ndarray, e: np.ndarray, which: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For problems `which` (positions): X^T r and sum |r|, r = t - p the residual at
        linear predictors eta with e = exp(-|eta|); what the margin bound is made of."""
        residual = self.labels(which) - np.where(eta >= 0, 1.0, e) / (1.0 + e)
        return self.gradient(residual, which), np.abs(residual).sum(axis=1)

    def advance(
        self, eta: np.ndarray, delta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A full step delta (S, d) from linear predictors eta: the change X delta, the new
        predictors, the negative log-likelihood there and its exp(-|eta|)."""
        direction = self.predictor(delta)
        new_eta = eta + direction
        nll, e = self.nll(new_eta)
        return direction, new_eta, nll, e

    def nll(
        self, eta: np.ndarray, which: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The negative log-likelihood at linear predictors eta (S, n), and exp(-|eta|), from
        which the fitted probabilities follow without another exponential.
        log(1 + e^eta) = max(eta, 0) + log(1 + e^-|eta|): numpy's SIMD exp and log are much
        faster than logaddexp, and dropping log1p's last bits for tiny e^-|eta| costs < 1e-16."""
        return sum_nll(*nll_terms(eta, self.labels(which)))


class Gathered(_Products):
    """Problem s fits rows X[s] (m, d) with labels t[s] (m,) in {0, 1}.

    The rows are held feature-major, XT (S, d, m), for the compiled kernels, and `take` keeps
    them in place (it only narrows `problems`, the problems' positions in XT): dropping
    converged problems copies no design."""

    def __init__(self, X: np.ndarray, t: np.ndarray) -> None:
        self._hold(np.ascontiguousarray(np.swapaxes(X, 1, 2)), t, np.arange(len(t)))

    @classmethod
    def feature_major(
        cls, XT: np.ndarray, t: np.ndarray, problems: np.ndarray | None = None
    ) -> Gathered:
        """The design of rows already held feature-major, XT (S, d, m) C-contiguous; problems
        (S',) says which of them (all by default) with labels t (S', m)."""
        design = cls.__new__(cls)
        design._hold(XT, t, np.arange(len(t)) if problems is None else problems)
        return design

    def _hold(self, XT: np.ndarray, t: np.ndarray, problems: np.ndarray) -> None:
        self.XT, self.t, self.problems_at = XT, t, problems

    @property
    def problems(self) -> int:
        return self.problems_at.size

    @property
    def width(self) -> int:
        return self.XT.shape[1]

    @property
    def m(self) -> int:
        """Training rows per problem."""
        return self.XT.shape[2]

    def take(self, which: np.ndarray | slice) -> Gathered:
        return Gathered.feature_major(self.XT, self.t[which], self.problems_at[which])

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        return self.t if which is None else self.t[which]

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        return gathered_predictor(self.XT, self.problems_at, np.ascontiguousarray(beta))

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """`_Products.newton_step`, compiled (`logistic_kernels.gathered_step`)."""
        grad, delta, singular, hess, direction, new_eta, minus_abs, linear = gathered_step(
            self.XT, self.problems_at, self.t, eta, e, np.ascontiguousarray(beta), penalty
        )
        nll, new_e = sum_nll(minus_abs, linear)
        if singular.any():  # rare: the pseudo-inverse's step, and the generic products
            at = np.flatnonzero(singular)
            delta[at] = pseudo_inverse_steps(hess[at], grad[at])
            direction[at], new_eta[at], nll[at], new_e[at] = self.take(at).advance(
                eta[at], delta[at]
            )
        return grad, delta, direction, new_eta, nll, new_e

    def residual_sums(
        self, eta: np.ndarray, e: np.ndarray, which: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        at = self.problems_at[which]
        gradient, residual = gathered_residuals(self.XT, at, self.t[which], eta, e)
        return gradient, np.abs(residual).sum(axis=1)


class Sparse(_Products):
    """Problem s fits rows idx[s] (m,) of a sparse X (n, d) held as CSR (indptr, indices,
    values, column indices ascending in each row); labels t[s] (m,). `orders`: None, or
    a `sparsest_first.Plan` (elimination orders and groups of identical rows, per problem)."""

    def __init__(self, csr: tuple[np.ndarray, np.ndarray, np.ndarray], d: int,
                 idx: np.ndarray, t: np.ndarray, unit: bool | None = None,
                 orders: Plan | None = None) -> None:  # fmt: skip
        self.csr, self.d, self.idx, self.t, self.orders = csr, d, idx, t, orders
        # every value 1 (one-hot data): the Hessian skips multiplying by them
        self.unit = bool((csr[2] == 1.0).all()) if unit is None else unit

    @classmethod
    def gather(cls, csr: tuple[np.ndarray, np.ndarray, np.ndarray], d: int,
               idx: np.ndarray, t: np.ndarray) -> Sparse:  # fmt: skip
        """The design of rows idx (S, m) of the CSR data, each problem's rows copied out next to
        each other (`logistic_kernels.stack_rows`): Newton then reads them in order, not at
        random over the data. On adult (discrete) a Hessian costs a third as much (its rows'
        nonzeros no longer miss the cache), and the copy about one Hessian. Same products, same
        bits as `Sparse(csr, d, idx, t)`."""
        S, m = idx.shape
        return cls(stack_rows(*csr, idx), d, np.arange(S * m).reshape(S, m), t)

    @staticmethod
    def from_dense(X: np.ndarray, ones: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The CSR arrays of a dense X (n, d), with a last column of ones if `ones`: those of
        scipy's `csr_array`, int64 for the compiled loops, built by one compiled pass
        (`logistic_kernels.dense_csr`): scipy took ~30 ms for adult, once a block."""
        return dense_csr(np.ascontiguousarray(X, dtype=float), ones)

    @property
    def problems(self) -> int:
        return self.idx.shape[0]

    @property
    def width(self) -> int:
        return self.d

    def take(self, which: np.ndarray | slice) -> Sparse:
        orders = None if self.orders is None else self.orders.take(which)
        return Sparse(self.csr, self.d, self.idx[which], self.t[which], self.unit, orders)

    def sparsest_first(self) -> Sparse:
        """This design, its Newton steps eliminated sparsest first (`sparse_steps`)."""
        orders = plan(self.csr, self.idx, self.d, self.unit)
        return Sparse(self.csr, self.d, self.idx, self.t, self.unit, orders)

    def labels(self, which: np.ndarray | None = None) -> np.ndarray:
        return self.t if which is None else self.t[which]

    def predictor(self, beta: np.ndarray) -> np.ndarray:
        if self.orders is not None:  # identical rows' predictors computed once
            o = self.orders
            return grouped_predictor(
                o.problems, o.group, o.groups, o.gptr, o.gidx, o.gvx, self.unit,
                np.ascontiguousarray(beta),
            )  # fmt: skip
        return sparse_predictor(*self.csr, self.idx, np.ascontiguousarray(beta))

    def newton_step(
        self, eta: np.ndarray, e: np.ndarray, beta: np.ndarray, penalty: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """`_Products.newton_step`; sparsest first, the weights and the gradient come from one
        compiled pass over the groups of identical rows (`grouped_gradient`)."""
        if self.orders is None:
            return super().newton_step(eta, e, beta, penalty)
        w, grad = grouped_gradient(
            self.t, eta, e, np.ascontiguousarray(beta), penalty, self.unit, *self.orders.for_steps
        )
        delta = self.directions(w, penalty, grad)
        return (grad, delta, *self.advance(eta, delta))

    def gradient(self, residual: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        idx = self.idx if which is None else self.idx[which]
        return sparse_gradient(*self.csr, idx, np.ascontiguousarray(residual), self.d)

    def hessian(self, w: np.ndarray) -> np.ndarray:
        return sparse_hessian(*self.csr, self.idx, np.ascontiguousarray(w), self.d, self.unit)

    def directions(self, w: np.ndarray, penalty: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Newton's steps H^-1 grad, H = X^T diag(w) X + diag(penalty), each built and solved
        in one buffer (`logistic_kernels.sparse_directions`; sparsest first, `sparse_steps`,
        and `sparse_directions` where its symmetric elimination gives up); the
        pseudo-inverse's where H is numerically singular."""
        w, grad = np.ascontiguousarray(w), np.ascontiguousarray(grad)
        if self.orders is None:
            delta, singular = sparse_directions(*self.csr, self.idx, w, penalty, grad, self.unit)
        else:
            delta, singular, unsolved = sparse_steps(
                w, penalty, grad, self.unit, *self.orders.for_steps
            )
            if unsolved.any():  # not positive definite to rounding: elimination with pivoting
                at = np.flatnonzero(unsolved)
                delta[at], singular[at] = sparse_directions(
                    *self.csr, self.idx[at], w[at], penalty, grad[at], self.unit
                )
        if singular.any():
            at = np.flatnonzero(singular)
            hess = self.take(at).hessian(w[at]) + np.diag(penalty)
            delta[at] = pseudo_inverse_steps(hess, grad[at])
        return delta


def along(
    design: Design, eta: np.ndarray, direction: np.ndarray, which: np.ndarray, factor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For problems which (positions), predictors eta + factor * direction (a trial step),
    the negative log-likelihood there and exp(-|eta|), in one compiled pass."""
    shifted, minus_abs, linear = shifted_terms(eta, direction, which, factor, design.labels(which))
    return (shifted, *sum_nll(minus_abs, linear))
