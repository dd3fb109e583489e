"""The separability LP, max t s.t. A z >= t, -1 <= z <= 1, 0 <= t <= 1, solved by HiGHS.

`scipy.optimize.linprog(method="highs")` spends about 30% of each of these small LPs in
Python: checking and converting its inputs, a sparse matrix, an options manager per option,
numpy arrays converted element by element, the result's assembly. `solve` hands HiGHS the
same model with the same options through the bindings scipy's own wrapper calls
(`scipy.optimize._highspy._core`, private API), in the same steps, so HiGHS takes the same
path and returns the same bits: the LP's optimum is not unique, and another solver or option
would pick another optimal vertex. Where those bindings are missing or differ (another scipy),
or HiGHS reports no optimum that linprog would accept too, the LP goes to linprog itself.
Checked bit for bit against linprog on scipy 1.17.1 (HiGHS 1.12.0) only, on a few hundred LPs
in tests/models/logistic/separable/test_hyperplanes.py.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from genvdis._runtime import extensions

# linprog's default tolerance for accepting HiGHS's solution (`_check_result`: sqrt(1e-9) * 10)
_FEASIBILITY_TOL = np.sqrt(1e-9) * 10
_MISSING = object()
_core: ModuleType | None | object = _MISSING


def _highs_core() -> ModuleType | None:
    """scipy's HiGHS bindings, or None where they are missing or differ from what `_direct`
    expects (it tries them once on a one-row LP). Loaded on the first LP, not with the
    module, and without scipy.optimize's package (`extensions`)."""
    global _core
    if _core is _MISSING:
        try:
            core = extensions.load("scipy.optimize._highspy._core")
            _core = core if _solve(core, np.ones((1, 1))) is not None else None
        except (ImportError, AttributeError, TypeError, ValueError):
            _core = None
    return _core  # type: ignore[return-value]


def _options(core: ModuleType) -> object:
    """The options linprog(method="highs") passes with its defaults, set as its wrapper does."""
    options = core.HighsOptions()
    options.presolve = "on"
    options.highs_debug_level = core.HighsDebugLevel.kHighsDebugLevelNone
    options.log_to_console = False
    options.output_flag = False
    options.simplex_strategy = core.simplex_constants.SimplexStrategy.kSimplexStrategyDual
    return options


def _model(core: ModuleType, A: np.ndarray) -> object:
    """linprog's model of the LP: the rows [-A, 1] <= 0 column by column without their zeros
    (as `csc_array` stores them: -0.0 dropped, NaN kept), the bounds, cost -t; Python lists,
    which HiGHS's bindings convert faster than numpy arrays."""
    m, d1 = A.shape
    negated = -A.T  # the columns of -A
    kept = negated != 0
    ends = np.cumsum(kept.sum(axis=1)).tolist()
    lp = core.HighsLp()
    lp.num_col_ = lp.a_matrix_.num_col_ = d1 + 1
    lp.num_row_ = lp.a_matrix_.num_row_ = m
    lp.a_matrix_.format_ = core.MatrixFormat.kColwise
    lp.col_cost_ = [0.0] * d1 + [-1.0]
    lp.col_lower_ = [-1.0] * d1 + [0.0]
    lp.col_upper_ = [1.0] * (d1 + 1)
    lp.row_lower_ = [-core.kHighsInf] * m
    lp.row_upper_ = [0.0] * m
    lp.a_matrix_.start_ = [0, *ends, ends[-1] + m]  # t's column: m ones
    lp.a_matrix_.index_ = np.nonzero(kept)[1].tolist() + list(range(m))
    lp.a_matrix_.value_ = negated[kept].tolist() + [1.0] * m
    return lp


def _direct(A: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(x, the rows' duals) from HiGHS as linprog runs it, or None where that is not possible
    or linprog might not return that solution with status 0 (no optimum, or one outside its
    tolerance)."""
    core = _highs_core()
    return None if core is None else _solve(core, A)


def _solve(core: ModuleType, A: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    highs = core._Highs()
    highs.passOptions(_options(core))
    highs.passModel(_model(core, A))
    highs.run()
    if highs.getModelStatus() != core.HighsModelStatus.kOptimal:
        return None
    solution = highs.getSolution()
    x, row_value = np.array(solution.col_value), np.array(solution.row_value)
    lower = np.append(np.full(A.shape[1], -1.0), 0.0)
    feasible = (
        np.isfinite(x).all()
        and np.isfinite(row_value).all()
        and np.isfinite(highs.getInfo().objective_function_value)
        and np.all((x >= lower - _FEASIBILITY_TOL) & (x <= 1.0 + _FEASIBILITY_TOL))
        and np.all(-row_value >= -_FEASIBILITY_TOL)
    )
    return (x, np.array(solution.row_dual)) if feasible else None


def _by_linprog(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The LP by linprog: HiGHS's default solver, then interior point if that fails."""
    from scipy.optimize import linprog

    m, d1 = A.shape
    c = np.zeros(d1 + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-A, np.ones((m, 1))])
    bounds = [(-1.0, 1.0)] * d1 + [(0.0, 1.0)]
    for method in ("highs", "highs-ipm"):
        result = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), bounds=bounds, method=method)
        if result.status == 0:
            return result.x, result.ineqlin.marginals
    raise RuntimeError(f"the separability LP failed: {result.message}")


def solve(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(z, t) and the duals of the rows A z >= t of the LP above, for rows A (m, d): linprog's
    solution, bit for bit. The LP is always feasible (z = 0) and bounded, so a failure is a
    bug: raised, never read as "not separable"."""
    direct = _direct(A)
    return direct if direct is not None else _by_linprog(A)
