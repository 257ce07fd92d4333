"""The result of a worst-case evaluation of a fixed model: the worst-case risk, a worst-case distribution as a table of
atoms, and how the table is assembled from configuration rows and their masses.  Shared by the Wasserstein ball's
evaluation (:mod:`.worst_case_distribution`) and the OT-with-moment set's (:mod:`.mot_worst_case_distribution`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..instance import DROInstance
from ..oracles.enumeration import take_rows

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


def assemble_result(inst: DROInstance, classes, *, value, nominal_risk, lam, lam_min, rows, mass, losses, costs,
                    lower, limit, method, evaluations, elapsed, notes, radius: Optional[float] = None) -> WorstCaseResult:
    """Assemble the atoms table (one row per atom, sorted by sample then decreasing mass); ``radius`` the set's budget
    (default the instance's)."""
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
        radius=float(inst.radius if radius is None else radius), attained=limit is None, atoms=atoms, budget_used=budget_used,
        limit=limit, lower_bound=float(lower), method=method, n_samples=inst.n_samples,
        evaluations=int(evaluations), time=float(elapsed), notes=list(notes), _schema=schema,
        _X_num=inst.data.X[rows.sample].copy(), _Z=rows.Z.copy(), _labels=np.asarray(labels).copy())


__all__ = ["WorstCaseResult", "LimitingDirection", "take_levels", "assemble_result"]
