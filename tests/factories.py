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
