"""The public calls: ``gemm``, ``gemm_batched`` and ``matmul`` on numpy or pyopencl arrays, and the
four-step ``GemmPlan`` on device memory."""

from .batched import gemm_batched
from .gemm import gemm
from .matmul import matmul
from .plan import GemmPlan

__all__ = ["GemmPlan", "gemm", "gemm_batched", "matmul"]
