"""The cutting plane's certification without a conic master (phase 1's smoothed dual point, then the
structured barrier solver of the restricted master, :mod:`drokit.reformulations.barrier_master`),
checked independently of drokit's own bookkeeping:

* default cutting-plane fits of small random instances (every phase-1 loss, ground norms 1 / 2 / inf,
  finite and infinite kappa, immutable features) against the brute-force reference
  (:mod:`tests.reference.brute_force`) and ``method="monolithic"``: the objective is the optimum, the lower
  bound is below it and the upper bound is the exact worst-case risk of the returned model; which path
  certified each fit is recorded (a wrapper around ``barrier_master``) and enough of them take the barrier
  path;
* ``barrier_master`` called directly, from poor starts and from phase 1's point: its bounds bracket the
  optimum and its dual point proves its lower bound, certified or not;
* weak duality of the barrier's dual point ``mu / d_r`` at arbitrary feasible points and barrier weights;
* mutations of the Newton system (a Schur-complement term dropped, scaled directions) and of the dual
  slopes never make a fit wrong or a lower bound exceed the optimum (the certificate does not trust the
  Newton iterations); doctored bounds and objectives are caught by these checks (so they can fail);
* the :class:`~drokit.FitResult` of a fit certified without a master (its lazily built program, cvxpy
  export, sizes, status).

"The optimum" is never taken from a conic solve alone: :func:`exact_risk` evaluates the worst-case risk of
a fixed model exactly (the piecewise-linear minimization over ``lambda``, at every breakpoint, from the
reference's configuration rows -- HiGHS's LP in ``brute_force.worst_case_risk`` is off by up to ~2e-8),
and the optimum's upper bound ``opt`` is the smallest exact risk of the reference's, the monolithic fit's
and the cutting plane's models.  A lower bound above ``opt`` is therefore a proven error.
"""

import dataclasses
import functools
import inspect
import os
import sys
import textwrap
import warnings
from collections import Counter

import numpy as np
import pytest

import drokit as dk
import drokit.reformulations.barrier_master as bmm
import drokit.reformulations.epigraph as epi
import drokit.reformulations.own_solvers as cp_module   # the stages before the conic masters
import drokit.certificates.lower_bound as lb
from drokit.conic.program import ConicProgram
from drokit.reformulations.level_max import LevelMaxColumns
from drokit.reformulations.phase_one import phase_one
from drokit.reformulations.row_terms import RowTerms, parameter_layout
from drokit.evaluation.worst_case import lambda_floor
from drokit.oracles import make_oracle
from drokit.oracles.enumeration import concat_rows, enumerate_configurations, take_rows, unique_rows

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_instances as fz  # noqa: E402

bf = fz.bf

#: lower_bound <= opt + BOUND_RTOL max(1, |opt|): rounding only (opt is an exact risk)
BOUND_RTOL = 1e-9
#: the fits' objective against the optimum (the cutting plane's gap_tol)
OBJ_RTOL = 1e-6

LOSS_TASK = {"logistic": "classification", "hinge": "classification", "smooth_hinge": "classification",
             "huber": "regression", "absolute": "regression", "epsilon_insensitive": "regression",
             "pinball": "regression"}
NORMS = (1.0, 2.0, np.inf)
IMMUTABLE = ("none", "numerical", "categorical")


# ------------------------------------------------------------------------------------------ instances
def draw(seed: int, loss: str, norm_p: float, finite_kappa: bool) -> fz.Instance:
    """A small random instance (N 8..24, 1-2 numerical and 1-2 categorical features) with the given loss,
    ground norm and label cost; every third seed an immutable numerical feature, every third an immutable
    categorical one.  Logistic data are redrawn until the optimum is attained."""
    rng = np.random.default_rng([2025, seed])
    task = LOSS_TASK[loss]
    n = int(rng.integers(1, 3))
    levels = [(2,), (3,), (2, 2), (2, 3)][int(rng.integers(4))]
    N = int(rng.integers(8, 25))
    gamma = np.round(rng.uniform(0.4, 2.0, size=n), 3)
    delta = np.round(rng.uniform(0.4, 1.8, size=len(levels)), 3)
    immutable = IMMUTABLE[seed % 3]
    if immutable == "numerical":
        gamma[int(rng.integers(n))] = np.inf
    elif immutable == "categorical":
        delta[int(rng.integers(len(levels)))] = np.inf
    cat_p = float([0.5, 1.0, 2.0][int(rng.integers(3))])
    kappa = round(float(rng.uniform(0.6, 2.5)), 3) if finite_kappa else np.inf
    radius = round(float(rng.uniform(0.02, 0.6)), 4)
    param = round(float(rng.uniform(*fz.LOSS_PARAMS[loss])), 4) if loss in fz.LOSS_PARAMS else None
    X, Z, y = bf.random_instance(int(rng.integers(2 ** 31)), N, n, list(levels), task)
    if loss == "logistic":
        y = attained_labels(rng, X, Z, levels, y, radius=radius, kappa=kappa, gamma=gamma, delta=delta)
        if y is None:   # separable along the unpenalized columns whatever the labels: another draw
            return draw(seed + 999, loss, norm_p, finite_kappa)
    return fz.Instance(seed=seed, task=task, loss=loss, loss_param=param, X_num=np.round(X, 6), Z=Z,
                       levels=tuple(levels), y=np.round(y, 6), radius=radius, norm_p=float(norm_p), cat_p=cat_p,
                       gamma=gamma, delta=delta, kappa=kappa, api="problem")


def attained_labels(rng, X, Z, levels, y, **weights):
    """Labels, redrawn (two of each class kept) until the logistic optimum is attained: no separating direction
    along the columns the radius leaves unpenalized; ``None`` after 200 draws."""
    for _ in range(200):
        free = fz.unpenalized_columns(X, Z, levels, **weights)
        if free.shape[1] == 0 or not bf.separable_direction_exists(free, y):
            return y
        y = rng.choice([-1.0, 1.0], size=y.size)
        y[rng.permutation(y.size)[:2]] = [-1.0, 1.0]
    return None


CASES = [(loss, p, fk) for loss in LOSS_TASK for p in NORMS for fk in (False, True)]


def case_id(case) -> str:
    loss, p, fk = case
    return f"{loss}-p{p:g}-{'kappa' if fk else 'nokappa'}"


@functools.lru_cache(maxsize=None)
def instance(i: int) -> fz.Instance:
    return draw(i, *CASES[i])


def exact_risk(inst: fz.Instance, intercept: float, coef) -> float:
    """The worst-case risk of the fixed model ``(intercept, coef)`` (drokit's coefficient order), exactly:
    ``min_{lam >= lam_min} lam eps + mean_n max_r (l_r - lam c_r)`` is convex piecewise linear in ``lam``,
    so its minimum is at ``lam_min`` or at a breakpoint ``(l_r - l_q) / (c_r - c_q)`` of one sample's rows;
    every candidate is evaluated.  The rows, costs and ``lam_min`` are the reference's."""
    coef = np.asarray(coef, dtype=float)
    n = inst.n_numerical
    X, Z, y = inst.repeated()
    kw = inst.reference_kwargs()
    sc, losses = bf.scenario_losses((float(intercept), coef[:n], coef[n:]), X, Z, list(inst.levels), y,
                                    task=kw["task"], loss=kw["loss"], loss_param=kw["loss_param"],
                                    delta=kw["delta"], cat_p=kw["cat_p"], kappa=kw["kappa"], units=kw["units"])
    lam_min = bf.lambda_min(coef[:n], task=kw["task"], loss=kw["loss"], loss_param=kw["loss_param"],
                            gamma=kw["gamma"], norm_p=kw["norm_p"], kappa=kw["kappa"])
    idx, cost = sc["idx"], np.asarray(sc["cost"], dtype=float)
    samples = [np.flatnonzero(idx == k) for k in range(int(idx.max()) + 1)]
    cand = [np.array([lam_min])]
    for r in samples:
        dl, dc = np.subtract.outer(losses[r], losses[r]), np.subtract.outer(cost[r], cost[r])
        cand.append(dl[dc > 0] / dc[dc > 0])
    lam = np.concatenate(cand)
    lam = lam[lam >= lam_min]
    vals = losses[None, :] - lam[:, None] * cost[None, :]
    worst = np.column_stack([vals[:, r].max(axis=1) for r in samples])
    return float(np.min(lam * inst.radius + worst.mean(axis=1)))


def scale(v: float) -> float:
    return max(1.0, abs(v))


def problem(inst: fz.Instance) -> dk.Problem:
    return dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                      task=inst.task)


def fit(inst: fz.Instance, method: str = "cutting_plane", **options) -> dk.FitResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem(inst).compile(inst.frame(), inst.y.copy(), method).solve(method_options=options or None)


def bound_instance(inst: fz.Instance):
    """The DROInstance a cutting-plane fit works on (its fitting view) and its oracle, as
    ``CompiledProblem._solve_cutting_plane`` builds them."""
    di = problem(inst).bind(inst.frame(), inst.y.copy()).fitting_view()
    return di, make_oracle(di, "dp")


#: ``FitResult.solver`` of a fit certified by phase 1 alone, and by the barrier master
SOLVERS_WITHOUT_MASTER = ("phase_one", "barrier_master")


class Recorder:
    """Wraps ``structured_master`` (the barrier master, and again with level-max columns where it gave up) and
    ``warm_phase_one`` (phase 1, from a subsample's point on large data) where the stages before the conic masters
    call them (:mod:`drokit.reformulations.own_solvers`) and keeps their results."""

    def __init__(self, mp: pytest.MonkeyPatch):
        self.barrier, self.phase_one = [], []
        real_bm, real_p1 = cp_module.structured_master, cp_module.warm_phase_one

        def barrier(*args, **kwargs):
            out = real_bm(*args, **kwargs)
            self.barrier.append(out)
            return out

        def first(*args, **kwargs):
            out = real_p1(*args, **kwargs)
            self.phase_one.append(out)
            return out

        mp.setattr(cp_module, "structured_master", barrier)
        mp.setattr(cp_module, "warm_phase_one", first)

    def path(self, res) -> str:
        """``phase_one`` (phase 1 certified alone), ``barrier`` (the barrier master certified),
        ``barrier->clarabel`` (it ran but did not certify) or ``clarabel`` (it did not run)."""
        certified = [b for b in self.barrier if b.certified]
        if res.solver in SOLVERS_WITHOUT_MASTER:
            return "barrier" if certified else "phase_one"
        return "barrier->clarabel" if self.barrier else "clarabel"


def fit_recorded(inst, **options):
    with pytest.MonkeyPatch.context() as mp:
        rec = Recorder(mp)
        res = fit(inst, **options)
    return res, rec


@dataclasses.dataclass
class Reference:
    opt: float                 # smallest exact risk of the reference's, the monolithic and the cut's models
    cvx: float                 # the reference's cvxpy value (nan if it failed)
    mono: dk.FitResult


@functools.lru_cache(maxsize=None)
def outcome(i: int):
    """``(default cutting-plane fit, its Recorder, Reference)`` of case ``i`` (computed once)."""
    inst = instance(i)
    res, rec = fit_recorded(inst)
    mono = fit(inst, "monolithic")
    X, Z, y = inst.repeated()
    risks = [exact_risk(inst, res.intercept, res.coef), exact_risk(inst, mono.intercept, mono.coef)]
    cvx = np.nan
    try:
        sol = bf.dro_value(X, Z, list(inst.levels), y, **inst.reference_kwargs())
        cvx = float(sol["value"])
        risks.append(exact_risk(inst, sol["b0"], np.r_[sol["bx"], sol["bz"]]))
    except RuntimeError:
        pass
    return res, rec, Reference(opt=min(risks), cvx=cvx, mono=mono)


def check_fit(inst, res, ref: Reference, label: str = "") -> None:
    """The checks of a cutting-plane fit against the reference (module docstring)."""
    opt, tol = ref.opt, BOUND_RTOL * scale(ref.opt)
    where = f"{label} seed {inst.seed} [{inst.summary()}] solver {res.solver}"
    assert res.status == "optimal", where
    assert res.relative_gap <= OBJ_RTOL, (where, res.relative_gap)
    assert res.lower_bound <= opt + tol, (where, "lower above the optimum", res.lower_bound, opt)
    assert opt - tol <= res.upper_bound, (where, "upper below the optimum", res.upper_bound, opt)
    # the upper bound is the exact worst-case risk of the returned model
    risk = exact_risk(inst, res.intercept, res.coef)
    assert abs(res.upper_bound - risk) <= tol, (where, "upper is not the model's risk", res.upper_bound, risk)
    assert abs(res.objective - opt) <= OBJ_RTOL * scale(opt), (where, res.objective, opt)
    assert abs(res.objective - ref.mono.objective) <= OBJ_RTOL * scale(opt), (where, res.objective,
                                                                              ref.mono.objective)
    if np.isfinite(ref.cvx):
        assert res.objective <= ref.cvx + OBJ_RTOL * scale(opt), (where, res.objective, ref.cvx)


# ------------------------------------------------------------------------------------------ default fits
@pytest.mark.parametrize("i", range(len(CASES)), ids=[case_id(c) for c in CASES])
def test_default_fit_equals_the_reference_optimum(i):
    inst = instance(i)
    res, rec, ref = outcome(i)
    check_fit(inst, res, ref)
    opt, tol = ref.opt, BOUND_RTOL * scale(ref.opt)
    # every certificate computed along the way, certified or not, is a valid bound
    for out in rec.barrier:
        assert out.lower_bound <= opt + tol, ("barrier master lower", out.lower_bound, opt)
        assert out.upper_bound >= opt - tol, ("barrier master upper", out.upper_bound, opt)
        assert (out.dual is None and out.lower_bound == -np.inf) or out.dual.value == out.lower_bound
    for first in rec.phase_one:
        assert first.lower_bound <= opt + tol, ("phase 1 lower", first.lower_bound, opt)
        assert first.upper_bound >= opt - tol, ("phase 1 upper", first.upper_bound, opt)
    path = rec.path(res)
    if path in ("phase_one", "barrier"):
        assert res.solver == SOLVERS_WITHOUT_MASTER[path == "barrier"] and res.raw_status == "certified"
        assert res.history == [] and "phase_one" in res.auxiliary
        assert res.auxiliary["lower_bound"]["source"] == "lagrangian"
    else:
        assert res.solver == "clarabel" and res.history
    if path == "barrier":
        out = rec.barrier[-1]
        # a fit's barrier master certifies to the fit's gap_tol
        assert out.upper_bound - out.lower_bound <= 1e-6 * scale(out.upper_bound)
        # the fit re-evaluates the method's dual point: equal up to rounding, or better
        assert res.coef == pytest.approx(out.coef, abs=0) and res.lower_bound >= out.lower_bound - 1e-14 * scale(opt)
        assert res.n_configuration_rows == out.rows.size
        record = res.auxiliary["barrier_master"]                  # what the fit reports of it
        assert (record["centerings"], record["newton_steps"], record["working_rows"]) == \
            (out.centerings, out.newton_steps, out.rows.size)
        assert res.iterations == rec.phase_one[-1].newton_steps + out.newton_steps
    if path == "phase_one":
        assert rec.phase_one[-1].certified and not rec.barrier


def path_counts():
    return Counter(outcome(i)[1].path(outcome(i)[0]) for i in range(len(CASES)))


def test_the_barrier_master_path_is_exercised():
    """Most cases are certified by the barrier master (measured: 38 of 42; the others fall back to
    Clarabel; phase 1 alone certified none of ~1,300 draws at the default gap_tol), so the checks above are
    not about the conic masters only."""
    counts = path_counts()
    print("certification paths:", dict(counts))
    assert counts["barrier"] >= 0.4 * len(CASES), counts
    called = counts["barrier"] + counts["barrier->clarabel"]
    assert called >= 0.6 * len(CASES), counts
    # per loss: the barrier master certified at least one case of every loss
    by_loss = Counter(CASES[i][0] for i in range(len(CASES)) if outcome(i)[1].path(outcome(i)[0]) == "barrier")
    assert set(by_loss) == set(LOSS_TASK), by_loss


@pytest.mark.parametrize("i", range(0, len(CASES), 4), ids=[case_id(CASES[i]) for i in range(0, len(CASES), 4)])
def test_structured_master_off_uses_the_conic_masters_and_agrees(i):
    inst = instance(i)
    _, _, ref = outcome(i)
    res, rec = fit_recorded(inst, structured_master=False)
    assert not rec.barrier and res.solver == "clarabel" and res.history
    assert not any(first.certified for first in rec.phase_one)
    check_fit(inst, res, ref, "structured_master=False")


LOOSE = list(range(1, len(CASES), 3))      # 14 cases, every loss


def test_phase_one_certifies_alone_at_a_loose_gap_tolerance():
    """Phase 1's own certificate (its smoothed dual point) never closes a 1e-6 gap on these instances (its
    gap at tau_min is 1e-6..1e-2), so path 1 is exercised at ``gap_tol=1e-2``: the fit returns phase 1's
    point without the barrier master or a conic master, and its bounds still bracket the optimum."""
    certified = 0
    for i in LOOSE:
        inst = instance(i)
        ref = outcome(i)[2]
        res, rec = fit_recorded(inst, gap_tol=1e-2)
        opt, tol = ref.opt, BOUND_RTOL * scale(ref.opt)
        assert res.status == "optimal" and res.relative_gap <= 1e-2
        assert res.lower_bound <= opt + tol <= res.upper_bound + 2 * tol, (i, res.lower_bound, opt, res.upper_bound)
        assert abs(res.upper_bound - exact_risk(inst, res.intercept, res.coef)) <= tol
        assert res.objective - opt <= 1e-2 * scale(opt)
        for first in rec.phase_one:
            assert first.lower_bound <= opt + tol
        if rec.path(res) != "phase_one":
            continue
        certified += 1
        first = rec.phase_one[-1]
        assert first.certified and not rec.barrier
        assert res.solver == "phase_one" and res.raw_status == "certified" and res.history == []
        assert res.n_constraints == first.working_rows > 0 and res.iterations == first.newton_steps > 0
        assert res.n_configuration_rows == first.bundle.size
        assert isinstance(res.conic_program(), ConicProgram)
    print("phase 1 alone certified", certified, "of", len(LOOSE), "at gap_tol=1e-2")
    assert certified >= len(LOOSE) // 2, certified


# ------------------------------------------------------------------------------------------ direct calls
DIRECT = [0, 9, 14, 20, 27, 33, 38]      # logistic, hinge, smooth hinge, huber, absolute, eps-insensitive, pinball


def _start(di, oracle, intercept, coef, lam):
    """``(lam, upper)``: ``lam`` raised to the floor and the exact objective at the point (the oracle's)."""
    lam = max(lam, lambda_floor(di, coef))
    sep = oracle.separate(intercept, coef, lam, np.zeros(di.n_samples))
    return lam, float(lam * di.radius + di.p @ sep.violation)


def _check_barrier_result(inst, di, out, opt, where, gap=1e-7):
    """``out`` of ``barrier_master(..., tol=gap)``: valid bounds, the upper one the model's risk at its point, and
    certified to ``gap``."""
    tol = BOUND_RTOL * scale(opt)
    assert out.lower_bound <= opt + tol, (where, "lower above the optimum", out.lower_bound, opt)
    assert out.upper_bound >= opt - tol, (where, "upper below the optimum", out.upper_bound, opt)
    if out.dual is None:
        assert out.lower_bound == -np.inf and not out.certified, where
    else:
        assert out.dual.value == out.lower_bound, where
    # the upper bound is the objective at the returned point (up to the barrier's nudge of lambda into the
    # cone's interior, 1e-7 relative, when no oracle point improved on the start), at least the model's risk
    assert abs(out.upper_bound - (out.lam * di.radius + di.p @ out.s)) <= 1e-6 * scale(out.upper_bound), where
    assert out.lam >= lambda_floor(di, out.coef) * (1 - 1e-12), where
    assert out.upper_bound >= exact_risk(inst, out.intercept, out.coef) - tol, where
    if out.certified:
        assert out.upper_bound - out.lower_bound <= gap * scale(out.upper_bound), where
        assert out.upper_bound <= opt + gap * scale(opt), where
    assert out.newton_steps >= 0 and out.centerings >= 1 and out.rows.size >= di.n_samples


@pytest.mark.parametrize("i", DIRECT, ids=[case_id(CASES[i]) for i in DIRECT])
def test_barrier_master_called_directly_brackets_the_optimum(i):
    inst = instance(i)
    opt = outcome(i)[2].opt
    di, oracle = bound_instance(inst)
    N, dim = di.n_samples, di.schema.n_encoded
    nominal = enumerate_configurations(di, nominal_only=True)
    rng = np.random.default_rng(i)
    starts = {
        "zeros": (0.0, np.zeros(dim), 2.0 * float(di.loss.lipschitz) + 1.0),
        "random": (float(rng.normal()), rng.normal(scale=1.5, size=dim), 0.0),
        "far": (3.0, np.full(dim, -4.0), 50.0),
    }
    for name, (icpt, coef, lam) in starts.items():
        lam, upper = _start(di, oracle, icpt, coef, lam)
        for mu in (1e-1 / N, 1e-3 / N):
            out = bmm.barrier_master(di, oracle, nominal, icpt, coef, lam, upper=upper, mu=mu * scale(upper),
                                     tol=1e-7)
            _check_barrier_result(inst, di, out, opt, f"{name} mu {mu:.0e}")
            assert out.upper_bound <= upper                      # never worse than the start
    # from phase 1's point and near-active rows, as the cutting plane calls it
    first = phase_one(di, oracle)
    rows0 = unique_rows(concat_rows([nominal, first.bundle]))
    out = bmm.barrier_master(di, oracle, rows0, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                             mu=first.tau / N, tol=1e-7)
    _check_barrier_result(inst, di, out, opt, "phase 1 start")
    # and with every configuration row in the working set from the start (no rows to add); with level-max
    # columns (a feature of 3 levels) rows that differ only in a changed feature's level are one row
    every = enumerate_configurations(di)
    for level_max in (False, True):
        out = bmm.barrier_master(di, oracle, every, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                                 mu=first.tau / N, tol=1e-7, level_max=level_max)
        _check_barrier_result(inst, di, out, opt, f"every row, level_max={level_max}")
        if level_max and LevelMaxColumns(di).active:
            assert out.rows.size < every.size
        else:
            assert out.rows.size == every.size


def test_barrier_master_direct_calls_certify_somewhere():
    """On the direct cases, from phase 1's point with every row, the barrier master certifies most of them."""
    done = 0
    for i in DIRECT:
        di, oracle = bound_instance(instance(i))
        first = phase_one(di, oracle)
        out = bmm.barrier_master(di, oracle, enumerate_configurations(di), first.intercept, first.coef, first.lam,
                                 upper=first.upper_bound, mu=first.tau / di.n_samples, tol=1e-7)
        done += out.certified
        if out.certified:
            assert abs(out.upper_bound - outcome(i)[2].opt) <= 1e-7 * scale(out.upper_bound)
    assert done >= len(DIRECT) // 2, done


# ------------------------------------------------------------------------------------------ weak duality
def _epigraph(di, rows):
    """An ``_EpigraphBarrier`` over ``rows``, with the free coordinates and cone barrier of ``barrier_master``."""
    offset, dim, free, cone = parameter_layout(di)
    return epi.EpigraphBarrier(di, rows, free, cone), offset, dim


def _lifted(master, theta, margin):
    """Epigraph levels ``max_{r of n} v_r(theta) + margin`` per sample (every slack at least ``margin``)."""
    _, ell, _, _ = master.terms(theta)
    return np.maximum.reduceat(ell - theta[-1] * master.cost, master.starts) + margin


@pytest.mark.parametrize("i", DIRECT + [3, 16, 23], ids=[case_id(CASES[i]) for i in DIRECT + [3, 16, 23]])
def test_epigraph_levels_are_the_exact_minimizers(i):
    """``_EpigraphBarrier.epigraph``: per sample, ``s*`` is the root of ``sum_r mu / (s - v_r) = p_n`` above
    ``max_r v_r`` (found again by bisection in scipy's brentq on a bracket of its own); ``settled`` is
    ``f_mu(theta, s*)``, below ``f_mu(theta, s)`` at every other feasible ``s`` (partial minimization), for
    ``mu`` from 1e-14 to 1, on working sets with one to all rows per sample."""
    from scipy.optimize import brentq
    di, _ = bound_instance(instance(i))
    rng = np.random.default_rng(7 + i)
    every = enumerate_configurations(di)
    nominal = enumerate_configurations(di, nominal_only=True)
    for draw_ in range(6):
        keep = rng.random(every.size) < (1.0 if draw_ % 3 == 0 else 0.3)
        rows = unique_rows(concat_rows([nominal, take_rows(every, np.flatnonzero(keep))]))
        master, offset, dim = _epigraph(di, rows)
        theta = np.zeros(dim)
        theta[:-1] = rng.normal(scale=rng.choice([0.1, 1.0, 3.0]), size=dim - 1)
        theta[-1] = max(lambda_floor(di, theta[offset:-1]), master.barrier.lam0) * 1.5 + 0.1
        mu = 10.0 ** rng.uniform(-14, 0)
        value, s, (slack_at, _) = master.settled(theta, mu)
        _, ell, _, _ = master.terms(theta)
        v = ell - theta[-1] * master.cost
        for n in range(di.n_samples):
            vn = v[master.segment == n]
            p = master.p[n]
            gap = vn.max() - vn                # in x = s - max v: no cancellation at mu = 1e-14
            root = brentq(lambda x: np.sum(mu / (x + gap)) - p, mu / p * (1 - 1e-9), vn.size * mu / p * (1 + 1e-9),
                          xtol=1e-300, rtol=1e-15)
            assert s[n] - vn.max() == pytest.approx(root, rel=1e-6), (draw_, n, vn.size, mu)
        masses = np.add.reduceat(mu / slack_at, master.starts)
        assert masses == pytest.approx(master.p, rel=1e-9)
        top = np.maximum.reduceat(v, master.starts)
        gap = top[master.segment] - v
        excess = np.minimum.reduceat(slack_at, master.starts)      # s*_n - max_r v_r
        bv = master.barrier(theta, mu)[0]

        def f_mu(excess):                 # f_mu(theta, max v + excess), slacks formed without cancellation
            return theta[-1] * di.radius + master.p @ (top + excess) - mu * np.sum(np.log(gap + excess[master.segment])) + bv
        assert value == pytest.approx(f_mu(excess), rel=1e-12, abs=1e-14)
        for _ in range(5):       # any other feasible s is worse
            factor = np.where(rng.random(di.n_samples) < 0.5, np.exp(rng.normal(scale=0.5, size=di.n_samples)), 1.0)
            assert value <= f_mu(excess * factor) + 1e-12 * max(1.0, abs(value)), draw_


@pytest.mark.parametrize("i", DIRECT + [3, 16, 23], ids=[case_id(CASES[i]) for i in DIRECT + [3, 16, 23]])
def test_barrier_dual_point_at_arbitrary_points_and_mu_is_below_the_optimum(i):
    """``m_r = mu / d_r`` with slopes ``L'(u_r)`` at a random strictly feasible ``(theta, s)`` and a random
    ``mu`` (far from the central path: the masses do not sum to ``p_n``), on every row or on a random
    working set: the repaired Lagrangian bound never exceeds the optimum."""
    inst = instance(i)
    opt = outcome(i)[2].opt
    di, _ = bound_instance(inst)
    rng = np.random.default_rng(100 + i)
    every = enumerate_configurations(di)
    nominal = enumerate_configurations(di, nominal_only=True)
    values = []
    for draw_ in range(10):
        if draw_ % 2:
            rows = every
        else:
            extra = take_rows(every, np.flatnonzero(rng.random(every.size) < 0.4))
            rows = unique_rows(concat_rows([nominal, extra]))
        master, offset, dim = _epigraph(di, rows)
        theta = np.zeros(dim)
        theta[:-1] = rng.normal(scale=rng.choice([0.1, 1.0, 3.0]), size=dim - 1)
        floor = max(lambda_floor(di, theta[offset:-1]), master.barrier.lam0)
        theta[-1] = floor * (1 + rng.uniform(0.01, 2.0)) + rng.uniform(1e-3, 1.0)
        assert master.barrier.feasible(theta)
        margin = rng.uniform(1e-4, 1.0, size=di.n_samples)
        s = _lifted(master, theta, 0.0) + margin
        mu = 10.0 ** rng.uniform(-6, 0)
        slack, slope, _ = master.slacks(theta, s)
        assert np.all(slack > 0)
        weight = mu / slack / master.p[master.segment]
        bound = lb.lagrangian_bound(di, *master.row_dual(weight, slope))
        assert bound.value <= opt + BOUND_RTOL * scale(opt), (draw_, mu, bound.value, opt)
        # the Newton direction's weights are the same 1 / d_r (with the master's proximal term, which makes
        # the reduced Hessian nonsingular at any point)
        master.center, master.prox = theta.copy(), bmm.PROX * mu * di.n_samples
        _, _, w, _ = master.direction(theta, s, mu)
        assert np.allclose(w, 1.0 / slack)
        values.append(bound.value)
    assert np.isfinite(values).sum() >= 5, values      # the repair succeeds: the check is not vacuous


# ------------------------------------------------------------------------------------------ mutations
MUTATED = [i for i in range(0, len(CASES), 3)]     # 14 cases, every loss


def _mutated_direction_source(old: str, new: str, **extra):
    """``EpigraphBarrier.data_direction`` (the samples' part of ``direction``) compiled again with ``old`` replaced by
    ``new`` in its source (``extra``: names the new source uses)."""
    src = textwrap.dedent(inspect.getsource(epi.EpigraphBarrier.data_direction))
    assert old in src, f"the mutation target {old!r} is no longer in EpigraphBarrier.data_direction"
    namespace = {}
    exec(compile(src.replace(old, new), epi.__file__, "exec"), {**vars(epi), **extra}, namespace)   # noqa: S102
    return namespace["data_direction"]


def _uncentered_gram(terms, idx, ss, mean_weight, gram_weight, project):
    """``RowTerms.centered_gram`` without the centering: ``sum_r gram_weight_r J_r J_r'`` (a wrong Schur
    complement), with the same means."""
    _, projected = terms.centered_gram(idx, ss, mean_weight, gram_weight, project)
    J = terms.gradients(idx, ss)
    return J.T @ (gram_weight[idx, None] * J), projected


def _scaled_direction(factor):
    real = epi.EpigraphBarrier.direction

    def direction(self, theta, s, mu, at=None):
        dtheta, dec2, w, slope = real(self, theta, s, mu, at)
        return factor * dtheta, dec2, w, slope
    return direction


def _slopes_shifted(shift):
    real = RowTerms.row_dual

    def row_dual(self, weight, slope):
        rows, mass, slopes = real(self, weight, slope)
        return rows, mass, slopes + shift
    return row_dual


MUTATIONS = {
    "schur_without_G_gs": lambda: (epi.EpigraphBarrier, "data_direction", _mutated_direction_source(
        "g_s = self.p - np.add.reduceat(mw, self.starts)", "g_s = 0.0 * self.p")),
    "schur_without_centering": lambda: (epi.EpigraphBarrier, "data_direction", _mutated_direction_source(
        "self.centered_gram(self.multi_terms, ss, w2, mu * w2, g_s)",
        "_uncentered_gram(self, self.multi_terms, ss, w2, mu * w2, g_s)", _uncentered_gram=_uncentered_gram)),
    "direction_x2.5": lambda: (epi.EpigraphBarrier, "direction", _scaled_direction(2.5)),
    "direction_x0.2": lambda: (epi.EpigraphBarrier, "direction", _scaled_direction(0.2)),
    "slopes_plus_0.3": lambda: (RowTerms, "row_dual", _slopes_shifted(0.3)),
    # the epigraph levels s* one safeguarded Newton step from the bracket's end: not the minimizer, masses that do
    # not sum to p_n
    "epigraph_one_iteration": lambda: (epi, "EPIGRAPH_ITERATIONS", 1),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_mutated_barrier_master_never_gives_a_wrong_certified_fit(mutation):
    """The barrier master's certificate is an exact Lagrangian bound at its dual point and the oracle's exact
    value: with a wrong Newton system (or wrong dual slopes) it may fail to certify -- the conic masters
    then take over -- but a fit is never wrong and no lower bound exceeds the optimum."""
    paths, changed = Counter(), 0
    for i in MUTATED:
        inst = instance(i)
        base_res, base_rec, ref = outcome(i)
        owner, attr, mutant = MUTATIONS[mutation]()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(owner, attr, mutant)
            res, rec = fit_recorded(inst)
        check_fit(inst, res, ref, mutation)
        opt, tol = ref.opt, BOUND_RTOL * scale(ref.opt)
        for out in rec.barrier:
            assert out.lower_bound <= opt + tol, (mutation, i, out.lower_bound, opt)
            assert out.dual is None or out.dual.value == out.lower_bound
        for first in rec.phase_one:
            assert first.lower_bound <= opt + tol, (mutation, i, first.lower_bound, opt)
        paths[rec.path(res)] += 1
        base = [(b.newton_steps, b.certified, b.lower_bound) for b in base_rec.barrier]
        changed += base != [(b.newton_steps, b.certified, b.lower_bound) for b in rec.barrier]
    print(mutation, dict(paths), "changed", changed)
    assert changed >= 1, "the mutation did not change the barrier master at all"


def test_the_checks_catch_wrong_bounds_and_objectives():
    """The checks can fail: a barrier-certified fit and a barrier master result doctored to claim a lower bound
    1e-8 above the optimum, an upper bound that is not the model's risk, or a worse objective are rejected.
    (An inflated Lagrangian bound inside the library is not a deterministic mutation: a bound above the exact
    upper bound is discarded by ``barrier_master`` and ``CompiledProblem._certified_lower``.)"""
    i = next(i for i in range(len(CASES)) if outcome(i)[1].path(outcome(i)[0]) == "barrier")
    inst = instance(i)
    res, rec, ref = outcome(i)
    check_fit(inst, res, ref)
    opt = ref.opt
    doctored = {"lower above the optimum": dict(lower_bound=opt + 1e-8 * scale(opt)),
                "upper is not the model's risk": dict(upper_bound=res.upper_bound + 1e-8 * scale(opt)),
                "objective": dict(objective=opt + 2e-6 * scale(opt))}
    for message, change in doctored.items():
        with pytest.raises(AssertionError) as err:
            check_fit(inst, dataclasses.replace(res, **change), ref)
        assert message == "objective" or message in str(err.value), (message, str(err.value))
    di, _ = bound_instance(inst)
    out = rec.barrier[-1]
    _check_barrier_result(inst, di, out, opt, "as returned", gap=1e-6)     # from a fit: its gap_tol
    with pytest.raises(AssertionError, match="lower above the optimum"):
        _check_barrier_result(inst, di, dataclasses.replace(out, lower_bound=opt + 1e-8 * scale(opt)), opt, "doctored",
                              gap=1e-6)
    with pytest.raises(AssertionError):
        _check_barrier_result(inst, di, dataclasses.replace(out, lower_bound=out.upper_bound - 2e-6 * scale(opt)), opt,
                              "doctored", gap=1e-6)


def test_direction_mutations_change_the_newton_direction():
    """The Schur-complement mutations are not no-ops: at a point with several terms per sample they change
    the direction."""
    i = DIRECT[0]
    di, _ = bound_instance(instance(i))
    master, offset, dim = _epigraph(di, enumerate_configurations(di))
    rng = np.random.default_rng(0)
    theta = np.zeros(dim)
    theta[:-1] = rng.normal(size=dim - 1)
    theta[-1] = lambda_floor(di, theta[offset:-1]) + 1.0
    s = _lifted(master, theta, 0.3) + rng.uniform(0, 1, di.n_samples)
    real = master.direction(theta, s, 1e-2)[0]
    for name in ("schur_without_G_gs", "schur_without_centering"):
        mutant = MUTATIONS[name]()[2]
        assert not np.allclose(mutant(master, theta, s, 1e-2)[0], real), name


# ------------------------------------------------------------------------------------------ the FitResult
def test_fit_result_of_a_fit_certified_without_a_master():
    i = next(i for i in range(len(CASES)) if outcome(i)[1].path(outcome(i)[0]) == "barrier")
    inst = instance(i)
    ref = outcome(i)[2]
    res, rec = fit_recorded(inst)
    assert rec.path(res) == "barrier"
    out = rec.barrier[-1]
    assert res.solver == "barrier_master" and res.raw_status == "certified" and res.status == "optimal"
    assert res.history == [] and res.relative_gap <= 1e-6
    assert res.auxiliary["lower_bound"]["source"] == "lagrangian"
    for name in ("n_constraints", "iterations", "n_variables", "n_configuration_rows"):
        value = getattr(res, name)
        assert isinstance(value, (int, np.integer)) and value > 0, (name, value)
    assert res.n_configuration_rows == out.rows.size
    # the barrier master's problem: theta (coefficients, intercept, lambda) and one epigraph per sample, one
    # barrier term per working row
    assert res.n_variables == np.asarray(res.coef).size + 2 + inst.n_samples
    assert res.n_constraints == out.rows.size
    assert callable(res.program_recipe.master)                 # not built by the fit: nothing solved it
    program = res.conic_program()
    assert isinstance(program, ConicProgram)
    # the restricted master over the barrier master's working rows
    from drokit.reformulations.dual import build_dual_program
    di, _ = bound_instance(inst)
    assert program.n_constraints == build_dual_program(di, out.rows).n_constraints
    assert program.n_constraints > 0 and program.n_variables > 0
    assert res.conic_program() is program                      # built once, then kept
    cp = pytest.importorskip("cvxpy")
    prob, x = res.to_cvxpy()
    assert isinstance(prob, cp.Problem)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    # the restricted master over the working rows: a relaxation whose value the barrier's dual point bounds
    tol = 1e-6 * scale(ref.opt)
    assert res.lower_bound - tol <= prob.value <= ref.opt + tol, (res.lower_bound, prob.value, ref.opt)
    coef = program.value("coef", x.value)
    assert coef.shape == np.asarray(res.coef).shape


# ------------------------------------------------------------------------------------------ lambda's trust region
def test_trust_box_barrier_value_gradient_and_hessian():
    """``TrustBox`` is ``-mu sum_j log(r_j^2 - (theta_j - c_j)^2)`` on its coordinates: checked against central
    differences; other coordinates get nothing; infeasible on and beyond the box's faces."""
    rng = np.random.default_rng(0)
    coords, center, radius = np.array([1, 3]), np.array([0.5, -2.0]), np.array([0.3, 1.5])
    box = bmm.TrustBox(coords, center, radius)
    theta = rng.normal(size=5)
    theta[coords] = center + np.array([0.2, -1.1])
    mu = 0.7
    value, grad, hess = box(theta, mu)
    assert value == pytest.approx(-mu * np.sum(np.log(radius ** 2 - (theta[coords] - center) ** 2)), rel=1e-12)
    h = 1e-6
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        fd = (box(theta + e, mu)[0] - box(theta - e, mu)[0]) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-9)
        fd2 = (box(theta + e, mu)[1][j] - box(theta - e, mu)[1][j]) / (2 * h)
        assert hess[j] == pytest.approx(fd2, rel=1e-5, abs=1e-9)
    assert np.all(grad[[0, 2, 4]] == 0) and np.all(hess[[0, 2, 4]] == 0)
    assert box.feasible(theta) and box.reach(theta) == pytest.approx(max(0.2 / 0.3, 1.1 / 1.5))
    edge = theta.copy()
    edge[1] = center[0] + radius[0]
    assert not box.feasible(edge) and box.reach(edge) == pytest.approx(1.0)


def _far_lambda_certifies(i: int) -> bool:
    """From phase 1's model with ``lambda`` 4x too large and every row in the working set (nothing to add),
    the barrier master has to move ``lambda`` by 75 %, far beyond its first region (10 %)."""
    inst = instance(i)
    di, oracle = bound_instance(inst)
    first = phase_one(di, oracle)
    lam, upper = _start(di, oracle, first.intercept, first.coef, 4.0 * first.lam + 1.0)
    out = bmm.barrier_master(di, oracle, enumerate_configurations(di), first.intercept, first.coef, lam,
                             upper=upper, mu=first.tau / di.n_samples, tol=1e-7)
    _check_barrier_result(inst, di, out, outcome(i)[2].opt, "lambda x4")
    return out.certified


def test_lambda_trust_region_grows_to_reach_a_far_optimum():
    done = [_far_lambda_certifies(i) for i in DIRECT]
    assert sum(done) >= len(DIRECT) // 2, done
    # the check can fail: a region that never grows keeps lambda near the start
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bmm, "TRUST_REACH", np.inf)
        assert sum(_far_lambda_certifies(i) for i in DIRECT) < sum(done)
