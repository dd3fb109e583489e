"""The generative and discriminative models, fit on many training splits at once.

Every model here is a linear classifier: it predicts positive where a log-odds
`Z @ coef + intercept` is > 0, with Z the data in one-hot form. So every model fits as a batch:
given the encoded data Z (n, D), labels y and S training index sets idx (S, m), `fit_batch`
returns S coefficient vectors at once, by matrix products and batched solves. The usual
`fit` / `predict` / `decision_function` are the batch of one, so each class can be checked
against scikit-learn on its own.

- `NaiveBayes`: Gaussian class-conditionals with a per-feature variance shared by the classes
  (the paper's continuous naive Bayes) and categorical ones with Laplace smoothing l (the
  paper's discrete naive Bayes); mixed data uses both.
- `LogisticRegression`: maximum conditional likelihood, no penalty, by batched Newton (IRLS).
  On linearly separable training sets, where the maximum does not exist, a separating
  hyperplane is drawn at random from the version space (the paper's choice), or the maximum-
  margin one, or a ridge fit, as configured.
- `LDA`: normal discriminant analysis with a full covariance shared by the classes, epsilon
  added to its diagonal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from genvdis import hyperplanes
from genvdis.preprocessing import FeatureLayout

# An infinitesimal ridge: it picks the minimum-norm maximiser when the likelihood's maximum is
# a set (an attribute value absent from a training split), and changes nothing else visibly.
TINY_RIDGE = 1e-8
DECREMENT_TOL = 1e-9
SAMPLER_BYTES = 64 * 2**20


@dataclass
class BatchFit:
    """S fitted linear classifiers: log-odds = Z @ coef[s] + intercept[s]."""

    coef: np.ndarray
    intercept: np.ndarray
    separable: np.ndarray

    def decision(self, Z: np.ndarray) -> np.ndarray:
        """(n, S) log-odds of every row under every split's classifier."""
        return Z @ self.coef.T + self.intercept


class LinearModel:
    """fit / predict / decision_function on top of `fit_batch`, the way scikit-learn reads."""

    name = "linear"
    reference_coding = False

    def __init__(self, layout: FeatureLayout) -> None:
        self.layout = layout

    def encode(self, X: np.ndarray) -> np.ndarray:
        return self.layout.onehot(X, drop_first=self.reference_coding)

    def fit_batch(
        self, Z: np.ndarray, y: np.ndarray, idx: np.ndarray, rngs: Sequence[np.random.Generator]
    ) -> BatchFit:
        """Fit S classifiers, on training rows idx[s]; rngs[s] is split s's own generator."""
        raise NotImplementedError

    def fit(self, X: np.ndarray, y: np.ndarray, random_state: int = 0) -> LinearModel:
        y = np.asarray(y, dtype=np.int64)
        if set(np.unique(y)) != {0, 1}:
            raise ValueError("y must hold both classes, coded 0 and 1")
        idx = np.arange(len(y))[None, :]
        fit = self.fit_batch(self.encode(X), y, idx, [np.random.default_rng(random_state)])
        self.coef_, self.intercept_ = fit.coef[0], float(fit.intercept[0])
        self.separable_ = bool(fit.separable[0])
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return self.encode(X) @ self.coef_ + self.intercept_

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.decision_function(X) > 0).astype(np.int64)


def _class_counts(y_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n1 = y_train.sum(axis=1).astype(float)
    return y_train.shape[1] - n1, n1


def _class_means(
    X: np.ndarray, y_train: np.ndarray, n0: np.ndarray, n1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-split class means mu0, mu1 (S, d) of X (S, m, d), and X minus its class's mean:
    what both Gaussian models (shared diagonal or full covariance) are estimated from."""
    mu1 = np.einsum("sm,smd->sd", y_train, X) / n1[:, None]
    mu0 = np.einsum("sm,smd->sd", 1 - y_train, X) / n0[:, None]
    centred = X - np.where(y_train[:, :, None] > 0, mu1[:, None], mu0[:, None])
    return mu0, mu1, centred


class NaiveBayes(LinearModel):
    """Naive Bayes: shared-variance Gaussians for continuous, Laplace-smoothed counts for
    discrete attributes. Both give log-odds linear in the one-hot data."""

    name = "naive_bayes"

    def __init__(
        self, layout: FeatureLayout, laplace: float = 1.0, var_smoothing: float = 1e-9
    ) -> None:
        super().__init__(layout)
        if not laplace >= 0 or (layout.n_discrete and not laplace > 0):
            raise ValueError("laplace must be > 0 for discrete attributes (log 0 otherwise)")
        if var_smoothing < 0:
            raise ValueError("var_smoothing must be >= 0")
        self.laplace, self.var_smoothing = float(laplace), float(var_smoothing)

    def fit_batch(
        self,
        Z: np.ndarray,
        y: np.ndarray,
        idx: np.ndarray,
        rngs: Sequence[np.random.Generator] = (),
    ) -> BatchFit:
        p = self.layout.n_continuous
        Zt, yt = Z[idx], y[idx].astype(float)  # (S, m, D), (S, m)
        n0, n1 = _class_counts(yt)
        coef = np.zeros((idx.shape[0], Z.shape[1]))
        intercept = np.zeros(idx.shape[0])
        if p:
            # Measured from a training row, a feature constant in the split is exactly 0, so its
            # weight is exactly 0, not a rounding error in the means divided by the tiny floor.
            ref = Zt[:, 0, :p]
            Xc = Zt[:, :, :p] - ref[:, None]
            mu0, mu1, centred = _class_means(Xc, yt, n0, n1)
            var = (centred**2).mean(axis=1)
            var += self.var_smoothing * var.max(axis=1, keepdims=True) + 1e-12
            coef[:, :p] = (mu1 - mu0) / var
            intercept -= ((mu1**2 - mu0**2) / (2 * var)).sum(axis=1)
            intercept -= np.einsum("sd,sd->s", coef[:, :p], ref)
        if self.layout.n_discrete:
            l = self.laplace  # noqa: E741 (the paper's name)
            k = np.repeat(self.layout.levels, self.layout.levels).astype(float)
            c1 = np.einsum("sm,smd->sd", yt, Zt[:, :, p:])
            c0 = np.einsum("sm,smd->sd", 1 - yt, Zt[:, :, p:])
            coef[:, p:] = np.log((c1 + l) / (n1[:, None] + k * l))
            coef[:, p:] -= np.log((c0 + l) / (n0[:, None] + k * l))
            prior = np.log((n1 + l) / (n0 + l))
        else:
            prior = np.log(n1 / n0)
        return BatchFit(coef, intercept + prior, np.zeros(idx.shape[0], dtype=bool))


class LDA(LinearModel):
    """Normal discriminant analysis: Gaussians with one full covariance shared by the
    classes, epsilon added to its diagonal so that it is invertible at any m."""

    name = "lda"
    reference_coding = True

    def __init__(self, layout: FeatureLayout, epsilon: float = 1e-4) -> None:
        super().__init__(layout)
        if epsilon < 0:
            raise ValueError("epsilon must be >= 0")
        self.epsilon = float(epsilon)

    def fit_batch(
        self,
        Z: np.ndarray,
        y: np.ndarray,
        idx: np.ndarray,
        rngs: Sequence[np.random.Generator] = (),
    ) -> BatchFit:
        Zt, yt = Z[idx], y[idx].astype(float)
        n0, n1 = _class_counts(yt)
        mu0, mu1, centred = _class_means(Zt, yt, n0, n1)
        cov = np.einsum("smd,sme->sde", centred, centred) / Zt.shape[1]
        cov += self.epsilon * np.eye(Z.shape[1])
        coef = np.linalg.solve(cov, (mu1 - mu0)[..., None])[..., 0]
        intercept = -0.5 * np.einsum("sd,sd->s", mu1 + mu0, coef) + np.log(n1 / n0)
        return BatchFit(coef, intercept, np.zeros(idx.shape[0], dtype=bool))


def _logistic_loss(
    X: np.ndarray, t: np.ndarray, beta: np.ndarray, penalty: np.ndarray
) -> np.ndarray:
    eta = np.einsum("smd,sd->sm", X, beta)
    nll = (np.logaddexp(0.0, eta) - t * eta).sum(axis=1)
    return nll + 0.5 * (penalty * beta**2).sum(axis=1)


def newton_logistic(
    X: np.ndarray,
    t: np.ndarray,
    penalty: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-8,
    stop_if_separating: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Batched Newton-Raphson (IRLS) with backtracking, for S problems at once.

    X (S, m, d), t (S, m) in {0, 1}, penalty (d,) ridge weights (0 for the intercept).
    Converged problems are frozen; a step that does not lower the loss is halved, so every
    problem converges (the loss is strictly convex). With `stop_if_separating`, a problem also
    stops as soon as its iterate classifies every training point correctly: that iterate proves
    the set separable, and the likelihood then has no maximum to converge to.
    Returns beta (S, d) and separating (S,): which problems stopped that way.
    """
    S, _, d = X.shape
    beta = np.zeros((S, d))
    done = np.zeros(S, dtype=bool)
    separating = np.zeros(S, dtype=bool)
    sign = 2.0 * t - 1.0
    loss = _logistic_loss(X, t, beta, penalty)
    for _ in range(max_iter):
        act = np.flatnonzero(~done)
        if act.size == 0:
            break
        Xa, ta, ba = X[act], t[act], beta[act]
        p = expit(np.einsum("smd,sd->sm", Xa, ba))
        grad = np.einsum("smd,sm->sd", Xa, ta - p) - penalty * ba
        hess = np.swapaxes(Xa * (p * (1 - p))[..., None], 1, 2) @ Xa + np.diag(penalty)
        try:
            delta = np.linalg.solve(hess, grad[..., None])[..., 0]
        except np.linalg.LinAlgError:  # numerically singular: fall back to the pseudo-inverse
            delta = np.einsum("sde,se->sd", np.linalg.pinv(hess), grad)
        step = np.ones(act.size)
        new_loss = _logistic_loss(Xa, ta, ba + delta, penalty)
        for _ in range(30):
            worse = new_loss > loss[act] + 1e-12 * np.abs(loss[act])
            if not worse.any():
                break
            step = np.where(worse, step / 2, step)
            new_loss = _logistic_loss(Xa, ta, ba + step[:, None] * delta, penalty)
        moved = step[:, None] * delta
        beta[act] = ba + moved
        loss[act] = np.minimum(new_loss, loss[act])
        small = np.abs(moved).max(axis=1) <= tol * (1 + np.abs(beta[act]).max(axis=1))
        # Newton decrement: the loss is within ~decrement/2 of its minimum. A quasi-separated
        # direction (an attribute value seen in one class only) lets the weights grow forever
        # while the loss creeps down by e^-|w|: stop once that is below DECREMENT_TOL.
        decrement = np.einsum("sd,sd->s", grad, delta)
        done[act] = small | (decrement < DECREMENT_TOL) | ~np.isfinite(new_loss)
        if stop_if_separating:
            margins = sign[act] * np.einsum("smd,sd->sm", Xa, beta[act])
            split = (margins > 0).all(axis=1)
            separating[act] = split
            done[act] |= split
    return beta, separating


class LogisticRegression(LinearModel):
    """Logistic regression by maximum conditional likelihood, no penalty.

    Where a training split is linearly separable (an exact LP check), the maximum does not
    exist, and `separable` says what to do: `sample` draws a separating hyperplane uniformly
    from the version space by exact HMC (Ng & Jordan's MCMC choice), `max_margin` takes the
    LP's maximum-margin hyperplane, `ridge` fits an L2-penalised model with strength 1/C.
    """

    name = "logistic_regression"
    reference_coding = True

    def __init__(
        self,
        layout: FeatureLayout,
        separable: str = "sample",
        C: float = 1.0,
        mcmc_iterations: int = 3,
        max_iter: int = 100,
        tol: float = 1e-8,
    ) -> None:
        super().__init__(layout)
        if separable not in {"sample", "max_margin", "ridge"}:
            raise ValueError("separable must be 'sample', 'max_margin' or 'ridge'")
        if not C > 0 or max_iter < 1 or not tol > 0 or mcmc_iterations < 1:
            raise ValueError("C and tol must be > 0; max_iter and mcmc_iterations >= 1")
        self.separable, self.C, self.mcmc_iterations = separable, float(C), int(mcmc_iterations)
        self.max_iter, self.tol = int(max_iter), float(tol)

    def _newton(
        self, X1: np.ndarray, t: np.ndarray, strength: float, stop: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        penalty = np.full(X1.shape[2], strength)
        penalty[-1] = 0.0
        return newton_logistic(X1, t, penalty, self.max_iter, self.tol, stop)

    def fit_batch(
        self,
        Z: np.ndarray,
        y: np.ndarray,
        idx: np.ndarray,
        rngs: Sequence[np.random.Generator] = (),
    ) -> BatchFit:
        Zt, yt = Z[idx], y[idx]
        X1 = np.concatenate([Zt, np.ones(Zt.shape[:2] + (1,))], axis=2)
        beta, separable = self._newton(X1, yt.astype(float), TINY_RIDGE, stop=True)
        A = hyperplanes.signed_rows(Zt, yt)
        start = beta.copy()  # where the sampler starts: a separating Newton iterate, or the LP's
        from_lp = np.zeros(idx.shape[0], dtype=bool)  # start[s] is the max-margin solution
        undecided = np.flatnonzero(~separable)
        if undecided.size:  # the fitted likelihood's gradient usually proves non-separability
            weights = expit(-np.einsum("smd,sd->sm", A[undecided], beta[undecided]))
            proven = hyperplanes.margin_bound(A[undecided], weights) <= hyperplanes.MARGIN_TOL
            undecided = undecided[~proven]
        for s in undecided:
            if hyperplanes.has_conflicting_duplicates(Zt[s], yt[s]):
                continue
            separable[s], z = hyperplanes.max_margin(A[s])
            if separable[s]:
                start[s], from_lp[s] = z, True
        chosen = np.flatnonzero(separable)
        if chosen.size and self.separable == "max_margin":
            for s in chosen[~from_lp[chosen]]:  # the LP already ran for the others
                _, start[s] = hyperplanes.max_margin(A[s])
            beta[chosen] = start[chosen]
        elif chosen.size and self.separable == "sample":
            # the sampler holds an m x m Gram matrix per split: bound its memory by chunking
            # (each split's draw is its own, so chunks change nothing but memory)
            chunk = max(1, SAMPLER_BYTES // (8 * idx.shape[1] ** 2))
            for part in np.array_split(chosen, -(-chosen.size // chunk)):
                beta[part] = hyperplanes.sample_version_space(
                    A[part], start[part], self.mcmc_iterations, [rngs[s] for s in part]
                )
        elif chosen.size:
            strength = 1.0 / self.C
            beta[chosen], _ = self._newton(X1[chosen], yt[chosen].astype(float), strength)
        return BatchFit(beta[:, :-1], beta[:, -1], separable)


MODELS: dict[str, type[LinearModel]] = {
    model.name: model for model in (NaiveBayes, LogisticRegression, LDA)
}


def build_model(spec: object, layout: FeatureLayout) -> LinearModel:
    """The model a config's `models` entry names, with its parameters (validated once)."""
    params = spec.model_dump(exclude={"name"})
    return MODELS[spec.name](layout, **params)


__all__ = ["LDA", "MODELS", "BatchFit", "LogisticRegression", "NaiveBayes", "build_model"]
