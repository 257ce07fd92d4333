"""Sample weights: P_N = sum_n p_n delta_n.  Integer weights must give exactly the model fitted on the data
with rows repeated (every compile path, classification and regression), the certificate and the
worst-case distribution follow the weights, and bad weights are named errors."""

import numpy as np
import pytest

import drokit as dk
from tests.factories import two_plus_two_frame


def _mixed(n=24, seed=1):
    return two_plus_two_frame(n, seed, labels=(-1, 1))


def _repeat(X, y, w):
    return X.loc[X.index.repeat(w)].reset_index(drop=True), np.repeat(y, w)


@pytest.mark.parametrize("method,loss", [("erm", "logistic"), ("monolithic", "logistic"),
                                         ("cutting_plane", "logistic"), ("graph", "logistic"),
                                         ("box", "hinge"), ("cutting_plane", "hinge")])
def test_integer_weights_equal_repeated_rows(method, loss):
    X, y = _mixed(n=60)  # not separable (radius 0 needs a finite optimum)
    w = np.random.default_rng(0).integers(0, 4, size=len(y))
    w[:2] = [1, 2]
    radius = 0.0 if method == "erm" else 0.1
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=1.5))
    kw = dict(loss=loss, ambiguity=dk.Wasserstein(metric, radius=radius), method=method)
    weighted = dk.DROClassifier(**kw).fit(X, y, sample_weight=w).result_
    repeated = dk.DROClassifier(**kw).fit(*_repeat(X, y, w)).result_
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-6, abs=1e-8)
    assert weighted.upper_bound == pytest.approx(repeated.upper_bound, rel=1e-6, abs=1e-8)
    assert weighted.lower_bound <= weighted.upper_bound + 1e-7


def test_regression_weights_and_worst_case_distribution():
    X, _ = _mixed(n=20, seed=3)
    y = X["a"] * 2 - X["b"] + np.random.default_rng(1).normal(size=20) * 0.3
    w = np.random.default_rng(2).integers(1, 4, size=20)
    kw = dict(loss="absolute", ambiguity=dk.Wasserstein(radius=0.05))
    reg = dk.DRORegressor(**kw).fit(X, y, sample_weight=w)
    rep = dk.DRORegressor(**kw).fit(*_repeat(X, y.to_numpy(), w))
    assert reg.result_.objective == pytest.approx(rep.result_.objective, rel=1e-6)
    wc = dk.worst_case(reg, X, y, sample_weight=w)
    wc_rep = dk.worst_case(rep, *_repeat(X, y.to_numpy(), w))
    assert wc.value == pytest.approx(reg.result_.upper_bound, rel=1e-7)
    assert wc.atoms["mass"].sum() == pytest.approx(1.0)
    assert wc.lower_bound == pytest.approx(wc.value, rel=1e-6)
    assert wc_rep.value == pytest.approx(dk.worst_case(rep, X, y, sample_weight=w).value, rel=1e-6)


def test_uniform_weights_change_nothing_and_bad_weights_are_named():
    X, y = _mixed()
    kw = dict(ambiguity=dk.Wasserstein(radius=0.1))
    plain = dk.DROClassifier(**kw).fit(X, y).result_.objective
    assert dk.DROClassifier(**kw).fit(X, y, sample_weight=np.full(len(y), 3.0)).result_.objective == \
        pytest.approx(plain, rel=1e-9)
    for bad, match in [(np.ones(3), "one weight per sample"), (-np.ones(len(y)), ">= 0"),
                       (np.zeros(len(y)), "all zero"), (np.r_[np.nan, np.ones(len(y) - 1)], "finite")]:
        with pytest.raises(dk.DataError, match=match):
            dk.DROClassifier(**kw).fit(X, y, sample_weight=bad)
