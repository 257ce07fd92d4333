"""Worst-case risk AND a worst-case distribution of a fitted linear model over a Wasserstein ball.

For a fixed model ``beta`` and the ball ``B_eps(P_N) = {Q : W_c(Q, P_N) <= eps}`` around the empirical
distribution of the evaluation data, strong duality (belbasi2023 Observation 1 with Prop. 1 / Prop. 3
at fixed beta; sun2025 Theorem 1 and §2.5) gives

    WC(beta) = sup_{Q in B_eps} E_Q[loss]
             = min_{lam >= lam_min}  F(lam),   F(lam) = lam eps + (1/N) sum_n max_k (l_k - lam c_k),

over the *configuration rows* ``k = (n, z, flip)`` of sample ``n`` (categorical configuration ``z``,
label flip for classification with finite ``kappa``; loss ``l_k`` and transport cost ``c_k``, see
:mod:`drokit.oracles.enumeration`).  ``lam_min = lip(L) ||Gamma^{-1} beta_x||_*`` (and
``>= lip(L)/kappa`` in regression) is the floor below which the numerical features (and, in
regression, the label) make the inner supremum infinite (belbasi2023 Lemma 1 and Lemma 3; sun2025
Lemma 2).  ``F`` is convex and piecewise linear in ``lam``.

The primal side is the transport LP (sun2025 §2.5; spec D2 item 3):

    max_{q >= 0}  sum_k q_k l_k + lam_min (eps - sum_k q_k c_k)
    s.t.  sum_{k of sample n} q_k = 1/N  (every n),   sum_k q_k c_k <= eps.

The term ``lam_min (eps - sum q c)`` is the value of the budget left over, spent by moving a vanishing
mass infinitely far along the dual-norm direction of the numerical features (sun2025 §2.5): it is
approached but *not attained* by any distribution.  A basic optimal solution of this LP has at most
``N + 1`` positive masses (``N`` equality rows plus one budget row), which is the structure returned
here:

* at the optimal ``lam*``, sample ``n`` sends its mass ``1/N`` to a maximizer of ``l_k - lam* c_k``;
* where the maximizer is not unique, the mass of ONE sample is split between its max-cost and its
  min-cost maximizer so that the budget is exactly ``eps`` whenever ``lam* > lam_min`` (complementary
  slackness); at ``lam* = 0`` the budget need not bind;
* when ``lam* > lam_min`` the numerical features do not move (belbasi2023 Lemma 1, sun2025 Lemma 2):
  the atoms keep the samples' numerical values and only categorical features (and labels) change;
* when ``lam* = lam_min > 0`` and the categorical / label moves do not use the whole budget, the
  remainder ``r = eps - budget_used`` earns ``lam_min r`` only in the limit: the result then has
  ``attained = False`` and describes the limiting direction in :attr:`WorstCaseResult.limit`.

How the maximizers are found (the same for both methods): the convex piecewise-linear ``F`` is
minimized exactly by Kelley's intersection method (two supporting lines of opposite slopes; their
intersection is either optimal or gives a new line; finite for a piecewise-linear ``F``).  At the end
the maximizers of the two bracketing lines are both maximizers at ``lam*``: the left one has total
cost ``>= eps``, the right one ``<= eps``.  Choosing, per sample, the left or the right row under the
budget is a fractional knapsack (value per unit budget ``(l_left - l_right) / (c_left - c_right)``,
taken in decreasing order while it is ``>= lam_min``), solved exactly by one sort; it has a single
fractional item, hence at most ``N + 1`` atoms.  At ``lam* = lam_min`` the left maximizers come from
evaluating the maximizers at ``lam_min - h`` for a tiny ``h`` (the left derivative).  The expected loss
of the returned atoms (plus ``lam_min r`` in the limiting case) is a lower bound and ``F(lam*)`` an
upper bound on ``WC(beta)``; their difference is reported as :attr:`WorstCaseResult.gap` (zero up to
rounding).

With a matrix numerical cost ``||M (x - x')||_p`` the model is bound in the coordinates ``x~ = M x``
(:func:`drokit.models.binding.bind_fitted_model`), where the cost is the unit-weight norm; :func:`worst_case` maps the
atoms' numerical values and the limiting direction back, ``x = M^{-1} x~`` (:mod:`drokit.metrics.linear_map`).

Row sources: ``method="enumeration"`` enumerates every configuration row (exact, exponential in the
number of categorical features, as :func:`~drokit.evaluation.worst_case_value`); ``method="oracle"``
uses the DP separation oracle (:class:`~drokit.oracles.dp.DPOracle`, exact, no enumeration).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Optional

import numpy as np

from ..dask_inputs import any_dask
from ..certificates.support import METHODS, WorstCaseSupport, worst_case_support
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, enumerate_configurations
from ..oracles.rows import row_losses, row_margins
from .worst_case_result import LimitingDirection, WorstCaseResult, assemble_result, take_levels

#: the support computation's names, importable from here as before (their home is :mod:`drokit.certificates.support`)
__all__ = ["worst_case", "worst_case_from_instance", "WorstCaseResult", "LimitingDirection", "take_levels", "METHODS",
           "worst_case_support", "WorstCaseSupport"]


def _limiting_direction(inst: DROInstance, intercept: float, coef: np.ndarray, lam_min: float,
                        budget: float, atom_rows: Optional[ConfigurationRows]) -> LimitingDirection:
    """The dual-norm direction along which the remaining budget is spent in the limit."""
    metric = inst.metric
    n = inst.n_numerical
    names = inst.schema.numerical_names
    gamma = np.asarray(metric.gamma, dtype=float)
    bx = np.asarray(coef, dtype=float)[:n]
    if not np.isfinite(lam_min):
        bad = [names[j] for j in np.flatnonzero((gamma == 0) & (bx != 0))]
        return LimitingDirection("unbounded", 0, float(budget), np.inf, bad, np.zeros(n))
    lip = float(inst.loss.lipschitz)
    norm = metric.dual_norm(bx)
    numerical_rate = lip * norm if norm > 0 else 0.0   # (lip = inf only with norm = 0 here: 0 * inf = 0)
    label = (not inst.is_classification and np.isfinite(metric.kappa)
             and lip / metric.kappa > numerical_rate)
    # the side of the loss whose asymptotic slope is lip: u -> side * inf
    with np.errstate(over="ignore", invalid="ignore"):
        ends = np.asarray(inst.loss.derivative(np.array([-1e9, 1e9])), dtype=float)
    side = -1.0 if abs(ends[0]) >= abs(ends[1]) else 1.0
    sample = 0
    if atom_rows is not None and atom_rows.size:
        with np.errstate(over="ignore", invalid="ignore"):
            slope = side * np.asarray(inst.loss.derivative(row_margins(inst, atom_rows, intercept, coef)))
        sample = int(atom_rows.sample[int(np.nanargmax(slope))]) if np.isfinite(slope).any() else 0
    if label:  # regression: u = f - y, so y moves opposite to the side, at cost kappa |dy|
        return LimitingDirection("label", sample, float(budget), float(lam_min), [], np.zeros(n),
                                 label_direction=float(-side / metric.kappa))
    keep = np.flatnonzero(np.isfinite(gamma) & (gamma > 0))
    # a maximizer of w'v over N(v) <= 1 (w = Gamma^{-1} beta_x on the priced columns; the l_p cost: p = 1, the single
    # coordinate with the largest |w_j|; p = inf, every coordinate by its sign; else sign(w) |w|^(q-1) / ||w||_q^(q-1))
    v = metric.numerical.maximizer(bx[keep] / gamma[keep], keep) if keep.size else np.zeros(0)
    direction = np.zeros(n)
    direction[keep] = v / gamma[keep]  # N(Gamma direction) = 1 and beta_x^T direction = N_*(w)
    sign = side * (inst.y[sample] if inst.is_classification else 1.0)
    direction = sign * direction
    moved = [names[j] for j in np.flatnonzero(direction)]
    return LimitingDirection("numerical", sample, float(budget), float(lam_min), moved, direction)


def worst_case_from_instance(inst: DROInstance, intercept: float, coef: np.ndarray, *,
                            method: str = "auto", classes: Optional[np.ndarray] = None,
                            gap_tol: float = 1e-9) -> WorstCaseResult:
    """Worst-case risk and a worst-case distribution of the fixed model ``(intercept, coef)`` on the
    bound instance ``inst`` (its data, metric and radius); see the module docstring for the math.

    ``classes``: the user's two class labels (``classes[0] <-> -1``, ``classes[1] <-> +1``) for the
    ``label`` column; ``None`` reports the encoded labels.
    """
    inst = inst.evaluated_at(coef)  # an adversarial loss at this model: the plain attacked loss
    t0 = time.perf_counter()
    coef = np.asarray(coef, dtype=float).ravel()
    intercept = float(intercept)
    support = worst_case_support(inst, intercept, coef, method=method, gap_tol=gap_tol)
    nominal_risk = float(inst.p @ row_losses(inst, enumerate_configurations(inst, nominal_only=True),
                                             intercept, coef))
    eps, lam_min = float(inst.radius), support.lam_min
    limit = None
    if eps > 0 and not np.isfinite(lam_min):
        limit = _limiting_direction(inst, intercept, coef, lam_min, eps, None)
    elif lam_min > 0 and support.left_over > 1e-9 * max(eps, 1e-300):
        limit = _limiting_direction(inst, intercept, coef, lam_min, support.left_over, support.rows)
    return assemble_result(inst, classes, value=support.value, nominal_risk=nominal_risk, lam=support.lam,
                   lam_min=lam_min, rows=support.rows, mass=support.mass, losses=support.losses,
                   costs=support.costs, lower=support.lower, limit=limit,
                   method=support.method,
                   evaluations=support.evaluations, elapsed=time.perf_counter() - t0, notes=support.notes)


# ============================================================================ the public entry point
def worst_case(model, X, y, ambiguity=None, *, method: str = "auto", schema=None,
               loss=None, sample_weight=None, client=None) -> WorstCaseResult:
    """Worst-case risk of a fitted model over a Wasserstein ball around ``(X, y)`` and a worst-case
    distribution that attains it (or approaches it: ``attained=False``).

    ``WC(beta) = sup_{Q: W_c(Q, P_N) <= eps} E_Q[loss] = min_{lam >= lam_min} lam eps + (1/N) sum_n
    max_k (l_k - lam c_k)`` (belbasi2023 Observation 1 / Props. 1 and 3 at fixed beta; sun2025 §2.5).
    The returned distribution has at most ``N + 1`` atoms: every sample's mass ``1/N`` sits on a
    maximizer of ``l_k - lam* c_k``, one sample's mass is split between two maximizers so that the
    budget binds when ``lam* > 0``; numerical features stay put unless ``lam* = lam_min > 0``, in which
    case the remaining budget is spent in the limit along the dual-norm direction (``attained=False``,
    :attr:`WorstCaseResult.limit`).  Details in :mod:`drokit.evaluation.worst_case_distribution`.

    Parameters
    ----------
    model : estimator
        A fitted :class:`~drokit.DROClassifier` / :class:`~drokit.DRORegressor`; or any fitted linear
        model with ``coef_`` and ``intercept_`` fitted on drokit's design matrix ``[numerical columns,
        reference-level dummies]`` (e.g. an sklearn ``LogisticRegression`` fitted on
        ``schema.design(schema.transform(X))``), then ``schema`` (a :class:`~drokit.schema.FeatureSchema`)
        and ``ambiguity`` are required, and ``loss`` unless the model is a ``LogisticRegression``.
    X, y : array_like
        Evaluation data with the columns of fit, in the same order (pandas or numpy), checked as the
        estimator's ``predict`` checks them (:func:`drokit.validation.check_features`: other
        DataFrame columns raise, a numpy array for a model fitted on a DataFrame warns); unseen
        categorical levels follow the estimator's ``handle_unknown`` (``"error"`` raises, ``"ignore"`` uses the reference
        level).  Classification labels must be among the model's ``classes_`` (a model without
        ``classes_``: +-1 labels, or two labels of which the larger is the positive class).
    ambiguity : Wasserstein or None
        :class:`~drokit.Wasserstein` ball; defaults to the estimator's own.
    method : {"auto", "enumeration", "oracle"}
        ``"enumeration"`` (all configuration rows, exact; small problems), ``"oracle"`` (the DP
        separation oracle, exact, any size) or ``"auto"`` (enumeration up to
        ``AUTO_ENUMERATION_ROWS`` rows, else the oracle).
    sample_weight : array_like of shape (n_samples,) or None
        Weights of the rows of ``X`` (the ball is around ``sum_n p_n delta_n``); uniform by default.
    client : dask.distributed.Client or None
        With Dask collections for ``X`` / ``y`` / ``sample_weight`` (partitioned alike; categorical columns with
        known categories): the client to run on (default: the current one, else the local scheduler).  The risk is
        then computed partition by partition and a :class:`~drokit.evaluation.distributed_worst_case.DaskWorstCase`
        (value, certified lower bound, ``lam``; no atoms) is returned
        (:mod:`drokit.evaluation.distributed_worst_case`).

    Returns
    -------
    WorstCaseResult
        ``value``, ``nominal_risk``, ``lam``, ``lam_min``, ``attained``, ``atoms``, ``budget_used``,
        ``limit``, ``distribution_matrix()``, ``summary()``.
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {list(METHODS)}, got {method!r}")
    if any_dask(X, y, sample_weight):
        if method == "enumeration":
            raise ParameterError("method='enumeration' lists every configuration row in one process; Dask inputs "
                                 "are evaluated by the oracle, partition by partition (method='auto' or 'oracle')")
        from .distributed_worst_case import worst_case_dask
        return worst_case_dask(model, X, y, ambiguity, schema=schema, loss=loss, sample_weight=sample_weight,
                               client=client)
    if client is not None:
        raise ParameterError("client is for Dask collections; X, y and sample_weight here are in memory")
    from ..models.binding import bind_fitted_model
    inst, intercept, coef, classes, moment = bind_fitted_model(model, X, y, ambiguity, schema=schema, loss=loss,
                                                               sample_weight=sample_weight, where="worst_case")
    if moment is not None:                               # an OT-with-moment set: samples move and are reweighted
        from .mot_worst_case_distribution import mot_worst_case_from_instance
        rho, theta1, theta2, divergence = moment
        result = mot_worst_case_from_instance(inst, intercept, coef, rho=rho, theta1=theta1, theta2=theta2,
                                              divergence=divergence, classes=classes)
        return _in_original_coordinates(result, inst)
    result = worst_case_from_instance(inst, intercept, coef, method=method, classes=classes)
    return _in_original_coordinates(result, inst)


def _in_original_coordinates(result: WorstCaseResult, inst: DROInstance) -> WorstCaseResult:
    """``result`` of an instance bound in the coordinates ``x~ = M x`` of a matrix cost with its numerical values
    (atoms and limiting direction) mapped back, ``x = M^{-1} x~``: the transport costs ``||M (x - x_n)||_p`` and the
    scores ``beta' x`` are those of ``x~`` (the result as it is without a matrix cost)."""
    linear_map = inst.metric.linear_map
    if linear_map is None:
        return result
    result._X_num = linear_map.points_back(result._X_num)
    limit = result.limit
    if limit is not None and limit.kind == "numerical":
        direction = linear_map.points_back(limit.direction)
        names = inst.schema.numerical_names
        result.limit = replace(limit, direction=direction, features=[names[j] for j in np.flatnonzero(direction)])
    return result
