"""The exact compile paths of this version and the automatic choice between them.

* ``erm``         -- radius 0: the ball is ``{P_N}``, the problem is empirical risk minimization.
* ``closed_form`` -- no categorical features: the regularized forms of belbasi2023 Lemmas 1-3 (note D2
  item 4): classification with ``kappa = inf`` is ``mean L + eps lip ||Gamma^{-1} beta_x||_*``;
  regression is ``mean L + eps lip max(||Gamma^{-1} beta_x||_*, 1/kappa)``; classification with finite
  ``kappa`` is the small program ``min lambda eps + mean max(L(y f), L(-y f) - lambda kappa)``,
  ``lambda >= lip ||.||_*``.  All are the dual program of :mod:`.dual` with the nominal rows only.
* ``monolithic``  -- full enumeration of the categorical configurations (belbasi2023 Obs. 1, sun2025
  Thm 1); exact, exponential in the number of categorical features, refused above a size limit.
* ``box``         -- piecewise-affine losses with ``p = 1``: the per-feature LP of :mod:`.box` (the
  thesis's bounded relaxation, selvi2025 Prop. 10 / the note's C3), polynomial size, exact.
* ``graph``       -- sun2025 Thm 2: one longest-path potential system per categorical pattern on a
  layered budget DAG shared by all samples (:mod:`.graph`, :mod:`drokit.oracles.graph`); polynomial in
  the budget lattice, every loss.
* ``cutting_plane`` -- the same program generated row by row (:mod:`.cutting_plane`) with an exact
  separation oracle: by default the hull oracle (:mod:`drokit.oracles.hull`: the mismatch cost with any
  positive weights, ``2m + 1`` candidates per sample) or, for other level costs, the DP oracle (no enumeration,
  any size its budget lattice allows), or the vectorized enumeration (the reference, limited by ``max_configurations``); the conic masters stay
  small.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ...exceptions import ParameterError
from ...models.instance import DROInstance
from ...oracles.enumeration import count_configuration_rows, enumerate_configurations
from ...oracles.rows import check_enumeration_size
from .box import compile_box
from .dual import CompiledProgram, build_dual_program
from .graph import compile_graph
from .phase_one import phase_one_applies

METHODS = ("auto", "erm", "closed_form", "monolithic", "cutting_plane", "box", "graph", "intersection")
#: default limit on enumerated configuration rows (monolithic program, enumeration oracle)
MAX_CONFIGURATIONS = 1_000_000
#: "auto" chooses the monolithic program only below this many rows (it is fragile above, see
#: benchmarks/RESULTS.md), the cutting plane otherwise
MONOLITHIC_AUTO_LIMIT = 2_000


def compile_erm(inst: DROInstance) -> CompiledProgram:
    rows = enumerate_configurations(inst, nominal_only=True)
    return CompiledProgram(build_dual_program(inst, rows, radius_zero=True), "erm",
                           "radius = 0: the Wasserstein ball is {P_N}, so the problem is plain "
                           "empirical risk minimization", rows.size)


def compile_closed_form(inst: DROInstance) -> CompiledProgram:
    if inst.n_categorical and np.any(np.isfinite(inst.metric.delta)):
        raise ParameterError(
            f"method='closed_form' needs data whose categorical features are all immutable (or none), "
            f"but {int(np.isfinite(inst.metric.delta).sum())} categorical features can change; use "
            f"method='monolithic' or 'auto'")
    rows = enumerate_configurations(inst)
    if inst.is_classification and inst.label_flips:
        why = ("all features numerical, finite kappa: min lambda*eps + mean max(L(y f), L(-y f) - "
               "lambda*kappa) with lambda >= lip*||Gamma^-1 beta_x||_* (belbasi2023 Prop. 1 with K = 0)")
    elif inst.is_classification:
        why = ("all features numerical, kappa = inf: the DRO problem equals regularized ERM "
               "mean L(y f) + eps*lip*||Gamma^-1 beta_x||_* (belbasi2023 Lemma 1; note D2 item 4)")
    else:
        why = ("all features numerical (regression): the DRO problem equals mean L(f - y) + "
               "eps*lip*max(||Gamma^-1 beta_x||_*, 1/kappa) (belbasi2023 Lemmas 2-3; note D2 item 4)")
    return CompiledProgram(lambda: build_dual_program(inst, rows), "closed_form", why, rows.size)


def compile_monolithic(inst: DROInstance, max_configurations: int = MAX_CONFIGURATIONS) -> CompiledProgram:
    size = check_enumeration_size(inst, "monolithic", max_configurations)
    rows = enumerate_configurations(inst)
    why = (f"{inst.n_categorical} categorical features with {inst.mutable_configurations():,} "
           f"configurations: full enumeration, {size:,} configuration rows "
           f"(<= max_configurations={max_configurations:,}; belbasi2023 Obs. 1, sun2025 Thm 1)")
    return CompiledProgram(build_dual_program(inst, rows), "monolithic", why, rows.size)


def choose_method(inst: DROInstance, method: str, max_configurations: int) -> Tuple[str, str]:
    """Resolve ``method="auto"``; returns (method, reason)."""
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    if method != "auto":
        return method, f"method={method!r} requested by the user"
    if inst.radius == 0:
        return "erm", "auto: radius = 0"
    if tangent_loss_with_structured_path(inst):
        return "cutting_plane", ("auto: a loss compiled by tangents, which phase 1 and the structured barrier "
                                 "master use through its value and derivatives alone (no tangent program)")
    if inst.n_categorical == 0 or not np.any(np.isfinite(inst.metric.delta)):
        return "closed_form", "auto: no mutable categorical features"
    size = count_configuration_rows(inst)
    if size <= min(MONOLITHIC_AUTO_LIMIT, max_configurations):
        return "monolithic", f"auto: full enumeration is tiny ({size:,} rows <= {MONOLITHIC_AUTO_LIMIT:,})"
    box = box_auto_rows(inst)
    if box is not None and box <= BOX_AUTO_LIMIT:
        return "box", (f"auto: piecewise-affine loss with p = 1, so the exact box LP applies; it has "
                       f"{box:,} rows (<= {BOX_AUTO_LIMIT:,}), where it beat the cutting plane 2-5x on "
                       f"the sun2025 datasets")
    return "cutting_plane", (f"auto: {size:,} configuration rows is too many for one conic program "
                             f"(> {MONOLITHIC_AUTO_LIMIT:,}); its separation oracle does not enumerate")


def tangent_loss_with_structured_path(inst: DROInstance) -> bool:
    """A smooth custom loss compiled by tangents (``outer_approximation``) on an instance the cutting plane's
    phase 1 and barrier master handle (finite Lipschitz constant, no attack shift, no penalty): ``auto`` then
    takes the cutting plane even where it would take the closed form or the monolithic program, whose conic
    programs need rounds of tangents.  Measured: sympy Huber ``Piecewise`` on scikit-learn's diabetes (442 x 10,
    radius 0.1): closed form 4.5 s (five Clarabel solves) against 0.14 s, the built-in Huber's closed form
    0.08 s."""
    return bool(getattr(inst.loss, "outer_approximation", False)) and phase_one_applies(inst)


#: ``auto`` picks the box LP (piecewise-affine losses, p = 1) up to this many rows.  Measured, hinge,
#: radius 0.1 (benchmarks/RESULTS.md): box vs cutting plane 0.05 vs 0.25 s (hepatitis, 2.6k rows),
#: 0.10 vs 0.18 (spect, 6k), 0.21 vs 0.46 (voting, 15k), 0.40 vs 1.34 (audiology, 20k), 0.56 vs 1.86
#: (cylinder-bands, 24k), 0.55 vs 1.29 (credit-approval, 26k), but 0.52 vs 0.28 (car, 29k) and 3.8 vs
#: 1.2 (nursery, 272k); on belbasi2023's synthetic sets (radius 0.01, one cutting-plane round) the box
#: LP was 1.1-3x slower.
BOX_AUTO_LIMIT = 25_000


def box_auto_rows(inst: DROInstance) -> Optional[int]:
    """Rows of the box LP if it applies to ``inst`` (:func:`.box.check_box_applicable`), else None."""
    from .box import box_rows
    try:
        return box_rows(inst)
    except ParameterError:
        return None


def compile_instance(inst: DROInstance, method: str = "auto",
                     max_configurations: int = MAX_CONFIGURATIONS) -> CompiledProgram:
    if method == "intersection":
        raise ParameterError("method='intersection' needs an Intersection ambiguity set "
                             "(ball_around_training & Wasserstein(metric, radius, center=(X_aux, y_aux)))")
    chosen, reason = choose_method(inst, method, max_configurations)
    if chosen == "erm":
        if inst.radius != 0 and method != "auto":
            raise ParameterError(f"method='erm' solves the radius-0 problem, but radius={inst.radius}")
        compiled = compile_erm(inst)
    elif chosen == "closed_form":
        compiled = compile_closed_form(inst)
    elif chosen == "cutting_plane":
        compiled = compile_cutting_plane(inst, max_configurations)
    elif chosen == "box":
        compiled = compile_box(inst)
    elif chosen == "graph":
        compiled = compile_graph(inst)
    else:
        compiled = compile_monolithic(inst, max_configurations)
    if inst.radius == 0 and chosen != "erm":
        compiled = compile_erm(inst)
        reason += "; radius = 0 so the problem is ERM"
    compiled.method_reason = f"{compiled.method_reason} [{reason}]"
    return compiled



def compile_cutting_plane(inst: DROInstance, max_configurations: int = MAX_CONFIGURATIONS) -> CompiledProgram:
    """Prepare the cutting-plane method: the first master (nominal rows); the oracle is built at solve
    time (``method_options={"oracle": "auto" | "hull" | "dp" | "sorting" | "enumeration"}``, default ``"auto"``: the
    hull oracle where it is exact, else the DP oracle)."""
    rows = enumerate_configurations(inst, nominal_only=True)
    size = count_configuration_rows(inst)
    why = (f"cutting plane with an exact separation oracle over {size:,} configuration rows "
           f"(belbasi2023 Alg. 1, sun2025 Alg. 1-2)")
    # n_rows: the first master's rows; the solve reports the final master's working set.  The program is built
    # when first asked for: a fit certified by phase 1 or the barrier master never needs it (a loss compiled by
    # tangents: 0.6-0.7 s of a 2.5 s fit at N = 10,000)
    return CompiledProgram(lambda: build_dual_program(inst, rows), "cutting_plane", why, rows.size,
                           info={"max_configurations": max_configurations})
