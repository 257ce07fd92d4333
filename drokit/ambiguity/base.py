"""The protocol for ambiguity sets built from existing ones.

drokit compiles two families of ambiguity sets directly: :class:`~drokit.Wasserstein` balls and their
:class:`~drokit.Intersection`.  A new set that *reduces* to one of them once the training data are known
-- a ball whose metric or radius is computed from the data, a ball around a transformed sample, ... --
subclasses :class:`AmbiguitySet` and implements :meth:`AmbiguitySet.build`.  The estimators build it at
``fit`` (on the training fold only, so cross-validation never sees the test fold), keep the built set in
``ambiguity_`` and evaluate the fitted model (``dk.worst_case``) on that same set.
"""

from __future__ import annotations

from ..exceptions import ParameterError
from ..params import ParamsMixin

#: how many ``build`` calls may chain (a set built from a set built from ...)
MAX_BUILD_DEPTH = 8


class AmbiguitySet(ParamsMixin):
    """Base class of ambiguity sets that reduce to a :class:`~drokit.Wasserstein` ball or an
    :class:`~drokit.Intersection` given the training data.

    Subclasses store their ``__init__`` arguments unchanged (scikit-learn's convention, so
    ``get_params`` / ``set_params`` / ``GridSearchCV`` reach them as ``ambiguity__<name>``) and implement
    :meth:`build`.
    """

    def build(self, X, y, schema, sample_weight=None):
        """The set for the training data: a :class:`~drokit.Wasserstein`, an
        :class:`~drokit.Intersection` or another :class:`AmbiguitySet` (built in turn).

        ``X, y`` are the user's training data as given to ``fit``; ``schema`` the
        :class:`~drokit.schema.FeatureSchema` drokit inferred from them (column roles, levels);
        ``sample_weight`` the fit's sample weights or ``None``."""
        raise NotImplementedError(f"{type(self).__name__} must implement build(X, y, schema, sample_weight)")


def build_ambiguity(ambiguity, X, y, schema, sample_weight=None):
    """Reduce ``ambiguity`` to a directly compiled set by calling :meth:`AmbiguitySet.build` until it
    is not an :class:`AmbiguitySet` any more (at most :data:`MAX_BUILD_DEPTH` times)."""
    for _ in range(MAX_BUILD_DEPTH):
        if not isinstance(ambiguity, AmbiguitySet):
            return ambiguity
        if X is None:
            raise ParameterError(f"{type(ambiguity).__name__} is built from the training data: fit a model "
                                 f"(or bind the problem to data) before asking for its ball")
        ambiguity = ambiguity.build(X, y, schema, sample_weight)
    raise ParameterError(f"ambiguity set builds did not reach a Wasserstein ball or an Intersection after "
                         f"{MAX_BUILD_DEPTH} steps (a build returning itself?)")
