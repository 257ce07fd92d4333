"""Moved: the bound instance is :mod:`drokit.instance` (issue 22: the core sits below every layer that uses it).
This module re-exports its names for old imports."""

from ..instance import *  # noqa: F401,F403
from ..instance import DROInstance, LabelFamily  # noqa: F401
