"""The exact worst-case risk of a fitted model on Dask collections, partition by partition (issue 25).

For a fixed model the worst-case risk over the Wasserstein ball is the one-dimensional problem
(belbasi2023 Observation 1 / Props. 1 and 3 at fixed beta; sun2025 §2.5)

    WC(beta) = min_{lambda >= lambda_min(beta)} F(lambda),
    F(lambda) = lambda eps + sum_n p_n max_k (l_k - lambda c_k),       p_n = w_n / sum_m w_m,

and ``F`` and its subgradient ``eps - sum_n p_n c_{k*_n}`` are sums over the samples.  So each partition ``P`` of the
data binds its rows once (:func:`drokit.models.binding.bind_fitted_model`) and keeps its separation oracle's tables of
this model on its worker (:class:`PartitionLine`); every evaluation of ``F`` ships one number, ``lambda``, to the
partitions and brings back three per partition,

    V_P = sum_{n in P} w_n max_k (l_k - lambda c_k),   C_P = sum_{n in P} w_n c_{k*_n},   L_P = sum_{n in P} w_n l_{k*_n},

which :func:`drokit.certificates.lambda_search.minimize_line` (Kelley's method on the line, finite for this
piecewise-linear ``F``) combines: ``F = lambda eps + sum_P V_P / W``.  The data never leave their partitions.

Certificate (the same two bounds as the in-memory :func:`drokit.worst_case`):

* upper: ``F`` at the best ``lambda`` evaluated (any ``lambda >= lambda_min`` gives an upper bound, weak duality);
* lower: a feasible worst-case distribution.  The bracketing points ``lambda_l <= lambda* <= lambda_r`` have the
  budgets ``C_l >= eps >= C_r`` (their subgradients have opposite signs); every sample moving its mass ``t p_n`` to its
  maximizer at ``lambda_l`` and ``(1 - t) p_n`` to the one at ``lambda_r``, ``t = (eps - C_r) / (C_l - C_r)``, spends
  exactly ``eps`` and has the expected loss ``t L_l + (1 - t) L_r``: a lower bound on the supremum.  At a kink they are
  equal (LP duality).  Budget the mixture leaves (``lambda* = lambda_min``, ``C < eps``) is spent on numerical moves
  along the dual-norm direction, which add ``lambda_min`` per unit in the limit (``attained = False`` in the in-memory
  result, :func:`drokit.certificates.support.worst_case_support`): the bound adds ``lambda_min (eps - C)``.

The worst-case distribution itself (``N`` atoms) is not collected: only the numbers above.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..certificates.lambda_search import LinePoint, minimize_line
from ..dask_inputs import current_client, partition_triples
from ..exceptions import DataError, ParameterError
from ..oracles.rows import lambda_floor, row_losses


class PartitionLine:
    """One partition's share of ``F``: its rows bound under the model, its oracle's tables of the model (module
    docstring).  :meth:`at` returns ``(V_P, C_P, L_P)`` (weighted sums, not normalized); an empty partition adds 0."""

    def __init__(self, model, X, y, sample_weight, ambiguity, schema, loss):
        from ..models.binding import bind_fitted_model
        from ..oracles import make_oracle
        from ..oracles.enumeration import enumerate_configurations
        self.rows = int(len(X))
        if self.rows == 0:
            self.weight, self.lam_min, self.nominal, self.radius = 0.0, None, 0.0, None
            return
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=float).ravel()
        if w is not None and (w.shape[0] != self.rows or not np.all(np.isfinite(w)) or np.any(w < 0)):
            raise DataError(f"sample_weight: a partition of {self.rows} rows has {w.shape[0]} weights, or weights that "
                            f"are negative or not finite")
        self.weight = float(self.rows if w is None else w.sum())
        if self.weight == 0:
            self.lam_min, self.nominal, self.radius = None, 0.0, None
            return
        binding = bind_fitted_model(model, X, y, ambiguity, schema=schema, loss=loss, sample_weight=w,
                                    where="worst_case")
        if binding.moment is not None:
            raise ParameterError("dk.worst_case on Dask collections evaluates Wasserstein balls; an OTMoment set "
                                 "(samples reweighted too) is not distributed yet: pass pandas / numpy data")
        inst = binding.inst.evaluated_at(binding.coef)
        self.inst, self.intercept, self.coef = inst, binding.intercept, binding.coef
        self.radius = float(inst.radius)
        self.lam_min = float(lambda_floor(inst, self.coef))
        nominal = row_losses(inst, enumerate_configurations(inst, nominal_only=True), self.intercept, self.coef)
        self.nominal = self.weight * float(inst.p @ nominal)
        self.oracle = make_oracle(inst, "auto")
        self.fixed = self.oracle.fixed_model(self.intercept, self.coef) if self.radius > 0 else None

    def at(self, lam: float) -> Tuple[float, float, float]:
        if self.rows == 0 or self.weight == 0:
            return 0.0, 0.0, 0.0
        if self.fixed is not None:
            violation, cost = self.fixed.values(lam)
        else:
            sep = self.oracle.separate(self.intercept, self.coef, lam, np.zeros(self.inst.n_samples))
            v = self.weight * float(self.inst.p @ sep.violation)
            c = self.weight * float(self.inst.p[sep.rows.sample] @ sep.rows.cost)
            return v, c, v + lam * c
        v = self.weight * float(self.inst.p @ violation)
        c = self.weight * float(self.inst.p @ cost)
        return v, c, v + lam * c


def _at(line: PartitionLine, lam: float):
    return line.at(lam)


def _summary(line: PartitionLine):
    return line.rows, line.weight, line.lam_min, line.nominal, line.radius


@dataclass
class DaskWorstCase:
    """The worst-case risk of a model on Dask collections (:func:`worst_case_dask`): ``value`` (an upper bound,
    ``F`` at ``lam``), ``lower_bound`` (the expected loss of a feasible distribution), ``gap = value - lower_bound``,
    ``lam``, ``lam_min``, ``radius``, ``nominal_risk``, the numbers of samples and partitions, the evaluations of
    ``F`` (each one pass over the partitions) and the seconds.  The worst-case distribution is not collected."""

    value: float
    lower_bound: float
    lam: float
    lam_min: float
    radius: float
    nominal_risk: float
    n_samples: int
    n_partitions: int
    evaluations: int
    seconds: float

    @property
    def gap(self) -> float:
        return float(self.value - self.lower_bound)

    def summary(self) -> str:
        return (f"worst-case risk : {self.value:.10g}  (nominal {self.nominal_risk:.10g}, radius {self.radius:g})\n"
                f"multiplier      : lam* = {self.lam:.6g}, lam_min = {self.lam_min:.6g}\n"
                f"certificate     : lower {self.lower_bound:.10g} <= WC <= upper {self.value:.10g} (gap {self.gap:.2e})\n"
                f"data            : {self.n_samples:,} samples in {self.n_partitions} partitions, {self.evaluations} "
                f"passes, {self.seconds:.2f} s")


def worst_case_dask(model, X, y, ambiguity=None, *, schema=None, loss=None, sample_weight=None, client=None,
                    tol: float = 1e-10, max_iter: int = 200) -> DaskWorstCase:
    """:func:`drokit.worst_case` on Dask collections (module docstring): ``X`` a Dask DataFrame (categorical columns
    with known categories) or Array, ``y`` and ``sample_weight`` partitioned alike.  With a ``dask.distributed``
    client (``client=`` or the current one) every partition's tables stay on its worker; without one, the local
    scheduler computes the partitions and this process keeps the tables."""
    return worst_case_of_partitions(model, partition_triples(X, y, sample_weight), ambiguity, schema=schema,
                                    loss=loss, client=client, tol=tol, max_iter=max_iter)


def worst_case_of_partitions(model, triples, ambiguity=None, *, schema=None, loss=None, client=None,
                             tol: float = 1e-10, max_iter: int = 200) -> DaskWorstCase:
    """:func:`worst_case_dask` on ``triples = [(X_k, y_k, w_k)]``, the partitions as ``dask.delayed`` objects
    (:func:`drokit.dask_inputs.partition_triples`; the CV estimators pass their held-out rows)."""
    import dask
    t0 = time.perf_counter()
    build = [dask.delayed(PartitionLine)(model, x, yy, w, ambiguity, schema, loss) for x, yy, w in triples]
    client = current_client(client)
    if client is not None:
        lines = client.compute(build)                       # futures: the tables stay with the partitions

        def evaluate(lam):
            return client.gather(client.map(_at, lines, lam=lam, pure=False))
        summaries = client.gather(client.map(_summary, lines, pure=False))
    else:
        lines = dask.compute(*build)

        def evaluate(lam):
            return [line.at(lam) for line in lines]
        summaries = [_summary(line) for line in lines]
    n_samples = int(sum(s[0] for s in summaries))
    total = float(sum(s[1] for s in summaries))
    if n_samples == 0 or total <= 0:
        raise DataError("X has no rows of positive weight: the worst-case risk of an empty sample is undefined")
    used = [s for s in summaries if s[1] > 0]
    lam_min = float(used[0][2])
    eps = float(used[0][4])
    nominal = float(sum(s[3] for s in used)) / total
    if eps == 0 or not np.isfinite(lam_min):
        value = nominal if eps == 0 else np.inf
        return DaskWorstCase(value, nominal if eps == 0 else -np.inf, 0.0 if eps == 0 else lam_min, lam_min, eps,
                             nominal, n_samples, len(summaries), 0, time.perf_counter() - t0)

    def line(lam):
        parts = np.asarray(evaluate(lam), dtype=float).reshape(-1, 3).sum(axis=0) / total
        v, c, ell = parts
        return LinePoint(lam, lam * eps + v, eps - c, (c, ell))

    search = minimize_line(line, lam_min, tol=tol, interval_tol=tol, max_iter=max_iter, lam_max=1e12)
    best = search.best
    lower = _primal_lower_bound(search, eps, lam_min)
    return DaskWorstCase(float(best.value), min(lower, float(best.value)), float(best.lam), lam_min, eps, nominal,
                         n_samples, len(summaries), search.evaluations, time.perf_counter() - t0)


def _primal_lower_bound(search, eps: float, lam_min: float) -> float:
    """The expected loss of the mixture of the bracketing maximizers that spends the budget, plus ``lam_min`` times
    the budget it leaves (module docstring; :func:`drokit.certificates.support.worst_case_support` does the same)."""
    left, right = search.left, search.right
    if left is None:                        # lambda_min optimal: its maximizers, with budget C <= eps
        c, ell = right.data
        return float(ell + (lam_min * max(eps - c, 0.0) if lam_min > 0 else 0.0))
    (c_l, l_l), (c_r, l_r) = left.data, right.data
    t = 0.0 if c_l - c_r <= 1e-300 else min(1.0, max(0.0, (eps - c_r) / (c_l - c_r)))
    used = t * c_l + (1.0 - t) * c_r
    if used > eps:                          # rounding: the right maximizers alone are feasible
        t, used = 0.0, c_r
    return float(t * l_l + (1.0 - t) * l_r + (lam_min * max(eps - used, 0.0) if lam_min > 0 else 0.0))


__all__ = ["DaskWorstCase", "PartitionLine", "worst_case_dask", "worst_case_of_partitions", "current_client"]
