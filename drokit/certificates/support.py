"""The worst-case distribution's support of a fixed model: the atoms (configuration rows), their masses and the
multiplier ``lambda*`` of ``F(lambda) = lambda eps + sum_n p_n max_k (l_k - lambda c_k)`` at its minimum, by
enumeration of the rows or by the separation oracle (module docstring of
:mod:`drokit.evaluation.worst_case_distribution`, which builds the user-facing :class:`WorstCaseResult` on it).
Part of the certificate: the fit's lower bound starts from this point (:mod:`.lower_bound`)."""


from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError, ProblemTooLargeError
from ..instance import DROInstance
from ..oracles.enumeration import (ConfigurationRows, concat_rows, count_configuration_rows,
                                   enumerate_configurations, take_rows, unique_rows)
from ..oracles.rows import lambda_floor, row_losses
from .lambda_search import LinePoint, minimize_line

#: largest enumeration the exact evaluator builds (configuration rows)
MAX_EVALUATION_ROWS = 2_000_000
#: the methods of :func:`worst_case`
METHODS = ("auto", "enumeration", "oracle")
#: ``method="auto"`` enumerates up to this many configuration rows, else uses the DP oracle
AUTO_ENUMERATION_ROWS = 200_000


# ============================================================================ row sources
class _EnumeratedRows:
    """Maximizers by brute force over all configuration rows (sorted once so that every sample owns
    one contiguous block of equal length: one reshape and argmax per evaluation, O(K))."""

    name = "enumeration"

    def __init__(self, inst: DROInstance, intercept: float, coef: np.ndarray):
        rows = enumerate_configurations(inst)
        order = np.argsort(rows.sample, kind="stable")
        self.rows = take_rows(rows, order)
        self.N = inst.n_samples
        self.p = inst.p
        self.per = self.rows.size // self.N
        if self.per * self.N != self.rows.size:  # pragma: no cover - enumeration invariant
            raise RuntimeError("configuration rows are not equally many per sample")
        self.losses = row_losses(inst, self.rows, intercept, coef)

    def __call__(self, lam: float) -> Tuple[ConfigurationRows, np.ndarray]:
        phi = (self.losses - lam * self.rows.cost).reshape(self.N, self.per)
        idx = np.arange(self.N) * self.per + np.argmax(phi, axis=1)
        return take_rows(self.rows, idx), phi.max(axis=1)

    def near(self, lam: float, tol: float) -> ConfigurationRows:
        """Every row within ``tol`` of its sample's maximum of ``l_k - lam c_k`` (all the maximizers)."""
        phi = (self.losses - lam * self.rows.cost).reshape(self.N, self.per)
        keep = phi >= phi.max(axis=1, keepdims=True) - tol
        return take_rows(self.rows, np.flatnonzero(keep.ravel()))


class _OracleRows:
    """Maximizers from a separation oracle called with ``s = 0`` (the default oracle: the hull or the DP).

    A negative ``lam`` (the left derivative at ``lam* = 0``) needs an oracle exact there: the DP enumerates every
    reachable budget and maximizes the loss for each, the hull oracle's points are not enough
    (:attr:`~drokit.oracles.base.SeparationOracle.exact_below_zero`).  Such a point is then asked of the DP
    oracle, or, when its lattice is too large, answered with the maximizers at ``lam = 0``: rows of the ball all
    the same, so the distribution built from them stays feasible (its lower bound may be looser)."""

    name = "oracle"

    def __init__(self, inst: DROInstance, intercept: float, coef: np.ndarray, oracle=None):
        from ..oracles import make_oracle
        self.inst = inst
        self.oracle = oracle if oracle is not None else make_oracle(inst, "auto")
        self.intercept, self.coef = float(intercept), np.asarray(coef, dtype=float)
        self.zeros = np.zeros(inst.n_samples)
        self.p = inst.p
        # the model's oracle tables once for every lambda of the search (the same rows as separate at s = 0)
        self.fixed = self.oracle.fixed_model(self.intercept, self.coef)

    def __call__(self, lam: float) -> Tuple[ConfigurationRows, np.ndarray]:
        if lam < 0 and not getattr(self.oracle, "exact_below_zero", True):
            return self._below_zero(lam)
        sep = self.fixed.separation(lam) if self.fixed is not None else \
            self.oracle.separate(self.intercept, self.coef, lam, self.zeros)
        return _by_sample(sep)

    def _below_zero(self, lam: float) -> Tuple[ConfigurationRows, np.ndarray]:
        from ..oracles.dp import DPOracle
        try:
            return _by_sample(DPOracle(self.inst).separate(self.intercept, self.coef, lam, self.zeros))
        except ProblemTooLargeError:
            rows, _ = self(0.0)
            return rows, row_losses(self.inst, rows, self.intercept, self.coef) - lam * rows.cost


def _by_sample(sep) -> Tuple[ConfigurationRows, np.ndarray]:
    """A separation's rows and violations in sample order."""
    order = np.argsort(sep.rows.sample, kind="stable")
    return take_rows(sep.rows, order), np.asarray(sep.violation, dtype=float)[order]


# ============================================================================ the 1-D problem
def _point(argmax: Callable, lam: float, eps: float) -> LinePoint:
    """``F(lam) = lam eps + sum_n p_n phi_n`` and its slope ``eps - sum_n p_n c_n`` (one row per sample, the
    point's ``data``; ``p = argmax.p``, the sample probabilities)."""
    rows, phi = argmax(lam)
    q = argmax.p[rows.sample]
    return LinePoint(float(lam), float(lam * eps + q @ phi), float(eps - q @ rows.cost), rows)


def _knapsack(c_left: np.ndarray, l_left: np.ndarray, c_right: np.ndarray, l_right: np.ndarray,
              eps: float, lam_min: float, p: np.ndarray) -> np.ndarray:
    """Fraction of each sample's mass moved from its right (low-cost) row to its left (high-cost) row.

    The exact optimum of the transport LP restricted to these two rows per sample: a fractional
    knapsack over the budget left by the right rows, items of value ``p_n dl`` and weight ``p_n dc``,
    taken by decreasing ratio while the ratio is ``>= lam_min`` (the value of unused budget).  At most
    one fractional item.
    """
    N = c_left.size
    dc, dl = c_left - c_right, l_left - l_right
    frac = np.zeros(N)
    free = (dc <= 0) & (dl > 0)  # a gain without extra cost (impossible for exact maximizers)
    frac[free] = 1.0
    budget = eps - (p @ c_right + p[free] @ dc[free])
    cand = np.flatnonzero((dc > 0) & (dl > 0))
    ratio = dl[cand] / dc[cand]
    keep = ratio >= lam_min * (1.0 - 1e-12)
    cand, ratio = cand[keep], ratio[keep]
    order = cand[np.argsort(-ratio, kind="stable")]
    weight = dc[order] * p[order]
    cum = np.cumsum(weight)
    if budget <= 0 or order.size == 0:
        return frac
    full = int(np.searchsorted(cum, budget * (1.0 + 1e-13), side="right"))
    frac[order[:full]] = 1.0
    if full < order.size:
        used = cum[full - 1] if full else 0.0
        t = (budget - used) / weight[full]
        if t > 1e-13:
            frac[order[full]] = 1.0 if t >= 1.0 - 1e-13 else t
    return frac


# ============================================================================ the main routine
def _exact_cost(inst: DROInstance, rows: ConfigurationRows) -> np.ndarray:
    metric = inst.metric
    cost = metric.categorical_distance(inst.data.Z[rows.sample], rows.Z)
    if inst.label_flips:
        cost = cost + np.where(rows.flip, metric.kappa, 0.0)
    return np.asarray(cost, dtype=float)


@dataclass
class WorstCaseSupport:
    """The worst case of a fixed model as arrays (no table): ``F(lam*)`` (``value``), ``lam*`` and its floor,
    the atoms (configuration ``rows`` with their ``mass``, ``losses`` and exact ``costs``), the atoms'
    expected loss plus the limiting term (``lower``), the unspent budget ``left_over``, the row source and
    the number of ``F`` evaluations.  :func:`worst_case_from_instance` turns it into a
    :class:`WorstCaseResult`; :func:`drokit.certificates.lower_bound.certified_lower_bound` takes its atoms as
    the multipliers of a dual point."""

    value: float
    lam: float
    lam_min: float
    rows: ConfigurationRows
    mass: np.ndarray
    losses: np.ndarray
    costs: np.ndarray
    lower: float
    left_over: float
    method: str
    evaluations: int
    notes: List[str] = field(default_factory=list)
    #: every maximizer at ``lam*`` found (the atoms' rows, both bracketing maximizers and, when the rows
    #: are enumerated, every row within ``candidate_rtol`` of its sample's maximum): where KKT multipliers live
    candidates: Optional[ConfigurationRows] = None


def worst_case_support(inst: DROInstance, intercept: float, coef: np.ndarray, *, method: str = "auto",
                       gap_tol: float = 1e-9, candidate_rtol: float = 1e-6) -> WorstCaseSupport:
    """The worst-case distribution of the fixed model as arrays; see the module docstring for the math.
    ``inst`` must already be evaluated at ``coef`` (:meth:`DROInstance.evaluated_at`).  ``candidate_rtol``:
    enumerated rows within this relative distance of their sample's maximum at ``lam*`` are returned as
    :attr:`WorstCaseSupport.candidates`."""
    if method not in METHODS:
        raise ParameterError(f"method must be one of {list(METHODS)}, got {method!r}")
    coef = np.asarray(coef, dtype=float).ravel()
    intercept = float(intercept)
    if coef.size != inst.schema.n_encoded:
        raise DataError(f"coef has {coef.size} entries but the design has {inst.schema.n_encoded} "
                        f"encoded columns {inst.schema.encoded_names()[:10]}")
    N = inst.n_samples
    eps = float(inst.radius)
    lam_min = lambda_floor(inst, coef)
    p = inst.p
    if eps == 0:  # the empirical distribution itself
        nominal = enumerate_configurations(inst, nominal_only=True)
        losses = row_losses(inst, nominal, intercept, coef)
        risk = float(p @ losses)
        return WorstCaseSupport(risk, np.inf, lam_min, nominal, p.copy(), losses, np.zeros(N), risk, 0.0,
                                "nominal", 0, candidates=nominal)
    if not np.isfinite(lam_min):
        empty = take_rows(enumerate_configurations(inst, nominal_only=True), np.zeros(0, dtype=int))
        return WorstCaseSupport(np.inf, np.inf, lam_min, empty, np.zeros(0), np.zeros(0), np.zeros(0), np.inf,
                                eps, method, 0)

    argmax = _row_source(inst, intercept, coef, method)
    search = minimize_line(lambda lam_: _point(argmax, lam_, eps), lam_min)
    lam, value, left, right, evaluations = search.lam, search.value, search.left, search.right, search.evaluations

    def rows_and_values(point: LinePoint):
        rows = point.data
        return rows, _exact_cost(inst, rows), row_losses(inst, rows, intercept, coef)

    r_rows, r_cost, r_loss = rows_and_values(right)
    tol = gap_tol * max(1.0, abs(value))

    def left_points():
        """Kelley's left point first; then the maximizers at lam* - h (the left derivative: for a small
        h they are the max-cost maximizers at lam*), needed when lam* = lam_min was found at once."""
        nonlocal evaluations
        if left is not None:
            yield left
        for step in (1e-9, 1e-12, 1e-6):
            evaluations += 1
            yield _point(argmax, lam - step * max(1.0, abs(lam)), eps)

    best = None
    for point in left_points():
        l_rows, l_cost, l_loss = rows_and_values(point)
        frac = _knapsack(l_cost, l_loss, r_cost, r_loss, eps, lam_min, p)
        mass_l, mass_r = frac * p, (1.0 - frac) * p
        expected = float(mass_l @ l_loss + mass_r @ r_loss)
        used = float(mass_l @ l_cost + mass_r @ r_cost)
        left_over = max(eps - used, 0.0)
        lower = expected + (lam_min * left_over if lam_min > 0 else 0.0)
        if best is None or lower > best[0]:
            best = (lower, l_rows, l_cost, l_loss, mass_l, mass_r, left_over)
        if value - lower <= tol:
            break
    lower, l_rows, l_cost, l_loss, mass_l, mass_r, left_over = best
    notes = []
    if value - lower > tol:
        notes.append(f"the distribution reaches {lower:.10g} of the worst-case risk {value:.10g} "
                     f"(gap {value - lower:.2e}): ties at lam* were not fully resolved")
    on_l, on_r = np.flatnonzero(mass_l > 0), np.flatnonzero(mass_r > 0)
    rows = concat_rows([take_rows(r_rows, on_r), take_rows(l_rows, on_l)])
    mass = np.concatenate([mass_r[on_r], mass_l[on_l]])
    losses = np.concatenate([r_loss[on_r], l_loss[on_l]])
    costs = np.concatenate([r_cost[on_r], l_cost[on_l]])
    near = [argmax.near(lam, candidate_rtol * max(1.0, abs(value)))] if hasattr(argmax, "near") else []
    candidates = unique_rows(concat_rows(near + [r_rows, l_rows]))
    return WorstCaseSupport(value, lam, lam_min, rows, mass, losses, costs, lower, left_over, argmax.name,
                            evaluations, notes, candidates)


def _row_source(inst: DROInstance, intercept: float, coef: np.ndarray, method: str):
    size = count_configuration_rows(inst)
    if method == "enumeration" or (method == "auto" and size <= AUTO_ENUMERATION_ROWS):
        if size > MAX_EVALUATION_ROWS:
            raise ProblemTooLargeError(
                f"method='enumeration' would enumerate {size:,} configuration rows (limit "
                f"{MAX_EVALUATION_ROWS:,}); use method='oracle'")
        return _EnumeratedRows(inst, intercept, coef)
    try:
        return _OracleRows(inst, intercept, coef)
    except ProblemTooLargeError:
        if method == "auto" and size <= MAX_EVALUATION_ROWS:
            return _EnumeratedRows(inst, intercept, coef)
        raise
