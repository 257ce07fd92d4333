"""The separation-oracle protocol used by the cutting-plane engine.

Given a master solution ``(beta_0, beta, lambda, s)``, an oracle finds, for every sample ``n``, the
configuration row ``k = (n, z, flip)`` that maximizes the violation of the semi-infinite constraint

    phi_k = L(u_k) - lambda c_k - s_n          (belbasi2023 Alg. 2; sun2025 problem (7))

and returns it with its value.  An oracle is exact when its maxima equal the maxima over all rows; the
engine relies on exactness for its certificate (``max_n phi_n <= tol`` at termination).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # only for annotations: enumeration.py imports this module
    from .enumeration import ConfigurationRows


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

    def separate(self, intercept: float, coef: np.ndarray, lam: float, s: np.ndarray,
                 near_margin: float = 0.0) -> Separation:
        raise NotImplementedError

    def upper_bound(self, intercept: float, coef: np.ndarray, lam: float, radius: float,
                    lam_min: float) -> float:
        """A valid upper bound on the worst-case risk of the fixed model:
        ``lam' eps + mean_n max_k (l_k - lam' c_k)`` at ``lam' = max(lam, lam_min)`` (any ``lam' >=
        lam_min`` gives one; belbasi2023 §5's UB uses the same construction)."""
        lam_ = max(float(lam), float(lam_min))
        sep = self.separate(intercept, coef, lam_, np.zeros(self.n_samples))
        return float(lam_ * radius + np.mean(sep.violation))
