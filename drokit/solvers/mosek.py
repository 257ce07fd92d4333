"""MOSEK back-end through MOSEK's own Optimizer API (``mosek.Task``), with affine conic constraints.

MOSEK needs a licence and has no free or size-limited mode: ``import mosek`` works without one, but
any ``optimize()`` fails with ``err_missing_license_file``.  :meth:`MosekBackend.unavailable_reason`
therefore checks out a licence up front (once per process) and turns any failure into one sentence,
so ``solver="mosek"`` without a licence raises :class:`~drokit.exceptions.SolverNotAvailableError`
with that sentence, never a raw MOSEK traceback; drokit's default back-end is Clarabel.

Translation.  MOSEK's conic form is:

```text
minimize c^T x + c^f   s.t.   F x + g in D = D_1 x ... x D_p          (x free)
```

with dual ``maximize -g^T y + c^f  s.t.  F^T y = c,  y in D*``.  drokit's ``b - A x in K`` is
``F = -A``, ``g = b`` row for row, so MOSEK's ACC dual ``doty`` *is* drokit's ``y`` (``A^T y + c = 0``,
dual objective ``-b^T y + c0``) once the rows are put back in drokit's order.  Domains:

* ``zero``   -> ``appendrzerodomain(d)``,  ``nonneg`` -> ``appendrplusdomain(d)``
* ``soc``    -> ``appendquadraticconedomain(d)``  (``x_0 >= ||x_1:||``, our order)
* ``exp``    -> ``appendprimalexpconedomain()``: ``x_0 >= x_1 exp(x_2 / x_1)``, so our ``(x, y, z)``
  is passed as ``(z, y, x)``
* ``pow``    -> ``appendprimalpowerconedomain(3, [a, 1 - a])``: ``x_0^a x_1^(1-a) >= |x_2|``, our order

One domain is created per cone block and shared by all its cones; all ACCs are appended with a
single ``appendaccsseq`` call over consecutive affine expressions, so there is no per-cone Python call.

Options are MOSEK parameters, by their short name (``intpnt_co_tol_rel_gap``) or full name
(``MSK_DPAR_INTPNT_CO_TOL_REL_GAP``).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..conic.program import ConicProgram
from ..exceptions import SolverError, SolverNotAvailableError
from . import base
from .base import SolverBackend, SolverSolution

_INSTALL_HINT = ('pip install "drokit[mosek]" and install a licence from https://www.mosek.com '
                 '(free for academic use)')

# (module object, reason) of the last licence check; the check costs a licence checkout, so it is
# done once per process (and again only if a different ``mosek`` module object is imported).
_LICENCE_CACHE: Optional[Tuple[Any, Optional[str]]] = None


def _licence_problem(mosek) -> Optional[str]:
    """``None`` when a MOSEK licence can be checked out, otherwise a sentence saying why not."""
    global _LICENCE_CACHE
    if _LICENCE_CACHE is not None and _LICENCE_CACHE[0] is mosek:
        return _LICENCE_CACHE[1]
    reason: Optional[str] = None
    try:
        with mosek.Env() as env:
            env.checkoutlicense(mosek.feature.pts)
    except Exception as exc:  # mosek.Error, or anything else a broken installation raises
        detail = str(exc).strip().rstrip(":").strip() or repr(exc)
        errno = getattr(exc, "errno", None)
        if errno is not None and str(errno) not in detail:
            detail = f"{errno}: {detail}"
        reason = (f"mosek is installed but no licence was found (error {detail}); drokit uses "
                  f"Clarabel by default. To use MOSEK, install a licence file (e.g. "
                  f"~/mosek/mosek.lic or MOSEKLM_LICENSE_FILE), see https://www.mosek.com")
    _LICENCE_CACHE = (mosek, reason)
    return reason


def _param_table(mosek) -> Dict[str, Tuple[str, Any]]:
    """Option name -> (kind, MOSEK enum member), under both the short and the full name."""
    table: Dict[str, Tuple[str, Any]] = {}
    for kind, enum, prefix in (("d", mosek.dparam, "MSK_DPAR_"), ("i", mosek.iparam, "MSK_IPAR_"),
                               ("s", mosek.sparam, "MSK_SPAR_")):
        for member in enum.members():
            short = getattr(member, "__name__", str(member).split(".")[-1])
            table[short] = (kind, member)
            table[prefix + short.upper()] = (kind, member)
    return table


def _name(value) -> str:
    """MOSEK enum value -> its bare name (``solsta.optimal`` -> ``"optimal"``)."""
    return getattr(value, "__name__", str(value).split(".")[-1])


class MosekBackend(SolverBackend):
    name = "mosek"
    cones = frozenset({"zero", "nonneg", "soc", "exp", "pow"})
    # keyed by the name of MOSEK's solution status; the termination code refines ``unknown`` and
    # ``prim_and_dual_feas`` answers in :meth:`status_of`.
    STATUS_MAP: Dict[str, str] = {
        "optimal": base.OPTIMAL,
        "integer_optimal": base.OPTIMAL,
        "prim_infeas_cer": base.INFEASIBLE,
        "dual_infeas_cer": base.UNBOUNDED,
        "prim_and_dual_feas": base.OPTIMAL_INACCURATE,  # feasible, optimality gap not reached
        "prim_illposed_cer": base.SOLVER_ERROR,
        "dual_illposed_cer": base.SOLVER_ERROR,
        "prim_feas": base.SOLVER_ERROR,
        "dual_feas": base.SOLVER_ERROR,
        "unknown": base.SOLVER_ERROR,
    }
    TERMINATION_MAP: Dict[str, str] = {
        "trm_max_iterations": base.MAX_ITERATIONS,
        "trm_max_time": base.TIME_LIMIT,
    }
    # MOSEK's own defaults; any MOSEK parameter may be passed (see known_options).
    DEFAULTS: Dict[str, Any] = {}

    # ------------------------------------------------------------- discovery
    def unavailable_reason(self) -> Optional[str]:
        try:
            import mosek
        except ImportError:
            return f"mosek is not installed: {_INSTALL_HINT}; drokit uses Clarabel by default"
        except Exception as exc:  # e.g. a broken shared library
            return (f"mosek could not be imported ({type(exc).__name__}: {exc}); drokit uses "
                    f"Clarabel by default")
        return _licence_problem(mosek)

    def time_limit_options(self, seconds: float) -> Dict[str, Any]:
        return {"MSK_DPAR_OPTIMIZER_MAX_TIME": float(seconds)}

    def known_options(self) -> set:
        try:
            import mosek
            return set(self.DEFAULTS) | set(_param_table(mosek))
        except Exception:
            return set(self.DEFAULTS)

    def status_of(self, solsta: str, trm: str) -> str:
        status = self.STATUS_MAP.get(solsta, base.SOLVER_ERROR)
        if status in (base.OPTIMAL, base.INFEASIBLE, base.UNBOUNDED):
            return status
        return self.TERMINATION_MAP.get(trm, status)

    # ------------------------------------------------------------ the 3 steps
    def apply(self, program: ConicProgram):
        """F, g in drokit's row order except that exponential cones are flipped to MOSEK's (z, y, x)."""
        m = program.n_constraints
        perm = np.arange(m)
        for block, lo, hi in program.row_ranges():
            if block.kind == "exp":
                perm[lo:hi] = perm[lo:hi].reshape(-1, 3)[:, ::-1].ravel()
        F = (-sp.csr_matrix(program.A)[perm]).tocoo()
        return {
            "c": np.asarray(program.c, dtype=float),
            "F_rows": F.row.astype(np.int64), "F_cols": F.col.astype(np.int32),
            "F_vals": F.data.astype(float),
            "g": np.asarray(program.b, dtype=float)[perm],
            "blocks": list(program.cones),
            "perm": perm,
        }

    def solve_via_data(self, data, settings: Dict[str, Any], verbose: bool):
        import mosek
        try:
            with mosek.Task() as task:
                if verbose:
                    task.set_Stream(mosek.streamtype.log, lambda msg: sys.stdout.write(msg))
                self._put_params(task, mosek, settings)
                self._load(task, mosek, data)
                trm = task.optimize()
                return self._read(task, mosek, trm, len(data["g"]))
        except mosek.Error as exc:
            text = f"MOSEK failed: {exc}"
            if "licen" in str(exc).lower() or "licen" in str(getattr(exc, "errno", "")).lower():
                raise SolverNotAvailableError(text, solver=self.name, status=base.SOLVER_ERROR,
                                              raw_status=str(getattr(exc, "errno", ""))) from exc
            raise SolverError(text, solver=self.name, status=base.SOLVER_ERROR,
                              raw_status=str(getattr(exc, "errno", ""))) from exc

    @staticmethod
    def _put_params(task, mosek, settings: Dict[str, Any]) -> None:
        table = _param_table(mosek)
        for key, value in settings.items():
            kind, member = table[key]
            if isinstance(value, str):  # symbolic values such as "MSK_OFF"
                task.putparam(f"MSK_{kind.upper()}PAR_{_name(member).upper()}", value)
            elif kind == "d":
                task.putdouparam(member, float(value))
            elif kind == "i":
                task.putintparam(member, int(value))
            else:
                task.putstrparam(member, str(value))

    @staticmethod
    def _load(task, mosek, data) -> None:
        c = data["c"]
        n, m = c.shape[0], data["g"].shape[0]
        task.appendvars(n)
        task.putvarboundsliceconst(0, n, mosek.boundkey.fr, -np.inf, np.inf)
        task.putcslice(0, n, c)
        task.putobjsense(mosek.objsense.minimize)
        if m == 0:
            return
        task.appendafes(m)
        if data["F_vals"].size:
            task.putafefentrylist(data["F_rows"], data["F_cols"], data["F_vals"])
        task.putafegslice(0, m, data["g"])
        domains = []
        for block in data["blocks"]:
            if block.kind == "zero":
                dom = task.appendrzerodomain(block.dim)
            elif block.kind == "nonneg":
                dom = task.appendrplusdomain(block.dim)
            elif block.kind == "soc":
                dom = task.appendquadraticconedomain(block.dim)
            elif block.kind == "exp":
                dom = task.appendprimalexpconedomain()
            else:  # pow
                dom = task.appendprimalpowerconedomain(3, np.array([block.param, 1.0 - block.param]))
            domains.append(np.full(block.count, dom, dtype=np.int64))
        task.appendaccsseq(np.concatenate(domains), m, 0, None)

    @staticmethod
    def _read(task, mosek, trm, m: int) -> Dict[str, Any]:
        soltype = mosek.soltype.itr
        if not task.solutiondef(soltype) and task.solutiondef(mosek.soltype.bas):
            soltype = mosek.soltype.bas
        raw: Dict[str, Any] = {"trm": _name(trm), "solsta": "unknown", "prosta": "unknown",
                               "x": None, "y": None, "pobj": float("nan"), "dobj": float("nan")}
        if task.solutiondef(soltype):
            raw["solsta"] = _name(task.getsolsta(soltype))
            raw["prosta"] = _name(task.getprosta(soltype))
            raw["x"] = np.asarray(task.getxx(soltype), dtype=float)
            raw["y"] = np.asarray(task.getaccdotys(soltype), dtype=float) if m else np.zeros(0)
            raw["pobj"] = float(task.getprimalobj(soltype))
            raw["dobj"] = float(task.getdualobj(soltype))
        raw["iterations"] = int(task.getintinf(mosek.iinfitem.intpnt_iter))
        raw["solve_time"] = float(task.getdouinf(mosek.dinfitem.optimizer_time))
        return raw

    def invert(self, raw, program: ConicProgram, data) -> SolverSolution:
        status = self.status_of(raw["solsta"], raw["trm"])
        raw_status = f"solsta {raw['solsta']}, prosta {raw['prosta']}, termination {raw['trm']}"
        y = None
        if raw["y"] is not None:
            y = np.empty(program.n_constraints)
            y[data["perm"]] = raw["y"]
        if status == base.INFEASIBLE:
            primal = dual = np.inf
        elif status == base.UNBOUNDED:
            primal = dual = -np.inf
        else:
            primal = raw["pobj"] + program.c0
            dual = raw["dobj"] + program.c0
        return SolverSolution(
            status=status, raw_status=raw_status, solver=self.name, x=raw["x"], y=y,
            primal_objective=primal, dual_objective=dual, iterations=raw.get("iterations", 0),
            solve_time=raw.get("solve_time", 0.0),
            info={"solsta": raw["solsta"], "prosta": raw["prosta"], "termination": raw["trm"]})
