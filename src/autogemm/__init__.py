"""autogemm: auto-tuned dense matrix multiplication (GEMM) for any OpenCL device."""

from .api import GemmPlan, clear_plans, gemm, gemm_batched, gemv, matmul, transpose
from .blas import GemmProblem, LaunchPlan, Op
from .codelets.gemv import GemvParams
from .codelets.simt import SimtParams
from .errors import (
                     ArgumentError,
                     AutogemmError,
                     BuildError,
                     ConfigError,
                     DeviceError,
                     DtypeError,
                     HostMemoryError,
                     ShapeError,
)
from .runtime import Device, context_for, context_for_queue, default_device, devices, find_device
from .shares.split import Split
from .version import __version__

__all__ = [
    "gemm", "gemm_batched", "gemv", "matmul", "transpose", "clear_plans", "GemmPlan", "LaunchPlan", "GemmProblem", "Op",
    "SimtParams", "GemvParams", "Split", "Device", "context_for", "context_for_queue", "default_device",
    "find_device", "devices", "AutogemmError", "ArgumentError", "BuildError", "ConfigError",
    "DeviceError", "DtypeError", "HostMemoryError", "ShapeError", "__version__",
]
