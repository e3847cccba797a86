"""The routines: GEMM plans over the codelets, and their defaults until a device is tuned."""

from .defaults import default_params
from .launch_plan import EDGES, LaunchPlan
from .problem import GemmProblem, Op

__all__ = ["EDGES", "LaunchPlan", "GemmProblem", "Op", "default_params"]
