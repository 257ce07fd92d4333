"""The inputs of a sweep checked and prepared: the grid and its convenience keys, ``error_score``, the
splits and the scorer.

Convenience grid keys (besides any ``set_params`` name such as ``ambiguity__radius``):

* ``radius``: the Wasserstein radius ``eps`` (``ambiguity__radius``);
* ``theta``: the likelihood-ratio level of sun2025 §3.3, mapped to ``eps = -log(theta)``
  (:func:`drokit.radius_from_theta`); exclusive with ``radius``;
* ``kappa``: the label-flip cost of the ground metric (``ambiguity__metric__label__kappa``).

A ``None`` ambiguity, metric or label cost on the path of a grid key stands for its default object
(``Wasserstein()``, ``GroundMetric()``, ``LabelCost()``): ``get_params(deep=True)`` lists its nested names
and ``set_params`` stores it before setting them (:mod:`drokit.params`), as in ``GridSearchCV``.

The splits are drawn once, in the calling process, from the seed (:func:`make_splits`); each fit then
works on its split (:mod:`drokit.model_selection.execution`).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, Callable, Collection, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid, RepeatedKFold, RepeatedStratifiedKFold

from ..ambiguity import Wasserstein
from ..exceptions import ParameterError
from ..metrics import LabelCost, radius_from_theta
from ..models import DROClassifier, DRORegressor
from .result import Split, describe

#: convenience grid keys -> the nested parameter they set on a drokit estimator
CONVENIENCE_KEYS = {"radius": "ambiguity__radius", "theta": "ambiguity__radius",
                    "kappa": "ambiguity__metric__label__kappa"}

Grid = Union[Mapping[str, Sequence], Sequence[Mapping[str, Sequence]]]


def nested_choice(radius=None, kappa=None) -> Dict[str, float]:
    """The ``set_params`` names of a chosen radius and label cost (``None``: not chosen), e.g.
    ``{"ambiguity__radius": 0.1, "ambiguity__metric__label__kappa": 1.0}``."""
    chosen = {} if radius is None else {CONVENIENCE_KEYS["radius"]: float(radius)}
    if kappa is not None:
        chosen[CONVENIENCE_KEYS["kappa"]] = float(kappa)
    return chosen


# ------------------------------------------------------------------------------------ validation
def check_error_score(error_score):
    if isinstance(error_score, str) and error_score in ("nan", "raise"):
        return float("nan") if error_score == "nan" else "raise"
    if isinstance(error_score, Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise ParameterError(f"error_score must be 'nan', 'raise' or a number, got {error_score!r}")


def own_convenience_names(estimator) -> set:
    """The convenience keys (``radius``, ``theta``, ``kappa``) that ``estimator`` has as parameters of its
    own (a user's wrapper with a ``kappa`` argument): those grid keys set the estimator's parameter, not
    the nested drokit one."""
    return set(CONVENIENCE_KEYS) & set(estimator.get_params(deep=False))


def check_grid(grid: Grid, own: Collection[str] = ()) -> List[Dict[str, list]]:
    """The grid as a non-empty list of ``{name: non-empty list of values}``; the values of convenience keys
    (except the estimator's ``own`` parameters of those names) are validated."""
    grids = [grid] if isinstance(grid, Mapping) else grid
    if not isinstance(grids, Sequence) or isinstance(grids, str) or not grids:
        raise ParameterError(f"grid must be a non-empty {{name: [values]}} dict (or a list of such "
                             f"dicts), got {grid!r}")
    out = []
    for g in grids:
        if not isinstance(g, Mapping) or not g:
            raise ParameterError(f"grid must map parameter names to lists of values; got the empty "
                                 f"or invalid entry {g!r}")
        checked = {}
        for name, values in g.items():
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise ParameterError(f"grid[{name!r}] must be a list of values, got {values!r}")
            values = list(values)
            if not values:
                raise ParameterError(f"grid[{name!r}] has no values")
            checked[name] = values
        if "radius" in checked and "theta" in checked and not {"radius", "theta"} & set(own):
            raise ParameterError("grid has both 'radius' and 'theta'; theta sets the radius "
                                 "(radius = -log(theta)), give one of them")
        _check_convenience_values({k: v for k, v in checked.items() if k not in own})
        out.append(checked)
    return out


def _check_convenience_values(grid: Mapping[str, list]) -> None:
    """Radius, theta and kappa values are validated before any fit (ParameterError)."""
    for r in grid.get("radius", []):
        Wasserstein(radius=r).validated_radius()
    for t in grid.get("theta", []):
        radius_from_theta(t)
    for k in grid.get("kappa", []):
        LabelCost(kappa=k).validated_kappa()


def grid_candidates(grids: List[Dict[str, list]]) -> List[Dict[str, Any]]:
    """Every combination, keys in the grid's order (``ParameterGrid`` order of combinations)."""
    out = []
    for g in grids:
        for combo in ParameterGrid(g):
            out.append({name: combo[name] for name in g})
    return out


def drokit_prefix(estimator) -> str:
    """``""`` for a drokit estimator; ``"step__"`` for a meta-estimator holding exactly one."""
    if isinstance(estimator, (DROClassifier, DRORegressor)):
        return ""
    inner = [name for name, value in estimator.get_params(deep=True).items()
             if isinstance(value, (DROClassifier, DRORegressor))]
    return inner[0] + "__" if len(inner) == 1 else ""


def translate(params: Mapping[str, Any], prefix: str, own: Collection[str] = ()) -> Dict[str, Any]:
    """Grid keys -> ``set_params`` names; ``theta`` becomes the radius ``-log(theta)``.  A convenience key
    that is one of the estimator's ``own`` parameters is passed through unchanged."""
    out, source = {}, {}
    for name, value in params.items():
        convenience = name in CONVENIENCE_KEYS and name not in own
        target = prefix + CONVENIENCE_KEYS[name] if convenience else name
        if target in out:
            raise ParameterError(f"grid keys {source[target]!r} and {name!r} both set {target!r}; "
                                 f"give one of them")
        out[target], source[target] = (radius_from_theta(value) if convenience and name == "theta"
                                       else value), name
    return out


def check_names(estimator, translated: List[Dict[str, Any]], candidates) -> None:
    """Every grid name must be a parameter of the estimator; each combination must apply."""
    valid = estimator.get_params(deep=True)
    for params, original in zip(translated, candidates):
        for (target, _), key in zip(params.items(), original):
            if target not in valid:
                via = "" if target == key else f" (grid key {key!r})"
                raise ParameterError(f"{type(estimator).__name__} has no parameter {target!r}{via}; "
                                     f"its parameters are {sorted(valid)}")
        try:
            clone(estimator).set_params(**params)
        except (ValueError, AttributeError, TypeError) as exc:
            raise ParameterError(f"cannot set {describe(original)} on "
                                 f"{type(estimator).__name__}: {exc}") from exc


def check_sample_weight(sample_weight, n_samples: int) -> Optional[np.ndarray]:
    """``sample_weight`` as a float array, checked as the estimators check it (one finite weight >= 0 per row, not
    all zero: :func:`drokit.models.problem.sample_probabilities`), or ``None``."""
    if sample_weight is None:
        return None
    from ..models.problem import sample_probabilities
    sample_probabilities(sample_weight, n_samples)
    return np.asarray(sample_weight, dtype=float)


def path_lines(candidates: List[Dict[str, Any]], path: str) -> List[List[int]]:
    """The candidates grouped into paths along the grid key ``path``: one list per combination of the other keys
    (in grid order), its candidates ordered by the ``path`` value from the largest down (a radius path starts where
    the worst-case set is largest).  Raises :class:`ParameterError` when ``path`` is not a key of every candidate or a
    value is not a number."""
    if not all(path in c for c in candidates):
        raise ParameterError(f"path={path!r} must be a key of the grid (of every combination), got the keys "
                             f"{sorted(set().union(*candidates))}")
    lines: Dict[tuple, List[int]] = {}
    for i, c in enumerate(candidates):
        if not isinstance(c[path], Real) or isinstance(c[path], bool):
            raise ParameterError(f"path={path!r} needs numbers, got {c[path]!r}")
        rest = tuple((k, repr(v)) for k, v in sorted(c.items()) if k != path)
        lines.setdefault(rest, []).append(i)
    return [sorted(line, key=lambda i: -float(candidates[i][path])) for line in lines.values()]


def warm_start_name(estimator, prefix: str) -> str:
    """The ``set_params`` name of the estimator's ``warm_start`` (``prefix``: the drokit step of a Pipeline); raises
    :class:`ParameterError` when it has none (a path warm-starts its fits)."""
    name = prefix + "warm_start"
    if name not in estimator.get_params(deep=True):
        raise ParameterError(f"a path sweep warm-starts the fits of a split: the estimator needs a warm_start "
                             f"parameter (drokit's estimators have one), and {type(estimator).__name__} has no "
                             f"{name!r}")
    return name


def make_splits(estimator, X, y, cv, repeats, seed) -> List[Split]:
    """The (train, test) index arrays, drawn once in this process."""
    if not (isinstance(repeats, Integral) and repeats >= 1):
        raise ParameterError(f"repeats must be a positive integer, got {repeats!r}")
    if isinstance(cv, Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ParameterError(f"cv must be at least 2 folds, got {cv!r}")
        kind = RepeatedStratifiedKFold if is_classifier(estimator) else RepeatedKFold
        splitter = kind(n_splits=int(cv), n_repeats=int(repeats), random_state=seed)
        return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y)]
    if repeats != 1:
        raise ParameterError("repeats applies to an integer cv only; repeat inside your splitter")
    split = cv.split(X, y) if hasattr(cv, "split") else cv
    splits = [(np.asarray(tr), np.asarray(te)) for tr, te in split]
    if not splits:
        raise ParameterError(f"cv produced no splits: {cv!r}")
    return splits


def resolve_scorer(estimator, scoring) -> Tuple[Callable, str]:
    """The scorer callable and a name for the table."""
    if scoring is None:
        if is_classifier(estimator) and hasattr(estimator, "predict_proba"):
            scoring = "neg_log_loss"
        else:
            return check_scoring(estimator, scoring=None), "score"
    name = scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "score")
    try:
        return check_scoring(estimator, scoring=scoring), name
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"invalid scoring {scoring!r}: {exc}") from None


def split_name(k: int, folds: Optional[int]) -> str:
    return f"split {k}" + (f" (repeat {k // folds}, fold {k % folds})" if folds else "")
