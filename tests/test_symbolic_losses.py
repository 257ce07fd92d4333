"""Losses written in sympy (issue 7): recognized conic forms equal the built-in losses on every compile path,
the outer approximation reaches the recognized SOC form to its certified gap, and non-convex expressions
are refused with the documented errors (non-Lipschitz ones at fit time: tests/test_loss_growth.py)."""

import warnings

import numpy as np
import pytest

import drokit as dk
from drokit.losses import from_sympy
from tests.factories import two_plus_two_frame

sp = pytest.importorskip("sympy")
e = sp.Symbol("e")


@pytest.mark.parametrize("method,radius", [("erm", 0.0), ("monolithic", 0.1), ("cutting_plane", 0.1),
                                           ("graph", 0.1)])
def test_softplus_equals_builtin_logistic(method, radius):
    X, y = two_plus_two_frame(40, 3)
    softplus = from_sympy(sp.log(1 + sp.exp(-e)), e)
    assert softplus.form == "log_sum_exp" and softplus.lipschitz == 1.0 and softplus.decreasing
    kw = dict(ambiguity=dk.Wasserstein(radius=radius), method=method)
    ours = dk.DROClassifier(loss=softplus, **kw).fit(X, y).result_
    ref = dk.DROClassifier(loss="logistic", **kw).fit(X, y).result_
    assert ours.objective == pytest.approx(ref.objective, rel=1e-7)
    assert ours.upper_bound == pytest.approx(ref.upper_bound, rel=1e-7)


def test_softplus_closed_form_with_label_flips():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=50) > 0, 1, -1)
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=1.0))
    ours = dk.DROClassifier(loss=from_sympy(sp.log(1 + sp.exp(-e)), e), ambiguity=dk.Wasserstein(metric, 0.1)).fit(X, y)
    ref = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(metric, 0.1)).fit(X, y)
    assert ours.result_.method == "closed_form"
    assert ours.result_.objective == pytest.approx(ref.result_.objective, rel=1e-7)


@pytest.mark.parametrize("method", ["monolithic", "cutting_plane", "box"])
def test_piecewise_hinge_equals_builtin_hinge(method):
    X, y = two_plus_two_frame(40, 3)
    hinge = from_sympy(sp.Piecewise((1 - e, e < 1), (0, True)), e)
    assert hinge.form == "pieces"
    a, b = hinge.pieces
    assert sorted(zip(a.tolist(), b.tolist())) == [(-1.0, 1.0), (0.0, 0.0)]
    kw = dict(ambiguity=dk.Wasserstein(radius=0.1), method=method)
    ours = dk.DROClassifier(loss=hinge, **kw).fit(X, y).result_.objective
    assert ours == pytest.approx(dk.DROClassifier(loss="hinge", **kw).fit(X, y).result_.objective, rel=1e-7)


@pytest.mark.parametrize("method", ["monolithic", "cutting_plane"])
def test_pseudo_huber_soc_equals_outer_approximation_to_the_certified_gap(method):
    X, _ = two_plus_two_frame(40, 3)
    yr = X["a"] * 2 - X["b"] + np.random.default_rng(0).normal(size=40) * 0.3
    expr = sp.sqrt(1 + e ** 2) - 1
    soc = from_sympy(expr, e, task="regression")
    outer = from_sympy(expr, e, task="regression", conic="outer")
    assert soc.form == "sqrt_quadratic" and soc.cone_class == "SOCP" and outer.form == "outer"
    kw = dict(ambiguity=dk.Wasserstein(radius=0.05), method=method)
    exact = dk.DRORegressor(loss=soc, **kw).fit(X, yr).result_
    approx = dk.DRORegressor(loss=outer, **kw).fit(X, yr).result_
    assert approx.relative_gap <= 1e-6
    assert approx.lower_bound <= exact.objective + 1e-7
    assert exact.objective <= approx.upper_bound + 1e-7
    assert approx.objective == pytest.approx(exact.objective, rel=2e-6)
    assert outer.tangents.size == from_sympy(expr, e, task="regression", conic="outer").tangents.size  # user's copy untouched


def test_pseudo_huber_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    yr = X @ [1.0, -1.0] + rng.normal(size=30) * 0.5
    reg = dk.DRORegressor(loss=from_sympy(sp.sqrt(1 + e ** 2) - 1, e, task="regression"),
                          ambiguity=dk.Wasserstein(radius=0.0)).fit(X, yr)
    beta, b = cp.Variable(2), cp.Variable()
    r = X @ beta + b - yr
    prob = cp.Problem(cp.Minimize(cp.sum(cp.hstack([cp.norm(cp.hstack([1, r[i]])) for i in range(30)])) / 30 - 1))
    prob.solve(solver="CLARABEL")
    assert reg.result_.objective == pytest.approx(prob.value, rel=1e-6)


def test_huber_written_as_piecewise_uses_the_outer_approximation():
    X, _ = two_plus_two_frame(40, 5)
    yr = X["a"] - X["b"] + np.random.default_rng(2).normal(size=40) * 0.5
    expr = sp.Piecewise((e ** 2 / 2, sp.Abs(e) <= 1), (sp.Abs(e) - sp.Rational(1, 2), True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a numeric Lipschitz bound may be reported
        huber = from_sympy(expr, e, task="regression")
    assert huber.form == "outer" and huber.lipschitz == pytest.approx(1.0)
    kw = dict(ambiguity=dk.Wasserstein(radius=0.05), method="monolithic")
    ours = dk.DRORegressor(loss=huber, **kw).fit(X, yr).result_
    ref = dk.DRORegressor(loss=dk.losses.Huber(1.0), **kw).fit(X, yr).result_
    assert ours.relative_gap <= 1e-6
    assert ours.objective == pytest.approx(ref.objective, rel=2e-6)


def test_log_sum_exp_and_scaled_forms():
    L = from_sympy(2 * sp.log(sp.exp(e) + sp.exp(-e)), e)
    assert L.form == "log_sum_exp" and L.lipschitz == pytest.approx(2.0) and L.task == "regression"
    A = from_sympy(3 * sp.Abs(e - 1), e)
    assert A.form == "pieces" and A.lipschitz == pytest.approx(3.0)
    np.testing.assert_allclose(A.value(np.array([0.0, 1.0, 3.0])), [3.0, 0.0, 6.0])


def test_documented_errors():
    with pytest.raises(dk.ParameterError, match="not convex"):
        from_sympy(-e ** 2, e)
    for expr in (sp.exp(-e), e ** 2):  # grow faster than linearly: accepted with lipschitz = inf, refused at fit
        loss = from_sympy(expr, e, task="classification")   # where a numerical feature can move
        # (tests/test_loss_growth.py)
        assert loss.lipschitz == np.inf and "faster than linearly" in loss.lipschitz_how
        X, y = two_plus_two_frame(20, 1)
        with pytest.raises(dk.ParameterError, match="faster than linearly"):
            dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="not convex"):
        from_sympy(sp.Piecewise((1 - e, e < 0), (1 - 2 * e, True)), e)
    with pytest.raises(dk.ParameterError, match="symbols"):
        from_sympy(sp.log(1 + sp.exp(-e * sp.Symbol("w"))), e)
    with pytest.raises(dk.ParameterError, match="conic"):
        from_sympy(sp.Max(0, 1 - e), e, conic="bogus")


def test_outer_approximation_of_log_cosh_converges_to_its_exponential_cone_form():
    """log(cosh(e)) is recognized as a log-sum-exp (rewritten in exponentials); forced to the tangent outer
    approximation it converges to the certified gap in a few solves (tangents where the model is worst,
    Kelley's rule) and agrees with the exact exponential-cone fit."""
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X, y = X.iloc[:120, :4], (y.iloc[:120] - y.mean()) / y.std()
    e = sp.Symbol("e")
    exact = dk.losses.from_sympy(sp.log(sp.cosh(e)), e)
    outer = dk.losses.from_sympy(sp.log(sp.cosh(e)), e, conic="outer")
    assert exact.form == "log_sum_exp" and exact.task == "regression"
    fits = {name: dk.DRORegressor(loss=loss, ambiguity=dk.Wasserstein(radius=0.1), method="closed_form").fit(X, y)
            for name, loss in (("exact", exact), ("outer", outer))}
    r = fits["outer"].result_
    assert r.relative_gap <= 1e-6
    assert r.auxiliary["tangent_solves"] <= 8
    assert r.objective == pytest.approx(fits["exact"].result_.objective, rel=2e-6)
    np.testing.assert_allclose(fits["outer"].coef_, fits["exact"].coef_, atol=1e-3)
    # auto gives a tangent loss to the cutting plane, whose phase 1 and barrier master need no tangent program
    auto = dk.DRORegressor(loss=dk.losses.from_sympy(sp.log(sp.cosh(e)), e, conic="outer"),
                           ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y).result_
    assert auto.method == "cutting_plane" and auto.solver in ("barrier_master", "phase_one")
    assert auto.relative_gap <= 1e-6 and "tangent_solves" not in auto.auxiliary
    assert auto.objective == pytest.approx(fits["exact"].result_.objective, rel=2e-6)
    assert auto.lower_bound <= fits["exact"].result_.upper_bound + 1e-9


def test_a_smooth_custom_loss_is_certified_without_tangents():
    """A smooth loss written as a sympy ``Piecewise`` (compiled by tangents for the conic masters) needs only its
    value and derivatives in phase 1 and the structured barrier master (issue 19: smooth hinge on hepatitis
    took 324 s through tangent masters, 0.5 s this way): the fit equals the built-in loss's, is certified by
    drokit's own solver with no conic master."""
    X, y = two_plus_two_frame(60, 4)
    sh = from_sympy(sp.Piecewise((sp.Rational(1, 2) - e, e <= 0), ((1 - e) ** 2 / 2, e <= 1), (0, True)), e)
    assert sh.form == "outer"
    kw = dict(ambiguity=dk.Wasserstein(radius=0.1), method="cutting_plane")
    ours = dk.DROClassifier(loss=sh, **kw).fit(X, y).result_
    ref = dk.DROClassifier(loss="smooth_hinge", **kw).fit(X, y).result_
    assert ours.solver in ("barrier_master", "phase_one") and ours.history == []
    assert ours.relative_gap <= 1e-6 and ours.lower_bound <= ref.upper_bound + 1e-9
    assert ours.objective == pytest.approx(ref.objective, rel=1e-6)
    # with the structured solvers off, the tangent masters reach the same optimum
    off = dk.DROClassifier(loss=sh, method_options={"structured_master": False}, **kw).fit(X, y).result_
    assert off.solver == "clarabel" and off.objective == pytest.approx(ref.objective, rel=1e-6)


def test_sympy_smooth_hinge_on_hepatitis_is_certified_by_the_barrier_master():
    """Issue 19's case: smooth hinge as a sympy ``Piecewise`` on hepatitis took 39-75 s through tangent masters
    because every barrier-master bound was lost -- the Lagrangian repair froze the rows at the flat pieces' slopes
    (0 and -1) and left a 1e-11 free-column residual.  With the bounded least-squares repair the barrier master
    certifies it (0.7 s), with the built-in loss's optimum."""
    X, y = dk.datasets.load("hepatitis", standardize=True)
    sh = from_sympy(sp.Piecewise((sp.Rational(1, 2) - e, e <= 0), ((1 - e) ** 2 / 2, e <= 1), (0, True)), e)
    amb = dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(np.inf)), radius=0.1)
    ours = dk.DROClassifier(loss=sh, ambiguity=amb).fit(X, y.to_numpy()).result_
    ref = dk.DROClassifier(loss="smooth_hinge", ambiguity=amb).fit(X, y.to_numpy()).result_
    assert ours.solver == "barrier_master" and ours.history == []
    assert ours.relative_gap <= 1e-6 and ours.lower_bound <= ref.upper_bound + 1e-9
    assert ref.lower_bound <= ours.upper_bound + 1e-9
    assert ours.objective == pytest.approx(ref.objective, rel=1e-6)
