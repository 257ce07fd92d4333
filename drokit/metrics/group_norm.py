"""The group norm on numerical features: blocks of related features move together.

    c(x, x') = N(Gamma (x - x')),      N(d) = sum_g w_g ||d_g||_2,      N_*(v) = max_g ||v_g||_2 / w_g,

with ``d_g`` the weighted move of the features of group ``g`` (``Gamma = diag(gamma_j)``, the per-feature weights:
``np.inf`` immutable, ``0`` free) and ``w_g > 0`` the group's weight.  Inside a group the features are priced by the
Euclidean norm (moving two of them by 1 costs ``sqrt 2``), across groups costs add (moving two groups by 1 costs 2):
one group is ``NormCost(p=2)``, one group per feature ``NormCost(p=1)``.  Compared with the l1 cost, the worst case
moves the features of a group jointly, along the coefficients' direction; compared with the l2 cost, a move of
unrelated features is priced at the sum of its parts.

Conic forms: ``N(d) <= t`` is ``sum_g w_g r_g <= t`` with one second-order cone ``||d_g||_2 <= r_g`` per group, and
``N_*(v) <= t`` one cone ``||v_g||_2 <= w_g t`` per group.  A maximizer of ``v'd`` over ``N(d) <= 1`` puts
``v_g / (w_g ||v_g||_2)`` on a group of largest ``||v_g||_2 / w_g``.  ``GroupNormCost`` is written through the
:class:`~drokit.metrics.norms.NumericalNorm` protocol only: drokit's own barrier solvers step aside for it
(:attr:`~drokit.metrics.norms.NumericalNorm.lp_exponent` is ``None``) and its programs are solved by the conic solver.
"""

from __future__ import annotations

import copy
from numbers import Real
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from ..params import real_number
from .norms import NumericalNorm
from .weights import Weights, resolve_weights


class GroupNormCost(NumericalNorm):
    """Group norm ``N(Gamma (x - x')) = sum_g w_g ||(Gamma (x - x'))_g||_2`` on numerical features (module docstring).

    Parameters
    ----------
    groups : list of lists of str, or dict of {name: list of str}
        The groups of numerical columns that move together, e.g. ``[["height", "weight"], ["income", "debt"]]`` or
        ``{"body": ["height", "weight"], ...}``.  A column in no group is a group of its own (weight 1); a column in
        two groups, an unknown column or an empty group raises a :class:`~drokit.ParameterError`.
    weights : float or array_like or dict or None
        ``gamma_j`` per numerical column, as :class:`~drokit.NormCost`: ``None`` (all 1), a scalar, an array in column
        order or ``{column: gamma}``; ``np.inf`` = immutable (the group is priced on its other columns), ``0`` = free.
    group_weights : float or list or dict or None
        ``w_g > 0`` per group (finite): ``None`` (all 1), a scalar, one number per group in the order of ``groups``,
        or ``{group name: w}`` when ``groups`` is a dict.

    Examples
    --------
    ```python
    cost = dk.GroupNormCost([["height", "weight"], ["income", "debt"]], weights={"age": np.inf})
    metric = dk.GroundMetric(numerical=cost)
    ```
    """

    def __init__(self, groups=None, weights: Weights = None, group_weights=None):
        self.groups = groups
        self.weights = weights
        self.group_weights = group_weights
        self._bound: Optional[Tuple[Tuple[str, ...], np.ndarray, np.ndarray]] = None

    # ---------------------------------------------------------------------------------------- declaration
    def _declared(self) -> Tuple[List[str], List[List[str]]]:
        """``(group names, member names per group)``, checked for shape (not yet against the columns)."""
        groups = self.groups
        if isinstance(groups, Mapping):
            labels = [str(k) for k in groups]
            members = list(groups.values())
        elif groups is None or isinstance(groups, (str, bytes)) or not isinstance(groups, (Sequence, np.ndarray)):
            raise ParameterError(f"GroupNormCost groups must be a list of lists of numerical column names or a "
                                 f"{{name: [columns]}} dict, got {groups!r}")
        else:
            labels = [f"group {g}" for g in range(len(groups))]
            members = list(groups)
        out = []
        for label, cols in zip(labels, members):
            if isinstance(cols, (str, bytes)) or not isinstance(cols, (Sequence, np.ndarray)):
                raise ParameterError(f"GroupNormCost {label} must be a list of column names, got {cols!r} (write "
                                     f"[{cols!r}] for a group of one column)")
            if len(cols) == 0:
                raise ParameterError(f"GroupNormCost {label} is empty")
            out.append([str(c) for c in cols])
        return labels, out

    def _group_weights(self, labels: List[str]) -> np.ndarray:
        w = self.group_weights
        G = len(labels)
        if w is None:
            return np.ones(G)
        if isinstance(w, Mapping):
            if not isinstance(self.groups, Mapping):
                raise ParameterError("GroupNormCost group_weights is a dict, so groups must be a {name: [columns]} "
                                     "dict naming the groups")
            unknown = [k for k in w if str(k) not in labels]
            if unknown:
                raise ParameterError(f"GroupNormCost group_weights name unknown group(s) {unknown}; the groups are "
                                     f"{labels}")
            values = [next((v for k, v in w.items() if str(k) == label), 1.0) for label in labels]
        elif isinstance(w, (Real, np.integer, np.floating)) and not isinstance(w, (bool, np.bool_)):
            values = [w] * G
        else:
            values = list(w) if isinstance(w, (Sequence, np.ndarray)) and not isinstance(w, (str, bytes)) else None
            if values is None or len(values) != G:
                raise ParameterError(f"GroupNormCost group_weights must be None, a number, one number per group "
                                     f"({G}) or a {{group: w}} dict, got {w!r}")
        out = np.array([real_number(v, f"GroupNormCost group weight of {label!r}") for label, v in zip(labels, values)])
        bad = [label for label, v in zip(labels, out) if not (np.isfinite(v) and v > 0)]
        if bad:
            raise ParameterError(f"GroupNormCost group weights must be finite and > 0 (make a column immutable with "
                                 f"weights={{column: np.inf}}); not so for {bad}")
        return out

    def _layout(self, names: List[str]) -> Tuple[np.ndarray, np.ndarray]:
        """``(group id per numerical column, weight per group)`` for the columns ``names``: the declared groups
        first, then one group per column in none."""
        labels, members = self._declared()
        weight = self._group_weights(labels)
        group = np.full(len(names), -1)
        for g, (label, cols) in enumerate(zip(labels, members)):
            for c in cols:
                if c not in names:
                    raise ParameterError(f"GroupNormCost {label} names {c!r}, which is not a numerical column; the "
                                         f"numerical columns are {names}")
                j = names.index(c)
                if group[j] >= 0:
                    raise ParameterError(f"GroupNormCost: column {c!r} is in two groups (or twice in one)")
                group[j] = g
        alone = np.flatnonzero(group < 0)
        group[alone] = len(labels) + np.arange(alone.size)
        return group, np.concatenate([weight, np.ones(alone.size)])

    def resolve(self, names: List[str]) -> np.ndarray:
        """``gamma_j`` in the order of ``names``, the groups checked against the columns."""
        self._layout(list(names))
        return resolve_weights(self.weights, names, "numerical")

    def bind(self, names: List[str]) -> "GroupNormCost":
        """A copy that reads ``columns`` positions as the columns ``names`` (schema order)."""
        names = tuple(str(n) for n in names)
        if self._bound is not None and self._bound[0] == names:
            return self
        out = copy.copy(self)
        out._bound = (names,) + self._layout(list(names))
        return out

    def _groups_of(self, columns: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(S, w)``: the one-hot ``(k, G)`` membership of the given columns in the groups they meet, and those
        groups' weights."""
        if self._bound is None:
            raise ParameterError("GroupNormCost names its groups by column: bind it to the numerical columns first "
                                 "(GroundMetric.resolve does; cost.bind(names) or distance(..., names=names) for a "
                                 "cost used on its own)")
        columns = np.asarray(columns, dtype=int)
        group, weight = self._bound[1][columns], self._bound[2]
        met, local = np.unique(group, return_inverse=True)
        S = np.zeros((columns.size, met.size))
        S[np.arange(columns.size), local.ravel()] = 1.0
        return S, weight[met]

    # ------------------------------------------------------------------------------------------ protocol
    def value(self, D: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``sum_g w_g ||d_g||_2`` row-wise."""
        S, w = self._groups_of(columns)
        D = np.asarray(D, dtype=float)
        return np.sqrt((D ** 2) @ S) @ w

    def dual_value(self, V: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``max_g ||v_g||_2 / w_g`` row-wise."""
        S, w = self._groups_of(columns)
        V = np.asarray(V, dtype=float)
        if not S.shape[1]:
            return np.zeros(V.shape[:-1])
        return np.max(np.sqrt((V ** 2) @ S) / w, axis=-1)

    def add_value_leq(self, pb: ProgramBuilder, d: Affine, t: Affine, columns: np.ndarray) -> None:
        """``sum_g w_g r_g <= t`` and ``||d_g||_2 <= r_g``: one second-order cone per group."""
        S, w = self._groups_of(columns)
        if not S.shape[1]:
            pb.add_nonneg(t)
            return
        r = pb.aux("group_norm_r", S.shape[1])
        for g in range(S.shape[1]):
            pb.add_norm2_leq(d[np.flatnonzero(S[:, g])], r[g])
        pb.add_nonneg(t - r.premultiply(w[None, :]))

    def add_dual_value_leq(self, pb: ProgramBuilder, v: Affine, t: Affine, columns: np.ndarray) -> None:
        """``||v_g||_2 <= w_g t``: one second-order cone per group."""
        S, w = self._groups_of(columns)
        for g in range(S.shape[1]):
            pb.add_norm2_leq(v[np.flatnonzero(S[:, g])], t * float(w[g]))

    def maximizer(self, v: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``v_g / (w_g ||v_g||_2)`` on a group of largest ``||v_g||_2 / w_g``, 0 elsewhere."""
        S, w = self._groups_of(columns)
        v = np.asarray(v, dtype=float)
        d = np.zeros(v.size)
        if not v.size:
            return d
        size = np.sqrt((v ** 2) @ S)
        g = int(np.argmax(size / w))
        if size[g] > 0:
            members = np.flatnonzero(S[:, g])
            d[members] = v[members] / (w[g] * size[g])
        return d

    def set_params(self, **params) -> "GroupNormCost":
        """Set parameters (:meth:`~drokit.params.ParamsMixin.set_params`); a bound copy forgets its columns."""
        super().set_params(**params)
        self._bound = None
        return self

    def __repr__(self) -> str:
        extra = "" if self.group_weights is None else f", group_weights={self.group_weights!r}"
        return f"GroupNormCost(groups={self.groups!r}, weights={self.weights!r}{extra})"


__all__ = ["GroupNormCost"]
