"""Phase 1's working-set pruning (:data:`drokit.reformulations.phase_one.PRUNE_GAP`): the rows it keeps, the
rows its reserve gives back, and fits whose phase 1 prunes hard (a tiny gap, rows going out and back every
temperature) against the exact optimum of tests/test_barrier_master.py's instances.

Pruning only moves phase 1 (its certificate and the barrier master's are computed on the rows they hold, and
the bounds are exact): a wrong ``within`` or ``returning_rows`` would show as slow fits, never as wrong ones, so the two
are checked directly against row values computed independently (the reference's scenario losses)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import drokit.reformulations.phase_one as p1
from drokit.reformulations.row_terms import parameter_layout
from drokit.evaluation.worst_case import lambda_floor
from drokit.oracles.enumeration import enumerate_configurations, take_rows

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_barrier_master import CASES, bound_instance, exact_risk, fit, instance, scale  # noqa: E402
import fuzz_instances as fz  # noqa: E402

bf = fz.bf


def _row_values(inst: fz.Instance, di, rows, intercept, coef, lam) -> np.ndarray:
    """``l_k - lam c_k`` of drokit's rows, from the reference's scenario losses (matched by sample and codes)."""
    n = inst.n_numerical
    X, Z, y = inst.X_num, inst.Z, inst.y
    kw = inst.reference_kwargs()
    sc, losses = bf.scenario_losses((float(intercept), coef[:n], coef[n:]), X, Z, list(inst.levels), y,
                                    task=kw["task"], loss=kw["loss"], loss_param=kw["loss_param"],
                                    delta=kw["delta"], cat_p=kw["cat_p"], kappa=kw["kappa"], units=kw["units"])
    configs = bf.all_configurations(list(inst.levels))
    table = {}
    for k in range(len(losses)):
        key = (int(sc["idx"][k]), tuple(int(v) for v in configs[sc["conf"][k]]), bool(sc["flip"][k]))
        table[key] = float(losses[k]) - lam * float(sc["cost"][k])
    return np.array([table[(int(s), tuple(int(v) for v in z), bool(f))]
                     for s, z, f in zip(rows.sample, rows.Z, rows.flip)])


def _point(di, rng):
    _, dim, free, barrier = parameter_layout(di)
    theta = np.zeros(dim)
    theta[free] = rng.normal(scale=0.7, size=free.size)
    intercept, coef, _ = p1.split_theta(di, theta)
    theta[-1] = 1.5 * lambda_floor(di, coef) + 2.0 * barrier.lam0 + 0.1      # strictly feasible
    return theta, free, barrier


@pytest.mark.parametrize("i", [0, 5, 13, 20, 27, 33, 38])
def test_within_and_returning_match_independent_row_values(i):
    inst = instance(i)
    if not inst.n_categorical:
        pytest.skip("no categorical feature")
    di, oracle = bound_instance(inst)
    rows = enumerate_configurations(di)
    rng = np.random.default_rng(i)
    exercised = 0
    for _ in range(3):
        theta, free, barrier = _point(di, rng)
        intercept, coef, lam = p1.split_theta(di, theta)
        master = p1.SmoothedMaster(di, rows, free, barrier)
        value = _row_values(inst, di, master.rows, intercept, coef, lam)
        top = np.full(di.n_samples, -np.inf)
        np.maximum.at(top, master.rows.sample, value)
        for gap in (0.0, 0.05, 0.3, 1.0):
            expect = np.flatnonzero(value >= top[master.rows.sample] - gap - 1e-12)
            got = master.within(theta, gap)
            near_edge = np.abs(value - (top[master.rows.sample] - gap)) < 1e-9
            assert set(got) ^ set(expect) <= set(np.flatnonzero(near_edge)), (gap, got, expect)
            assert np.all(np.isin(np.unique(master.rows.sample), master.rows.sample[got]))   # every max kept
        # the reserve: every row outside a master of the per-sample maximizers only
        keep = master.within(theta, 0.0)
        small = p1.SmoothedMaster(di, take_rows(master.rows, keep), free, barrier)
        reserve = take_rows(master.rows, np.setdiff1d(np.arange(master.rows.size), keep))
        lam_f = max(lam, lambda_floor(di, coef))
        sep = oracle.separate(intercept, coef, lam_f, np.zeros(di.n_samples))
        reserve_value = _row_values(inst, di, reserve, intercept, coef, lam_f)
        exercised += reserve.size > 0
        for gap in (0.0, 0.2, 5.0) if reserve.size else ():
            left, back = p1.returning_rows(di, reserve, theta, sep.violation, gap, small)
            edge = np.abs(reserve_value - (sep.violation[reserve.sample] - gap)) < 1e-9
            expect = reserve_value >= sep.violation[reserve.sample] - gap
            if edge.any():
                continue                      # a row on the threshold may go either way
            assert left.size == int((~expect).sum())
            assert np.all(_row_values(inst, di, left, intercept, coef, lam_f) < sep.violation[left.sample] - gap)
            if not expect.any():
                assert back is None
            else:   # the reserve rows are not in ``small``: all of those within the gap come back
                assert back is not None and back.size == int(expect.sum())
                assert back.size == small.index.unseen(back).size
                assert np.all(_row_values(inst, di, back, intercept, coef, lam_f)
                              >= sep.violation[back.sample] - gap)
    assert exercised or rows.size == di.n_samples     # only when every sample has one row


@pytest.mark.parametrize("i", range(0, len(CASES), 3))
def test_fits_whose_phase_one_prunes_hard_are_exact(i, monkeypatch):
    """A gap of 1e-4 (relative): at every temperature nearly every row but the maximizers leaves, and comes back
    when the next point needs it; the fit is still certified at the exact optimum."""
    inst = instance(i)
    monkeypatch.setattr(p1, "PRUNE_GAP", 1e-4)
    res = fit(inst)
    risk = exact_risk(inst, res.intercept, res.coef)
    opt_upper = risk
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(risk, rel=1e-7, abs=1e-9)
    assert res.lower_bound <= opt_upper + 1e-9 * scale(opt_upper)
    assert res.objective - res.lower_bound <= 1e-6 * max(abs(res.objective), 1e-2) + 1e-12
