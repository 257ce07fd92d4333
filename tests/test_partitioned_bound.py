"""The Lagrangian bound from a distributed fit's partitions (drokit/certificates/partitioned_bound.py, issue 25).

Every dual point here is split by samples into 1, 2 and 4 partitions (unequal sizes, one partition of a single sample,
the samples shuffled), each partition an instance of its samples with their probabilities in the whole nominal
distribution; checked:

* the partitioned bound equals ``lagrangian_bound(..., bvls=False)`` on the whole instance to 1e-10 (relative), value
  and mixing weight, and never exceeds the default in-memory bound (whose only extra step is the dense last resort),
  at the fitted model's worst-case support (loose: ties; some mix with the nominal rows), at the KKT multipliers (tight:
  within 1e-6 of the fitted objective), and at random points (every configuration row, random masses with samples left
  without mass, random slopes: the active-set repair and the mixing run), for the logistic, hinge, smooth hinge, Huber
  and absolute losses, ``kappa`` finite and infinite, sample weights, an immutable numerical feature, no intercept;
* weak duality: every bound <= the fitted model's objective;
* the budget overspent by the norm-priced columns (KKT slopes perturbed): the second repair (toward the budget's
  target) raises the in-memory bound above the mixing's on some draws, and the partitioned bound follows both;
* the repaired point the partitions keep certifies the same value in memory;
* a free column that cannot be repaired gives ``-inf`` on both sides;
* mutations (one partition's column sums dropped, its value dropped, partitions whose probabilities sum to 1 each)
  change the answer: the equality checks can fail.
"""

import collections
import dataclasses
import functools

import numpy as np
import pytest

import drokit as dk
import drokit.certificates.lagrangian as lg
import drokit.certificates.partitioned_bound as pb
import drokit.certificates.repair as repair
from drokit.certificates.lagrangian import initial_slopes, lagrangian_bound, loss_arguments
from drokit.certificates.lower_bound import kkt_multipliers
from drokit.certificates.repair import RESIDUAL_RTOL
from drokit.certificates.support import worst_case_support
from drokit.losses.conjugate import slope_domain
from drokit.oracles.enumeration import enumerate_configurations
from drokit.oracles.rows import concat_rows, take_rows
from tests.reference import brute_force as bf
from tests.test_against_reference import LOSS_PARAMS, TASK, make_loss

LEVELS = [2, 3, 2]
N = 12
RTOL = 1e-10

CASES = {
    "logistic": dict(loss="logistic"),
    "logistic-kappa-weights": dict(loss="logistic", kappa=1.3, weights=True),
    "hinge-p1": dict(loss="hinge", norm_p=1),
    "hinge-kappa-immutable": dict(loss="hinge", kappa=1.3, gamma=(np.inf, 1.2)),
    "smooth_hinge-pinf-no-intercept": dict(loss="smooth_hinge", norm_p=np.inf, fit_intercept=False),
    "smooth_hinge-kappa-weights": dict(loss="smooth_hinge", kappa=0.9, weights=True),
    "huber": dict(loss="huber"),
    "huber-kappa-immutable-weights": dict(loss="huber", kappa=1.3, gamma=(np.inf, 1.2), weights=True),
    "absolute-kappa-no-intercept": dict(loss="absolute", kappa=1.3, fit_intercept=False),
    "absolute-weights-p1": dict(loss="absolute", weights=True, norm_p=1),
}


def _bind(loss, kappa=np.inf, norm_p=2, gamma=(0.7, 1.6), delta=(0.6, 1.3, 0.9), weights=False, fit_intercept=True,
          radius=0.3, seed=3, penalty=0.0):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    X, Z, y = bf.random_instance(seed, N, 2, LEVELS, task)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p, weights=np.asarray(gamma, float)),
                             categorical=dk.MismatchCost(weights=np.asarray(delta, float)),
                             label=dk.LabelCost(kappa=kappa))
    prob = dk.Problem(make_loss(loss, par), dk.Wasserstein(metric, radius=radius), task=task,
                      fit_intercept=fit_intercept, l2_penalty=penalty)
    data = np.column_stack([X, Z.astype(float)])
    w = np.random.default_rng(seed + 100).uniform(0.2, 3.0, N) if weights else None
    kwargs = dict(categorical_features=[2, 3, 4], categories=[list(range(a)) for a in LEVELS], sample_weight=w)
    return prob, data, y, kwargs


@functools.lru_cache(maxsize=None)
def _fitted(name):
    """``(inst, fitted objective, {point name: (rows, mass, slopes, room)})``: the worst-case support of the fitted
    model with slopes ``L'(u)`` and the KKT multipliers on its near-maximizers."""
    prob, data, y, kwargs = _bind(**CASES[name])
    inst = prob.bind(data, y, **kwargs)
    assert inst.weighted == bool(CASES[name].get("weights"))
    res = prob.compile(data, y, method="monolithic", **kwargs).solve()
    assert res.status == "optimal"
    support = worst_case_support(inst, res.intercept, res.coef)
    slopes, room = initial_slopes(inst.loss, loss_arguments(inst, support.rows, res.intercept, res.coef))
    kkt = kkt_multipliers(inst, support.candidates, res.intercept, res.coef)
    assert kkt is not None
    return inst, float(res.upper_bound), {"support": (support.rows, support.mass, slopes, room), "kkt": kkt}


def _groups(n_parts, seed=0):
    perm = np.random.default_rng(seed).permutation(N)
    cuts = {1: [], 2: [8], 4: [1, 3, 8]}[n_parts]
    return np.split(perm, cuts)


def _part(inst, idx, rows, mass, slopes, room, local_p=False):
    """The partition of samples ``idx``: their instance with their probabilities in the whole nominal distribution
    (``local_p``: renormalized to sum to 1 on the partition, a mutation) and their rows, renumbered."""
    local = np.full(inst.n_samples, -1)
    local[idx] = np.arange(idx.size)
    sel = np.flatnonzero(np.isin(rows.sample, idx))
    sub = take_rows(rows, sel)
    sub = dataclasses.replace(sub, sample=local[sub.sample])
    p = inst.p[idx] / np.sum(inst.p[idx]) if local_p else inst.p[idx]
    part = dataclasses.replace(inst.take_samples(idx), sample_weight=p)
    return pb.BoundPart(part, sub, mass[sel], slopes[sel], None if room is None else room[sel])


class CountingParts(pb.LocalParts):
    """Partitions in memory that count the calls by method name."""

    def __init__(self, parts):
        super().__init__(parts)
        self.counts = collections.Counter()

    def call(self, name, *args, **kwargs):
        self.counts[name] += 1
        return super().call(name, *args, **kwargs)


def _split(inst, point, n_parts, seed=0, parts_class=CountingParts, **kwargs):
    rows, mass, slopes, room = point
    return parts_class([_part(inst, idx, rows, mass, slopes, room, **kwargs) for idx in _groups(n_parts, seed)])


def _same(a, b, rtol=RTOL):
    if not (np.isfinite(a) and np.isfinite(b)):
        return a == b
    return abs(a - b) <= rtol * max(1.0, abs(b))


def _check_equal(inst, point, n_parts, seed=0):
    """The partitioned bound against the in-memory one; returns both and the parts."""
    ref = lagrangian_bound(inst, *point, bvls=False)
    parts = _split(inst, point, n_parts, seed)
    out = pb.partitioned_lagrangian_bound(parts, inst)
    assert _same(out.value, ref.value), (out.value, ref.value)
    assert _same(out.scale, ref.scale), (out.scale, ref.scale)
    assert out.rows is None and out.mass is None and out.slopes is None
    if np.isfinite(out.value):
        assert out.residual <= RESIDUAL_RTOL
    assert out.value <= lagrangian_bound(inst, *point).value + RTOL * max(1.0, abs(ref.value))
    return out, ref, parts


@pytest.mark.parametrize("n_parts", [1, 2, 4])
@pytest.mark.parametrize("point", ["support", "kkt"])
@pytest.mark.parametrize("name", list(CASES))
def test_partitioned_bound_equals_the_in_memory_bound_at_the_fitted_models_points(name, point, n_parts):
    inst, objective, points = _fitted(name)
    out, ref, _ = _check_equal(inst, points[point], n_parts)
    assert out.value <= objective + 1e-9 * max(1.0, abs(objective))          # weak duality
    if point == "kkt":                                                      # tight: the check is not vacuous
        assert objective - out.value <= 1e-6 * max(1.0, abs(objective)), (out.value, objective)


def test_the_fitted_points_cover_the_mixing():
    """The worst-case supports with slopes ``L'(u)`` overspend the budget in some cases (ties at the hinge's kink):
    the mixing with the nominal rows is among what the equality checks above compare."""
    mixed = [name for name in CASES if lagrangian_bound(_fitted(name)[0], *_fitted(name)[2]["support"],
                                                        bvls=False).scale < 1.0]
    assert mixed


def _random_point(inst, rng):
    """Every configuration row, random masses (about 40 % of the rows and every row of two samples without mass) and
    random slopes in the loss's slope domain."""
    rows = enumerate_configurations(inst)
    mass = rng.exponential(size=rows.size) * (rng.random(rows.size) < 0.6)
    mass[np.isin(rows.sample, rng.choice(inst.n_samples, 2, replace=False))] = 0.0
    lo, hi = slope_domain(inst.loss)
    return rows, mass, rng.uniform(lo, hi, size=rows.size), None


@pytest.mark.parametrize("name", list(CASES))
def test_partitioned_bound_equals_the_in_memory_bound_at_random_points(name):
    """Random masses (about 40 % of the rows without mass, some samples without any: their nominal rows are added on
    their partition) and slopes: the repair's least-norm and active-set steps and the budget's mixing run."""
    inst, objective, _ = _fitted(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    seen = collections.Counter()
    for draw in range(4):
        point = _random_point(inst, rng)
        out, ref, _ = _check_equal(inst, point, n_parts=(1, 2, 4, 4)[draw], seed=draw)
        assert out.value <= objective + 1e-9 * max(1.0, abs(objective))
        seen["finite"] += np.isfinite(out.value)
        seen["mixed"] += out.scale < 1.0
    assert seen["finite"] >= 3 and seen["mixed"] >= 1, seen


def test_random_points_run_the_active_set_and_complete_samples_without_mass():
    """Across the random draws of a few cases the active-set repair ran on the partitions and samples without mass were
    completed: the equality above covers those steps."""
    seen = collections.Counter()
    for name in ["logistic", "hinge-kappa-immutable", "huber"]:
        inst = _fitted(name)[0]
        rng = np.random.default_rng(sum(map(ord, name)))
        for draw in range(4):
            point = _random_point(inst, rng)
            seen["sample without mass"] += np.setdiff1d(np.arange(N), point[0].sample[point[1] > 0]).size > 0
            _, _, parts = _check_equal(inst, point, 4, seed=draw)
            seen["active set"] += parts.counts["bounded_start"] > 0
    assert seen["active set"] >= 2 and seen["sample without mass"] >= 1, seen


@pytest.mark.parametrize("name", ["logistic", "hinge-kappa-immutable", "smooth_hinge-pinf-no-intercept",
                                  "huber-kappa-immutable-weights", "absolute-kappa-no-intercept"])
def test_an_overspent_budget_is_repaired_toward_its_target_as_in_memory(name, monkeypatch):
    """KKT slopes perturbed by 1e-3 (relative) overspend the budget on some draws; the second repair (the norm-priced
    columns' sums scaled into what the transport cost leaves) raises the bound above the mixing's on some of them, and
    the partitioned bound follows: with the second repair and, both sides without it, with the mixing alone."""
    inst, objective, points = _fitted(name)
    rows, mass, slopes, room = points["kkt"]
    rng = np.random.default_rng(1)
    raised = 0
    for draw in range(10):
        perturbed = np.clip(slopes * (1 + 1e-3 * rng.standard_normal(slopes.size)), *slope_domain(inst.loss))
        point = (rows, mass, perturbed, room)
        out, ref, _ = _check_equal(inst, point, n_parts=(2, 4)[draw % 2], seed=draw)
        assert out.value <= objective + 1e-9 * max(1.0, abs(objective))
        with monkeypatch.context() as m:
            m.setattr(lg, "_budget_target", lambda *a, **k: None)
            m.setattr(pb, "budget_target", lambda *a, **k: None)
            mixed, mixed_ref, _ = _check_equal(inst, point, n_parts=4, seed=draw)
        raised += mixed_ref.scale < 1.0 and ref.value > mixed_ref.value + 1e-12
    assert raised >= 1, "no draw's budget repair raised the bound: the second repair was not exercised"


@pytest.mark.parametrize("name", list(CASES))
def test_the_partitions_keep_a_point_that_certifies_the_same_value_in_memory(name):
    """The repaired point the partitions keep (:meth:`BoundPart.point`), gathered and renumbered, is feasible as it is:
    the in-memory bound at it is the partitioned value."""
    inst, _, points = _fitted(name)
    groups = _groups(4)
    parts = _split(inst, points["kkt"], 4)
    out = pb.partitioned_lagrangian_bound(parts, inst)
    assert np.isfinite(out.value) and out.scale == 1.0
    gathered = []
    for idx, part in zip(groups, parts.objects):
        rows, mass, slopes = part.point()
        gathered.append((dataclasses.replace(rows, sample=idx[rows.sample]), mass, slopes))
    rows = concat_rows([r for r, _, _ in gathered])
    mass, slopes = (np.concatenate([g[i] for g in gathered]) for i in (1, 2))
    assert np.allclose(np.bincount(rows.sample, weights=mass, minlength=N), inst.p, rtol=1e-13, atol=0)
    again = lagrangian_bound(inst, rows, mass, slopes, room=np.zeros(slopes.size), bvls=False)
    assert _same(again.value, out.value), (again.value, out.value)


def test_where_the_repair_does_not_close_the_bound_is_minus_infinity_on_both_sides(monkeypatch):
    """With every least-norm and active-set solve failing (their Gram solves return None) the repair has no candidate:
    the partitioned bound is ``-inf`` with the in-memory residual ``max |g_F|``, as ``lagrangian_bound(...,
    bvls=False)``; the in-memory default may still close it by its dense last resort, never below it."""
    monkeypatch.setattr(repair, "gram_solve", lambda gram, rhs: None)
    monkeypatch.setattr(pb, "gram_solve", lambda gram, rhs: None)
    for name in ["logistic", "huber-kappa-immutable-weights"]:
        inst, _, points = _fitted(name)
        out, ref, _ = _check_equal(inst, points["support"], 4)
        assert out.value == -np.inf and _same(out.residual, ref.residual) and out.residual > 0


class DroppingParts(CountingParts):
    """A mutation: the last partition's result of method ``drop`` left out."""

    drop = "sums"

    def call(self, name, *args, **kwargs):
        out = super().call(name, *args, **kwargs)
        return out[:-1] if name == self.drop else out


@pytest.mark.parametrize("name", ["logistic-kappa-weights", "huber", "hinge-kappa-immutable"])
@pytest.mark.parametrize("mutation", ["sums", "value", "local probabilities"])
def test_mutations_of_the_partition_sums_change_the_answer(name, mutation, monkeypatch):
    inst, _, points = _fitted(name)
    ref = lagrangian_bound(inst, *points["kkt"], bvls=False)
    assert _same(pb.partitioned_lagrangian_bound(_split(inst, points["kkt"], 4), inst).value, ref.value)
    if mutation == "local probabilities":       # each partition's masses scaled to probabilities summing to 1 on it
        parts = _split(inst, points["kkt"], 4, local_p=True)
    else:
        monkeypatch.setattr(DroppingParts, "drop", mutation)
        parts = _split(inst, points["kkt"], 4, parts_class=DroppingParts)
    mutated = pb.partitioned_lagrangian_bound(parts, inst).value
    assert not _same(mutated, ref.value, rtol=1e-6), (mutation, mutated, ref.value)


@pytest.mark.parametrize("kind", ["penalty", "adversarial"])
def test_penalized_and_adversarial_problems_are_refused(kind):
    prob, data, y, kwargs = _bind("logistic", penalty=0.1 if kind == "penalty" else 0.0)
    if kind == "adversarial":
        prob.loss = dk.losses.Adversarial("logistic", norm=2, budget=0.1)
    inst = prob.bind(data, y, **kwargs)
    assert inst.penalized == (kind == "penalty")
    rows = enumerate_configurations(inst)
    point = (rows, np.ones(rows.size), np.zeros(rows.size), None)
    with pytest.raises(ValueError, match="unpenalized"):
        pb.partitioned_lagrangian_bound(pb.LocalParts([]), inst)
    with pytest.raises(ValueError, match="unpenalized"):
        _split(inst, point, 1)
