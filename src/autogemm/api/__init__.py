"""The public calls: ``gemm``, ``gemm_batched``, ``matmul``, ``gemv`` and ``transpose`` on numpy or pyopencl arrays, and the
four-step ``GemmPlan`` on device memory."""

from .batched import gemm_batched
from .gemm import gemm
from .gemv import gemv
from .matmul import matmul
from .plan import GemmPlan
from .transpose import transpose

__all__ = ["GemmPlan", "gemm", "gemm_batched", "gemv", "matmul", "transpose"]
