"""The Loss protocol (issue 7, item 2): a user's small Loss subclass works with every method.

Two hand-written losses, checked against the built-in losses they re-implement:
* ``TwiceHinge`` declares only ``pieces`` (2 max(0, 1 - e)); DRO is positively homogeneous in the loss, so
  every method's optimum is twice the built-in hinge's (same model), and so is the worst-case risk;
* ``HandLogistic`` writes value, derivative, Lipschitz constant and its own exponential-cone epigraph; it
  must reproduce the built-in logistic loss on every method.
"""

import numpy as np
import pytest
from scipy.special import expit

import drokit as dk
from drokit.conic import Affine
from drokit.losses import Loss
from factories import two_plus_two_frame


class TwiceHinge(Loss):
    name = "twice_hinge"
    task = "classification"
    decreasing = True

    @property
    def pieces(self):
        return np.array([-2.0, 0.0]), np.array([2.0, 0.0])


class HandLogistic(Loss):
    name = "hand_logistic"
    task = "classification"
    decreasing = True
    cone_class = "EXP"

    def value(self, e):
        return np.logaddexp(0.0, -np.asarray(e, dtype=float))

    def derivative(self, e):
        return -expit(-np.asarray(e, dtype=float))

    @property
    def lipschitz(self):
        return 1.0

    def epigraph(self, pb, u, t):
        # log(1 + exp(-u)) <= t  iff  exp(-t) + exp(-u - t) <= 1: exp(-t) <= w1, exp(-u - t) <= w2, w1 + w2 <= 1
        K = u.size
        w = pb.aux("hand_w", 2 * K)
        one = pb.constant(np.ones(2 * K))
        pb.add_exp(Affine.vstack([-t, -u - t]), one, w)
        pb.add_nonneg(1.0 - (w[np.arange(K)] + w[np.arange(K, 2 * K)]))


def _fit(loss, method, X, y, radius=0.2, **options):
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=options.pop("kappa", np.inf)))
    return dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius), method=method,
                            **options).fit(X, y)


CATEGORICAL_METHODS = [("monolithic", {}), ("graph", {}), ("cutting_plane", {}),
                       ("cutting_plane", {"method_options": {"oracle": "sorting"}}),
                       ("cutting_plane", {"method_options": {"oracle": "enumeration"}})]


@pytest.mark.parametrize("method, options", CATEGORICAL_METHODS + [("box", {})],
                         ids=lambda v: str(v) if isinstance(v, str) else "")
@pytest.mark.parametrize("kappa", [np.inf, 1.0])
def test_pieces_only_loss_is_twice_the_hinge_on_every_method(method, options, kappa):
    X, y = two_plus_two_frame(n=24)
    mine = _fit(TwiceHinge(), method, X, y, kappa=kappa, **options)
    ref = _fit("hinge", method, X, y, kappa=kappa, **options)
    assert mine.result_.method == method
    assert mine.result_.objective == pytest.approx(2 * ref.result_.objective, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("method, options", CATEGORICAL_METHODS, ids=lambda v: str(v) if isinstance(v, str) else "")
def test_hand_written_logistic_equals_the_built_in_on_every_method(method, options):
    X, y = two_plus_two_frame(n=24)
    mine = _fit(HandLogistic(), method, X, y, **options)
    ref = _fit("logistic", method, X, y, **options)
    assert mine.result_.objective == pytest.approx(ref.result_.objective, rel=1e-6)
    np.testing.assert_allclose(mine.coef_, ref.coef_, atol=1e-4)
    assert mine.result_.relative_gap <= 1e-6


def test_hand_written_losses_on_numerical_data_use_the_closed_form():
    X, y = two_plus_two_frame(n=24)
    X = X[["a", "b"]]
    for mine, ref, scale in ((HandLogistic(), "logistic", 1.0), (TwiceHinge(), "hinge", 2.0)):
        a, b = _fit(mine, "auto", X, y), _fit(ref, "auto", X, y)
        assert a.result_.method == "closed_form"
        assert a.result_.objective == pytest.approx(scale * b.result_.objective, rel=1e-6)


def test_worst_case_and_stability_of_a_hand_written_loss():
    """At the same model, a loss twice as large has twice the worst-case risk, and reaching the risk level 2 r
    with it costs exactly what reaching r costs with the hinge (the adversary's problems coincide).  The
    model is the hinge fit, passed as a plain linear model with the hand-written loss."""
    from sklearn.svm import LinearSVC
    X, y = two_plus_two_frame(n=30)
    ref = _fit("hinge", "auto", X, y)
    fixed = LinearSVC()
    fixed.coef_, fixed.intercept_, fixed.classes_ = ref.coef_.reshape(1, -1), np.atleast_1d(ref.intercept_), ref.classes_
    wc = dk.worst_case(fixed, X, y, ambiguity=ref.ambiguity_, loss=TwiceHinge(), schema=ref.schema_).value
    assert wc == pytest.approx(2 * dk.worst_case(ref, X, y).value, rel=1e-9)
    amb = dk.OTMoment(dk.GroundMetric(numerical=dk.NormCost(p=2)))
    a = dk.stability(fixed, X, y, risk=1.2, ambiguity=amb, loss=TwiceHinge(), schema=ref.schema_).value
    b = dk.stability(ref, X, y, risk=0.6, ambiguity=amb).value
    assert a == pytest.approx(b, rel=1e-6)
