"""The finite dual program shared by the exact reformulations.

For a set of configuration rows ``k = (n_k, z_k, flip_k)`` with costs ``c_k = D(z_k, z_{n_k}) + kappa flip_k``
(see :mod:`drokit.oracles.enumeration`), this module assembles (belbasi2023 Props. 1 and 3; selvi2022
Thm 1; sun2025 Thm 1 / problem (3)):

    min   lambda * eps + (1/N) sum_n s_n
    s.t.  L(u_k) <= s_{n_k} + lambda * c_k                     for every row k
          lip(L) * ||Gamma^{-1} beta_x||_* <= lambda
          lip(L) <= lambda * kappa                             (regression with finite kappa only)
          lambda >= 0

with ``u_k = (1 - 2 flip_k) y_{n_k} f(x_{n_k}, z_k)`` (classification) or ``u_k = f(x_{n_k}, z_k) - y_{n_k}``
(regression), ``f(x, z) = beta_0 + beta_x^T x + beta_z^T dummies(z)``.  The supremum over the numerical
features has been taken in closed form (belbasi2023 Lemma 1, sun2025 Lemma 2): it equals the nominal loss
when the dual-norm constraint holds.  With all rows of ``Z`` this is exact; with a subset it is a
relaxation (a lower bound), which is what a cutting-plane master solves.

With ``radius_zero=True`` the program is plain ERM ``min (1/N) sum_n L(u_n)`` over the nominal rows.
"""

from __future__ import annotations

import time
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows
from ..oracles.design import row_design  # noqa: F401  (importable from here, as before)
from ..conic.builder import Affine, ProgramBuilder, linear_score
from ..conic.program import ConicProgram
from .budget_cuts import add_budget_cuts


class CompiledProgram:
    """A conic program plus what is needed to read the model back from its solution.

    ``program`` may be given as a zero-argument function that builds it: it is then built on first use
    (the closed form's program is not needed when the structured barrier solver fits it,
    :mod:`drokit.solvers.barrier`, and at 100,000 x 50 it takes longer to assemble than that solve)."""

    def __init__(self, program: Union[ConicProgram, Callable[[], ConicProgram]], method: str,
                 method_reason: str, n_rows: int, info: Optional[Dict[str, object]] = None):
        self._program = program
        self.method = method
        self.method_reason = method_reason
        #: configuration rows in the program (for the cutting plane: its first master; box: its rows (3);
        #: graph: its loss terms)
        self.n_rows = n_rows
        self.info: Dict[str, object] = {} if info is None else info
        #: seconds spent building a lazily given program (0 until it is built)
        self.build_time = 0.0

    @property
    def program(self) -> ConicProgram:
        if callable(self._program):
            start = time.perf_counter()
            self._program = self._program()
            self.build_time = time.perf_counter() - start
        return self._program

    @program.setter
    def program(self, value: ConicProgram) -> None:
        self._program = value

    @property
    def is_built(self) -> bool:
        """Whether the conic program has been assembled (see the class docstring)."""
        return not callable(self._program)


def build_dual_program(inst: DROInstance, rows: ConfigurationRows, *, radius_zero: bool = False,
                       box: Optional[Tuple[np.ndarray, np.ndarray]] = None, budget=None):
    """Assemble the program above; returns the :class:`ConicProgram`.

    ``box = (lo, hi)`` adds ``lo <= (coef, intercept) <= hi`` (arrays over the encoded coefficients, then
    the intercept if fitted).  The cutting plane uses it for the coefficient box that keeps early masters
    bounded and for its trust region; a master whose box is inactive at its optimum has the same optimal
    value as without the box, by convexity.  ``budget`` (:class:`.budget_cuts.BudgetCuts`) adds the
    cutting plane's budget cuts, each covering every configuration with a given number of changes.
    """
    pb = ProgramBuilder()
    coef, intercept, s = declare_parameters(pb, inst)
    if box is not None:
        params = Affine.vstack([coef] + ([intercept] if intercept is not None else []))
        lo, hi = (np.asarray(b, dtype=float) for b in box)
        pb.add_nonneg(Affine.vstack([params - lo, hi - params]))

    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    u = linear_score(coef, intercept, row_design(inst, rows)) * sigma - shift
    t = s[rows.sample]
    if radius_zero:
        inst.loss.epigraph(pb, u, t)
        if inst.fixed_zero.size:
            pb.add_zero(coef[inst.fixed_zero])
        pb.minimize(expected(s, inst) + penalty_term(pb, inst, coef))
        return pb.build()

    lam = pb.var("lambda", 1)
    inst.loss.epigraph(pb, u, t + lam.repeat(rows.size) * rows.cost)
    if budget is not None:
        add_budget_cuts(pb, inst, coef, intercept, s, lam, budget)
    finish_dual_program(pb, inst, coef, s, lam)
    return pb.build()


def declare_parameters(pb: ProgramBuilder, inst: DROInstance) -> Tuple[Affine, Optional[Affine], Affine]:
    """The variables every exact program shares, in this order: ``coef`` (encoded features),
    ``intercept`` (if fitted) and the per-sample epigraph ``s`` (and, for an adversarial loss, its attack
    shift ``attack``); the result reader finds them by name."""
    coef = pb.var("coef", inst.schema.n_encoded)
    intercept = pb.var("intercept", 1) if inst.fit_intercept else None
    s = pb.var("s", inst.n_samples)
    declare = getattr(inst.loss, "declare", None)
    if declare is not None:  # an adversarial loss: its attack shift tau >= alpha ||beta_x||_* (thesis Obs. 7)
        declare(pb, coef[np.arange(inst.n_numerical)])
    return coef, intercept, s


def finish_dual_program(pb: ProgramBuilder, inst: DROInstance, coef: Affine, s: Affine, lam: Affine) -> None:
    """The constraints on ``lambda`` and the objective shared by every exact reformulation
    (belbasi2023 Props. 1 and 3, Lemmas 1-3):

        lip(L) ||Gamma^{-1} beta_x||_* <= lambda,   lip(L) <= lambda kappa (regression, finite kappa),
        lambda >= 0,   minimize  lambda eps + sum_n p_n s_n [+ gamma sum_j r_j,  -r <= beta <= r]

    (``p_n = 1/N`` unless sample weights are given; the bracket is the lasso term ``gamma ||beta||_1``
    when ``inst.l1_penalty = gamma > 0``, selvi2022 §4.2, plus ``alpha ||beta||_2^2`` for
    ``inst.l2_penalty``, :func:`penalty_term`), and ``beta_j = 0`` for ``j`` in ``inst.fixed_zero`` (the coefficients of features that change for
    free, :meth:`~drokit.instance.DROInstance.fitting_view`).
    """
    lip = float(inst.loss.lipschitz)
    n = inst.n_numerical
    if n and np.any(np.isfinite(inst.metric.gamma)):  # (immutable columns are not constrained; a loss with
        # lip = inf reaches here only with every numerical column immutable: DROInstance.fitting_view)
        inst.metric.numerical.add_dual_norm_leq(pb, coef[np.arange(n)] * lip, lam, inst.metric.gamma)
    if inst.fixed_zero.size:
        pb.add_zero(coef[inst.fixed_zero])
    if not inst.is_classification and np.isfinite(inst.metric.kappa):
        pb.add_nonneg(lam * inst.metric.kappa - lip)
    pb.add_nonneg(lam)
    pb.minimize(lam * inst.radius + expected(s, inst) + penalty_term(pb, inst, coef))


def penalty_term(pb: ProgramBuilder, inst: DROInstance, coef: Affine):
    """The regularizer ``gamma ||beta||_1 + alpha ||beta||_2^2`` as an affine objective term (0 without one):

        gamma sum_j r_j,  -r <= beta <= r;        2 alpha q,  ||(beta, q - 1/2)||_2 <= q + 1/2
        (i.e. ||beta||_2^2 / 2 <= q, one second-order cone)."""
    term = 0.0
    if inst.l1_penalty:
        r = pb.aux("l1_r", coef.size)
        pb.add_nonneg(Affine.vstack([r - coef, r + coef]))
        term = term + r.sum() * float(inst.l1_penalty)
    if inst.l2_penalty:
        q = pb.aux("l2_q", 1)
        pb.add_norm2_leq(Affine.vstack([coef, q - 0.5]), q + 0.5)
        term = term + q * (2.0 * float(inst.l2_penalty))
    return term


def expected(s: Affine, inst: DROInstance) -> Affine:
    """``sum_n p_n s_n``: the expectation under the nominal distribution (``(1/N) sum_n s_n`` unweighted)."""
    if not inst.weighted:
        return s.sum() * (1.0 / inst.n_samples)
    return s.premultiply(sp.csr_matrix(inst.p.reshape(1, -1)))
