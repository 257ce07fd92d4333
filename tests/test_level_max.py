"""Level-max columns of the barrier master (:mod:`drokit.reformulations.level_max`), checked against the
brute-force reference on small instances with features of three to five levels:

* the maps: the extended layout puts every real coefficient back, and a level-max row at the exact maxima
  ``m`` scores what the best real configuration with the same changes scores (its *validity*: it is a real row,
  priced at least at that row's cost);
* the dual point: at arbitrary extended points and barrier weights, masses on level-max rows converted to
  :class:`~drokit.evaluation.lower_bound.FractionalRows` give a Lagrangian bound below the optimum, whatever the
  level distributions; the fractional rows' costs are at least the expected costs of their distributions
  (equal for ``cat_p = 1``), enumerated;
* ``barrier_master(level_max=True)`` from phase 1's point brackets the optimum, certifies most cases with a
  bound within the gap of it, and default fits equal the reference (the optimum is the smallest exact risk of
  the reference's and the fits' models, :func:`test_barrier_master.exact_risk`);
* mutations: a dual point converted with wrong level distributions stays a valid bound but is no longer
  tight (the tightness check can fail), and level-max rows built with the directions swapped are caught.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import drokit as dk
import drokit.reformulations.barrier_master as bmm
import drokit.reformulations.epigraph as epi
import drokit.reformulations.level_max as lm
import drokit.certificates.lower_bound as lb
from drokit.reformulations.phase_one import phase_one
from drokit.reformulations.row_terms import dense_row_design, parameter_layout
from drokit.evaluation.worst_case import lambda_floor
from drokit.oracles import make_oracle
from drokit.oracles.enumeration import concat_rows, enumerate_configurations, take_rows, unique_rows

sys.path.insert(0, os.path.dirname(__file__))
import fuzz_instances as fz  # noqa: E402
from test_barrier_master import attained_labels, exact_risk  # noqa: E402

bf = fz.bf
BOUND_RTOL = 1e-9
LOSSES = {"logistic": "classification", "hinge": "classification", "smooth_hinge": "classification",
          "huber": "regression", "absolute": "regression"}
LEVELS = [(3,), (4,), (3, 3), (5, 2), (4, 3)]


def draw(seed: int) -> fz.Instance:
    """Small instances whose categorical features have 3-5 levels (N 10..22, 1-2 numerical features), every
    loss in turn, ``cat_p`` 1 or 2, finite kappa on odd seeds."""
    rng = np.random.default_rng([31, seed])
    loss = list(LOSSES)[seed % len(LOSSES)]
    task = LOSSES[loss]
    n = int(rng.integers(1, 3))
    levels = LEVELS[seed % len(LEVELS)]
    N = int(rng.integers(10, 23))
    gamma = np.round(rng.uniform(0.4, 2.0, size=n), 3)
    delta = np.round(rng.uniform(0.3, 1.2, size=len(levels)), 3)
    kappa = round(float(rng.uniform(0.6, 2.5)), 3) if seed % 2 else np.inf
    radius = round(float(rng.uniform(0.05, 0.8)), 4)
    param = round(float(rng.uniform(*fz.LOSS_PARAMS[loss])), 4) if loss in fz.LOSS_PARAMS else None
    X, Z, y = bf.random_instance(int(rng.integers(2 ** 31)), N, n, list(levels), task)
    if loss == "logistic":
        y = attained_labels(rng, X, Z, levels, y, radius=radius, kappa=kappa, gamma=gamma, delta=delta)
        assert y is not None
    return fz.Instance(seed=seed, task=task, loss=loss, loss_param=param, X_num=np.round(X, 6), Z=Z,
                       levels=tuple(levels), y=np.round(y, 6), radius=radius, norm_p=1.0,
                       cat_p=float([1.0, 2.0][seed // 2 % 2]), gamma=gamma, delta=delta, kappa=kappa, api="problem")


SEEDS = list(range(20))


def problem(inst: fz.Instance) -> dk.Problem:
    return dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                      task=inst.task)


@functools.lru_cache(maxsize=None)
def case(seed: int):
    """``(instance, DROInstance, oracle, optimum, default fit)``."""
    inst = draw(seed)
    di = problem(inst).bind(inst.frame(), inst.y.copy()).fitting_view()
    oracle = make_oracle(di, "dp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = problem(inst).compile(inst.frame(), inst.y.copy(), "cutting_plane").solve()
        mono = problem(inst).compile(inst.frame(), inst.y.copy(), "monolithic").solve()
    X, Z, y = inst.repeated()
    risks = [exact_risk(inst, res.intercept, res.coef), exact_risk(inst, mono.intercept, mono.coef)]
    try:
        sol = bf.dro_value(X, Z, list(inst.levels), y, **inst.reference_kwargs())
        risks.append(exact_risk(inst, sol["b0"], np.r_[sol["bx"], sol["bz"]]))
    except RuntimeError:
        pass
    return inst, di, oracle, min(risks), res


def scale(v: float) -> float:
    return max(1.0, abs(v))


def random_params(di, rng) -> np.ndarray:
    return rng.normal(scale=rng.choice([0.3, 1.0, 2.0]), size=int(di.fit_intercept) + di.schema.n_encoded)


def phase_one_start(di, oracle):
    """Phase 1's result and the rows the cutting plane hands the barrier master (nominal rows and the bundle)."""
    first = phase_one(di, oracle)
    return first, unique_rows(concat_rows([enumerate_configurations(di, nominal_only=True), first.bundle]))


def level_max_master(seed: int):
    """``(optimum, result)`` of ``barrier_master(level_max=True)`` from phase 1's point on case ``seed``."""
    _, di, oracle, opt, _ = case(seed)
    first, rows0 = phase_one_start(di, oracle)
    return opt, bmm.barrier_master(di, oracle, rows0, first.intercept, first.coef, first.lam,
                                   upper=first.upper_bound, mu=first.tau / di.n_samples, tol=1e-7, level_max=True)


# ------------------------------------------------------------------------------------------ maps
@pytest.mark.parametrize("seed", SEEDS[:10])
def test_layout_keeps_every_real_coefficient_and_level_max_rows_are_real_rows(seed, monkeypatch):
    inst, di, _, _, _ = case(seed)
    space = lm.LevelMaxColumns(di)
    assert space.active and set(space.features) <= set(np.flatnonzero(np.asarray(inst.levels) >= 3))
    rng = np.random.default_rng(seed)
    params = random_params(di, rng)
    ext = space.lift(params)
    assert np.array_equal(space.real(ext), params)
    # the extended design of real rows is the real design with the m columns zero
    every = enumerate_configurations(di)
    A_real = dense_row_design(di, every)
    A_ext = dense_row_design(di, every, layout=space.layout)
    assert np.array_equal(A_ext[:, space.real_index], A_real)
    assert not A_ext[:, np.r_[space.up, space.down]].any()
    # at the exact maxima (no margin) a level-max row scores the best real row with the same changes
    monkeypatch.setattr(lm, "START_MARGIN", 0.0)
    exact = space.lift(params)
    virtual = space.virtualize(every, params)
    score_virtual = dense_row_design(di, virtual, layout=space.layout) @ exact
    score_real = A_real @ params
    own = di.data.Z[every.sample]
    realized = space.realize(virtual, params)
    score_realized = dense_row_design(di, realized) @ params
    # every virtual level moves the score in its direction at least as far as the row's own level did
    a = space.real_levels[space.features]
    ups = (virtual.Z[:, space.features] == a).sum(axis=1)
    downs = (virtual.Z[:, space.features] == a + 1).sum(axis=1)
    assert np.all(score_virtual[(ups > 0) & (downs == 0)] >= score_real[(ups > 0) & (downs == 0)] - 1e-12)
    assert np.all(score_virtual[(downs > 0) & (ups == 0)] <= score_real[(downs > 0) & (ups == 0)] + 1e-12)
    assert ((ups > 0) | (downs > 0)).any()
    # realized rows change the same features as their level-max rows (so their cost is the row's cost)
    changed_virtual = virtual.Z != own
    assert np.array_equal(realized.Z != own, changed_virtual)
    assert np.allclose(di.metric.categorical_distance(realized.Z, own) + np.where(realized.flip, di.metric.kappa, 0.0),
                       virtual.cost)
    # and score at least as far in each direction as the row they came from
    assert np.all(score_realized[(ups > 0) & (downs == 0)] >= score_real[(ups > 0) & (downs == 0)] - 1e-12)


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_virtual_rows_equal_the_best_level_rows(seed, monkeypatch):
    """Per sample and set of changed features, the level-max row at the exact maxima equals the largest (or
    smallest) score over the real configurations changing exactly those features, when the sample's own level
    is not the best one."""
    inst, di, _, _, _ = case(seed)
    monkeypatch.setattr(lm, "START_MARGIN", 0.0)
    space = lm.LevelMaxColumns(di)
    rng = np.random.default_rng(100 + seed)
    params = random_params(di, rng)
    exact = space.lift(params)
    every = enumerate_configurations(di)
    own = di.data.Z[every.sample]
    score = dense_row_design(di, every) @ params
    checked = 0
    for n in range(di.n_samples):
        mine = np.flatnonzero((every.sample == n) & ~every.flip)
        changed = every.Z[mine] != own[mine]
        for pattern in {tuple(c) for c in changed.tolist()}:
            group = mine[np.all(changed == np.asarray(pattern), axis=1)]
            if not any(pattern[l] for l in space.features):
                continue
            for direction, pick in ((1.0, np.max), (-1.0, np.min)):
                Z = every.Z[group[:1]].copy()
                best_own = False
                for l in space.features:
                    if pattern[l]:
                        w = space.level_coefficients(params, l)
                        Z[0, l] = space.real_levels[l] + (0 if direction > 0 else 1)
                        target = np.argmax(w) if direction > 0 else np.argmin(w)
                        best_own |= bool(target == own[group[0], l])
                others = [l for l in range(len(inst.levels)) if pattern[l] and l not in space.features]
                if best_own or others:
                    continue      # a binary feature's other level is named; the own-best case is dominated
                row = take_rows(every, group[:1])
                row = type(row)(sample=row.sample, Z=Z, cost=row.cost, flip=row.flip)
                value = float((dense_row_design(di, row, layout=space.layout) @ exact)[0])
                assert value == pytest.approx(float(pick(score[group])), abs=1e-12)
                checked += 1
    assert checked > 0


# ------------------------------------------------------------------------------------------ dual point
def _level_max_master(di, rows, space):
    offset, dim, free, cone = parameter_layout(di)
    real_free = free[free < dim - 1]
    dim = space.n_params + 1
    cone.dim = dim
    used = space.used(rows)
    bounds = space.bounds(used, dim)
    free = np.union1d(np.r_[space.real_index[real_free], dim - 1], used)
    return epi.EpigraphBarrier(di, rows, free, bmm._Barriers(cone, bounds), space.layout), bounds, dim, offset


def _expected_cost(di, row_sample, Zrow, flip, space, distributions):
    """The expected transport cost of a level-max row whose virtual levels are drawn from ``distributions``
    (independently), by enumeration."""
    own = di.data.Z[row_sample]
    choices = []
    for l in range(Zrow.size):
        code = Zrow[l]
        if l in space.features and code >= space.real_levels[l]:
            position = space.up[list(space.features).index(l)] if code == space.real_levels[l] \
                else space.down[list(space.features).index(l)]
            q = distributions[int(position)]
            choices.append([(v, q[v]) for v in range(space.real_levels[l])])
        else:
            choices.append([(code, 1.0)])
    total = 0.0
    for combo in itertools.product(*choices):
        Z = np.array([[v for v, _ in combo]])
        prob = float(np.prod([p for _, p in combo]))
        total += prob * float(di.metric.categorical_distance(Z, own[None, :])[0])
    return total + (di.metric.kappa if flip else 0.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_fractional_dual_point_at_arbitrary_points_is_below_the_optimum(seed):
    inst, di, _, opt, _ = case(seed)
    space = lm.LevelMaxColumns(di)
    rng = np.random.default_rng(200 + seed)
    every = enumerate_configurations(di)
    nominal = enumerate_configurations(di, nominal_only=True)
    finite = 0
    for draw_ in range(6):
        params = random_params(di, rng)
        keep = rng.random(every.size) < (1.0 if draw_ % 2 else 0.4)
        rows = unique_rows(space.virtualize(concat_rows([nominal, take_rows(every, np.flatnonzero(keep))]), params))
        master, bounds, dim, offset = _level_max_master(di, rows, space)
        theta = np.r_[space.lift(params), 0.0]
        theta[space.up] += rng.uniform(1e-3, 0.5, size=space.up.size)       # m strictly outside, at random
        theta[space.down] -= rng.uniform(1e-3, 0.5, size=space.down.size)
        floor = max(lambda_floor(di, params[offset:]), master.barrier.parts[0].lam0)
        theta[-1] = floor * (1 + rng.uniform(0.01, 2.0)) + rng.uniform(1e-3, 1.0)
        assert master.barrier.feasible(theta)
        mu = 10.0 ** rng.uniform(-6, 0)
        _, ell, _, _ = master.terms(theta)
        s = np.maximum.reduceat(ell - theta[-1] * master.cost, master.starts) + rng.uniform(1e-4, 1.0, di.n_samples)
        slack, slope, _ = master.slacks(theta, s)
        weight = mu / slack / master.p[master.segment]
        rows_d, mass, slopes = master.row_dual(weight, slope)
        design = dense_row_design(di, master.rows, layout=space.layout)
        frac, mass, slopes = space.fractional(rows_d, mass, slopes, theta, mu, bounds, sp.csr_matrix(design))
        # costs: at least the expected cost of each row's distribution (equal when D adds over features)
        # (the central path's distributions, balanced on the dummy columns as fractional() does)
        distributions = space.balanced(bounds.level_distributions(theta, mu), rows_d, mass, slopes,
                                       sp.csr_matrix(design))
        for k in rng.choice(frac.size, size=min(frac.size, 25), replace=False):
            expected = _expected_cost(di, int(frac.sample[k]), master.rows.Z[k], bool(frac.flip[k]), space,
                                      distributions)
            if inst.cat_p == 1.0:
                assert frac.cost[k] == pytest.approx(expected, rel=1e-10, abs=1e-12)
            else:
                assert frac.cost[k] >= expected - 1e-12
        # the expected encoded rows: probabilities on each virtual feature's real levels (level 0 implicit)
        assert np.allclose(frac.matrix.toarray()[:, :offset + di.n_numerical], design[:, :offset + di.n_numerical])
        bound = lb.lagrangian_bound(di, frac, mass, slopes)
        assert bound.value <= opt + BOUND_RTOL * scale(opt), (draw_, bound.value, opt)
        finite += np.isfinite(bound.value)
    assert finite >= 3


# ------------------------------------------------------------------------------------------ the master
@pytest.mark.parametrize("seed", SEEDS)
def test_barrier_master_with_level_max_brackets_and_certifies_the_optimum(seed):
    inst, di, _, _, _ = case(seed)
    opt, out = level_max_master(seed)
    tol = BOUND_RTOL * scale(opt)
    risk = exact_risk(inst, out.intercept, out.coef)
    opt = min(opt, risk)          # the reference's optimum is the best model's risk, an upper bound
    assert out.lower_bound <= opt + tol <= out.upper_bound + 2 * tol, (out.lower_bound, opt, out.upper_bound)
    assert out.upper_bound >= risk - tol
    if out.certified:
        assert out.upper_bound - out.lower_bound <= 1e-7 * scale(out.upper_bound)
        assert isinstance(out.dual.rows, lb.FractionalRows)
    # the returned rows are real configurations (no virtual codes), with their own costs
    own = di.data.Z[out.rows.sample]
    assert np.all(out.rows.Z < np.asarray(di.schema.levels)[None, :])
    assert np.allclose(di.metric.categorical_distance(out.rows.Z, own) + np.where(out.rows.flip, di.metric.kappa, 0.0),
                       out.rows.cost)


def test_barrier_master_with_level_max_certifies_most_cases():
    certified = 0
    for seed in SEEDS:
        opt, out = level_max_master(seed)
        if out.certified:
            certified += 1
            assert abs(out.upper_bound - opt) <= 1e-7 * scale(opt)
    print("certified", certified, "of", len(SEEDS))
    assert certified >= len(SEEDS) // 2, certified


@pytest.mark.parametrize("seed", SEEDS)
def test_default_fit_equals_the_reference(seed):
    inst, di, _, opt, res = case(seed)
    assert res.status == "optimal" and res.relative_gap <= 1e-6
    assert res.lower_bound <= opt + BOUND_RTOL * scale(opt) <= res.upper_bound + 2 * BOUND_RTOL * scale(opt)
    assert abs(res.objective - opt) <= 1e-6 * scale(opt)


# ------------------------------------------------------------------------------------------ mutations
def uncertified_under_mutation() -> int:
    """Cases (of the first 10) the mutated level-max master leaves uncertified; every bound must stay valid."""
    uncertified = 0
    for seed in SEEDS[:10]:
        opt, out = level_max_master(seed)
        assert out.lower_bound <= opt + BOUND_RTOL * scale(opt)
        uncertified += not out.certified
    return uncertified


def test_wrong_level_distributions_stay_valid_but_lose_tightness(monkeypatch):
    """Uniform level distributions in place of the balanced ones (:meth:`LevelMaxColumns.balanced`) keep every
    bound valid (any distribution is a dual point) but the certified cases no longer close their gap: the
    tightness check above can fail."""
    def uniform(self, distributions, *args, **kwargs):
        return {position: np.full(q.size, 1.0 / q.size) for position, q in distributions.items()}

    monkeypatch.setattr(lm.LevelMaxColumns, "balanced", uniform)
    assert uncertified_under_mutation() >= 5


def test_swapped_directions_are_caught(monkeypatch):
    """Level-max rows built with up and down swapped (a raise priced as a fall) make the master miss the
    worst cases: some fit is then certified by the oracle only after the conic masters, or its level-max
    master fails to certify -- never a wrong bound."""
    real = lm.LevelMaxColumns.virtualize

    def swapped(self, rows, params):
        out = real(self, rows, params)
        Z = out.Z.copy()
        for l in self.features:
            a = self.real_levels[l]
            up, down = Z[:, l] == a, Z[:, l] == a + 1
            Z[up, l], Z[down, l] = a + 1, a
        return type(out)(sample=out.sample, Z=Z, cost=out.cost, flip=out.flip)

    monkeypatch.setattr(lm.LevelMaxColumns, "virtualize", swapped)
    assert uncertified_under_mutation() >= 1


# ------------------------------------------------------------------------------------------ the fallback
def test_structured_master_retries_with_level_max_columns_where_plain_rows_give_up(monkeypatch):
    """``structured_master``: plain rows first; when they give up (forced here by a one-step budget), the retry with
    level-max columns starts again from phase 1's point and rows, and the merged result keeps the better point, the
    better bound with its own dual point, and the work of both."""
    import drokit.reformulations.structured_master as sm
    calls = []
    real = sm.barrier_master

    def budgeted(*args, level_max=False, **kwargs):
        out = real(*args, level_max=level_max, **(kwargs if level_max else {**kwargs, "max_steps": 1}))
        calls.append((level_max, out))
        return out

    monkeypatch.setattr(sm, "barrier_master", budgeted)
    retried = 0
    for seed in SEEDS[:8]:
        inst, di, oracle, opt, _ = case(seed)
        first, rows0 = phase_one_start(di, oracle)
        calls.clear()
        out = sm.structured_master(di, oracle, rows0, first, tol=1e-7)
        plain = calls[0][1]
        assert calls[0][0] is False and not plain.certified
        assert len(calls) == 2 and calls[1][0] is True
        retry = calls[1][1]
        retried += retry.certified
        assert out.certified == retry.certified
        assert out.upper_bound == min(plain.upper_bound, retry.upper_bound)
        assert out.lower_bound == max(plain.lower_bound, retry.lower_bound)
        assert out.dual is None or out.dual.value == out.lower_bound
        assert out.newton_steps == plain.newton_steps + retry.newton_steps
        assert out.oracle_calls == plain.oracle_calls + retry.oracle_calls
        assert out.lower_bound <= min(opt, exact_risk(inst, out.intercept, out.coef)) + BOUND_RTOL * scale(opt)
    assert retried >= 4, retried


def test_structured_master_without_multi_level_features_runs_once(monkeypatch):
    """Binary categorical features only: no level-max retry, whatever the plain master does."""
    import drokit.reformulations.structured_master as sm
    inst = draw(0)
    Z = (inst.Z > 0).astype(int)
    inst = fz.Instance(**{**inst.__dict__, "Z": Z, "levels": tuple(2 for _ in inst.levels)})
    di = problem(inst).bind(inst.frame(), inst.y.copy()).fitting_view()
    oracle = make_oracle(di, "dp")
    calls = []
    real = sm.barrier_master
    monkeypatch.setattr(sm, "barrier_master", lambda *a, **k: calls.append(k.get("level_max", False)) or
                        real(*a, **{**k, "max_steps": 1}))
    first = phase_one(di, oracle)
    sm.structured_master(di, oracle, enumerate_configurations(di, nominal_only=True), first, tol=1e-7)
    assert calls == [False]


def test_structured_master_certifies_by_the_two_attempts_together(monkeypatch):
    """Neither attempt closes its gap alone, but the plain attempt's lower bound and the retry's point do: the merged
    result is certified (both bounds are exact), with the plain attempt's dual point; a gap they do not close stays
    uncertified."""
    import drokit.reformulations.structured_master as sm
    _, di, oracle, _, _ = case(0)
    first, rows0 = phase_one_start(di, oracle)
    real = bmm.barrier_master(di, oracle, rows0, first.intercept, first.coef, first.lam, upper=first.upper_bound,
                              mu=first.tau / di.n_samples, tol=1e-7)
    assert real.certified
    for gap, expected in ((1e-9, True), (1e-3, False)):
        plain = dataclasses.replace(real, upper_bound=real.upper_bound + 1.0, certified=False)
        retry = dataclasses.replace(real, upper_bound=real.lower_bound + gap, lower_bound=-np.inf, dual=None,
                                        certified=False)
        outs = iter([plain, retry])
        monkeypatch.setattr(sm, "barrier_master", lambda *a, **k: next(outs))
        out = sm.structured_master(di, oracle, rows0, first, tol=1e-7)
        assert out.certified is expected
        assert out.upper_bound == retry.upper_bound and out.lower_bound == plain.lower_bound
        assert out.dual is plain.dual


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_default_fits_through_the_level_max_retry_equal_the_reference(seed, monkeypatch):
    """End to end: with the plain attempt cut to one Newton step per centering, the cutting plane's fits go through
    the level-max retry (or the conic masters after it) and still equal the reference optimum; a fit the retry
    certifies reports the merged work and real configuration rows."""
    import drokit.reformulations.own_solvers as cp   # the stages before the conic masters
    import drokit.reformulations.structured_master as sm
    monkeypatch.setattr(sm, "PLAIN_CENTERING_STEPS", 1)
    seen = []
    real = cp.structured_master

    def recorded(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out)
        return out

    monkeypatch.setattr(cp, "structured_master", recorded)
    inst, di, _, opt, _ = case(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = problem(inst).compile(inst.frame(), inst.y.copy(), "cutting_plane").solve()
    opt = min(opt, exact_risk(inst, res.intercept, res.coef))
    assert res.status == "optimal" and res.relative_gap <= 1e-6
    assert res.lower_bound <= opt + BOUND_RTOL * scale(opt)
    assert abs(res.objective - opt) <= 1e-6 * scale(opt)
    if seen and res.solver == "barrier_master":
        out = seen[-1]
        record = res.auxiliary["barrier_master"]
        assert (record["centerings"], record["newton_steps"]) == (out.centerings, out.newton_steps)
        assert res.n_configuration_rows == out.rows.size
        assert np.all(out.rows.Z < np.asarray(di.schema.levels)[None, :])


def test_the_level_max_retry_certifies_default_fits():
    """The end-to-end test above is not about the conic masters only: with the plain attempt cut short, the retry
    certifies most of those fits itself."""
    import drokit.reformulations.structured_master as sm
    certified = 0
    real = sm.barrier_master
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sm, "PLAIN_CENTERING_STEPS", 1)
        calls = []
        mp.setattr(sm, "barrier_master", lambda *a, **k: calls.append((k.get("level_max", False), real(*a, **k)))
                   or calls[-1][1])
        for seed in SEEDS[:10]:
            calls.clear()
            inst = draw(seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = problem(inst).compile(inst.frame(), inst.y.copy(), "cutting_plane").solve()
            by_retry = [level for level, out in calls if out.certified] == [True]
            certified += res.solver == "barrier_master" and by_retry
    assert certified >= 5, certified
