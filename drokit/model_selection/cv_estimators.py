"""``DROClassifierCV`` and ``DRORegressorCV``: the radius (and label cost) chosen by cross-validation, in the image of
scikit-learn's ``LogisticRegressionCV``.

``fit`` scores every radius of a path (and every ``kappa`` of ``kappas``) on the same K-fold splits with
:func:`~drokit.model_selection.cross_validate_grid` (joblib: loky, threads, Dask), under a selection criterion of
:mod:`~drokit.model_selection.criteria` (``"clean"``, ``"worst_case"`` or ``"shift"``), picks the best mean score
and refits the estimator itself on all rows with it: the fitted CV estimator *is* the chosen model (``coef_``,
``predict``, ``result_``, ``dk.worst_case``), with the selection in ``radius_``, ``kappa_``, ``scores_``,
``path_`` and ``cv_results_``.  ``criterion="rwpi"`` cross-validates nothing: the radius comes from the training rows by
Robust Wasserstein Profile Inference (:func:`~drokit.model_selection.rwpi.rwpi_radius`), then the refit.

The default path: ``radii=10`` radii spaced evenly in log scale over ``[r0 / 100, 10 r0]``, ``r0 = d / sqrt(N)``
the ``O(1/sqrt(N))`` rule of thumb in the data's unit ``d`` of transport cost
(:func:`~drokit.model_selection.criteria.default_radii`); for a set that only reweights (KL / chi-square balls) the
radius is a divergence budget and the path is ``[1e-3, 1]``.

On Dask collections ``fit`` cross-validates by partition (:mod:`~drokit.model_selection.dask_cv`): folds dealt within
the partitions (or a Dask column of fold numbers as ``cv``), the partitions bound once and every fold x radius fit
distributed, scores as sums over the held-out rows, the refit distributed too.
"""

from __future__ import annotations

from numbers import Integral
from typing import Optional

import numpy as np
import pandas as pd
from sklearn.base import clone, is_classifier
from sklearn.utils.validation import check_is_fitted

from ..ambiguity import Wasserstein
from ..dask_inputs import any_dask
from ..exceptions import DataError, ParameterError
from ..metrics import GroundMetric
from ..methods import MAX_CONFIGURATIONS
from ..models import DROClassifier, DRORegressor
from ..models.problem import Problem
from ..losses import get_loss
from ..schema import FeatureSchema
from ..validation import as_1d, check_array_2d, check_target, class_labels, is_dataframe
from .criteria import (CRITERIA, CRITICAL_CAP, LogLossScorer, ShiftScorer, WorstCaseScorer, capped_path,
                       check_criterion, check_radii, data_rule_of_thumb, default_radii)
from .grid import nested_choice, resolve_scorer
from .result import FitFailedError
from .sweep import cross_validate_grid

#: the parameters of the CV estimators that are not the wrapped estimator's
CV_PARAMETERS = ("radii", "kappas", "cv", "criterion", "scoring", "validation_radius", "shift_model",
                 "n_shift_sets", "shift_aggregate", "warm_path", "refit", "n_jobs", "backend", "scheduler",
                 "random_state", "progress", "rwpi_alpha", "rwpi_draws")
#: the path of a set that only reweights (its radius a divergence budget, no transport unit)
DIVERGENCE_RADII = (1e-3, 1.0)

class _DROCV:
    """What both CV estimators share: the path, the criterion's scorer, the sweep, the refit (module docstring)."""

    _estimator_class: type = DROClassifier

    # ------------------------------------------------------------------ the wrapped estimator
    def _estimator_params(self) -> dict:
        names = self._estimator_class._get_param_names()
        return {name: getattr(self, name) for name in names}

    def _problem(self) -> Problem:
        """The wrapped estimator's problem, with the selected ambiguity set during the refit."""
        ambiguity = getattr(self, "_selected_ambiguity", None)
        loss = get_loss(self.loss if self.loss is not None else self._default_loss)
        return Problem(loss=loss, ambiguity=self.ambiguity if ambiguity is None else ambiguity, task=self._task,
                       fit_intercept=self.fit_intercept, l1_penalty=self.l1_penalty, l2_penalty=self.l2_penalty)

    def _declared_ambiguity(self):
        return Wasserstein() if self.ambiguity is None else self.ambiguity

    # ------------------------------------------------------------------ the path and the criterion
    def _path(self, X) -> np.ndarray:
        ambiguity = self._declared_ambiguity()
        params = ambiguity.get_params(deep=False)
        if "radius" not in params:
            raise ParameterError(f"{type(self).__name__} chooses the radius of the ambiguity set, and "
                                 f"{type(ambiguity).__name__} has none; cross-validate its parameters with "
                                 f"dk.cross_validate_grid (e.g. {{'ambiguity__level': [...]}})")
        radii = check_radii(self.radii)
        if radii is not None:
            return radii
        if "metric" not in params:            # a divergence ball: the radius is a budget, not a transport cost
            lo, hi = DIVERGENCE_RADII
            return np.geomspace(lo, hi, int(self.radii)) if int(self.radii) > 1 else np.array([np.sqrt(lo * hi)])
        return default_radii(self.radii, X, params["metric"], categorical_features=self.categorical_features,
                             seed=self._seed())

    def _capped(self, radii: np.ndarray, base, X, y, sample_weight) -> np.ndarray:
        """The default path (``radii`` an int) capped at ``CRITICAL_CAP`` times the critical radius of the training
        rows when it applies (:mod:`drokit.certificates.constant_model`): beyond it every fit is the same constant
        model, and just below it the fits are the slowest of the path (every configuration row nearly ties).  The
        grid then spans ``[r0 / 100, min(10 r0, CRITICAL_CAP r_crit)]``; a user's list of radii is kept as given."""
        if not isinstance(self.radii, Integral) or isinstance(self.radii, bool) or radii.size < 2:
            return radii
        return capped_path(radii, _critical_radius(base, X, y, sample_weight))

    def _seed(self) -> int:
        return 0 if self.random_state is None else int(self.random_state)

    def _scorer(self, base, X, y):
        criterion = check_criterion(self.criterion)
        if criterion == "worst_case":
            if self.scoring is not None:
                raise ParameterError("criterion='worst_case' scores the exact worst-case validation risk of the "
                                     "model's own loss; scoring must be None")
            radius = self.validation_radius
            if radius is None:
                metric = self._declared_ambiguity().get_params(deep=False).get("metric")
                radius = data_rule_of_thumb(X, metric, categorical_features=self.categorical_features,
                                            seed=self._seed())
            return WorstCaseScorer(radius), f"-worst-case risk at radius {float(radius):.3g}"
        if self.scoring is None and is_classifier(base):        # neg_log_loss, over every class of y
            scorer, name = LogLossScorer(np.unique(y)), "neg_log_loss"
        else:
            scorer, name = resolve_scorer(base, self.scoring)
        if criterion == "clean":
            return scorer, name
        shift = ShiftScorer(scorer, self.shift_model, self.n_shift_sets, self.shift_aggregate, seed=self._seed())
        return shift, f"{self.shift_aggregate} {name} under shift ({self.n_shift_sets} sets)"

    def _check_kappas(self) -> Optional[list]:
        if self.kappas is None:
            return None
        values = np.asarray(self.kappas, dtype=float).ravel()
        if values.size == 0 or np.any(np.isnan(values)) or np.any(values <= 0):
            raise ParameterError(f"kappas must be a non-empty list of label costs > 0 (inf allowed), got "
                                 f"{self.kappas!r}")
        if np.unique(values).size != values.size:
            raise ParameterError(f"kappas has repeated values: {self.kappas!r}")
        return [float(v) for v in values]

    # ------------------------------------------------------------------ fit
    def _checked_data(self, base, X, y):
        """``(X, y)`` checked as the wrapped estimator's ``fit`` checks them, before any fold is fitted (a NaN, a
        single class, ``y=None`` raise the estimator's own error, not a failed sweep)."""
        X = check_array_2d(X)
        y = as_1d(y, X.shape[0])
        base._validate_params()
        if is_classifier(base) and y.dtype == object:
            y = np.asarray(y.tolist())          # labels typed by their values: the stratified splitter reads them
        if is_classifier(base):
            class_labels(y, X.shape[0])
        else:
            check_target(y, X.shape[0])
        FeatureSchema.infer(X, self.categorical_features, self.categories).transform(X)
        return X, y

    def fit(self, X, y, sample_weight=None):
        """Choose the radius (and ``kappa``) on the path by cross-validation, then refit on all of ``X, y``.
        ``sample_weight``: weights of the rows, for every fit (its training rows'), every validation score (its
        validation rows') and the refit; the folds ignore them."""
        return self._fit_cv(X, y, sample_weight)

    def _fit_cv(self, X, y, sample_weight=None):
        if self.validation_radius is not None and self.criterion != "worst_case":
            raise ParameterError("validation_radius is the radius of criterion='worst_case'; it has no meaning for "
                                 f"criterion={self.criterion!r}")
        check_criterion(self.criterion)
        if any_dask(X, y, sample_weight):
            from .dask_cv import fit_cv_dask
            return fit_cv_dask(self, X, y, sample_weight)
        if self.criterion == "rwpi":
            return self._fit_rwpi(X, y, sample_weight)
        if self.criterion == "shift" and not is_dataframe(X):
            raise DataError("criterion='shift' perturbs the validation folds with drokit.simulate_shift, which needs a "
                            f"pandas DataFrame (categorical columns by dtype); got {type(X).__name__}")
        base = self._estimator_class(**self._estimator_params())
        X, y = self._checked_data(base, X, y)
        radii = self._capped(self._path(X), base, X, y, sample_weight)
        grid = {"radius": [float(r) for r in radii]}
        kappas = self._check_kappas()
        if kappas is not None:
            grid["kappa"] = kappas
        scorer, name = self._scorer(base, X, y)
        sweep = cross_validate_grid(base, X, y, grid, cv=self.cv, scoring=scorer, n_jobs=self.n_jobs,
                                    backend=self.backend, scheduler=self.scheduler, seed=self._seed(),
                                    progress=self.progress, refit=False, path="radius" if self.warm_path else None,
                                    sample_weight=sample_weight)
        self._record_selection(sweep, radii, name)
        if self.refit:
            kappa = self.kappa_ if "kappa" in sweep.best_params_ else None
            self._selected_ambiguity = self._chosen_ambiguity(nested_choice(self.radius_, kappa))
            try:
                self._estimator_class.fit(self, X, y, sample_weight=sample_weight)
            finally:
                del self._selected_ambiguity
        return self

    def _record_selection(self, sweep, radii: np.ndarray, name: str) -> None:
        """The selection attributes from the sweep (class docstring); :class:`FitFailedError` when every candidate had
        a failed fit."""
        if sweep.best_index_ is None:
            raise FitFailedError(f"every radius of the path had a failed fit; first failure: "
                                 f"{sweep.results.loc[sweep.results['n_failed_fits'] > 0, 'errors'].iloc[0]}")
        best = dict(sweep.best_params_)
        self.radii_ = np.asarray(radii, dtype=float)
        self.radius_ = float(best["radius"])
        self.kappa_ = float(best["kappa"]) if "kappa" in best else self._declared_kappa()
        self.best_index_ = int(sweep.best_index_)
        self.best_score_ = float(sweep.best_score_)
        self.scoring_ = name
        self.cv_results_ = sweep.results
        self.sweep_ = sweep
        splits = [c for c in sweep.results.columns if c.startswith("split") and c.endswith("_test_score")]
        self.scores_ = sweep.results[splits].to_numpy(dtype=float)
        self.path_ = self._path_table(sweep)

    def _fit_rwpi(self, X, y, sample_weight=None):
        """``criterion="rwpi"``: the radius from the training rows (:func:`~drokit.model_selection.rwpi.rwpi_radius`
        at confidence ``rwpi_alpha`` with ``rwpi_draws`` normal draws, seeded by ``random_state``), no
        cross-validation; ``path_`` is that one radius (its quantile, level and draws), ``scores_`` the ``(1,
        rwpi_draws)`` draws of the radius statistic ``S_hat / sqrt(N)`` whose ``rwpi_alpha``-quantile is ``radius_``,
        ``best_score_`` nan, ``cv_results_`` and ``sweep_`` None, ``rwpi_`` the whole :class:`RWPIResult`."""
        from .rwpi import rwpi_radius
        for name, value, default in (("kappas", self.kappas, None), ("scoring", self.scoring, None),
                                     ("sample_weight", sample_weight, None)):
            if value is not default:
                raise ParameterError(f"criterion='rwpi' computes the radius of the declared ball from the training "
                                     f"rows (one label cost, unweighted rows, no validation score); {name} must be "
                                     f"None")
        if check_radii(self.radii) is not None:
            raise ParameterError("criterion='rwpi' computes the radius; radii (a list) has no meaning with it")
        if self._task != "classification":
            raise ParameterError("criterion='rwpi' is for binary classification (logistic or smooth hinge loss)")
        base = self._estimator_class(**self._estimator_params())
        X, y = self._checked_data(base, X, y)
        radius, result = rwpi_radius(base, X, y, alpha=self.rwpi_alpha, n_draws=self.rwpi_draws, seed=self._seed())
        self.rwpi_ = result
        self.radii_ = np.array([radius])
        self.radius_, self.kappa_ = float(radius), self._declared_kappa()
        self.best_index_, self.best_score_ = 0, float("nan")
        self.scoring_ = f"rwpi: {result.alpha:g}-quantile of sup_Lambda zeta'Z / sqrt(N)"
        self.cv_results_ = self.sweep_ = None
        self.scores_ = (result.draws / np.sqrt(result.n_samples))[None, :]
        self.path_ = pd.DataFrame({"radius": [self.radius_], "alpha": [result.alpha], "quantile": [result.quantile],
                                   "n_samples": [result.n_samples], "n_draws": [result.n_draws],
                                   "moves": [result.moves]})
        if self.refit:
            self._selected_ambiguity = self._chosen_ambiguity(nested_choice(self.radius_))
            try:
                self._estimator_class.fit(self, X, y)
            finally:
                del self._selected_ambiguity
        return self

    def _declared_kappa(self) -> float:
        params = self._declared_ambiguity().get_params(deep=False)
        if "metric" not in params:
            return float("nan")                   # a set that only reweights: no label cost
        metric = GroundMetric() if params["metric"] is None else params["metric"]
        return float(metric.kappa)

    def _chosen_ambiguity(self, chosen: dict):
        """A copy of the declared ambiguity set (the default ball for ``None``) with the chosen parameters."""
        template = self._estimator_class(ambiguity=None if self.ambiguity is None else clone(self.ambiguity))
        template.set_params(**chosen)                      # the user's ambiguity object is not modified
        return template.ambiguity

    @staticmethod
    def _path_table(sweep) -> pd.DataFrame:
        results = sweep.results
        table = pd.DataFrame({"radius": results["param_radius"].astype(float)})
        if "param_kappa" in results:
            table["kappa"] = results["param_kappa"].astype(float)
        for column in ("mean_test_score", "std_test_score", "rank_test_score", "mean_fit_time", "n_failed_fits",
                       "n_uncertified_fits"):
            table[column] = results[column]
        gaps = sweep.fits.groupby("candidate")["relative_gap"].max()
        table["max_relative_gap"] = gaps.reindex(range(len(results))).to_numpy()
        return table

    # ------------------------------------------------------------------ the path, drawn
    def plot_path(self, ax=None):
        """The mean validation score (+- one standard deviation over the splits) against the radius, log scale,
        one line per ``kappa``, the chosen radius marked; returns the matplotlib ``Axes``."""
        check_is_fitted(self, "path_")
        if self.criterion == "rwpi":
            raise ParameterError("criterion='rwpi' has no path to draw: its radius is the quantile of the draws in "
                                 "scores_ (rwpi_.draws)")
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots()
        groups = self.path_.groupby("kappa") if "kappa" in self.path_ else [(None, self.path_)]
        for kappa, part in groups:
            part = part.sort_values("radius")
            radius = part["radius"].to_numpy()
            shown = np.where(radius > 0, radius, np.nan)
            mean, std = part["mean_test_score"].to_numpy(), part["std_test_score"].to_numpy()
            line, = ax.plot(shown, mean, marker="o", label=None if kappa is None else f"kappa = {kappa:g}")
            ax.fill_between(shown, mean - std, mean + std, alpha=0.2, color=line.get_color())
        ax.axvline(self.radius_, color="k", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_xlabel("radius")
        ax.set_ylabel(f"validation score ({self.scoring_})")
        if "kappa" in self.path_:
            ax.legend()
        return ax


def _cv_doc(estimator: str) -> str:
    return f"""{estimator} with the radius of its ambiguity set (and optionally the label cost) chosen by
    cross-validation under a selection criterion, then refit on all rows (:mod:`drokit.model_selection.cv_estimators`).

    Parameters
    ----------
    radii : int or list of float
        The path: a list of radii >= 0, or the number of radii of the default path (10; module docstring).
    kappas : list of float or None
        Label costs to cross-validate with the radii (``ambiguity__metric__label__kappa``); ``None``: the declared one.
    cv : int, cross-validation generator or iterable
        As :func:`~drokit.model_selection.cross_validate_grid` (5 stratified folds for a classifier).  On Dask
        collections an int (folds dealt within each partition) or a Dask Series / Array of fold numbers partitioned
        like ``X`` (``-1``: always trained on).
    criterion : {{"clean", "worst_case", "shift", "rwpi"}}
        The selection criterion (:mod:`drokit.model_selection.criteria`): ``"clean"`` (``scoring`` on the validation
        folds), ``"worst_case"`` (minus the exact worst-case validation risk at ``validation_radius``), ``"shift"``
        (``scoring`` on ``n_shift_sets`` shifted copies of each validation fold, ``dk.simulate_shift``), ``"rwpi"`` (no
        cross-validation: the radius from the training rows, :func:`~drokit.model_selection.rwpi.rwpi_radius`; binary
        classification, logistic or smooth hinge loss, a Wasserstein ball).
    scoring : str or callable or None
        A scikit-learn scorer (``None``: ``neg_log_loss`` for the logistic classifier, else ``score``); not with
        ``"worst_case"``.
    validation_radius : float or None
        The radius of ``"worst_case"`` (``None``: the rule of thumb ``d / sqrt(N)`` of the default path).
    shift_model : Calibration or GroundMetric or None
        The shift model of ``"shift"`` (``None``: the estimator's ground metric; a calibrated metric's calibration).
    n_shift_sets : int
        Shifted copies per validation fold (``"shift"``).
    shift_aggregate : {{"mean", "worst"}}
        The shifted copies' mean score or their worst.
    warm_path : bool
        Fit the radii of a split in turn, from the largest down, each from the previous one's solution (the
        estimator's ``warm_start``; one task per split and ``kappa``); False (default): every fit from scratch (one
        task per fit).  Only the starts move: every fit is certified as always.  Measured (benchmarks/RESULTS.md,
        "Radius paths"): 1.3-1.7x faster on synthetic tables, slower on credit-approval, where warm-started fits end
        more often at a certificate the barrier master cannot close and go to the conic masters.
    refit : bool
        Refit on all rows at the chosen parameters (the estimator then predicts); False: selection only.
    n_jobs, backend, scheduler, progress
        How the fits run, as :func:`~drokit.model_selection.cross_validate_grid`.
    random_state : int or None
        Seed of the splits, of the shifted copies and of the RWPI draws (``None``: 0).
    rwpi_alpha : float in (0, 1)
        The confidence level of ``"rwpi"``: the ball holds a distribution under which the true parameter is optimal
        with probability about ``rwpi_alpha``.
    rwpi_draws : int
        Normal draws of the RWPI limit law.

    The other parameters are :class:`~drokit.{estimator}`'s.

    Attributes
    ----------
    radius_, kappa_ : float
        The chosen radius and label cost.
    best_score_ : float
        Its mean validation score; ``best_index_`` its row of ``path_``.
    radii_ : numpy.ndarray
        The path's radii.
    scores_ : numpy.ndarray
        ``(candidates, splits)`` validation scores, rows in ``path_`` order (``"rwpi"``: the ``(1, rwpi_draws)`` draws
        of the radius statistic, whose ``rwpi_alpha``-quantile is ``radius_``).
    path_ : pandas.DataFrame
        Per candidate: ``radius`` (``kappa``), mean / std / rank of the score, mean fit time, failed and uncertified
        fits, the largest certified relative gap.
    cv_results_ : pandas.DataFrame
        The sweep's full table (:class:`~drokit.model_selection.SweepResult`; ``sweep_`` is the whole result; None with
        ``"rwpi"``).
    rwpi_ : RWPIResult
        With ``"rwpi"``: the radius, the quantile, the draws, the plug-in ``beta``
        (:func:`~drokit.model_selection.rwpi.rwpi_radius`).
    scoring_ : str
        What the scores are.
    coef_, intercept_, result_, ... :
        The refit model's, as :class:`~drokit.{estimator}`.
    """


class DROClassifierCV(_DROCV, DROClassifier):
    __doc__ = _cv_doc("DROClassifier")
    _estimator_class = DROClassifier

    def __init__(self, loss="logistic", ambiguity=None, *, radii=10, kappas=None, cv=5, criterion="clean",
                 scoring=None, validation_radius=None, shift_model=None, n_shift_sets=20, shift_aggregate="mean",
                 warm_path=False, refit=True, n_jobs=None, backend="loky", scheduler=None, random_state=0,
                 progress=False, rwpi_alpha=0.95, rwpi_draws=500,
                 method="auto", solver="auto", solver_options=None, fit_intercept=True, categorical_features=None,
                 categories="auto", handle_unknown="error", on_inaccurate="raise",
                 max_configurations=MAX_CONFIGURATIONS, method_options=None, verbose=False, l1_penalty=0.0,
                 l2_penalty=0.0, time_limit=None, warm_start=False):
        self._store_params(locals())


def _critical_radius(base, X, y, sample_weight) -> float:
    """The critical radius of ``base``'s problem on ``(X, y)`` (:func:`drokit.certificates.constant_model.critical_point`;
    ``inf`` where that construction does not apply or the data cannot be bound here -- the fits then report why)."""
    from ..certificates.constant_model import critical_point
    try:
        problem = base._problem()
        ambiguity = problem.ambiguity if problem.ambiguity is not None else Wasserstein()
        problem.ambiguity = clone(ambiguity).set_params(radius=1.0)
        problem = problem.built(X, y, categorical_features=base.categorical_features, categories=base.categories,
                                sample_weight=sample_weight)
        inst = problem.bind(X, y, categorical_features=base.categorical_features, categories=base.categories,
                            sample_weight=sample_weight)
        point = critical_point(inst)
    except Exception:  # noqa: BLE001 -- only the grid's top depends on it; the fits raise their own errors
        return np.inf
    return np.inf if point is None else float(point[0])


class DRORegressorCV(_DROCV, DRORegressor):
    __doc__ = _cv_doc("DRORegressor")
    _estimator_class = DRORegressor

    def __init__(self, loss="huber", ambiguity=None, *, radii=10, kappas=None, cv=5, criterion="clean",
                 scoring=None, validation_radius=None, shift_model=None, n_shift_sets=20, shift_aggregate="mean",
                 warm_path=False, refit=True, n_jobs=None, backend="loky", scheduler=None, random_state=0,
                 progress=False, rwpi_alpha=0.95, rwpi_draws=500,
                 method="auto", solver="auto", solver_options=None, fit_intercept=True, categorical_features=None,
                 categories="auto", handle_unknown="error", on_inaccurate="raise",
                 max_configurations=MAX_CONFIGURATIONS, method_options=None, verbose=False, l1_penalty=0.0,
                 l2_penalty=0.0, time_limit=None, warm_start=False):
        self._store_params(locals())


__all__ = ["DROClassifierCV", "DRORegressorCV", "CRITERIA", "CV_PARAMETERS"]
