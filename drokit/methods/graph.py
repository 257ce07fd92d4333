"""``graph``: sun2025 Theorem 2, one longest-path potential system per categorical pattern on a layered budget DAG.

The program of :mod:`drokit.reformulations.graph` on the template of :mod:`drokit.oracles.graph`: polynomial in
the budget lattice, every loss; refused (:class:`~drokit.ProblemTooLargeError`) when the lattice is too large, which
is known once the template is built.  Never chosen by ``auto`` (the cutting plane with the DP oracle solves the same
problem faster: ``docs/method_selection.md``).
"""

from __future__ import annotations

from ..reformulations.graph import compile_graph
from .registry import Method, register_method

GRAPH = register_method(Method("graph", lambda inst, max_configurations=0: compile_graph(inst),
                               "longest-path potentials on the budget DAG (sun2025 Thm 2)"))
