"""drokit: distributionally robust optimization for machine learning on mixed tabular data.

Declare a ground metric, a loss and an ambiguity set; drokit compiles them into a sparse conic
program, solves it (Clarabel by default) and certifies the answer:

```python
import numpy as np, drokit as dk
metric = dk.GroundMetric(numerical=dk.NormCost(p=1),
                         categorical=dk.MismatchCost(weights=None, p=1),
                         label=dk.LabelCost(kappa=np.inf))
clf = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=0.05)).fit(X, y)
clf.result_.objective, clf.result_.lower_bound, clf.result_.upper_bound
```

Public API
----------
ground metrics   GroundMetric, NormCost, GroupNormCost (NumericalNorm: protocol), MismatchCost, OrdinalCost, LabelCost
                 (CategoricalCost: protocol)
transport        wasserstein_distance(P, Q, metric): exact W1 between two empirical distributions under any
                 ground metric; radius helpers rule_of_thumb_radius, auxiliary_radius (drokit.metrics: grids)
calibration      GroundMetric.calibrated(X, rho_numerical=, rho_categorical=) (sun2025 §3),
                 radius_from_theta; drokit.metrics: calibrate, numerical_weight, categorical_weight,
                 round_weights, sample_certainty
losses           drokit.losses: Logistic, Hinge, SmoothHinge, Huber, Pinball, EpsilonInsensitive, Absolute;
                 Adversarial(loss, norm, budget): the worst l_p attack on numerical features (DR-ARO, ARO)
ambiguity sets   CalibratedWasserstein (metric calibrated at fit, sun2025 §3; AmbiguitySet: protocol for sets
                 built on the training data), Wasserstein (center=(X_aux, y_aux) for a ball around auxiliary data), Intersection (ball & ball:
                 selvi2025 Thm 11 static program, an upper bound with a finite-support lower bound),
                 OTMoment (optimal transport with a moment constraint, blanchet2024); its phi-divergence sets
                 KLBall, ChiSquareBall, CVaRSet (divergences.KL / ChiSquare / CVaR)
estimators       DROClassifier, DRORegressor (fit(X, y, sample_weight=)); AuxiliaryMixture (training + weighted
                 auxiliary data: the ARO + Aux baseline)
problems         Problem -> CompiledProblem (.program, .solve(), .to_cvxpy(), .to_picos()) -> FitResult
conic layer      drokit.conic: ConicProgram, ProgramBuilder
back-ends        drokit.solvers: get_backend, available_solvers
evaluation       worst_case_value (enumeration LP), worst_case_value_oracle (DP oracle): exact
                 worst-case risk of a fixed model; worst_case(model, X, y): worst-case risk AND a
                 worst-case distribution (atoms) of a fitted model; simulate_shift(X_test, metric,
                 n_sets, seed, scenario): perturbed test sets under the calibrated shift model;
                 robustness_report(models, X_test, y_test, shift_model=..., n_sets=...) -> RobustnessReport
                 (ACE, AUC, accuracy, log-loss per perturbed set: mean / worst tables, box plots);
                 drokit.evaluation: adaptive_calibration_error, roc_auc, accuracy, log_loss
stability        stability(model, X, y, risk=r, ambiguity=OTMoment(theta1=, theta2=, divergence=)):
                 the OT-with-moment criterion R (blanchet2024) with the most sensitive distribution;
                 feature_stability (R_j per feature, ranked), stability_curve (R over a grid of r)
model selection  cross_validate_grid(estimator, X, y, {radius|theta|kappa|param: [...]},
                 backend="loky"|"dask") -> SweepResult; GridSearchCV reaches ambiguity__radius etc.;
                 DROClassifierCV / DRORegressorCV(radii=, kappas=, criterion="clean"|"worst_case"|"shift"): the
                 radius chosen by cross-validation, then refit (radius_, path_, scores_)
data             drokit.datasets: load (16 UCI sets), load_german_credit
errors           DrokitError, ParameterError, DataError, ProblemTooLargeError, SolverError, PartitionLostError,
                 FitInterrupted
"""

from . import conic, datasets, evaluation, losses, methods, model_selection, solvers
from .ambiguity import (AmbiguitySet, CalibratedWasserstein, ChiSquareBall, CVaRSet, Intersection, KLBall, OTMoment,
                        Wasserstein, divergences)
from .evaluation import (RobustnessReport, feature_stability, robustness_report, simulate_shift, stability,
                         stability_curve, worst_case, worst_case_value, worst_case_value_oracle)
from .exceptions import (DataError, DrokitError, FitInterrupted, ParameterError, PartitionLostError,
                         ProblemTooLargeError, SolverError, SolverNotAvailableError)
from .metrics import (CategoricalCost, GroundMetric, GroupNormCost, LabelCost, MismatchCost, NormCost, NumericalNorm,
                      OrdinalCost, auxiliary_radius, radius_from_theta,
                      rule_of_thumb_radius, wasserstein_distance)
from .model_selection import DROClassifierCV, DRORegressorCV, FitFailedError, SweepResult, cross_validate_grid
from .models import AuxiliaryMixture, CompiledProblem, DROClassifier, DRORegressor, FitResult, Problem

__version__ = "0.1.0"

__all__ = ["GroundMetric", "NormCost", "GroupNormCost", "NumericalNorm", "MismatchCost", "OrdinalCost", "CategoricalCost", "LabelCost", "radius_from_theta", "Wasserstein", "Intersection", "AmbiguitySet", "CalibratedWasserstein", "OTMoment", "KLBall", "ChiSquareBall", "CVaRSet", "divergences", "AuxiliaryMixture",
           "wasserstein_distance", "rule_of_thumb_radius", "auxiliary_radius",
           "stability", "feature_stability", "stability_curve",
           "losses", "DROClassifier", "DRORegressor", "Problem", "CompiledProblem", "FitResult",
           "worst_case", "worst_case_value", "worst_case_value_oracle", "simulate_shift",
           "robustness_report", "RobustnessReport", "cross_validate_grid", "DROClassifierCV", "DRORegressorCV", "SweepResult",
           "FitFailedError",
           "conic", "solvers", "datasets", "evaluation", "model_selection", "DrokitError", "ParameterError", "DataError", "ProblemTooLargeError",
           "SolverError", "SolverNotAvailableError", "PartitionLostError", "FitInterrupted", "__version__"]
