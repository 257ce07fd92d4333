"""Moved: the data checks are :mod:`drokit.validation` (issue 22: below the declarations that use them).  This module
re-exports its names for old imports."""

from ..validation import *  # noqa: F401,F403
