"""Multinomial DRO logistic regression: three or more classes in one model (issue 20 item 7).

Classes ``k = 1..K`` with scores ``f_k(x, z) = b_k + w_k^T a(x, z)`` (``a = [x, dummies(z)]``), the multinomial
log-loss ``l(f, y) = LSE_k f_k - f_y`` and the transport cost ``c((x, z, y), (x', z', y')) = ||Gamma (x - x')||_p +
d(z, z') + kappa 1[y' != y]``.  The worst-case risk over the Wasserstein ball of radius ``eps`` around ``P_N`` is

    F(W, b) = min_{lambda >= L(W)}  lambda eps + sum_n p_n max_{z', y'} [ l(f(x_n, z'), y') - lambda (d(z_n, z')
              + kappa 1[y' != y_n]) ],          L(W) = max_{k != j} ||Gamma^{-1} (w_{k,x} - w_{j,x})||_{p*},

the multinomial analogue of belbasi2023 Prop. 1 / sun2025 Theorem 1 (strong duality for the type-1 Wasserstein
ball, as in the binary case).  The numerical part: ``l(f(x', z'), y')`` is convex in ``x'`` with Lipschitz
constant ``max_k ||Gamma^{-1} (w_k - w_{y'})||_*`` (its gradient is ``sum_k q_k (w_k - w_{y'})``, ``q`` a softmax,
a convex combination of the pair differences), so for ``lambda`` at least that the supremum over ``x'`` of ``l -
lambda ||Gamma (x_n - x')||`` is attained at ``x' = x_n``; below it the loss grows like ``t max_k (w_k -
w_{y'})^T Delta`` along a ray and the supremum is infinite.  Every class is some sample's label, so every pair
``(k, j)`` counts, with finite ``kappa`` or not.  At ``K = 2`` (``w = w_2 - w_1``) this is the binary model.

The program (:func:`drokit.reformulations.multinomial.build_program`, every categorical configuration of
the mutable features enumerated, each with every reachable label; solved at once, ``method="monolithic"``, or by
constraint generation, ``"cutting_plane"``: :func:`drokit.reformulations.multinomial.cutting_plane`): ``min lambda eps + sum_n p_n s_n`` over ``W, b, lambda, s`` with one log-sum-exp
epigraph per row, ``sum_k exp(f_k - f_{y'} - lambda c - s_n) <= 1`` (``K`` exponential cones and one linear
row), and the pairwise dual-norm cones ``||Gamma^{-1} (w_{k,x} - w_{j,x})||_* <= lambda``.  The scores are
invariant to adding one vector to every class; the program keeps that freedom and the fitted model is
centred (``sum_k w_k = 0``, ``sum_k b_k = 0``: :func:`_centred`), which changes neither scores' differences nor
any value.

The certificate: the upper bound is ``F`` of the fitted model evaluated exactly (:func:`drokit.certificates.multinomial.worst_case_value`: an LP
over ``lambda`` on the enumerated rows, then ``F`` at that ``lambda``, any ``lambda >= L(W)`` being an upper
bound); the lower bound is the Lagrangian of an explicit dual point (:func:`drokit.certificates.multinomial.lagrangian_bound`): by
``LSE(f) = max_{q in simplex} q^T f + H(q)``, masses ``m_r`` (summing to ``p_n`` per sample) and class
distributions ``q_r`` give

    OPT >= sum_r m_r H(q_r)  when  G_k = sum_r m_r (q_rk - 1[y'_r = k]) a_r  vanishes on the free columns (intercept,
           dummies, immutable numerical features) and  S = sum_r m_r c_r + D(G) <= eps,

``D(G) = min { sum_{k<j} ||Gamma F_kj||_p : F antisymmetric, sum_j F_kj = G_k }`` (the pairwise cones' dual: a
flow between classes; any feasible ``F`` gives a valid, possibly looser, ``D``); a budget overspent is met by
mixing with the nominal rows at ``q = e_{y_n}``, as in :mod:`drokit.evaluation.lower_bound`.  The dual point is
the fitted model's worst-case distribution (``q_r`` its softmax), its masses re-chosen on tied rows by a small
program when needed, then made exactly feasible (a least-norm change of ``q`` on the free columns).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Tuple

import numpy as np

from ..reformulations.multinomial import (MONOLITHIC_CONES, MultinomialRows, build_program, cutting_plane,
                                                multinomial_rows, read_solution)
from ..certificates.multinomial import CERTIFIED_GAP, certified_lower_bound, worst_case_value
from ..exceptions import DataError, ParameterError, ProblemTooLargeError, SolverError
from ..gaps import gap_scale, relative_gap
from ..oracles.enumeration import ConfigurationRows
from ..schema import FeatureSchema
from ..instance import DROInstance
from .result import FitResult


#: the methods of the multinomial model (the binary model's other methods have no multinomial version yet)
METHODS = ("auto", "monolithic", "cutting_plane")


def _centred(coef: np.ndarray, intercept: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The representative with ``sum_k w_k = 0`` and ``sum_k b_k = 0`` (the scores' differences, hence every value,
    are unchanged)."""
    return coef - coef.mean(axis=0, keepdims=True), intercept - intercept.mean()


def bind(problem, X, y, classes: np.ndarray, *, categorical_features=None, categories="auto",
         sample_weight=None) -> Tuple[DROInstance, np.ndarray, float]:
    """``(inst, label, kappa)``: the data bound by ``problem`` (its schema, metric and sample weights) with label
    flips off (the labels are handled here), each sample's class index and the label cost ``kappa``."""
    y = np.asarray(y)
    label = np.searchsorted(classes, y)
    N = y.shape[0]
    inst = problem.bind(X, np.ones(N), categorical_features=categorical_features, categories=categories,
                        sample_weight=sample_weight)
    kappa = float(inst.metric.kappa)
    inst = replace(inst, metric=replace(inst.metric, kappa=np.inf))
    return inst, label, kappa


def fit_multinomial(problem, X, y, classes: np.ndarray, *, method: str = "auto", solver: str = "auto",
                    solver_options=None, on_inaccurate: str = "raise", verbose=False, categorical_features=None,
                    categories="auto", sample_weight=None, max_configurations: int = 5_000_000,
                    time_limit=None) -> Tuple[FitResult, FeatureSchema]:
    """Fit the multinomial DRO logistic model of the module docstring; returns ``(result, schema)``: the data's
    :class:`~drokit.schema.FeatureSchema` and a :class:`FitResult` whose ``coef`` is
    ``(K, n_encoded)`` and ``intercept`` ``(K,)`` (centred), certified like the binary model: ``upper_bound`` the
    model's exact worst-case risk, ``lower_bound`` the Lagrangian bound of an explicit dual point (or, where that
    falls short, the conic solver's dual objective: ``auxiliary["lower_bound"]["source"] == "method"``).
    ``time_limit``: seconds for the conic solve (:class:`~drokit.run_control.RunControl`); ``verbose >= 3`` shows the
    solver's log."""
    from ..run_control import RunControl
    from ..solvers import get_backend
    from ..solvers.base import solve_with_retries
    if method not in METHODS:
        raise ParameterError(f"method {method!r} has no multinomial version: for {classes.size} classes use method "
                             f"'auto', 'monolithic' (the exact program over every configuration and label) or "
                             f"'cutting_plane' (the same program by constraint generation), or "
                             f"sklearn.multiclass.OneVsRestClassifier(dk.DROClassifier(method={method!r}))")
    if problem.validated_penalty("l1_penalty") or problem.validated_penalty("l2_penalty"):
        raise ParameterError("l1_penalty / l2_penalty are not available for the multinomial model yet; use 0, or "
                             "OneVsRestClassifier(dk.DROClassifier(..., l1_penalty=...)) for per-class models")
    t0 = time.perf_counter()
    inst, label, kappa = bind(problem, X, y, classes, categorical_features=categorical_features,
                              categories=categories, sample_weight=sample_weight)
    K = classes.size
    if not np.all(np.bincount(label, weights=inst.p, minlength=K) > 0):
        raise DataError("every class needs a sample of positive weight (a class with weight 0 only cannot be fitted)")
    mrows = multinomial_rows(inst, label, K, kappa)
    if mrows.size * K > max_configurations:
        raise ProblemTooLargeError(
            f"the multinomial program would have {mrows.size:,} rows x {K} classes = {mrows.size * K:,} exponential "
            f"cones (max_configurations={max_configurations:,}): raise max_configurations, make categorical features "
            f"immutable, or use sklearn.multiclass.OneVsRestClassifier(dk.DROClassifier(...)) (one certified binary "
            f"model per class, whose cutting plane scales)")
    if inst.radius == 0:
        keep = np.flatnonzero(mrows.cost == 0)
        mrows = MultinomialRows(ConfigurationRows(mrows.rows.sample[keep], mrows.rows.Z[keep], mrows.rows.cost[keep],
                                                  mrows.rows.flip[keep]), mrows.target[keep], mrows.cost[keep])
    if method == "auto":
        method = "monolithic" if mrows.size * K <= MONOLITHIC_CONES else "cutting_plane"
    compile_time = time.perf_counter() - t0
    backend = get_backend(solver if solver != "barrier" else "auto")
    control = RunControl(time_limit, verbose)

    def solve(program):
        sol = solve_with_retries(backend, program, solver_options, verbose=control.solver_verbose, control=control,
                                 stage="multinomial program")
        if sol.x is None or sol.status not in ("optimal", "optimal_inaccurate"):
            raise SolverError(f"solver {backend.name!r} returned status {sol.status!r} ({sol.raw_status}) for the "
                              f"multinomial program", status=sol.status, raw_status=sol.raw_status,
                              solver=backend.name, solution=sol)
        return sol

    t1 = time.perf_counter()
    rounds, working = 1, mrows.size
    with control.interruptible():
        if method == "monolithic":
            program = build_program(inst, mrows, K)
            sol = solve(program)
        else:
            log = control.log if control.verbose >= 2 else None
            sol, program, work, rounds, converged = cutting_plane(inst, mrows, K, solve, log=log)
            working = work.size
            if not converged:
                raise SolverError(f"the multinomial cutting plane did not converge in {rounds} rounds "
                                  f"({working:,} of {mrows.size:,} rows)", status="max_iterations",
                                  solver=backend.name, solution=sol)
    solve_time = time.perf_counter() - t1
    coef, intercept, _, s_epi = read_solution(inst, program, sol.x, K)
    coef, intercept = _centred(coef, intercept)
    t2 = time.perf_counter()
    worst = worst_case_value(inst, mrows, coef, intercept)
    bound = certified_lower_bound(inst, mrows, coef, intercept, worst, K)
    upper = worst.value
    how = {"lagrangian": bound, "solver_dual_objective": float(sol.dual_objective)}
    if bound <= upper + 1e-9 * gap_scale(upper) and upper - bound <= CERTIFIED_GAP * gap_scale(upper):
        lower = min(bound, upper)
        how["source"] = "lagrangian"
    else:
        lower = float(min(sol.dual_objective, upper))
        how.update(source="method", note="the conic solver's dual objective, valid only up to its residuals (the "
                                         f"Lagrangian bound reached {bound:.10g} only)")
    evaluation_time = time.perf_counter() - t2
    status = sol.status
    warnings_ = []
    if status == "optimal" and relative_gap(lower, upper) > CERTIFIED_GAP:
        status = "optimal_inaccurate"
    if status != "optimal":
        msg = (f"the multinomial fit is not certified: lower bound {lower:.10g}, upper bound {upper:.10g} (relative "
               f"gap {relative_gap(lower, upper):.2e} > {CERTIFIED_GAP:.0e}; solver {sol.raw_status})")
        if on_inaccurate != "warn":
            raise SolverError(msg + " (pass on_inaccurate='warn' to accept it)", status="optimal_inaccurate",
                              raw_status=sol.raw_status, solver=backend.name, solution=sol)
        import warnings
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        warnings_.append(msg)
    result = FitResult(
        objective=float(upper), status=status, method=method,
        method_reason=(f"multinomial logistic model, {K} classes: the exact program over every configuration and "
                       f"label ({mrows.size:,} rows x {K} exponential cones; drokit.models.multinomial)"
                       + ("" if method == "monolithic" else
                          f", by constraint generation: {rounds} masters, {working:,} rows in the last")),
        solver=sol.solver, raw_status=sol.raw_status, lower_bound=float(lower), upper_bound=float(upper),
        intercept=intercept, coef=coef, lambda_=float(worst.lam), s=s_epi,
        compile_time=compile_time, solve_time=solve_time, evaluation_time=evaluation_time,
        iterations=int(sol.iterations), n_variables=program.n_variables, n_constraints=program.n_constraints,
        cones=program.cone_counts(), n_configuration_rows=working, n_enumeration_rows=mrows.size,
        primal_residual=float(sol.info.get("r_prim", np.nan)), dual_residual=float(sol.info.get("r_dual", np.nan)),
        warnings=warnings_)
    result.auxiliary["lower_bound"] = how
    result.auxiliary["classes"] = classes
    return result, inst.schema
