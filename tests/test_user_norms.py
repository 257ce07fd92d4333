"""User norms on numerical features (issue 23, item 3): the ``dk.NumericalNorm`` protocol and ``dk.GroupNormCost``.

* a norm written here through the protocol only (``HandLp``: l1 / l2 / l_inf, no ``lp_exponent``) reproduces
  ``dk.NormCost(p)`` -- fit objective, worst-case value, stability criterion, transport distance -- on small mixed
  data, logistic and hinge, kappa finite and infinite, methods auto / cutting_plane / monolithic, while drokit's own
  barrier solvers step aside and the fits stay certified;
* ``GroupNormCost`` with one group is ``NormCost(p=2)``, with one group per feature ``NormCost(p=1)`` (weights
  included); its invariances (order of groups and columns, group weights as feature weights, a scaled metric);
* a genuinely new norm (groups of two) against independent computations: the worst-case risk of a fixed model by
  enumerating every configuration row and every kink of ``F(lambda)``, the fitted objective by cvxpy and by
  ``method="monolithic"``, the transport distance by an assignment problem, the conic forms by their programs;
* clear errors for invalid user norms and where a user norm is refused.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment

import drokit as dk
from drokit.conic import Affine, ProgramBuilder
from drokit.exceptions import ParameterError

RTOL = 1e-6
NUM = ["a", "b", "c", "d"]


class HandLp(dk.NumericalNorm):
    """``||d||_p`` for p in {1, 2, inf}, written through the protocol only (no ``lp_exponent``: drokit treats it as
    a user norm)."""

    def __init__(self, p=2, weights=None):
        self.p = p
        self.weights = weights

    def _q(self):
        return {1: np.inf, 2: 2, np.inf: 1}[self.p]

    def value(self, D, columns):
        return np.linalg.norm(np.asarray(D, dtype=float), ord=self.p, axis=-1)

    def dual_value(self, V, columns):
        return np.linalg.norm(np.asarray(V, dtype=float), ord=self._q(), axis=-1)

    @staticmethod
    def _leq(pb, v, t, r):
        """``||v||_r <= t`` for r in {1, 2, inf}."""
        if r == 2:
            pb.add_norm2_leq(v, t)
        elif np.isinf(r):
            tk = t.repeat(v.size)
            pb.add_nonneg(Affine.vstack([tk - v, tk + v]))
        else:
            s = pb.aux("hand_r", v.size)
            pb.add_nonneg(Affine.vstack([s - v, s + v, t - s.sum()]))

    def add_value_leq(self, pb, d, t, columns):
        self._leq(pb, d, t, self.p)

    def add_dual_value_leq(self, pb, v, t, columns):
        self._leq(pb, v, t, self._q())

    def maximizer(self, v, columns):
        v = np.asarray(v, dtype=float)
        d = np.zeros(v.size)
        if not np.any(v):
            return d
        if self.p == 1:
            j = int(np.argmax(np.abs(v)))
            d[j] = np.sign(v[j])
            return d
        if np.isinf(self.p):
            return np.sign(v)
        return v / np.linalg.norm(v)


def mixed(n=36, seed=0):
    """Four numerical columns (a and b related, c and d related) and two categorical ones."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 2))
    X = pd.DataFrame({"a": base[:, 0] + 0.3 * rng.normal(size=n), "b": base[:, 0] + 0.3 * rng.normal(size=n),
                      "c": base[:, 1] + 0.3 * rng.normal(size=n), "d": 2.0 * rng.normal(size=n),
                      "r": pd.Categorical(rng.choice(list("xyz"), n), categories=list("xyz")),
                      "s": pd.Categorical(rng.choice(list("uv"), n), categories=list("uv"))})
    signal = X["a"] + 0.8 * X["b"] - X["c"] + 0.2 * X["d"] + 0.7 * (X["r"] == "y") + rng.normal(size=n)
    return X, (signal > 0.2).astype(int).to_numpy()


def clf(numerical, kappa=np.inf, radius=0.08, loss="logistic", method="auto", **kw):
    metric = dk.GroundMetric(numerical=numerical, label=dk.LabelCost(kappa=kappa))
    return dk.DROClassifier(loss=loss, method=method, ambiguity=dk.Wasserstein(metric, radius=radius), **kw)


def same_objective(a, b, rtol=RTOL):
    assert a.result_.status == b.result_.status == "optimal"
    assert a.result_.objective == pytest.approx(b.result_.objective, rel=rtol, abs=1e-9)


# ====================================================== a hand-written l_p norm reproduces NormCost(p)
@pytest.mark.parametrize("p", [1, 2, np.inf])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
@pytest.mark.parametrize("kappa", [np.inf, 8.0])
@pytest.mark.parametrize("method", ["auto", "cutting_plane", "monolithic"])
def test_hand_written_lp_norm_equals_norm_cost(p, loss, kappa, method):
    X, y = mixed()
    w = {"a": 1.5, "c": 0.5}
    mine = clf(HandLp(p, weights=w), kappa, loss=loss, method=method).fit(X, y)
    theirs = clf(dk.NormCost(p=p, weights=w), kappa, loss=loss, method=method).fit(X, y)
    same_objective(mine, theirs)
    assert mine.result_.method == theirs.result_.method
    assert mine.result_.solver not in ("barrier", "barrier_master", "phase_one", "slope_cuts")
    # the worst case of the fitted model, under each metric
    assert dk.worst_case(mine, X, y).value == pytest.approx(dk.worst_case(theirs, X, y).value, rel=RTOL)
    assert dk.worst_case(mine, X, y).value == pytest.approx(mine.result_.objective, rel=1e-7)


@pytest.mark.parametrize("p", [1, 2, np.inf])
def test_hand_written_lp_norm_worst_case_of_one_model(p):
    """The same fixed model under both metrics: value, attained or not, and the limiting direction."""
    X, y = mixed(seed=1)
    Xn = X[NUM]
    plain = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.0)).fit(Xn, y)
    ball = {name: dk.Wasserstein(dk.GroundMetric(numerical=cost), radius=0.1)
            for name, cost in (("mine", HandLp(p, weights={"b": 2.0})), ("theirs", dk.NormCost(p, weights={"b": 2.0})))}
    mine, theirs = (dk.worst_case(plain, Xn, y, ambiguity=ball[k]) for k in ("mine", "theirs"))
    assert mine.value == pytest.approx(theirs.value, rel=1e-9)
    assert (mine.limit is None) == (theirs.limit is None)
    if theirs.limit is not None:
        np.testing.assert_allclose(mine.limit.direction, theirs.limit.direction, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, np.inf])
def test_hand_written_lp_norm_transport_distance(p):
    X, _ = mixed(n=15, seed=2)
    Q = X.copy()
    Q[NUM] = Q[NUM] + np.random.default_rng(3).normal(size=(15, 4))
    w = {"d": np.inf, "a": 0.5}
    Q["d"] = X["d"]
    mine = dk.wasserstein_distance(X, Q, dk.GroundMetric(numerical=HandLp(p, weights=w)))
    theirs = dk.wasserstein_distance(X, Q, dk.GroundMetric(numerical=dk.NormCost(p, weights=w)))
    assert mine == pytest.approx(theirs, rel=1e-12)


def stability_pair(numerical, reference, seed=4):
    X, y = mixed(n=30, seed=seed)
    model = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    risk = 1.25 * float(np.mean(np.logaddexp(0, -np.where(y == 1, 1, -1) * model.decision_function(X))))
    out = []
    for cost in (numerical, reference):
        ot = dk.OTMoment(metric=dk.GroundMetric(numerical=cost), theta1=1.0, theta2=2.0)
        out.append((dk.stability(model, X, y, risk=risk, ambiguity=ot),
                    dk.feature_stability(model, X, y, risk=risk, ambiguity=ot)))
    return out


def test_hand_written_l2_norm_stability_criterion():
    (mine, mine_f), (theirs, theirs_f) = stability_pair(HandLp(2, weights={"c": 3.0}), dk.NormCost(2, weights={"c": 3.0}))
    assert mine.status == theirs.status
    assert mine.value == pytest.approx(theirs.value, rel=1e-7)
    np.testing.assert_allclose(mine.atoms[NUM].to_numpy(dtype=float), theirs.atoms[NUM].to_numpy(dtype=float),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(mine_f.table["value"].to_numpy(dtype=float),
                               theirs_f.table["value"].to_numpy(dtype=float), rtol=1e-7)


def test_own_solvers_step_aside_for_a_user_norm():
    """All-numerical logistic: NormCost(p=2) goes to the structured barrier solver, the same norm by hand to
    Clarabel (the barrier's applicability check names the norm); the cutting plane's phase 1 / barrier master and the
    slope split step aside too, and every fit is certified."""
    from drokit.reformulations.phase_one import phase_one_applies
    from drokit.reformulations.row_terms import cone_barrier_refusal
    from drokit.reformulations.slope_split import slope_split_applies
    from drokit.solvers.barrier import ineligibility
    X, y = mixed(seed=5)
    Xn = X[NUM]
    own = clf(dk.NormCost(2)).fit(Xn, y)
    mine = clf(HandLp(2)).fit(Xn, y)
    assert own.result_.solver == "barrier" and mine.result_.solver == "clarabel"
    same_objective(mine, own)
    assert mine.result_.auxiliary["lower_bound"]["source"] in ("lagrangian", "barrier")
    inst = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(numerical=HandLp(2)), radius=0.1)).bind(Xn, y)
    assert "not an l_p norm" in ineligibility(inst)
    assert "not an l_p norm" in cone_barrier_refusal(inst)
    assert not phase_one_applies(inst)
    with pytest.raises(ParameterError, match="not an l_p norm"):
        clf(HandLp(2), solver="barrier").fit(Xn, y)
    mixed_inst = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(numerical=HandLp(1)), radius=0.1)).bind(X, y)
    ok, why = slope_split_applies(mixed_inst)
    assert not ok and "not an l_p norm" in why
    own_cp = clf(dk.NormCost(1), method="cutting_plane").fit(X, y)
    mine_cp = clf(HandLp(1), method="cutting_plane").fit(X, y)
    assert own_cp.result_.solver != "clarabel" and mine_cp.result_.solver == "clarabel"
    same_objective(mine_cp, own_cp)
    # a user norm that prices no column (every numerical feature immutable) keeps drokit's own solvers
    frozen = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(numerical=HandLp(2, weights=np.inf)), radius=0.1))
    frozen_inst = frozen.bind(X, y)
    assert cone_barrier_refusal(frozen_inst) is None and phase_one_applies(frozen_inst)


@pytest.mark.parametrize("attack", [1, 2, np.inf])
def test_adversarial_losses_with_a_user_norm(attack):
    """DR-ARO: the attack's l_p ball and the user's transport norm; the Lagrangian certificate hands the attack its
    part of the priced columns' sums by a small conic program for a norm that is not l_p."""
    X, y = mixed(n=30, seed=3)
    loss = dk.losses.Adversarial("logistic", norm=attack, budget=0.05)
    mine = clf(HandLp(1), 8.0, loss=loss).fit(X, y)
    theirs = clf(dk.NormCost(1), 8.0, loss=loss).fit(X, y)
    same_objective(mine, theirs)
    grouped = clf(the_group_norm(), 8.0, loss=loss).fit(X, y)
    assert grouped.result_.status == "optimal"
    assert grouped.result_.auxiliary["lower_bound"]["source"] == "lagrangian"


@pytest.mark.parametrize("penalty", [{"l1_penalty": 0.01}, {"l2_penalty": 0.01}])
def test_penalties_with_a_user_norm(penalty):
    X, y = mixed(n=30, seed=3)
    mine = clf(HandLp(2, weights={"a": 2.0}), 8.0, **penalty).fit(X, y)
    theirs = clf(dk.NormCost(2, weights={"a": 2.0}), 8.0, **penalty).fit(X, y)
    same_objective(mine, theirs)
    assert mine.result_.auxiliary["lower_bound"]["source"] == "lagrangian"


# ====================================================== GroupNormCost: one group is l2, singletons are l1
@pytest.mark.parametrize("kappa", [np.inf, 8.0])
@pytest.mark.parametrize("method", ["auto", "cutting_plane", "monolithic"])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_group_norm_extremes(kappa, method, loss):
    X, y = mixed(seed=6)
    w = {"a": 2.0, "b": 0.5, "d": np.inf}
    one = clf(dk.GroupNormCost([NUM], weights=w), kappa, loss=loss, method=method).fit(X, y)
    l2 = clf(dk.NormCost(2, weights=w), kappa, loss=loss, method=method).fit(X, y)
    same_objective(one, l2)
    singletons = clf(dk.GroupNormCost([[c] for c in NUM], weights=w), kappa, loss=loss, method=method).fit(X, y)
    undeclared = clf(dk.GroupNormCost([], weights=w), kappa, loss=loss, method=method).fit(X, y)   # alone: singletons
    l1 = clf(dk.NormCost(1, weights=w), kappa, loss=loss, method=method).fit(X, y)
    same_objective(singletons, l1)
    same_objective(undeclared, l1)
    assert dk.worst_case(singletons, X, y).value == pytest.approx(l1.result_.objective, rel=RTOL)


def test_group_norm_invariances():
    X, y = mixed(seed=7)
    base = clf(dk.GroupNormCost([["a", "b"], ["c", "d"]], group_weights=[2.0, 1.0])).fit(X, y)
    # the order of the groups and of their members
    reordered = clf(dk.GroupNormCost({"cd": ["d", "c"], "ab": ["b", "a"]}, group_weights={"ab": 2.0})).fit(X, y)
    same_objective(base, reordered)
    # the order of the columns of X
    order = ["d", "r", "b", "s", "c", "a"]
    permuted = clf(dk.GroupNormCost([["a", "b"], ["c", "d"]], group_weights=[2.0, 1.0])).fit(X[order], y)
    same_objective(base, permuted)
    # a group weight is a common feature weight of its members: N(Gamma d) = w_g ||d_g|| when gamma_g = w_g
    by_features = clf(dk.GroupNormCost([["a", "b"], ["c", "d"]], weights={"a": 2.0, "b": 2.0})).fit(X, y)
    same_objective(base, by_features)
    # scaling the metric by c and the radius by c leaves the ball unchanged
    metric = dk.GroundMetric(numerical=dk.GroupNormCost([["a", "b"], ["c", "d"]], group_weights=[2.0, 1.0]))
    scaled = dk.DROClassifier(ambiguity=dk.Wasserstein(metric.scaled(3.0), radius=3 * 0.08)).fit(X, y)
    same_objective(base, scaled)
    # and the group norm differs from both l1 and l2 here (the test can tell them apart)
    l1 = clf(dk.NormCost(1, weights={"a": 2.0, "b": 2.0})).fit(X, y)
    l2 = clf(dk.NormCost(2, weights={"a": 2.0, "b": 2.0})).fit(X, y)
    for other in (l1, l2):
        assert abs(other.result_.objective - base.result_.objective) > 1e-4


# ====================================================== a new norm against independent computations
GROUPS = [["a", "b"], ["c", "d"]]
GAMMA = np.array([1.0, 2.0, 0.5, 1.0])
GROUP_W = np.array([1.5, 1.0])


def group_dual(v):
    """``max_g ||v_g / gamma_g||_2 / w_g`` of the weighted group norm (written from the math)."""
    u = v / GAMMA
    return max(np.linalg.norm(u[:2]) / GROUP_W[0], np.linalg.norm(u[2:]) / GROUP_W[1])


def group_cost(dx):
    u = dx * GAMMA
    return GROUP_W[0] * np.linalg.norm(u[..., :2], axis=-1) + GROUP_W[1] * np.linalg.norm(u[..., 2:], axis=-1)


def the_group_norm():
    return dk.GroupNormCost(GROUPS, weights=dict(zip(NUM, GAMMA)), group_weights=list(GROUP_W))


def enumerated_worst_case(model, X, y, radius, kappa, loss):
    """``min_{lam >= lip N_*(Gamma^{-1} beta_x)} lam eps + mean_n max_k (l_k - lam c_k)`` over every row ``k`` (every
    categorical configuration, both labels), minimized exactly: ``F`` is convex and piecewise linear, so its minimum
    is at the floor or at a kink, where two rows of one sample meet."""
    cats = {"r": list("xyz"), "s": list("uv")}
    lip = 1.0
    beta = model.coef_.ravel()[:4]
    floor = lip * group_dual(beta)
    ypm = np.where(y == 1, 1.0, -1.0)
    rows = []
    for n in range(len(y)):
        ls, cs = [], []
        for r, s in itertools.product(cats["r"], cats["s"]):
            Xc = X.iloc[[n]].copy()
            Xc["r"] = pd.Categorical([r], categories=cats["r"])
            Xc["s"] = pd.Categorical([s], categories=cats["s"])
            f = float(model.decision_function(Xc)[0])
            change = float(r != X["r"].iloc[n]) + float(s != X["s"].iloc[n])
            for flip in ((0, 1) if np.isfinite(kappa) else (0,)):
                margin = (-1.0 if flip else 1.0) * ypm[n] * f
                ls.append(np.logaddexp(0.0, -margin) if loss == "logistic" else max(0.0, 1.0 - margin))
                cs.append(change + (kappa * flip if flip else 0.0))
        rows.append((np.array(ls), np.array(cs)))

    def F(lam):
        return lam * radius + np.mean([np.max(ls - lam * cs) for ls, cs in rows])

    candidates = [floor]
    for ls, cs in rows:
        for i, j in itertools.combinations(range(ls.size), 2):
            if cs[i] != cs[j]:
                lam = (ls[i] - ls[j]) / (cs[i] - cs[j])
                if lam >= floor:
                    candidates.append(lam)
    return min(F(lam) for lam in candidates)


@pytest.mark.parametrize("kappa", [np.inf, 1.5])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_group_norm_worst_case_against_enumeration(kappa, loss):
    X, y = mixed(n=12, seed=8)
    fit = clf(the_group_norm(), kappa, radius=0.15, loss=loss).fit(X, y)
    expected = enumerated_worst_case(fit, X, y, 0.15, kappa, loss)
    assert fit.result_.status == "optimal"
    assert fit.result_.objective == pytest.approx(expected, rel=1e-7)
    assert dk.worst_case(fit, X, y).value == pytest.approx(expected, rel=1e-7)
    # the fitted objective is the monolithic program's (all rows at once) and the cutting plane's
    for method in ("monolithic", "cutting_plane"):
        other = clf(the_group_norm(), kappa, radius=0.15, loss=loss, method=method).fit(X, y)
        same_objective(other, fit)
    # a model that is not optimal: its worst case too
    other_model = clf(dk.NormCost(1), kappa, radius=0.02, loss=loss).fit(X, y)
    ball = dk.Wasserstein(dk.GroundMetric(numerical=the_group_norm(), label=dk.LabelCost(kappa)), radius=0.15)
    assert dk.worst_case(other_model, X, y, ambiguity=ball).value == pytest.approx(
        enumerated_worst_case(other_model, X, y, 0.15, kappa, loss), rel=1e-7)


@pytest.mark.parametrize("kappa", [np.inf, 3.0])
def test_group_norm_fit_against_cvxpy(kappa):
    """All numerical: ``min lam eps + mean s_n``, ``s_n >= L(y_n f_n)`` (``>= L(-y_n f_n) - lam kappa``), ``lip
    ||(beta / gamma)_g||_2 <= w_g lam`` per group, written in cvxpy from the math (belbasi2023 Prop. 1 with this dual
    norm)."""
    cp = pytest.importorskip("cvxpy")
    X, y = mixed(n=25, seed=9)
    Xn = X[NUM].to_numpy()
    ypm = np.where(y == 1, 1.0, -1.0)
    b, beta, lam, s = cp.Variable(), cp.Variable(4), cp.Variable(nonneg=True), cp.Variable(len(y))
    f = b + Xn @ beta
    u = cp.multiply(beta, 1.0 / GAMMA)
    cons = [s >= cp.logistic(-cp.multiply(ypm, f)), cp.norm(u[:2], 2) <= GROUP_W[0] * lam,
            cp.norm(u[2:], 2) <= GROUP_W[1] * lam]
    if np.isfinite(kappa):
        cons.append(s >= cp.logistic(cp.multiply(ypm, f)) - lam * kappa)
    problem = cp.Problem(cp.Minimize(0.12 * lam + cp.sum(s) / len(y)), cons)
    problem.solve(solver=cp.CLARABEL)
    fit = clf(the_group_norm(), kappa, radius=0.12).fit(X[NUM], y)
    assert fit.result_.status == "optimal" and fit.result_.solver == "clarabel"
    assert fit.result_.objective == pytest.approx(problem.value, rel=1e-6)
    np.testing.assert_allclose(fit.coef_.ravel(), beta.value, rtol=1e-3, atol=1e-4)


def test_group_norm_limiting_direction_moves_a_group():
    X, y = mixed(n=30, seed=10)
    plain = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.0)).fit(X[NUM], y)
    ball = dk.Wasserstein(dk.GroundMetric(numerical=the_group_norm()), radius=0.1)
    wc = dk.worst_case(plain, X[NUM], y, ambiguity=ball)
    assert not wc.attained and wc.limit.kind == "numerical"
    d = wc.limit.direction
    beta = plain.coef_.ravel()
    assert group_cost(d) == pytest.approx(1.0, rel=1e-9)                       # one unit of cost
    assert abs(beta @ d) == pytest.approx(group_dual(beta), rel=1e-9)          # at the dual norm's rate
    moved = [NUM[j] for j in np.flatnonzero(d)]
    assert moved in (["a", "b"], ["c", "d"])                                   # one whole group moves


def test_group_norm_transport_against_assignment():
    rng = np.random.default_rng(11)
    P = pd.DataFrame(rng.normal(size=(7, 4)), columns=NUM)
    Q = pd.DataFrame(rng.normal(size=(7, 4)), columns=NUM)
    C = group_cost(P.to_numpy()[:, None, :] - Q.to_numpy()[None, :, :])
    rows, cols = linear_sum_assignment(C)
    expected = C[rows, cols].mean()
    assert dk.wasserstein_distance(P, Q, dk.GroundMetric(numerical=the_group_norm())) == pytest.approx(expected,
                                                                                                      rel=1e-9)


def test_group_norm_stability_is_the_squared_norm():
    """One group: the l2 criterion; a new norm: the linear adversary's moves cost ``N(Gamma delta)^2`` each (the
    primal cost reported equals the atoms' cost)."""
    (one, one_f), (l2, l2_f) = stability_pair(dk.GroupNormCost([NUM]), dk.NormCost(2))
    assert one.value == pytest.approx(l2.value, rel=1e-7)
    np.testing.assert_allclose(one_f.table["value"].to_numpy(dtype=float), l2_f.table["value"].to_numpy(dtype=float),
                               rtol=1e-7)
    X, y = mixed(n=30, seed=4)
    model = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    risk = 1.25 * float(np.mean(np.logaddexp(0, -np.where(y == 1, 1, -1) * model.decision_function(X))))
    ot = dk.OTMoment(metric=dk.GroundMetric(numerical=the_group_norm(), categorical=dk.MismatchCost(weights=np.inf)),
                     theta1=1.0, theta2=np.inf)
    res = dk.stability(model, X, y, risk=risk, ambiguity=ot)
    moved = res.atoms[NUM].to_numpy(dtype=float) - X[NUM].to_numpy()[res.atoms["sample"].to_numpy()]
    np.testing.assert_allclose(res.atoms["cost"].to_numpy(dtype=float), group_cost(moved) ** 2, rtol=1e-7, atol=1e-12)
    assert res.value == pytest.approx(float(res.atoms["mass"].to_numpy(dtype=float) @ group_cost(moved) ** 2),
                                      rel=1e-6)
    # along the norm's maximizer: the score moves by beta' delta at the least cost (beta' delta)^2 / N_*^2
    beta = model.coef_.ravel()[:4]
    score = moved @ beta
    np.testing.assert_allclose(group_cost(moved) ** 2, score ** 2 / group_dual(beta) ** 2, rtol=1e-7, atol=1e-12)


def test_group_norm_mot_and_multinomial_fits():
    X, y = mixed(n=30, seed=12)
    ot = dict(theta1=1.0, theta2=1.0, divergence="kl", radius=0.1, exponent=1)
    one = dk.DROClassifier(ambiguity=dk.OTMoment(metric=dk.GroundMetric(numerical=dk.GroupNormCost([NUM])), **ot))
    l2 = dk.DROClassifier(ambiguity=dk.OTMoment(metric=dk.GroundMetric(numerical=dk.NormCost(2)), **ot))
    same_objective(one.fit(X, y), l2.fit(X, y))
    grouped = dk.DROClassifier(ambiguity=dk.OTMoment(metric=dk.GroundMetric(numerical=the_group_norm()), **ot)).fit(X, y)
    assert grouped.result_.status == "optimal"
    assert dk.worst_case(grouped, X, y).value == pytest.approx(grouped.result_.objective, rel=1e-6)
    y3 = np.array(["p", "q", "r"])[np.arange(30) % 3]
    X3 = X[NUM].copy()
    X3.loc[y3 == "q", "a"] += 1.0
    X3.loc[y3 == "r", "c"] += 1.0
    multi_one = clf(dk.GroupNormCost([NUM]), radius=0.05).fit(X3, y3)
    multi_l2 = clf(dk.NormCost(2), radius=0.05).fit(X3, y3)
    same_objective(multi_one, multi_l2)
    multi = clf(the_group_norm(), radius=0.05).fit(X3, y3)
    assert multi.result_.status == "optimal" and multi.coef_.shape == (3, 4)


def test_group_norm_conic_forms_by_their_programs():
    """``max v'd s.t. N(d) <= 1`` is ``N_*(v)`` (add_value_leq), ``min t s.t. N_*(v) <= t`` too (add_dual_value_leq),
    and the maximizer attains it."""
    from drokit.solvers.clarabel import ClarabelBackend
    norm = dk.GroupNormCost([["a", "c"], ["b", "d", "e"]], group_weights=[2.0, 0.5]).bind(list("abcde"))
    cols = np.arange(5)
    rng = np.random.default_rng(13)
    for v in rng.normal(size=(3, 5)):
        dual = float(norm.dual_value(v, cols))
        pb = ProgramBuilder()
        d = pb.var("d", 5)
        norm.add_value_leq(pb, d, pb.constant(np.ones(1)), cols)
        pb.minimize(-d.premultiply(v[None, :]))
        sol = ClarabelBackend().solve(pb.build(), {})
        assert -sol.primal_objective == pytest.approx(dual, rel=1e-7)
        pb = ProgramBuilder()
        t = pb.var("t", 1)
        norm.add_dual_value_leq(pb, pb.constant(v), t, cols)
        pb.minimize(t)
        assert ClarabelBackend().solve(pb.build(), {}).primal_objective == pytest.approx(dual, rel=1e-7)
        d_star = norm.maximizer(v, cols)
        assert float(norm.value(d_star[None, :], cols)[0]) == pytest.approx(1.0, rel=1e-12)
        assert float(v @ d_star) == pytest.approx(dual, rel=1e-12)
    # restricted to some columns: the groups lose their other members
    sub = np.array([0, 3])
    assert float(norm.value(np.array([[3.0, 4.0]]), sub)[0]) == pytest.approx(2.0 * 3.0 + 0.5 * 4.0)


# ====================================================== errors
class ZeroOnLast(HandLp):
    def value(self, D, columns):
        D = np.asarray(D, dtype=float)
        return np.linalg.norm(D[..., :-1], ord=self.p, axis=-1)


class WrongDual(HandLp):
    def dual_value(self, V, columns):
        return np.linalg.norm(np.asarray(V, dtype=float), ord=2, axis=-1)     # l2 for any p


class Scalar(HandLp):
    def value(self, D, columns):
        return float(np.max(np.abs(D)))


class NoDual(dk.NumericalNorm):
    def __init__(self, weights=None):
        self.weights = weights

    def value(self, D, columns):
        return np.abs(np.asarray(D, dtype=float)).sum(axis=-1)


@pytest.mark.parametrize("norm, match", [
    (ZeroOnLast(1), "not a norm"),
    (WrongDual(1), "dual"),
    (Scalar(np.inf), "one number per row"),
    (NoDual(), "must implement dual_value"),
])
def test_invalid_user_norms(norm, match):
    X, y = mixed(n=20)
    with pytest.raises(ParameterError, match=match):
        clf(norm).fit(X, y)


@pytest.mark.parametrize("cost, match", [
    (dk.GroupNormCost([["a", "zz"]]), "not a numerical column"),
    (dk.GroupNormCost([["a", "b"], ["b", "c"]]), "two groups"),
    (dk.GroupNormCost([["a"], []]), "empty"),
    (dk.GroupNormCost("a"), "list of lists"),
    (dk.GroupNormCost([["a", "b"]], group_weights=[0.0]), "> 0"),
    (dk.GroupNormCost([["a", "b"]], group_weights=[1.0, 2.0]), "one number per group"),
    (dk.GroupNormCost([["a", "b"]], group_weights={"x": 1.0}), "dict"),
    (dk.GroupNormCost([["a", "b"]], weights={"a": -1.0}), ">= 0"),
    (dk.GroupNormCost(["ab"]), "list of column names"),
])
def test_invalid_group_norms(cost, match):
    X, y = mixed(n=20)
    with pytest.raises(ParameterError, match=match):
        clf(cost).fit(X, y)


def test_refused_with_a_user_norm():
    X, y = mixed(n=20)
    Xn = X[NUM]
    metric = dk.GroundMetric(numerical=dk.GroupNormCost(GROUPS))
    with pytest.raises(ParameterError, match="Intersection"):
        ball = dk.Wasserstein(metric, radius=0.5) & dk.Wasserstein(metric, radius=0.5, center=(Xn, y))
        dk.DROClassifier(ambiguity=ball).fit(Xn, y)
    ot = dk.OTMoment(metric=metric, theta1=1.0, theta2=1.0)

    def loss_and_grad(Xa, ya):
        z = np.asarray(Xa, dtype=float) @ np.ones(4)
        return np.logaddexp(0, -np.where(ya == 1, 1, -1) * z), np.zeros_like(np.asarray(Xa, dtype=float))

    with pytest.raises(ParameterError, match="MLP or a callable"):
        dk.stability(loss_and_grad, Xn, y, risk=1.0, ambiguity=ot)
    with pytest.raises(ParameterError, match="NumericalNorm"):
        clf("l2").fit(X, y)
    unbound = dk.GroupNormCost(GROUPS)
    with pytest.raises(ParameterError, match="bind"):
        unbound.value(np.ones((1, 2)), np.array([0, 1]))
    # on its own, with the column names: the cost of a move
    assert unbound.distance(np.zeros((1, 4)), np.array([[3.0, 4.0, 1.0, 0.0]]), names=NUM)[0] == pytest.approx(6.0)
    assert np.isinf(unbound.distance(np.zeros((1, 4)), np.ones((1, 4)), np.array([1, 1, 1, np.inf]), names=NUM)[0])


def test_params_clone_and_repr():
    from sklearn.base import clone
    est = clf(dk.GroupNormCost(GROUPS, weights={"a": 2.0}, group_weights=[1.0, 3.0]))
    params = est.get_params()
    assert params["ambiguity__metric__numerical__groups"] == GROUPS
    twin = clone(est).set_params(ambiguity__metric__numerical__group_weights=[1.0, 1.0])
    assert twin.ambiguity.metric.numerical.group_weights == [1.0, 1.0]
    assert est.ambiguity.metric.numerical.group_weights == [1.0, 3.0]
    assert "GroupNormCost(groups=" in repr(est.ambiguity.metric.numerical)
    assert isinstance(dk.NormCost(2), dk.NumericalNorm)
    assert dk.NormCost(2).lp_exponent == 2 and dk.GroupNormCost(GROUPS).lp_exponent is None
