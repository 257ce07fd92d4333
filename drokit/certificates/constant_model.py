"""Beyond the critical radius: the constant model is optimal, with an explicit dual point that proves it.

For binary classification with labels fixed (``kappa = inf``), an intercept and a smooth loss, the constant model
``f = b*`` (``beta = 0``, ``b*`` minimizing ``sum_n p_n L(y_n b)``) has the worst-case risk

    WC(0, b*) = U0 = sum_n p_n L(y_n b*)

whatever the radius: its loss does not depend on the features, so moving them gains nothing (``lambda* = 0``).  It
is the DRO optimum once the ball is large enough to hide every difference between the classes.  The certificate is a
dual point of belbasi2023 (3) / sun2025 (3) evaluated by :func:`drokit.certificates.lagrangian.lagrangian_bound`
(independently of how it was built):

* every sample keeps its mass ``p_n`` and its slope ``alpha_n = L'(y_n b*)``; the samples of the lighter class
  ``S`` (``p_S = min(p_+, p_-)``) are spread over levels so that each categorical feature's class-conditional level
  distribution becomes the heavier class's ``P_H^l``: level ``a`` keeps ``min(P_S^l(a), P_H^l(a))`` and sends its
  excess to the levels ``P_H^l`` has more of (a transport plan ``T_l`` between ``P_S^l`` and ``P_H^l``; for the 0/1
  mismatch cost every such plan is optimal, for level costs ``U_l`` the plan solves the small transport LP).  Each
  sample becomes one :class:`~drokit.oracles.rows.FractionalRows` row: the product of its features' level
  distributions, with the expected dummies and the expected cost ``sum_l delta_l sum_b T_l(a, b) U_l(a, b) / P_S(a)``
  (the cost of the additive categorical cost ``p = 1``; for ``p > 1`` an upper bound, so the bound stays valid);
* then the free columns' conditions hold exactly: with ``p_+ alpha_+ = -p_- alpha_-`` (the intercept's condition
  at ``b*``) every dummy column's sum is ``p_+ alpha_+ (q_+(v) - q_-(v)) = 0``;
* the numerical columns' sum ``g = p_+ alpha_+ (mu_+ - mu_-)`` (class means) is priced by the budget left:
  ``||Gamma g||_p / lip <= eps - S`` with ``S = p_S sum_l OT_l(P_S^l, P_H^l)`` the categorical transport.

So the dual point's Lagrangian is ``U0`` when

    eps >= r_crit = p_S sum_l OT_l(P_S^l, P_H^l) + |p_+ alpha_+| ||Gamma (mu_+ - mu_-)||_p / lip(L),

and the fit is certified at ``beta = 0`` with no master (:func:`constant_model_outcome`).  Below ``r_crit`` nothing is
tried.  Why it matters: there every configuration row ties (``beta = 0``, ``lambda = 0``), phase 1's oracle adds a
row per sample per round and the conic masters of a cutting plane do not close (credit-approval at radius 4.9:
26 AlmostSolved masters, 143 s, uncertified; the default radius path of ``dk.DROClassifierCV`` reaches there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.design import CodeLayout
from ..oracles.rows import FractionalRows
from .lagrangian import LowerBound, lagrangian_bound


def constant_model_applies(inst: DROInstance) -> bool:
    """Binary classification, labels fixed, an intercept, a smooth loss with a finite Lipschitz constant, a positive
    radius, no penalty and no attack: the problems the construction covers."""
    loss = inst.loss
    return (inst.is_classification and not inst.label_flips and inst.fit_intercept and inst.radius > 0
            and not inst.penalized and not hasattr(loss, "at") and loss.pieces is None
            and np.isfinite(float(loss.lipschitz)) and float(loss.lipschitz) > 0)


def intercept_sums(inst: DROInstance, b: float):
    """``(sum_n p_n y_n L'(y_n b), sum_n p_n L''(y_n b))``: the derivatives of ``sum_n p_n L(y_n b)`` in ``b`` (sums over
    samples: partitions add theirs)."""
    y = np.asarray(inst.y, dtype=float)
    _, d1, d2 = inst.loss.value_and_derivatives(y * b)
    return float(inst.p @ (y * d1)), float(inst.p @ d2)


def newton_intercept(p_plus: float, derivatives) -> float:
    """``b*`` by Newton's method on the one-dimensional convex function whose ``derivatives(b) = (g, h)`` are given,
    from ``log(p_+/p_-)`` (the logistic loss's closed form)."""
    b = float(np.log(p_plus / (1.0 - p_plus)))
    for _ in range(100):
        g, h = derivatives(b)
        if h <= 0 or not np.isfinite(g):
            break
        step = g / h
        b -= step
        if abs(step) <= 1e-15 * max(1.0, abs(b)):
            break
    return b


def constant_intercept(inst: DROInstance) -> float:
    """``b* = argmin_b sum_n p_n L(y_n b)`` (:func:`newton_intercept`)."""
    y = np.asarray(inst.y, dtype=float)
    return newton_intercept(float(inst.p[y > 0].sum()), lambda b: intercept_sums(inst, b))


@dataclass
class ClassSums:
    """The sums over samples the critical radius needs (partitions add theirs, ``+``): the positive class's mass
    ``sum_{y=+1} p_n``, each class's ``sum p_n x_n`` over the numerical features and, per categorical feature, each
    class's level masses ``sum p_n 1[z_nl = v]``."""

    p_plus: float
    x_plus: np.ndarray
    x_minus: np.ndarray
    levels_plus: List[np.ndarray]
    levels_minus: List[np.ndarray]

    def __add__(self, other: "ClassSums") -> "ClassSums":
        return ClassSums(self.p_plus + other.p_plus, self.x_plus + other.x_plus, self.x_minus + other.x_minus,
                         [a + b for a, b in zip(self.levels_plus, other.levels_plus)],
                         [a + b for a, b in zip(self.levels_minus, other.levels_minus)])


def class_sums(inst: DROInstance) -> ClassSums:
    """:class:`ClassSums` of ``inst``'s samples."""
    y = np.asarray(inst.y, dtype=float)
    p = np.asarray(inst.p, dtype=float)
    plus = y > 0
    X = np.asarray(inst.data.X, dtype=float)
    Z = np.asarray(inst.data.Z)
    levels = [int(v) for v in inst.schema.levels[: inst.n_categorical]]
    return ClassSums(float(p[plus].sum()), p[plus] @ X[plus], p[~plus] @ X[~plus],
                     [np.bincount(Z[plus, l], weights=p[plus], minlength=k) for l, k in enumerate(levels)],
                     [np.bincount(Z[~plus, l], weights=p[~plus], minlength=k) for l, k in enumerate(levels)])


def slope_sum(inst: DROInstance, b: float) -> float:
    """``sum_{y_n = +1} p_n L'(y_n b)`` (``p_+ alpha_+``)."""
    y = np.asarray(inst.y, dtype=float)
    plus = y > 0
    return float(inst.p[plus] @ inst.loss.derivative(y * b)[plus])


def _level_plan(small: np.ndarray, heavy: np.ndarray, units: Optional[np.ndarray]) -> np.ndarray:
    """A transport plan ``T`` (a x a) from the level distribution ``small`` to ``heavy``: optimal for the 0/1 mismatch
    cost (``units is None``: keep the common mass, send the excess to the deficits in proportion), else the
    transport LP with the unit costs ``units``."""
    a = small.size
    if units is None:
        keep = np.minimum(small, heavy)
        excess, deficit = small - keep, heavy - keep
        total = deficit.sum()
        T = np.diag(keep)
        if total > 0:
            T += np.outer(excess, deficit / total)
        return T
    from scipy.optimize import linprog
    A_rows = sp.kron(sp.eye(a), np.ones((1, a)))          # sum_b T[a, b] = small[a]
    A_cols = sp.kron(np.ones((1, a)), sp.eye(a))          # sum_a T[a, b] = heavy[b]
    res = linprog(np.asarray(units, dtype=float).ravel(), A_eq=sp.vstack([A_rows, A_cols]).tocsr(),
                  b_eq=np.r_[small, heavy], bounds=(0, None), method="highs")
    if res.status != 0:
        return np.diag(small)                             # no plan: the caller's r_crit gate then refuses
    return res.x.reshape(a, a)


def critical_plans(inst: DROInstance, sums: ClassSums, k: float):
    """``(r_crit, spreads, level_costs, plus_is_lighter)`` from the class sums (of every sample) and ``k = p_+
    alpha_+``: the lighter class's level plans ``R_l`` (level ``a`` -> a distribution over levels) and their expected
    costs (module docstring); ``None`` where the construction does not apply (an immutable feature whose classes
    differ).  ``inst``: for the metric and schema only."""
    p_plus = sums.p_plus
    plus_lighter = p_plus <= 0.5
    p_light = min(p_plus, 1.0 - p_plus)
    metric = inst.metric
    numeric = 0.0
    if inst.n_numerical:
        diff = sums.x_plus / p_plus - sums.x_minus / (1.0 - p_plus)
        gamma = np.asarray(metric.gamma, dtype=float)
        if np.any(np.isinf(gamma) & (np.abs(diff) > 0)):
            return None
        moving = np.isfinite(gamma)
        if np.any(moving):
            numeric = abs(k) * float(metric.numerical.distance(diff[moving][None, :], np.zeros((1, int(moving.sum()))),
                                                              gamma[moving]).ravel()[0]) / float(inst.loss.lipschitz)
    units_all = getattr(metric, "units", None) if not metric.mismatch_only else None
    delta = np.asarray(metric.delta, dtype=float)
    spreads, level_costs = [], []
    transport = 0.0
    for l in range(inst.n_categorical):
        levels = int(inst.schema.levels[l])
        light, heavy = (sums.levels_plus[l], sums.levels_minus[l]) if plus_lighter else \
            (sums.levels_minus[l], sums.levels_plus[l])
        P_s = light / p_light
        P_h = heavy / (1.0 - p_light)
        units = None if units_all is None else np.asarray(units_all[l], dtype=float)
        if np.allclose(P_s, P_h, rtol=0, atol=1e-15):
            plan = np.diag(P_s)
        elif not np.isfinite(delta[l]):
            return None                                  # an immutable feature whose classes differ
        else:
            plan = _level_plan(P_s, P_h, units)
        with np.errstate(invalid="ignore", divide="ignore"):
            R = np.where(P_s[:, None] > 0, plan / P_s[:, None], 0.0)     # level a -> distribution over b
        U = (1.0 - np.eye(levels)) if units is None else units
        moved = (R * U).sum(axis=1)                      # an immutable feature (delta inf) moves nothing here
        level_cost = np.zeros(levels)
        if delta[l] != 0:
            level_cost[moved > 0] = delta[l] * moved[moved > 0]
        transport += float(P_s @ level_cost)
        spreads.append(R)
        level_costs.append(level_cost)
    return p_light * transport + numeric, spreads, level_costs, plus_lighter


def critical_rows(inst: DROInstance, spreads, level_costs, plus_lighter: bool) -> FractionalRows:
    """The dual point's rows of ``inst``'s samples: the lighter class's spread by the plans (expected dummies and
    costs), the heavier class's as they are (module docstring)."""
    y = np.asarray(inst.y, dtype=float)
    plus = y > 0
    lighter = plus if plus_lighter else ~plus
    N = inst.n_samples
    layout = CodeLayout.of(inst)
    lead = 1 + inst.n_numerical
    Z = np.asarray(inst.data.Z)
    light, heavy = np.flatnonzero(lighter), np.flatnonzero(~lighter)
    first = layout.code_base(lead)                          # feature l, code c > 0 -> column first[l] + c
    cost = np.zeros(N)
    entries, columns, values = [], [], []
    for l, (R, level_cost) in enumerate(zip(spreads, level_costs)):
        codes = Z[light, l]
        cost[light] += level_cost[codes]
        for a in np.unique(codes):
            who = light[codes == a]
            for b_ in np.flatnonzero(R[a] > 0):
                if b_ == 0:
                    continue
                entries.append(who)
                columns.append(np.full(who.size, first[l] + b_))
                values.append(np.full(who.size, R[a, b_]))
        hz = Z[heavy, l]
        on = hz > 0
        entries.append(heavy[on])
        columns.append(first[l] + hz[on])
        values.append(np.ones(int(on.sum())))
    n_cols = lead + layout.n_encoded - inst.n_numerical
    lead_rows = np.repeat(np.arange(N), lead)
    lead_cols = np.tile(np.arange(lead), N)
    lead_vals = np.hstack([np.ones((N, 1)), np.asarray(inst.data.X, dtype=float)]).ravel() if inst.n_numerical \
        else np.ones(N)
    matrix = sp.csr_matrix((np.concatenate([lead_vals] + values), (np.concatenate([lead_rows] + entries),
                                                                   np.concatenate([lead_cols] + columns))),
                           shape=(N, n_cols))
    return FractionalRows(np.arange(N), np.zeros(N, dtype=bool), cost, matrix)


def critical_point(inst: DROInstance, radius: Optional[float] = None):
    """``(r_crit, rows, mass, slopes, b*)``: the dual point of the module docstring and the radius from which it
    proves the constant model optimal; ``None`` when the construction does not apply (an immutable feature whose
    classes differ, one class only, another problem class).  With ``radius`` below ``r_crit`` the rows are not built
    (``rows = mass = slopes = None``): the check costs a pass over the codes."""
    if not constant_model_applies(inst):
        return None
    sums = class_sums(inst)
    if not 0.0 < sums.p_plus < 1.0:
        return None
    b = constant_intercept(inst)
    found = critical_plans(inst, sums, slope_sum(inst, b))
    if found is None:
        return None
    r_crit, spreads, level_costs, plus_lighter = found
    if radius is not None and radius < r_crit * (1.0 + 1e-12):
        return r_crit, None, None, None, b
    y = np.asarray(inst.y, dtype=float)
    slope = inst.loss.derivative(y * b)                    # alpha_n = L'(y_n b*)
    rows = critical_rows(inst, spreads, level_costs, plus_lighter)
    return r_crit, rows, np.asarray(inst.p, dtype=float).copy(), np.asarray(slope, dtype=float), b


def constant_model_bound(inst: DROInstance, gap_tol: float) -> Optional[tuple]:
    """``(b*, U0, LowerBound, losses)`` (``losses``: every sample's ``L(y_n b*)``) when the radius is at least ``r_crit`` and the dual point's bound certifies ``U0`` to
    ``gap_tol`` (relative to ``max(|U0|, 1e-2)``), else ``None`` (module docstring)."""
    from ..gaps import gap_scale
    point = critical_point(inst, radius=float(inst.radius))
    if point is None or point[1] is None:
        return None
    r_crit, rows, mass, slopes, b = point
    y = np.asarray(inst.y, dtype=float)
    losses = inst.loss.value(y * b)
    upper = float(inst.p @ losses)
    bound: LowerBound = lagrangian_bound(inst, rows, mass, slopes, coef=np.zeros(inst.schema.n_encoded))
    if not np.isfinite(bound.value) or upper - bound.value > gap_tol * gap_scale(upper) or \
            bound.value > upper + 1e-9 * gap_scale(upper):
        return None
    return b, upper, bound, np.asarray(losses, dtype=float)


__all__ = ["critical_point", "constant_model_bound", "constant_intercept", "constant_model_applies", "ClassSums",
           "class_sums", "intercept_sums", "newton_intercept", "slope_sum", "critical_plans", "critical_rows"]
