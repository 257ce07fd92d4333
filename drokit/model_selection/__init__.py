"""Model selection: cross-validated sweeps over ambiguity grids, run through joblib (loky, dask, ...).

:func:`cross_validate_grid` scores every combination of a ``radius`` / ``theta`` / ``kappa`` (or any
``set_params`` name) grid on repeated stratified K-fold splits and returns a :class:`SweepResult`.
drokit's estimators also work with scikit-learn's ``GridSearchCV`` (``{"ambiguity__radius": [...]}``).
"""

from .cv_estimators import DROClassifierCV, DRORegressorCV
from .grid import CONVENIENCE_KEYS
from .result import FitFailedError, SweepResult
from .rwpi import RWPIResult, rwpi_radius
from .sweep import cross_validate_grid

__all__ = ["DROClassifierCV", "DRORegressorCV", "cross_validate_grid", "SweepResult", "FitFailedError",
           "CONVENIENCE_KEYS", "rwpi_radius", "RWPIResult"]
