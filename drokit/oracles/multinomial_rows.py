"""The rows of the multinomial DRO logistic model (issue 20 item 7) and their algebra: every categorical configuration
``z'`` of the mutable features of every sample, each with every label ``y'`` the ball reaches, the encoded design
``a_r = [x_n, dummies(z'_r)]``, the class scores ``f_k(r) = b_k + w_k^T a_r`` and the row losses ``LSE_k f_k - f_{y'}``.
Shared by the program (:mod:`drokit.reformulations.multinomial`) and the certificate
(:mod:`drokit.certificates.multinomial`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ..instance import DROInstance
from .enumeration import ConfigurationRows, enumerate_configurations


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


def take(mrows: MultinomialRows, index: np.ndarray) -> MultinomialRows:
    r = mrows.rows
    return MultinomialRows(ConfigurationRows(r.sample[index], r.Z[index], r.cost[index], r.flip[index]),
                           mrows.target[index], mrows.cost[index])


def scores(inst: DROInstance, rows: ConfigurationRows, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    """``f_k(row) = b_k + w_k^T a_r`` (R, K)."""
    return np.asarray(row_design(inst, rows) @ coef.T) + intercept[None, :]


def row_losses(inst: DROInstance, mrows: MultinomialRows, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    """``LSE_k f_k - f_{y'}`` per row."""
    f = scores(inst, mrows.rows, coef, intercept)
    return logsumexp(f, axis=1) - f[np.arange(mrows.size), mrows.target]
