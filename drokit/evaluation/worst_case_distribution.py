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

Row sources: ``method="enumeration"`` enumerates every configuration row (exact, exponential in the
number of categorical features, as :func:`~drokit.evaluation.worst_case_value`); ``method="oracle"``
uses the DP separation oracle (:class:`~drokit.oracles.dp.DPOracle`, exact, no enumeration).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..certificates.support import METHODS, WorstCaseSupport, worst_case_support
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, enumerate_configurations, take_rows
from ..oracles.rows import row_losses, row_margins

#: the support computation's names, importable from here as before (their home is :mod:`drokit.certificates.support`)
__all__ = ["worst_case", "worst_case_from_instance", "WorstCaseResult", "LimitingDirection", "take_levels", "METHODS",
           "worst_case_support", "WorstCaseSupport"]
#: columns of :attr:`WorstCaseResult.atoms` besides the categorical features
_RESERVED = ("sample", "mass", "cost", "loss", "label", "flipped", "changed", "n_changed")


# ============================================================================ result types
@dataclass
class LimitingDirection:
    """How the worst case is approached when it is not attained (``lam* = lam_min > 0`` with budget left).

    A mass ``r / t`` taken from the atom of sample :attr:`sample` and moved by ``t`` units of transport
    cost along :attr:`direction` (numerical features, in their original units per unit of cost) — or,
    for ``kind="label"`` (regression with finite ``kappa``), by ``t * label_direction`` in the label —
    raises the expected loss by ``r * rate`` as ``t -> inf`` (``rate = lam_min``; sun2025 §2.5,
    belbasi2023 Lemma 1 / Lemma 3).  No distribution in the ball attains it.  Any sample can carry this
    vanishing mass; :attr:`sample` is the one whose loss is steepest along the direction.

    ``kind="unbounded"``: a numerical feature with cost weight ``gamma = 0`` and a nonzero coefficient
    makes the worst-case risk infinite (``features`` names it).
    """

    kind: str                   # "numerical", "label" or "unbounded"
    sample: int                 # position (row of X) of the sample whose mass escapes
    budget: float               # transport budget spent in the limit: eps - budget_used
    rate: float                 # value per unit budget: lam_min
    features: List[str]         # numerical features that move (empty for kind="label")
    direction: np.ndarray       # (n_numerical,) displacement per unit transport cost, schema order
    label_direction: float = 0.0  # kind="label": change of y per unit transport cost

    def __str__(self) -> str:
        if self.kind == "unbounded":
            return (f"unbounded: numerical feature(s) {self.features} cost nothing to move (weight 0) "
                    f"but have nonzero coefficients")
        if self.kind == "label":
            how = f"label y moved by {self.label_direction:+.6g} per unit cost"
        else:
            moves = ", ".join(f"{n} {d:+.6g}" for n, d in zip(self.features, self.direction[
                np.flatnonzero(self.direction)]))
            how = f"numerical feature(s) moved per unit cost: {moves}"
        return (f"not attained: a vanishing mass of sample {self.sample} moves infinitely far ({how}); "
                f"it spends the remaining budget {self.budget:.6g} at rate lam_min = {self.rate:.6g}, "
                f"adding {self.budget * self.rate:.6g} to the risk in the limit")


@dataclass
class WorstCaseResult:
    """Worst-case risk of a fixed model over a Wasserstein ball and a worst-case distribution.

    Attributes
    ----------
    value : float
        ``WC(beta) = min_{lam >= lam_min} F(lam)`` (``F(lam*)``, an upper bound exact up to rounding).
    nominal_risk : float
        Empirical risk ``(1/N) sum_n L(u_n)`` of the evaluation data.
    lam, lam_min : float
        The optimal multiplier ``lam*`` of the budget and its floor (``lam = inf`` at radius 0, where
        it is undefined).
    radius : float
        ``eps``.
    attained : bool
        ``False`` when the worst case is approached only in the limit (see :attr:`limit`).
    atoms : pandas.DataFrame
        One row per atom of the worst-case distribution: ``sample`` (row position in ``X``),
        ``mass``, ``cost`` (transport cost from the sample), ``loss`` (at the atom), ``label`` (in the
        user's labels), ``flipped``, the level of every categorical feature (user's labels), ``changed``
        (comma-separated changed features; ``"<label>"`` for a flip) and ``n_changed``.
    budget_used : float
        ``sum mass * cost`` over the atoms (``= radius`` when the budget binds).
    limit : LimitingDirection or None
        :class:`LimitingDirection` when ``attained`` is ``False``, else ``None``.
    lower_bound : float
        Expected loss of the atoms plus ``lam_min * (radius - budget_used)`` in the limiting case: a
        certified lower bound on ``WC(beta)``.
    method : str
        The row source used: ``"enumeration"``, ``"oracle"`` or ``"nominal"`` (radius 0).
    """

    value: float
    nominal_risk: float
    lam: float
    lam_min: float
    radius: float
    attained: bool
    atoms: pd.DataFrame
    budget_used: float
    limit: Optional[LimitingDirection]
    lower_bound: float
    method: str
    n_samples: int
    evaluations: int = 0
    time: float = 0.0
    notes: List[str] = field(default_factory=list)
    # what distribution_matrix() needs
    _schema: Any = field(default=None, repr=False)
    _X_num: Optional[np.ndarray] = field(default=None, repr=False)
    _Z: Optional[np.ndarray] = field(default=None, repr=False)
    _labels: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def gap(self) -> float:
        """``value - lower_bound`` (0 up to rounding: the distribution attains / approaches ``value``)."""
        return float(self.value - self.lower_bound)

    @property
    def expected_loss(self) -> float:
        """``sum mass * loss`` over the atoms (equals :attr:`value` when :attr:`attained`)."""
        if len(self.atoms) == 0:
            return float("nan")
        return float(np.dot(self.atoms["mass"].to_numpy(), self.atoms["loss"].to_numpy()))

    @property
    def n_atoms(self) -> int:
        return int(len(self.atoms))

    def distribution_matrix(self):
        """The atoms as data: ``(X_atoms, y_atoms, mass)``.

        ``X_atoms`` has the columns of the data the model was fitted on, in the same order (a DataFrame
        when the model was fitted on one, else a numpy array), with the atoms' categorical levels in the
        user's labels and the samples' numerical values (unchanged: see the module docstring), so that
        ``model.predict(X_atoms)`` works; ``y_atoms`` are the atoms' labels (user's labels, flips
        applied); ``mass`` their probabilities.
        """
        schema = self._schema
        A = len(self.atoms)
        cols = {}
        for k, j in enumerate(schema.numerical):
            cols[schema.feature_names[j]] = self._X_num[:, k]
        for k, (j, cats) in enumerate(zip(schema.categorical, schema.categories)):
            cols[schema.feature_names[j]] = take_levels(cats, self._Z[:, k])
        names = list(schema.feature_names)
        mass = self.atoms["mass"].to_numpy().copy()
        if schema.from_dataframe:
            frame = pd.DataFrame({n: cols[n] for n in names}, index=np.arange(A))
            return frame, self._labels.copy(), mass
        arr = np.empty((A, len(names)), dtype=object)
        for i, n in enumerate(names):
            arr[:, i] = cols[n]
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            pass
        return arr, self._labels.copy(), mass

    def summary(self, max_atoms: int = 10) -> str:
        lines = [
            f"worst-case risk : {self.value:.10g}  (nominal {self.nominal_risk:.10g}, "
            f"radius {self.radius:g})",
            f"multiplier      : lam* = {self.lam:.6g}, lam_min = {self.lam_min:.6g}",
            f"distribution    : {self.n_atoms} atoms over {self.n_samples} samples, budget used "
            f"{self.budget_used:.6g} of {self.radius:g}, attained = {self.attained}",
            f"certificate     : lower {self.lower_bound:.10g} <= WC <= upper {self.value:.10g} "
            f"(gap {self.gap:.2e}); method {self.method}, {self.evaluations} evaluations, "
            f"{self.time:.3f} s",
        ]
        if self.limit is not None:
            lines.append(f"limit           : {self.limit}")
        lines += [f"note            : {n}" for n in self.notes]
        if self.n_atoms:
            moved = self.atoms[self.atoms["n_changed"] > 0]
            if len(moved):
                shown = moved.sort_values("mass", ascending=False).head(max_atoms)
                lines.append(f"moved atoms     : {len(moved)} (largest {len(shown)} by mass)")
                lines.append(shown.to_string(index=False))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (f"WorstCaseResult(value={self.value:.10g}, nominal_risk={self.nominal_risk:.10g}, "
                f"lam={self.lam:.6g}, lam_min={self.lam_min:.6g}, attained={self.attained}, "
                f"n_atoms={self.n_atoms}, budget_used={self.budget_used:.6g}/{self.radius:g}, "
                f"gap={self.gap:.1e})")


def take_levels(categories: Sequence, codes: np.ndarray) -> np.ndarray:
    """The levels ``categories[codes]`` (an object array: levels of any type, NaN included)."""
    levels = np.empty(len(categories), dtype=object)
    levels[:] = list(categories)
    return levels[codes]


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
    keep = np.isfinite(gamma) & (gamma > 0)
    w = np.zeros(n)
    w[keep] = bx[keep] / gamma[keep]
    p = metric.numerical.validated_p()
    if p == 1:  # dual norm l_inf: the single coordinate with the largest |beta_j| / gamma_j
        j = int(np.argmax(np.abs(w)))
        v = np.zeros(n)
        v[j] = np.sign(w[j])
    elif np.isinf(p):  # dual norm l_1: every coordinate, by its sign
        v = np.sign(w)
    else:
        q = metric.dual_p
        norm = np.linalg.norm(w, ord=q)
        v = np.sign(w) * np.abs(w) ** (q - 1) / norm ** (q - 1)
    direction = np.zeros(n)
    direction[keep] = v[keep] / gamma[keep]  # ||Gamma direction||_p = 1 and beta_x^T direction = ||w||_q
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
    return _result(inst, classes, value=support.value, nominal_risk=nominal_risk, lam=support.lam,
                   lam_min=lam_min, rows=support.rows, mass=support.mass, losses=support.losses,
                   costs=support.costs, lower=support.lower, limit=limit,
                   method=support.method,
                   evaluations=support.evaluations, elapsed=time.perf_counter() - t0, notes=support.notes)


def _result(inst: DROInstance, classes, *, value, nominal_risk, lam, lam_min, rows, mass, losses, costs,
            lower, limit, method, evaluations, elapsed, notes) -> WorstCaseResult:
    """Assemble the atoms table (one row per atom, sorted by sample then decreasing mass)."""
    order = np.lexsort((-mass, rows.sample))
    rows = take_rows(rows, order)
    mass, losses, costs = mass[order], losses[order], costs[order]
    schema = inst.schema
    y_atom = inst.y[rows.sample]
    if inst.is_classification:
        y_atom = y_atom * np.where(rows.flip, -1.0, 1.0)
        if classes is not None:
            labels = np.asarray(classes, dtype=object)[(y_atom > 0).astype(int)]
            try:
                labels = labels.astype(np.asarray(classes).dtype)
            except (TypeError, ValueError):
                pass
        else:
            labels = y_atom
    else:
        labels = y_atom
    changed_mask = rows.Z != inst.data.Z[rows.sample]
    changed = np.full(rows.size, "", dtype=object)
    flags = [(changed_mask[:, k], name) for k, name in enumerate(schema.categorical_names)]
    for mask, name in flags + [(rows.flip, "<label>")]:  # a loop over features, not over atoms
        changed = np.where(mask, np.where(changed == "", name, changed + "," + name), changed)
    columns = {"sample": rows.sample.astype(int), "mass": mass, "cost": costs, "loss": losses,
               "label": labels, "flipped": rows.flip.astype(bool)}
    for k, (name, cats) in enumerate(zip(schema.categorical_names, schema.categories)):
        key = name if name not in _RESERVED else f"feature:{name}"
        columns[key] = take_levels(cats, rows.Z[:, k])
    columns["changed"] = changed
    columns["n_changed"] = changed_mask.sum(axis=1).astype(int) + rows.flip.astype(int)
    atoms = pd.DataFrame(columns)
    budget_used = float(mass @ costs) if mass.size else 0.0
    return WorstCaseResult(
        value=float(value), nominal_risk=float(nominal_risk), lam=float(lam), lam_min=float(lam_min),
        radius=float(inst.radius), attained=limit is None, atoms=atoms, budget_used=budget_used,
        limit=limit, lower_bound=float(lower), method=method, n_samples=inst.n_samples,
        evaluations=int(evaluations), time=float(elapsed), notes=list(notes), _schema=schema,
        _X_num=inst.data.X[rows.sample].copy(), _Z=rows.Z.copy(), _labels=np.asarray(labels).copy())


# ============================================================================ the public entry point
def worst_case(model, X, y, ambiguity=None, *, method: str = "auto", schema=None,
               loss=None, sample_weight=None) -> WorstCaseResult:
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

    Returns
    -------
    WorstCaseResult
        ``value``, ``nominal_risk``, ``lam``, ``lam_min``, ``attained``, ``atoms``, ``budget_used``,
        ``limit``, ``distribution_matrix()``, ``summary()``.
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {list(METHODS)}, got {method!r}")
    from ..models.binding import bind_fitted_model
    inst, intercept, coef, classes = bind_fitted_model(model, X, y, ambiguity, schema=schema, loss=loss,
                                                       sample_weight=sample_weight, where="worst_case")
    return worst_case_from_instance(inst, intercept, coef, method=method, classes=classes)
