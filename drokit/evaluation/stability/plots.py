"""Plots of the stability criterion (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

import numpy as np


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("stability plots need matplotlib: pip install drokit[plot]") from exc
    return plt


def plot_feature_stability(fs, top: int = 10, ax=None):
    """Horizontal bars of the ``top`` most fragile features (smallest ``R_j``), the full ``R`` as a line."""
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.35 * min(top, len(fs.table)) + 1.2))
    table = fs.table.head(top).iloc[::-1]
    values = table["value"].to_numpy(dtype=float)
    finite = np.where(np.isfinite(values), values, np.nan)
    colors = ["tab:red" if k == "categorical" else "tab:blue" for k in table["kind"]]
    ax.barh(table["feature"].astype(str), finite, color=colors)
    if fs.full is not None and np.isfinite(fs.full.value):
        ax.axvline(fs.full.value, color="k", ls="--", lw=1, label="all features")
        ax.legend(loc="lower right")
    ax.set_xlabel("feature stability R_j (smaller = more fragile)")
    return ax


def plot_stability_curve(curve, ax=None, label=None):
    """``R(r)`` with the current risk marked."""
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(curve.risks, curve.values, marker="o", ms=3, label=label)
    ax.axvline(curve.nominal_risk, color="gray", ls=":", lw=1)
    ax.set_xlabel("risk threshold r")
    ax.set_ylabel("stability R(r)")
    if label is not None:
        ax.legend()
    return ax
