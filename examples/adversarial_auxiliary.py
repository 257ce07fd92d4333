"""Distributionally and adversarially robust logistic regression with synthetic auxiliary data (selvi2025 §4).

A small-scale replication of the thesis's UCI experiment (§4.7.1, Tables 27, 30 and 31) on SPECT heart,
the one dataset of those tables that drokit ships.  Five linear classifiers are compared by their
out-of-sample error under the worst-case l2 attack of size alpha (a test point ``(x, y)`` counts as
misclassified when ``y f(x) - alpha ||beta||_2 <= 0``, with ``f(x) = b + beta^T x``):

* **ERM**: plain logistic regression (``Wasserstein(radius=0)``).
* **ARO**: adversarial training, the loss ``log(1 + exp(-y f(x) + alpha ||beta||_2))`` (thesis Obs. 7).
* **ARO+Aux**: ARO on the training data plus the auxiliary data with weight ``w`` (thesis problem (67),
  ``dk.AuxiliaryMixture``).
* **DRO+ARO**: DR-ARO, the adversarial loss over a Wasserstein ball around the training data (Cor. 8).
* **DRO+ARO+Aux**: Inter-ARO*, the same over the intersection of that ball with a ball around the
  auxiliary data (the static program of Thm 11, an UPPER bound; ``result_.lower_bound`` brackets the
  fitted model's worst case from below).

Setup, per random split (thesis §4.7.1, scaled down where said)
---------------------------------------------------------------
* ``dk.datasets.load("spect")``: 267 rows, 22 binary (nominal) features, label 1 = the majority class
  (212 rows) vs the rest.  Nominal features are one-hot coded with a reference level (one 0/1 column per
  binary feature: n = 22); numerical features (none in SPECT) are standardized with the training rows'
  mean and standard deviation.
* 40% of the rows are the test set; of the rest, 25% form the training split and the other 75% (45% of
  all rows) fit the synthesizer that generates the auxiliary data.  **Scaled down:** the model is
  trained on ``--n-train`` rows drawn from the training split (default 24, the thesis's N for spect in
  its Table 29) and the synthesizer generates ``--n-aux`` rows (default 48; the thesis has 72).
* The synthesizer is a small Gaussian copula written below (:class:`GaussianCopula`), a **stand-in for
  SDV's GaussianCopulaSynthesizer** that the thesis uses: per-column empirical marginals, the
  correlation of the columns' normal scores, the label sampled jointly as one more column.
* Ground metric ``||x - x'||_1 + kappa 1[y != y']`` (transport: l1, p = 1), attacks in l2.
* Hyper-parameters by stratified ``--folds``-fold CV on the training rows (default 3; the thesis: 5),
  scored by the validation error under the same attack (ties: the validation adversarial log-loss):
  ``w`` over ``THESIS_AUX_WEIGHT_GRID``; ``(eps, kappa)`` over ``THESIS_RADIUS_GRID x THESIS_KAPPA_GRID(n)``;
  for Inter-ARO* (the expensive model) a **reduced thesis grid**: kappa as chosen for DRO+ARO, eps in
  {DRO+ARO's eps, 10}, eps_aux in {0.1, 1, 10}; pairs with ``eps + eps_aux < W(P_N, P_aux)`` are dropped
  as in the thesis (W computed once, on the training rows; a CV fold whose own W makes the pair empty
  loses that fold), and so are pairs with both radii >= W (each ball holds the other's centre).  On SPECT
  the auxiliary ball binds only with a large training ball and a small auxiliary one (eps = 10, eps_aux
  in {0.1, 1}); the pair (DRO+ARO's eps, 10) has DR-ARO's value whenever 10 >= W + eps.
* Inter-ARO* fits use ``method_options={"segment_points": 0}``: the lower bound's candidate support is
  the samples plus one displacement-interpolation point per segment (the finite-support LP has about
  ``2 (N + N_aux) N N_aux`` variables and dominates the fit time; see docs/adversarial.md).
* Every model fits an intercept (not attacked); the thesis's §4 model has none.

The thesis runs 10 splits, 5-fold CV over its full grids, N = 24 and N_aux = 72 for spect, MOSEK and SDV.
This script's numbers are real outputs of a smaller run (fewer splits, a smaller CV, a different
synthesizer); they are printed next to the thesis's for orientation, not as a reproduction.

Run:  python examples/adversarial_auxiliary.py [--quick] [--seed 0] [--splits 3] [--jobs 2]
(``--quick``: one split, N = 16, N_aux = 32, 2 folds, tiny grids; about 5 s, for the smoke test.  The default
run takes about 80 s on 2 cores.)
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.model_selection import StratifiedKFold, train_test_split

import drokit as dk
from drokit.metrics import THESIS_AUX_WEIGHT_GRID, THESIS_KAPPA_GRID, THESIS_RADIUS_GRID

MODELS = ("ERM", "ARO", "ARO+Aux", "DRO+ARO", "DRO+ARO+Aux")

#: the thesis's rows: Table 31 (alpha = 0, no std given), Tables 27/30 (alpha = 0.05, 0.2), in %
THESIS = {
    "spect": {
        0.0: ((30.74, 30.74, 24.69, 22.35, 18.75), None),
        0.05: ((33.75, 29.69, 25.78, 25.47, 21.56), (5.17, 5.46, 3.06, 3.38, 2.74)),
        0.2: ((54.22, 37.5, 35.16, 33.75, 30.16), (9.88, 3.53, 2.47, 2.68, 3.61)),
    },
    "audiology": {   # the same 226 UCI rows as drokit's (thesis: N = 33, N_aux = 102, n = 102)
        0.0: ((14.94, 14.94, 12.97, 10.11, 7.69), None),
        0.05: ((21.43, 21.54, 17.03, 11.76, 9.01), (3.64, 3.92, 2.90, 3.28, 3.54)),
        0.2: ((37.91, 29.34, 20.44, 20.00, 17.91), (6.78, 5.89, 2.75, 3.01, 3.28)),
    },
}

#: the thesis's sizes (N, N_aux), Table 29
THESIS_SIZES = {"spect": (24, 72), "audiology": (33, 102)}

SEPARABLE = "the training data are linearly separable"


# ----------------------------------------------------------------------------------------- settings
@dataclass
class Settings:
    dataset: str = "spect"
    splits: int = 3
    alphas: Tuple[float, ...] = (0.05, 0.2)
    n_train: int = 24
    n_aux: int = 48
    folds: int = 3
    weights: Tuple[float, ...] = tuple(sorted(THESIS_AUX_WEIGHT_GRID))
    radii: Tuple[float, ...] = tuple(sorted(THESIS_RADIUS_GRID))
    kappas: object = None                    # None: THESIS_KAPPA_GRID(n); "sqrt": (sqrt(n),) only
    inter_eps: Tuple[float, ...] = (10.0,)              # besides DRO+ARO's eps
    inter_aux: Tuple[float, ...] = (0.1, 1.0, 10.0)
    segment_points: int = 0
    inter_solver_options: Optional[dict] = None
    seed: int = 0
    jobs: int = 2

    @classmethod
    def quick(cls, **kw):
        base = dict(splits=1, n_train=16, n_aux=32, folds=2, weights=(0.0, 1.0), radii=(0.01, 0.1, 1.0),
                    kappas="sqrt", inter_eps=(10.0,), inter_aux=(1.0, 10.0), jobs=1)
        base.update(kw)
        return cls(**base)


# ----------------------------------------------------------------------------------------- synthesizer
class GaussianCopula:
    """A minimal Gaussian-copula synthesizer (a stand-in for SDV's ``GaussianCopulaSynthesizer``).

    Fit: every column gets its empirical marginal; its values become normal scores ``z = Phi^-1(u)``, with
    ``u`` the mid-rank ``rank / (n + 1)`` for a continuous column and, for a discrete column (categories
    coded 0..K-1, most frequent first, and the label), ``u`` drawn uniformly inside the category's step
    of the empirical CDF (so that ties get distinct scores and the marginal is kept exactly); the copula
    is the correlation matrix of the scores (clipped to be positive definite).
    Sample: ``z ~ N(0, R)``, ``u = Phi(z)``, and each column maps ``u`` back through its empirical
    quantile function (a step function for discrete columns, linear interpolation between the order
    statistics for continuous ones).
    """

    def __init__(self, discrete: Sequence[bool], seed=None):
        self.discrete = np.asarray(discrete, dtype=bool)
        self.rng = np.random.default_rng(seed)

    def fit(self, table: np.ndarray) -> "GaussianCopula":
        table = np.asarray(table, dtype=float)
        n, m = table.shape
        Z = np.zeros((n, m))
        self.marginals_ = []
        for c in range(m):
            col = table[:, c]
            if self.discrete[c]:
                levels, counts = np.unique(col, return_counts=True)
                cdf = np.cumsum(counts) / n
                lo = np.concatenate([[0.0], cdf[:-1]])
                k = np.searchsorted(levels, col)
                u = lo[k] + self.rng.uniform(0.05, 0.95, n) * (cdf[k] - lo[k])
                self.marginals_.append(("discrete", levels, cdf))
            else:
                u = stats.rankdata(col) / (n + 1.0)
                self.marginals_.append(("continuous", np.sort(col), None))
            Z[:, c] = stats.norm.ppf(u)
        with np.errstate(invalid="ignore", divide="ignore"):
            R = np.corrcoef(Z, rowvar=False)
        R = np.nan_to_num(np.atleast_2d(R), nan=0.0)
        np.fill_diagonal(R, 1.0)
        vals, vecs = np.linalg.eigh(R)
        R = (vecs * np.clip(vals, 1e-6, None)) @ vecs.T
        d = np.sqrt(np.diag(R))
        self.corr_ = R / np.outer(d, d)
        return self

    def sample(self, n: int) -> np.ndarray:
        m = self.corr_.shape[0]
        Z = self.rng.multivariate_normal(np.zeros(m), self.corr_, size=n)
        U = stats.norm.cdf(Z)
        out = np.empty((n, m))
        for c, (kind, values, cdf) in enumerate(self.marginals_):
            if kind == "discrete":
                out[:, c] = values[np.minimum(np.searchsorted(cdf, U[:, c]), len(values) - 1)]
            else:
                out[:, c] = np.quantile(values, U[:, c])
        return out


# ----------------------------------------------------------------------------------------- data
class Encoder:
    """Reference-level one-hot coding of the categorical columns (every level of the column's dtype; the
    first is the reference), standardization of the numerical ones with the fitting rows' statistics."""

    def fit(self, X: pd.DataFrame) -> "Encoder":
        self.columns_ = list(X.columns)
        self.categorical_ = {c: list(X[c].cat.categories) for c in X.columns
                             if isinstance(X[c].dtype, pd.CategoricalDtype)}
        num = [c for c in X.columns if c not in self.categorical_]
        self.mean_ = X[num].mean() if num else pd.Series(dtype=float)
        self.std_ = X[num].std().replace(0.0, 1.0) if num else pd.Series(dtype=float)
        return self

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        parts = []
        for c in self.columns_:
            if c in self.categorical_:
                levels = self.categorical_[c]
                vals = X[c].astype(object).to_numpy()
                parts.append(np.column_stack([(vals == lev).astype(float) for lev in levels[1:]])
                             if len(levels) > 1 else np.zeros((len(X), 0)))
            else:
                parts.append(((X[c] - self.mean_[c]) / self.std_[c]).to_numpy(float)[:, None])
        return np.hstack(parts)


def synthesize(X_fit: pd.DataFrame, y_fit: np.ndarray, n: int, seed) -> Tuple[pd.DataFrame, np.ndarray]:
    """``n`` synthetic rows (features and label) from a Gaussian copula fitted on ``(X_fit, y_fit)``."""
    cols, discrete, codes = [], [], {}
    for c in X_fit.columns:
        if isinstance(X_fit[c].dtype, pd.CategoricalDtype):
            order = X_fit[c].value_counts().index.tolist()      # most frequent level first
            codes[c] = order
            cols.append(X_fit[c].astype(object).map({lev: k for k, lev in enumerate(order)}).to_numpy(float))
            discrete.append(True)
        else:
            cols.append(X_fit[c].to_numpy(float))
            discrete.append(False)
    cols.append(np.asarray(y_fit, dtype=float))
    discrete.append(True)
    rng = np.random.default_rng(seed)
    syn = GaussianCopula(discrete, seed=rng).fit(np.column_stack(cols))
    for _ in range(20):                                  # both classes must appear
        S = syn.sample(n)
        if len(np.unique(S[:, -1])) == 2:
            break
    out = {}
    for k, c in enumerate(X_fit.columns):
        if c in codes:
            out[c] = pd.Categorical([codes[c][int(v)] for v in S[:, k]], categories=X_fit[c].cat.categories)
        else:
            out[c] = S[:, k]
    return pd.DataFrame(out), S[:, -1].astype(int)


@dataclass
class SplitData:
    index: int
    X: np.ndarray
    y: np.ndarray
    X_aux: np.ndarray
    y_aux: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    sizes: Dict[str, int]


def make_split(X_raw: pd.DataFrame, y_raw: np.ndarray, s: Settings, index: int) -> SplitData:
    """The thesis's split (40% test; of the rest 25% training, 75% for the synthesizer), subsampled."""
    seed = np.random.SeedSequence([s.seed, index]).generate_state(4)
    rest, test = train_test_split(np.arange(len(y_raw)), test_size=0.4, stratify=y_raw, random_state=int(seed[0]))
    train_pool, synth = train_test_split(rest, train_size=0.25, stratify=y_raw[rest], random_state=int(seed[1]))
    if s.n_train < len(train_pool):
        train, _ = train_test_split(train_pool, train_size=s.n_train, stratify=y_raw[train_pool],
                                    random_state=int(seed[2]))
    else:
        train = train_pool
    enc = Encoder().fit(X_raw.iloc[train])
    X_aux_raw, y_aux = synthesize(X_raw.iloc[synth], y_raw[synth], s.n_aux, seed=int(seed[3]))
    return SplitData(index, enc.transform(X_raw.iloc[train]), y_raw[train], enc.transform(X_aux_raw), y_aux,
                     enc.transform(X_raw.iloc[test]), y_raw[test],
                     {"test": len(test), "train_pool": len(train_pool), "synth": len(synth), "train": len(train)})


# ----------------------------------------------------------------------------------------- models
def metric_for(kappa: float) -> dk.GroundMetric:
    return dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=kappa))


def margins(model, X, y, alpha: float) -> np.ndarray:
    """``y f(x) - alpha ||beta||_2``: the margin left after the worst l2 attack of size alpha."""
    sign = np.where(y == model.classes_[1], 1.0, -1.0)
    return sign * model.decision_function(X) - alpha * np.linalg.norm(np.ravel(model.coef_))


def attacked_error(model, X, y, alpha: float) -> float:
    return float(np.mean(margins(model, X, y, alpha) <= 0))


@dataclass
class Log:
    """Solver failures and warnings of one task."""
    failures: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


def fit(est, X, y, log: Log, what: str):
    """Fit, recording warnings (the separable-data one is expected for ERM / ARO and not recorded)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    for w in caught:
        msg = str(w.message)
        if SEPARABLE not in msg:
            log.warnings.append(f"{what}: {msg[:160]}")
    return est


def cv_rank(build: Callable, candidates: Sequence, X, y, alpha: float, folds: int, seed: int, log: Log,
            what: str) -> List:
    """Candidates ranked by mean validation error under the attack (ties: adversarial log-loss)."""
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    splits = list(splitter.split(X, y))
    scored = []
    for k, cand in enumerate(candidates):
        errs, losses = [], []
        for tr, va in splits:
            try:
                m = fit(build(cand, X[tr], y[tr]), X[tr], y[tr], log, what)
            except (dk.SolverError, dk.ParameterError) as exc:
                if isinstance(exc, dk.ParameterError) and "empty" not in str(exc):
                    raise
                log.failures.append(f"{what} CV {cand}: {str(exc)[:120]}")
                continue
            marg = margins(m, X[va], y[va], alpha)
            errs.append(np.mean(marg <= 0))
            losses.append(np.mean(np.logaddexp(0.0, -marg)))
        if errs:
            scored.append((float(np.mean(errs)), float(np.mean(losses)), k, cand))
    scored.sort(key=lambda t: (t[0], t[1], t[2]))
    return [c for *_, c in scored]


def fit_best(build: Callable, ranked: Sequence, X, y, log: Log, what: str):
    """Refit the best candidate on all training rows (the next one if the solver fails)."""
    for cand in ranked:
        try:
            return fit(build(cand, X, y), X, y, log, what), cand
        except dk.SolverError as exc:
            log.failures.append(f"{what} refit {cand}: {str(exc)[:120]}")
    raise RuntimeError(f"{what}: every candidate failed")


def inter_grid(eps_dro: float, W: float, s: Settings) -> List[Tuple[float, float]]:
    """Radius pairs for Inter-ARO*: eps in {DRO+ARO's eps} + ``s.inter_eps``, eps_aux in ``s.inter_aux``
    (thesis grid values); pairs with ``eps + eps_aux < W`` (empty intersections) are discarded, as in the
    thesis (W computed once, on the training rows), and so are pairs with both radii >= W (each ball then
    holds the other's centre: the auxiliary ball hardly cuts)."""
    eps_list = list(dict.fromkeys([eps_dro, *s.inter_eps]))
    pairs = dk.metrics.feasible_radius_pairs(eps_list, s.inter_aux, W)
    return [(e, a) for e, a in pairs if not (e >= W and a >= W)]


def run_task(d: SplitData, alpha: float, s: Settings) -> dict:
    """Fit the five models on one split for one attack size; their test errors and choices."""
    t0 = time.perf_counter()
    log = Log()
    n = d.X.shape[1]
    kappas = (np.sqrt(n),) if s.kappas == "sqrt" else (s.kappas or THESIS_KAPPA_GRID(n))
    adv = dk.losses.Adversarial("logistic", norm=2, budget=alpha)
    cv_seed = int(np.random.SeedSequence([s.seed, d.index, 7]).generate_state(1)[0])
    plain = metric_for(1.0)                          # radius 0: the metric plays no role
    out: Dict[str, object] = {"split": d.index, "alpha": alpha}
    models = {}

    models["ERM"] = fit(dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(plain, radius=0.0)),
                        d.X, d.y, log, "ERM")
    aro = dk.DROClassifier(loss=adv, ambiguity=dk.Wasserstein(plain, radius=0.0))
    models["ARO"] = fit(aro, d.X, d.y, log, "ARO")

    # ARO + Aux: thesis problem (67), weight w of each auxiliary sample
    def build_mix(w, X, y):
        return dk.AuxiliaryMixture(dk.DROClassifier(loss=adv, ambiguity=dk.Wasserstein(plain, radius=0.0)),
                                   d.X_aux, d.y_aux, weight=w)
    phase = time.perf_counter()
    ranked = cv_rank(build_mix, s.weights, d.X, d.y, alpha, s.folds, cv_seed, log, "ARO+Aux")
    models["ARO+Aux"], out["w"] = fit_best(build_mix, ranked, d.X, d.y, log, "ARO+Aux")

    out["seconds_mix"], phase = time.perf_counter() - phase, time.perf_counter()

    # DRO + ARO: DR-ARO (Cor. 8) over (eps, kappa)
    def build_dro(cand, X, y):
        eps, kappa = cand
        return dk.DROClassifier(loss=adv, ambiguity=dk.Wasserstein(metric_for(kappa), radius=eps),
                                on_inaccurate="warn")
    grid = [(e, k) for e in s.radii for k in kappas]
    ranked = cv_rank(build_dro, grid, d.X, d.y, alpha, s.folds, cv_seed, log, "DRO+ARO")
    models["DRO+ARO"], (eps_dro, kappa) = fit_best(build_dro, ranked, d.X, d.y, log, "DRO+ARO")
    out["dro"] = (eps_dro, kappa)
    out["seconds_dro"], phase = time.perf_counter() - phase, time.perf_counter()

    # DRO + ARO + Aux: Inter-ARO* (Thm 11) over a reduced thesis grid of radius pairs
    metric = metric_for(kappa)
    W = dk.wasserstein_distance((d.X, d.y), (d.X_aux, d.y_aux), metric)
    grid = inter_grid(eps_dro, W, s)

    def build_inter(cand, X, y):
        eps, eps_aux = cand
        amb = dk.Wasserstein(metric, radius=eps) & dk.Wasserstein(metric, radius=eps_aux, center=(d.X_aux, d.y_aux))
        return dk.DROClassifier(loss=adv, ambiguity=amb, on_inaccurate="warn",
                                solver_options=s.inter_solver_options,
                                method_options={"segment_points": s.segment_points})
    ranked = cv_rank(build_inter, grid, d.X, d.y, alpha, s.folds, cv_seed, log, "DRO+ARO+Aux")
    out["seconds_inter_cv"] = time.perf_counter() - phase
    t_inter = time.perf_counter()
    try:
        inter, (eps_i, eps_aux_i) = fit_best(build_inter, ranked, d.X, d.y, log, "DRO+ARO+Aux")
    except RuntimeError:                                  # last resort: the best candidate with SCS
        eps_i, eps_aux_i = ranked[0]
        inter = fit(build_inter(ranked[0], d.X, d.y).set_params(solver="scs", solver_options=None),
                    d.X, d.y, log, "DRO+ARO+Aux (SCS)")
        log.failures.append(f"DRO+ARO+Aux refit: every candidate failed with Clarabel; refit {ranked[0]} by SCS")
    models["DRO+ARO+Aux"] = inter
    res = inter.result_
    out["inter"] = dict(eps=eps_i, eps_aux=eps_aux_i, kappa=kappa, W=res.auxiliary["wasserstein_distance"],
                        lambda_aux=res.auxiliary["lambda_aux"], lower=res.lower_bound, upper=res.upper_bound,
                        bound=res.bound, fit_seconds=time.perf_counter() - t_inter, candidates=len(grid))
    out["errors"] = {name: 100.0 * attacked_error(m, d.X_test, d.y_test, alpha) for name, m in models.items()}
    majority = np.bincount(d.y).argmax()
    out["minority_predictions"] = {name: int(np.sum(m.predict(d.X_test) != majority)) for name, m in models.items()}
    out["constant"] = 100.0 * float(np.mean(d.y_test != majority))   # no attack can move a constant predictor
    out["failures"], out["warnings"] = log.failures, log.warnings
    out["seconds"] = time.perf_counter() - t0
    return out


# ----------------------------------------------------------------------------------------- report
def fmt_radius(r: float) -> str:
    return "0" if r == 0 else (f"{r:g}" if r >= 1e-3 else f"{r:.0e}")


def report(results: List[dict], s: Settings, splits: List[SplitData], seconds: float) -> None:
    d0 = splits[0]
    print(f"\nSetup: {s.dataset}, {len(splits)} split(s), seed {s.seed}; per split: test {d0.sizes['test']} rows "
          f"(40%), training split {d0.sizes['train_pool']} rows (25% of the rest) of which N = "
          f"{d0.sizes['train']} are used, synthesizer split {d0.sizes['synth']} rows -> N_aux = {s.n_aux} "
          f"synthetic rows; n = {d0.X.shape[1]} columns; {s.folds}-fold CV.")
    print("\nOut-of-sample error (%) under worst-case l2 attacks (a point is an error when y f(x) - alpha "
          "||beta||_2 <= 0),\nmean +- std over splits (ours) and over 10 simulations (thesis, same dataset):")
    head = f"{'alpha':>5}  {'source':<22}" + "".join(f"{m:>15}" for m in MODELS)
    print(head)
    print("-" * len(head))
    thesis = THESIS.get(s.dataset, {})
    for alpha in s.alphas:
        rows = [r for r in results if r["alpha"] == alpha]
        E = np.array([[r["errors"][m] for m in MODELS] for r in rows])
        mean = E.mean(axis=0)
        if len(rows) > 1:
            cells = "".join(f"{m:>8.2f} +-{sd:>5.2f}" for m, sd in zip(mean, E.std(axis=0, ddof=1)))
        else:
            cells = "".join(f"{m:>15.2f}" for m in mean)
        print(f"{alpha:>5g}  {'drokit (this run)':<22}" + cells)
        if alpha in thesis:
            tm, ts = thesis[alpha]
            table = "31" if alpha == 0 else ("27/30" if alpha == 0.05 else "30")
            cells = "".join((f"{m:>8.2f} +-{sd:>5.2f}" if ts else f"{m:>15.2f}") for m, sd in
                            zip(tm, ts or [0] * 5))
            print(f"{'':>5}  {'thesis Table ' + table:<22}" + cells)
    const = np.array([r["constant"] for r in results if r["alpha"] == s.alphas[0]])
    print(f"Reference: predicting the training rows' majority class (no attack changes it): {const.mean():.2f}% "
          f"test error.")
    if not thesis:
        print(f"(the thesis has no row for {s.dataset!r}: of its datasets drokit ships spect and audiology; "
              f"drokit's breast-cancer is the Ljubljana set, the thesis's the Wisconsin one)")

    print("\nChosen hyper-parameters and the Inter-ARO* bracket (the fitted model's worst-case adversarial "
          "log-loss\nover the intersection lies in [lower, upper]; upper = the static program's value; lam_aux > 0: "
          "the auxiliary\nball binds):")
    print(f"{'split':>5} {'alpha':>5} | {'ARO+Aux w':>9} | {'DRO+ARO eps, kappa':>18} | "
          f"{'Inter: eps':>10} {'eps_aux':>7} {'W':>6} {'lam_aux':>7} | {'[lower, upper]':>18} | {'s':>5}")
    for r in sorted(results, key=lambda r: (r["split"], r["alpha"])):
        i = r["inter"]
        eps, kap = r["dro"]
        print(f"{r['split']:>5} {r['alpha']:>5g} | {fmt_radius(r['w']):>9} | {fmt_radius(eps):>9}, {kap:>6.3g}  | "
              f"{fmt_radius(i['eps']):>10} {fmt_radius(i['eps_aux']):>7} {i['W']:>6.3f} {i['lambda_aux']:>7.3f} | "
              f"[{i['lower']:.4f}, {i['upper']:.4f}] | {r['seconds']:>5.1f}")
    print("\nTest error (%) per split, and in brackets the test points the model assigns to the minority class "
          "(no attack;\n0 = the model predicts the majority class everywhere, i.e. it is as good as a constant):")
    print(f"{'split':>5} {'alpha':>5} | " + " ".join(f"{m:>13}" for m in MODELS))
    for r in sorted(results, key=lambda r: (r["split"], r["alpha"])):
        print(f"{r['split']:>5} {r['alpha']:>5g} | " + " ".join(
            f"{r['errors'][m]:>7.2f} ({r['minority_predictions'][m]:>3})" for m in MODELS))

    fails = [f for r in results for f in r["failures"]]
    warns = [w for r in results for w in r["warnings"]]
    print(f"\nSolver trouble: {len(fails)} fit(s) failed (SolverError; a CV candidate loses that fold, a failed "
          f"refit moves to the next-best candidate), {len(warns)} fit(s) accepted with a warning "
          f"(on_inaccurate='warn').")
    for label, items in (("failed", fails), ("warned", warns)):
        counts: Dict[str, int] = {}
        for f in items:
            key = f.split(":")[0].split(" CV ")[0].split(" refit ")[0]
            counts[key] = counts.get(key, 0) + 1
        for key, c in sorted(counts.items()):
            example = next(f for f in items if f.startswith(key))
            print(f"  {label} {c:>3} x {key}   e.g. {example[len(key):][:110]}")
    sizes = THESIS_SIZES.get(s.dataset)
    thesis_sizes = f" (thesis: N = {sizes[0]}, N_aux = {sizes[1]})" if sizes else ""
    print(f"\nTotal time {seconds:.1f} s.  A smaller-scale replication: {s.folds}-fold CV over reduced grids, N = {s.n_train}, "
          f"N_aux = {s.n_aux}{thesis_sizes}, our Gaussian copula instead of SDV, {len(splits)} split(s) instead "
          f"of 10; not the thesis's exact protocol.")


# ----------------------------------------------------------------------------------------- main
def parse(argv=None) -> Settings:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="one split, small sizes and grids (smoke test)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--splits", type=int, default=None, help="random splits (default 3; quick: 1)")
    p.add_argument("--alphas", type=float, nargs="+", default=None, help="attack sizes (default 0.05 0.2)")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument("--n-aux", type=int, default=None)
    p.add_argument("--jobs", type=int, default=None, help="parallel workers over (split, alpha) (default 2)")
    p.add_argument("--dataset", default="spect", help="a dk.datasets.load name (default spect)")
    a = p.parse_args(argv)
    s = Settings.quick() if a.quick else Settings()
    s.seed, s.dataset = a.seed, a.dataset
    for name in ("splits", "n_train", "n_aux", "jobs"):
        if getattr(a, name) is not None:
            setattr(s, name, getattr(a, name))
    if a.alphas is not None:
        s.alphas = tuple(a.alphas)
    return s


def main(argv=None) -> List[dict]:
    s = parse(argv)
    t0 = time.perf_counter()
    X_raw, y = dk.datasets.load(s.dataset)
    y = np.asarray(y, dtype=int)
    splits = [make_split(X_raw, y, s, i) for i in range(s.splits)]
    tasks = [(d, alpha) for d in splits for alpha in s.alphas]
    print(f"{s.dataset}: {len(y)} rows, {X_raw.shape[1]} features; {len(tasks)} task(s) (split x alpha) on "
          f"{s.jobs} worker(s)...", flush=True)
    if s.jobs > 1 and len(tasks) > 1:
        from joblib import Parallel, delayed
        results = Parallel(n_jobs=s.jobs)(delayed(run_task)(d, a, s) for d, a in tasks)
    else:
        results = [run_task(d, a, s) for d, a in tasks]
    report(results, s, splits, time.perf_counter() - t0)
    return results


if __name__ == "__main__":
    main()
