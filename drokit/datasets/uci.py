"""Sixteen UCI classification datasets with categorical (and some numerical) features, shipped with drokit.

``load(name)`` returns ``(X, y)`` for the benchmarks of Selvi et al. (NeurIPS 2022), Belbasi, Selvi &
Wiesemann ("It's All in the Mix") and Sun et al. (AISTATS 2025).  The CSV files and their
``manifest.json`` live in ``drokit/datasets/data/uci/``, so no network access is needed.  The data come
from the UCI Machine Learning Repository and are licensed CC BY 4.0 (see that folder's ``README.md``
for the creators of each dataset).

Where the files are looked for, in this order:

1. the ``data_home`` argument of :func:`load`;
2. the directory in the environment variable ``DROKIT_DATA``;
3. the copy inside the installed package.

A file found in 1. or 2. must have the sha256 that the packaged ``manifest.json`` records; otherwise
:func:`load` raises :class:`~drokit.exceptions.DataError`.  The packaged manifest is the single source
of truth for names, column typing and checksums (a ``manifest.json`` in ``data_home`` / ``DROKIT_DATA``
is read only if the packaged one is missing).

Preprocessing
-------------
``preprocessing="raw"``: every row; every feature column (identifier and ``split`` columns removed);
numerical columns as ``float64``; categorical columns as pandas ``category`` with the original string
codes as levels (observed levels, sorted); missing values kept (``NaN``); ``y`` is the target column as
strings, unchanged.

``preprocessing="paper"`` (default): the preprocessing of Sun et al. (AISTATS 2025, Appendix C), which
follows Selvi et al. (2022):

* ``y`` is the manifest's ``binary_task``: 1 for its ``positive`` class, 0 otherwise (majority class
  vs rest for the multi-class sets); ``y.name`` is ``"<target>=<positive>"``.  Which class is
  "positive" is a sign convention only.
* identifier and ``split`` columns are dropped;
* categorical values are lower-cased, a missing categorical value becomes its own level ``"missing"``
  (in ``voting`` that level is UCI's ``?``, which means "neither yea nor nay", not "unknown"), and the
  column is a ``category`` whose levels are the values observed in the returned rows;
* a missing numerical value becomes the column median (over the returned rows); numerical columns are
  ``float64``;
* features with a single level / a constant value are dropped (after the steps above);
* dataset-specific rules (all from the manifest's ``notes``):

  - **balance-scale**: the 49 ``B`` (balanced) rows are dropped; L (=1) vs R (=0);
  - **hayes-roth**: only the 132 rows of UCI's training file; ``hobby`` (random by design) is dropped
    as well as the identifier ``name``;
  - **cylinder-bands**: ``timestamp``, ``cylinder_number``, ``customer`` and ``job_number`` (record
    keys) are dropped; after lower-casing, ``ink_color`` and ``cylinder_division`` are constant and
    dropped by the general rule;
  - **online-shoppers**: ``OperatingSystems``, ``Browser``, ``Region`` and ``TrafficType`` (integer
    codes, categorical for UCI) are kept as numbers;
  - **audiology**: train and test files merged (N=226), but the 7 two-level attributes that are
    constant within the 200 rows of UCI's training file are dropped (this reproduces Sun et al.'s
    m=62 and c=85 exactly; none of them is constant over all 226 rows).

Numerical features are **not standardized** by default: standardizing with statistics of the whole file
leaks the test rows into training.  Pass ``standardize=True`` for the paper's z-scoring over the returned
rows (sample standard deviation), or standardize inside your own pipeline.

Resulting sizes (N rows, n numerical, m categorical features; c = sum over the categorical features
of (levels - 1), i.e. the dummy columns, "missing" counted as a level), next to sun2025 Table 1:

================  ======  ===  ===  ===  ==========================  =================================
dataset               N     n    m    c  sun2025 (N, n, m, c)        difference
================  ======  ===  ===  ===  ==========================  =================================
audiology            226    0   62   85  226, -, 62, 85              none
balance-scale        576    0    4   16  576, -, 4, 16               none
breast-cancer        286    0    9   34  286, -, 9, 32               c (a)
car                 1728    0    6   15  1728, -, 6, 15              none
hayes-roth           132    0    3    9  132, -, 3, 9                none
tic-tac-toe          958    0    9   18  958, -, 9, 18               none
spect                267    0   22   22  267, -, 22, 22              none
voting               435    0   16   32  435, -, 16, 32              none
credit-approval      690    6    9   36  690, 6, 9, 36               none
cylinder-bands       540   19   14   43  539, 19, 14, 43             N (b)
hepatitis            155    6   13   23  155, 6, 13, 23              none
nursery            12960    0    8   19  12960, -, 8, 26             c (c)
online-shoppers    12330   14    3   12  12330, 14, 3, 14            c (c)
german-credit       1000    7   13   41  not in the paper            -
lymphography         148    0   18   41  (Selvi: 148, -, 18, 42)     c (d)
kr-vs-kp            3196    0   36   37  (Selvi: 3196, -, 36, 37)    none
================  ======  ===  ===  ===  ==========================  =================================

n and m agree with Sun et al. on all 13 of their datasets, N on 12 of 13, c on 10 of 13.

(a) node_caps and breast_quad have missing values; not counting "missing" as a level gives the
    paper's 32 (voting, hepatitis, credit-approval and cylinder-bands match only when it is counted).
(b) both papers use 539 rows.  Selvi et al. (Appendix D) mention removing "erroneous rows"; which row
    is not known (the file has no duplicate row), so all 540 are kept.
(c) the paper's c is not sum(levels - 1) here: nursery's 8 features have 3+5+4+4+3+2+3+3 levels (19);
    online-shoppers' Month, VisitorType, Weekend have 10, 3, 2 levels (12).
(d) Selvi et al. (and Belbasi et al.) report 42 dummy columns; the levels that occur in the file give
    41 (their count presumably includes a level that lymphography.names lists but no record has).
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Union

import pandas as pd

from ..exceptions import DataError, ParameterError

ENV_VAR = "DROKIT_DATA"
MANIFEST = "manifest.json"
MISSING_LEVEL = "missing"
PREPROCESSING = ("paper", "raw")

# Dataset-specific rules of the paper preprocessing (see the module docstring).
_PAPER_DROP_CLASSES: dict[str, list[str]] = {"balance-scale": ["B"]}
_PAPER_TRAIN_ROWS_ONLY = {"hayes-roth"}
_PAPER_DROP_COLUMNS: dict[str, list[str]] = {
    "hayes-roth": ["hobby"],
    "cylinder-bands": ["timestamp", "cylinder_number", "customer", "job_number"],
}
_PAPER_AS_NUMERICAL: dict[str, list[str]] = {
    "online-shoppers": ["OperatingSystems", "Browser", "Region", "TrafficType"],
}
_PAPER_DROP_CONSTANT_IN_TRAIN = {"audiology"}

PathLike = Union[str, "os.PathLike[str]"]


# ----------------------------------------------------------------------------------------- locations
def packaged_data_dir() -> Path:
    """Directory of the copy shipped inside the installed package."""
    return Path(str(resources.files("drokit.datasets") / "data" / "uci"))


def _search_dirs(data_home: PathLike | None) -> list[tuple[str, Path | None]]:
    """``(label, directory or None)`` in lookup order; ``None`` means "not given"."""
    env = os.environ.get(ENV_VAR) or None
    return [
        ("data_home argument", Path(data_home).expanduser() if data_home is not None else None),
        (f"${ENV_VAR}", Path(env).expanduser() if env else None),
        ("packaged copy", packaged_data_dir()),
    ]


def _how_to_get(filename: str) -> str:
    return (f"drokit ships {filename} in drokit/datasets/data/uci/; reinstall drokit "
            f"(pip install --force-reinstall drokit) or copy that file from a drokit source checkout "
            f"into a directory and pass it as data_home=... or set {ENV_VAR}")


def _not_found(filename: str, tried: Sequence[str]) -> DataError:
    looked = "\n".join(f"  - {t}" for t in tried)
    return DataError(f"{filename} was not found. Looked in, in this order:\n{looked}\n"
                     f"To get it: {_how_to_get(filename)}.")


def _describe(label: str, directory: Path | None, filename: str) -> str:
    if directory is None:
        return f"{label}: not set"
    return f"{label}: {directory / filename}"


# ----------------------------------------------------------------------------------------- manifest
@functools.cache
def _read_manifest_cached(path: str, mtime_ns: int, size: int) -> dict[str, dict]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _read_manifest(path: Path) -> dict[str, dict]:
    stat = path.stat()  # the key includes mtime and size, so an edited manifest is re-read
    return _read_manifest_cached(str(path), stat.st_mtime_ns, stat.st_size)


def _manifest(data_home: PathLike | None = None) -> dict[str, dict]:
    """The packaged manifest (authoritative); data_home / $DROKIT_DATA only if it is missing."""
    dirs = _search_dirs(data_home)
    order = [dirs[2], dirs[0], dirs[1]]
    tried = []
    for label, directory in order:
        tried.append(_describe(label, directory, MANIFEST))
        if directory is not None and (directory / MANIFEST).is_file():
            return _read_manifest(directory / MANIFEST)
    raise _not_found(MANIFEST, tried)


def list_datasets() -> list[str]:
    """Names accepted by :func:`load`, sorted."""
    return sorted(_manifest())


def _resolve_name(name: str, manifest: dict[str, dict]) -> str:
    names = sorted(manifest)
    if not isinstance(name, str):
        raise ParameterError(f"dataset name must be a string, got {type(name).__name__}; "
                             f"valid names: {', '.join(names)}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key in names:
        return key
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ParameterError(f"unknown dataset {name!r}.{hint} Valid names: {', '.join(names)}.")


def dataset_info(name: str) -> dict:
    """The manifest entry of ``name`` (a copy): file, columns, typing, binary task, notes, licence, ..."""
    manifest = _manifest()
    return copy.deepcopy(manifest[_resolve_name(name, manifest)])


# ----------------------------------------------------------------------------------------- files
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _locate(info: dict, data_home: PathLike | None) -> Path:
    """Path of the dataset's CSV, following the lookup order; checks sha256 outside the package."""
    filename = info["file"]
    tried = []
    for label, directory in _search_dirs(data_home):
        tried.append(_describe(label, directory, filename))
        if directory is None:
            continue
        path = directory / filename
        if not path.is_file():
            continue
        if label != "packaged copy":
            actual = _sha256(path)
            if actual != info["sha256"]:
                raise DataError(f"{path} (from the {label}) has sha256 {actual}, but the manifest "
                                f"expects {info['sha256']}: the file is corrupt or a different "
                                f"version. Replace it with drokit's copy ({_how_to_get(filename)}), "
                                f"or remove it to use the packaged copy.")
        return path
    raise _not_found(filename, tried)


def _read_csv(info: dict, path: Path) -> pd.DataFrame:
    split = [info["split_column"]] if info.get("split_column") else []
    text = info["categorical_columns"] + [info["target"]] + info["id_columns"] + split
    frame = pd.read_csv(path, dtype={c: str for c in text}, keep_default_na=False, na_values=[""])
    if list(frame.columns) != list(info["columns"]) or len(frame) != info["n_rows"]:
        raise DataError(f"{path} has {len(frame)} rows and columns {list(frame.columns)}; the manifest "
                        f"expects {info['n_rows']} rows and columns {info['columns']}")
    return frame


# ----------------------------------------------------------------------------------------- load
def load(name: str, *, data_home: PathLike | None = None, preprocessing: str = "paper",
         as_frame: bool = True, standardize: bool = False):
    """Load a UCI dataset as ``(X, y)``.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (case, ``_`` and ``-`` are not significant).
    data_home : str or os.PathLike or None
        Directory searched first for the CSV; then ``$DROKIT_DATA``; then the packaged copy.
    preprocessing : {"paper", "raw"}
        ``"paper"`` (Sun et al. 2025 / Selvi et al. 2022, binary ``y`` in {0, 1}, no missing values) or
        ``"raw"`` (manifest typing, missing values kept, original target); see the module docstring for
        the exact rules and the resulting sizes.
    as_frame : bool
        ``True`` returns a DataFrame (numerical ``float64`` and categorical ``category`` columns) and a
        Series; ``False`` returns numpy arrays (``X`` of dtype object, so the estimators then need
        ``categorical_features``).
    standardize : bool
        Z-score the numerical columns over the returned rows (mean 0, sample std 1; constant-zero-std
        columns are only centred).  Off by default: doing it before a train/test split leaks test
        statistics.  Only with ``preprocessing="paper"``.

    Returns
    -------
    X : pandas.DataFrame of shape (N, n + m)
        Columns in file order, index 0..N-1.
    y : pandas.Series of shape (N,)
        ``paper``: int 0/1 named ``"<target>=<positive class>"``; ``raw``: the target column as strings.
    """
    manifest = _manifest(data_home)
    key = _resolve_name(name, manifest)
    if preprocessing not in PREPROCESSING:
        raise ParameterError(f"preprocessing must be one of {PREPROCESSING}, got {preprocessing!r}")
    if standardize and preprocessing != "paper":
        raise ParameterError("standardize=True needs preprocessing='paper' (raw data keeps NaN)")
    info = manifest[key]
    frame = _read_csv(info, _locate(info, data_home))
    if preprocessing == "raw":
        X, y = _raw(info, frame)
    else:
        X, y = _paper(key, info, frame, standardize=standardize)
    if as_frame:
        return X, y
    return X.to_numpy(dtype=object), y.to_numpy()


def _as_category(column: pd.Series) -> pd.Series:
    """``category`` dtype whose levels are the observed non-missing values, sorted."""
    levels = sorted(column.dropna().unique().tolist())
    return column.astype(pd.CategoricalDtype(levels))


def _feature_columns(info: dict) -> list[str]:
    features = set(info["numerical_columns"]) | set(info["categorical_columns"])
    return [c for c in info["columns"] if c in features]


def _raw(info: dict, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    categorical = set(info["categorical_columns"])
    X = pd.DataFrame({c: _as_category(frame[c]) if c in categorical else frame[c].astype("float64")
                      for c in _feature_columns(info)})
    y = frame[info["target"]].rename(info["target"])
    return X, y


def _paper(key: str, info: dict, frame: pd.DataFrame, *,
           standardize: bool) -> tuple[pd.DataFrame, pd.Series]:
    task = info["binary_task"]
    target = frame[info["target"]]
    split = info.get("split_column")

    keep = pd.Series(True, index=frame.index)
    if key in _PAPER_DROP_CLASSES:
        keep &= ~target.isin(_PAPER_DROP_CLASSES[key])
    if key in _PAPER_TRAIN_ROWS_ONLY and split:
        keep &= frame[split] == "train"
    train_rows = frame[split] == "train" if split else pd.Series(True, index=frame.index)

    as_numerical = set(_PAPER_AS_NUMERICAL.get(key, []))
    numerical = set(info["numerical_columns"]) | as_numerical
    categorical = set(info["categorical_columns"]) - as_numerical
    dropped = set(_PAPER_DROP_COLUMNS.get(key, []))
    if key in _PAPER_DROP_CONSTANT_IN_TRAIN:
        in_train = frame.loc[train_rows, sorted(categorical)]
        levels = in_train.apply(lambda s: s.str.lower()).fillna(MISSING_LEVEL).nunique()
        dropped |= set(levels.index[levels <= 1])
    columns = [c for c in _feature_columns(info) if c not in dropped]

    sub = frame.loc[keep, columns].reset_index(drop=True)
    out = {}
    for c in columns:  # loop over columns, vectorized over rows
        if c in categorical:
            out[c] = _as_category(sub[c].str.lower().fillna(MISSING_LEVEL))
        else:
            col = pd.to_numeric(sub[c], errors="raise").astype("float64")
            out[c] = col.fillna(col.median())
    X = pd.DataFrame(out, index=sub.index)
    constant = [c for c in X.columns if X[c].nunique(dropna=False) <= 1]
    X = X.drop(columns=constant)
    if standardize:
        for c in X.columns:
            if c in numerical:
                sd = X[c].std()
                X[c] = (X[c] - X[c].mean()) / (sd if sd > 0 else 1.0)

    positive = str(task["positive"])
    y = (target[keep].reset_index(drop=True) == positive).astype("int64")
    y.name = f"{info['target']}={positive}"
    if y.nunique() != 2:
        raise DataError(f"{key}: the binary task leaves a single class ({y.unique().tolist()})")
    return X, y


__all__ = ["ENV_VAR", "dataset_info", "list_datasets", "load", "packaged_data_dir"]
