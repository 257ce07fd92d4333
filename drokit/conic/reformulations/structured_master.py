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
from .barrier_master import CENTERING_MAX_STEPS, GAP_FLOOR, BarrierMasterResult, barrier_master
from .level_max import level_max_features

#: Newton steps of one centering after which the plain attempt gives up where the level-max retry follows (the
#: retry, and the plain attempt on data without features of 3+ levels, take :data:`.barrier_master.CENTERING_MAX_STEPS`).
#: With 100 and its restarts the plain attempt spent 15 s on census-like kappa = inf before handing over (22.5 / 19.7 s
#: fits against 7-10 s); with 100 and no restarts, sun2025 credit-approval at unit weights, which the plain attempt
#: certifies after a restart (0.65 s), went to the retry, whose repaired bound stalls there (features A4 and A5 are
#: collinear: a null direction the repair cannot move), and to Clarabel (1.8 s)
PLAIN_CENTERING_STEPS = 40


def structured_master(inst: DROInstance, oracle, rows, first, *, tol: float,
                      log: Optional[Callable[[str], None]] = None, control=None) -> BarrierMasterResult:
    """The barrier master from phase 1's result ``first`` (its point, exact value and final temperature ``tau``;
    barrier weight ``tau / N``) over ``rows``, then with level-max columns where it gave up (module docstring).
    Returns one :class:`~.barrier_master.BarrierMasterResult`: the better point, the better certified lower bound
    with its dual point, and the work of both attempts."""
    mu = first.tau / inst.n_samples
    fallback = level_max_features(inst).size > 0
    plain = barrier_master(inst, oracle, rows, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                           mu=mu, tol=tol, log=log, control=control, kink_search=not fallback,
                           centering_steps=PLAIN_CENTERING_STEPS if fallback else CENTERING_MAX_STEPS)
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
