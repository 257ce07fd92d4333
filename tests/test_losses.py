"""Losses: value/derivative/Lipschitz consistency and exactness of each conic epigraph."""

import numpy as np
import pytest

import drokit as dk
from drokit.conic import ProgramBuilder
from drokit.losses import get_loss
from drokit.solvers import get_backend

LOSSES = [dk.losses.Logistic(), dk.losses.Hinge(), dk.losses.SmoothHinge(), dk.losses.Huber(0.7),
          dk.losses.Pinball(0.3), dk.losses.EpsilonInsensitive(0.2), dk.losses.Absolute()]
GRID = np.linspace(-4, 4, 41)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_epigraph_is_exact(loss):
    """min sum t s.t. L(e_i) <= t_i must return t_i = L(e_i) (the epigraph is neither loose nor tight)."""
    pb = ProgramBuilder()
    t = pb.var("t", GRID.size)
    loss.epigraph(pb, pb.constant(GRID), t)
    pb.minimize(t.sum())
    program = pb.build()
    sol = get_backend("clarabel").solve(program)
    assert sol.status == "optimal"
    np.testing.assert_allclose(program.value("t", sol.x), loss.value(GRID), atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES, ids=repr)
def test_derivative_and_lipschitz(loss):
    h = 1e-6
    e = GRID + 0.0137  # avoid the kinks of piecewise-affine losses
    fd = (loss.value(e + h) - loss.value(e - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(e), fd, atol=1e-5)
    dense = np.linspace(-50, 50, 20001)
    assert np.max(np.abs(loss.derivative(dense))) == pytest.approx(loss.lipschitz, rel=1e-6)
    assert np.all(loss.value(GRID) >= 0)


@pytest.mark.parametrize("loss", [l for l in LOSSES if l.pieces is not None], ids=repr)
def test_pieces_define_the_loss(loss):
    a, b = loss.pieces
    np.testing.assert_allclose(np.max(np.outer(GRID, a) + b, axis=1), loss.value(GRID), atol=1e-12)


def test_named_values():
    assert dk.losses.Logistic().value(0.0) == pytest.approx(np.log(2))
    assert dk.losses.SmoothHinge().value(0.5) == pytest.approx(0.125)
    assert dk.losses.Huber(1.0).value(3.0) == pytest.approx(2.5)
    assert dk.losses.Pinball(0.25).value(-2.0) == pytest.approx(0.5)
    assert dk.losses.EpsilonInsensitive(0.5).value(-2.0) == pytest.approx(1.5)


def test_get_loss_by_name_and_errors():
    assert isinstance(get_loss("logistic"), dk.losses.Logistic)
    assert isinstance(get_loss("HUBER"), dk.losses.Huber)
    with pytest.raises(dk.ParameterError, match="unknown loss"):
        get_loss("squared")
    with pytest.raises(dk.ParameterError, match="delta"):
        dk.losses.Huber(delta=-1).lipschitz
    with pytest.raises(dk.ParameterError, match="tau"):
        dk.losses.Pinball(tau=1.5).pieces


@pytest.mark.parametrize("tau", [0.1, 0.9])
def test_pinball_fits_the_tau_quantile_as_documented(tau):
    """Issue 20 item 9: with the residual ``e = f - y``, ``Pinball(tau)`` at radius 0 fits the tau-quantile
    (not the (1 - tau)-quantile its docstring used to state): an intercept-only fit equals np.quantile."""
    rng = np.random.default_rng(0)
    y = rng.exponential(size=401)             # skewed: the tau- and (1 - tau)-quantiles are far apart
    X = np.zeros((401, 1))
    fit = dk.DRORegressor(loss=dk.losses.Pinball(tau), ambiguity=dk.Wasserstein(radius=0.0)).fit(X, y)
    assert fit.intercept_ == pytest.approx(np.quantile(y, tau), abs=1e-6)
    doc = " ".join(dk.losses.Pinball.__doc__.split())
    assert "check loss of the ``tau``-quantile of y given x" in doc
    assert "``Pinball(0.9)`` fits the 0.9-quantile" in doc


@pytest.mark.parametrize("name", ["logistic", "hinge", "smooth_hinge", "huber", "pinball", "epsilon_insensitive",
                                  "absolute"])
def test_value_and_derivatives_equals_the_three_methods(name):
    """``Loss.value_and_derivatives`` (what the Newton masters call) is ``(value, derivative, second_derivative)``,
    also at huge margins where a shared exponential could overflow; the logistic curvature is checked against
    ``expit(e) expit(-e)`` written independently."""
    from scipy.special import expit
    loss = get_loss(name)
    e = np.concatenate([np.random.default_rng(1).normal(scale=4.0, size=2000),
                        [-1e4, -745.0, -40.0, -1e-12, 0.0, 1e-12, 40.0, 745.0, 1e4]])
    with np.errstate(over="raise"):
        value, slope, curv = loss.value_and_derivatives(e)
    assert np.allclose(value, loss.value(e), rtol=1e-14, atol=1e-300)
    assert np.allclose(slope, loss.derivative(e), rtol=1e-14, atol=1e-300)
    assert np.allclose(curv, loss.second_derivative(e), rtol=1e-9, atol=1e-15)
    if name == "logistic":
        assert np.allclose(curv, expit(e) * expit(-e), rtol=1e-12, atol=1e-300)
