"""The exact conic program of the multinomial DRO logistic model (issue 20 item 7; the model, its dual and its
certificate: :mod:`drokit.models.multinomial`).

Rows: every categorical configuration ``z'`` of the mutable features of every sample, each with every label ``y'``
the ball reaches (its own, and every other one at ``+ kappa`` when ``kappa`` is finite).  Program:

    min  lambda eps + sum_n p_n s_n
    s.t. sum_k exp(f_k(r) - f_{y'_r}(r) - lambda c_r - s_{n_r}) <= 1          (K exponential cones + 1 row per row r)
         ||Gamma^{-1} (w_{k,x} - w_{j,x})||_* <= lambda                      (every pair of classes)

with ``f_k(r) = b_k + w_k^T a_r``, ``a_r = [x_n, dummies(z'_r)]``, ``c_r = d(z_n, z'_r) + kappa 1[y'_r != y_n]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np
import scipy.sparse as sp

from ..builder import ProgramBuilder
from ...metrics.costs import NormCost
from ...models.instance import DROInstance
from ...oracles.enumeration import ConfigurationRows, enumerate_configurations


@dataclass
class MultinomialRows:
    """The rows of the multinomial program: configuration ``rows`` (no label flips: ``rows.flip`` is all False),
    the label ``target`` each row is scored with (``y'``, a class index) and its transport ``cost`` (``d(z_n, z')
    + kappa 1[y' != y_n]``)."""

    rows: ConfigurationRows
    target: np.ndarray
    cost: np.ndarray

    @property
    def size(self) -> int:
        return int(self.target.size)


def multinomial_rows(inst: DROInstance, label: np.ndarray, n_classes: int, kappa: float) -> MultinomialRows:
    """Every categorical configuration of the mutable features of every sample (``inst`` is bound with label
    flips off), each with its own label, and with every other label at ``+ kappa`` when ``kappa`` is finite."""
    base = enumerate_configurations(inst)
    own = np.asarray(label, dtype=int)[base.sample]
    if not np.isfinite(kappa):
        return MultinomialRows(base, own, base.cost.copy())
    targets = np.tile(np.arange(n_classes), base.size)
    rows = ConfigurationRows(np.repeat(base.sample, n_classes), np.repeat(base.Z, n_classes, axis=0),
                             np.repeat(base.cost, n_classes), np.zeros(base.size * n_classes, dtype=bool))
    cost = rows.cost + kappa * (targets != np.repeat(own, n_classes))
    return MultinomialRows(rows, targets, cost)


def row_design(inst: DROInstance, rows: ConfigurationRows) -> sp.csr_matrix:
    """``a_r = [x_n, dummies(z_r)]`` per row (R, n_encoded)."""
    X = inst.data.X[rows.sample]
    return sp.hstack([sp.csr_matrix(X), inst.schema.dummies(rows.Z)], format="csr")


def limited_columns(inst: DROInstance) -> Tuple[np.ndarray, np.ndarray]:
    """``(columns, gamma)``: the numerical columns the transport prices by the norm (finite weight; weight 0
    included: the pairwise cones fix their differences), at a positive radius; none at radius 0."""
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    if inst.radius <= 0 or not gamma.size:
        return np.zeros(0, dtype=int), np.zeros(0)
    keep = np.flatnonzero(np.isfinite(gamma))
    return keep, gamma[keep]


def build_program(inst: DROInstance, mrows: MultinomialRows, n_classes: int):
    """The exact conic program of the module docstring over ``mrows``; variables ``coef`` (``K x d``, class-major),
    ``intercept`` (``K``, when fitted), ``lambda`` and ``s``."""
    K, d, R = n_classes, inst.schema.n_encoded, mrows.size
    pb = ProgramBuilder()
    W = pb.var("coef", K * d)
    b = pb.var("intercept", K) if inst.fit_intercept else None
    lam = pb.var("lambda", 1)
    s = pb.var("s", inst.n_samples)
    pb.add_nonneg(lam)
    A = row_design(inst, mrows.rows)
    own = sp.csr_matrix((np.ones(R), (np.arange(R), mrows.target)), shape=(R, K))
    slack = lam.repeat(R) * mrows.cost + s.premultiply(_owner(inst, mrows))
    diffs = []
    for k in range(K):                 # f_k - f_{y'} - lambda c - s_n per row (0 - lambda c - s_n when k = y')
        pick = sp.csr_matrix((np.ones(R), (np.arange(R), np.full(R, k))), shape=(R, K)) - own
        f = W.premultiply(_class_blocks(A, pick))
        if b is not None:
            f = f + b.premultiply(pick)
        diffs.append(f - slack)
    t = pb.var("lse_terms", R * K)
    for k in range(K):
        pb.add_exp(diffs[k], pb.constant(np.ones(R)), t[np.arange(k * R, (k + 1) * R)])
    pb.add_nonneg(1.0 - t.premultiply(sp.hstack([sp.identity(R)] * K, format="csr")))
    cols, gamma = limited_columns(inst)
    if cols.size:
        norm = NormCost(p=inst.metric.numerical.validated_p())
        for k in range(K):
            for j in range(k + 1, K):
                diff = W[k * d + cols] - W[j * d + cols]
                norm.add_dual_norm_leq(pb, diff, lam, gamma)
    pb.minimize(lam * float(inst.radius) + s.premultiply(inst.p[None, :]))
    return pb.build()


def _class_blocks(A: sp.csr_matrix, pick: sp.csr_matrix) -> sp.csr_matrix:
    """``sum_k pick[r, k] a_r^T w_k`` as a matrix on ``vec(W)`` (class-major): row ``r`` holds ``pick[r, k] a_r`` in
    block ``k``."""
    K = pick.shape[1]
    pick = pick.tocsc()
    return sp.hstack([sp.diags(pick[:, k].toarray().ravel()) @ A for k in range(K)], format="csr")


def _owner(inst: DROInstance, mrows: MultinomialRows) -> sp.csr_matrix:
    R = mrows.size
    return sp.csr_matrix((np.ones(R), (np.arange(R), mrows.rows.sample)), shape=(R, inst.n_samples))



def take(mrows: MultinomialRows, index: np.ndarray) -> MultinomialRows:
    r = mrows.rows
    return MultinomialRows(ConfigurationRows(r.sample[index], r.Z[index], r.cost[index], r.flip[index]),
                           mrows.target[index], mrows.cost[index])


