"""Ground-metric components: numerical norm cost, categorical mismatch cost, label cost.

The transport cost between ``xi = (x, z, y)`` and ``xi' = (x', z', y')`` is

    d(xi, xi') = ||Gamma (x - x')||_p  +  D(z, z')  +  kappa * d_y(y, y')

* ``NormCost(p, weights)``: ``||Gamma (x - x')||_p`` with ``Gamma = diag(gamma_j)`` (sun2025 Def. 2 for
  p = 1; any p >= 1).  ``gamma_j = inf`` makes feature j immutable, ``gamma_j = 0`` makes it free.
  ``NormCost(p, matrix=M)``: ``||M (x - x')||_p`` with an invertible matrix ``M`` over the mutable numerical
  columns (``NormCost.mahalanobis(Sigma)``: ``M'M = Sigma^{-1}``), fitted by the change of coordinates
  ``x~ = M x`` of :mod:`drokit.metrics.linear_map`.  It lives in :mod:`drokit.metrics.norm_cost` (imported here
  as before) and implements the :class:`~drokit.metrics.norms.NumericalNorm` protocol, the extension point for
  other numerical norms (:class:`~drokit.GroupNormCost`, :mod:`drokit.metrics.group_norm`).
* ``MismatchCost(weights, p)``: ``D(z, z') = (sum_l delta_l^p 1[z_l != z'_l])^(1/p)``, priced per
  original feature, not per one-hot column.  With equal weights ``delta`` this is
  ``delta * count^(1/p)`` (belbasi2023 (2b) with kappa_z = delta); with ``p = 1`` it is sun2025's
  weighted Hamming distance ``sum_l delta_l 1[z_l != z'_l]``.  ``delta_l = inf``: immutable feature.
* ``OrdinalCost(weights, p, features)``: the same with ordinal features priced by rank distance,
  ``c_l(v, v') = delta_l |rank(v) - rank(v')|``.  Both implement the :class:`CategoricalCost` protocol
  (per-feature unit cost matrices), the extension point for other level costs.
* ``LabelCost(kappa)``: ``kappa 1[y != y']`` (classification) or ``kappa |y - y'|`` (regression);
  ``kappa = inf`` (the default) never moves labels.
"""

from __future__ import annotations

import inspect
from typing import List, Mapping, Sequence

import numpy as np

from ..exceptions import ParameterError
from ..params import ParamsMixin, real_number
from .norm_cost import NormCost
from .weights import NamedWeights, Weights, resolve_weights


class CategoricalCost(ParamsMixin):
    """Protocol of the categorical component of the ground metric: per-feature level costs.

    A component prices a change of categorical feature ``l`` from level ``v`` to level ``v'`` as
    ``c_l(v, v') = delta_l U_l(v, v')`` (``delta_l`` the feature's weight, ``U_l`` its *unit cost
    matrix*) and combines the features as

        D(z, z') = (sum_l c_l(z_l, z'_l)^p)^(1/p),        p > 0.

    A subclass implements one method, :meth:`unit_costs`, returning ``U_l`` (an ``a_l x a_l`` array,
    zero diagonal, finite, ``>= 0``) for every categorical feature of the data; the weights, the
    exponent, validation and the distance are inherited.  Every exact method that handles general level
    costs uses it unchanged: the DP separation oracle (a knapsack over the additive budgets
    ``sum_l c_l^p``, whose per-layer increments are the distinct entries of ``(delta_l U_l)^p``), the
    enumeration oracle and the monolithic program, worst-case distributions and
    :func:`drokit.wasserstein_distance`.  The methods built on the 0/1 structure of the mismatch cost
    (sorting oracle, graph and box reformulations) check :attr:`ResolvedMetric.mismatch_only` and
    refuse other costs with a clear error; ``method="auto"`` never picks them then.

    Parameters
    ----------
    weights : float or array_like or dict or None
        ``delta_l`` per categorical column (``None`` = all 1, scalar, array or ``{column: delta}``);
        ``np.inf`` = immutable feature, ``0`` = free to change.
    p : float
        Exponent ``p > 0`` of the combination.
    """

    def __init__(self, weights: Weights = None, p: float = 1):
        self.weights = weights
        self.p = p

    # ----------------------------------------------------------------- protocol
    def unit_costs(self, schema) -> List[np.ndarray]:
        """``U_l`` for every categorical feature of ``schema`` (a :class:`drokit.schema.FeatureSchema`,
        whose ``categories[l]`` lists the levels of feature ``l`` in code order)."""
        raise NotImplementedError(f"{type(self).__name__} must implement unit_costs(schema)")

    # -------------------------------------------------------------- inherited
    def validated_p(self) -> float:
        p = real_number(self.p, f"{type(self).__name__} p")
        if not (p > 0 and np.isfinite(p)):
            raise ParameterError(f"{type(self).__name__} p must be a positive finite number, got {self.p!r}")
        return p

    def resolve(self, names: List[str]) -> np.ndarray:
        self.validated_p()
        return resolve_weights(self.weights, names, "categorical")

    def validated_unit_costs(self, schema) -> List[np.ndarray]:
        """:meth:`unit_costs` checked: one ``a_l x a_l`` finite nonnegative array per feature, zero
        diagonal.  Raises :class:`ParameterError` naming the feature otherwise."""
        units = self.unit_costs(schema)
        names = schema.categorical_names
        if len(units) != len(names):
            raise ParameterError(f"{type(self).__name__}.unit_costs returned {len(units)} matrices for "
                                 f"{len(names)} categorical features {names}")
        out = []
        for name, a, U in zip(names, schema.levels, units):
            U = np.asarray(U, dtype=float)
            if U.shape != (a, a):
                raise ParameterError(f"{type(self).__name__}: the unit cost matrix of {name!r} has shape "
                                     f"{U.shape}, expected ({a}, {a}) (one row and column per level)")
            if not np.all(np.isfinite(U)) or np.any(U < 0):
                raise ParameterError(f"{type(self).__name__}: the unit costs of {name!r} must be finite "
                                     f"and >= 0 (make a feature immutable with weight np.inf)")
            if np.any(np.diag(U) != 0):
                raise ParameterError(f"{type(self).__name__}: the unit costs of {name!r} must be 0 on the "
                                     f"diagonal (keeping a level costs nothing)")
            out.append(U)
        return out

    def distance(self, Z1: np.ndarray, Z2: np.ndarray, delta: np.ndarray,
                 units: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """Row-wise ``D(z1, z2)`` -- the cost of moving from ``z1`` to ``z2``, ``U_l[z1_l, z2_l]`` per feature -- for code
        arrays broadcasting to (..., m); ``inf`` if an immutable feature differs.  ``units`` are the unit cost
        matrices (default: the mismatch ``1 - I``)."""
        Z1, Z2 = np.broadcast_arrays(np.asarray(Z1), np.asarray(Z2))
        if units is None:
            return self.distance_from_mismatch(Z1 != Z2, delta)
        p = self.validated_p()
        if Z1.shape[-1] == 0:
            return np.zeros(Z1.shape[:-1])
        total = np.zeros(Z1.shape[:-1])
        blocked = np.zeros(Z1.shape[:-1], dtype=bool)
        for l, U in enumerate(units):
            moved = Z1[..., l] != Z2[..., l]
            if np.isinf(delta[l]):
                blocked |= moved
            elif delta[l] > 0:
                total = total + (delta[l] * U[Z1[..., l], Z2[..., l]]) ** p
        return np.where(blocked, np.inf, total ** (1.0 / p))

    def distance_from_mismatch(self, mismatch: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """``D`` of the mismatch cost from the boolean changed-feature array (..., m)."""
        p = self.validated_p()
        if mismatch.shape[-1] == 0:
            return np.zeros(mismatch.shape[:-1])
        finite = np.where(np.isinf(delta), 0.0, delta) ** p
        total = mismatch @ finite
        out = total ** (1.0 / p)
        immutable = np.isinf(delta)
        if immutable.any():
            out = np.where(mismatch[..., immutable].any(axis=-1), np.inf, out)
        return out

    def __repr__(self) -> str:
        names = [n for n in inspect.signature(type(self).__init__).parameters if n != "self"]
        params = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__name__}({params})"


def mismatch_units(a: int) -> np.ndarray:
    """``U = 1 - I``: every change of level costs one unit."""
    return 1.0 - np.eye(int(a))


class MismatchCost(CategoricalCost):
    """Categorical mismatch cost ``D(z, z') = (sum_l delta_l^p 1[z_l != z'_l])^(1/p)``.

    Parameters
    ----------
    weights : float or array_like or dict or None
        ``delta_l`` per categorical column (``None`` = all 1, scalar, array or ``{column: delta}``);
        ``np.inf`` = immutable feature, ``0`` = free to change.
    p : float
        Exponent ``p > 0``; with equal weights the cost is ``delta * count^(1/p)`` (belbasi2023).
    """

    def unit_costs(self, schema) -> List[np.ndarray]:
        """``U_l = 1 - I``: the nominal mismatch ``1[v != v']`` (sun2025 Def. 2, belbasi2023 (2b))."""
        return [mismatch_units(a) for a in schema.levels]


class OrdinalCost(MismatchCost):
    """Mismatch cost with ordinal features priced by rank distance:

        c_l(v, v') = delta_l |s_l(v) - s_l(v')|   (ordinal feature l),
        c_l(v, v') = delta_l 1[v != v']           (the other categorical features),
        D(z, z')   = (sum_l c_l(z_l, z'_l)^p)^(1/p),

    with ``s_l`` the rank of a level (0, 1, ..., a_l - 1 in rank order) or a user-given score.  Moving
    "education" from "high school" to "master" then costs twice the step "high school" -> "bachelor",
    while a nominal feature still costs ``delta_l`` for any change.

    Parameters
    ----------
    weights : float or array_like or dict or None
        As :class:`MismatchCost` (``delta_l`` is the cost of one rank step).
    p : float
        As :class:`MismatchCost`.
    features : list of str or dict or None
        Which features are ordinal and their order:

        * ``None`` (default): every column given as a pandas *ordered* categorical
          (``pd.CategoricalDtype(categories, ordered=True)``), ranked in its categories' order;
        * a list of column names: ranked in the order of the learnt categories (pandas categories, or
          the sorted distinct values, e.g. integer-coded grades);
        * ``{column: [level, level, ...]}``: the rank order given explicitly (every level once), or
          ``{column: {level: score}}``: numeric scores ``s_l`` (e.g. years of schooling).
    """

    def __init__(self, weights: Weights = None, p: float = 1, features=None):
        super().__init__(weights=weights, p=p)
        self.features = features

    def scores(self, schema) -> dict:
        """``{categorical position l: scores s_l(v) in level-code order}`` of the ordinal features."""
        names = schema.categorical_names
        spec = self.features
        if spec is None:
            chosen = {l: None for l in range(len(names)) if schema.is_ordered(l)}
            if not chosen:
                raise ParameterError(
                    "OrdinalCost(features=None) ranks the pandas ordered categorical columns, but the data "
                    "has none; pass features=[column, ...] or {column: [levels in order]}")
        elif isinstance(spec, str):
            raise ParameterError(f"OrdinalCost features must be a list of column names or a dict, "
                                 f"got the string {spec!r} (write [{spec!r}])")
        elif isinstance(spec, Mapping):
            chosen = {self._position(names, key): order for key, order in spec.items()}
        else:
            chosen = {self._position(names, key): None for key in spec}
        return {l: self._feature_scores(names[l], schema.categories[l], order)
                for l, order in chosen.items()}

    @staticmethod
    def _position(names: List[str], key) -> int:
        if str(key) not in names:
            raise ParameterError(f"OrdinalCost features name {key!r}, which is not a categorical column; "
                                 f"the categorical columns are {names}")
        return names.index(str(key))

    @staticmethod
    def _feature_scores(name: str, categories: list, order) -> np.ndarray:
        a = len(categories)
        if order is None:
            return np.arange(a, dtype=float)
        keys = [str(c) for c in categories]
        if isinstance(order, Mapping):
            given = {str(k): v for k, v in order.items()}
            missing = [c for c in keys if c not in given]
            extra = [k for k in given if k not in keys]
            if missing or extra:
                raise ParameterError(f"OrdinalCost scores of {name!r} must give one number per level "
                                     f"{keys}; missing {missing}, unknown {extra}")
            try:
                s = np.array([float(given[c]) for c in keys])
            except (TypeError, ValueError):
                raise ParameterError(f"OrdinalCost scores of {name!r} must be numbers, got {order!r}") from None
            if not np.all(np.isfinite(s)):
                raise ParameterError(f"OrdinalCost scores of {name!r} must be finite, got {order!r}")
            return s
        order = [str(v) for v in order]
        if sorted(order) != sorted(keys) or len(set(order)) != len(order):
            raise ParameterError(f"OrdinalCost order of {name!r} must list every level exactly once; "
                                 f"the levels are {keys}, got {order}")
        rank = {v: r for r, v in enumerate(order)}
        return np.array([rank[c] for c in keys], dtype=float)

    def unit_costs(self, schema) -> List[np.ndarray]:
        """``U_l(v, v') = |s_l(v) - s_l(v')|`` on the ordinal features, ``1 - I`` on the others."""
        units = super().unit_costs(schema)
        for l, s in self.scores(schema).items():
            units[l] = np.abs(s[:, None] - s[None, :])
        return units


class LabelCost(ParamsMixin):
    """Label cost ``kappa 1[y != y']`` (classification) or ``kappa |y - y'|`` (regression).

    ``kappa = np.inf`` (default) means labels never move; a finite ``kappa > 0`` allows label flips.
    """

    def __init__(self, kappa: float = np.inf):
        self.kappa = kappa

    def validated_kappa(self) -> float:
        k = real_number(self.kappa, "LabelCost kappa")
        if np.isnan(k) or k <= 0:
            raise ParameterError(f"LabelCost kappa must be > 0 (np.inf = labels never move), "
                                 f"got {self.kappa!r}")
        return k

    def __repr__(self) -> str:
        return f"LabelCost(kappa={self.kappa!r})"
