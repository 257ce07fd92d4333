"""The phi-divergence sets by name (drokit/ambiguity/phi_divergence.py: KLBall, ChiSquareBall, CVaRSet) and the CVaR
divergence of OT-with-moment sets (drokit/ambiguity/divergences.py), checked independently:

* CVaR's aggregate ``min_alpha alpha + (1/a) sum p (S - alpha)_+`` against a scan over every candidate ``alpha``;
* the exact worst-case risk of a fixed model with the CVaR bound against the finite-support primal and the dual of
  ``tests/reference/mot_dro.py`` (categorical moves and label flips; theta1 finite and infinite, budget 0);
* fits with the named sets against the sets' textbook duals written directly in cvxpy (CVaR: Rockafellar-Uryasev;
  KL: ``min_h h rho + h log E e^{L/h}``; chi-square: its conic dual), and their worst-case risk at the fit;
* limits: CVaR at level 1 is the empirical risk (the ERM fit), a zero budget with samples that may move still
  reweights (CVaR of the nominal losses);
* API: names, parameters, clone, clear errors, and dk.stability's refusal of the CVaR bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import drokit as dk
from drokit.ambiguity.divergences import CVaR, ChiSquare, KL, get_divergence
from drokit.certificates.mot_worst_case import mot_worst_case
from drokit.exceptions import ParameterError
from drokit.oracles import make_oracle

cp = pytest.importorskip("cvxpy")

from reference.mot_dro import worst_case_dual, worst_case_primal  # noqa: E402
from test_mot_worst_case import _case  # noqa: E402


def test_cvar_aggregate_is_the_rockafellar_uryasev_minimum():
    rng = np.random.default_rng(0)
    for draw in range(50):
        n = int(rng.integers(1, 12))
        S = np.round(rng.normal(size=n), 1 if draw % 2 else 6)          # ties on odd draws
        p = rng.dirichlet(np.ones(n))
        a = float(rng.choice([0.05, 0.2, 0.5, 1.0, rng.uniform(0.01, 1)]))
        value, alpha, w = CVaR(a).aggregate(S, p, 1.0)
        scan = min(c + float(p @ np.maximum(S - c, 0.0)) / a for c in S)     # a minimizer is at some S_n
        assert value == pytest.approx(scan, rel=1e-12, abs=1e-12)
        assert p @ w == pytest.approx(1.0, abs=1e-12)
        assert np.all(w >= 0) and np.all(w <= 1.0 / a * (1 + 1e-12))
        assert float(p @ (w * S)) == pytest.approx(value, rel=1e-12, abs=1e-12)    # the weights attain it
        assert alpha + float(p @ np.maximum(S - alpha, 0.0)) / a == pytest.approx(value, rel=1e-12, abs=1e-12)
        assert CVaR(a).aggregate(S, p, 7.0)[0] == value                   # h does not enter


@pytest.mark.parametrize("loss", ["logistic", "hinge", "huber", "absolute"])
@pytest.mark.parametrize("level", [0.2, 0.5, 1.0])
def test_cvar_worst_case_equals_the_finite_support_primal(loss, level):
    from reference import brute_force as bf
    kappa = 1.5 if loss in bf.CLASSIFICATION_LOSSES else np.inf
    inst, intercept, coef, L, C = _case(loss, 31 + len(loss), kappa)
    oracle = make_oracle(inst, "auto")
    for rho, theta1 in [(0.3, 1.0), (0.05, 0.5), (0.3, np.inf), (0.0, 1.0)]:
        got = mot_worst_case(inst, oracle, intercept, coef, rho=rho, theta1=theta1, theta2=1.0,
                             divergence=CVaR(level))
        primal = worst_case_primal(L, C, inst.p, rho, theta1, 1.0, ("cvar", level))
        dual = worst_case_dual(L, C, inst.p, rho, theta1, 1.0, ("cvar", level))
        assert primal == pytest.approx(dual, rel=1e-6, abs=1e-6)
        assert got.value == pytest.approx(primal, rel=1e-6, abs=1e-6), (rho, theta1)
        assert inst.p @ got.weight == pytest.approx(1.0, abs=1e-9)
        assert np.all(got.weight <= 1.0 / level * (1 + 1e-9))
    # no budget, samples may move: the weights still move (the CVaR of the nominal losses)
    nominal = np.array([L[i][C[i] == 0].max() for i in range(len(L))])
    zero = mot_worst_case(inst, oracle, intercept, coef, rho=0.0, theta1=1.0, theta2=1.0, divergence=CVaR(level))
    assert zero.value == pytest.approx(CVaR(level).aggregate(nominal, inst.p, 1.0)[0], rel=1e-7, abs=1e-9)


def _data(n=160, d=5, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.8 * rng.normal(size=n) > 0, 1, 0)
    return X, y


def _logistic(X, ys):
    b, b0 = cp.Variable(X.shape[1]), cp.Variable()
    return cp.logistic(-cp.multiply(ys, X @ b + b0))


def _textbook(amb, X, y) -> float:
    """The set's worst-case logistic risk minimized, written directly in cvxpy (module docstring)."""
    ys, n = np.where(y == 1, 1.0, -1.0), len(y)
    L = _logistic(X, ys)
    if isinstance(amb, dk.CVaRSet):
        eta = cp.Variable()
        problem = cp.Problem(cp.Minimize(eta + cp.sum(cp.pos(L - eta)) / (n * amb.level)))
    else:
        h, a, s = cp.Variable(nonneg=True), cp.Variable(), cp.Variable(n)
        cons = [s >= L]
        if isinstance(amb, dk.KLBall):        # h rho + min_a a + mean(h exp((s - a)/h)) - h
            t = cp.Variable(n)
            cons.append(cp.constraints.ExpCone(s - a, h * np.ones(n), t))
            objective = h * amb.radius + a + cp.sum(t) / n - h
        else:                                  # chi-square: phi*(u) = ((u/2 + 1)_+)^2 - 1
            q, r = cp.Variable(n, nonneg=True), cp.Variable(n)
            cons.append(q >= (s - a) / 2 + h)
            cons += [cp.quad_over_lin(q[i], h) <= r[i] for i in range(n)]
            objective = h * amb.radius + a + cp.sum(r) / n - h
        problem = cp.Problem(cp.Minimize(objective), cons)
    problem.solve(solver="CLARABEL")
    return float(problem.value)


@pytest.mark.parametrize("amb", [dk.CVaRSet(level=0.2), dk.CVaRSet(level=0.6), dk.KLBall(radius=0.1),
                                 dk.ChiSquareBall(radius=0.2)], ids=repr)
def test_named_set_fits_equal_their_textbook_duals(amb):
    X, y = _data()
    model = dk.DROClassifier(ambiguity=amb).fit(X, y)
    res = model.result_
    assert res.status == "optimal" and res.relative_gap <= 1e-6
    assert res.objective == pytest.approx(_textbook(amb, X, y), rel=1e-6, abs=1e-7)
    worst = dk.worst_case(model, X, y)
    assert worst.value == pytest.approx(res.objective, rel=1e-7, abs=1e-9)


def test_cvar_at_level_one_is_the_empirical_risk_fit():
    X, y = _data(seed=5)
    cvar = dk.DROClassifier(ambiguity=dk.CVaRSet(level=1.0)).fit(X, y).result_
    erm = dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(), radius=0.0)).fit(X, y).result_
    assert cvar.objective == pytest.approx(erm.objective, rel=1e-6)


def test_cvar_with_moves_on_mixed_data_is_certified_and_above_pure_cvar():
    """OTMoment with the CVaR bound and categorical moves: certified, worst case = objective, and at least the pure
    CVaR set's optimum (a larger set), at most the level-a CVaR of the ball's worst losses."""
    rng = np.random.default_rng(2)
    n = 120
    import pandas as pd
    X = pd.DataFrame({"a": rng.normal(size=n), "c": pd.Categorical(rng.choice(list("xyz"), n)),
                      "d": pd.Categorical(rng.choice(list("uv"), n))})
    y = np.where(X["a"] + (X["c"] == "x") - 0.3 + 0.7 * rng.normal(size=n) > 0, 1, 0)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=np.inf), label=dk.LabelCost(np.inf))
    mixed = dk.OTMoment(metric, theta1=1.0, theta2=1.0, divergence=CVaR(0.3), radius=0.2)
    model = dk.DROClassifier(ambiguity=mixed).fit(X, y)
    assert model.result_.status == "optimal"
    assert dk.worst_case(model, X, y).value == pytest.approx(model.result_.objective, rel=1e-7, abs=1e-9)
    pure = dk.DROClassifier(ambiguity=dk.CVaRSet(level=0.3)).fit(X, y).result_.objective
    assert model.result_.objective >= pure - 1e-7


def test_names_parameters_and_errors():
    assert isinstance(get_divergence("kl"), KL) and isinstance(get_divergence("CHI2"), ChiSquare)
    with pytest.raises(ParameterError, match="needs its level"):
        get_divergence("cvar")
    with pytest.raises(ParameterError, match="divergence must be"):
        get_divergence("tv")
    with pytest.raises(ParameterError, match=r"level must be in \(0, 1\]"):
        dk.DROClassifier(ambiguity=dk.CVaRSet(level=1.5)).fit(*_data(n=30))
    cvar = dk.CVaRSet(level=0.3)
    assert repr(cvar) == "CVaRSet(level=0.3)" and cvar.get_params() == {"level": 0.3}
    twin = clone(cvar).set_params(level=0.5)
    assert twin.divergence.level == 0.5 and cvar.divergence.level == 0.3
    assert dk.KLBall(0.2).get_params() == {"radius": 0.2} and repr(dk.ChiSquareBall(0.1)) == "ChiSquareBall(radius=0.1)"
    model = dk.DROClassifier(ambiguity=dk.CVaRSet(level=0.3)).fit(*_data(n=40))
    with pytest.raises(ParameterError, match="dk.stability evaluates an OTMoment set with the divergence"):
        dk.stability(model, *_data(n=40), risk=1.0, ambiguity=dk.CVaRSet(level=0.3))
    amb = dk.DROClassifier(ambiguity=dk.KLBall(radius=0.1))
    amb.set_params(ambiguity__radius=0.3)
    assert amb.ambiguity.radius == 0.3


def test_separable_data_under_a_reweighting_set_get_a_clear_error():
    """A set that only reweights cannot make separable data overlap: no minimizer (the risk goes to 0 as the
    coefficients grow); the fit is not certified and says why."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(dk.SolverError, match="separable") as raised:
        dk.DROClassifier(ambiguity=dk.KLBall(radius=0.1)).fit(X, y)
    assert str(raised.value).startswith("kl divergence set fit not certified")     # the set it names is the user's


def test_beyond_the_candidate_limit_the_tied_samples_alone_choose_the_dual_point(monkeypatch):
    """CVaR at level 0.2 on 3,000 rows (more candidate rows than KKT_MAX_ROWS) and MOT-DRO with the hinge loss and
    numerical moves: the restricted dual runs over the samples tied at the value at risk, or at the hinge's kink, the
    others held at their worst-case masses and slopes (``held_samples``), so a program of a few dozen rows makes the
    bound an explicit dual point (before: the master's dual objective, source "method"); below the textbook dual's
    optimum and other models' worst cases (weak duality)."""
    import drokit.certificates.mot_lower_bound as mlb
    sizes = []
    solve = mlb.mot_kkt_multipliers

    def recorded(inst, rows, *args, **kwargs):
        sizes.append(rows.size)
        return solve(inst, rows, *args, **kwargs)
    monkeypatch.setattr(mlb, "mot_kkt_multipliers", recorded)
    X, y = _data(n=3000, d=6, seed=3)
    amb = dk.CVaRSet(level=0.2)
    res = dk.DROClassifier(ambiguity=amb).fit(X, y).result_
    assert res.status == "optimal" and res.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert 0 < max(sizes) <= 100, sizes
    assert res.lower_bound <= _textbook(amb, X, y) + 1e-8 and res.objective == pytest.approx(_textbook(amb, X, y),
                                                                                              rel=1e-6)
    sizes.clear()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(np.inf))
    mot = dk.OTMoment(metric, theta1=2.0, theta2=2.0, divergence="kl", radius=0.1, exponent=1)
    model = dk.DROClassifier(loss="hinge", ambiguity=mot).fit(X, y)
    res = model.result_
    assert res.status == "optimal" and res.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert 0 < max(sizes) <= 100, sizes
    from test_mot_lower_bound import _with_coef
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1e-2):
        twin = _with_coef(model, model.coef_ + scale * rng.normal(size=model.coef_.shape))
        assert dk.worst_case(twin, X, y).value >= res.lower_bound
