"""The ``simt`` codelet family: RaijinCL's six GEMM codelets (NN/NT/TN x consecutive/offset elements,
and TT beside them)
with local memory and images per operand, tiles, vectors, work-group shapes, double buffering, padded
local arrays, unroll and multiply-add choices, and build options as parameters."""

from ..registry import Family, register
from . import space
from .check import check
from .params import SimtParams
from .render import render

FAMILY = register(Family(SimtParams.family, SimtParams, check, render, space.space, weight=4.0,
                         sums_slices=True, merges_slices=True, reads_16bit=SimtParams.reads_16bit))

__all__ = ["FAMILY", "SimtParams", "check", "render"]
