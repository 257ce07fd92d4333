"""Certified lower bounds of a fitted model: moved to :mod:`drokit.certificates.lower_bound` (the bound at the
worst-case distribution, the KKT multiplier program) and :mod:`drokit.certificates.lagrangian` (the Lagrangian of a
repaired dual point, with its budget in :mod:`drokit.certificates.budget`, its penalty in
:mod:`drokit.certificates.penalty` and its repair in :mod:`drokit.certificates.repair`), below the methods that use
them; the names stay importable from here."""

from ..certificates.budget import attack_offset
from ..certificates.lagrangian import KINK_RTOL, MASS_DROP, SMOOTH_BAND, LowerBound, lagrangian_bound
from ..certificates.lower_bound import CANDIDATE_RTOLS, KKT_MAX_ROWS, certified_lower_bound, kkt_multipliers
from ..certificates.penalty import penalty_gradient, penalty_split, penalty_zeros
from ..certificates.repair import BVLS_MAX_ROWS, RESIDUAL_RTOL, SPARSE_GRAM_DENSITY
from ..oracles.rows import FractionalRows

__all__ = ["certified_lower_bound", "kkt_multipliers", "CANDIDATE_RTOLS", "KKT_MAX_ROWS", "LowerBound",
           "lagrangian_bound", "attack_offset", "penalty_gradient", "penalty_split", "penalty_zeros", "FractionalRows",
           "BVLS_MAX_ROWS", "KINK_RTOL", "MASS_DROP", "RESIDUAL_RTOL", "SMOOTH_BAND", "SPARSE_GRAM_DENSITY"]
