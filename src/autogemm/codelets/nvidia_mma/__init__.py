"""The ``nvidia_mma`` codelet family: warps multiply on the tensor cores through ``mma.sync`` in inline
PTX (or, to test the kernel around it on any device, an emulation of the instruction in local memory).
Its weight among the families searched is the largest: where a device has tensor cores for a dtype,
its fastest kernels are there."""

from ..registry import Family, register
from . import space
from .check import check, ptx_problem
from .params import OPERANDS, SHAPES, MmaParams
from .render import render

# its guarded kernels store C an element at a time, so a short K runs faster packed and padded than
# guarded
FAMILY = register(Family(MmaParams.family, MmaParams, check, render, space.space,
                         MmaParams.fitted, weight=8.0, reads_16bit=lambda params: True, short_k_guards=False,
                         sums_slices=True, merges_slices=True, aligned_rows=True))

__all__ = ["FAMILY", "OPERANDS", "SHAPES", "MmaParams", "check", "ptx_problem", "render"]
