"""The certificate of the multinomial DRO logistic model (issue 20 item 7; the model: :mod:`drokit.models.multinomial`):
the exact worst-case risk of a fitted model (the upper bound) and the Lagrangian bound of an explicit dual point (the
lower bound).

Upper: ``F(W, b) = min_{lambda >= L(W)} lambda eps + sum_n p_n max_r [l_r - lambda c_r]``, ``lambda*`` from an LP
(HiGHS) over the enumerated rows, then ``F`` evaluated at ``max(lambda*, L(W))``.

Lower: by ``LSE(f) = max_{q in simplex} q^T f + H(q)``, masses ``m_r`` (``p_n`` per sample) and class distributions
``q_r`` give ``OPT >= sum_r m_r H(q_r)`` when ``G_k = sum_r m_r (q_rk - 1[y'_r = k]) a_r`` vanishes on the free
columns (intercept, dummies, immutable numerical features) and ``sum_r m_r c_r + D(G) <= eps``, ``D(G) = min { sum_{k<j}
||Gamma F_kj||_p : F antisymmetric, sum_j F_kj = G_k }`` (the pairwise cones' dual, a flow between classes; any
feasible flow gives a valid bound).  An overspent budget is met by mixing with the nominal rows at ``q = e_{y_n}``.
The point is the model's worst-case distribution with ``q_r = softmax(f(row r))``, or where ties leave it short the
restricted Lagrange dual on the rows near their maximum (:func:`_kkt_point`), made exactly feasible
(:func:`_stationary_distributions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp
from scipy.special import softmax

from ..oracles.multinomial_rows import MultinomialRows, limited_columns, row_design, row_losses, scores, take
from ..gaps import gap_scale
from ..instance import DROInstance

#: the status rule of every fit (drokit.models.certification.CERTIFIED_GAP): the search for a better dual point stops
#: at a tenth of it
CERTIFIED_GAP = 1e-6
#: a free-column residual of the repaired dual point below this (relative to the masses) is rounding
RESIDUAL_RTOL = 1e-12


def lambda_floor(inst: DROInstance, coef: np.ndarray) -> float:
    """``L(W) = max_{k != j} N_*(Gamma^{-1} (w_{k,x} - w_{j,x}))`` (``||.||_{p*}`` for the l_p cost; 0 at radius 0: no
    transport)."""
    cols, gamma = limited_columns(inst)
    if not cols.size:
        return 0.0
    norm = inst.metric.numerical
    K = coef.shape[0]
    return max((norm.dual_norm(coef[k, cols] - coef[j, cols], gamma, columns=cols) for k in range(K)
                for j in range(k + 1, K)), default=0.0)


@dataclass
class WorstCase:
    """The exact worst-case risk ``value`` of a model, at ``lam``, with each row's ``loss`` and the worst-case
    distribution's ``mass`` per row (the evaluation LP's multipliers; at radius 0 each sample's worst costless row)."""

    value: float
    lam: float
    losses: np.ndarray
    mass: np.ndarray


def worst_case_value(inst: DROInstance, mrows: MultinomialRows, coef: np.ndarray, intercept: np.ndarray) -> WorstCase:
    """``F(W, b)`` of the module docstring, exactly: ``lambda*`` from an LP over the enumerated rows, then ``F`` evaluated
    at ``max(lambda*, L(W))`` (:func:`drokit.evaluation.worst_case.minimize_over_lambda`, the binary model's; at radius
    0 each sample's worst costless row)."""
    from .worst_case import costless_worst_case, minimize_over_lambda
    losses = row_losses(inst, mrows, coef, intercept)
    sample = mrows.rows.sample
    if inst.radius == 0:
        value, mass = costless_worst_case(losses, mrows.cost == 0, sample, inst.p)
        return WorstCase(value, np.inf, losses, mass)
    lam_min = lambda_floor(inst, coef)
    if not np.isfinite(lam_min):
        return WorstCase(np.inf, np.inf, losses, np.zeros(mrows.size))
    value, lam, mass = minimize_over_lambda(losses, mrows.cost, sample, inst.p, inst.radius, lam_min)
    return WorstCase(value, lam, losses, mass)


# ------------------------------------------------------------------------------------------ the lower bound
def _entropy(Q: np.ndarray) -> np.ndarray:
    """``H(q) = -sum_k q_k log q_k`` per row (``0 log 0 = 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(Q > 0, Q * np.log(np.where(Q > 0, Q, 1.0)), 0.0)
    return -terms.sum(axis=1)


def _free_design(inst: DROInstance, A: sp.csr_matrix) -> sp.csr_matrix:
    """``B = [1, A_free]`` (the intercept column only when fitted): the columns whose class sums must vanish."""
    ones = [sp.csr_matrix(np.ones((A.shape[0], 1)))] if inst.fit_intercept else []
    return sp.hstack(ones + [A[:, _free_columns(inst)]], format="csr")


def _labels(mrows: MultinomialRows, n_classes: int) -> np.ndarray:
    """``E_rk = 1[y'_r = k]`` (R, K)."""
    E = np.zeros((mrows.size, n_classes))
    E[np.arange(mrows.size), mrows.target] = 1.0
    return E


def _free_columns(inst: DROInstance) -> np.ndarray:
    """Encoded columns whose ``G_k`` must vanish: dummies and numerical columns the transport does not price."""
    cols, _ = limited_columns(inst)
    return np.setdiff1d(np.arange(inst.schema.n_encoded), cols)


@dataclass(frozen=True)
class FlowNorm:
    """The metric's numerical norm (a :class:`~drokit.metrics.norms.NumericalNorm`) on the flows' columns ``cols``
    (numerical positions)."""

    norm: object
    cols: np.ndarray


def _flow_cost(G: np.ndarray, gamma: np.ndarray, flow_norm: FlowNorm) -> float:
    """``D(G)`` of the module docstring, from above: the best flow found (star decompositions around every class,
    and for ``K >= 3`` a small conic program), made exactly feasible, then its cost ``sum_{k<j} N(Gamma F_kj)`` (``norm``:
    the metric's :class:`~drokit.metrics.norms.NumericalNorm` on the numerical positions of ``G``'s columns,
    ``||.||_p`` for the l_p cost)."""
    K = G.shape[0]
    if not G.shape[1]:
        return 0.0

    def cost(F):
        return sum(float(flow_norm.norm.weighted_value(F[k, j], gamma, flow_norm.cols)) for k in range(K)
                   for j in range(k + 1, K))

    def exact(F):
        """The flows into the last class re-derived from the equations (so that ``sum_j F_kj = G_k`` exactly for
        ``k < K - 1``; the last class's equation then holds because ``sum_k G_k = 0``)."""
        F = F.copy()
        last = K - 1
        for k in range(last):
            rest = sum((F[k, j] for j in range(k + 1, last)), np.zeros(G.shape[1]))
            into = sum((F[j, k] for j in range(k)), np.zeros(G.shape[1]))
            F[k, last] = G[k] - rest + into
        return F

    best = np.inf
    for hub in range(K):                               # stars: F_{k,hub} = G_k (signs by the pair's order)
        F = np.zeros((K, K, G.shape[1]))
        for k in range(K):
            if k < hub:
                F[k, hub] = G[k]
            elif k > hub:
                F[hub, k] = -G[k]
        best = min(best, cost(exact(F)))
    if K >= 3:
        F = _optimal_flow(G, gamma, flow_norm)
        if F is not None:
            best = min(best, cost(exact(F)))
    return best


def _declare_flows(pb, G, gamma: np.ndarray, flow_norm: FlowNorm):
    """Flows ``F_kj`` (``k < j``) between classes with their norms ``t_kj >= N(Gamma F_kj)`` and the conservation
    ``sum_{j>k} F_kj - sum_{j<k} F_jk = G(k)`` for ``k < K - 1`` (the last class's follows: ``sum_k G_k = 0``); ``G(k)``
    is affine (or a constant vector).  Returns ``(flows by pair, t)``."""
    K, n = len(G), gamma.size
    pairs = [(k, j) for k in range(K) for j in range(k + 1, K)]
    flows = {pair: pb.aux("flow", n) for pair in pairs}
    t = pb.aux("flow_norm", len(pairs))
    keep = np.flatnonzero(gamma > 0)                   # weight 0: the flow is free there
    for i, pair in enumerate(pairs):
        if keep.size:
            flow_norm.norm.add_value_leq(pb, flows[pair][keep] * gamma[keep], t[i], np.asarray(flow_norm.cols)[keep])
        else:
            pb.add_nonneg(t[i])
    for k in range(K - 1):
        out = sum((flows[(k, j)] for j in range(k + 1, K)), pb.constant(np.zeros(n)))
        inn = sum((flows[(j, k)] for j in range(k)), pb.constant(np.zeros(n)))
        pb.add_zero(out - inn - G[k])
    return flows, t


def _optimal_flow(G: np.ndarray, gamma: np.ndarray, flow_norm: FlowNorm) -> Optional[np.ndarray]:
    """``argmin sum_{k<j} N(Gamma F_kj)`` over the flows with ``sum_{j>k} F_kj - sum_{j<k} F_jk = G_k`` (Clarabel;
    ``None`` when not solved: the stars stand)."""
    from ..conic.builder import ProgramBuilder
    from ..solvers.clarabel import ClarabelBackend
    K, n = G.shape
    pb = ProgramBuilder()
    flows, t = _declare_flows(pb, G, gamma, flow_norm)
    pb.minimize(t.sum())
    try:
        sol = ClarabelBackend().solve(pb.build(), {})
    except Exception:
        return None
    if sol.x is None:
        return None
    F = np.zeros((K, K, n))
    for pair, flow in flows.items():
        F[pair] = flow.evaluate(sol.x)
    return F


def _stationary_distributions(Q: np.ndarray, mass: np.ndarray, B: sp.csr_matrix, E: np.ndarray,
                              max_steps: int = 30) -> Optional[np.ndarray]:
    """``Q' = softmax(log Q + B C^T)`` with ``C`` (K x |free|, the last class's row 0) chosen by Newton's method so that
    ``B^T (m (Q' - E)) = 0`` up to rounding: the free columns' (and intercepts') conditions.  Changing the rows' log-odds
    by a linear function of the free columns keeps every ``q`` in the simplex (a least-norm change of ``Q`` itself
    pushed softmax entries of 1e-8 below 0); the Jacobian is ``sum_r m_r (diag q_r - q_r q_r^T) (x) b_r b_r^T``, the
    Hessian of the multinomial log-likelihood in the free parameters.  ``None`` when the residual stays above
    :data:`RESIDUAL_RTOL`."""
    R, K = Q.shape
    with np.errstate(divide="ignore"):
        logits = np.log(Q)
    nb = B.shape[1]
    C = np.zeros((K, nb))
    tol = RESIDUAL_RTOL * max(1.0, float(np.max(mass)))
    Bd = B.toarray() if sp.issparse(B) else np.asarray(B)
    for _ in range(max_steps):
        Qc = softmax(logits + Bd @ C.T, axis=1)
        residual = Bd.T @ (mass[:, None] * (Qc - E))          # (nb, K)
        if float(np.max(np.abs(residual), initial=0.0)) <= tol:
            return Qc
        H = np.zeros(((K - 1) * nb, (K - 1) * nb))
        for k in range(K - 1):
            for l in range(K - 1):
                w = mass * (Qc[:, k] * (k == l) - Qc[:, k] * Qc[:, l])
                H[k * nb:(k + 1) * nb, l * nb:(l + 1) * nb] = Bd.T @ (w[:, None] * Bd)
        step = np.linalg.lstsq(H, -residual[:, : K - 1].T.ravel(), rcond=None)[0]
        C[: K - 1] += step.reshape(K - 1, nb)
    Qc = softmax(logits + Bd @ C.T, axis=1)
    residual = Bd.T @ (mass[:, None] * (Qc - E))
    return Qc if float(np.max(np.abs(residual), initial=0.0)) <= tol else None


def lagrangian_bound(inst: DROInstance, mrows: MultinomialRows, mass: np.ndarray, Q: np.ndarray,
                     n_classes: int) -> float:
    """The Lagrangian lower bound of the module docstring at masses ``mass`` (per row) and class distributions ``Q``
    (R, K), made exactly feasible first: masses scaled to ``p_n`` per sample; the free columns' sums (and the
    intercepts') brought to 0 by a least-norm change of ``Q`` within the rows' simplices (``-inf`` when that leaves
    the simplex or the residual stays above rounding); the budget met by mixing with the nominal rows."""
    K, N = n_classes, inst.n_samples
    sample = mrows.rows.sample
    mass = np.maximum(np.asarray(mass, dtype=float), 0.0)
    total = np.bincount(sample, weights=mass, minlength=N)
    if np.any((total <= 0) & (inst.p > 0)):
        return -np.inf                                # every sample needs mass (the fitted model's rows have it)
    mass = mass * np.divide(inst.p, total, out=np.zeros(N), where=total > 0)[sample]
    Q = np.clip(np.asarray(Q, dtype=float), 0.0, None)
    Q = Q / Q.sum(axis=1, keepdims=True)
    E = _labels(mrows, K)
    A = row_design(inst, mrows.rows)
    B = _free_design(inst, A)
    if B.shape[1]:
        Q = _stationary_distributions(Q, mass, B, E)
        if Q is None:
            return -np.inf
    value = float(mass @ _entropy(Q))
    cols, gamma = limited_columns(inst)
    if inst.radius <= 0:
        return value if float(mass @ mrows.cost) <= 0 else 0.0
    G = (mass[:, None] * (Q - E)).T @ A[:, cols] if cols.size else np.zeros((K, 0))
    spent = float(mass @ mrows.cost) + _flow_cost(np.asarray(G), gamma, FlowNorm(inst.metric.numerical, cols))
    if spent <= inst.radius:
        return value
    return value * inst.radius / spent                  # mixed with the nominal rows at q = e_{y_n} (value 0 there)


def certified_lower_bound(inst: DROInstance, mrows: MultinomialRows, coef: np.ndarray, intercept: np.ndarray,
                          worst: WorstCase, n_classes: int, upper: Optional[float] = None) -> float:
    """The bound at the model's worst-case distribution (``worst.mass``) with ``q_r = softmax(f(row r))``; while it is
    not within :data:`CERTIFIED_GAP` / 10 of ``upper``, at the point of :func:`_kkt_point` on the rows near their
    sample's maximum (ties: the LP's vertex is one worst-case distribution, the multipliers may split the mass)."""
    Q = softmax(scores(inst, mrows.rows, coef, intercept), axis=1)
    best = lagrangian_bound(inst, mrows, worst.mass, Q, n_classes)
    upper = worst.value if upper is None else upper
    if upper - best <= 0.1 * CERTIFIED_GAP * gap_scale(upper) or inst.radius == 0:
        return best
    lam = worst.lam
    value = worst.losses - lam * mrows.cost
    top = np.full(inst.n_samples, -np.inf)
    np.maximum.at(top, mrows.rows.sample, value)
    for rtol in (1e-7, 1e-5, 1e-3):
        near = np.flatnonzero(value >= top[mrows.rows.sample] - rtol * gap_scale(upper))
        cand = take(mrows, near)
        point = _kkt_point(inst, cand, Q[near], n_classes)
        if point is not None:
            best = max(best, lagrangian_bound(inst, cand, point[0], point[1], n_classes))
        if upper - best <= 0.1 * CERTIFIED_GAP * gap_scale(upper):
            break
    return best




def _kkt_point(inst: DROInstance, mrows: MultinomialRows, Q: np.ndarray,
               n_classes: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """Masses and class distributions on ``mrows`` (rows near their sample's maximum) from the Lagrange dual restricted
    to them, a small conic program over ``m`` and ``v_rk = m_r q_rk``:

        max  sum_rk -v_rk log(v_rk / m_r) - M (||res||_1 + over)      (exponential cones: the entropy's perspective)
        s.t. v >= 0,  sum_k v_rk = m_r,  sum_{r of n} m_r = p_n,
             res = B^T (v_k - m e_k) on the free columns and the intercept, for every class k,
             sum_{j>k} F_kj - sum_{j<k} F_jk = G_k = A_L^T (v_k - m e_k),  ||Gamma F_kj||_p <= t_kj,
             sum_r m_r c_r + sum t <= eps + over.

    The conditions are soft (weight ``M``); :func:`lagrangian_bound` makes the point exact.  ``Q``: the distributions
    kept where a row gets no mass.  ``None`` when the program is not solved."""
    from ..conic.builder import Affine, ProgramBuilder
    from ..solvers.base import solve_with_retries
    from ..solvers.clarabel import ClarabelBackend
    K, R = n_classes, mrows.size
    E = _labels(mrows, K)
    A = row_design(inst, mrows.rows)
    B = _free_design(inst, A)
    cols, gamma = limited_columns(inst)
    weight = 1e4
    pb = ProgramBuilder()
    m = pb.var("mass", R)
    v = pb.var("class_mass", R * K)                     # class-major: v[k R + r]
    h = pb.var("entropy", R * K)
    pb.add_nonneg(m)
    owner = sp.csr_matrix((np.ones(R), (mrows.rows.sample, np.arange(R))), shape=(inst.n_samples, R))
    pb.add_zero(m.premultiply(owner) - inst.p)
    pb.add_zero(v.premultiply(sp.hstack([sp.identity(R)] * K, format="csr")) - m)
    pb.add_exp(h, v, m.premultiply(sp.vstack([sp.identity(R)] * K, format="csr")))   # v exp(h / v) <= m

    def class_part(k, D):
        """``D^T (v_k - m e_k)``."""
        block = v[np.arange(k * R, (k + 1) * R)]
        return block.premultiply(sp.csr_matrix(D.T)) - m.premultiply(sp.csr_matrix(D.T @ sp.diags(E[:, k])))

    objective = h.sum()
    if B.shape[1]:
        res = pb.var("residual", B.shape[1] * K)
        for k in range(K):
            g = class_part(k, B)
            block = res[np.arange(k * B.shape[1], (k + 1) * B.shape[1])]
            pb.add_nonneg(Affine.vstack([block - g, block + g]))
        objective = objective - res.sum() * weight
    spent = m.premultiply(mrows.cost[None, :])
    if cols.size:
        _, t = _declare_flows(pb, [class_part(k, A[:, cols]) for k in range(K)], gamma,
                              FlowNorm(inst.metric.numerical, cols))
        spent = spent + t.sum()
    over = pb.var("over_budget", 1)
    pb.add_nonneg(Affine.vstack([over, over + float(inst.radius) - spent]))
    pb.minimize(-(objective - over * weight))
    try:
        sol = solve_with_retries(ClarabelBackend(), pb.build(), {}, retry_inaccurate=True)
    except Exception:                                 # the bound only improves on success
        return None
    if sol.x is None or sol.status not in ("optimal", "optimal_inaccurate"):
        return None
    mass = np.maximum(sol.x[pb.variables["mass"]], 0.0)
    V = np.maximum(sol.x[pb.variables["class_mass"]], 0.0).reshape(K, R).T
    total = V.sum(axis=1, keepdims=True)
    return mass, np.where(total > 1e-300, V / np.where(total > 0, total, 1.0), Q)

