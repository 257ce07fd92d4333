"""The cutting plane's structured attempt at the restricted master, before any conic master.

:func:`.barrier_master.barrier_master` runs first on configuration rows as they are (each names its levels).
Where it gives up and the data have a mutable categorical feature of three levels or more (under the mismatch
cost), it runs again with level-max columns (:mod:`.level_max`: rows follow each feature's best level), from phase
1's point and rows again.  Level-max columns widen each Newton step's Gram
product (synthetic 10 + 10 at N = 100,000, 3-8 levels: 61 -> 81 columns, the barrier master 1.5-2.3 s -> 2.1-2.8 s,
certified either way), so they run where plain rows fail: census-like data (8 features of 2-42 levels), where
the plain master's working set lacked the rows of the levels that became the best and the conic masters then took
35-42 s of a 43-52 s fit.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from ...models.instance import DROInstance
from .barrier_master import GAP_FLOOR, MAX_RESTARTS, BarrierMasterResult, barrier_master
from .level_max import level_max_features

#: restarts of the plain attempt where the level-max retry follows (a batch of new rows of more than a tenth of the
#: samples is the sign of churn between levels, which the retry handles).  Census-like, kappa = inf, radius 0.01 /
#: 0.1: 22.5 / 19.7 s with 2 restarts (each a 100-step centering), 5.5 / 9.5 s with none.  The price: sun2025
#: credit-approval at unit weights, which the plain attempt certified after a restart (0.65 s), now goes to the
#: retry, whose repaired bound stalls at a 3.6e-2 gap (two collinear features, A4 and A5, leave a null direction
#: the repair cannot move), and then to two Clarabel masters (1.8 s)
PLAIN_RESTARTS = 0


def structured_master(inst: DROInstance, oracle, rows, first, *, tol: float,
                      log: Optional[Callable[[str], None]] = None, control=None) -> BarrierMasterResult:
    """The barrier master from phase 1's result ``first`` (its point, exact value and final temperature ``tau``;
    barrier weight ``tau / N``) over ``rows``, then with level-max columns where it gave up (module docstring).
    Returns one :class:`~.barrier_master.BarrierMasterResult`: the better point, the better certified lower bound
    with its dual point, and the work of both attempts."""
    mu = first.tau / inst.n_samples
    fallback = level_max_features(inst).size > 0
    plain = barrier_master(inst, oracle, rows, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                           mu=mu, tol=tol, log=log, control=control,
                           max_restarts=PLAIN_RESTARTS if fallback else MAX_RESTARTS)
    if plain.certified or not fallback or (control is not None and control.should_stop()):
        return plain
    if log is not None:
        log("barrier master: again with level-max columns, from phase 1's point and rows")
    # from phase 1's point and rows, not the plain attempt's: its rows include those of the points it wandered to
    # (census-like, kappa = inf, radius 0.01: from them the retry gave up too, from phase 1's it certifies)
    retry = barrier_master(inst, oracle, rows, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                           mu=mu, tol=tol, log=log, control=control, level_max=True)
    point = retry if retry.upper_bound <= plain.upper_bound else plain
    bound = retry if retry.lower_bound >= plain.lower_bound else plain
    # certified by the retry, or by the better point and the better bound together (both exact)
    joint = point.upper_bound - bound.lower_bound <= tol * max(abs(point.upper_bound), GAP_FLOOR)
    return dataclasses.replace(point, lower_bound=bound.lower_bound, dual=bound.dual, certified=retry.certified or joint,
                               newton_steps=plain.newton_steps + retry.newton_steps,
                               centerings=plain.centerings + retry.centerings,
                               oracle_calls=plain.oracle_calls + retry.oracle_calls,
                               seconds=plain.seconds + retry.seconds, history=plain.history + retry.history)
