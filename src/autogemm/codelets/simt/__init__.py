"""The ``simt`` codelet family: RaijinCL's six GEMM codelets (NN/NT/TN x consecutive/offset elements)
with local memory and images per operand, tiles, vectors, work-group shapes, double buffering, padded
local arrays, unroll and multiply-add choices, and build options as parameters."""

from .check import check
from .params import SimtParams
from .render import render
from .space import sample, space

__all__ = ["SimtParams", "check", "render", "sample", "space"]
