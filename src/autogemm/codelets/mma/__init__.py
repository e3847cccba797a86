"""The ``nvidia_mma`` codelet family: warps multiply on the tensor cores through ``mma.sync`` in inline
PTX (or, to test the kernel around it on any device, an emulation of the instruction in local memory)."""

from .check import check, ptx_problem
from .params import OPERANDS, SHAPES, MmaParams
from .render import render

__all__ = ["OPERANDS", "SHAPES", "MmaParams", "check", "ptx_problem", "render"]
