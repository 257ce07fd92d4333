"""The one-dimensional dual of the stability criterion and the recovery of the most sensitive distribution.

blanchet2024 Thm 1 / Thm 4 with Prop. 1 (corrected per the spec, §2.3 and §8): for an empirical ``P0``,

    R(beta, r) = sup_{h >= 0}  G(h),      G(h) = h r + alpha*(h) + theta2 - theta2 E_P0[ phi*-term ]

(KL: (2.2), chi-square: (2.3), pure corruption: ``h r - E L(h)``; :mod:`.divergences`), where the inner
values ``L_i(h) = max_z h l(z) - theta1 d(z, z_i)`` come from an :class:`~.adversaries.Adversary`.  ``G`` is
concave in ``h`` whatever the loss (a max of affine functions of ``h`` under a convex nondecreasing
aggregate), with (right) derivative ``G'(h) = r - E_Q_h[W l]`` (spec §2.5).  So:

1. ``R = 0`` when ``r <= G'(0+)`` terms, i.e. ``r`` at most the risk reachable at zero cost (the current risk
   unless some feature moves for free);
2. ``R = inf`` when ``r`` exceeds the largest achievable risk ``r_max`` (``max_i sup_z l`` with reweighting,
   ``mean_i sup_z l`` without; spec §2.2 / §8.2), and ``r = r_max`` is the boundary case where the sup is
   approached as ``h -> inf``;
3. otherwise ``h*`` is the root of the monotone ``G'``: bracketed by quadrupling, then located by Brent's
   method (``scipy.optimize.brentq``) to ``xtol`` relative width or until ``|G'| <= SLOPE_TOL (1 + |r|)``.

Primal recovery (Remark 4, spec §2.4): the weights ``w_i`` at ``h*`` and the maximizers ``z_i*``; where the
maximizers just left and right of ``h*`` differ (kinks: 0/1 and piecewise-linear losses, categorical
moves) the sample's mass is split between both so that ``E_Q*[W l] = r`` exactly.  The primal cost
``E_Q*[theta1 W d + theta2 phi(W)]`` then equals ``G(h*)``: the gap certifies the pair.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from scipy.optimize import brentq

from ...ambiguity.ot_moment import DIVERGENCES, positive_theta
from ...exceptions import DataError, ParameterError
from .adversaries import Adversary, Response
from .divergences import divergence_cost, reweight
from .result import StabilityResult

#: largest multiplier tried before declaring the boundary case r = r_max
H_MAX = 1e15
#: relative tolerance on r when comparing with the current and the largest achievable risk
RISK_TOL = 1e-12
#: |G'(h)| below this (relative to 1 + |r|) ends the root search: E_Q[W l] = r to rounding
SLOPE_TOL = 1e-13
#: two maximizers count as the same point when loss and cost agree to this relative tolerance
SAME_POINT_TOL = 1e-8


class _Converged(Exception):
    """Raised inside the root search when the slope vanishes to rounding."""

    def __init__(self, at):
        super().__init__()
        self.at = at


class _Evaluation:
    """Everything at one ``h``: the response, the dual value ``G``, weights, ``a = alpha + h r``, slope."""

    __slots__ = ("h", "response", "G", "w", "a", "slope")

    def __init__(self, adversary: Adversary, h: float, risk: float, theta1: float, theta2: float,
                 divergence: str, side: int, p: np.ndarray):
        self.h = h
        resp = adversary.respond(h, theta1, side)
        self.response = resp
        move = 0.0 if np.isinf(theta1) else theta1 * resp.cost
        with np.errstate(invalid="ignore", over="ignore"):
            shifted = h * (resp.loss - risk) - move
        if not np.all(np.isfinite(shifted)):  # beyond the loss's h limit: G = -inf, G' = -inf
            self.G, self.w, self.a, self.slope = -np.inf, None, np.nan, -np.inf
            return
        self.G, self.w, self.a = reweight(shifted, theta2, divergence, p)
        self.slope = float(risk - p @ (self.w * resp.loss))


def validated_budget(risk, theta1, theta2, divergence):
    """``(risk, theta1, theta2, divergence)`` checked: a finite risk level, ``theta1, theta2 > 0`` not both infinite,
    a known divergence (lower case); a :class:`~drokit.ParameterError` naming the argument otherwise."""
    try:
        r = float(risk)
    except (TypeError, ValueError):
        raise ParameterError(f"risk must be a finite number, got {risk!r}") from None
    if not np.isfinite(r):
        raise ParameterError(f"risk must be a finite number, got {risk!r}")
    t1, t2 = positive_theta(theta1, "theta1"), positive_theta(theta2, "theta2")
    if np.isinf(t1) and np.isinf(t2):
        raise ParameterError("theta1 and theta2 are both inf: nothing can be perturbed")
    div = str(divergence).lower()
    if div not in DIVERGENCES:
        raise ParameterError(f"divergence must be one of {list(DIVERGENCES)}, got {divergence!r}")
    return r, t1, t2, div


def solve_stability(adversary: Adversary, risk: float, theta1: float = 1.0, theta2: float = 1.0,
                    divergence: str = "kl", *, xtol: float = 1e-13, max_iter: int = 300,
                    h_start: Optional[float] = None, verbose: bool = False,
                    points: bool = True, sample_weight=None) -> StabilityResult:
    """``R(beta, r)`` for the perturbations of ``adversary`` (see the module docstring).

    Parameters
    ----------
    adversary : Adversary
        An :class:`~.adversaries.Adversary` (the inner maximization for the model and metric).
    risk : float
        The threshold ``r``.
    theta1, theta2 : float
        Corruption and reweighting prices (``> 0``, ``np.inf`` allowed, not both).
    divergence : {"kl", "chi2"}
        ``"kl"`` or ``"chi2"``.
    xtol : float
        Relative width of the final bracket on ``h*``.
    h_start : float or None
        First multiplier tried when bracketing (a warm start along a curve); default 1.
    verbose : bool
        Print the bracketing and root-finding steps.
    points : bool
        Attach the moved points' feature values to the atoms (when the adversary has features).
    sample_weight : array_like of shape (n_samples,) or None
        Nonnegative weights of the samples (the reference distribution is
        ``P0 = sum_i p_i delta_{z_i}`` with ``p = sample_weight / sum``); uniform by default.
    """
    t0 = time.perf_counter()
    r, theta1, theta2, div = validated_budget(risk, theta1, theta2, divergence)
    n = adversary.n_samples
    p = reference_probabilities(sample_weight, n)
    log: Callable = print if verbose else (lambda *a, **k: None)

    def evaluate(h: float, side: int = 1) -> _Evaluation:
        return _Evaluation(adversary, h, r, theta1, theta2, div, side, p)

    nominal = float(p @ adversary.nominal_losses())
    sup = np.asarray(adversary.sup_losses(theta1), dtype=float)
    with np.errstate(invalid="ignore"):
        r_max = float(np.max(sup[p > 0]) if np.isfinite(theta2) else np.sum(np.where(p > 0, p * sup, 0.0)))
    base = dict(risk=r, nominal_risk=nominal, max_risk=r_max, theta1=theta1, theta2=theta2,
                divergence=div, method=type(adversary).__name__)

    at_zero = evaluate(0.0, side=1)
    free_risk = float(p @ at_zero.response.loss)  # risk reachable at zero cost
    if r <= free_risk + RISK_TOL * (1.0 + abs(free_risk)):
        res = StabilityResult(value=0.0, status="zero", h=0.0, alpha=0.0 if np.isfinite(theta2) else np.nan,
                              **base)
        return _finish(res, adversary, at_zero, None, theta1, theta2, div, r, p, t0, 0, points)
    if r > r_max + RISK_TOL * (1.0 + abs(r_max)):
        return StabilityResult(value=np.inf, status="infeasible", time=time.perf_counter() - t0,
                               notes=[f"risk {r:.6g} is above the largest achievable risk {r_max:.6g}: no "
                                      f"finite-cost perturbation reaches it (R = inf)"], **base)
    at_boundary = np.isfinite(r_max) and abs(r - r_max) <= RISK_TOL * (1.0 + abs(r_max))
    boundary_note = (f"risk {r:.6g} equals the largest achievable risk {r_max:.6g}: R is approached as "
                     f"h -> inf (with chi-square it may be attained, where weights vanish)")
    # ---- bracket h* between lo (G' > 0) and hi (G' <= 0)
    h_lim = adversary.h_limit(theta1)
    lo = at_zero
    h = float(h_start) if h_start is not None and h_start > 0 else 1.0
    h = min(h, 0.5 * h_lim)
    iterations = 0
    while True:
        iterations += 1
        trial = evaluate(h)
        log(f"  bracket  h = {h:.6e}  G = {trial.G:.12g}  G' = {trial.slope:.3e}")
        if trial.slope <= 0:
            hi = trial
            break
        lo = trial
        if h >= H_MAX:
            res = StabilityResult(value=float(trial.G), status="boundary", h=h, alpha=trial.a - h * r,
                                  notes=[boundary_note + f" (value at h = {h:.1e})"], **base)
            return _finish(res, adversary, trial, None, theta1, theta2, div, r, p, t0, iterations, points)
        h = min(4.0 * h, 0.5 * (h + h_lim))
    # ---- Brent's method on the nonincreasing slope, remembering the tightest bracket it evaluates
    bracket = {"lo": lo, "hi": hi, "calls": 0}
    slope_tol = SLOPE_TOL * (1.0 + abs(r))

    def slope(x: float) -> float:
        bracket["calls"] += 1
        trial = evaluate(x)
        log(f"  root     h = {x:.12e}  G = {trial.G:.12g}  G' = {trial.slope:.3e}")
        if trial.slope > 0:
            if x > bracket["lo"].h:
                bracket["lo"] = trial
        elif x < bracket["hi"].h:
            bracket["hi"] = trial
        if abs(trial.slope) <= slope_tol:
            raise _Converged(trial)
        return trial.slope if np.isfinite(trial.slope) else -1e300

    converged = None
    try:
        brentq(slope, lo.h, hi.h, xtol=1e-300, rtol=max(xtol, 4 * np.finfo(float).eps), maxiter=max_iter,
               disp=False)
    except _Converged as stop:
        converged = stop.at
    iterations += bracket["calls"]
    lo, hi = bracket["lo"], bracket["hi"]
    if converged is not None:  # G'(h) = 0 up to rounding: a smooth optimum, no split needed
        lo = hi = converged
    star = lo if lo.G >= hi.G else hi
    left = evaluate(lo.h, side=-1) if lo is not hi else lo
    right = evaluate(hi.h, side=1) if lo is not hi else hi
    res = StabilityResult(value=float(star.G), status="boundary" if at_boundary else "finite", h=star.h,
                          alpha=star.a - star.h * r if np.isfinite(theta2) else np.nan,
                          notes=[boundary_note] if at_boundary else [], **base)
    return _finish(res, adversary, star, (left, right), theta1, theta2, div, r, p, t0, iterations, points)


def _same(a: Response, b: Response) -> np.ndarray:
    scale = 1.0 + np.abs(a.loss) + np.abs(a.cost)
    return (np.abs(a.loss - b.loss) <= SAME_POINT_TOL * scale) & (np.abs(a.cost - b.cost) <= SAME_POINT_TOL * scale)


def reference_probabilities(sample_weight, n: int) -> np.ndarray:
    """``p = sample_weight / sum`` (uniform ``1/n`` by default), validated."""
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(sample_weight, dtype=float)
    if w.shape != (n,):
        raise DataError(f"sample_weight must have one entry per sample ({n}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise DataError("sample_weight must be finite, >= 0 and not all 0")
    return w / w.sum()


def _finish(res: StabilityResult, adversary: Adversary, star: _Evaluation, sides, theta1, theta2,
            div, r, p, t0, iterations, points) -> StabilityResult:
    """Weights, (split) atoms, primal cost and diagnostics of the distribution at ``star``."""
    import pandas as pd

    n = p.size
    w = star.w
    base = star.response
    split = np.zeros(n, dtype=bool)
    tau = 0.0
    other = None
    if sides is not None:
        left, right = sides
        base = left.response
        other = right.response
        split = ~_same(left.response, right.response)
        if split.any():
            A = float(p @ (w * left.response.loss))
            B = float(p @ (w * np.where(split, right.response.loss, left.response.loss)))
            tau = float(np.clip((r - A) / (B - A), 0.0, 1.0)) if B != A else 0.0
        else:
            base = star.response
    mass_base = p.copy()
    mass_base[split] *= 1.0 - tau
    idx = np.arange(n)
    frames = [dict(sample=idx, mass=mass_base, weight=w, loss=base.loss, cost=base.cost)]
    if split.any() and tau > 0:
        s = np.flatnonzero(split)
        frames.append(dict(sample=s, mass=p[s] * tau, weight=w[s], loss=other.loss[s],
                           cost=other.cost[s]))
    atoms = pd.concat([pd.DataFrame(f) for f in frames], ignore_index=True)
    keep = atoms["mass"].to_numpy() > 0  # samples of zero reference weight carry no atom
    atoms["moved"] = atoms["cost"].to_numpy() > 0
    if points:
        moved_frames = [adversary.points(base.choice, idx)]
        if len(frames) > 1:
            moved_frames.append(adversary.points(other.choice, frames[1]["sample"]))
        if all(f is not None for f in moved_frames):
            feats = pd.concat(moved_frames, ignore_index=True)
            atoms = pd.concat([atoms, feats], axis=1)
    atoms = atoms[keep]
    atoms = atoms.sort_values(["sample", "mass"], ascending=[True, False], kind="stable").reset_index(drop=True)
    mass = atoms["mass"].to_numpy()
    weight = atoms["weight"].to_numpy()
    move_cost = 0.0 if np.isinf(theta1) else theta1 * float(np.sum(mass * weight * atoms["cost"].to_numpy()))
    reweight_cost = 0.0 if np.isinf(theta2) else theta2 * float(p @ divergence_cost(w, div))
    res.weights = w
    res.atoms = atoms
    res.dual_value = float(star.G)
    res.primal_cost = move_cost + reweight_cost
    res.mean_weight = float(p @ w)
    res.attained_risk = float(np.sum(mass * weight * atoms["loss"].to_numpy()))
    res.iterations = int(iterations)
    res.time = time.perf_counter() - t0
    if not adversary.exact:
        res.notes.append("the inner maximization is a local search (gradient ascent): R is exact only where "
                         "it finds the global maximizers; the primal cost is an upper bound on R")
    return res
