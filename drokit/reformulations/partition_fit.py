"""One partition's share of a distributed fit (issue 25): the worker side of :mod:`.distributed_fit`.

The default Wasserstein fit (phase 1 -> barrier master -> Lagrangian certificate) works on ``theta = (beta_0, beta,
lambda)``, ``d + 2`` numbers, and on per-sample objects: every quantity it needs is a sum over samples
(belbasi2023 (3), sun2025 (3)),

    F(theta)        = lambda eps + sum_n p_n max_k (l_k - lambda c_k)                       (the oracle),
    F_tau(theta)    = lambda eps + sum_n p_n tau log sum_{r in W_n} exp(v_r / tau) + ...   (phase 1, :mod:`.phase_one`),
    phi_mu(theta)   = lambda eps + sum_n (p_n s*_n - mu sum_{r of n} log(s*_n - v_r)) + ... (the barrier master,
                                                                                             :mod:`.barrier_master`),

and their gradients and Hessians (``d``-vectors and ``d x d`` matrices), the Newton step's Schur complement and the
certificate's column sums.  A partition ``P`` of the rows holds its samples bound once as a :class:`DROInstance`
whose probabilities are the *global* ``p_n = w_n / sum_m w_m`` (they sum to the partition's share), its separation
oracle, its working rows ``W_n`` (and the pruned reserve), the per-sample epigraph levels ``s*`` and dual weights of
the barrier master's last points, and its part of the dual point: :class:`PartitionFit`.  Its methods take ``theta``
(and ``tau`` / ``mu``) and return only the partition's sums -- the parts of the masters computed by
:meth:`.phase_one.SmoothedMaster.data_derivatives` and :meth:`.epigraph.EpigraphBarrier.data_direction` -- so the data
and the working rows never leave the partition.

Per-sample state of the barrier master's trial points stays here under a *token* the client chooses: the client's
Newton loop (:func:`.centering.center`) passes ``s`` and the dual weights around as tokens, and the partition keeps
the last :data:`KEEP_STATES` of each.

Between calls a partition keeps its *cold* state only for sure -- the samples with their categorical codes in the
smallest integer type (:func:`compact_instance`), the working rows, reserve and bundle compact
(:func:`~drokit.oracles.rows.compact_rows`), per-sample maxima and epigraph levels -- and its *derived* objects (the
instance with ``int64`` codes, the oracle, the masters, the certificate's row design) as long as this process's
:data:`~drokit.partition_memory.DERIVED` store has room for them; released, they are rebuilt from the cold state at
the next call that needs them (:mod:`drokit.partition_memory`).  The masters are rebuilt from the same rows, so a
release changes no result beyond the order of sums in the Gram cache of :class:`.row_terms.RowTerms`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from ..instance import DROInstance
from ..losses.base import CLASSIFICATION
from ..oracles.enumeration import ConfigurationRows, concat_rows, enumerate_configurations, take_rows, unique_rows
from ..oracles.rows import compact_rows, widened_rows
from ..partition_memory import DERIVED, footprint, smallest_code_type
from ..oracles.registry import make_oracle
from ..certificates.constant_model import ClassSums, class_sums, critical_rows, intercept_sums, slope_sum
from ..certificates.partitioned_bound import BoundPart
from .cutting_plane_outcome import with_nominal_rows
from .epigraph import EpigraphBarrier
from .phase_one import SmoothedMaster, near_active, returning_rows
from .row_terms import parameter_layout

#: partitions keep their masters' term designs factored (:class:`.factored_design.FactoredDesign`: lead columns per
#: sample, sparse dummies per term) whatever the in-memory rule says: synthetic 10 + 10, 400,000 rows in 4 partitions
#: (one process), peak 1.7 kB a row against 2.4 kB dense, and the fit 25 s against 59 s
FACTORED = True
#: trial points' per-sample states (epigraph levels, slacks) a partition keeps besides the pinned one
KEEP_STATES = 2


def compact_instance(inst: DROInstance) -> DROInstance:
    """``inst`` with its categorical codes in the smallest integer type of its levels and labels ``+-1`` as ``int8``
    (classification): storage only, never computed on (:func:`widened_instance` first); the numerical columns are
    shared, not copied."""
    code_type = smallest_code_type(int(np.max(inst.schema.levels, initial=1)))
    y = np.asarray(inst.y)
    if inst.task == CLASSIFICATION and np.all(np.abs(y) == 1):
        y = y.astype(np.int8)
    return replace(inst, data=replace(inst.data, Z=inst.data.Z.astype(code_type)), y=y)


def widened_instance(inst: DROInstance) -> DROInstance:
    """:func:`compact_instance`'s instance with ``int64`` codes and ``float`` labels (the numerical columns shared)."""
    return replace(inst, data=replace(inst.data, Z=inst.data.Z.astype(np.int64)),
                   y=np.asarray(inst.y, dtype=float))


class PartitionFit:
    """A partition's samples, oracle, working rows and master state (module docstring).

    ``binder(X, y, sample_weight) -> DROInstance`` binds the partition's rows with the fit's schema, metric and labels
    (:mod:`drokit.models.dask_fit`); :meth:`globalize` then sets the probabilities to ``w_n / W`` with ``W`` the
    total weight of every partition.  Every method returns numbers (floats, ``d``-vectors, ``d x d`` matrices)."""

    def __init__(self, binder: Callable, X, y, sample_weight=None, folds=None):
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=float).ravel()
        self.rows_in = int(len(X))
        self.weight = float(self.rows_in if w is None else w.sum())
        # a partition of weight 0 adds nothing to any objective (the client leaves it out): it is not bound
        inst = binder(X, y, w) if self.rows_in and self.weight > 0 else None
        self.labels = np.unique(np.asarray(inst.y)) if inst is not None else np.zeros(0)
        self.cold: Optional[DROInstance] = None if inst is None else compact_instance(inst)
        self.code_type = None if inst is None else self.cold.data.Z.dtype
        del inst
        # the whole partition, for :meth:`select` (cross-validation's folds: drokit.model_selection.dask_cv)
        self.full, self.full_rows, self.full_weight = self.cold, self.rows_in, self.weight
        self.folds = None if folds is None else np.asarray(folds).ravel()
        if self.folds is not None and self.folds.shape[0] != self.rows_in:
            raise ValueError(f"folds has {self.folds.shape[0]} entries for a partition of {self.rows_in} rows")
        self._derived: Dict[str, object] = {}          # 'inst', 'oracle', 'smoothed', 'epigraph' (module docstring)
        self._derived_bytes = 0
        self.releases = 0                              # by the store (:meth:`release_derived`)
        self._states: Dict[int, tuple] = {}            # insertion-ordered: the oldest trial first
        self._directions: Dict[int, tuple] = {}
        self._reset_fit_state()

    def _reset_fit_state(self) -> None:
        """No working rows, maxima, epigraph states or certificate part: the state before a fit's first call."""
        self._derived.clear()
        self._derived_bytes = 0
        self._states.clear()
        self._directions.clear()
        self._pinned = None
        self.sep_rows = self.sep_violation = self.best_s = None
        self.smoothed_rows = self.epigraph_rows = self.reserve = self.bundle = None     # compact rows
        self.bound_part = None

    def select(self, held_out=None, radius: Optional[float] = None) -> Tuple[int, float, np.ndarray]:
        """The next fit's samples: the partition's rows outside fold ``held_out`` (``None``: every row; a fold number
        of the ``folds`` given at construction), at ``radius`` (``None``: the bound one), with the fit state reset --
        one binding serves every fold and radius of a cross-validation.  The weights are the bound ones (the client's
        :meth:`globalize` then divides them by the selected rows' total).  Returns :meth:`summary`."""
        self._reset_fit_state()
        DERIVED.forget(self)
        full = self.full
        if full is None:
            self.cold, self.rows_in, self.weight = None, self.full_rows, 0.0
            return self.summary()
        if held_out is not None and self.folds is None:
            raise ValueError("select(held_out=...) needs the folds given at construction")
        w = np.full(full.n_samples, self.full_weight / full.n_samples) if full.sample_weight is None else \
            np.asarray(full.sample_weight, dtype=float) * self.full_weight
        cold = full
        if held_out is not None:
            keep = np.flatnonzero(self.folds != held_out)
            cold, w = full.take_samples(keep), w[keep]
        self.rows_in, self.weight = int(cold.n_samples), float(w.sum())
        if self.rows_in == 0 or not self.weight > 0:
            self.cold, self.labels = None, np.zeros(0)
            return self.summary()
        self.cold = replace(cold, sample_weight=w / self.weight,
                            radius=cold.radius if radius is None else float(radius))
        self.labels = np.unique(np.asarray(self.cold.y))
        return self.summary()

    # ------------------------------------------------------------------ derived objects
    def _get(self, name: str, build: Callable):
        """The derived object ``name``, built from the cold state if released; the store is told of its use."""
        obj = self._derived.get(name)
        if obj is None:
            obj = self._derived[name] = build()
            self._charge()
        else:
            DERIVED.charge(self, self._derived_bytes)
        return obj

    def _charge(self) -> None:
        """The derived objects' bytes (the cold state's buffers left out) reported to the store."""
        seen: set = set()
        footprint(self.cold, seen)
        held = footprint(self._derived, seen)
        part = self.bound_part
        if part is not None and part.A is not None:
            held += footprint([part.A, part.sigma, part.shift, part._bounded], seen)
        self._derived_bytes = held
        DERIVED.charge(self, held)

    def release_derived(self) -> None:
        """Drop the derived objects (:mod:`drokit.partition_memory`): called by the store between this partition's
        calls."""
        self.releases += 1
        self._drop_derived()

    def _drop_derived(self) -> None:
        self._derived.clear()
        if self.bound_part is not None:
            self.bound_part.release(self.code_type)
        self._derived_bytes = 0

    def _drop(self, name: str) -> None:
        self._derived.pop(name, None)

    @property
    def inst(self) -> DROInstance:
        """The partition's instance with ``int64`` codes (derived from :attr:`cold`)."""
        return self._get("inst", lambda: widened_instance(self.cold))

    @property
    def oracle(self):
        return self._get("oracle", lambda: make_oracle(self.inst, "auto"))

    def _smoothed(self) -> SmoothedMaster:
        return self._get("smoothed", lambda: SmoothedMaster(self.inst, widened_rows(self.smoothed_rows), self.free,
                                                            self.cone, factored=FACTORED))

    def _epigraph(self) -> EpigraphBarrier:
        return self._get("epigraph", lambda: EpigraphBarrier(self.inst, widened_rows(self.epigraph_rows), self.free,
                                                             self.cone, factored=FACTORED))

    def _master(self):
        """The master in use (smoothed, else the barrier master), or ``None``."""
        if self.smoothed_rows is not None:
            return self._smoothed()
        return self._epigraph() if self.epigraph_rows is not None else None

    def _bound(self):
        """The certificate's part, its row design rebuilt if released."""
        part = self.bound_part
        if part.A is None:
            part.restore(self.inst)
            self._charge()
        else:
            DERIVED.charge(self, self._derived_bytes)
        return part

    def _new_bound_part(self, *args) -> None:
        """The certificate's part from the dual point ``args`` (the callers free the last part before computing them:
        its row design is the peak memory)."""
        self.bound_part = BoundPart(self.inst, *args)
        self._charge()

    # ------------------------------------------------------------------ set-up
    def summary(self) -> Tuple[int, float, np.ndarray]:
        """``(rows, total weight, labels present)``."""
        return self.rows_in, self.weight, self.labels

    def globalize(self, total_weight: float) -> int:
        """Probabilities ``p_n = w_n / total_weight`` (the global nominal distribution); samples of weight 0 are
        dropped (they add nothing to any objective).  Returns the samples kept."""
        cold = self.cold
        w = np.full(cold.n_samples, 1.0) if cold.sample_weight is None else \
            np.asarray(cold.sample_weight, dtype=float) * self.weight
        keep = np.flatnonzero(w > 0)
        if keep.size < cold.n_samples:
            cold = cold.take_samples(keep)
            w = w[keep]
        p = w / float(total_weight)
        self.cold = replace(cold, sample_weight=p)
        self._drop_derived()
        _, self.dim, self.free, self.cone = parameter_layout(self.inst)
        return int(self.cold.n_samples)

    def sample_rows(self, fraction: float, seed: int) -> DROInstance:
        """A uniform sample of the partition's samples (each kept with probability ``fraction``, at least one), their
        global probabilities kept: the client joins them into the warm start's subsample (:mod:`.distributed_fit`)."""
        rng = np.random.default_rng(seed)
        take = np.flatnonzero(rng.random(self.cold.n_samples) < fraction)
        if take.size == 0:
            take = np.array([int(rng.integers(self.cold.n_samples))])
        return widened_instance(self.cold.take_samples(take))

    # ------------------------------------------------------------------ the exact objective
    def separate(self, intercept: float, coef: np.ndarray, lam: float) -> Tuple[float, float, float, int]:
        """The oracle at ``(beta, lam)`` (``lam >= lambda_min(beta)``, chosen by the client): ``(sum_n p_n max_k (l_k -
        lam c_k), sum_n p_n c_{k*_n}, sum_n p_n l_{k*_n}, rows not in the working set)``; the maximizers wait for
        :meth:`grow`."""
        sep = self.oracle.separate(intercept, coef, lam, np.zeros(self.cold.n_samples))
        p = self.cold.p
        viol = float(p @ sep.violation)
        cost = float(p[sep.rows.sample] @ sep.rows.cost)
        master = self._master()
        fresh = master.index.unseen(sep.rows).size if master is not None else sep.rows.size
        self.sep_violation, self.sep_rows = sep.violation, self._moved_rows(sep.rows)
        return viol, cost, viol + lam * cost, int(fresh)

    def _moved_rows(self, rows: ConfigurationRows) -> ConfigurationRows:
        """The rows of ``rows`` that move their sample (a level changed or the label flipped), compact.  The others are
        nominal rows, which every use of the maximizers has already: the smoothed and barrier masters start from all
        nominal rows, the barrier master never drops one, and one the smoothed master pruned is in the reserve, from
        which it returns when it is its sample's maximum (:func:`.phase_one.returning_rows`: within ``gap >= 0`` of
        ``sep.violation``)."""
        moved = rows.flip | np.any(rows.Z != self.cold.data.Z[rows.sample], axis=1)    # compared, not computed on
        return compact_rows(take_rows(rows, np.flatnonzero(moved)), self.code_type)

    def keep_best(self) -> None:
        """The last separation's per-sample maxima are the best point's (the fit's ``s``)."""
        self.best_s = self.sep_violation

    # ------------------------------------------------------------------ phase 1 (the smoothed master)
    def _set_smoothed(self, rows: Optional[ConfigurationRows]) -> None:
        self._drop("smoothed")
        self.smoothed_rows = None if rows is None else compact_rows(rows, self.code_type)

    def smoothed_start(self) -> Tuple[int, float]:
        """The smoothed master over the nominal rows and the last separation's maximizers; its size (:meth:`_smoothed_size`)."""
        nominal = enumerate_configurations(self.inst, nominal_only=True)
        self._set_smoothed(unique_rows(concat_rows([nominal, widened_rows(self.sep_rows)])))
        self.reserve = None
        return self._smoothed_size()

    def smoothed_value(self, theta: np.ndarray, tau: float) -> float:
        return self._smoothed().data_value(theta, tau)

    def smoothed_derivatives(self, theta: np.ndarray, tau: float):
        return self._smoothed().data_derivatives(theta, tau)

    def _smoothed_size(self) -> Tuple[int, float]:
        """``(rows, log of the largest number of terms of a sample)`` of the smoothed master (``F_tau - tau log |W_n|
        <= max``): what every change of the working set reports."""
        return int(self.smoothed_rows.size), float(self._smoothed().log_count)

    def smoothed_grow(self, theta: np.ndarray, gap: float) -> Tuple[int, float]:
        """The last separation's new rows, and the reserve's rows back within ``gap`` of their sample's maximum
        (:func:`.phase_one.returning_rows`), join the working set; its size (:meth:`_smoothed_size`)."""
        master = self._smoothed()
        sep_rows = widened_rows(self.sep_rows)
        fresh = master.index.unseen(sep_rows)
        back = None
        if self.reserve is not None:
            reserve, back = returning_rows(self.inst, widened_rows(self.reserve), theta, self.sep_violation, gap,
                                           master)
            self.reserve = compact_rows(reserve, self.code_type)
        if fresh.size or back is not None:
            grown = concat_rows([master.rows, take_rows(sep_rows, fresh)])
            if back is not None:
                grown = unique_rows(concat_rows([grown, back]))
            del master
            self._set_smoothed(grown)
        return self._smoothed_size()

    def smoothed_prune(self, theta: np.ndarray, gap: float) -> Tuple[int, float]:
        """Rows more than ``gap`` below their sample's maximum over the working set leave it for the reserve."""
        master = self._smoothed()
        keep = master.within(theta, gap)
        if keep.size < master.rows.size:
            gone = np.ones(master.rows.size, dtype=bool)
            gone[keep] = False
            pruned = compact_rows(take_rows(master.rows, np.flatnonzero(gone)), self.code_type)
            self.reserve = pruned if self.reserve is None else concat_rows([self.reserve, pruned])
            rows = take_rows(master.rows, keep)
            del master
            self._set_smoothed(rows)
        return self._smoothed_size()

    def smoothed_bound_part(self, theta: np.ndarray, tau: float) -> None:
        """This partition's part of the smoothed dual point (:meth:`.phase_one.SmoothedMaster.dual_point`)."""
        self.bound_part = None                  # the last one freed first (its row design: peak memory)
        self._new_bound_part(*self._smoothed().dual_point(theta, tau))

    def smoothed_finish(self, intercept: float, coef: np.ndarray, lam: float, margin: float) -> int:
        """Phase 1's near-active bundle at the best point (:func:`.phase_one.near_active`); the smoothed master is
        freed.  Returns the bundle's size."""
        working = widened_rows(self.smoothed_rows)
        self._set_smoothed(None)
        self.reserve = None
        self.bundle = compact_rows(near_active(self.inst, working, intercept, coef, lam, margin), self.code_type)
        return int(self.bundle.size)

    # ------------------------------------------------------------------ the barrier master
    def epigraph_start(self, from_bundle: bool) -> int:
        """The barrier master over the nominal rows and phase 1's bundle (``from_bundle``), or the last separation's
        maximizers (an unconverged phase 1's point); its size (:meth:`_smoothed_size`)."""
        rows = self.bundle if from_bundle and self.bundle is not None else self.sep_rows
        self.bundle = None
        self._build_epigraph(with_nominal_rows(self.inst, widened_rows(rows)))
        return int(self.epigraph_rows.size)

    def _build_epigraph(self, rows: ConfigurationRows) -> None:
        self._drop("epigraph")
        self._states.clear()
        self._directions.clear()
        self._pinned = None
        self.epigraph_rows = compact_rows(rows, self.code_type)

    def epigraph_grow(self) -> Tuple[int, int]:
        """The last separation's new rows join the barrier master: ``(rows, terms)``."""
        master = self._epigraph()
        sep_rows = widened_rows(self.sep_rows)
        fresh = master.index.unseen(sep_rows)
        if fresh.size:
            rows = concat_rows([master.rows, take_rows(sep_rows, fresh)])
            del master
            self._build_epigraph(rows)
        return self.epigraph_size()

    def epigraph_size(self) -> Tuple[int, int]:
        return int(self.epigraph_rows.size), int(self._epigraph().n_terms)

    def epigraph_settled(self, theta: np.ndarray, mu: float, token: int) -> Optional[np.ndarray]:
        """The partition's part of ``phi_mu(theta)`` (:meth:`.epigraph.EpigraphBarrier.data_settled`); the epigraph
        levels and slacks are kept under ``token``: besides the state the last Newton direction was taken at (a
        centering returns either it or its newest trial point), the :data:`KEEP_STATES` newest trials; only the newest
        keeps its slacks and margins (16 bytes a term: a direction at an older state recomputes them from ``theta`` and
        ``s``, :meth:`.epigraph.EpigraphBarrier.data_direction`)."""
        sums, s, at = self._epigraph().data_settled(theta, mu)
        if s is not None:
            for older, (s_older, _) in self._states.items():     # slacks and margins: the newest state's only
                self._states[older] = (s_older, None)
            self._states[token] = (s, at)
            trials = [t for t in self._states if t != self._pinned]
            for old in trials[:-KEEP_STATES]:
                del self._states[old]
        return sums

    def epigraph_direction(self, theta: np.ndarray, mu: float, token: int, direction_token: int):
        """The partition's reduced gradient and Schur complement at the state ``token``
        (:meth:`.epigraph.EpigraphBarrier.data_direction`), which becomes the pinned state (the older ones are
        dropped); the dual weights are kept under ``direction_token`` (the newest only)."""
        s, at = self._states[token]
        self._pinned = token
        for old in [t for t in self._states if t != token]:
            del self._states[old]
        g_t, schur, curvature, w, slope = self._epigraph().data_direction(theta, s, mu, at)
        self._directions.clear()
        self._directions[direction_token] = (w, slope)
        return g_t, schur, curvature

    def epigraph_level_sum(self, token: int) -> float:
        """``sum_n p_n s*_n`` at the state ``token`` (the master's objective without ``lambda eps``)."""
        return float(self.cold.p @ self._states[token][0])

    def epigraph_bound_part(self, mu: float, direction_token: int) -> None:
        """This partition's part of the barrier master's dual point: masses ``mu w_r`` with slopes ``L'(u_r)``
        (:meth:`.row_terms.RowTerms.row_dual`, weights relative to ``p_n``)."""
        w, slope = self._directions[direction_token]
        self.bound_part = None
        master = self._epigraph()
        self._new_bound_part(*master.row_dual(mu * w / master.p[master.segment], slope))

    # ------------------------------------------------------------------ beyond the critical radius
    def constant_sums(self) -> ClassSums:
        """The partition's class sums (:func:`~drokit.certificates.constant_model.class_sums`)."""
        return class_sums(self.inst)

    def constant_intercept_sums(self, b: float):
        return intercept_sums(self.inst, b)

    def constant_slope_sum(self, b: float) -> float:
        return slope_sum(self.inst, b)

    def constant_loss_sum(self, b: float) -> float:
        """``sum_n p_n L(y_n b)`` over the partition (the constant model's risk)."""
        return float(self.cold.p @ self.cold.loss.value(np.asarray(self.cold.y, dtype=float) * b))

    def constant_bound_part(self, spreads, level_costs, plus_lighter: bool, b: float) -> None:
        """This partition's part of the constant model's dual point (:func:`~drokit.certificates.constant_model.
        critical_rows`: masses ``p_n``, slopes ``L'(y_n b*)``)."""
        inst = self.inst
        rows = critical_rows(inst, spreads, level_costs, plus_lighter)
        slope = inst.loss.derivative(np.asarray(inst.y, dtype=float) * b)
        self.bound_part = None
        self._new_bound_part(rows, np.asarray(inst.p, dtype=float).copy(), np.asarray(slope, dtype=float))

    # ------------------------------------------------------------------ the certificate
    def bound_call(self, name: str, *args, **kwargs):
        """A method of this partition's :class:`~drokit.certificates.partitioned_bound.BoundPart`."""
        return getattr(self._bound(), name)(*args, **kwargs)

    def bound_release(self) -> None:
        """The dual point's part is freed once its bound is computed (its row design is the size of the working set)."""
        self.bound_part = None
        self._charge()

    def memory_report(self) -> Tuple[int, int, int]:
        """``(samples, bytes of the cold state now, releases of the derived objects so far)``, ``None`` for a partition
        left out (no rows of positive weight)."""
        if self.cold is None:
            return None
        cold = [self.cold, self.sep_rows, self.sep_violation, self.best_s, self.smoothed_rows, self.epigraph_rows,
                self.reserve, self.bundle, self._states, self._directions]
        if self.bound_part is not None:
            cold += [self.bound_part.rows, self.bound_part.mass, self.bound_part.room, self.bound_part.vectors]
        return int(self.cold.n_samples), footprint(cold), int(self.releases)

    def bound_instance(self) -> DROInstance:
        """The partition's bound samples (global probabilities): a small fit finishes in memory from them."""
        return widened_instance(self.cold)

    def close(self, collect: bool = True) -> None:
        """Everything freed (the fit is over): the worker's memory is back before the next fit's partitions arrive,
        whenever the actor itself is collected.  ``collect``: run the garbage collector here (an actor on its worker);
        partitions held in one process are closed without it and collected once by the caller."""
        self._reset_fit_state()
        DERIVED.forget(self)
        self.cold = self.full = None
        if collect:
            import gc
            gc.collect()

    def best_maxima(self) -> np.ndarray:
        """The per-sample maxima at the best point (in the partition's sample order)."""
        return np.asarray(self.best_s)


__all__ = ["PartitionFit", "KEEP_STATES", "compact_instance", "widened_instance"]
