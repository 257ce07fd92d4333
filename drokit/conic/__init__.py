"""drokit's sparse conic-program form (:class:`ConicProgram`) and its vectorized builder."""

from .builder import Affine, ProgramBuilder
from .export import to_cvxpy, to_picos
from .program import CONE_KINDS, ConeBlock, ConicProgram

__all__ = ["Affine", "ProgramBuilder", "ConeBlock", "ConicProgram", "CONE_KINDS", "to_cvxpy", "to_picos"]
