"""Small synthetic data sets shared by several test files."""

import numpy as np
import pandas as pd


def two_plus_two_frame(n=24, seed=2, labels=(-1.0, 1.0)):
    """Two numerical columns ``a, b`` and two categorical ``c`` (levels p, q, r) and ``d`` (u, v); the label is
    ``sign(a - b + [c = q] + 0.6 noise)`` coded as ``labels``."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "c": pd.Categorical(rng.choice(list("pqr"), n), categories=list("pqr")),
                      "d": pd.Categorical(rng.choice(list("uv"), n), categories=list("uv"))})
    y = np.where(X["a"] - X["b"] + (X["c"] == "q") + 0.6 * rng.normal(size=n) > 0, labels[1], labels[0])
    return X, y


def mixed_instance(seed, task, loss, categorical, kappa, levels=(4, 3, 2, 5), N=9, radius=0.3):
    """A bound :class:`DROInstance`: two normal numerical columns ``x0, x1`` and uniform categorical
    columns ``x2, ...`` with ``levels``, priced by the categorical cost ``categorical``; labels +-1
    (both present) or normal responses."""
    import drokit as dk
    rng = np.random.default_rng(seed)
    Xn = rng.normal(size=(N, 2))
    Z = np.column_stack([rng.integers(0, a, N) for a in levels])
    y = np.where(rng.random(N) < 0.5, 1.0, -1.0) if task == "classification" else rng.normal(size=N)
    if task == "classification" and len(np.unique(y)) < 2:
        y[0] = -y[0]
    metric = dk.GroundMetric(categorical=categorical, label=dk.LabelCost(kappa))
    prob = dk.Problem(loss, dk.Wasserstein(metric, radius=radius), task=task)
    return prob.bind(np.column_stack([Xn, Z]), y, categorical_features=list(range(2, 2 + len(levels))),
                     categories=[list(range(a)) for a in levels])
