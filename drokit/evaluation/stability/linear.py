"""Exact inner maximization for linear models on mixed data (the workhorse adversary of the criterion).

Model ``f(x, z) = b + beta_x^T x + beta_z^T dummies(z)``, loss ``L(u)`` of ``u = sigma f - shift`` (margin
with ``sigma = +-y``, or residual with ``shift = y``), transport cost

    d = ||Gamma (x - x_hat)||_2^2 + D(z, z_hat) + kappa 1[y != y_hat]      (drokit.OTMoment's metric).

For a multiplier ``h`` (blanchet2024 Prop. 1) the inner problem ``max h L(u) - theta1 d`` splits:

1. the categorical part and the label choose a candidate ``k`` = (label family, extreme, budget): the
   budget DP of :class:`~drokit.oracles.dp.DPOracle` (sun2025 Alg. 1) gives, per sample and reachable
   categorical budget, the largest and smallest total score change; for a fixed budget only these two
   extremes matter, because ``T`` below is convex in ``u`` (a sup of convex functions);
2. the numerical part moves the score by ``t`` at the least cost ``t^2 / nu``, ``nu = ||Gamma^{-1}
   beta_x||_2^2`` (along ``Gamma^{-2} beta_x``; with a user norm ``N`` of the metric, the cost ``N(Gamma delta)^2``:
   ``nu = N_*(Gamma^{-1} beta_x)^2``, along ``Gamma^{-1} d``, ``d`` the norm's maximizer of ``(Gamma^{-1} beta_x)'d``
   over ``N(d) <= 1``, since ``min {N(d)^2 : w'd = t} = t^2 / N_*(w)^2``), so each candidate's value is the closed-form
   d-transform
   ``T(h, theta1 / nu, u_k) - theta1 C_k`` of :mod:`.transforms`.

Cost per ``h``: ``O(N K)`` transforms with ``K = families x extremes x budgets`` (``K = 1`` without mutable
categorical features and label flips); the DP runs once per model, not per ``h``.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...exceptions import ParameterError
from ...losses.base import Loss
from ...metrics.costs import NormCost
from ...instance import DROInstance
from .adversaries import Adversary, Response, pick_among_ties
from .transforms import ZeroOne, d_transform, h_limit, sup_loss_unbounded


class LinearModelAdversary(Adversary):
    """The adversary of a fixed linear model (see the module docstring).

    ``inst`` carries the encoded data, labels, resolved metric (``gamma``, ``delta``, ``kappa``) and schema;
    ``loss`` may differ from ``inst.loss`` (e.g. the 0/1 loss of a logistic model).
    """

    def __init__(self, inst: DROInstance, intercept: float, coef: np.ndarray, loss: Loss,
                 y_original: Optional[np.ndarray] = None, classes=None):
        self.inst = inst
        self.loss = loss
        self.n_samples = inst.n_samples
        self.classes = classes
        coef = np.asarray(coef, dtype=float)
        n_num = inst.n_numerical
        self.X = inst.data.X
        self.f0 = inst.scores(intercept, coef)
        gamma = np.asarray(inst.metric.gamma, dtype=float)
        beta_x = coef[:n_num]
        numerical = inst.metric.numerical
        norm = NormCost(p=2) if isinstance(numerical, NormCost) else numerical    # the squared cost N(Gamma d)^2
        dual = norm.dual_norm(beta_x, gamma) if n_num else 0.0
        if not np.isfinite(dual):
            raise ParameterError("a numerical feature with metric weight 0 has a nonzero coefficient: it moves "
                                 "for free and makes the criterion 0; give it a positive weight")
        self.nu = float(dual) ** 2
        if norm is numerical:      # a user norm: along Gamma^{-1} d, d its maximizer of w'd (w = Gamma^{-1} beta_x)
            keep = np.flatnonzero(np.isfinite(gamma) & (gamma > 0))
            unit = np.zeros(n_num)
            if keep.size and self.nu > 0:
                unit[keep] = numerical.maximizer(beta_x[keep] / gamma[keep], keep) / gamma[keep] * np.sqrt(self.nu)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                unit = np.where(np.isfinite(gamma) & (gamma > 0), beta_x / gamma ** 2, 0.0)
        self.direction = unit / self.nu if self.nu > 0 else unit  # x moves by dF * direction
        # ---- candidates: label family x extreme x budget
        mutable = inst.mutable_categorical()
        self.families = inst.label_families()
        if mutable.size:
            from ...oracles.dp import DPOracle
            oracle = DPOracle(inst)
            extremes, self._paths = oracle.extreme_gains(coef)
            self._oracle = oracle
            distance = oracle.distance
        else:
            self._oracle = None
            extremes = (np.zeros((self.n_samples, 1)),)
            distance = np.zeros(1)
        self.n_budgets = distance.size
        self.n_extremes = len(extremes)
        E, C = [], []
        for fam in self.families:
            for G in extremes:
                E.append(fam.sigma[:, None] * (self.f0[:, None] + G) - fam.shift[:, None])
                C.append(distance + fam.extra_cost)
        self.E = np.hstack(E)                       # (N, K) loss arguments of the candidates
        self.C = np.concatenate(C)                  # (K,) categorical + label costs
        self.sigma = np.hstack([np.repeat(f.sigma[:, None], self.n_extremes * self.n_budgets, 1)
                                for f in self.families])
        self._zero_cost = self.C == 0

    # ------------------------------------------------------------ protocol
    def _a(self, theta1: float) -> float:
        return np.inf if (np.isinf(theta1) or self.nu == 0) else theta1 / self.nu

    def nominal_losses(self):
        fam = self.families[0]
        return self.loss.value(fam.sigma * self.f0 - fam.shift)

    def sup_losses(self, theta1):
        if np.isinf(theta1):
            return np.max(self.loss.value(self.E[:, self._zero_cost]), axis=1)
        if self.nu > 0:
            if sup_loss_unbounded(self.loss):
                return np.full(self.n_samples, np.inf)
            if isinstance(self.loss, ZeroOne):
                return np.ones(self.n_samples)
        return np.max(self.loss.value(self.E), axis=1)

    def h_limit(self, theta1):
        return h_limit(self.loss, self._a(theta1))

    def respond(self, h, theta1, side=1):
        rows = np.arange(self.n_samples)
        if np.isinf(theta1):
            E = self.E[:, self._zero_cost]
            losses = self.loss.value(E)
            k_local = pick_among_ties(h * losses, losses, side)
            k = np.flatnonzero(self._zero_cost)[k_local]
            v = self.E[rows, k]
            return Response(losses[rows, k_local], np.zeros(self.n_samples), (k, v))
        a = self._a(theta1)
        T, v = d_transform(self.loss, h, a, self.E)
        values = T - theta1 * self.C[None, :]
        losses = self.loss.value(v)
        k = pick_among_ties(values, losses, side)
        v_k = v[rows, k]
        t = v_k - self.E[rows, k]
        numeric_cost = t ** 2 / self.nu if self.nu > 0 else np.zeros_like(t)
        return Response(losses[rows, k], self.C[k] + numeric_cost, (k, v_k))

    # ------------------------------------------------------------ moved points
    def points(self, choice, samples):
        """The moved points (the user's feature columns, the label as ``y``) of ``samples``."""
        import pandas as pd
        from ..worst_case_result import take_levels

        k_all, v_all = choice
        samples = np.asarray(samples, dtype=int)
        k, v = k_all[samples], v_all[samples]
        per_family = self.n_extremes * self.n_budgets
        family = k // per_family
        extreme = (k % per_family) // self.n_budgets
        budget = k % self.n_budgets
        schema = self.inst.schema
        X = self.X[samples].copy()
        sigma = self.sigma[samples, k]
        dF = sigma * (v - self.E[samples, k])  # score change of the numerical move
        X += dF[:, None] * self.direction[None, :]
        Z = self.inst.data.Z[samples].copy()
        if self._oracle is not None:
            Z = self._oracle.configurations(self._paths, extreme, budget, samples)
        out = {}
        for j, name in enumerate(schema.numerical_names):
            out[name] = X[:, j]
        for j, (name, cats) in enumerate(zip(schema.categorical_names, schema.categories)):
            out[name] = take_levels(cats, Z[:, j])
        frame = pd.DataFrame(out)[list(schema.feature_names)]
        flips = np.array([self.families[f].flip for f in family], dtype=bool) if family.size else \
            np.zeros(0, dtype=bool)
        y = np.asarray(self.inst.y, dtype=float)[samples]
        y_new = np.where(flips, -y, y) if self.inst.is_classification else y
        if self.inst.is_classification and self.classes is not None:
            classes = np.asarray(self.classes)
            y_new = classes[(y_new > 0).astype(int)]
        frame["y"] = y_new
        return frame

