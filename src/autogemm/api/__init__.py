"""The public calls: ``gemm``, ``gemm_batched`` and ``matmul`` on numpy or pyopencl arrays."""

from .batched import gemm_batched
from .gemm import gemm
from .matmul import matmul

__all__ = ["gemm", "gemm_batched", "matmul"]
