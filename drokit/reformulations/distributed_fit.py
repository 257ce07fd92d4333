"""The default Wasserstein fit on partitioned data: phase 1, the barrier master and the certificate as partition
reductions (issue 25; the plan in ``spec/dask-fits.md``).

The in-memory fit (:mod:`.own_solvers`) runs phase 1 (:mod:`.phase_one`: smoothed Newton on ``F_tau`` over working
sets of configuration rows, driven by the separation oracle), then the structured barrier master
(:mod:`.barrier_master`: Newton on ``phi_mu(theta) = min_s f_mu(theta, s)`` with the per-sample epigraph variables
eliminated) until the Lagrangian bound at its dual point (:mod:`drokit.certificates.lagrangian`) meets the oracle's
exact value.  Every per-sample quantity there is a sum over samples, so here the client runs the same Newton, line
search, temperature and barrier schedules and the same row bookkeeping on ``theta = (beta_0, beta, lambda)``, while
each partition (:class:`.partition_fit.PartitionFit`, reached through ``parts.call``: :mod:`.partitions`) evaluates its
share:

* :class:`PartitionedSmoothed` -- ``F_tau``'s value, gradient and Hessian: the partitions' ``data_value`` /
  ``data_derivatives`` summed, plus ``lambda eps``, the cone barrier and the proximal term
  (:func:`.phase_one.smoothed_global_terms`); :func:`.phase_one.damped_newton` runs on it unchanged;
* :class:`PartitionedEpigraph` -- ``phi_mu`` and the reduced Newton step: the partitions' ``data_settled`` /
  ``data_direction`` summed and completed by :func:`.epigraph.epigraph_step`; :func:`.centering.center` runs on it
  unchanged (without the kink search, which reads the working rows), the per-sample levels ``s*`` passed as tokens;
* the oracle: ``F(theta) = lambda eps + sum_P sum_{n in P} p_n max_k (l_k - lambda c_k)`` and the new rows' count;
* the certificate: :func:`drokit.certificates.partitioned_bound.partitioned_lagrangian_bound` over the partitions'
  parts of the dual point (the same repair and evaluation; the dense BVLS last resort is skipped).

What is not distributed (the fit says so and stops uncertified rather than gathering the rows): the conic masters
that follow an uncertified barrier master in memory, the level-max columns (:mod:`.level_max`) and the slope cuts.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from ..certificates.constant_model import constant_model_applies, critical_plans, newton_intercept
from ..certificates.partitioned_bound import partitioned_lagrangian_bound
from ..gaps import GAP_FLOOR, gap_scale
from ..instance import DROInstance
from ..oracles.rows import lambda_floor
from .barrier_master import (LAMBDA_TRUST, MAX_NEW_FRACTION, MAX_RESTARTS, MAX_STEPS, MIN_NEW_ROWS, MU_FACTOR,
                             MU_MIN, NEAR_END_GAP, PROX, SETTLED_TRUST_GROWTH, STALL_CENTERINGS, TRUST_FLOOR,
                             TRUST_REACH, CENTERING_MAX_STEPS)
from .centering import center
from .epigraph import epigraph_feasible, epigraph_step, epigraph_value
from .phase_one import (CONE_BARRIER_WEIGHT, FLOOR_SOLVES, INEXACT, PRUNE_GAP, SettledSolves, damped_newton,
                        next_temperature, phase_one_start, smoothed_global_terms, smoothed_global_value)
from .row_terms import TrustBox, parameter_layout, split_theta


class GlobalView:
    """What the client's masters read of "the instance": the radius and the number of samples of *all* partitions."""

    def __init__(self, radius: float, n_samples: int):
        self.radius = float(radius)
        self.n_samples = int(n_samples)


class BoundParts:
    """The partitions' dual-point parts (:class:`~drokit.certificates.partitioned_bound.BoundPart`) as the bound's
    ``parts``: ``call(name, ...)`` runs ``bound_call(name, ...)`` on every partition."""

    def __init__(self, parts):
        self.parts = parts

    def call(self, name: str, *args, **kwargs) -> List:
        return self.parts.call("bound_call", name, *args, **kwargs)


class PartitionedSmoothed:
    """``F_tau`` summed over partitions, for :func:`.phase_one.damped_newton` (module docstring)."""

    def __init__(self, parts, view: GlobalView, free: np.ndarray, barrier):
        self.parts, self.inst, self.free, self.barrier = parts, view, free, barrier
        self.center, self.prox = None, 0.0

    def value(self, theta: np.ndarray, tau: float, mu: float) -> float:
        if not self.barrier.feasible(theta):
            return np.inf
        return smoothed_global_value(self, theta, mu, float(sum(self.parts.call("smoothed_value", theta, tau))))

    def derivatives(self, theta: np.ndarray, tau: float, mu: float):
        parts = self.parts.call("smoothed_derivatives", theta, tau)
        value = float(sum(p[0] for p in parts))
        grad = np.sum([p[1] for p in parts], axis=0)
        hess = np.sum([p[2] for p in parts], axis=0)
        return smoothed_global_terms(self, theta, mu, value, grad, hess)


class PartitionedEpigraph:
    """``phi_mu`` summed over partitions, for :func:`.centering.center` (module docstring): ``s`` and the dual weights
    are tokens naming the partitions' per-sample states."""

    def __init__(self, parts, view: GlobalView, free: np.ndarray, barrier):
        self.parts, self.inst, self.free, self.barrier = parts, view, free, barrier
        self.center, self.prox, self.box = None, 0.0, None
        self._token = 0

    def _next(self) -> int:
        self._token += 1
        return self._token

    def settled(self, theta: np.ndarray, mu: float):
        if not epigraph_feasible(self, theta):
            return np.inf, None, None
        token = self._next()
        sums = self.parts.call("epigraph_settled", theta, mu, token)
        if any(v is None for v in sums):
            return np.inf, None, None
        return epigraph_value(self, theta, mu, np.sum(sums, axis=0)), token, token

    def direction(self, theta: np.ndarray, s: int, mu: float, at=None):
        token = self._next()
        parts = self.parts.call("epigraph_direction", theta, mu, s, token)
        g_t = np.sum([p[0] for p in parts], axis=0)
        schurs = [p[1] for p in parts if p[1] is not None]
        schur = (np.sum([x[0] for x in schurs], axis=0), np.sum([x[1] for x in schurs], axis=0)) if schurs else None
        curvatures = [p[2] for p in parts if p[2] is not None]
        curvature = np.sum(curvatures, axis=0) if curvatures else None
        dtheta, decrement2 = epigraph_step(self, theta, mu, g_t, schur, curvature)
        return dtheta, decrement2, token, token


@dataclass
class DistributedOutcome:
    """The end of a distributed fit: the best point (``intercept``, ``coef``, ``lam``; its exact value
    ``upper_bound``), the best certified ``lower_bound``, whether the gap closed, the stage that closed it, the work
    and a history of the rounds."""

    intercept: float
    coef: np.ndarray
    lam: float
    upper_bound: float
    lower_bound: float
    certified: bool
    stage: str
    newton_steps: int
    oracle_calls: int
    rounds: int
    working_rows: int
    seconds: float
    reason: str = ""
    tau: float = np.nan             #: phase 1's last temperature
    history: List[Dict[str, float]] = field(default_factory=list)


class _Oracle:
    """The exact objective at ``theta`` from the partitions (``lambda`` lifted to ``lambda_min(beta)``): its value,
    the new rows' count and the budget and loss sums of the maximizers."""

    def __init__(self, parts, template: DROInstance):
        self.parts, self.template, self.calls = parts, template, 0

    def __call__(self, theta: np.ndarray):
        intercept, coef, lam = split_theta(self.template, theta)
        return self.at(intercept, coef, lam)

    def at(self, intercept: float, coef: np.ndarray, lam: float):
        lam = max(lam, lambda_floor(self.template, coef))
        self.calls += 1
        sums = np.sum(np.asarray(self.parts.call("separate", intercept, coef, lam), dtype=float), axis=0)
        return float(lam * self.template.radius + sums[0]), int(sums[3]), lam


def _sizes(sizes):
    """The working rows of every partition and the largest ``log |W_n|`` of any sample."""
    return int(sum(r for r, _ in sizes)), max(c for _, c in sizes)


def _bound(parts, template: DROInstance, lower: float, dual, upper: float):
    bound = partitioned_lagrangian_bound(BoundParts(parts), template)
    parts.call("bound_release")
    if lower < bound.value <= upper + 1e-9 * max(1.0, abs(upper)):      # above upper: wrongly evaluated
        return bound.value, bound, True
    return lower, dual, False


def _critical_plans(parts, template: DROInstance):
    """``(b*, critical_plans(...))`` of the partitions' globalized samples (the constant model's intercept and the
    critical radius with its plans, :mod:`drokit.certificates.constant_model`), ``None`` where it does not apply."""
    if not constant_model_applies(template):
        return None
    sums = functools.reduce(lambda a, b: a + b, parts.call("constant_sums"))
    if not 0.0 < sums.p_plus < 1.0:
        return None
    b = newton_intercept(sums.p_plus, lambda b_: tuple(np.sum(parts.call("constant_intercept_sums", b_), axis=0)))
    found = critical_plans(template, sums, float(sum(parts.call("constant_slope_sum", b))))
    return None if found is None else (b, found)


def distributed_critical_radius(parts, template: DROInstance) -> float:
    """The critical radius ``r_crit`` of the partitions' globalized samples (beyond it the constant model is optimal:
    :func:`drokit.certificates.constant_model.critical_point` from partition sums), ``inf`` where that construction
    does not apply."""
    critical = _critical_plans(parts, template)
    return np.inf if critical is None else float(critical[1][0])


def distributed_constant_model(parts, template: DROInstance, view: GlobalView, gap_tol: float,
                               log: Optional[Callable[[str], None]] = None) -> Optional[DistributedOutcome]:
    """Beyond the critical radius, the constant model certified from partition sums
    (:mod:`drokit.certificates.constant_model`: ``r_crit`` from the classes' masses, numerical sums and level masses,
    ``b*`` by Newton on summed derivatives, the dual point's rows built in each partition from the global plans and
    bounded by the partitioned Lagrangian bound); ``None`` below ``r_crit`` or where it does not apply or certify.  As
    in memory, where it applies no phase 1 runs (every configuration row would tie there)."""
    t0 = time.perf_counter()
    critical = _critical_plans(parts, template)
    if critical is None:
        return None
    b, found = critical
    if template.radius < found[0] * (1.0 + 1e-12):
        return None
    r_crit, spreads, level_costs, plus_lighter = found
    upper = float(sum(parts.call("constant_loss_sum", b)))
    parts.call("constant_bound_part", spreads, level_costs, plus_lighter, b)
    bound = partitioned_lagrangian_bound(BoundParts(parts), template)
    parts.call("bound_release")
    if not np.isfinite(bound.value) or upper - bound.value > gap_tol * gap_scale(upper) or \
            bound.value > upper + 1e-9 * gap_scale(upper):
        return None
    if log is not None:
        log(f"constant model: radius {template.radius:g} is beyond the critical radius {r_crit:.6g}; beta = 0, "
            f"intercept {b:.9g}, upper bound {upper:.9f}, lower bound {bound.value:.9f} ({len(parts)} partitions)")
    return DistributedOutcome(float(b), np.zeros(template.schema.n_encoded), 0.0, upper, float(bound.value), True,
                              "constant model", 0, 0, 0, view.n_samples, time.perf_counter() - t0)


def distributed_phase_one(parts, template: DROInstance, view: GlobalView, *, start: Optional[np.ndarray],
                          tau0: float, tau_min: float = 1e-4, margin: float = 1e-2, max_solves: int = 60,
                          prox: float = 1.0, certify_tol: Optional[float] = None,
                          log: Optional[Callable[[str], None]] = None,
                          deadline: float = np.inf) -> DistributedOutcome:
    """:func:`.phase_one.phase_one` over partitions (module docstring): the same temperatures, inexact solves,
    settledness test, pruning and reserve, and the smoothed dual point's certificate at ``tau_min``.  ``template``:
    a partition's instance (schema, metric, loss; its data are not used).  The near-active bundle stays in the
    partitions for :func:`distributed_barrier_master`.  ``deadline`` (``time.perf_counter()`` seconds): no new solve
    starts after it (the fit's ``time_limit``)."""
    t0 = time.perf_counter()
    _, dim, free, barrier = parameter_layout(template)
    exact = _Oracle(parts, template)
    theta = phase_one_start(template, start, dim, free, barrier)
    upper, _, _ = exact(theta)
    parts.call("keep_best")
    best = theta.copy()
    rows, log_count = _sizes(parts.call("smoothed_start"))
    master = PartitionedSmoothed(parts, view, free, barrier)
    scale = max(1.0, abs(upper))
    tau, steps, solves = tau0 * scale, 0, 0
    floor = tau_min * scale
    converged = certified = False
    stopped = ""
    lower, dual = -np.inf, None
    model_error = 0.0
    counts = SettledSolves(FLOOR_SOLVES)
    while solves < max_solves:
        master.center, master.prox = best, prox * tau
        theta, k = damped_newton(master, theta, tau, tau * CONE_BARRIER_WEIGHT,
                                 tol=max(1e-3 * tau, INEXACT * model_error))
        steps += k
        solves += 1
        value, fresh, _ = exact(theta)
        if value < upper:
            upper, best = value, theta.copy()
            parts.call("keep_best")
        master.prox = 0.0
        model = master.value(theta, tau, 0.0) - tau * log_count
        settled = not (value - model > 10 * tau and fresh)
        model_error = value - model if fresh else 0.0
        if certify_tol is not None and settled and tau <= floor:
            parts.call("smoothed_bound_part", theta, tau)
            lower, dual, _ = _bound(parts, template, lower, dual, upper)
        if log is not None:
            log(f"phase 1 solve {solves:>3}: tau {tau:.0e} exact {value:.9f} best {upper:.9f} model {model:.9f} "
                f"rows {rows} new {fresh} ({k} Newton steps, {len(parts)} partitions)"
                + (f" lower {lower:.9f}" if np.isfinite(lower) else ""))
        rows, log_count = _sizes(parts.call("smoothed_grow", theta, PRUNE_GAP * scale))
        if certify_tol is not None and upper - lower <= certify_tol * gap_scale(upper):
            converged = certified = True
            break
        if time.perf_counter() > deadline:
            stopped = "time limit reached"
            break
        action = counts.after(settled, tau <= floor)
        if action == "retry":
            continue
        if action != "cool":                # "stop" or "converged"
            converged = action == "converged"
            break
        rows, log_count = _sizes(parts.call("smoothed_prune", theta, PRUNE_GAP * scale))
        tau = next_temperature(tau, floor)
        counts.reset()
    intercept, coef, lam = split_theta(template, best)
    lam = max(lam, lambda_floor(template, coef))
    bundle = int(sum(parts.call("smoothed_finish", intercept, coef, lam, margin * max(1.0, abs(upper)))))
    return DistributedOutcome(intercept, coef, lam, upper, lower, certified, "phase 1", steps, exact.calls, solves,
                              bundle, time.perf_counter() - t0,
                              reason="" if converged else (stopped or "phase 1 did not settle"), tau=tau)


def distributed_barrier_master(parts, template: DROInstance, view: GlobalView, first: DistributedOutcome, *,
                               mu: float, tol: float, from_bundle: bool, max_steps: int = MAX_STEPS,
                               centering_steps: int = CENTERING_MAX_STEPS,
                               log: Optional[Callable[[str], None]] = None,
                               deadline: float = np.inf) -> DistributedOutcome:
    """:func:`.barrier_master.barrier_master` over partitions (module docstring), from phase 1's point and rows
    (its near-active bundle when ``from_bundle``, else the maximizers at its point): the same centerings, trust
    region on ``lambda``, restarts and stopping rules; the certificate from the partitions' central-path dual point.
    No centering starts after ``deadline``."""
    t0 = time.perf_counter()
    N = view.n_samples
    offset, dim, free, cone = parameter_layout(template)
    fixed = np.setdiff1d(np.arange(dim - 1), free)
    exact = _Oracle(parts, template)

    def start(intercept_, coef_, lam_) -> np.ndarray:
        real = np.empty(offset + np.size(coef_))
        if offset:
            real[0] = intercept_
        real[offset:] = coef_
        real[fixed] = 0.0
        floor_ = max(lambda_floor(template, real[offset:]), cone.lam0)
        return np.r_[real, max(lam_, floor_) + 1e-7 * max(1.0, lam_) + 1e-12]

    def model_of(theta_: np.ndarray):
        return (float(theta_[0]) if offset else 0.0), theta_[offset:-1]

    rows = int(sum(parts.call("epigraph_start", from_bundle)))
    master = PartitionedEpigraph(parts, view, free, cone)
    best = (float(first.intercept), np.asarray(first.coef, dtype=float).copy(), float(first.lam))
    upper = float(first.upper_bound)
    theta = start(*best)
    scale = max(1.0, abs(upper))
    lower, dual = float(first.lower_bound), None
    steps = centerings = 0
    history: List[Dict[str, float]] = []
    certified = False
    stalled = restarts = 0
    trust, lip = LAMBDA_TRUST, max(float(template.loss.lipschitz), 1e-12)
    reason = ""
    while steps < max_steps and mu >= MU_MIN * scale / max(1, N):
        master.center = np.r_[best[0], best[1], best[2]] if offset else np.r_[best[1], best[2]]
        master.prox = PROX * mu * N
        master.box = TrustBox(np.array([dim - 1]), master.center[-1:],
                              np.array([max(trust * best[2], TRUST_FLOOR * lip)]))
        if not master.box.feasible(theta):
            theta = start(*best)
        theta, s, k, w, _ = center(master, theta, mu, min(max_steps - steps, centering_steps), False)
        steps += k
        centerings += 1
        if k >= centering_steps:
            reason = f"a centering at mu {mu:.1e} took {k} Newton steps"
            break
        parts.call("epigraph_bound_part", mu, w)
        previous = lower
        lower, dual, improved = _bound(parts, template, lower, dual, upper)
        moved = improved and lower - previous > 0.01 * tol * max(abs(upper), GAP_FLOOR)
        icpt, beta = model_of(theta)
        value, fresh, lam_feasible = exact.at(icpt, beta, float(theta[-1]))
        better = value < upper
        if better:
            upper, best = value, (icpt, beta.copy(), lam_feasible)
            parts.call("keep_best")
        model = float(theta[-1] * view.radius + sum(parts.call("epigraph_level_sum", s)))
        n_terms = int(sum(t for _, t in parts.call("epigraph_size")))
        history.append({"mu": mu, "steps": k, "upper": upper, "lower": lower, "rows": rows})
        reach = master.box.reach(theta)
        if reach > TRUST_REACH and (better or not fresh):
            trust *= 2.0 if fresh else SETTLED_TRUST_GROWTH
            moved = True
        if log is not None:
            log(f"barrier master: mu {mu:.1e} ({k} Newton steps) value {value:.10f} upper {upper:.10f} "
                f"lower {lower:.10f} rows {rows} new {fresh} lambda region {reach:.2f} ({len(parts)} partitions)")
        stalled = 0 if (moved or fresh) else stalled + 1
        gap = upper - lower
        size = max(abs(upper), GAP_FLOOR)
        if gap <= tol * size:
            certified = True
            break
        if stalled >= 2 * STALL_CENTERINGS:
            reason = f"bounds unchanged over {stalled} centerings"
            break
        if time.perf_counter() > deadline:
            reason = "time limit reached"
            break
        if fresh > max(MAX_NEW_FRACTION * N, MIN_NEW_ROWS) and gap > NEAR_END_GAP * size:
            if restarts >= MAX_RESTARTS:
                reason = f"{fresh} new rows at once after {restarts} restarts"
                break
            restarts += 1
            theta = start(*best)
        if fresh:
            rows = int(sum(r for r, _ in parts.call("epigraph_grow")))
        if not (fresh and value - model > 10 * mu * n_terms) and reach <= TRUST_REACH:
            mu /= MU_FACTOR
    if not certified and not reason:
        reason = f"the barrier weight reached its floor after {steps} Newton steps"
    return DistributedOutcome(best[0], best[1], best[2], upper, lower, certified, "barrier master", steps,
                              exact.calls, centerings, rows, time.perf_counter() - t0, reason=reason,
                              history=history)


__all__ = ["distributed_constant_model", "GlobalView", "BoundParts", "PartitionedSmoothed", "PartitionedEpigraph", "DistributedOutcome",
           "distributed_phase_one", "distributed_barrier_master", "distributed_critical_radius"]
