"""Rules and grids for Wasserstein radii, and the radii of two intersecting balls (selvi2025 thesis
§4.6-4.7).

* The finite-sample guarantees (thesis Thm 12/14: ``eps >= O(log(1/eta) / N)^(1/max(n, 2))``) have
  constants that cannot be computed, so the thesis cross-validates the radii over a grid that contains
  the rule of thumb ``O(1/sqrt(N))`` (:func:`rule_of_thumb_radius`, :data:`THESIS_RADIUS_GRID`).
* Two balls ``B_eps(P_N)`` and ``B_eps_hat(P_hat)`` intersect iff ``eps + eps_hat >= W(P_N, P_hat)``
  (triangle inequality; thesis §4.6).  The thesis discards radius pairs that violate it
  (:func:`feasible_radius_pairs`).  Nothing else detects an empty intersection: the static relaxation
  Inter-ARO* returns a finite value for it (spec finding §2.5.4).
* The auxiliary radius must cover ``W(P0, P_hat)`` plus a concentration term (thesis Thm 13/18);
  ``P0`` is unknown, so :func:`auxiliary_radius` uses the empirical ``W(P_N, P_hat)`` plus a slack.
* The mixture ``lambda P_N + (1 - lambda) P_hat`` (the auxiliary-data ARO of Gowal et al., thesis
  Obs. 8) lies in both balls when ``eps_hat / eps = lambda / (1 - lambda)`` and
  ``eps + eps_hat >= W`` (Prop. 19); for type-1 W with a genuine metric the bound is tight,
  ``W(P_N, Q_mix) = (1 - lambda) W`` and ``W(P_hat, Q_mix) = lambda W`` (:func:`mixture_radii`).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import List, Tuple

import numpy as np

from ..exceptions import ParameterError
from .transport import wasserstein_distance

__all__ = ["rule_of_thumb_radius", "THESIS_RADIUS_GRID", "THESIS_KAPPA_GRID", "THESIS_AUX_WEIGHT_GRID",
           "auxiliary_radius", "feasible_radius_pairs", "mixture_radii"]

#: the radii the thesis cross-validates for ``eps`` and ``eps_hat`` (§4.7), in the thesis's order.
#: It lists 0 among them (between 1e-1 and 1): a genuine zero, not 10^0, since 1 follows it; a zero
#: radius turns DR-ARO into ARO, and a zero auxiliary radius pins the solution to ``P_hat``.
THESIS_RADIUS_GRID: Tuple[float, ...] = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 0.0, 1.0, 2.0, 5.0, 10.0)

#: the weights ``w`` of the auxiliary samples in ARO+Aux (thesis problem (67), §4.7), thesis's order
THESIS_AUX_WEIGHT_GRID: Tuple[float, ...] = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 0.0, 1.0)


def THESIS_KAPPA_GRID(n_features: int) -> Tuple[float, ...]:
    """The label costs the thesis cross-validates, ``kappa in {1, sqrt(n), n}`` (§4.7), with ``n`` the
    number of features; duplicates are dropped (``n = 1`` gives ``(1.0,)``).  ``kappa = inf`` is left
    out on purpose: the thesis blames label-agnostic ambiguity for robust overfitting."""
    n = _positive_int(n_features, "n_features")
    grid: List[float] = []
    for k in (1.0, math.sqrt(n), float(n)):
        if k not in grid:
            grid.append(k)
    return tuple(grid)


def rule_of_thumb_radius(n_samples: int, scale: float = 1.0) -> float:
    """``scale / sqrt(N)``: the ``O(1/sqrt N)`` rule of thumb the thesis puts in its CV grid (§4.6).

    The rates with guarantees (thesis Thm 14) are ``O(N^(-1/max(n, 2)))`` with constants that cannot
    be computed; ``scale`` carries the data's units (e.g. a typical distance between samples).
    """
    n = _positive_int(n_samples, "n_samples")
    scale = _nonneg_float(scale, "scale")
    return scale / math.sqrt(n)


def auxiliary_radius(P, P_aux, metric=None, slack: float = 0.0, **wasserstein_kwargs) -> float:
    """``W(P, P_aux) + slack``: a radius for the auxiliary ball ``B_eps_hat(P_aux)``.

    Thesis Thm 13/18: ``eps_hat >= W(P0, P_hat) + (concentration term in N_hat)`` puts ``P0`` in the
    auxiliary ball with high confidence.  ``P0`` is unknown, so the empirical ``W(P_N, P_hat)`` stands
    in for ``W(P0, P_hat)`` and ``slack >= 0`` for the rest (e.g. :func:`rule_of_thumb_radius` of
    ``N_hat``).  ``P``, ``P_aux``, ``metric`` and ``wasserstein_kwargs`` (``weights_p``, ``weights_q``,
    ``categorical_features``, ``task``, ``schema``) are as in :func:`wasserstein_distance`.  The result
    is ``inf`` when the two samples cannot be matched at finite cost (e.g. ``kappa = inf`` and
    different class proportions).
    """
    slack = _nonneg_float(slack, "slack")
    if wasserstein_kwargs.get("return_plan"):
        raise ParameterError("auxiliary_radius returns a radius; call wasserstein_distance for the plan")
    return float(wasserstein_distance(P, P_aux, metric, **wasserstein_kwargs)) + slack


def feasible_radius_pairs(grid_a, grid_b, distance: float, rtol: float = 1e-12) -> List[Tuple[float, float]]:
    """The pairs ``(a, b)`` of ``grid_a x grid_b`` with ``a + b >= distance``: those whose balls around
    two distributions at Wasserstein distance ``distance`` intersect (thesis §4.6-4.7 discards the
    others before cross-validating).  Order: ``grid_a`` outer, ``grid_b`` inner, as given.

    ``rtol`` forgives rounding: ``a + b >= distance (1 - rtol)`` (so that :func:`mixture_radii`, which
    sum to ``distance`` up to rounding, pass).  ``distance = inf`` leaves no pair.
    """
    a_vals = _radius_grid(grid_a, "grid_a")
    b_vals = _radius_grid(grid_b, "grid_b")
    distance = _distance(distance)
    if not (isinstance(rtol, Real) and 0 <= float(rtol) < 1):
        raise ParameterError(f"rtol must be a number in [0, 1), got {rtol!r}")
    threshold = distance * (1.0 - float(rtol))
    return [(a, b) for a in a_vals for b in b_vals if a + b >= threshold]


def mixture_radii(distance: float, n: int, n_aux: int, aux_weight: float = 1.0) -> Tuple[float, float]:
    """``(eps, eps_hat) = ((1 - lambda) W, lambda W)`` with ``lambda = N / (N + w N_hat)``.

    These are the smallest radii whose balls ``B_eps(P_N)`` and ``B_eps_hat(P_hat)`` both contain the
    mixture ``Q_mix = lambda P_N + (1 - lambda) P_hat`` (the auxiliary-data ARO of thesis problem (67)
    with weight ``w = aux_weight``, Obs. 8): Prop. 19 with ``eps_hat / eps = lambda / (1 - lambda)``
    and ``eps + eps_hat = W(P_N, P_hat) = distance``, which is tight for type-1 W with a genuine
    metric (``W(P_N, Q_mix) = (1 - lambda) W``, ``W(P_hat, Q_mix) = lambda W``).
    Radii inversely proportional to the sample sizes: ``eps_hat / eps = N / (w N_hat)``.
    """
    distance = _distance(distance)
    if not np.isfinite(distance):
        raise ParameterError("distance is inf: no finite radii make the two balls intersect")
    n = _positive_int(n, "n")
    n_aux = _positive_int(n_aux, "n_aux")
    w = _nonneg_float(aux_weight, "aux_weight")
    if w == 0:
        raise ParameterError("aux_weight must be > 0 (w = 0 ignores the auxiliary data: lambda = 1)")
    lam = n / (n + w * n_aux)
    return (1.0 - lam) * distance, lam * distance


# ------------------------------------------------------------------------------------ checks
def _positive_int(v, name: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (Integral, np.integer)) or int(v) < 1:
        raise ParameterError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def _nonneg_float(v, name: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (Real, np.floating, np.integer)):
        raise ParameterError(f"{name} must be a finite number >= 0, got {v!r}")
    v = float(v)
    if not (np.isfinite(v) and v >= 0):
        raise ParameterError(f"{name} must be a finite number >= 0, got {v!r}")
    return v


def _distance(v) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (Real, np.floating, np.integer)):
        raise ParameterError(f"distance must be a number >= 0 (or inf), got {v!r}")
    v = float(v)
    if np.isnan(v) or v < 0:
        raise ParameterError(f"distance must be a number >= 0 (or inf), got {v!r}")
    return v


def _radius_grid(grid, name: str) -> List[float]:
    try:
        vals = np.asarray(list(grid) if not isinstance(grid, np.ndarray) else grid, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a sequence of radii >= 0, got {grid!r}") from None
    if vals.size == 0:
        raise ParameterError(f"{name} is empty")
    if np.any(np.isnan(vals)) or np.any(vals < 0):
        raise ParameterError(f"{name} must hold radii >= 0 (inf allowed), got {vals.tolist()}")
    return [float(v) for v in vals]
