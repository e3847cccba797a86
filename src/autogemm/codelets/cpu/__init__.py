"""The ``cpu`` codelet family: for CPU OpenCL devices, one work-item a work-group holding a block of C
in vector registers, B's rows read as vectors and A's values broadcast, after the micro-kernels of CPU
BLAS libraries (no local memory, no barriers: a CPU's caches do what local memory does on a GPU)."""

from ..registry import Family, register
from . import space
from .check import check
from .params import CpuParams, fit
from .render import render

FAMILY = register(Family(CpuParams.family, CpuParams, check, render, space.space, fit=fit, weight=1.0))

__all__ = ["CpuParams", "FAMILY", "check", "render"]
