"""MOT-DRO's searches before and around the certifying masters (issue 23): MOT phase 1
(``drokit/reformulations/mot_phase_one.py``: smoothed Newton on the KL dual over rows the oracle grows) and the
slope-cut masters with their linear program's dual point (``drokit/reformulations/mot_slope_cuts.py``,
``mot_slope_search.py``, ``mot_slope_certificate.py``).

On a small nearly separable instance the plain masters over configuration rows (``search="none"``) do not certify
within six rounds, where phase 1's rows let two do; every path's certified interval holds the independent
full-enumeration optimum of ``tests/reference/mot_dro.py``.  Audiology (62 categorical features, the issue's
reproducer) certifies through the slope cuts.  The pieces: phase 1's derivatives by finite differences, the slope
cuts' validity against the oracle, the certificate's bound below the reference at any weights and at it near the
optimum."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.oracles import make_oracle
from drokit.reformulations.mot_phase_one import _MOTSmoothed
from drokit.reformulations.mot_slope_certificate import mot_slope_certificate
from drokit.reformulations.mot_slope_cuts import MOTSlopeCuts
from drokit.reformulations.mot_slope_search import mot_slope_cut_search
from drokit.reformulations.row_terms import parameter_layout
from drokit.oracles.enumeration import concat_rows, enumerate_configurations, unique_rows
from drokit.oracles.rows import row_margins
from drokit.solvers import get_backend

pytest.importorskip("cvxpy")

from reference.mot_dro import mot_training_value  # noqa: E402

# 12 samples, 8 binary features, labels from a random rule with 3 of them flipped (seed 289494 of a search for the
# instances the plain masters take longest on: 12 rounds)
Z = np.array([[1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 1, 1, 1], [1, 1, 0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 0, 1, 1, 1],
              [0, 0, 0, 0, 0, 0, 1, 0], [0, 1, 1, 1, 0, 0, 1, 1], [0, 0, 1, 0, 0, 1, 0, 0], [0, 1, 1, 0, 0, 0, 0, 0],
              [0, 0, 1, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1, 0, 0], [1, 1, 0, 1, 1, 1, 0, 0], [0, 0, 1, 1, 0, 0, 1, 0]])
Y = np.array([1, 1, 1, 1, -1, 1, 1, -1, 1, 1, 1, 1])
RHO = 0.03
M = Z.shape[1]


def _frame():
    return pd.DataFrame({f"c{l}": pd.Categorical(Z[:, l], categories=[0, 1]) for l in range(M)})


def _metric():
    return dk.GroundMetric(categorical=dk.MismatchCost(), label=dk.LabelCost(np.inf))


def _fit(search, divergence="kl", theta2=1.0, max_rounds=50, loss="logistic"):
    amb = dk.OTMoment(_metric(), theta1=1.0, theta2=theta2, divergence=divergence, radius=RHO, exponent=1)
    return dk.DROClassifier(loss=loss, ambiguity=amb, max_configurations=1,
                            method_options={"search": search, "max_rounds": max_rounds}).fit(_frame(), Y)


_REFERENCE = {}


def _reference(divergence):
    """The full-enumeration training optimum (``divergence``: ``"kl"``, ``"chi2"`` or ``("cvar", level)``)."""
    if divergence not in _REFERENCE:
        _REFERENCE[divergence] = mot_training_value(np.zeros((Z.shape[0], 0)), Z, [2] * M, Y, task="classification",
                                                    loss="logistic", rho=RHO, theta1=1.0, theta2=1.0,
                                                    divergence=divergence, delta=np.ones(M), kappa=np.inf)["value"]
    return _REFERENCE[divergence]


def _holds(result, value):
    """The certified interval holds ``value`` (up to the reference's own accuracy) and the objective equals it."""
    assert result.status == "optimal"
    assert result.lower_bound - 1e-8 <= value <= result.upper_bound + 1e-8
    assert result.objective == pytest.approx(value, rel=1e-6)


def test_the_plain_masters_stall_where_phase_one_certifies():
    with pytest.raises(dk.SolverError, match="not certified"):
        _fit("none", max_rounds=6)
    model = _fit("auto", max_rounds=6)
    result = model.result_
    _holds(result, _reference("kl"))
    assert result.auxiliary["lower_bound"]["source"] == "lagrangian"        # the explicit dual point certifies
    assert result.iterations <= 3 and result.auxiliary["mot_phase_one"]["rounds"] >= 1
    assert result.auxiliary["mot_slope_cuts"]["applies"] is False            # narrow data: no slope cuts by default


@pytest.mark.parametrize("divergence", ["kl", "chi2", "cvar"])
def test_slope_cuts_certify_the_reference_optimum(divergence):
    """KL and chi-square (priced weights), CVaR's bound at level 0.5 (the certificate LP's weights on ``[0, p / 0.5]``);
    chi-square and CVaR from ``beta = 0`` (no phase 1)."""
    ours = dk.divergences.CVaR(0.5) if divergence == "cvar" else divergence
    result = _fit("slope_cuts", divergence=ours).result_
    _holds(result, _reference(("cvar", 0.5) if divergence == "cvar" else divergence))
    assert result.auxiliary["mot_slope_cuts"]["certified"]
    assert result.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert all(h.get("stage") == "slope cuts" for h in result.history)      # no master over configuration rows


def test_slope_cuts_with_the_weights_fixed_are_the_wasserstein_fit():
    """``theta2 = inf``: the Wasserstein fit of radius ``rho / theta1`` (spec §4, limit 1)."""
    result = _fit("slope_cuts", theta2=np.inf).result_
    wasserstein = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(), radius=RHO)).fit(_frame(), Y).result_
    assert result.status == wasserstein.status == "optimal"
    assert result.objective == pytest.approx(wasserstein.objective, rel=1e-6)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_slope_cuts_and_phase_one_agree_with_the_plain_masters(loss):
    """Every path certifies the same optimum (hinge: piecewise-affine, phase 1 splits each row into its pieces)."""
    plain = _fit("none", loss=loss).result_
    for search in ("auto", "slope_cuts"):
        result = _fit(search, loss=loss).result_
        assert result.status == "optimal"
        assert result.objective == pytest.approx(plain.objective, rel=2e-6)
        assert result.lower_bound <= plain.upper_bound + 1e-9 and plain.lower_bound <= result.upper_bound + 1e-9


@pytest.mark.parametrize("kappa, norm", [(1.5, None), (np.inf, 1), (np.inf, np.inf)])
def test_slope_cuts_with_label_flips_and_numerical_moves(kappa, norm):
    """Label flips (the cuts' ``mu kappa`` term and both label families) and a numerical feature priced by an l1 or
    l_inf norm (the dual-norm rows of the master and of the certificate's LP): the same optimum as the plain masters."""
    X = _frame()
    numerical = None
    if norm is not None:
        X["x"] = np.random.default_rng(1).normal(size=Z.shape[0])
        numerical = dk.NormCost(p=norm)
    metric = dk.GroundMetric(numerical=numerical, categorical=dk.MismatchCost(), label=dk.LabelCost(kappa))
    amb = dk.OTMoment(metric, theta1=1.0, theta2=1.0, divergence="kl", radius=RHO, exponent=1)
    fits = {search: dk.DROClassifier(ambiguity=amb, max_configurations=1,
                                     method_options={"search": search}).fit(X, Y).result_
            for search in ("slope_cuts", "none")}
    assert fits["slope_cuts"].auxiliary["mot_slope_cuts"]["certified"]
    assert fits["slope_cuts"].objective == pytest.approx(fits["none"].objective, rel=2e-6)
    assert fits["slope_cuts"].lower_bound <= fits["none"].upper_bound + 1e-9


def test_sample_weights_are_repeated_rows_on_every_path():
    """Integer weights are repeated rows, a weight of 0 a row left out (no division by 0 on the way)."""
    w = np.array([1, 2, 1, 1, 3, 1, 1, 2, 1, 1, 1, 1])
    X = _frame()
    amb = dk.OTMoment(_metric(), theta1=1.0, theta2=1.0, divergence="kl", radius=RHO, exponent=1)
    for search in ("slope_cuts", "auto"):
        def fit(*args, **kwargs):
            return dk.DROClassifier(ambiguity=amb, max_configurations=1,
                                    method_options={"search": search}).fit(*args, **kwargs).result_
        weighted = fit(X, Y, sample_weight=w)
        repeated = fit(X.loc[X.index.repeat(w)].reset_index(drop=True), np.repeat(Y, w))
        assert weighted.status == repeated.status == "optimal"
        assert weighted.objective == pytest.approx(repeated.objective, rel=2e-6)
        zero = np.where(np.arange(w.size) == 3, 0, w)          # a weight of 0 is the row left out
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            weighted = fit(X, Y, sample_weight=zero)
        dropped = fit(X.loc[X.index.repeat(zero)].reset_index(drop=True), np.repeat(Y, zero))
        assert weighted.status == dropped.status == "optimal"
        assert weighted.objective == pytest.approx(dropped.objective, rel=2e-6)


def _bound(theta2=1.0, loss="logistic"):
    amb = dk.OTMoment(_metric(), theta1=1.0, theta2=theta2, divergence="kl", radius=RHO, exponent=1)
    return dk.DROClassifier(loss=loss, ambiguity=amb)._problem().built(_frame(), Y).compile(_frame(), Y).bound


@pytest.mark.parametrize("theta2, loss", [(1.0, "logistic"), (np.inf, "logistic"), (0.5, "hinge")])
def test_phase_one_derivatives_by_finite_differences(theta2, loss):
    b = _bound(theta2, loss)
    inst = b.training
    oracle = make_oracle(inst, "auto")
    _, dim, free, barrier = parameter_layout(inst)
    rng = np.random.default_rng(3)
    theta = 0.5 * rng.normal(size=dim)
    theta[-1] = 1.3
    sep = oracle.separate(float(theta[0]), theta[1:-1], 0.7, np.zeros(inst.n_samples), near_margin=1.0)
    rows = unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True), sep.rows, sep.near]))
    master = _MOTSmoothed(inst, rows, free, barrier, RHO, theta2)
    master.center, master.prox = theta + 0.1, 0.3
    tau, mu = 0.05, 1e-3
    _, grad, hess = master.derivatives(theta, tau, mu)
    eps = 1e-6
    eye = np.eye(dim)
    numeric = np.array([(master.value(theta + eps * e, tau, mu) - master.value(theta - eps * e, tau, mu)) / (2 * eps)
                        for e in eye])
    np.testing.assert_allclose(grad, numeric, atol=1e-7 * max(1.0, np.abs(grad).max()))
    numeric = np.array([(master.derivatives(theta + eps * e, tau, mu)[1]
                         - master.derivatives(theta - eps * e, tau, mu)[1]) / (2 * eps) for e in eye])
    np.testing.assert_allclose(hess, numeric, atol=1e-6 * max(1.0, np.abs(hess).max()))


def _cut_values(cuts, theta, mu):
    """Each sample's largest cut at ``(theta, mu)`` (the smallest ``s_n`` the master allows), from the cuts' data."""
    inst = cuts.inst
    sigma, shift = inst.row_signs(cuts.sample, cuts.flip)
    a = cuts.slope * sigma
    f = inst.scores(float(theta[0]), theta[1:])[cuts.sample]
    from drokit.losses.conjugate import conjugate
    value = a * f - cuts.slope * shift - conjugate(inst.loss, cuts.slope)
    for k, i in zip(cuts.pair_cut, cuts.pair_feature):
        l = cuts.mutable[i]
        w = cuts.level_coefficients(theta, l)
        M_l = w.max() if a[k] > 0 else w.min()
        value[k] += max(0.0, a[k] * (M_l - w[inst.data.Z[cuts.sample[k], l]]) - mu * cuts.delta[l])
    out = np.full(inst.n_samples, -np.inf)
    np.maximum.at(out, cuts.sample, value)
    return out


def test_slope_cuts_are_valid_and_the_certificate_is_a_bound():
    """Every cut lies below the oracle's maximum at any point; the certificate's bound is below the reference optimum
    at arbitrary weights (uniform) and meets it at a converged search's."""
    b = _bound()
    inst = b.training
    oracle = make_oracle(inst, "auto")
    cuts = MOTSlopeCuts(inst, rho=RHO, theta1=1.0, theta2=1.0, divergence="kl")
    rng = np.random.default_rng(0)
    points = [(rng.normal(scale=2.0, size=cuts.n_theta), float(rng.uniform(0.2, 3.0))) for _ in range(6)]
    for theta, mu in points:
        sep = oracle.separate(float(theta[0]), theta[1:], mu, np.zeros(inst.n_samples))
        order = np.argsort(sep.rows.sample)
        slopes = inst.loss.derivative(row_margins(inst, sep.rows, float(theta[0]), theta[1:]))
        cuts.add_cuts(np.arange(inst.n_samples), sep.rows.flip[order], np.asarray(slopes)[order], theta, mu)
    cuts.complete_pairs(points[0][0], points[0][1])
    for theta, mu in points + [(rng.normal(scale=5.0, size=cuts.n_theta), 0.5)]:
        S = np.empty(inst.n_samples)
        sep = oracle.separate(float(theta[0]), theta[1:], mu, np.zeros(inst.n_samples))
        S[sep.rows.sample] = sep.violation
        assert np.all(_cut_values(cuts, theta, mu) <= S + 1e-9)
    reference = _reference("kl")
    bound, info = mot_slope_certificate(cuts, inst.p, oracle, 1e-9)
    assert bound is None or bound.value <= reference + 1e-9
    start = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(), radius=RHO)).fit(_frame(), Y).result_
    found = mot_slope_cut_search(inst, oracle, SimpleNamespace(intercept=start.intercept, coef=start.coef, mu=1.0),
                                 rho=RHO, theta1=1.0, theta2=1.0, divergence="kl", tol=1e-6,
                                 backend=get_backend("clarabel"))
    assert found.certified
    assert reference - 1e-6 * reference <= found.lower <= reference + 1e-9 <= found.upper + 2e-9


def test_audiology_certifies_through_the_slope_cuts():
    """The issue's reproducer's data (62 categorical features, 226 rows, unit mismatch weights, KL 0.05): the plain
    masters are nowhere near a certificate after three rounds (their model's risk above 1, the optimum 0.147); the
    default fit certifies by the slope cuts' explicit dual point."""
    X, y = dk.datasets.load("audiology")
    amb = dk.OTMoment(dk.GroundMetric(), theta1=1.0, theta2=1.0, divergence="kl", radius=0.05, exponent=1)
    with pytest.raises(dk.SolverError, match="not certified") as plain:
        dk.DROClassifier(ambiguity=amb, method_options={"search": "none", "max_rounds": 3}).fit(X, y)
    assert plain.value.result.upper_bound > 1.0
    result = dk.DROClassifier(ambiguity=amb).fit(X, y).result_
    assert result.status == "optimal" and result.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert result.auxiliary["mot_slope_cuts"]["certified"]
    assert result.objective == pytest.approx(0.147125986, rel=1e-6)
    assert result.upper_bound - result.lower_bound <= 1e-6 * result.upper_bound


def test_the_search_option_is_checked():
    with pytest.raises(dk.ParameterError, match="search"):
        _fit("newton")


def test_the_lp_multipliers_certify_a_fitted_model():
    """:func:`~drokit.certificates.mot_lower_bound.mot_lp_multipliers` (the dual simplex's masses at the worst-case
    weights, over every row near its sample's maximum, at a few slopes each) meets the fitted model's exact worst-case
    risk."""
    from drokit.certificates.mot_lower_bound import (SLOPE_OFFSETS, mot_lagrangian_bound, mot_lp_multipliers,
                                                     near_maximizers)
    from drokit.certificates.mot_worst_case import mot_worst_case
    result = _fit("phase_one").result_
    inst = _bound().training
    oracle = make_oracle(inst, "auto")
    options = dict(rho=RHO, theta1=1.0, theta2=1.0, divergence="kl")
    worst = mot_worst_case(inst, oracle, result.intercept, result.coef, **options)
    assert worst.value == pytest.approx(result.objective, rel=1e-12)
    rows = near_maximizers(inst, enumerate_configurations(inst), result.intercept, result.coef, worst.lam, 1.0, 1e-2,
                           worst.value)
    point = mot_lp_multipliers(inst, rows, result.intercept, result.coef, worst, lam=worst.lam, **options,
                               offsets=SLOPE_OFFSETS)
    bound = mot_lagrangian_bound(inst, *point[:3], room=point[3], **options)
    assert _reference("kl") - 1e-9 >= bound.value >= worst.value - 1e-6 * worst.value
