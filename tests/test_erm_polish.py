"""The weighted-ERM polish of a dual point (drokit/certificates/erm_polish.py) and the repair's active-set
polish (drokit/certificates/repair.py), checked against the brute-force reference (tests/reference/brute_force.py):

* weak duality: at arbitrary masses, slopes and models the polished bound is below the reference optimum, for
  every smooth loss, norms 1 / 2 / inf, finite and infinite kappa (the polish goes through the same repair and
  budget as every Lagrangian bound, so its slopes cannot make it invalid);
* it chooses the slopes: at the worst-case masses of an optimal model with *random* slopes the repaired bound
  is far below the optimum and the polished one meets it;
* ``within_budget`` keeps every sample's mass and meets the budget exactly;
* the two fits of selvi2022's protocol that were not certified (lymphography, kappa = 1, radius 1e-4) are, and a
  near-singular repair from one of them needs the second active-set pass (mutation: without it, no repair).
"""

import zlib

import numpy as np
import pytest
import scipy.sparse as sp

import drokit as dk
import drokit.certificates.erm_polish as ep
import drokit.certificates.lagrangian as lg
import drokit.certificates.repair as repair
import drokit.certificates.lower_bound as lb
from drokit.oracles.enumeration import enumerate_configurations
from drokit.oracles.rows import FractionalRows
from tests.test_lower_bound import _case, _random_point

SMOOTH = ["logistic", "smooth_hinge", "huber"]


def _theta(inst, intercept, coef):
    return np.r_[intercept, coef] if inst.fit_intercept else np.asarray(coef, dtype=float)


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("norm_p,kappa", [(1, np.inf), (2, 1.3), (np.inf, np.inf)])
def test_polished_bound_is_below_the_optimum_at_arbitrary_points(loss, norm_p, kappa):
    rng = np.random.default_rng(zlib.crc32(f"polish-{loss}-{norm_p}".encode()))
    _, inst, ref = _case(11, loss, norm_p=norm_p, kappa=kappa)
    n_theta = (1 if inst.fit_intercept else 0) + inst.schema.n_encoded
    finite = 0
    for _ in range(8):
        rows, mass, slopes = _random_point(inst, rng)
        bound = ep.polished_bound(inst, rows, mass, slopes, rng.normal(0, 1, n_theta))
        assert bound is not None
        assert bound.value <= ref + 1e-9 * max(1.0, abs(ref)), (bound.value, ref)
        finite += np.isfinite(bound.value)
    assert finite >= 6


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("seed,N", [(15, 8), (12, 12), (13, 10)])
def test_the_polish_chooses_the_slopes(loss, seed, N):
    """Every column free (immutable numerical features, labels that may flip): at the KKT masses of the optimal
    model (every configuration row) the repaired bound of random slopes is far below the optimum, the polished
    bound of the same point meets it (1e-7 relative) from the model alone.  (With norm-priced columns the polish
    holds them at the model's values and the budget prices the ERM's sums there: valid, not the dual function.)"""
    prob, inst, ref = _case(seed, loss, kappa=1.3, gamma=(np.inf, np.inf), N=N)
    X = np.column_stack([inst.data.X, inst.data.Z.astype(float)])
    res = prob.compile(X, inst.y, method="monolithic", categorical_features=[2, 3, 4],
                       categories=[[0, 1], [0, 1, 2], [0, 1]]).solve()
    rows, mass, _, _ = lb.kkt_multipliers(inst, enumerate_configurations(inst), res.intercept, res.coef)
    lo, hi = lg.slope_domain(inst.loss)
    random_slopes = np.random.default_rng(3).uniform(lo, hi, rows.size)
    plain = lg.lagrangian_bound(inst, rows, mass, random_slopes).value
    polished = ep.polished_bound(inst, rows, mass, random_slopes, _theta(inst, res.intercept, res.coef)).value
    assert plain < ref - 1e-3 * max(1.0, abs(ref))
    assert ref - 1e-7 * max(1.0, abs(ref)) <= polished <= ref + 1e-9 * max(1.0, abs(ref)), (polished, ref)


def test_piecewise_affine_adversarial_and_penalized_fits_are_not_polished():
    _, hinge, _ = _case(11, "hinge")
    _, penalized, _ = _case(11, "logistic", l2=0.1)
    _, smooth, _ = _case(11, "logistic")
    assert not ep.polish_applies(hinge) and not ep.polish_applies(penalized) and ep.polish_applies(smooth)
    rows, mass, slopes = _random_point(hinge, np.random.default_rng(0))
    assert ep.polished_bound(hinge, rows, mass, slopes, np.zeros(1 + hinge.schema.n_encoded)) is None


@pytest.mark.parametrize("fractional", [False, True])
def test_within_budget_keeps_each_samples_mass_and_meets_the_budget(fractional):
    _, inst, _ = _case(11, "logistic", radius=0.05)
    rows, raw, _ = _random_point(inst, np.random.default_rng(5))
    rows, mass, _, _ = lg.with_every_sample(inst, rows, raw, np.zeros(rows.size), None, -1.0, 0.0)
    if fractional:
        rows = FractionalRows(rows.sample, rows.flip, rows.cost, lg.row_matrix(inst, rows))
    assert mass @ rows.cost > inst.radius                      # the random point overspends
    new_rows, new_mass = ep.within_budget(inst, rows, mass)
    assert new_mass @ new_rows.cost <= inst.radius
    assert new_mass @ new_rows.cost >= inst.radius * (1 - 1e-12)
    np.testing.assert_allclose(np.bincount(new_rows.sample, new_mass, inst.n_samples), inst.p, rtol=1e-12)
    assert np.all(new_rows.cost[rows.size:] == 0)              # the moved mass sits on nominal rows
    A_new = lg.row_matrix(inst, new_rows)
    nominal = lg.row_matrix(inst, enumerate_configurations(inst, nominal_only=True))
    np.testing.assert_array_equal(sp.csr_matrix(A_new)[rows.size:].toarray(),
                                  sp.csr_matrix(nominal)[new_rows.sample[rows.size:]].toarray())
    same, same_mass = ep.within_budget(inst, rows, mass * 0.0 + inst.p[rows.sample] * (rows.cost == 0))
    assert same is rows                                        # within the budget: unchanged


def _near_singular_repair():
    data = np.load("tests/data/repair_near_singular.npz")
    A = sp.csr_matrix((data["data"], (data["row"], data["col"])), shape=tuple(data["shape"]))
    return A, data["mass"], data["sigma"], data["slopes"], data["room"]


def test_repair_near_a_singular_gram_takes_a_second_active_set_pass(monkeypatch):
    """The free columns of a barrier dual point of lymphography (42 dummies, cond(Gram) 6e17): the first active-set
    pass leaves 1.6e-12, above the 1e-12 tolerance, the least-norm corrections drop the remaining directions, a
    second pass meets it.  Mutation: with one pass allowed the repair fails."""
    A, mass, sigma, slopes, room = _near_singular_repair()
    target = np.zeros(A.shape[1])
    out = repair.repair_free_columns(A, target, mass, sigma, slopes, room, -1.0, 0.0, bvls=False)
    assert out is not None
    assert np.max(np.abs(A.T @ (mass * out * sigma))) <= repair.RESIDUAL_RTOL
    assert np.all((out >= -1.0) & (out <= 0.0))
    original, calls = repair._bounded_repair, []

    def once(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs) if len(calls) == 1 else None
    monkeypatch.setattr(repair, "_bounded_repair", once)
    assert repair.repair_free_columns(A, target, mass, sigma, slopes, room, -1.0, 0.0, bvls=False) is None


@pytest.mark.parametrize("split,fold", [(0, 2), (2, 1)])
def test_selvi2022_lymphography_small_radius_fits_are_certified(split, fold):
    """The 2 of 2,340 CV fits of `python -m reproductions.selvi2022 --drokit-cp-defaults` that raised (relative gap
    6.0e-6 and 5.4e-6 after AlmostSolved masters): certified with drokit's defaults now."""
    from reproductions.selvi2022.protocol import draw_splits, load_selvi2022, mixed_metric
    X, y = load_selvi2022("lymphography")
    train = draw_splits(len(X), splits=5, folds=3, max_rows=300, seed=2022)[split].folds[fold][0]
    est = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(mixed_metric(X.shape[1], 1.0), radius=1e-4))
    est.fit(X.iloc[train], np.asarray(y)[train])
    res = est.result_
    assert res.status == "optimal"
    assert res.relative_gap <= 1e-6
    assert res.auxiliary["lower_bound"]["source"] == "lagrangian"
