r"""Polynomial-size exact reformulation for piecewise-affine losses and ``p = 1`` (the "box" method).

Setting (belbasi2023 Props. 2 and 4 with unbounded numerical support; the note's §C3; selvi2025
thesis §3.3, Prop 10 and its [derived] bullets).  The loss is piecewise affine,
``L(u) = max_j a_j u + b_j`` (:attr:`drokit.losses.Loss.pieces`), and the categorical cost has
exponent ``p = 1``, i.e. it is additive over features:

    D(z, z_n) = sum_m delta_m 1[z_m != z_{n,m}]          (delta_m = inf: feature m is immutable).

Derivation
----------
The exact finite program of :mod:`.dual` (belbasi2023 Obs. 1 / Props. 1, 3; sun2025 Thm 1) asks, for
every sample ``n``, label family ``flip`` and configuration ``z`` of the mutable features,

    L(u_n(z, flip)) - lambda (D(z, z_n) + kappa flip) <= s_n,                                   (1)

with ``u_n = sigma_n f(x_n, z) - r_n``: ``sigma_n = +-y_n, r_n = 0`` (classification; ``-y_n`` is the
flipped label, present only for finite kappa) or ``sigma_n = 1, r_n = y_n`` (regression, where the label
cost enters only through ``lip(L) <= lambda kappa``; belbasi2023 Prop. 3 and the proof of Lemma 3).
The supremum over the numerical features is already taken in closed form by the dual-norm constraint
``lip(L) ||Gamma^{-1} beta_x||_* <= lambda`` (belbasi2023 Lemma 1).

1. *Pieces.* Since ``L`` is a maximum of affine functions, (1) holds for all ``z`` iff for every piece j

       max_z [ a_j sigma_n f(x_n, z) - lambda D(z, z_n) ] + b_j - a_j r_n - lambda kappa flip <= s_n.  (2)

2. *Separability.*  With reference-level dummy coding (``drokit.schema``; level 0 has coefficient 0),
   ``f(x_n, z) = f(x_n, z_n) + sum_m [w_m(z_m) - w_m(z_{n,m})]`` where ``w_m(v)`` is the coefficient of
   level ``v`` of feature ``m``.  Both this sum and ``D`` (because ``p = 1``) are sums over features of
   terms depending on ``z_m`` only, and ``Z`` is a product set, so the maximum in (2) splits:

       max_z [...] = a_j sigma_n f(x_n, z_n)
                     + sum_m max{0, max_{v != z_{n,m}} a_j sigma_n (w_m(v) - w_m(z_{n,m})) - lambda delta_m}.

   This is the thesis's separable form ``sum_m max{c_m^T z_m^n, max_{v != z_m^n} c_m^T v - lambda
   delta_m}`` (selvi2025 §3.3 [derived]) with ``c_m = a_j sigma_n beta_{z,m}``, shifted by
   ``c_m^T z_m^n``.  Immutable features (and features with one level) contribute 0.

3. *Epigraph.*  Introduce ``t_{n j m}`` (per label family as well) with

       t_{njm} >= 0,   t_{njm} >= a_j sigma_n (w_m(v) - w_m(z_{n,m})) - lambda delta_m   for all v != z_{n,m},
       a_j (sigma_n f(x_n, z_n) - r_n) + b_j + sum_m t_{njm} - lambda kappa flip <= s_n.          (3)

   (3) is feasible for some ``t`` iff (2) holds (take ``t`` at the maxima), so the projection onto
   ``(beta, lambda, s)`` of the LP (3) equals the feasible set of the exponential program (1): the optimal
   values and the optimal ``beta`` coincide.  Pieces with ``a_j = 0`` do not depend on ``z`` and need no
   ``t``.

Equivalently (LP duality, not used here), the inner maximum over the simplex hull ``U = conv Z`` is
``min_{||w||_{u*} <= lambda} w^T z_n + sigma_U(c - w)`` with the per-feature "range including 0" dual
norm ``||w||_{u*} = max_m (max{0, max_i w_{m,i}} - min{0, min_i w_{m,i}}) / delta_m`` and
``sigma_U(v) = sum_m max{0, max_i v_{m,i}}`` (thesis Prop 10 [derived]; there with equal weights).

Size: ``N F J' m'`` variables ``t`` and ``N F (J + J' sum_m (a_m - 1) + J' m')`` linear rows, where
``F`` = 2 with label flips (else 1), ``J'`` the pieces with ``a_j != 0``, ``m'`` the mutable features
and ``a_m`` their level counts; plus the dual-norm constraint of :func:`.dual.build_dual_program`.
An LP for the l1 / l-inf ground norms, an SOCP for l2.  Polynomial, against ``N prod_m a_m`` rows of
the monolithic program.

General level costs (:class:`drokit.metrics.CategoricalCost`, e.g. ordinal rank distances) with
``p = 1`` keep the cost additive over features, so the derivation holds with ``delta_m`` replaced by
the cost of the move, ``c_m(z_{n,m}, v) = delta_m U_m(z_{n,m}, v)``, in step 2 and in the rows (3).

Not valid (refused) for losses that are not piecewise affine (logistic, smooth hinge, Huber: the
maximum over z of a nonlinear convex function does not separate) or ``p != 1`` (the cost is then not
additive over features; use the cutting plane).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import ParameterError
from ..instance import DROInstance, LabelFamily
from ..oracles.enumeration import count_configuration_rows
from ..conic.builder import Affine, ProgramBuilder
from ..conic.program import ConicProgram
from ..conic.builder import linear_score
from .dual import CompiledProgram, declare_parameters, finish_dual_program


def check_box_applicable(inst: DROInstance) -> tuple[np.ndarray, np.ndarray]:
    """The loss pieces ``(a, b)``; raises :class:`ParameterError` naming the reason when the box
    reformulation does not apply (non piecewise-affine loss, or categorical exponent ``p != 1``)."""
    pieces = inst.loss.pieces
    if pieces is None:
        raise ParameterError(
            f"method='box' needs a piecewise-affine loss (hinge, pinball, epsilon_insensitive, absolute), "
            f"but {inst.loss.name!r} is not piecewise affine: the worst case over the categorical features "
            f"does not separate; use method='cutting_plane' or 'monolithic'")
    p = inst.metric.categorical.validated_p()
    if p != 1:
        raise ParameterError(
            f"method='box' needs the categorical exponent p = 1 (cost additive over features), got "
            f"p={p:g}; use method='cutting_plane' or 'monolithic'")
    a, b = pieces
    return np.asarray(a, dtype=float), np.asarray(b, dtype=float)


def level_change_rows(inst: DROInstance, mutable: np.ndarray,
                      codes: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix, np.ndarray]:
    """One row per (sample n, mutable feature m, level v != z_{n,m}).

    Returns ``(sample, position, G, cost)``: the sample index, the position of the feature in
    ``mutable``, the sparse ``(R, n_encoded)`` matrix with ``G @ coef = w_m(v) - w_m(z_{n,m})`` and the
    transport cost ``c_m(z_{n,m}, v) = delta_m U_m(z_{n,m}, v)`` of the change (``delta_m`` for the
    mismatch cost).  ``codes``
    replaces the samples' categorical codes ``inst.data.Z`` (one row per "sample"; the budget cuts pass
    their samples' codes, one row per cut).  Rows are feature-major, then sample, then level.
    """
    schema = inst.schema
    Z = inst.data.Z if codes is None else codes
    N, first = Z.shape[0], inst.n_numerical
    offsets = schema.dummy_offsets()
    samples, positions, row_ids, col_ids, values, costs = [], [], [], [], [], []
    start = 0
    for k, m in enumerate(mutable):
        a = int(schema.levels[m])
        levels = np.broadcast_to(np.arange(a), (N, a))
        n_idx, v = np.nonzero(levels != Z[:, m][:, None])          # every other level, per sample
        cur = Z[n_idx, m]
        rows = start + np.arange(n_idx.size)
        for lev, sign in ((v, 1.0), (cur, -1.0)):                  # +w_m(v) - w_m(z_nm); level 0 -> 0
            keep = lev > 0
            row_ids.append(rows[keep])
            col_ids.append(first + offsets[m] + lev[keep] - 1)
            values.append(np.full(int(keep.sum()), sign))
        samples.append(n_idx)
        positions.append(np.full(n_idx.size, k))
        costs.append(inst.metric.delta[m] * inst.metric.units[m][cur, v])
        start += n_idx.size
    if not samples:
        return np.zeros(0, int), np.zeros(0, int), sp.csr_matrix((0, schema.n_encoded)), np.zeros(0)
    G = sp.csr_matrix((np.concatenate(values), (np.concatenate(row_ids), np.concatenate(col_ids))),
                      shape=(start, schema.n_encoded))
    return np.concatenate(samples), np.concatenate(positions), G, np.concatenate(costs)


def add_piece_constraints(pb: ProgramBuilder, inst: DROInstance, f0: Affine, g: Affine, s: Affine,
                          lam: Affine, a_j: float, b_j: float, family: LabelFamily,
                          change: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Constraints (3) of the module docstring for one piece ``j`` and one label family.

    ``g = G @ coef`` over the rows of :func:`level_change_rows`; ``change = (sample, position, cost,
    n_mut)`` with ``cost`` the transport cost of each level-change row and ``n_mut`` the number of
    mutable features."""
    sigma, r, extra = family.sigma, family.shift, family.extra_cost
    sample, position, cost, n_mut = change
    N = inst.n_samples
    lhs = f0 * (a_j * sigma) + (b_j - a_j * r)                  # a_j (sigma f(x_n, z_n) - r_n) + b_j
    if a_j != 0.0 and n_mut:
        t = pb.aux("box_t", N * n_mut)                           # t[n * n_mut + k]
        pb.add_nonneg(t)
        pb.add_nonneg(t[sample * n_mut + position] - g * (a_j * sigma[sample])
                      + lam.repeat(sample.size) * cost)
        summation = sp.kron(sp.eye(N), np.ones((1, n_mut)), format="csr")
        lhs = lhs + t.premultiply(summation)
    pb.add_nonneg(s + lam.repeat(N) * extra - lhs)


def build_box_program(inst: DROInstance) -> tuple[ConicProgram, int]:
    """Assemble the LP/SOCP (3) plus the objective and the constraints of :func:`.dual.build_dual_program`
    (same variable names ``coef``, ``intercept``, ``s``, ``lambda``); returns ``(program, n_t)``."""
    a, b = check_box_applicable(inst)
    pb = ProgramBuilder()
    N = inst.n_samples
    coef, intercept, s = declare_parameters(pb, inst)
    lam = pb.var("lambda", 1)
    f0 = linear_score(coef, intercept, inst.design())
    mutable = inst.mutable_categorical()
    sample, position, G, cost = level_change_rows(inst, mutable)
    g = coef.premultiply(G)
    change = (sample, position, cost, mutable.size)
    families = inst.label_families()
    for family in families:
        for a_j, b_j in zip(a, b):
            add_piece_constraints(pb, inst, f0, g, s, lam, float(a_j), float(b_j), family, change)
    finish_dual_program(pb, inst, coef, s, lam)
    n_t = N * len(families) * int(np.count_nonzero(a)) * mutable.size
    return pb.build(), n_t


def box_rows(inst: DROInstance) -> int:
    """The rows (3) of the box program that stand for the configuration rows: per label family and
    piece, ``N`` sample rows plus, for a piece with ``a_j != 0``, one row per (sample, mutable feature,
    other level): ``N F (J + J' sum_m (a_m - 1))`` (the ``t >= 0`` bounds are not counted)."""
    a, _ = check_box_applicable(inst)
    N, F = inst.n_samples, len(inst.label_families())
    mutable = inst.mutable_categorical()
    other_levels = int(np.sum(inst.schema.levels[mutable] - 1))
    return N * F * (a.size + int(np.count_nonzero(a)) * other_levels)


def compile_box(inst: DROInstance) -> CompiledProgram:
    """The polynomial-size exact program for piecewise-affine losses with ``p = 1`` (module docstring).

    ``n_rows`` is the number of rows (3) actually in the program (:func:`box_rows`), not the full
    enumeration it represents (``count_configuration_rows``); ``info`` holds the number of epigraph
    variables ``t``.
    """
    program, n_t = build_box_program(inst)
    size = count_configuration_rows(inst)
    n_rows = box_rows(inst)
    why = (f"piecewise-affine loss {inst.loss.name!r} with p = 1: the worst case over the categorical "
           f"features separates per feature, a polynomial-size program with {n_rows:,} rows and {n_t:,} "
           f"epigraph variables represents all {size:,} configuration rows (belbasi2023 Props. 2/4; "
           f"selvi2025 thesis Prop 10)")
    return CompiledProgram(program, "box", why, n_rows, info={"epigraph_variables": n_t})
