"""The result of a stability evaluation: the criterion, its certificate and the most sensitive distribution."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

#: status values: ``zero`` (r <= current risk), ``finite``, ``boundary`` (r = largest achievable risk,
#: approached as h -> inf), ``infeasible`` (r above it: R = inf)
STATUSES = ("zero", "finite", "boundary", "infeasible")


@dataclass
class StabilityResult:
    """``R(beta, r)`` of blanchet2024 (P) with its dual solution and a primal certificate.

    Attributes
    ----------
    value : float
        The criterion ``R``: the smallest OT-with-moment cost of a perturbation raising the risk to ``r``
        (``0`` when the risk already reaches ``r``, ``inf`` when no finite-cost perturbation does).
    status : str
        One of :data:`STATUSES`.
    risk, nominal_risk, max_risk : float
        ``r``, the current risk ``E_P0[l]`` and the largest achievable risk.
    h, alpha : float
        Dual multipliers of the risk and of the moment constraint ``E[W] = 1`` (``alpha = nan`` for
        pure corruption, where ``W = 1``).
    weights : numpy.ndarray of shape (n_samples,)
        ``w_i`` per sample (mean 1): the reweighting of the most sensitive distribution.
    atoms : pandas.DataFrame
        DataFrame, one row per atom ``(z, w)`` of ``Q*``: ``sample``, ``mass`` (sums to 1), ``weight``,
        ``loss``, ``cost`` (``d(z, z_hat)``), ``moved`` and, when the model has named features, the moved
        point's feature values.  A sample whose mass is split between two maximizers has two rows.
    dual_value, primal_cost, gap : float
        The dual objective at ``h``, the cost ``E_Q*[theta1 W d + theta2 phi(W)]`` of the recovered
        distribution, and ``primal_cost - dual_value`` (``~0`` certifies both).
    mean_weight, attained_risk : float
        ``E_Q*[W]`` (should be 1) and ``E_Q*[W l]`` (should be ``r``).
    """

    value: float
    status: str
    risk: float
    nominal_risk: float
    max_risk: float
    theta1: float
    theta2: float
    divergence: str
    h: float = 0.0
    alpha: float = float("nan")
    weights: Optional[np.ndarray] = None
    atoms: object = None
    dual_value: float = 0.0
    primal_cost: float = 0.0
    mean_weight: float = 1.0
    attained_risk: float = float("nan")
    iterations: int = 0
    time: float = 0.0
    method: str = ""
    notes: List[str] = field(default_factory=list)

    @property
    def gap(self) -> float:
        """``primal_cost - dual_value``: ``>= 0`` up to rounding when both are exact."""
        if not (np.isfinite(self.primal_cost) and np.isfinite(self.dual_value)):
            return float("nan")
        return float(self.primal_cost - self.dual_value)

    @property
    def excess_risk(self) -> Tuple[float, float]:
        """``(Delta_I, Delta_II)`` (blanchet2024 eq. (4.4)): the part of ``E_Q*[W l] - E_P0[l]`` due to moving
        samples (``E_{Q*_Z}[l] - E_P0[l]``, unit weights) and the part due to reweighting them
        (``E_Q*[W l] - E_{Q*_Z}[l]``)."""
        if self.atoms is None or len(self.atoms) == 0:
            return (float("nan"), float("nan"))
        mass = self.atoms["mass"].to_numpy()
        loss = self.atoms["loss"].to_numpy()
        w = self.atoms["weight"].to_numpy()
        moved_mean = float(np.sum(mass * loss))
        return (moved_mean - self.nominal_risk, float(np.sum(mass * (w - 1.0) * loss)))

    def effective_distribution(self):
        """``Q~ = sum_atoms mass * w * delta_z``: the atoms with ``probability = mass * weight`` (sums to 1),
        the distribution of the data the model would face (``E_Q~[l] = E_Q*[W l]``)."""
        if self.atoms is None:
            return None
        out = self.atoms.copy()
        out["probability"] = out["mass"] * out["weight"]
        return out.drop(columns=["mass", "weight"])

    def summary(self, max_atoms: int = 10) -> str:
        lines = [f"stability R = {self.value:.6g} ({self.status}) at risk r = {self.risk:.6g}",
                 f"  current risk {self.nominal_risk:.6g}, largest achievable {self.max_risk:.6g}",
                 f"  theta1 = {self.theta1:g}, theta2 = {self.theta2:g}, divergence {self.divergence}"]
        if self.status in ("finite", "boundary"):
            d1, d2 = self.excess_risk
            lines += [f"  h = {self.h:.6g}, alpha = {self.alpha:.6g}; dual {self.dual_value:.10g}, "
                      f"primal {self.primal_cost:.10g} (gap {self.gap:.2e})",
                      f"  E[W] = {self.mean_weight:.10g}, E[W l] = {self.attained_risk:.10g}",
                      f"  excess risk {d1 + d2:.6g} = corruption {d1:.6g} + reweighting {d2:.6g}"]
            if self.atoms is not None:
                top = self.atoms.assign(eff=self.atoms["mass"] * self.atoms["weight"])
                top = top.sort_values("eff", ascending=False).head(max_atoms).drop(columns="eff")
                lines.append(f"  {len(self.atoms)} atoms; the {len(top)} of largest effective mass:")
                lines.append("    " + top.to_string(index=False).replace("\n", "\n    "))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
