"""The budget repair of the Lagrangian certificate (drokit/certificates/budget.py, ``budget_target``, which
drokit/certificates/lagrangian.py calls as ``_budget_target``).

A dual point whose norm-priced columns' sums overspend the budget (``S_c + N(Gamma g_L) / lip > eps``) used to be mixed
with the nominal rows, losing ``(spent - eps) base / eps``; its slopes are now repaired so that ``g_L`` fits what the
transport cost leaves, losing about ``lam (spent - eps)``.  Checked here:

* weak duality: the repaired bound at arbitrary dual points never exceeds the brute-force optimum, and the repair does
  raise the bound on some of them (the check is not vacuous);
* the target meets the budget exactly;
* German credit in raw units (credit_amount's column in the thousands amplifies rounding-size slope errors into a
  1e-7 .. 2e-6 overspend): the barrier master certifies it without a conic master, and without the repair it does not.
"""

import numpy as np
import pytest

import drokit as dk
import drokit.certificates.lagrangian as lg
import drokit.reformulations.barrier_master as bm
from drokit.certificates.repair import column_roles
from drokit.datasets import load_german_credit
from drokit.losses.conjugate import slope_domain
from tests.test_lower_bound import LEVELS, _case


def _last_barrier_point(loss, norm_p, monkeypatch):
    """A small instance (12 samples, brute-force optimum ``ref``), fitted by the cutting plane, and the last dual
    point its barrier master bounded (``None`` when another master finished it)."""
    points = []
    real = bm.lagrangian_bound

    def spy(inst, *point, **kwargs):
        points.append((inst, point))
        return real(inst, *point, **kwargs)

    monkeypatch.setattr(bm, "lagrangian_bound", spy)
    prob, inst, ref = _case(11, loss, norm_p=norm_p, radius=0.1, N=12)
    X = np.column_stack([inst.data.X, inst.data.Z.astype(float)])
    prob.compile(X, inst.y, categorical_features=[2, 3, 4], categories=[list(range(a)) for a in LEVELS],
                 method="cutting_plane").solve()
    return (points[-1] if points else None), ref


@pytest.mark.parametrize("loss", ["logistic", "huber", "smooth_hinge", "hinge", "absolute"])
@pytest.mark.parametrize("norm_p", [1, 2, np.inf])
def test_budget_repaired_bounds_stay_below_the_optimum_and_raise_overspent_points(loss, norm_p, monkeypatch):
    """Near-optimal dual points (the barrier master's last, slopes perturbed by 1e-3 relative: about half overspend
    the budget) stay below the brute-force optimum -- these sit within 3e-8 .. 1e-4 of it, a sharp check -- and the
    repair raises the bound above the mixing's on some of them."""
    last, ref = _last_barrier_point(loss, norm_p, monkeypatch)
    if last is None:
        pytest.skip("the barrier master did not run")
    inst, (rows, mass, slopes) = last
    rng = np.random.default_rng(0)
    raised = 0
    for _ in range(10):
        perturbed = np.clip(slopes * (1 + 1e-3 * rng.standard_normal(slopes.size)), *slope_domain(inst.loss))
        repaired = lg.lagrangian_bound(inst, rows, mass, perturbed).value
        with monkeypatch.context() as m:
            m.setattr(lg, "_budget_target", lambda *a, **k: None)
            mixed = lg.lagrangian_bound(inst, rows, mass, perturbed).value
        assert repaired <= ref + 1e-9 * max(1.0, abs(ref)), (repaired, ref)
        assert repaired >= mixed
        raised += repaired > mixed + 1e-12
    assert raised >= 1, "no draw overspent the budget: the repair was never exercised"


@pytest.mark.parametrize("norm_p", [1, 2, np.inf])
def test_the_budget_target_spends_exactly_what_the_transport_cost_leaves(norm_p):
    _, inst, _ = _case(3, "logistic", norm_p=norm_p, radius=0.4)
    _, limited = column_roles(inst)
    g_L = np.array([3.0, -2.0])
    lip = float(inst.loss.lipschitz)
    target = lg._budget_target(inst, g_L, limited, 0.1, lip)
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    spent = 0.1 + float(np.linalg.norm(gamma * target, ord=norm_p)) / lip
    assert spent == pytest.approx(0.4, rel=1e-10) and spent <= 0.4
    assert np.allclose(target / g_L, target[0] / g_L[0])          # the same direction, scaled
    assert lg._budget_target(inst, g_L, limited, 0.45, lip) is None          # the transport cost alone overspends


@pytest.fixture(scope="module")
def german_raw():
    X, y = load_german_credit()
    return X.iloc[:400], y.iloc[:400]


def _default_fit(X, y):
    with pytest.warns(UserWarning, match="raw units"):
        return dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y).result_


def test_german_credit_in_raw_units_is_certified_by_the_barrier_master(german_raw):
    res = _default_fit(*german_raw)
    assert res.status == "optimal" and res.solver == "barrier_master"
    assert res.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert res.lower_bound <= res.upper_bound and res.relative_gap <= 1e-6


def test_without_the_budget_repair_the_barrier_master_does_not_certify_it(german_raw, monkeypatch):
    monkeypatch.setattr(lg, "_budget_target", lambda *a, **k: None)
    res = _default_fit(*german_raw)
    assert res.solver != "barrier_master"
