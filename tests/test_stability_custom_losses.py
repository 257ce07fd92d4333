"""The stability criterion with losses that have no closed-form d-transform (issue 20, item 8).

docs/extending.md says the criterion uses a loss's ``value`` / ``derivative``: any convex Lipschitz loss -- a
hand-written :class:`~drokit.losses.Loss` or a :func:`~drokit.losses.from_sympy` loss -- goes through the
certified one-dimensional maximization of :func:`drokit.evaluation.stability.transforms.generic_transform`.
A built-in loss written as a custom one must give the built-in's result.
"""

import numpy as np
import pytest
from scipy.special import expit

import drokit as dk
from drokit.evaluation.stability.transforms import d_transform, generic_transform
from drokit.losses import Loss, from_sympy
from tests.factories import two_plus_two_frame

sp = pytest.importorskip("sympy")
e = sp.Symbol("e")
GRID = np.linspace(-6.0, 6.0, 241)


class HandLogistic(Loss):
    """The logistic loss written by hand (value, derivative, second derivative, Lipschitz constant)."""

    name = "hand_logistic"
    task = "classification"
    decreasing = True

    def value(self, e):
        return np.logaddexp(0.0, -np.asarray(e, dtype=float))

    def derivative(self, e):
        return -expit(-np.asarray(e, dtype=float))

    def second_derivative(self, e):
        s = expit(np.asarray(e, dtype=float))
        return s * (1.0 - s)

    @property
    def lipschitz(self):
        return 1.0


def _ties(T_of, e, tol=1e-9):
    """Where the closed form's maximizer is not unique: T has a kink in e (left and right slopes differ)."""
    d = 1e-6
    left = (T_of(e) - T_of(e - d)) / d
    right = (T_of(e + d) - T_of(e)) / d
    return np.abs(right - left) > 1e-3


@pytest.mark.parametrize("builtin, custom", [
    (dk.losses.Logistic(), HandLogistic()),
    (dk.losses.Logistic(), "softplus"),
    (dk.losses.Huber(0.7), "huber"),
    (dk.losses.SmoothHinge(), "smooth_hinge"),
    (dk.losses.Hinge(), "hinge_outer"),
], ids=["hand_logistic", "softplus", "huber", "smooth_hinge", "hinge_outer"])
@pytest.mark.parametrize("h, a", [(0.1, 0.05), (1.0, 0.05), (3.0, 0.5), (10.0, 1.0), (50.0, 5.0), (0.5, 2.0)])
def test_generic_transform_equals_the_closed_forms(builtin, custom, h, a):
    """Values to 1e-12 relative, including the logistic's two-maximum regime (c = h / 2a > 4) and the
    Huber / smooth hinge's convex quadratic regime; maximizers wherever they are unique."""
    custom = {"softplus": lambda: from_sympy(sp.log(1 + sp.exp(-e)), e),
              "huber": lambda: from_sympy(sp.Piecewise((e ** 2 / 2, sp.Abs(e) <= sp.Rational(7, 10)),
                                                       (sp.Rational(7, 10) * (sp.Abs(e) - sp.Rational(7, 20)), True)),
                                          e, task="regression"),
              "smooth_hinge": lambda: from_sympy(sp.Piecewise((sp.Rational(1, 2) - e, e <= 0),
                                                              ((1 - e) ** 2 / 2, e < 1), (0, True)), e),
              "hinge_outer": lambda: from_sympy(sp.Max(0, 1 - e), e, conic="outer")}.get(custom, lambda: custom)()
    T_ref, v_ref = d_transform(builtin, h, a, GRID)
    T, v = d_transform(custom, h, a, GRID)
    np.testing.assert_allclose(T, T_ref, rtol=1e-12, atol=1e-12)
    unique = ~_ties(lambda x: d_transform(builtin, h, a, x)[0], GRID)
    np.testing.assert_allclose(v[unique], v_ref[unique], rtol=1e-9, atol=1e-9)


def test_generic_transform_on_a_max_affine_loss_equals_its_closed_form():
    hinge = dk.losses.Hinge()
    for h, a in [(1.0, 0.3), (4.0, 1.0)]:
        T_ref, _ = d_transform(hinge, h, a, GRID)
        T, _ = generic_transform(hinge, h, a, GRID)
        np.testing.assert_allclose(T, T_ref, rtol=1e-12, atol=1e-12)


def _mixed_fit(loss):
    X, y = two_plus_two_frame(60, 5)
    return dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y), X, y


@pytest.mark.parametrize("custom", ["softplus", "hand"])
@pytest.mark.parametrize("divergence, theta2", [("kl", 0.25), ("chi2", 1.0), ("kl", np.inf)])
def test_stability_of_a_custom_logistic_equals_the_built_in(custom, divergence, theta2):
    """A DRO logistic model on mixed data (numerical moves, categorical changes through the budget DP): the
    criterion with the loss written by hand or in sympy equals the built-in logistic's."""
    if custom == "softplus":   # the model's own loss: fitted with it
        model, X, y = _mixed_fit(from_sympy(sp.log(1 + sp.exp(-e)), e))
        own = {}
    else:                      # HandLogistic has no epigraph: the risk of a logistic model measured with it
        model, X, y = _mixed_fit("logistic")
        own = {"loss": HandLogistic()}
    amb = dk.OTMoment(theta1=1.0, theta2=theta2, divergence=divergence)
    risk = 1.3 * float(np.mean(np.logaddexp(0, -np.where(y > 0, 1, -1) * model.decision_function(X))))
    ours = dk.stability(model, X, y, risk=risk, ambiguity=amb, **own)
    ref = dk.stability(model, X, y, risk=risk, ambiguity=amb, loss="logistic")
    assert ours.status == ref.status == "finite"
    assert ours.value == pytest.approx(ref.value, rel=1e-9)
    assert ours.h == pytest.approx(ref.h, rel=1e-6)
    assert abs(ours.gap) <= 1e-7 * max(1.0, ours.value)


def test_feature_stability_and_curve_with_a_custom_loss():
    model, X, y = _mixed_fit(from_sympy(sp.log(1 + sp.exp(-e)), e))
    amb = dk.OTMoment(theta1=1.0, theta2=0.5)
    risk = 0.8
    ours = dk.feature_stability(model, X, y, risk=risk, ambiguity=amb)
    ref = dk.feature_stability(model, X, y, risk=risk, ambiguity=amb, loss="logistic")
    np.testing.assert_allclose(ours.table["value"], ref.table["value"], rtol=1e-9)
    assert ours.ranking == ref.ranking
    curve = dk.stability_curve(model, X, y, [0.7, 0.9], ambiguity=amb)
    ref_curve = dk.stability_curve(model, X, y, [0.7, 0.9], ambiguity=amb, loss="logistic")
    np.testing.assert_allclose(curve.values, ref_curve.values, rtol=1e-9)


def test_hand_written_regression_loss_matches_its_sympy_form():
    """log-cosh written by hand (docs/extending.md) and in sympy give the same criterion for a regressor."""

    class LogCosh(Loss):
        name = "log_cosh"
        task = "regression"

        def value(self, e):
            e = np.abs(np.asarray(e, dtype=float))
            return e + np.log1p(np.exp(-2 * e)) - np.log(2)

        def derivative(self, e):
            return np.tanh(np.asarray(e, dtype=float))

        def second_derivative(self, e):
            return 1 - np.tanh(np.asarray(e, dtype=float)) ** 2

        @property
        def lipschitz(self):
            return 1.0

    X, _ = two_plus_two_frame(50, 6)
    yr = X["a"] - 0.5 * X["b"] + (X["c"] == "q") + np.random.default_rng(0).normal(size=50) * 0.4
    model = dk.DRORegressor(loss="huber", ambiguity=dk.Wasserstein(radius=0.05)).fit(X, yr)
    amb = dk.OTMoment(theta1=2.0, theta2=1.0)
    a = dk.stability(model, X, yr, risk=0.6, ambiguity=amb, loss=LogCosh())
    b = dk.stability(model, X, yr, risk=0.6, ambiguity=amb, loss=from_sympy(sp.log(sp.cosh(e)), e))
    assert a.status == b.status == "finite"
    assert a.value == pytest.approx(b.value, rel=1e-9)


def test_a_loss_that_grows_faster_than_linearly_is_refused_with_numerical_moves():
    """The squared hinge's inner maximization is unbounded for large multipliers: refused with the reason
    (the built-in squared loss keeps its closed form)."""
    X, y = two_plus_two_frame(40, 5)
    model = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="faster than linearly"):
        dk.stability(model, X, y, risk=2.0, loss=from_sympy(sp.Max(0, 1 - e) ** 2, e))
    # without numerical moves (categorical changes only) the criterion is finite and computed
    frozen = dk.OTMoment(metric=dk.GroundMetric(numerical=dk.NormCost(p=2, weights=np.inf)), theta2=1.0)
    res = dk.stability(model, X, y, risk=1.0, ambiguity=frozen, loss=from_sympy(sp.Max(0, 1 - e) ** 2, e))
    assert res.status in ("finite", "infeasible", "zero")
