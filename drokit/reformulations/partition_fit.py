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
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, concat_rows, enumerate_configurations, take_rows, unique_rows
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


class PartitionFit:
    """A partition's samples, oracle, working rows and master state (module docstring).

    ``binder(X, y, sample_weight) -> DROInstance`` binds the partition's rows with the fit's schema, metric and labels
    (:mod:`drokit.models.dask_fit`); :meth:`globalize` then sets the probabilities to ``w_n / W`` with ``W`` the
    total weight of every partition.  Every method returns numbers (floats, ``d``-vectors, ``d x d`` matrices)."""

    def __init__(self, binder: Callable, X, y, sample_weight=None):
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=float).ravel()
        self.rows_in = int(len(X))
        self.weight = float(self.rows_in if w is None else w.sum())
        # a partition of weight 0 adds nothing to any objective (the client leaves it out): it is not bound
        self.inst: Optional[DROInstance] = binder(X, y, w) if self.rows_in and self.weight > 0 else None
        self.labels = np.unique(np.asarray(self.inst.y)) if self.inst is not None else np.zeros(0)
        self._states: Dict[int, tuple] = {}            # insertion-ordered: the oldest trial first
        self._directions: Dict[int, tuple] = {}
        self._pinned = None
        self.smoothed = self.epigraph = self.reserve = self.sep = self.best_s = self.bundle = None
        self.bound_part = None

    # ------------------------------------------------------------------ set-up
    def summary(self) -> Tuple[int, float, np.ndarray]:
        """``(rows, total weight, labels present)``."""
        return self.rows_in, self.weight, self.labels

    def globalize(self, total_weight: float) -> int:
        """Probabilities ``p_n = w_n / total_weight`` (the global nominal distribution), the oracle and the nominal
        working rows; samples of weight 0 are dropped (they add nothing to any objective).  Returns the samples kept."""
        inst = self.inst
        w = np.full(inst.n_samples, 1.0) if inst.sample_weight is None else \
            np.asarray(inst.sample_weight, dtype=float) * self.weight
        keep = np.flatnonzero(w > 0)
        if keep.size < inst.n_samples:
            inst = inst.take_samples(keep)
            w = w[keep]
        self.inst = replace(inst, sample_weight=w / float(total_weight))
        self.oracle = make_oracle(self.inst, "auto")
        _, self.dim, self.free, self.cone = parameter_layout(self.inst)
        self.rows = enumerate_configurations(self.inst, nominal_only=True)
        return int(self.inst.n_samples)

    def sample_rows(self, fraction: float, seed: int) -> DROInstance:
        """A uniform sample of the partition's samples (each kept with probability ``fraction``, at least one), their
        global probabilities kept: the client joins them into the warm start's subsample (:mod:`.distributed_fit`)."""
        rng = np.random.default_rng(seed)
        take = np.flatnonzero(rng.random(self.inst.n_samples) < fraction)
        if take.size == 0:
            take = np.array([int(rng.integers(self.inst.n_samples))])
        return self.inst.take_samples(take)

    # ------------------------------------------------------------------ the exact objective
    def separate(self, intercept: float, coef: np.ndarray, lam: float) -> Tuple[float, float, float, int]:
        """The oracle at ``(beta, lam)`` (``lam >= lambda_min(beta)``, chosen by the client): ``(sum_n p_n max_k (l_k -
        lam c_k), sum_n p_n c_{k*_n}, sum_n p_n l_{k*_n}, rows not in the working set)``; the maximizers wait for
        :meth:`grow`."""
        sep = self.oracle.separate(intercept, coef, lam, np.zeros(self.inst.n_samples))
        self.sep = sep
        p = self.inst.p
        viol = float(p @ sep.violation)
        cost = float(p[sep.rows.sample] @ sep.rows.cost)
        master = self.smoothed if self.smoothed is not None else self.epigraph
        fresh = master.index.unseen(sep.rows).size if master is not None else sep.rows.size
        return viol, cost, viol + lam * cost, int(fresh)

    def keep_best(self) -> None:
        """The last separation's per-sample maxima are the best point's (the fit's ``s``)."""
        self.best_s = self.sep.violation

    # ------------------------------------------------------------------ phase 1 (the smoothed master)
    def smoothed_start(self) -> Tuple[int, float]:
        """The smoothed master over the nominal rows and the last separation's maximizers; its size (:meth:`_smoothed_size`)."""
        rows = unique_rows(concat_rows([self.rows, self.sep.rows]))
        self.smoothed = SmoothedMaster(self.inst, rows, self.free, self.cone, factored=FACTORED)
        self.reserve = None
        return self._smoothed_size()

    def smoothed_value(self, theta: np.ndarray, tau: float) -> float:
        return self.smoothed.data_value(theta, tau)

    def smoothed_derivatives(self, theta: np.ndarray, tau: float):
        return self.smoothed.data_derivatives(theta, tau)

    def _smoothed_size(self) -> Tuple[int, float]:
        """``(rows, log of the largest number of terms of a sample)`` of the smoothed master (``F_tau - tau log |W_n|
        <= max``): what every change of the working set reports."""
        return int(self.smoothed.rows.size), float(self.smoothed.log_count)

    def smoothed_grow(self, theta: np.ndarray, gap: float) -> Tuple[int, float]:
        """The last separation's new rows, and the reserve's rows back within ``gap`` of their sample's maximum
        (:func:`.phase_one.returning_rows`), join the working set; its size (:meth:`_smoothed_size`)."""
        master = self.smoothed
        fresh = master.index.unseen(self.sep.rows)
        back = None
        if self.reserve is not None:
            self.reserve, back = returning_rows(self.inst, self.reserve, theta, self.sep, gap, master)
        if fresh.size or back is not None:
            grown = concat_rows([master.rows, take_rows(self.sep.rows, fresh)])
            if back is not None:
                grown = unique_rows(concat_rows([grown, back]))
            self.smoothed = None
            self.smoothed = SmoothedMaster(self.inst, grown, self.free, self.cone, factored=FACTORED)
        return self._smoothed_size()

    def smoothed_prune(self, theta: np.ndarray, gap: float) -> Tuple[int, float]:
        """Rows more than ``gap`` below their sample's maximum over the working set leave it for the reserve."""
        master = self.smoothed
        keep = master.within(theta, gap)
        if keep.size < master.rows.size:
            gone = np.ones(master.rows.size, dtype=bool)
            gone[keep] = False
            pruned = take_rows(master.rows, np.flatnonzero(gone))
            self.reserve = pruned if self.reserve is None else concat_rows([self.reserve, pruned])
            rows = take_rows(master.rows, keep)
            self.smoothed = None
            self.smoothed = SmoothedMaster(self.inst, rows, self.free, self.cone, factored=FACTORED)
        return self._smoothed_size()

    def smoothed_bound_part(self, theta: np.ndarray, tau: float) -> None:
        """This partition's part of the smoothed dual point (:meth:`.phase_one.SmoothedMaster.dual_point`)."""
        self.bound_part = None                  # the last one freed first (its row design: peak memory)
        self.bound_part = BoundPart(self.inst, *self.smoothed.dual_point(theta, tau))

    def smoothed_finish(self, intercept: float, coef: np.ndarray, lam: float, margin: float) -> int:
        """Phase 1's near-active bundle at the best point (:func:`.phase_one.near_active`); the smoothed master is
        freed.  Returns the bundle's size."""
        working = self.smoothed.rows
        self.smoothed = self.reserve = None
        self.bundle = near_active(self.inst, working, intercept, coef, lam, margin)
        return int(self.bundle.size)

    # ------------------------------------------------------------------ the barrier master
    def epigraph_start(self, from_bundle: bool) -> int:
        """The barrier master over the nominal rows and phase 1's bundle (``from_bundle``), or the last separation's
        maximizers (an unconverged phase 1's point); its size (:meth:`_smoothed_size`)."""
        rows = self.bundle if from_bundle and self.bundle is not None else self.sep.rows
        self.bundle = None
        self._build_epigraph(with_nominal_rows(self.inst, rows))
        return int(self.epigraph.rows.size)

    def _build_epigraph(self, rows: ConfigurationRows) -> None:
        self.epigraph = None
        self._states.clear()
        self._directions.clear()
        self._pinned = None
        self.epigraph = EpigraphBarrier(self.inst, rows, self.free, self.cone, factored=FACTORED)

    def epigraph_grow(self) -> Tuple[int, int]:
        """The last separation's new rows join the barrier master: ``(rows, terms)``."""
        master = self.epigraph
        fresh = master.index.unseen(self.sep.rows)
        if fresh.size:
            self._build_epigraph(concat_rows([master.rows, take_rows(self.sep.rows, fresh)]))
        return int(self.epigraph.rows.size), int(self.epigraph.n_terms)

    def epigraph_size(self) -> Tuple[int, int]:
        return int(self.epigraph.rows.size), int(self.epigraph.n_terms)

    def epigraph_settled(self, theta: np.ndarray, mu: float, token: int) -> Optional[np.ndarray]:
        """The partition's part of ``phi_mu(theta)`` (:meth:`.epigraph.EpigraphBarrier.data_settled`); the epigraph
        levels and slacks are kept under ``token``: besides the state the last Newton direction was taken at (a
        centering returns either it or its newest trial point), the :data:`KEEP_STATES` newest trials."""
        sums, s, at = self.epigraph.data_settled(theta, mu)
        if s is not None:
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
        g_t, schur, curvature, w, slope = self.epigraph.data_direction(theta, s, mu, at)
        self._directions.clear()
        self._directions[direction_token] = (w, slope)
        return g_t, schur, curvature

    def epigraph_level_sum(self, token: int) -> float:
        """``sum_n p_n s*_n`` at the state ``token`` (the master's objective without ``lambda eps``)."""
        return float(self.inst.p @ self._states[token][0])

    def epigraph_bound_part(self, mu: float, direction_token: int) -> None:
        """This partition's part of the barrier master's dual point: masses ``mu w_r`` with slopes ``L'(u_r)``
        (:meth:`.row_terms.RowTerms.row_dual`, weights relative to ``p_n``)."""
        w, slope = self._directions[direction_token]
        master = self.epigraph
        self.bound_part = None
        self.bound_part = BoundPart(self.inst, *master.row_dual(mu * w / master.p[master.segment], slope))

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
        return float(self.inst.p @ self.inst.loss.value(np.asarray(self.inst.y, dtype=float) * b))

    def constant_bound_part(self, spreads, level_costs, plus_lighter: bool, b: float) -> None:
        """This partition's part of the constant model's dual point (:func:`~drokit.certificates.constant_model.
        critical_rows`: masses ``p_n``, slopes ``L'(y_n b*)``)."""
        rows = critical_rows(self.inst, spreads, level_costs, plus_lighter)
        slope = self.inst.loss.derivative(np.asarray(self.inst.y, dtype=float) * b)
        self.bound_part = None
        self.bound_part = BoundPart(self.inst, rows, np.asarray(self.inst.p, dtype=float).copy(),
                                    np.asarray(slope, dtype=float))

    # ------------------------------------------------------------------ the certificate
    def bound_call(self, name: str, *args, **kwargs):
        """A method of this partition's :class:`~drokit.certificates.partitioned_bound.BoundPart`."""
        return getattr(self.bound_part, name)(*args, **kwargs)

    def bound_release(self) -> None:
        """The dual point's part is freed once its bound is computed (its row design is the size of the working set)."""
        self.bound_part = None

    def bound_instance(self) -> DROInstance:
        """The partition's bound samples (global probabilities): a small fit finishes in memory from them."""
        return self.inst

    def close(self) -> None:
        """Everything freed (the fit is over): the worker's memory is back before the next fit's partitions arrive,
        whenever the actor itself is collected."""
        self.inst = self.oracle = self.rows = self.sep = self.best_s = self.bundle = None
        self.smoothed = self.epigraph = self.reserve = self.bound_part = None
        self._states.clear()
        self._directions.clear()
        import gc
        gc.collect()

    def best_maxima(self) -> np.ndarray:
        """The per-sample maxima at the best point (in the partition's sample order)."""
        return np.asarray(self.best_s)


__all__ = ["PartitionFit", "KEEP_STATES"]
