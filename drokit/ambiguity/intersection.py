"""Intersections of two Wasserstein balls around different empirical distributions (selvi2025 thesis §4.4).

``B_eps(P_N) ∩ B_eps_hat(P_hat)``: the deployment distribution is close to the training data AND to an
auxiliary sample (synthetic, shifted or out-of-domain data).  The set is non-empty iff
``eps + eps_hat >= W(P_N, P_hat)`` (triangle inequality), which drokit checks with an exact transport LP
(:func:`drokit.wasserstein_distance`) before anything else: the static program below returns a finite
number even for an empty intersection (spec §2.5.4).

The exact problem is NP-hard even for one sample per ball (Prop. 18).  drokit compiles the static
program of Theorem 11 (with FREE ``s, s_hat``: the thesis's ``s, s_hat >= 0`` is not without loss of
generality for an intersection, spec §2.5.2), which is a conservative UPPER bound on the worst-case risk,
never reported as exact, and brackets the fitted model's worst-case risk from below with a finite-support
LP (``result_.lower_bound``).
"""

from .wasserstein import Intersection

__all__ = ["Intersection"]
