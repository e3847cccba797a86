"""The public call ``gemv``: y = alpha op(A) x + beta y on numpy or ``pyopencl`` arrays."""

from __future__ import annotations

from ..codelets.gemv import GemvParams
from ..engine.gemv import run_gemv
from ..engine.operands import Matrix
from ..runtime import Device
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.memory import reports_full_memory


@reports_full_memory
def gemv(a: Matrix, x: Matrix, y: Matrix | None = None, *, alpha: complex | float = 1.0,
         beta: complex | float = 0.0, trans: str = "N", device: Device | str | int | None = None,
         config: GemvParams | None = None, wait_for: list[ocl.Event] | None = None) -> Matrix:
    """y = alpha op(A) x + beta y on an OpenCL device, for A of float32, float64, complex64, complex128,
    float16 or bfloat16, and vectors x and y of the same dtype (16-bit ones are computed in float32).

    ``trans`` is 'N' (op(A) = A), 'T' (A^T) or 'C' (the conjugate transpose). A is any 2-D array whose
    strides are row- or column-major (Fortran order, views, device arrays with offsets); x and y are 1-D,
    with any positive stride (host arrays with another are copied first). As with ``gemm``, numpy
    operands alone block and give a numpy y; where any operand is a device array the call is enqueued on
    its queue and returns at once with a device y whose ``events`` hold the product's completion.
    Without ``y`` a new vector is returned (``beta`` must be 0); with it, it is written and returned. As in
    BLAS, beta = 0 never reads y and alpha = 0 does not read A or x. ``config`` is a ``GemvParams`` of
    the layout the problem reads A in (default: from the device's profile). Every argument is checked
    before anything is enqueued.
    """
    return run_gemv(a, x, y, alpha=alpha, beta=beta, trans=trans, device=device, config=config, wait_for=wait_for)
