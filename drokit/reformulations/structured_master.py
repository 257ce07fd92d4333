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

import numpy as np

from ..gaps import GAP_FLOOR
from ..instance import DROInstance
from ..oracles.enumeration import concat_rows, enumerate_configurations, unique_rows
from .barrier_master import CENTERING_MAX_STEPS, BarrierMasterResult, barrier_master
from .level_max import level_max_features
from .phase_one import phase_one_applies

#: Newton steps of one centering after which the plain attempt gives up where the level-max retry follows (the
#: retry, and the plain attempt on data without features of 3+ levels, take :data:`.barrier_master.CENTERING_MAX_STEPS`).
#: With 100 and its restarts the plain attempt spent 15 s on census-like kappa = inf before handing over (22.5 / 19.7 s
#: fits against 7-10 s); with 100 and no restarts, sun2025 credit-approval at unit weights, which the plain attempt
#: certifies after a restart (0.65 s), went to the retry, whose repaired bound stalls there (features A4 and A5 are
#: collinear: a null direction the repair cannot move), and to Clarabel (1.8 s)
PLAIN_CENTERING_STEPS = 40
#: the first barrier weight after a phase 1 stopped by its solve limit is this times ``tau / N``: its point is farther
#: from the optimum (census-like seed 20, kappa = inf, radius 0.1: 1.6 % above; the 300-level table seed 20, kappa =
#: inf, radius 0.01: 4.8 %), and at ``tau / N`` the level-max master took 100 Newton steps to center there and gave
#: up (then Clarabel: 19.5 s); 10x certified in 9 centerings (5.5 s in all), 100x alike
UNCONVERGED_MU_FACTOR = 10.0


def structured_master(inst: DROInstance, oracle, rows, first, *, tol: float,
                      log: Optional[Callable[[str], None]] = None, control=None) -> BarrierMasterResult:
    """The barrier master from phase 1's result ``first`` (its point, exact value and final temperature ``tau``;
    barrier weight ``tau / N``) over ``rows``, then with level-max columns where it gave up (module docstring).
    Returns one :class:`~.barrier_master.BarrierMasterResult`: the better point, the better certified lower bound
    with its dual point, and the work of both attempts."""
    mu = first.tau / inst.n_samples * (1.0 if first.converged else UNCONVERGED_MU_FACTOR)
    fallback = level_max_features(inst).size > 0

    def attempt(**options) -> BarrierMasterResult:     # from phase 1's point, exact value and rows
        return barrier_master(inst, oracle, rows, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                              mu=mu, tol=tol, log=log, control=control, **options)

    if fallback and not first.converged:
        # a phase 1 that churned on levels (it stops by its solve limit on wide many-level data): the plain rows
        # gave up where this was measured (census-like and the 300-level table at seed 20, kappa = inf),
        # after 2-4 s; the level-max columns certify from the same start
        return attempt(level_max=True)
    plain = attempt(kink_search=not fallback,
                    centering_steps=PLAIN_CENTERING_STEPS if fallback else CENTERING_MAX_STEPS)
    if plain.certified or not fallback or (control is not None and control.should_stop()):
        return plain
    if log is not None:
        log("barrier master: again with level-max columns, from phase 1's point and rows")
    # from phase 1's point and rows, not the plain attempt's: its rows include those of the points it wandered to
    # (census-like, kappa = inf, radius 0.01: from them the retry gave up too, from phase 1's it certifies)
    retry = attempt(level_max=True)
    point = retry if retry.upper_bound <= plain.upper_bound else plain
    bound = retry if retry.lower_bound >= plain.lower_bound else plain
    # certified by the retry, or by the better point and the better bound together (both exact)
    joint = point.upper_bound - bound.lower_bound <= tol * max(abs(point.upper_bound), GAP_FLOOR)
    return dataclasses.replace(point, lower_bound=bound.lower_bound, dual=bound.dual, certified=retry.certified or joint,
                               newton_steps=plain.newton_steps + retry.newton_steps,
                               centerings=plain.centerings + retry.centerings,
                               oracle_calls=plain.oracle_calls + retry.oracle_calls,
                               seconds=plain.seconds + retry.seconds, history=plain.history + retry.history)


#: the barrier weight of :func:`certificate_polish`, times ``1 / N``: the model is (near) optimal, so the central path
#: is entered close to its end.  On the 300-level table (5,000 rows, kappa = inf, radius 0.1) from Clarabel's model:
#: 1e-4 certified in 4 centerings, 72 Newton steps, 1.9 s; 1e-6 in 3 centerings, 97 steps, 2.6 s
POLISH_MU = 1e-4


def certificate_polish(inst: DROInstance, oracle, intercept: float, coef, lam: float, upper: float, *,
                       rows=None, tol: float, log: Optional[Callable[[str], None]] = None,
                       control=None) -> Optional[BarrierMasterResult]:
    """A certified dual point near a model another method found (a conic master's, whose dual objective is a bound
    only up to its solver's residuals), when the Lagrangian bound at the model's own worst-case distribution does
    not reach it: the barrier master (with level-max columns where a mutable categorical feature has three levels
    or more under the mismatch cost) from the model ``(intercept, coef, lam)`` of exact value ``upper``, over
    ``rows`` (default: the nominal rows and the oracle's maximizers at the model), until its own certified gap is
    within ``tol``.  Its bound is an explicit dual point evaluated exactly
    (:func:`drokit.certificates.lagrangian.lagrangian_bound`), valid whatever the model.

    Why it is needed: at an optimum with *tied levels* (rare levels of a many-level feature whose coefficients
    meet at the feature's maximum or minimum), the KKT multipliers spread every sample's change over the tied
    levels, while the oracle's maximizer names one level per sample: the Lagrangian bound at the worst-case
    distribution then stalls far below (the 300-level table at 300 rows: 0.0046 against an optimum of 0.3251),
    and the conic master's dual objective was the only bound reported.  The level-max columns'
    central-path multipliers are that spread (:mod:`.level_max`, "Certificate").

    Returns ``None`` where the barrier master does not apply (adversarial losses, penalties, an infinite
    Lipschitz constant)."""
    if not phase_one_applies(inst):
        return None
    coef = np.asarray(coef, dtype=float)
    if rows is None:
        at_model = oracle.separate(intercept, coef, lam, np.zeros(inst.n_samples)).rows
        rows = unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True), at_model]))
    return barrier_master(inst, oracle, rows, intercept, coef, lam, upper=upper, mu=POLISH_MU / inst.n_samples,
                          tol=tol, log=log, control=control, level_max=level_max_features(inst).size > 0)
