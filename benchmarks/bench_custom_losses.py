"""Custom smooth losses against the equivalent built-in fit, with drokit's DEFAULT fit (issue 19).

Goal of issue 19 measured here: "Custom smooth losses (sympy smooth hinge, modified Huber, pseudo-Huber)
within 2x of the equivalent built-in fit".

What is measured
----------------
For each pair (custom loss, reference loss) and each data set, both fits are the DEFAULT fit:
``dk.DROClassifier(loss=L, ambiguity=dk.Wasserstein(metric, radius=r)).fit(X, y)`` (``DRORegressor`` for
the regression losses) with ``metric = dk.GroundMetric(label=dk.LabelCost(kappa))``, kappa = inf by default
(labels never move) and every other setting at its default (``method="auto"``, ``solver="auto"``,
``on_inaccurate="raise"``).  An uncertified fit raises and is reported as a failure with its message,
never as a timing.  Each fit runs in its own child process (multiprocessing, 'spawn') with a timeout, as in
``benchmarks/bench_scaling.py``: the child builds the data, builds the loss (``from_sympy`` for a sympy
loss, after a first untimed ``from_sympy`` of the same expression; its seconds are the CSV's ``build_s``,
not part of the fit), warms up with an untimed fit of the same loss on 200 synthetic rows at the same
radius and kappa (imports, lazily loaded back-ends, sympy's lambdify), then times ``fit`` alone with
``time.perf_counter`` (best of ``--repeat``), with a fresh loss object (a sympy loss keeps tangent state).
``ratio`` = custom seconds / reference seconds; "within 2x" = both certified and ratio <= 2.  Objectives
(``result_.objective``) are compared by ``|custom - reference| / |reference|``; when the two losses are the
same function the difference should be at most about 1e-6 ("agrees": <= 1e-6), otherwise it is only shown.
Each fit's ``result_.status``, ``relative_gap``, ``method`` and ``solver`` (what certified it:
``barrier_master``, ``phase_one``, ``clarabel``, ...) are recorded, and for the custom fit where its time
goes (compile, phase 1, structured barrier master, conic masters, oracle, lower bound, evaluation; the
fields of ``bench_scaling._summary``) plus ``auxiliary["tangent_solves"]`` for an outer-approximated loss.

Losses (``e`` is drokit's margin ``y f(x)`` in classification, a non-increasing loss; the residual
``f(x) - y`` in regression; see drokit/losses/builtin.py and drokit/losses/symbolic.py)
-------------------------------------------------------------------------------------------------------
classification (DROClassifier)
  sympy smooth hinge   ``Piecewise((1/2 - e, e <= 0), ((1 - e)^2/2, e <= 1), (0, True))`` -- exactly the
                       built-in ``"smooth_hinge"``; compiled by tangent outer approximation (form "outer").
                       Reference: ``"smooth_hinge"`` (same function).
  sympy logistic       ``log(1 + exp(-e))`` -- the built-in ``"logistic"``; recognized as log-sum-exp
                       (exponential cones).  Reference: ``"logistic"`` (same function).
  sympy modified Huber ``Piecewise((-4 e, e < -1), ((1 - e)^2, e <= 1), (0, True))`` (the modified Huber
                       loss of the margin: ``max(0, 1 - e)^2`` for ``e >= -1``, ``-4 e`` below; lip 4);
                       form "outer".  drokit has no built-in modified Huber, so it gets two references:
                       (a) ``"smooth_hinge"``, the closest built-in of the same class (also a Huberized hinge:
                       smooth, quadratic on a bounded interval, linear tail, SOCP) -- a DIFFERENT function
                       (``modified_huber(e) = 8 smooth_hinge((e + 1)/2)``, lip 4 against 1), so the objectives
                       are not comparable, only the times; (b) the same function given as a hand-written
                       :class:`~drokit.losses.Loss` subclass written the way drokit's built-ins are
                       (``ModifiedHuberSOC`` below: the smooth hinge's Moreau-envelope SOC epigraph scaled,
                       closed-form conjugate ``a + a^2/4`` on ``[-4, 0]``, SOC dual hypograph) -- "hand-written
                       SOC", the same optimum.
regression (DRORegressor)
  sympy pseudo-Huber   ``sqrt(1 + e^2) - 1`` (delta = 1: ``delta^2 (sqrt(1 + (e/delta)^2) - 1)``), recognized as
                       ``sqrt`` of a quadratic (one second-order cone).  Pseudo-Huber is symmetric in ``e``, so it
                       is not a margin loss (it would penalise confident correct predictions): it is a regression
                       loss (drokit's own docstring uses it with ``task="regression"``).  No built-in either: (a)
                       ``"huber"`` (delta = 1), the closest built-in (same lip 1, quadratic at 0, SOCP) -- a
                       DIFFERENT function; (b) ``PseudoHuberSOC`` below, a hand-written Loss subclass (epigraph
                       ``||(u, 1)|| <= t + 1``, conjugate ``1 - sqrt(1 - a^2)`` on ``[-1, 1]``) -- the same optimum.
  sympy Huber          ``Piecewise((e^2/2, |e| <= 1), (|e| - 1/2, True))`` -- exactly the built-in ``"huber"``
  (Piecewise)          (delta 1), form "outer" (a same-function check of the outer path in regression).

Data
----
classification: ``hepatitis`` (155 rows, 6 numerical + 13 categorical; drokit's packaged copy or
DROKIT_SHARED_DATASETS, the paper's preprocessing, numerical features standardized -- as
benchmarks/bench_sun2025_table1.py loads it) and ``synthetic`` (``bench_scaling.make_synthetic``: 10
numerical + 10 categorical features, N from ``--sizes``, default 1,000 and 10,000).
regression: ``diabetes`` (scikit-learn's bundled table, 442 rows x 10 numerical features; X and y
standardized) and ``synthetic-reg`` (the same synthetic 10 + 10 features, N from ``--sizes``, with a continuous
response: a linear model of the numerical features and level effects plus standard normal noise, then
standardized).  Radius from ``--radii`` (default 0.1; 0.01 is the other setting of bench_scaling).

As bench_scaling does, drokit is imported from a snapshot of ``drokit/`` at HEAD (``--no-snapshot``: the work
tree), BLAS is limited to one thread in the child (``threadpoolctl``), and the output starts with the git
commit, date, machine and exact command (the CSV's ``#`` lines).

Run:  python benchmarks/bench_custom_losses.py [--quick] [--cases hepatitis synthetic diabetes synthetic-reg]
          [--sizes 1000 10000] [--radii 0.1 0.01] [--kappa inf] [--pairs NAME ...] [--timeout 300]
          [--repeat 1] [--seed 19] [--out FILE.csv] [--markdown] [--quiet] [--no-snapshot]
      python benchmarks/bench_custom_losses.py --render FILE.csv [--markdown]   (table of a saved run)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scaling as bs  # noqa: E402  (git_commit, header_lines, snapshot, make_synthetic, memory helpers)

CLASSIFICATION_CASES = ("hepatitis", "synthetic")
REGRESSION_CASES = ("diabetes", "synthetic-reg")
CASES = CLASSIFICATION_CASES + REGRESSION_CASES
DEFAULT_SIZES = (1_000, 10_000)
QUICK_SIZES = (300,)
WARMUP_N = 200

#: (name, custom spec, reference spec, same function?) -- the specs are built by :func:`build_loss`
PAIRS = {
    "smooth_hinge": ("sympy_smooth_hinge", "smooth_hinge", True),
    "logistic": ("sympy_logistic", "logistic", True),
    "modified_huber~smooth_hinge": ("sympy_modified_huber", "smooth_hinge", False),
    "modified_huber": ("sympy_modified_huber", "modified_huber_soc", True),
    "pseudo_huber~huber": ("sympy_pseudo_huber", "huber", False),
    "pseudo_huber": ("sympy_pseudo_huber", "pseudo_huber_soc", True),
    "huber_piecewise": ("sympy_huber_piecewise", "huber", True),
}
REGRESSION_SPECS = {"sympy_pseudo_huber", "sympy_huber_piecewise", "huber", "pseudo_huber_soc"}
LABELS = {"sympy_smooth_hinge": "sympy smooth hinge", "smooth_hinge": "built-in smooth_hinge",
          "sympy_logistic": "sympy logistic", "logistic": "built-in logistic",
          "sympy_modified_huber": "sympy modified Huber", "modified_huber_soc": "hand-written SOC mod. Huber",
          "sympy_pseudo_huber": "sympy pseudo-Huber", "huber": "built-in huber",
          "pseudo_huber_soc": "hand-written SOC pseudo-Huber", "sympy_huber_piecewise": "sympy Huber (Piecewise)"}


def pair_task(name: str) -> str:
    return "regression" if PAIRS[name][0] in REGRESSION_SPECS else "classification"


# ------------------------------------------------------------------------------------------- losses (child)
def sympy_expression(spec: str):
    """``(expr, e, task)`` of a sympy spec (module docstring)."""
    import sympy as sp
    e = sp.Symbol("e")
    half = sp.Rational(1, 2)
    if spec == "sympy_smooth_hinge":
        return sp.Piecewise((half - e, e <= 0), ((1 - e) ** 2 / 2, e <= 1), (0, True)), e, "classification"
    if spec == "sympy_logistic":
        return sp.log(1 + sp.exp(-e)), e, "classification"
    if spec == "sympy_modified_huber":
        return sp.Piecewise((-4 * e, e < -1), ((1 - e) ** 2, e <= 1), (0, True)), e, "classification"
    if spec == "sympy_pseudo_huber":
        delta = sp.Integer(1)
        return delta ** 2 * (sp.sqrt(1 + (e / delta) ** 2) - 1), e, "regression"
    if spec == "sympy_huber_piecewise":
        return sp.Piecewise((e ** 2 / 2, sp.Abs(e) <= 1), (sp.Abs(e) - half, True)), e, "regression"
    raise KeyError(spec)


def handwritten_losses() -> dict:
    """The two hand-written :class:`~drokit.losses.Loss` subclasses (defined after drokit is imported, so
    that a child imports drokit from the snapshot first)."""
    from drokit.conic.builder import Affine
    from drokit.losses import CLASSIFICATION, REGRESSION, Loss
    from drokit.losses.base import quadratic_epigraph

    class ModifiedHuberSOC(Loss):
        """``L(e) = -4 e`` (e < -1), ``(1 - e)^2`` (-1 <= e < 1), ``0`` (e >= 1) = ``8 SH((e + 1) / 2)``, SH the
        built-in smooth hinge; lip 4.  Epigraph: SH's Moreau envelope ``SH(z) = min_w (w - z)^2/2 + max(1 - w, 0)``
        with ``z = (u + 1)/2``, ``t / 8`` in place of ``t``; conjugate ``L*(a) = a + a^2/4`` on ``[-4, 0]``."""

        name = "modified_huber_soc"
        task = CLASSIFICATION
        decreasing = True
        cone_class = "SOCP"

        def value(self, e):
            e = np.asarray(e, dtype=float)
            return np.where(e < -1, -4.0 * e, np.where(e < 1, (1.0 - e) ** 2, 0.0))

        def derivative(self, e):
            e = np.asarray(e, dtype=float)
            return np.where(e < -1, -4.0, np.where(e < 1, -2.0 * (1.0 - e), 0.0))

        def second_derivative(self, e):
            e = np.asarray(e, dtype=float)
            return np.where((e > -1) & (e < 1), 2.0, 0.0)

        def conjugate(self, a):
            a = np.asarray(a, dtype=float)
            return np.where((a >= -4.0) & (a <= 0.0), a + 0.25 * a ** 2, np.inf)

        def slope_domain(self):
            return -4.0, 0.0

        def dual_hypograph(self, pb, m, v):
            """``w <= -m L*(v/m) = -v - v^2/(4 m)``: ``v^2 <= 4 m s`` (rotated SOC ``||(sqrt 2 v, m - 2 s)|| <=
            m + 2 s``), ``w = -v - s``, and ``-4 m <= v <= 0``."""
            s = pb.aux("dual_quadratic", m.size)
            pb.add_soc(m + s * 2.0, [v * np.sqrt(2.0), m - s * 2.0])
            pb.add_nonneg(Affine.vstack([v + m * 4.0, -v]))
            return -v - s

        @property
        def lipschitz(self):
            return 4.0

        def epigraph(self, pb, u, t):
            K = u.size
            w = pb.aux("mhuber_w", K)
            q = pb.aux("mhuber_q", K)
            quadratic_epigraph(pb, w - (u * 0.5 + 0.5), q)
            pb.add_nonneg(Affine.vstack([t * 0.125 - q, t * 0.125 - q + w - 1.0]))

    class PseudoHuberSOC(Loss):
        """``L(e) = sqrt(1 + e^2) - 1``, lip 1.  Epigraph ``||(u, 1)|| <= t + 1``; conjugate
        ``L*(a) = 1 - sqrt(1 - a^2)`` on ``[-1, 1]``."""

        name = "pseudo_huber_soc"
        task = REGRESSION
        decreasing = False
        cone_class = "SOCP"

        def value(self, e):
            e = np.asarray(e, dtype=float)
            return e * e / (np.sqrt(1.0 + e * e) + 1.0)     # no cancellation at small |e|

        def derivative(self, e):
            e = np.asarray(e, dtype=float)
            return e / np.sqrt(1.0 + e * e)

        def second_derivative(self, e):
            e = np.asarray(e, dtype=float)
            return (1.0 + e * e) ** -1.5

        def conjugate(self, a):
            a = np.asarray(a, dtype=float)
            inside = np.abs(a) <= 1.0
            return np.where(inside, 1.0 - np.sqrt(np.clip(1.0 - a * a, 0.0, None)), np.inf)

        def slope_domain(self):
            return -1.0, 1.0

        def dual_hypograph(self, pb, m, v):
            """``w <= -m L*(v/m) = sqrt(m^2 - v^2) - m``: ``||(w + m, v)|| <= m``."""
            w = pb.aux("dual_pseudo_huber", m.size)
            pb.add_soc(m, [w + m, v])
            return w

        @property
        def lipschitz(self):
            return 1.0

        def epigraph(self, pb, u, t):
            pb.add_soc(t + 1.0, [u, pb.constant(np.ones(u.size))])

    return {"modified_huber_soc": ModifiedHuberSOC, "pseudo_huber_soc": PseudoHuberSOC}


def build_loss(spec: str):
    """``(loss for the estimator, info dict)``: a sympy loss (``from_sympy``), a hand-written Loss, or a
    built-in name (passed as the string, as a user does)."""
    if spec.startswith("sympy_"):
        from drokit.losses import from_sympy
        expr, e, task = sympy_expression(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)      # a numeric convexity / Lipschitz note
            t0 = time.perf_counter()
            loss = from_sympy(expr, e, task=task)
            built = time.perf_counter() - t0
        return loss, {"form": f"{loss.form} ({loss.cone_class})", "lipschitz": loss.lipschitz, "build_s": built}
    if spec in ("modified_huber_soc", "pseudo_huber_soc"):
        loss = handwritten_losses()[spec]()
        return loss, {"form": "hand-written (SOCP)", "lipschitz": loss.lipschitz}
    from drokit.losses import get_loss
    return spec, {"form": f"built-in ({get_loss(spec).cone_class})", "lipschitz": get_loss(spec).lipschitz}


# ------------------------------------------------------------------------------------------- data
def make_synthetic_regression(n: int, seed: int):
    """``bench_scaling.make_synthetic``'s features with a continuous response (module docstring)."""
    X, _ = bs.make_synthetic(n, seed)
    model = np.random.default_rng([seed, 4, 0])          # the same model at every N
    cats = [c for c in X.columns if c.startswith("c")]
    nums = [c for c in X.columns if c.startswith("x")]
    beta = model.normal(0, 0.5, len(nums))
    effects = {c: model.normal(0, 0.6, len(X[c].cat.categories)) for c in cats}
    y = X[nums].to_numpy() @ beta
    for c in cats:
        y = y + effects[c][X[c].cat.codes.to_numpy()]
    y = y + np.random.default_rng([seed, 4, n]).standard_normal(n)
    return X, (y - y.mean()) / y.std()


def load_case(case: str, n: int, seed: int):
    """``(X, y)``; ``n`` is used by the synthetic cases only."""
    if case == "hepatitis":   # as benchmarks/bench_sun2025_table1.py.load
        import drokit as dk
        X, y = dk.datasets.load("hepatitis", data_home=os.environ.get("DROKIT_SHARED_DATASETS"), standardize=True)
        return X, y.to_numpy()
    if case == "synthetic":
        return bs.make_synthetic(n, seed)
    if case == "diabetes":
        from sklearn.datasets import load_diabetes
        X, y = load_diabetes(return_X_y=True, as_frame=True)
        X = (X - X.mean()) / X.std()
        y = y.to_numpy(dtype=float)
        return X, (y - y.mean()) / y.std()
    if case == "synthetic-reg":
        return make_synthetic_regression(n, seed)
    raise KeyError(case)


def case_size(case: str, n: int) -> int:
    return {"hepatitis": 155, "diabetes": 442}.get(case, n)


# ------------------------------------------------------------------------------------------- one fit (child)
def _estimator(spec: str, loss, kappa: float, radius: float):
    import drokit as dk
    metric = dk.GroundMetric(label=dk.LabelCost(kappa))
    cls = dk.DRORegressor if spec in REGRESSION_SPECS else dk.DROClassifier
    return cls(loss=loss, ambiguity=dk.Wasserstein(metric, radius=radius))


def _fit_summary(res, seconds: float) -> dict:
    out = bs._summary(res, seconds)
    bm = res.auxiliary.get("barrier_master") or {}
    out.update(fit_s=out.pop("drokit_s"), solver=res.solver, lower_bound=res.lower_bound,
               upper_bound=res.upper_bound, barrier_certified=bm.get("certified") if bm else None,
               tangent_solves=res.auxiliary.get("tangent_solves"), tangents=res.auxiliary.get("tangents"))
    return out


def _child(conn, spec: str, case: str, n: int, seed: int, kappa: float, radius: float, repeat: int) -> None:
    """One timed fit in a fresh process; sends a dict (``ok`` or ``error``) through ``conn``."""
    bs._use_snapshot()
    out = {"pid": os.getpid()}
    try:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(limits=1):
            X, y = load_case(case, n, seed)
            try:  # warm-up (not timed): imports, lazily loaded back-ends, sympy's lambdify
                maker = make_synthetic_regression if spec in REGRESSION_SPECS else bs.make_synthetic
                Xw, yw = maker(WARMUP_N, seed + 1)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _estimator(spec, build_loss(spec)[0], kappa, radius).fit(Xw, yw)
            except Exception:
                pass
            out["base_mb"] = bs._maxrss_mb()
            info = {k: v for k, v in build_loss(spec)[1].items() if k != "build_s"}
            conn.send({"started": True, **info})   # the parent's timeout runs from here
            best = None
            for _ in range(repeat):
                loss, info = build_loss(spec)           # a fresh loss object per fit (not timed)
                out.update(info)
                est = _estimator(spec, loss, kappa, radius)
                t0 = time.perf_counter()
                try:
                    est.fit(X, y)
                except Exception as exc:   # uncertified (SolverError) or anything else: a failure
                    out.update(error=f"{type(exc).__name__}: {exc}", failed_after_s=time.perf_counter() - t0,
                               peak_mb=bs._maxrss_mb())
                    conn.send(out)
                    return
                t = time.perf_counter() - t0
                if best is None or t < best["fit_s"]:
                    best = _fit_summary(est.result_, t)
            out.update(best, peak_mb=bs._maxrss_mb())
    except Exception as exc:
        out.update(error=f"{type(exc).__name__}: {exc}", peak_mb=bs._maxrss_mb())
    conn.send(out)


def run_fit(spec, case, n, seed, kappa, radius, repeat, timeout) -> dict:
    """:func:`_child` with a timeout (``bench_scaling.run_in_child``); a fit still running is killed."""
    return bs.run_in_child(_child, (spec, case, n, seed, kappa, radius, repeat), timeout, seconds_key="fit_s")


# ------------------------------------------------------------------------------------------- rows
PER_FIT = ["fit_s", "status", "relative_gap", "objective", "method", "solver", "form", "error"]
WHERE = ["compile_s", "phase1_s", "barrier_s", "barrier_certified", "masters", "masters_s", "master_iterations",
         "master_statuses", "oracle_s", "lb_source", "lb_s", "eval_s", "tangent_solves", "tangents", "working_rows",
         "build_s", "peak_mb"]
FIELDS = (["pair", "task", "case", "N", "kappa", "radius", "custom", "reference", "same_loss", "ratio", "within_2x",
           "objective_rel_diff", "agrees"]
          + [f"custom_{k}" for k in PER_FIT] + [f"ref_{k}" for k in PER_FIT] + [f"custom_{k}" for k in WHERE]
          + [f"ref_{k}" for k in ("phase1_s", "barrier_s", "barrier_certified", "masters", "masters_s", "lb_s",
                                  "eval_s", "peak_mb")])


def pair_row(pair, case, n, kappa, radius, custom: dict, ref: dict) -> dict:
    c_spec, r_spec, same = PAIRS[pair]
    row = {"pair": pair, "task": pair_task(pair), "case": case, "N": n, "kappa": kappa, "radius": radius,
           "custom": c_spec, "reference": r_spec, "same_loss": same}
    for prefix, fit in (("custom_", custom), ("ref_", ref)):
        for k in PER_FIT + WHERE:
            if k in fit:
                row[prefix + k] = fit[k]
    ok = not custom.get("error") and not ref.get("error")
    if ok:
        row["ratio"] = custom["fit_s"] / ref["fit_s"]
        row["within_2x"] = row["ratio"] <= 2.0
        diff = abs(custom["objective"] - ref["objective"]) / max(abs(ref["objective"]), 1e-12)
        row["objective_rel_diff"] = diff
        row["agrees"] = (diff <= 1e-6) if same else None
    else:
        row["within_2x"] = False
    return row


# ------------------------------------------------------------------------------------------- output
def _num(v):
    return bs._num(v)


def _secs(row, key) -> str:
    err = row.get(key.replace("fit_s", "error"))
    if err:
        return "timeout" if str(err).startswith("timeout") else "failed"
    x = _num(row.get(key))
    return "-" if x is None else f"{x:.3f}" if x < 1 else f"{x:.2f}"


def _cert(row, prefix) -> str:
    if row.get(prefix + "error"):
        return "-"
    gap = _num(row.get(prefix + "relative_gap"))
    return f"{row.get(prefix + 'status')} {gap:.0e} {row.get(prefix + 'method')}/{row.get(prefix + 'solver')}" \
        if gap is not None else "-"


def _bool(v) -> str:
    if v in (None, ""):
        return "-"
    return "yes" if str(v) == "True" else "NO" if str(v) == "False" else str(v)


TABLE = ["case", "N", "radius", "custom loss (form)", "reference", "custom s", "ref s", "ratio", "<= 2x",
         "custom: status gap method/solver", "ref: status gap method/solver", "objective custom", "objective ref",
         "rel. diff", "agrees"]


def _cells(r) -> list:
    ratio = _num(r.get("ratio"))
    diff = _num(r.get("objective_rel_diff"))
    same = str(r.get("same_loss")) == "True"
    oc, orf = _num(r.get("custom_objective")), _num(r.get("ref_objective"))
    return [r["case"], f"{int(float(r['N'])):,}", f"{float(r['radius']):g}",
            f"{LABELS[r['custom']]} ({r.get('custom_form') or '-'})", LABELS[r["reference"]],
            _secs(r, "custom_fit_s"), _secs(r, "ref_fit_s"), "-" if ratio is None else f"{ratio:.2f}x",
            "yes" if str(r.get("within_2x")) == "True" else "NO", _cert(r, "custom_"), _cert(r, "ref_"),
            "-" if oc is None else f"{oc:.9f}", "-" if orf is None else f"{orf:.9f}",
            "-" if diff is None else f"{diff:.1e}", _bool(r.get("agrees")) if same else "n/a (other loss)"]


def _table(heads, cells, markdown) -> list:
    if markdown:
        return (["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
                + ["| " + " | ".join(c) + " |" for c in cells])
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(heads)]
    return (["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
            + ["  ".join(c.rjust(w) for c, w in zip(cs, widths)) for cs in cells])


def render(rows, markdown: bool) -> str:
    lines = _table(TABLE, [_cells(r) for r in rows], markdown)
    fails = []
    for r in rows:
        for prefix, who in (("custom_", "custom"), ("ref_", "reference")):
            if r.get(prefix + "error"):
                fails.append(f"{'- ' if markdown else ''}{r['case']} N={int(float(r['N'])):,} radius="
                             f"{float(r['radius']):g} {LABELS[r[who]]}: {r[prefix + 'error']}")
    if fails:
        lines += [""] + list(dict.fromkeys(fails))
    return "\n".join(lines)


def breakdown(rows, markdown: bool) -> str:
    """Where each certified custom fit's time goes (once per custom fit, not per pair)."""
    heads = ["case", "N", "radius", "custom loss", "fit s", "compile", "phase 1", "barrier master (certified?)",
             "conic masters (n) s", "oracle", "lower bound", "evaluation", "tangent solves", "from_sympy s"]
    seen, cells = set(), []
    for r in rows:
        key = (r["case"], str(r["N"]), str(r["radius"]), r["custom"])
        if key in seen or r.get("custom_error"):
            continue
        seen.add(key)
        f = lambda k: "-" if _num(r.get("custom_" + k)) is None else f"{_num(r.get('custom_' + k)):.2f}"  # noqa: E731
        cells.append([r["case"], f"{int(float(r['N'])):,}", f"{float(r['radius']):g}", LABELS[r["custom"]],
                      f("fit_s"), f("compile_s"), f("phase1_s"),
                      f"{f('barrier_s')} ({_bool(r.get('custom_barrier_certified'))})",
                      f"({int(_num(r.get('custom_masters')) or 0)}) {f('masters_s')}", f("oracle_s"), f("lb_s"),
                      f("eval_s"), "-" if _num(r.get("custom_tangent_solves")) is None
                      else str(int(_num(r.get("custom_tangent_solves")))), f("build_s")])
    return "\n".join(_table(heads, cells, markdown))


def summary(rows) -> str:
    out = []
    for pair in dict.fromkeys(r["pair"] for r in rows):
        group = [r for r in rows if r["pair"] == pair]
        ok = [r for r in group if _num(r.get("ratio")) is not None]
        within = sum(str(r.get("within_2x")) == "True" for r in group)
        worst = max((_num(r["ratio"]) for r in ok), default=None)
        c_spec, r_spec, _ = PAIRS[pair]
        out.append(f"{LABELS[c_spec]} vs {LABELS[r_spec]}: within 2x in {within} of {len(group)} settings"
                   + (f", worst ratio {worst:.2f}x" if worst is not None else "")
                   + (f", {len(group) - len(ok)} with a failed or timed-out fit" if len(ok) < len(group) else ""))
    return "\n".join(out)


def print_report(header, rows, markdown) -> None:
    print("\n".join(header) + "\n")
    print(render(rows, markdown))
    print("\nWhere the custom fit's time goes (seconds):\n")
    print(breakdown(rows, markdown))
    print("\nSummary (goal: custom within 2x of the reference fit, both certified):\n")
    print(summary(rows))


# ------------------------------------------------------------------------------------------- main
def main(argv=None):
    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: synthetic N {QUICK_SIZES}, timeout 60 s (unless given)")
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    ap.add_argument("--sizes", nargs="+", type=int, default=None,
                    help=f"N of the synthetic cases (default {' '.join(map(str, DEFAULT_SIZES))})")
    ap.add_argument("--radii", nargs="+", type=float, default=[0.1])
    ap.add_argument("--kappa", type=float, default=math.inf, help="label cost (default inf: labels never move)")
    ap.add_argument("--pairs", nargs="+", choices=list(PAIRS), default=list(PAIRS))
    ap.add_argument("--timeout", type=float, default=None, help="seconds per timed fit (default 300; --quick 60)")
    ap.add_argument("--repeat", type=int, default=1, help="timed fits per child, fastest reported (default 1)")
    bs.add_common_arguments(ap, "pair row")
    args = ap.parse_args(argv[1:])

    if args.render:
        header, rows = bs.read_csv(args.render)
        print_report(header, rows, args.markdown)
        return 0

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    sizes = sorted(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES))
    timeout = args.timeout if args.timeout is not None else (60.0 if args.quick else 300.0)
    commit, dirty = bs.git_commit()
    snapshot = commit is not None and not args.no_snapshot
    if snapshot:
        bs.snapshot_drokit(commit)
    header = bs.header_lines(argv, commit, dirty, snapshot)
    header.append(f"settings: kappa {args.kappa:g}, radii {' '.join(f'{r:g}' for r in args.radii)}, timeout "
                  f"{timeout:.0f} s per fit, repeat {args.repeat}, seed {args.seed}, one BLAS thread per child")
    for line in header:
        log(line)
    rows, fits = [], {}
    for case in args.cases:
        task = "regression" if case in REGRESSION_CASES else "classification"
        pairs = [p for p in args.pairs if pair_task(p) == task]
        for n in (sizes if case.startswith("synthetic") else [case_size(case, 0)]):
            for radius in args.radii:
                for pair in pairs:
                    specs = PAIRS[pair][:2]
                    for spec in specs:
                        key = (spec, case, n, radius)
                        if key in fits:
                            continue
                        t0 = time.perf_counter()
                        fits[key] = out = run_fit(spec, case, n, args.seed, args.kappa, radius, args.repeat,
                                                  timeout)
                        tag = f"[{case} N={n:,} radius={radius:g}] {LABELS[spec]}"
                        if out.get("error"):
                            log(f"{tag}: FAILED after {time.perf_counter() - t0:.0f} s wall: {out['error']}")
                        else:
                            log(f"{tag}: {out['fit_s']:.3f} s, {out['status']} gap {out['relative_gap']:.1e}, "
                                f"{out['method']}/{out['solver']}, objective {out['objective']:.10f}, "
                                f"phase 1 {bs._num(out.get('phase1_s')) or 0:.2f} s, barrier "
                                f"{out.get('barrier_s', 0):.2f} s (certified {out.get('barrier_certified')}), "
                                f"{out.get('masters')} masters {out.get('masters_s', 0):.2f} s")
                    rows.append(pair_row(pair, case, n, args.kappa, radius, fits[(specs[0], case, n, radius)],
                                         fits[(specs[1], case, n, radius)]))
                    if args.out:
                        bs.write_csv(args.out, header, rows, FIELDS)
    print_report(header, rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
