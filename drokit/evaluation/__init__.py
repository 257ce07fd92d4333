"""Evaluation of fixed models: exact worst-case risk over an ambiguity set; simulated test-set shifts;
scores (ACE, AUC, accuracy, log-loss) and robustness reports over perturbed test sets; the OT-with-moment
stability criterion (how much perturbation breaks a model, which features are fragile)."""

from .report import METRICS, RobustnessReport
from .robustness import robustness_report
from .scores import (accuracy, adaptive_calibration_error, expected_calibration_error, log_loss,
                     roc_auc)
from .stability import (FeatureStability, StabilityCurve, StabilityResult, feature_stability, stability,
                        stability_curve)
from .shift import PAPER_SCENARIOS, SCENARIOS, ShiftedSets, simulate_shift
from .worst_case import (WorstCaseValue, certified_upper_bound, lambda_floor, worst_case_value,
                         worst_case_value_oracle)
from .worst_case_distribution import (LimitingDirection, WorstCaseResult, worst_case,
                                      worst_case_from_instance)

__all__ = ["WorstCaseValue", "worst_case_value", "worst_case_value_oracle", "certified_upper_bound",
           "lambda_floor", "worst_case", "worst_case_from_instance", "WorstCaseResult", "LimitingDirection",
           "simulate_shift", "ShiftedSets", "SCENARIOS", "PAPER_SCENARIOS", "robustness_report",
           "RobustnessReport", "METRICS", "adaptive_calibration_error", "expected_calibration_error",
           "roc_auc", "accuracy", "log_loss", "stability", "feature_stability", "stability_curve",
           "StabilityResult", "FeatureStability", "StabilityCurve"]
