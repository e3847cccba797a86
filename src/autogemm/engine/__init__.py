"""The call engine, below the public functions: a GEMM call's options and operands validated once
(``call``), the route that runs it chosen once per call signature (``dispatch``, ``resolved``), the routes
themselves (``routes``: one OpenCL device, several targets, the CUDA path for numpy operands and for CUDA
tensors) and the transfer machinery that moves host operands (``transfer``, ``operands``)."""

from .call import GemmCall, GemmKeywords, GemmOptions
from .dispatch import run_gemm

__all__ = ["GemmCall", "GemmKeywords", "GemmOptions", "run_gemm"]
