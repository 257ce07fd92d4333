"""The separation-oracle protocol used by the cutting-plane engine.

Given a master solution ``(beta_0, beta, lambda, s)``, an oracle finds, for every sample ``n``, the
configuration row ``k = (n, z, flip)`` that maximizes the violation of the semi-infinite constraint

    phi_k = L(u_k) - lambda c_k - s_n          (belbasi2023 Alg. 2; sun2025 problem (7))

and returns it with its value.  An oracle is exact when its maxima equal the maxima over all rows; the
engine relies on exactness for its certificate (``max_n phi_n <= tol`` at termination).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence, Tuple

import numpy as np

from .rows import ConfigurationRows

if TYPE_CHECKING:  # only for annotations
    from ..instance import DROInstance


#: default cap on the near-active rows an oracle returns per sample
NEAR_LIMIT = 1_000_000


@dataclass
class Separation:
    """Per-sample most violated rows: ``rows.sample[i] = i`` order is not required."""

    rows: ConfigurationRows   # one most violated row per sample (N rows)
    violation: np.ndarray     # (N,) phi of that row
    near: ConfigurationRows   # extra rows within the near-active margin (may be empty)


class SeparationOracle:
    """Base class: subclasses implement :meth:`separate` and set :attr:`name` / :attr:`exact`."""

    name = "oracle"
    exact = True
    #: whether :meth:`separate` is exact for ``lambda < 0`` too (the fits never ask; the worst-case
    #: distribution's left derivative at ``lambda* = 0`` does)
    exact_below_zero = True

    def separate(self, intercept: float, coef: np.ndarray, lam: float, s: np.ndarray,
                 near_margin: float = 0.0, near_limit: int = NEAR_LIMIT) -> Separation:
        """Most violated row per sample and, with ``near_margin > 0``, the rows within ``near_margin`` of
        their sample's maximum (at most ``near_limit`` per sample, the largest) in ``near``."""
        raise NotImplementedError

    def fixed_model(self, intercept: float, coef: np.ndarray):
        """Tables of ONE model for many ``lambda`` at ``s = 0`` (``values(lam)`` and ``separation(lam)``: the
        worst-case search over lambda), or ``None`` when the oracle has none (then :meth:`separate` at each)."""
        return None

    def upper_bound(self, intercept: float, coef: np.ndarray, lam: float, radius: float,
                    lam_min: float) -> float:
        """A valid upper bound on the worst-case risk of the fixed model:
        ``lam' eps + sum_n p_n max_k (l_k - lam' c_k)`` at ``lam' = max(lam, lam_min)`` (any ``lam' >=
        lam_min`` gives one; belbasi2023 §5's UB uses the same construction), with ``p`` the sample
        probabilities of the nominal distribution (``1/N`` each unless weighted)."""
        lam_ = max(float(lam), float(lam_min))
        sep = self.separate(intercept, coef, lam_, np.zeros(self.n_samples))
        return float(lam_ * radius + self.inst.p @ sep.violation)


def candidate_values(inst: "DROInstance", f0: np.ndarray, extremes: Sequence[np.ndarray], distance: np.ndarray,
                      lam: float, s: np.ndarray, reachable: np.ndarray | None):
    """Per label family and extreme ``e``: ``(family, e, values)``, ``values`` the ``(N, B)`` table of
    ``L(sigma_f (f0 + G_e[:, j]) - shift_f) - lam (distance_j + extra_f) - s`` (``-inf`` where unreachable)."""
    for family in inst.label_families():
        penalty = lam * (distance + family.extra_cost)
        for e, G in enumerate(extremes):
            vals = inst.loss.value(family.sigma[:, None] * (f0[:, None] + G) - family.shift[:, None])
            vals = vals - penalty[None, :] - s[:, None]
            if reachable is not None:
                vals = np.where(reachable, vals, -np.inf)
            yield family, e, vals


def best_over_budgets(inst: "DROInstance", f0: np.ndarray, extremes: Sequence[np.ndarray],
                      distance: np.ndarray, lam: float, s: np.ndarray, reachable: np.ndarray | None = None
                      ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The terminal step of the budget oracles (sun2025 (10), with the intercept restored).

    ``extremes[e]`` is an ``(N, B)`` table of the largest (``e = 0``) or smallest (``e = 1``) total
    categorical gain per budget index; ``distance`` the ``(B,)`` transport distances.  Per sample:

        max_{family f, extreme e, budget j}  L(sigma_f (f0 + G_e[:, j]) - shift_f)
                                             - lam (distance_j + extra_f) - s

    (a convex loss of an affine function peaks at an extreme total gain), over the budgets marked in
    ``reachable`` (N, B) when given (default: all).  Returns the maxima and, per
    sample, the budget index, the extreme and the label flip attaining them (first maximum in the
    order families x extremes).
    """
    return maxima_of_candidates(f0.shape[0], candidate_values(inst, f0, extremes, distance, lam, s, reachable))


def maxima_of_candidates(N: int, candidates) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per sample, the largest value over ``candidates`` (``(family, extreme, (N, B) values)`` in order) and the
    budget index, extreme and label flip attaining it (the first maximum in that order): the reduction of
    :func:`best_over_budgets`."""
    idx = np.arange(N)
    values, budget, extreme, flips = [], [], [], []
    for family, e, vals in candidates:
        j = np.argmax(vals, axis=1)
        values.append(vals[idx, j])
        budget.append(j)
        extreme.append(np.full(N, e))
        flips.append(np.full(N, family.flip))
    values = np.vstack(values)
    best = np.argmax(values, axis=0)
    return (values[best, idx], np.vstack(budget)[best, idx], np.vstack(extreme)[best, idx],
            np.vstack(flips)[best, idx].astype(bool))


def near_over_budgets(inst: "DROInstance", f0: np.ndarray, extremes: Sequence[np.ndarray], distance: np.ndarray,
                      lam: float, s: np.ndarray, reachable: np.ndarray | None, best: np.ndarray,
                      chosen: Tuple[np.ndarray, np.ndarray, np.ndarray], margin: float, per_sample: int
                      ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The budget oracles' *near-active* candidates: ``(sample, budget index, extreme, flip)`` of the
    candidates of :func:`best_over_budgets`'s maximization whose value is at least ``best_n - margin``, the
    maximizer ``chosen = (budget, extreme, flip)`` left out, at most ``per_sample`` per sample (the largest).

    They are exact configuration rows (each attains the extreme total gain of its budget), so adding them to
    a working set is always valid; they are the rows a small move of the model can make maximal."""
    parts = []
    for family, e, vals in candidate_values(inst, f0, extremes, distance, lam, s, reachable):
        n, j = np.nonzero(vals >= (best - margin)[:, None])
        keep = ~((j == chosen[0][n]) & (e == chosen[1][n]) & (family.flip == chosen[2][n]))
        n, j = n[keep], j[keep]
        parts.append((n, j, np.full(n.size, e), np.full(n.size, family.flip, dtype=bool), vals[n, j]))
    if not parts:
        empty = np.zeros(0, dtype=int)
        return empty, empty, empty, np.zeros(0, dtype=bool)
    n, j, e, flip, val = (np.concatenate(a) for a in zip(*parts))
    keep = largest_per_sample(n, val, per_sample)
    return n[keep], j[keep], e[keep], flip[keep]


def largest_per_sample(sample: np.ndarray, value: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the at most ``limit`` largest ``value`` of every sample, grouped by sample, largest first."""
    order = np.lexsort((-value, sample))
    ordered = sample[order]
    rank = np.arange(order.size) - np.searchsorted(ordered, ordered)   # position within the sample's group
    return order[rank < limit]


def configuration_rows(inst: "DROInstance", sample: np.ndarray, Z: np.ndarray, distance: np.ndarray,
                       flip: np.ndarray) -> "ConfigurationRows":
    """Rows of the given samples and configurations, with cost ``distance + kappa flip``."""
    kappa = inst.metric.kappa
    cost = distance + np.where(flip, kappa if np.isfinite(kappa) else 0.0, 0.0)
    return ConfigurationRows(sample=np.asarray(sample, dtype=int), Z=Z, cost=cost, flip=np.asarray(flip, bool))


def one_row_per_sample(inst: "DROInstance", Z: np.ndarray, distance: np.ndarray, flip: np.ndarray,
                       violation: np.ndarray) -> Separation:
    """A :class:`Separation` with row ``n`` = sample ``n``, configuration ``Z[n]``, cost
    ``distance[n] + kappa flip[n]`` and no near-active rows."""
    rows = configuration_rows(inst, np.arange(Z.shape[0]), Z, distance, flip)
    empty = ConfigurationRows(np.zeros(0, int), np.zeros((0, Z.shape[1]), int), np.zeros(0),
                              np.zeros(0, bool))
    return Separation(rows=rows, violation=violation, near=empty)


class ModelBoundOracle:
    """An oracle whose instance is re-bound to each model it separates: for an adversarial loss the loss of
    a configuration row depends on the model through the attack shift ``alpha ||beta_x||_*``
    (:meth:`~drokit.instance.DROInstance.evaluated_at`), so the oracle evaluates the attacked loss of
    the model it is asked about.  Everything else is delegated."""

    def __init__(self, oracle, inst: "DROInstance"):
        self.oracle = oracle
        self.base = inst

    def _bind(self, coef) -> None:
        self.oracle.inst = self.base.evaluated_at(coef)

    def separate(self, intercept, coef, *args, **kwargs):
        self._bind(coef)
        return self.oracle.separate(intercept, coef, *args, **kwargs)

    def upper_bound(self, intercept, coef, *args, **kwargs):
        self._bind(coef)
        return self.oracle.upper_bound(intercept, coef, *args, **kwargs)

    def fixed_model(self, intercept, coef):
        self._bind(coef)
        return self.oracle.fixed_model(intercept, coef)

    def __getattr__(self, name):
        return getattr(self.oracle, name)


# ------------------------------------------------------------------ level tables shared by the sorting and hull oracles
def level_columns(inst: "DROInstance", mutable: np.ndarray) -> np.ndarray:
    """``(m, a_max)`` position of level ``v`` of each mutable feature in ``coef``: ``-1`` for the reference level
    (coefficient 0), ``-2`` for padding (levels the feature does not have); ``a_max >= 2``."""
    levels = np.asarray(inst.schema.levels)[mutable]
    offsets = inst.schema.dummy_offsets()[mutable]
    a_max = max(int(levels.max()) if levels.size else 2, 2)
    v = np.arange(a_max)[None, :]
    cols = np.where(v == 0, -1, inst.n_numerical + offsets[:, None] + v - 1)
    return np.where(v < levels[:, None], cols, -2)


def alternative_tables(coef: np.ndarray, cols: np.ndarray):
    """Per mutable feature and own level ``u`` (arrays ``(m, a_max)``, from :func:`level_columns`' ``cols``): the
    best gain ``g+ = max_{v != u} w_l(v) - w_l(u)``, its level, the worst ``g- = min_{v != u} ...`` and its level,
    from the two largest and two smallest level coefficients of each feature (ties to the lower level).  Gather
    them at the samples' own levels for the per-sample values (belbasi2023 Thm 3's "best different level")."""
    exists = cols != -2
    w = np.where(cols >= 0, coef[np.maximum(cols, 0)], 0.0)                      # w_l(v), (m, a_max)
    hi = np.argsort(np.where(exists, -w, np.inf), axis=1, kind="stable")[:, :2]
    lo = np.argsort(np.where(exists, w, np.inf), axis=1, kind="stable")[:, :2]
    own = np.arange(w.shape[1])[None, :]
    up_level = np.where(own == hi[:, :1], hi[:, 1:], hi[:, :1])
    down_level = np.where(own == lo[:, :1], lo[:, 1:], lo[:, :1])
    feat = np.arange(w.shape[0])[:, None]
    return w[feat, up_level] - w, up_level, w[feat, down_level] - w, down_level


def inverse_permutation(order: np.ndarray) -> np.ndarray:
    """Per row of ``order`` (a permutation of the columns): the position of each column in it (its rank)."""
    out = np.empty_like(order)
    np.put_along_axis(out, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
    return out
