"""The public calls: ``gemm`` and ``matmul`` on numpy or pyopencl arrays."""

from .gemm import gemm
from .matmul import matmul

__all__ = ["gemm", "matmul"]
