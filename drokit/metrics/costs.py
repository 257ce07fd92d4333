"""Ground-metric components: numerical norm cost, categorical mismatch cost, label cost.

The transport cost between ``xi = (x, z, y)`` and ``xi' = (x', z', y')`` is

    d(xi, xi') = ||Gamma (x - x')||_p  +  D(z, z')  +  kappa * d_y(y, y')

* ``NormCost(p, weights)``: ``||Gamma (x - x')||_p`` with ``Gamma = diag(gamma_j)`` (sun2025 Def. 2 for
  p = 1; any p >= 1).  ``gamma_j = inf`` makes feature j immutable, ``gamma_j = 0`` makes it free.
  ``NormCost(p, matrix=M)``: ``||M (x - x')||_p`` with an invertible matrix ``M`` over the mutable numerical
  columns (``NormCost.mahalanobis(Sigma)``: ``M'M = Sigma^{-1}``), fitted by the change of coordinates
  ``x~ = M x`` of :mod:`drokit.metrics.linear_map`.
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
from numbers import Real
from typing import List, Mapping, Optional, Sequence, Union

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from ..params import ParamsMixin, real_number
from .linear_map import LinearMap, check_matrix_weights, mahalanobis_matrix, map_of_arrays, resolve_matrix
from .scales import check_scale

Weights = Union[None, Real, Sequence[float], np.ndarray, Mapping[str, float]]


class NamedWeights(dict):
    """``{column: weight}`` whose unnamed columns get ``default`` instead of 1.

    :meth:`GroundMetric.scaled` returns these so that scaling ``{"age": 2}`` by ``c`` also scales the
    columns the dict does not name (``{"age": 2 c}`` alone would leave them at 1).
    """

    def __init__(self, weights: Mapping[str, float], default: float = 1.0):
        super().__init__(weights)
        self.default = default

    def __repr__(self) -> str:
        return f"NamedWeights({dict.__repr__(self)}, default={self.default!r})"


def resolve_weights(weights: Weights, names: List[str], what: str) -> np.ndarray:
    """Per-column weights in schema order from ``None`` (all 1), a scalar, an array or ``{name: w}``
    (unnamed columns 1, or ``weights.default`` for :class:`NamedWeights`).

    Raises :class:`ParameterError` for NaN or negative weights, a wrong length or unknown names.
    """
    n = len(names)
    if weights is None:
        w = np.ones(n)
    elif isinstance(weights, Mapping):
        unknown = [k for k in weights if str(k) not in names]
        if unknown:
            raise ParameterError(f"{what} weights name unknown column(s) {unknown}; "
                                 f"the {what} columns are {names}")
        w = np.full(n, _as_weight(getattr(weights, "default", 1.0), what, "default"))
        for key, value in weights.items():
            w[names.index(str(key))] = _as_weight(value, what, key)
    elif (isinstance(weights, Real) or (isinstance(weights, np.ndarray) and weights.ndim == 0)) \
            and not isinstance(weights, (bool, np.bool_)):
        w = np.full(n, _as_weight(weights, what, "all"))
    else:
        raw = None if isinstance(weights, (str, bytes, bool, np.bool_)) else np.asarray(weights, dtype=object)
        if raw is None or raw.ndim == 0:
            raise ParameterError(f"{what} weights must be None, a number, one number per {what} "
                                 f"column or a {{column: weight}} dict, got {weights!r}")
        if raw.shape != (n,):
            raise ParameterError(f"{what} weights have shape {raw.shape}, but there are {n} {what} "
                                 f"columns {names} (expected shape ({n},))")
        w = np.array([_as_weight(value, what, name) for name, value in zip(names, raw)], dtype=float)
    return w.astype(float)


def _as_weight(value, what: str, name) -> float:
    v = real_number(value, f"{what} weight for {name!r}")
    if np.isnan(v) or v < 0:
        raise ParameterError(f"{what} weight for {name!r} must be a number >= 0 (np.inf = immutable), "
                             f"got {value!r}")
    return v


def _dual_exponent(p: float) -> float:
    if p == 1:
        return np.inf
    if np.isinf(p):
        return 1.0
    return p / (p - 1.0)


class NormCost(ParamsMixin):
    """Weighted norm cost ``||Gamma (x - x')||_p`` on numerical features, or ``||M (x - x')||_p`` with a matrix.

    Parameters
    ----------
    p : float
        Norm exponent, ``1 <= p <= inf`` (1, 2 and inf compile to LP/SOC; other p to power cones).
    weights : float or array_like or dict or None
        ``gamma_j`` per numerical column: ``None`` (all 1), a scalar, an array in column order, or
        ``{column: gamma}`` (others 1).  ``np.inf`` = immutable, ``0`` = free to move at no cost.  With a
        ``matrix`` only ``1`` and ``np.inf`` are allowed: the weights then only mark immutable columns (fold other
        weights into the matrix, ``M @ np.diag(w)``).
    scale : str or None
        ``None`` (default: raw units) or ``"std"``, ``"mad"``, ``"range"``: measure each feature in its
        spread ``s_j`` on the training rows, i.e. use ``gamma_j / s_j`` (:mod:`drokit.metrics.scales`).  The
        spreads are fitted with the model and kept in ``model.ambiguity_``, so that ``dk.worst_case`` and
        ``dk.stability`` of the model use the same ones.  Not with a ``matrix``.
    matrix : array_like or pandas.DataFrame or None
        ``None`` (default: the diagonal ``Gamma``) or an invertible ``(k, k)`` matrix ``M`` over the ``k`` mutable
        numerical columns in order (a DataFrame: its columns name them, any order): the cost is ``||M (x - x')||_p``,
        fitted on ``x~ = M x`` with the unit norm, ``beta = M' beta~`` (:mod:`drokit.metrics.linear_map`).

    Attributes
    ----------
    fitted_scale : dict or None
        On the fitted copy of a scaled cost (``scale=None`` then, weights ``gamma_j / s_j``):
        ``{"kind": scale, "spreads": {column: s_j}}``; ``None`` otherwise.
    """

    matrix = None   # (objects pickled before matrices existed)

    def __init__(self, p: float = 1, weights: Weights = None, scale: Optional[str] = None, matrix=None):
        self.p = p
        self.weights = weights
        self.scale = scale
        self.matrix = matrix
        self.fitted_scale = None

    @classmethod
    def mahalanobis(cls, Sigma, p: float = 2) -> "NormCost":
        """The Mahalanobis cost ``sqrt((x - x')' Sigma^{-1} (x - x'))`` (``p = 2``) of a covariance ``Sigma``.

        ``M = L^{-1}`` with ``Sigma = L L'`` (Cholesky), so that ``M'M = Sigma^{-1}`` and ``||M d||_2^2 = d' Sigma^{-1}
        d``: fitting with it is fitting on the whitened data ``X M'``; another ``p`` gives ``||M d||_p``.  ``Sigma``:
        a ``(k, k)`` symmetric positive definite array over the mutable numerical columns in order, or a DataFrame
        (e.g. ``X[numerical].cov()``) naming them.  Raises :class:`~drokit.ParameterError` otherwise.
        """
        return cls(p=p, matrix=mahalanobis_matrix(Sigma))

    def validated_p(self) -> float:
        p = real_number(self.p, "NormCost p")
        if not (p >= 1):
            raise ParameterError(f"NormCost p must be >= 1 (a norm), got {self.p!r}")
        return p

    def resolve(self, names: List[str]) -> np.ndarray:
        self.validated_p()
        if check_scale(self.scale) is not None and self.matrix is None:
            raise ParameterError(f"NormCost(scale={self.scale!r}) measures each numerical feature in its spread on the "
                                 f"training rows, and has not been fitted to any: it is fitted when a model is "
                                 f"fitted (or by GroundMetric.fit_scales(X) for a metric used on its own)")
        return self.unscaled_weights(names)

    def unscaled_weights(self, names: List[str]) -> np.ndarray:
        """``gamma_j`` per column as declared, before any ``scale`` (what :mod:`.scales` divides by the spreads)."""
        gamma = resolve_weights(self.weights, names, "numerical")
        if self.matrix is not None:
            check_matrix_weights(gamma, names, self.scale)
        return gamma

    def linear_map(self, names: List[str]) -> Optional[LinearMap]:
        """The change of coordinates ``x~ = M x`` of a matrix cost over the numerical columns ``names``
        (:class:`~drokit.metrics.linear_map.LinearMap`: ``M`` acts on the columns of finite weight); ``None``
        without a matrix.  Raises :class:`ParameterError` for an invalid matrix."""
        if self.matrix is None:
            return None
        gamma = self.resolve(names)
        mutable = np.flatnonzero(np.isfinite(gamma))
        return LinearMap.of(resolve_matrix(self.matrix, [names[j] for j in mutable]), mutable, len(names))

    @property
    def dual_p(self) -> float:
        """Exponent q of the dual norm, ``1/p + 1/q = 1``."""
        return _dual_exponent(self.validated_p())

    # ------------------------------------------------------------ evaluation
    def distance(self, X1: np.ndarray, X2: np.ndarray, gamma: Optional[np.ndarray] = None,
                 names: Optional[List[str]] = None) -> np.ndarray:
        """Row-wise ``||Gamma (x1 - x2)||_p``, or ``||M (x1 - x2)||_p`` with a matrix (over the columns of finite
        ``gamma``; ``names``: the columns, to order a DataFrame matrix); ``inf`` where an immutable feature differs.
        ``gamma`` defaults to ones."""
        diff = np.asarray(X1, float) - np.asarray(X2, float)
        gamma = np.ones(diff.shape[-1]) if gamma is None else np.asarray(gamma, dtype=float)
        moved = diff != 0
        if self.matrix is not None:
            out = map_of_arrays(self.matrix, gamma, names).cost(diff, self.validated_p())
        else:
            with np.errstate(invalid="ignore"):
                scaled = np.where(moved, np.abs(diff) * gamma, 0.0)
            out = np.linalg.norm(scaled, ord=self.validated_p(), axis=-1) if scaled.shape[-1] else \
                np.zeros(scaled.shape[:-1])
        return np.where(np.any(moved & np.isinf(gamma), axis=-1), np.inf, out)

    def dual_norm(self, v: np.ndarray, gamma: np.ndarray, names: Optional[List[str]] = None) -> float:
        """``||Gamma^{-1} v||_q`` (with a matrix ``||M^{-T} v_F||_q`` over the columns ``F`` of finite ``gamma``):
        coordinates with ``gamma = inf`` are free; ``gamma = 0`` and ``v != 0`` gives ``inf``."""
        v = np.asarray(v, float)
        gamma = np.asarray(gamma, dtype=float)
        if self.matrix is not None:
            lmap = map_of_arrays(self.matrix, gamma, names)
            return float(np.linalg.norm(lmap.coef_forward(v)[lmap.columns], ord=self.dual_p)) \
                if lmap.columns.size else 0.0
        free = np.isinf(gamma)
        zero = gamma == 0
        if np.any(zero & (np.abs(v) > 0)):
            return np.inf
        keep = ~free & ~zero
        if not keep.any():
            return 0.0
        return float(np.linalg.norm(v[keep] / gamma[keep], ord=self.dual_p))

    # ------------------------------------------------------------------ conic
    def add_dual_norm_leq(self, pb: ProgramBuilder, v: Affine, t: Affine, gamma: np.ndarray) -> None:
        """Add ``||Gamma^{-1} v||_q <= t`` (``t`` a single affine function).

        q = inf: ``-t <= v_j / gamma_j <= t`` (LP); q = 1: ``sum_j r_j <= t, |v_j / gamma_j| <= r_j`` (LP);
        q = 2: one second-order cone; other q: ``sum_j r_j <= t`` with power cones
        ``r_j^(1/q) t^(1 - 1/q) >= |w_j|``.  Coordinates with ``gamma_j = inf`` are unconstrained,
        those with ``gamma_j = 0`` are fixed to ``v_j = 0``.  A matrix cost is compiled in the coordinates
        ``x~ = M x``, where it is the unit-weight norm: the bound instance's cost has no matrix.
        """
        if self.matrix is not None:
            raise ParameterError("a NormCost with a matrix is compiled on the data x~ = M x with the unit-weight "
                                 "norm (Problem.bind); bind the data instead of compiling this cost directly")
        zero = np.flatnonzero(gamma == 0)
        if zero.size:
            pb.add_zero(v[zero])
        keep = np.flatnonzero(np.isfinite(gamma) & (gamma > 0))
        if keep.size == 0:
            return
        w = v[keep] * (1.0 / gamma[keep])
        k = keep.size
        q = self.dual_p
        tk = t.repeat(k)
        if np.isinf(q):
            pb.add_nonneg(Affine.vstack([tk - w, tk + w]))
        elif q == 1:
            r = pb.aux("dual_norm_r", k)
            pb.add_nonneg(Affine.vstack([r - w, r + w, t - r.sum()]))
        elif q == 2:
            pb.add_norm2_leq(w, t)
        else:
            r = pb.aux("dual_norm_r", k)
            pb.add_pow(r, tk, w, 1.0 / q)
            pb.add_nonneg(t - r.sum())

    def __repr__(self) -> str:
        matrix = "" if self.matrix is None else f", matrix={self.matrix!r}"
        return f"NormCost(p={self.p!r}, weights={self.weights!r}{matrix})"


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
