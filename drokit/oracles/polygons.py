"""Per-feature convex polygons of (score change, budget) pairs, for the hull oracle under general level costs.

For a mutable categorical feature ``l`` with level coefficients ``w_l(v)`` and additive budgets
``b_l(u, v) = (delta_l U_l(u, v))^p`` (``b_l(u, u) = 0``, positive otherwise), a sample at level ``u`` has the
points ``P_{l,u} = {(w_l(v) - w_l(u), b_l(u, v)) : v}``; their convex hull has the unique lowest vertex
``(0, 0)`` (the sample's own level).  :func:`level_polygons` traces, for every own level ``u``, the hull's vertices
counter-clockwise from ``(0, 0)`` and its edges, with a key increasing in the edges' polar angle (the "diamond
angle": no trigonometry, monotone in the angle), as :mod:`drokit.oracles.hull` merges them over features
(the Minkowski sum of the samples' polygons, de Berg et al., *Computational Geometry*, Thm 13.10).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def angle_key(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """A key in ``[0, 4)`` increasing with the polar angle of ``(dx, dy)`` in ``[0, 2 pi)``: ``1 - dx / (|dx| + |dy|)``
    for ``dy >= 0``, ``3 + dx / (|dx| + |dy|)`` below (the diamond angle); ``inf`` for a zero vector (padding)."""
    dx, dy = np.asarray(dx, dtype=float), np.asarray(dy, dtype=float)
    size = np.abs(dx) + np.abs(dy)
    ratio = np.divide(dx, size, out=np.zeros_like(size), where=size > 0)
    key = np.where(dy >= 0, 1.0 - ratio, 3.0 + ratio)
    return np.where(size > 0, key, np.inf)


def hull_from_lowest(x: np.ndarray, y: np.ndarray, start: int) -> np.ndarray:
    """Indices of the convex hull's vertices of the points ``(x, y)``, counter-clockwise from the point ``start``
    (the unique lowest one), collinear and repeated points left out (Andrew's monotone chain)."""
    order = np.lexsort((y, x))
    pts = [(float(x[i]), float(y[i]), int(i)) for i in order]

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    ring = [p[2] for p in lower[:-1] + upper[:-1]]          # counter-clockwise, from the leftmost-lowest point
    if not ring:
        return np.array([start])
    if start not in ring:                                    # all points equal: the polygon is the point itself
        return np.array([start])
    at = ring.index(start)
    return np.array(ring[at:] + ring[:at])


@dataclass
class LevelPolygons:
    """One feature's polygons, every own level ``u`` (rows), padded to ``H`` edges: ``dx`` / ``dy`` (a, H) the
    edges in counter-clockwise order from ``(0, 0)``, ``key`` (a, H) their angle keys (``inf`` for padding), and
    ``level`` (a, H + 1) the level at the vertex after ``j`` edges (the own level after the last real one)."""

    dx: np.ndarray
    dy: np.ndarray
    key: np.ndarray
    level: np.ndarray


def level_polygons(w: np.ndarray, budget: np.ndarray) -> LevelPolygons:
    """:class:`LevelPolygons` of a feature with level coefficients ``w`` (a,) and additive budgets ``budget`` (a, a)
    (``budget[u, v]`` for a move from ``u`` to ``v``)."""
    a = w.size
    rings = [hull_from_lowest(w - w[u], budget[u], u) for u in range(a)]
    H = max(len(r) for r in rings) if a else 1
    dx, dy = np.zeros((a, H)), np.zeros((a, H))
    level = np.repeat(np.arange(a)[:, None], H + 1, axis=1)
    for u, ring in enumerate(rings):
        if len(ring) < 2:
            continue
        nxt = np.r_[ring[1:], ring[0]]
        dx[u, :ring.size] = w[nxt] - w[ring]
        dy[u, :ring.size] = budget[u, nxt] - budget[u, ring]
        level[u, :ring.size] = ring
    return LevelPolygons(dx=dx, dy=dy, key=angle_key(dx, dy), level=level)
