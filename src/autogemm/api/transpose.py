"""The public call ``transpose``: an out-of-place (conjugate) transpose on numpy or ``pyopencl`` arrays."""

from __future__ import annotations

from ..engine.operands import Matrix
from ..engine.transpose import run_transpose
from ..runtime import Device
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.memory import reports_full_memory


@reports_full_memory
def transpose(a: Matrix, out: Matrix | None = None, *, conjugate: bool = False,
              device: Device | str | int | None = None, wait_for: list[ocl.Event] | None = None) -> Matrix:
    """A^T (A^H with ``conjugate``, for complex dtypes) of a matrix, or of each matrix of a 3-D stack, for
    every dtype autogemm has (float32, float64, complex64, complex128, float16, bfloat16).

    ``a`` and ``out`` are numpy or ``pyopencl`` arrays of any row- or column-major layout (views, Fortran
    order, device arrays with offsets). Without ``out`` a new row-major array is returned; with it, of
    shape a.shape with its last two dimensions swapped and of a's dtype, the result is written there (it
    must not overlap ``a``). As with ``gemm``, numpy arrays alone block and device arrays make the call
    return at once, ``out.events`` holding its completion.
    """
    return run_transpose(a, out, conjugate=conjugate, device=device, wait_for=wait_for)
