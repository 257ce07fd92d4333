"""Multilevel warm start of phase 1: the same DRO problem on a random subsample first.

Phase 1 (:mod:`.phase_one`) cold-starts from ``beta = 0`` with the nominal rows only.  Its first smoothed
masters then see no perturbed row at all, jump to the plain (non-robust) fit and meet the exact objective far
above their model there: on synthetic 10 + 10 with N = 100,000 (``kappa = inf``, radius 0.1) the jump's exact
value was 1.34 against 0.54 at the optimum, and the oracle's ~91,000 rows there doubled the working set that
every later Newton step pays for (2.2 N rows carried, 1.1 N near-active at the end).

The empirical DRO objective ``F_N(theta) = lambda eps + sum_n p_n max_k (l_k - lambda c_k)`` is an average
over the samples, so its minimizer on a uniform subsample of ``M`` rows (the weights ``p`` renormalized) is
close to the full one (statistically, ``O(1/sqrt(M))``).  Phase 1 on the full data then starts from that
point and from the oracle's rows there (the near-active set of a nearby point), at a smaller first temperature.
Applied recursively (``N -> N/10 -> ...`` down to :data:`SUBSAMPLE_FROM`), the levels cost a geometric series:
about a tenth more than the top level alone.  The subsample only moves the start: the certificate is computed on
the full data as before, so a poor subsample costs time, never correctness.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional

import numpy as np

from ..instance import DROInstance
from .phase_one import PhaseOneResult, phase_one

#: phase 1 on at least this many samples starts from the point of a subsample of ``N / SUBSAMPLE_RATIO`` rows
SUBSAMPLE_FROM = 20_000
SUBSAMPLE_RATIO = 10
#: the first temperature (relative) of a warm-started phase 1, and the last one of a subsample's phase 1 (its
#: point only seeds the next level, whose own statistical error is far above ``1e-3``)
WARM_TAU = 1e-3
#: the subsample is drawn with this seed: fits are deterministic
SUBSAMPLE_SEED = 0


def subsample(inst: DROInstance, size: int, seed: int = SUBSAMPLE_SEED) -> DROInstance:
    """``inst`` restricted to ``size`` samples drawn uniformly without replacement (in their original order),
    with the sample weights renormalized to sum to 1 (uniform stays uniform).  Samples of weight 0 (they add
    nothing to the objective) are never drawn; when fewer than ``size`` have a positive weight, all of those."""
    rng = np.random.default_rng(seed)
    if inst.sample_weight is None:
        pool, weight = np.arange(inst.n_samples), None
    else:
        weight = np.asarray(inst.sample_weight, dtype=float)
        pool = np.flatnonzero(weight > 0)
    index = np.sort(rng.choice(pool, size=min(size, pool.size), replace=False))
    sub = inst.take_samples(index)
    if weight is not None:
        sub = dataclasses.replace(sub, sample_weight=weight[index] / weight[index].sum())
    return sub


def subsample_point(inst: DROInstance, oracle, *, log: Optional[Callable[[str], None]] = None,
                    control=None) -> Optional[np.ndarray]:
    """``theta = (beta_0, beta, lambda)`` of a phase 1 on a subsample of ``inst`` (itself warm-started the same
    way), or ``None`` below :data:`SUBSAMPLE_FROM` samples or when the subsample's phase 1 found nothing usable."""
    n = inst.n_samples
    if n < SUBSAMPLE_FROM:
        return None
    sub = subsample(inst, n // SUBSAMPLE_RATIO)
    if sub.is_classification and np.unique(sub.y).size < 2:
        return None
    result = warm_phase_one(sub, type(oracle)(sub), tau_min=WARM_TAU, log=log, control=control,
                            stage=f"phase 1 on a subsample of {sub.n_samples:,}")
    if log is not None:
        log(f"warm start: phase 1 on {sub.n_samples:,} of {n:,} samples, value {result.upper_bound:.9f} "
            f"({result.rounds} solves, {result.seconds:.2f} s)")
    if not np.isfinite(result.upper_bound):
        return None
    offset = 1 if inst.fit_intercept else 0
    return np.r_[[result.intercept] if offset else [], result.coef, result.lam]


def warm_phase_one(inst: DROInstance, oracle, *, log: Optional[Callable[[str], None]] = None, control=None,
                   warm: bool = True, start: Optional[np.ndarray] = None, **options) -> PhaseOneResult:
    """:func:`.phase_one.phase_one`, started from ``start`` (``theta = (beta_0, beta, lambda)`` of a nearby problem on
    the same data, e.g. the previous radius of a path; ignored when its length is not this instance's) or else from
    :func:`subsample_point` when ``warm`` and ``inst`` is large enough, at the first temperature :data:`WARM_TAU`;
    ``options`` go to ``phase_one``."""
    t0 = time.perf_counter()
    dim = int(inst.fit_intercept) + inst.schema.n_encoded + 1             # theta = (beta_0, beta, lambda)
    if start is not None and np.size(start) != dim:
        if log is not None:
            log(f"warm start: a start of {np.size(start)} numbers for {dim} parameters is ignored")
        start = None
    if start is not None:
        if log is not None:
            log("warm start: phase 1 from the given point")
        start = np.asarray(start, dtype=float)
    elif warm:
        start = subsample_point(inst, oracle, log=log, control=control)
    if start is None:
        return phase_one(inst, oracle, log=log, control=control, **options)
    options = {**options, "start": start, "tau0": max(WARM_TAU, options.get("tau_min", 0.0))}
    before = time.perf_counter() - t0
    result = phase_one(inst, oracle, log=log, control=control, **options)
    return dataclasses.replace(result, seconds=result.seconds + before)     # the subsample levels included
