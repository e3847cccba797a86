"""The ``gemv`` codelet family: y = alpha op(A) x + beta y for a row-major A read as stored (layout N)
or transposed (layout T), with the work-group's shape, outputs per work-item, unrolling and the split of
the reduction over work-groups as parameters (RaijinCL tunes GEMV with codelets of its own too)."""

from ..registry import GEMV, Family, register
from . import space
from .check import check
from .params import GemvParams
from .render import GEMV_SIGNATURE, render

FAMILY = register(Family(GemvParams.family, GemvParams, check, render, space.space,
                         routine=GEMV))

__all__ = ["FAMILY", "GEMV_SIGNATURE", "GemvParams", "check", "render"]
