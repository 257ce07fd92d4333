"""Seeded fuzzing of drokit against the brute-force reference, in the suite (issue 21).

``tests/fuzz_instances.py`` draws tiny random instances (every loss, norm, categorical exponent, label
cost, immutable and ordinal features, asymmetric level costs, integer sample weights as repeated rows, radius 0
sometimes) and checks one fit against ``tests/reference/brute_force.py``; its docstring defines the failure
categories.  Here:

* ``test_fuzz_block``: :data:`N_INSTANCES` instances in blocks of :data:`BLOCK`; each instance is fitted
  with :data:`FITS_PER_INSTANCE` of the methods that apply to it (rotating with the seed, so that every
  method / oracle gets its share) plus one that does not (it must refuse with a ParameterError).
  One test per (failure category, block): a block may not contain a failure of that category.
  Categories that fail today in a block are strict xfails (:data:`KNOWN_FAILING`, with the reason
  from :data:`REASONS`): when drokit is fixed they XPASS, which fails the suite so that the entry is
  removed and the check guards the fix.
* ``test_regression_case``: the failures found by the benchmark (``benchmarks/fuzz_reference.py``, 6,000
  instances) saved as explicit cases in ``tests/data/fuzz_regressions.json``: per case the failure class,
  the method label, the category that must not fire, the reason, ``failing`` (strict xfail while true:
  set it to false once fixed), the benchmark's detail line and the full instance
  (:meth:`fuzz_instances.Instance.describe`, not only its seed, so that the cases survive changes to
  ``draw_instance``).

The thousands-of-instances run is ``python benchmarks/fuzz_reference.py --n 10000``.
"""

import dataclasses
import functools
import json
import os
import sys

import numpy as np
import pytest

import drokit as dk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_instances as fz  # noqa: E402

N_INSTANCES = 240
BLOCK = 30
FITS_PER_INSTANCE = 3
REGRESSIONS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fuzz_regressions.json")

REASONS = {
    "certificate": "issue 21 item 1: lower_bound is the conic solver's (or master's) dual objective, which "
                   "exceeds the exact upper bound by 1e-9..1e-6 relative; the goal is <= 1e-12",
    "lower_above_ref": "issue 21 item 1: lower_bound above the true optimum (by 1e-8..3e-8 at an optimum of 0; "
                       "by 2.7e-7 on a cutting plane)",
    "objective": "issue 21 item 1: at an optimum of 0 the solver stops at 2e-8 (optimal by its own gap "
                 "tolerance), beyond the 1e-8 floor",
    "refused": "issue 21 item 4: radius 0 with method_options raises 'method_options are not used by "
               "method erm'",
}

#: category -> blocks in which it fails today (the certificate, lower_above_ref and refused categories were
#: fixed by the Lagrangian lower bound and radius-0 ERM with method options);
#: every other (category, block) pair must pass
KNOWN_FAILING: dict = {}


def ci_labels(inst):
    """The method labels fitted on ``inst`` in CI: :data:`FITS_PER_INSTANCE` applicable ones, rotating
    with the seed, and one inapplicable one (which must refuse) if there is any."""
    applicable = [fz.method_label(*p) for p in fz.methods_for(inst)]
    others = [lbl for lbl in fz.METHOD_LABELS if lbl not in applicable]
    start = inst.seed % len(applicable)
    chosen = [applicable[(start + j) % len(applicable)] for j in range(min(FITS_PER_INSTANCE, len(applicable)))]
    return chosen + ([others[inst.seed % len(others)]] if others else [])


@functools.lru_cache(maxsize=None)
def block_outcomes(block):
    """The outcomes of every CI fit of the instances of ``block`` (computed once per session)."""
    outcomes = []
    for seed in range(block * BLOCK, (block + 1) * BLOCK):
        inst = fz.draw_instance(seed)
        outcomes += [fz.check_instance(inst, *fz.parse_label(lbl)) for lbl in ci_labels(inst)]
    return tuple(outcomes)


def _block_params():
    for category in fz.CATEGORIES:
        for block in range(N_INSTANCES // BLOCK):
            marks = ([pytest.mark.xfail(strict=True, reason=REASONS[category])]
                     if block in KNOWN_FAILING.get(category, ()) else [])
            seeds = f"seeds{block * BLOCK}-{(block + 1) * BLOCK - 1}"
            yield pytest.param(category, block, marks=marks, id=f"{category}-{seeds}")


@pytest.mark.parametrize("category,block", list(_block_params()))
def test_fuzz_block(category, block):
    failures = [f"seed {o.seed} {o.method}: {detail}  [{fz.draw_instance(o.seed).summary()}]"
                for o in block_outcomes(block) for cat, detail in o.failures if cat == category]
    assert not failures, f"{len(failures)} {category} failure(s):\n" + "\n".join(failures[:10])


def test_every_method_is_exercised():
    """The CI sample fits every method / oracle on a fair share of the instances and never sees a
    reference failure."""
    fitted = [o for block in range(N_INSTANCES // BLOCK) for o in block_outcomes(block) if o.verdict != "skip"]
    per_method = {lbl: sum(o.method == lbl for o in fitted) for lbl in fz.METHOD_LABELS}
    assert min(per_method.values()) >= 5, per_method  # erm: radius 0 only, ~10% of the instances
    assert not [o.seed for o in fitted if o.reference_failed]


def test_draw_instance_is_deterministic_and_round_trips():
    for seed in (0, 7, 123):
        a, b = fz.draw_instance(seed), fz.draw_instance(seed)
        assert fz.describe_json(a) == fz.describe_json(b)
        c = fz.Instance.from_description(json.loads(fz.describe_json(a)))
        assert fz.describe_json(c) == fz.describe_json(a)


def test_integer_weights_are_repeated_rows_in_the_reference():
    """The harness's premise, on the nominal risk (radius 0) of a fixed model: the reference on repeated
    rows is the sample-weighted mean of the losses."""
    inst = next(i for i in map(fz.draw_instance, range(100)) if i.sample_weight is not None)
    inst = dataclasses.replace(inst, radius=0.0)
    coef = np.linspace(-0.5, 0.5, inst.n_numerical + sum(a - 1 for a in inst.levels))
    design = fz.bf.design_matrix(inst.X_num, inst.Z, list(inst.levels))
    f = design @ np.r_[0.3, coef]
    e = inst.y * f if inst.task == "classification" else f - inst.y
    expected = np.average(fz.bf.loss_value(inst.loss, e, inst.loss_param), weights=inst.sample_weight)
    assert inst.reference_risk(0.3, coef) == pytest.approx(expected, rel=1e-12)


def test_reference_level_costs():
    """The reference's ``units`` (used for OrdinalCost instances): rank distances by hand, and the 0/1
    matrices give the plain mismatch cost."""
    units = [np.abs(np.subtract.outer(np.arange(3), np.arange(3))).astype(float), 1.0 - np.eye(2)]
    delta = [0.5, 2.0]
    # feature 0 moves two ranks (0.5 * 2 = 1), feature 1 changes (2): (1^2 + 2^2)^(1/2)
    assert fz.bf.categorical_distance([0, 0], [2, 1], delta, 2.0, units) == pytest.approx(5 ** 0.5)
    mismatch = [1.0 - np.eye(3), 1.0 - np.eye(2)]
    for z, zp in [([0, 0], [2, 1]), ([1, 0], [2, 0]), ([2, 1], [2, 1])]:
        assert fz.bf.categorical_distance(z, zp, delta, 0.5, mismatch) == \
            pytest.approx(fz.bf.categorical_distance(z, zp, delta, 0.5))


def test_the_harness_detects_wrong_fits(monkeypatch):
    """Each category fires on a fit doctored to violate it (and only the exception categories on
    exceptions), so that a green run means something."""
    inst = fz.draw_instance(3)
    good = fz.fit(inst, "monolithic")
    doctored = {
        "objective": dict(objective=good.objective * 1.01 + 1e-3),
        "lower_above_ref": dict(lower_bound=good.upper_bound * 1.01 + 1e-3),
        "upper_inexact": dict(upper_bound=good.upper_bound * 0.99 - 1e-3),
    }
    for category, change in doctored.items():
        monkeypatch.setattr(fz, "fit", lambda *a, change=change: dataclasses.replace(good, **change))
        assert category in fz.check_instance(inst, "monolithic").categories
    for exc, category in [(dk.SolverError("stopped"), "uncertified"), (dk.ParameterError("no"), "refused"),
                          (ZeroDivisionError("raw"), "raw_exception")]:
        def boom(*a, exc=exc):
            raise exc
        monkeypatch.setattr(fz, "fit", boom)
        assert fz.check_instance(inst, "monolithic").categories == [category]


# ------------------------------------------------------------------------------------- regressions
def _regression_params():
    if not os.path.exists(REGRESSIONS_FILE):
        return []
    with open(REGRESSIONS_FILE) as fh:
        cases = json.load(fh)
    out = []
    for case in cases:
        marks = ([pytest.mark.xfail(strict=True, reason=case["reason"])] if case.get("failing", True) else [])
        out.append(pytest.param(case, marks=marks,
                                id=f"seed{case['instance']['seed']}-{case['method']}-{case['category']}"))
    return out


@pytest.mark.parametrize("case", _regression_params())
def test_regression_case(case):
    inst = fz.Instance.from_description(case["instance"])
    out = fz.check_instance(inst, *fz.parse_label(case["method"]))
    found = [detail for cat, detail in out.failures if cat == case["category"]]
    assert not found, f"{inst.summary()}: {found}"
