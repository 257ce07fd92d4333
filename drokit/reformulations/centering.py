"""Centering of the barrier master: damped Newton on ``phi_mu`` (:class:`.epigraph.EpigraphBarrier`), with a search
along Newton components that reverse from step to step (the kinks of rarely used parameters).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .epigraph import EpigraphBarrier, SampleGroups, epigraph_levels

#: centering stops when half the squared Newton decrement is below this times ``mu`` times the number of
#: samples (the central path's duality gap is ``mu`` times the number of terms)
CENTERING_RTOL = 1e-10
#: ... but never below this times ``max(1, |f_mu|)``: a decrease the value's rounding cannot show (at mu = 1e-12,
#: N = 100,000 the relative target was 1e-17; the line search then halved every step 40 times, 40 steps, 64 s)
DECREMENT_FLOOR = 1e-14
#: full Newton steps a centering takes at most once its decrement is below that floor
POLISH_STEPS = 3
#: a centering step that the line search cut below this (Armijo's ``t``) and that reversed the sign of the previous
#: step's components of at least ``ZIGZAG_SHARE`` of its largest is followed by a search along those components
#: (:func:`kink_search`); ``KINK_EVALS`` golden-section evaluations (0.618^40: 4e-9 of the bracket)
ZIGZAG_STEP = 0.1
ZIGZAG_SHARE = 0.25
KINK_EVALS = 40
#: ... when those components touch at most this fraction of the terms (the kinks of rarely used parameters; the
#: search on binary features touching half the samples made sun2025 spect at unit weights 0.29 -> 0.81 s)
KINK_TERMS = 0.1


def reversed_components(previous: np.ndarray, dtheta: np.ndarray) -> np.ndarray:
    """The parameters (not ``lambda``) whose Newton component is at least :data:`ZIGZAG_SHARE` of the largest and of
    the opposite sign to the previous step's."""
    d = dtheta[:-1]
    largest = float(np.max(np.abs(d), initial=0.0))
    if largest == 0.0:
        return np.zeros(0, dtype=int)
    return np.flatnonzero((np.abs(d) >= ZIGZAG_SHARE * largest) & (d * previous[:-1] < 0))


def restricted_line(master: EpigraphBarrier, theta: np.ndarray, u: np.ndarray, direction: np.ndarray,
                    mu: float, terms: Optional[np.ndarray] = None) -> Callable[[float], float]:
    """``x -> phi_mu(theta + x direction) - C`` for a ``direction`` that moves parameters only (``lambda`` fixed),
    ``C`` a constant, evaluated on the samples those parameters touch (:meth:`EpigraphBarrier.terms_touching`):
    every other sample's epigraph level and slacks stay as they are.  ``u`` holds the terms' margins at ``theta``
    (:meth:`EpigraphBarrier.settled`'s); ``terms``: those touched terms when the caller has them.  Cost: the touched
    terms, not the working set."""
    columns = np.flatnonzero(direction[:-1])
    if terms is None:
        terms = master.terms_touching(columns)
    seg = master.segment[terms]
    starts = np.flatnonzero(np.r_[True, np.diff(seg) != 0]) if terms.size else np.zeros(0, dtype=int)
    groups = SampleGroups.of(starts, terms.size, master.p[seg[starts]])
    u0 = u[terms]
    du = master.sigma[terms] * (master.design(terms)[:, columns] @ direction[columns]) if terms.size else u0
    cost = theta[-1] * master.cost[terms]

    def restricted(x: float) -> float:
        point = theta + x * direction
        if not master.barrier.feasible(point) or (master.box is not None and not master.box.feasible(point)):
            return np.inf
        extra = master.barrier.value(point, mu) + master._prox(point)
        if not terms.size:
            return float(extra)
        top, slack = epigraph_levels(groups, master.term_values(u0 + x * du, terms) - cost, mu)
        return float(groups.p @ top - mu * np.sum(np.log(slack)) + extra)

    return restricted


def kink_search(master: EpigraphBarrier, theta: np.ndarray, value: float, s: np.ndarray, at: tuple,
                columns: np.ndarray, dtheta: np.ndarray, t: float, mu: float):
    """Minimize ``phi_mu`` along the reversed components ``c`` of the Newton direction (``dtheta`` on ``columns``,
    0 elsewhere): ``theta + x c`` for ``x`` in ``[-2t, 2t]`` by golden section on :func:`restricted_line` (convex in
    ``x``), then one full evaluation that accepts the point when it is lower.  Returns ``(theta, s, at, value)``.

    Why: a rare level's coefficient (a handful of samples) is nearly flat in ``phi_mu`` except within ``mu / p_n`` of
    where its samples' rows tie, a kink of width ~1e-6 at ``mu`` 3e-11, N = 32,561.  Newton from outside the kink
    sees almost no curvature there and overshoots; the line search cuts the whole step to 0.4-0.8 % and the next
    direction points back: census-like data, kappa = 1, radius 0.01, ran 80 such steps in one centering (the retry
    with level-max columns gave up at 100 and Clarabel took 35 s).  Inside the kink the coefficient's curvature is
    large and Newton leaves it alone."""
    direction = np.zeros_like(theta)
    direction[columns] = dtheta[columns]
    terms = master.terms_touching(columns)
    if terms.size > KINK_TERMS * master.n_terms:
        return theta, s, at, value         # not a rare parameter's kink: a search would cost many full evaluations
    restricted = restricted_line(master, theta, at[1], direction, mu, terms)
    golden = (np.sqrt(5.0) - 1.0) / 2.0
    lo, hi = -2.0 * t, 2.0 * t
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fa, fb = restricted(a), restricted(b)
    for _ in range(KINK_EVALS):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - golden * (hi - lo)
            fa = restricted(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + golden * (hi - lo)
            fb = restricted(b)
    x = a if fa <= fb else b
    trial, trial_s, trial_at = master.settled(theta + x * direction, mu)
    if trial < value:
        return theta + x * direction, trial_s, trial_at, trial
    return theta, s, at, value


def center(master: EpigraphBarrier, theta: np.ndarray, mu: float, budget: int, kinks: bool = True):
    """Damped Newton steps on ``phi_mu(theta)`` (:meth:`EpigraphBarrier.settled`; backtracking line search,
    Armijo with 1/4) until half the squared decrement is below ``CENTERING_RTOL mu N`` or below what the value
    can resolve (``DECREMENT_FLOOR |value|``); returns ``(theta, s*, steps, w, slopes)``."""
    n = master.inst.n_samples
    value, s, at = master.settled(theta, mu)
    steps = polished = 0
    previous = None
    while True:
        dtheta, dec2, w, slope = master.direction(theta, s, mu, at)
        if dec2 / 2 <= CENTERING_RTOL * mu * n or steps >= budget or not np.isfinite(dec2):
            return theta, s, steps, w, slope
        if dec2 / 2 <= DECREMENT_FLOOR * max(1.0, abs(value)):
            # below what the value resolves, Armijo cannot judge a step; near the center Newton's full step is
            # the right one (the dual point's lambda-stationarity, which the Lagrangian bound needs, is set here)
            if polished >= POLISH_STEPS:
                return theta, s, steps, w, slope
            trial, trial_s, trial_at = master.settled(theta + dtheta, mu)
            if not trial <= value + 1e3 * DECREMENT_FLOOR * max(1.0, abs(value)):
                return theta, s, steps, w, slope
            theta, s, at, value = theta + dtheta, trial_s, trial_at, trial
            steps += 1
            polished += 1
            continue
        t = 1.0
        while t > 1e-12:
            trial, trial_s, trial_at = master.settled(theta + t * dtheta, mu)
            if trial <= value - 0.25 * t * dec2:
                break
            t *= 0.5
        if t <= 1e-12:
            return theta, s, steps, w, slope
        theta, s, at, value = theta + t * dtheta, trial_s, trial_at, trial
        steps += 1
        flipped = (reversed_components(previous, dtheta) if kinks and t < ZIGZAG_STEP and previous is not None
                   else np.zeros(0, int))
        if flipped.size:
            theta, s, at, value = kink_search(master, theta, value, s, at, flipped, dtheta, t, mu)
        previous = dtheta
