"""The public calls: ``gemm``, ``gemm_batched``, ``matmul``, ``gemv`` and ``transpose`` on numpy or pyopencl
arrays, and the four-step ``GemmPlan`` on device memory; ``clear_plans`` frees what the calls' cached plans
hold."""

from .batched import gemm_batched
from .gemm import clear_plans, gemm
from .gemm_plan import GemmPlan
from .gemv import gemv
from .matmul import matmul
from .transpose import transpose

__all__ = ["GemmPlan", "clear_plans", "gemm", "gemm_batched", "gemv", "matmul", "transpose"]
