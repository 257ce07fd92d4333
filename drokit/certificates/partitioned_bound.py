"""The Lagrangian certificate of :mod:`.lagrangian` computed from a distributed fit's partitions (issue 25): every
partition keeps its samples' rows, masses and slopes; only sums of size ``d = len(theta)`` (or ``d x d``), a few
floats and flags travel to the client that assembles the bound.

The bound is :func:`~drokit.certificates.lagrangian.lagrangian_bound`'s (belbasi2023 Prop. 1 / Prop. 3, sun2025
Theorem 1; its module docstring states it), for the problems a distributed fit has: no l1 / l2 penalty, no adversarial
loss; any loss (smooth or piecewise affine), classification or regression, ``kappa`` finite or infinite, immutable or
norm-priced numerical columns, an intercept or none.  With rows ``k = (n, z, flip)`` of partition ``P``'s samples,
masses ``m_k >= 0`` summing to ``p_n`` per sample and slopes ``alpha_k`` in the slope domain of ``L``,

    OPT >= sum_P sum_{k in P} m_k (-alpha_k shift_k - L*(alpha_k)) + lam_0 (eps - S),
    g = sum_P A_P' (m alpha sigma)_P = 0 on the free columns,   S = sum_P sum_{k in P} m_k c_k + N(Gamma g_L) / lip,

every quantity a sum over the partitions: the column sums ``g`` (``d``), the Gram matrices of the repair's steps
(``d x d``: ``A_C' diag(m r) A_C = sum_P A_{P,C}' diag(m r)_P A_{P,C}``), the value's and the transport cost's sums.
The repair's coefficients ``c`` (a step ``alpha + r sigma A_C c`` is then made on each partition) are solved on the
client, which runs :func:`~drokit.certificates.repair.repair_steps` -- the steps of the in-memory repair in their
order -- over slope vectors held by the partitions under names (:class:`BoundPart`), and the budget by
:func:`~drokit.certificates.budget.budget_value` and :func:`~drokit.certificates.budget.budget_target`.

A partition's instance holds its samples with ``sample_weight`` = their probabilities ``p_n`` in the whole nominal
distribution (summing to the partition's share of 1, not to 1: ``inst.take_samples(index)`` with ``sample_weight =
p[index]``), and its rows' ``sample`` indices are local to it.  The point is made complete on each partition as in
memory (:func:`~drokit.certificates.lagrangian.with_every_sample`: masses scaled to ``p_n``, the nominal row at slope
0 for a sample without mass), so that summed over the partitions it is the point ``lagrangian_bound`` makes of the
whole instance, and the bound equals it up to the order of the floating-point sums.

One step of the in-memory repair is left out: the dense bounded least squares of the last resort
(:func:`~drokit.certificates.repair.repair_free_columns`' step 3, ``bvls``), which needs every row in one place.
Where the least-norm and active-set steps do not meet the free columns' conditions, the bound is ``-inf`` (not
closing: the caller falls back as for any bound that does not close), never a wrong value -- as
``lagrangian_bound(..., bvls=False)``.  The returned :class:`~drokit.certificates.lagrangian.LowerBound` carries the
value, the mixing weight ``scale`` and the free-column ``residual``; its ``rows``, ``mass`` and ``slopes`` are
``None`` (the repaired point stays on the partitions: :meth:`BoundPart.point`).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..instance import DROInstance
from ..partitions import LocalParts
from ..losses.conjugate import conjugate, slope_domain
from .budget import budget_target, budget_value, label_floor, priced_norm
from .lagrangian import LowerBound, row_matrix, with_every_sample
from ..oracles.rows import compact_rows, widened_rows
from .repair import (BOUNDED_MAX_ITER, column_roles, gram_solve, repair_steps, slope_room, weighted_gram,
                     within_rounding)

#: the name of a partition's slopes as handed in (after :func:`~drokit.certificates.lagrangian.with_every_sample`)
START = "start"


def _check_case(inst: DROInstance) -> None:
    if inst.penalized or hasattr(inst.loss, "at"):
        raise ValueError("the partitioned Lagrangian bound covers unpenalized problems with a plain loss (no l1 / l2 "
                         "penalty, no adversarial loss); use lagrangian_bound on the whole instance")


class BoundPart:
    """One partition's share of the bound (worker side): its rows ``A_P = row_matrix(inst_P, rows)``, signs ``sigma``
    and shifts, masses (completed by :func:`~drokit.certificates.lagrangian.with_every_sample` with the partition's
    ``p_n``), the repair's room, and slope vectors under names (:data:`START`: the slopes handed in; the client names
    the others).  Every method returns small numpy arrays (``d`` or ``d x d``), floats or flags.

    ``inst``: the partition's instance (its samples only, ``sample_weight`` = their probabilities in the whole
    nominal distribution); ``rows`` (their ``sample`` indices local to ``inst``), ``mass``, ``slopes``: the
    partition's dual point; ``room``: how far each slope may move in the first repair (default: to the slope domain's
    ends), as in :func:`~drokit.certificates.lagrangian.lagrangian_bound`."""

    def __init__(self, inst: DROInstance, rows, mass, slopes, room=None):
        _check_case(inst)
        self.loss = inst.loss
        self.lo, self.hi = slope_domain(self.loss)
        rows, mass, slopes, room = with_every_sample(inst, rows, mass, np.asarray(slopes, dtype=float), room,
                                                     self.lo, self.hi)
        self.rows, self.mass, self.room = rows, mass, room
        self.sigma, self.shift = inst.row_signs(rows.sample, rows.flip)
        self.A = row_matrix(inst, rows)
        self.p_total = float(np.sum(inst.p))
        self.vectors: Dict[str, np.ndarray] = {START: slopes}
        self.final = START
        self._bounded = None                   # the active set in progress: (B, movable, name, columns)

    # ------------------------------------------------------------------ derived objects
    def release(self, code_type: np.dtype) -> None:
        """Drop what the rows determine -- the row design ``A``, the signs and shifts, the active set's ``B`` -- and
        keep the rows compact (:func:`~drokit.oracles.rows.compact_rows`): a partition between calls
        (:mod:`drokit.partition_memory`).  :meth:`restore` rebuilds them; the masses and slope vectors stay."""
        if self.A is None or not hasattr(self.rows, "Z"):     # fractional rows: their design is the rows' own matrix
            return
        self.rows = compact_rows(self.rows, code_type)
        self.A = self.sigma = self.shift = None
        if self._bounded is not None:
            _, movable, out, columns = self._bounded
            self._bounded = (None, movable, out, columns)

    def restore(self, inst: DROInstance) -> None:
        """The row design, signs, shifts (and the active set's ``B``) rebuilt from the rows after :meth:`release`
        (``inst``: the partition's instance, codes ``int64``)."""
        if self.A is not None:
            return
        self.rows = widened_rows(self.rows)
        self.sigma, self.shift = inst.row_signs(self.rows.sample, self.rows.flip)
        self.A = row_matrix(inst, self.rows)
        if self._bounded is not None:
            _, movable, out, columns = self._bounded
            self._bounded = (self._active_rows(columns), movable, out, columns)

    def _active_rows(self, columns: np.ndarray):
        """``B_k = m_k sigma_k a_{k,C}`` (the active set's rows)."""
        return self.A[:, columns].multiply((self.mass * self.sigma)[:, None]).tocsr()

    # ------------------------------------------------------------------ sums
    def sums(self, name: str) -> Tuple[np.ndarray, float]:
        """``(A' (m alpha sigma), max_k |m_k alpha_k|)`` for the slopes ``name``: the column sums ``g`` (``d``) and the
        scale of their terms (:func:`~drokit.certificates.repair.within_rounding`)."""
        alpha = self.vectors[name]
        return (np.asarray(self.A.T @ (self.mass * alpha * self.sigma)).ravel(),
                float(np.max(np.abs(self.mass * alpha), initial=0.0)))

    def value(self, name: str) -> float:
        """``sum_k m_k (-alpha_k shift_k - L*(alpha_k))`` (Fenchel's part of the Lagrangian) for the slopes ``name``."""
        alpha = self.vectors[name]
        return float(np.sum(self.mass * (-alpha * self.shift - conjugate(self.loss, alpha))))

    def costs(self) -> Tuple[float, float]:
        """``(S_c, P)``: the transport cost ``sum_k m_k c_k`` and the probability ``sum_n p_n`` of the partition."""
        return float(self.mass @ self.rows.cost), self.p_total

    # ------------------------------------------------------------------ the least-norm step
    def _room(self, name: str, room: str) -> np.ndarray:
        if room == "given":
            return self.room
        domain = slope_room(self.vectors[name], self.lo, self.hi)
        return domain if room == "domain" else np.minimum(self.room, domain)

    def gram(self, columns: np.ndarray, name: str, room: str) -> np.ndarray:
        """``A_C' diag(m r) A_C`` (``|C| x |C|``) with the room ``r`` of the slopes ``name``: ``"given"`` the room
        handed in, ``"domain"`` their distance to the slope domain's ends
        (:func:`~drokit.certificates.repair.slope_room`), ``"both"`` the smaller of the two."""
        return weighted_gram(self.A[:, columns], self.mass * self._room(name, room))

    def step(self, columns: np.ndarray, c: np.ndarray, name: str, room: str, out: str) -> bool:
        """The least-norm step ``step = A_C c``: whether every ``|step_k| <= 1`` here; if so the slopes ``out`` =
        ``clip(alpha + r sigma step, lo, hi)`` (``alpha``, ``r``: the slopes ``name`` and their room, :meth:`gram`)."""
        step = np.asarray(self.A[:, columns] @ c).ravel()
        if not np.all(np.abs(step) <= 1.0):
            return False
        self.vectors[out] = np.clip(self.vectors[name] + self._room(name, room) * self.sigma * step, self.lo, self.hi)
        return True

    # ------------------------------------------------------------------ the active set
    def bounded_start(self, columns: np.ndarray, name: str, out: str) -> None:
        """Start the active set of :func:`~drokit.certificates.repair._bounded_repair` from the slopes ``name``
        (clipped into the domain, kept as ``out``) on the columns ``C``: the rows ``B_k = m_k sigma_k a_{k,C}``, every
        row with mass movable."""
        self.vectors[out] = np.clip(np.asarray(self.vectors[name], dtype=float).copy(), self.lo, self.hi)
        self._bounded = (self._active_rows(columns), self.mass > 0, out, columns)

    def bounded_sums(self) -> np.ndarray:
        """``B' alpha`` (``|C|``) at the active set's slopes."""
        B, _, out, _ = self._bounded
        return np.asarray(B.T @ self.vectors[out]).ravel()

    def bounded_gram(self) -> np.ndarray:
        """``B_M' B_M`` (``|C| x |C|``) over the movable rows ``M``."""
        B, movable, _, _ = self._bounded
        Bm = B[np.flatnonzero(movable)]
        return np.asarray((Bm.T @ Bm).todense())

    def bounded_move(self, c: np.ndarray) -> Tuple[bool, bool]:
        """The movable rows' slopes moved by ``B_M c`` and clipped into the domain; ``(left, movable)``: whether a row
        left the domain (it is then fixed at the end it reached) and whether a row is still movable."""
        B, movable, out, _ = self._bounded
        Bm = B[np.flatnonzero(movable)]
        d = np.zeros_like(self.vectors[out])
        d[movable] = np.asarray(Bm @ c).ravel()
        new = self.vectors[out] + d
        left = movable & ((new < self.lo) | (new > self.hi))
        self.vectors[out] = np.clip(new, self.lo, self.hi)
        movable &= ~left
        return bool(left.any()), bool(movable.any())

    # ------------------------------------------------------------------ the outcome
    def settle(self, name: str) -> None:
        """The slopes ``name`` are the bound's (:meth:`point`); the other vectors but :data:`START` are dropped."""
        self.final = name
        self.vectors = {k: v for k, v in self.vectors.items() if k in (START, name)}
        self._bounded = None

    def point(self):
        """``(rows, mass, slopes)``: the partition's part of the repaired dual point (rows local to its instance)."""
        return self.rows, self.mass, self.vectors[self.final]


class _Client:
    """The client's side: the partitions' sums, each vector's cached (vectors are not changed once named), and
    :func:`~drokit.certificates.repair.repair_steps`'s operations for the conditions ``A_C' (m alpha sigma) =
    target`` on a column set ``C`` (:meth:`on`)."""

    def __init__(self, parts):
        self.parts = parts
        self.columns = self.target = None
        self._sums: Dict[str, Tuple[np.ndarray, float]] = {}
        self._count = 0

    def fresh(self) -> str:
        self._count += 1
        return f"v{self._count}"

    def sums(self, name: str) -> Tuple[np.ndarray, float]:
        """``(g, max |m alpha|)`` of the slopes ``name`` over every partition."""
        if name not in self._sums:
            parts = self.parts.call("sums", name)
            self._sums[name] = (_total([g for g, _ in parts]), max(largest for _, largest in parts))
        return self._sums[name]

    def on(self, columns: np.ndarray, target: np.ndarray) -> "_Client":
        self.columns, self.target = columns, target
        return self

    # repair_steps' operations
    def residual(self, name: str) -> float:
        return float(np.max(np.abs(self.sums(name)[0][self.columns] - self.target)))

    def met(self, name: str) -> bool:
        return within_rounding(self.residual(name), self.sums(name)[1])

    def least_norm(self, name: str, room) -> Optional[str]:
        """:func:`~drokit.certificates.repair._least_norm_step`: ``c`` solving ``sum_P A_C' diag(m r) A_C c = target -
        g_C``, then the step on every partition; ``room``: a :meth:`BoundPart.gram` mode (``None``: ``"domain"``)."""
        room = "domain" if room is None else room
        g = self.sums(name)[0][self.columns] - self.target
        if not np.any(g):
            return name
        c = gram_solve(_total(self.parts.call("gram", self.columns, name, room)), -g)
        if c is None:
            return None
        out = self.fresh()
        return out if all(self.parts.call("step", self.columns, c, name, room, out)) else None

    def bounded(self, name: str) -> Optional[str]:
        """:func:`~drokit.certificates.repair._bounded_repair`: the least-norm change over the movable rows of every
        partition, rows that leave the domain fixed at its end, repeated."""
        out = self.fresh()
        self.parts.call("bounded_start", self.columns, name, out)
        for _ in range(BOUNDED_MAX_ITER):
            r = self.target - _total(self.parts.call("bounded_sums"))
            if not np.any(r):
                return out
            c = gram_solve(_total(self.parts.call("bounded_gram")), r)
            if c is None:
                return None
            moved = self.parts.call("bounded_move", c)
            if not any(left for left, _ in moved):
                return out
            if not any(movable for _, movable in moved):
                return None
        return None

    def repair(self, columns: np.ndarray, target: np.ndarray, name: str, room: str) -> Optional[str]:
        """:func:`~drokit.certificates.repair.repair_free_columns` without its last resort (``bvls``): the name of the
        repaired slopes, or ``None``."""
        if columns.size == 0:
            return name
        return repair_steps(self.on(columns, target), name, room)


def _total(arrays: List[np.ndarray]) -> np.ndarray:
    return np.sum(np.stack([np.asarray(a, dtype=float) for a in arrays]), axis=0)


def partitioned_lagrangian_bound(parts, inst: DROInstance) -> LowerBound:
    """:func:`~drokit.certificates.lagrangian.lagrangian_bound` (with ``bvls=False``) of the dual point held by the
    partitions ``parts`` (module docstring), step by step:

    1. the free columns ``F`` (:func:`~drokit.certificates.repair.column_roles`) repaired to ``g_F = 0`` with the
       norm-priced columns ``L`` aimed at their sums ``g0_L`` at the point handed in, and without ``L`` when that
       fails (the least-norm step within the room handed in, else the active set, each refined twice:
       :func:`~drokit.certificates.repair.repair_steps`); ``-inf`` when neither meets the conditions;
    2. the residual ``max |g_F|`` checked against :data:`~drokit.certificates.repair.RESIDUAL_RTOL` relative to
       ``max(1, max |m alpha|)`` over every partition;
    3. the budget ``spent = S_c + N(Gamma g_L) / lip`` (:func:`~drokit.certificates.budget.priced_norm`): ``value =
       base + lam_0 (eps - spent)`` within it, else the point mixed with the nominal rows (``t = eps / spent``: ``t
       base - (1 - t) L*(0)``, the partitions' ``sum p_n`` = 1) (:func:`~drokit.certificates.budget.budget_value`);
    4. overspent (``scale < 1``) with norm-priced columns: the slopes repaired once more so that ``g_L`` becomes its
       scaling into what the transport cost leaves (:func:`~drokit.certificates.budget.budget_target`), within the
       room handed in and the domain's, the larger bound kept.

    ``parts``: any object whose ``call(name, *args, **kwargs)`` calls :class:`BoundPart` method ``name`` on every
    partition (the same objects each time: they keep the slope vectors the client names) and returns the list of
    results (:class:`drokit.partitions.LocalParts` in memory).  ``inst``: any partition's instance (its loss, metric, radius and
    columns; its ``p`` is not used).  The bound's ``rows``, ``mass`` and ``slopes`` are ``None``: each partition
    keeps its part (:meth:`BoundPart.point`).  ``-inf`` where the in-memory bound would need its dense last resort
    (module docstring)."""
    _check_case(inst)
    loss = inst.loss
    client = _Client(parts)
    free, limited = column_roles(inst)
    kept = np.concatenate([free, limited])
    g0 = client.sums(START)[0]
    target = np.concatenate([np.zeros(free.size), g0[limited]])
    repaired = client.repair(kept, target, START, "given")
    if repaired is None and limited.size:
        repaired = client.repair(free, target[:free.size], START, "given")
    if repaired is None:
        parts.call("settle", START)
        return LowerBound(-np.inf, None, None, None, 1.0, float(np.max(np.abs(g0[free]), initial=0.0)))
    costs = parts.call("costs")
    S_c, total_p = (float(np.sum([c[i] for c in costs])) for i in (0, 1))
    eps, lam0 = float(inst.radius), float(label_floor(inst, loss))
    weighted = priced_norm(inst, limited)

    def evaluated(name: str) -> LowerBound:
        g, largest = client.sums(name)
        residual = float(np.max(np.abs(g[free]), initial=0.0))
        if not within_rounding(residual, largest):
            return LowerBound(-np.inf, None, None, None, 1.0, residual)
        base = float(np.sum(parts.call("value", name)))
        value, scale = budget_value(loss, base, S_c, weighted(g[limited]), eps, lam0, total_p)
        return LowerBound(float(value), None, None, None, scale, residual)

    bound, chosen = evaluated(repaired), repaired
    if bound.scale < 1.0 and limited.size:
        aimed = budget_target(inst, client.sums(repaired)[0][limited], limited, S_c, float(loss.lipschitz))
        if aimed is not None:
            again = client.repair(kept, np.concatenate([np.zeros(free.size), aimed]), repaired, "both")
            if again is not None:
                candidate = evaluated(again)
                if candidate.value > bound.value:
                    bound, chosen = candidate, again
    parts.call("settle", chosen)
    return bound

__all__ = ["BoundPart", "LocalParts", "START", "partitioned_lagrangian_bound"]
