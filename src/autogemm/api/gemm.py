"""The public high-level call ``gemm``: on numpy arrays (blocking, the result in host memory) or on
``pyopencl`` arrays (enqueued on their queue, returning at once), or on CUDA tensors. It builds the call's
options and hands them to the engine (``engine.dispatch``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine import GemmKeywords, GemmOptions, run_gemm
from ..engine.dispatch import clear_calls
from ..engine.operands import Matrix
from ..engine.routes.host_blas import plain_product
from ..runtime.opencl.memory import reports_full_memory

if TYPE_CHECKING:
    from typing import Unpack  # (Python 3.11: annotations only)


def gemm(a: Matrix, b: Matrix, c: Matrix | None = None, **options: Unpack[GemmKeywords]) -> Matrix:
    """C = alpha op(A) op(B) + beta C on an OpenCL device, for arrays of one of the dtypes float32,
    float64, complex64, complex128, float16 and bfloat16 (``ml_dtypes.bfloat16``).

    Operands are numpy arrays or ``pyopencl.array.Array`` s, in any mix. With numpy arrays alone the call
    blocks and C is a numpy array. Where any operand is a device array, the call runs on that array's
    queue (in-order; all device operands of one context) and returns at once: C is then a device array
    (``c`` itself when it is one, else a new one) whose ``events`` hold the product's completion, so
    ``C.get()`` or ``C.finish()`` waits; numpy operands are uploaded first, without blocking. A numpy
    ``c`` is filled when the product is done (that call blocks). The pending ``events`` of the device
    operands, and ``wait_for``, are waited for on the device before anything reads or writes them.

    The options are keywords (``engine.GemmKeywords``), each with its default: ``alpha=1.0``,
    ``beta=0.0``, ``trans_a='N'``, ``trans_b='N'``, ``device=None``, ``config=None``, ``edge='auto'``,
    ``precision=None``, ``out_dtype=None``, ``wait_for=None``, ``devices=None``, ``split=None``,
    ``backend='auto'``, ``stream=None`` (a plain ``gemm(a, b)`` of numpy arrays that the host's BLAS took
    before costs about as much over numpy's ``a.dot(b)`` as ``a @ b`` does, where its C part was built).

    float16 and bfloat16 products are accumulated in float32; C is of the operands' type, or float32
    when ``out_dtype`` is float32 or ``c`` is a float32 array. Tensor cores multiply them where the device
    has such instructions; elsewhere kernels read them as they are stored and compute in float32.

    ``precision`` None computes in the arrays' own precision. For float32 and complex64, 'tf32' lets
    tensor cores multiply operands rounded to TF32 (a relative error near 3e-4, as cuBLAS's TF32 mode)
    and '3xtf32' splits each operand into two TF32 parts and sums three products (about float32's
    error); on a device without such instructions both are computed exactly, as float32, and so is a
    '3xtf32' product shorter than the device profile's ``split_min_side`` (M, N) or ``split_min_depth``
    (K) where the call
    leaves the backend 'auto' and gives no ``config`` (bound by memory or launches, it gains nothing from
    the split). On a
    Hopper GPU a complex64 product of CUDA tensors in those precisions runs on the CUDA path as the real
    product of its embedding, built on the device (``blas.complex_embedding``); one of numpy arrays does so
    with ``backend='cuda'`` ('auto' keeps OpenCL's kernels, whose row blocks overlap the copies: sooner
    end to end up to 2048^3, as soon at 4096^3).

    ``trans_a`` and ``trans_b`` are 'N', 'T' or 'C' (conjugate transpose). Without ``c`` a new array is
    returned (and ``beta`` must be 0); with ``c`` the result is written into it, as BLAS does, and ``c`` is
    returned. Row-major, column-major (Fortran-ordered) and strided 2-D views are accepted, device arrays
    with their offsets. ``device`` is a ``Device`` or a specification (see ``autogemm devices``);
    ``config`` a kernel configuration (``SimtParams``, ``CpuParams``, ...; default: from the device's
    profile); ``edge`` chooses how sizes that are not whole tiles are handled ('auto', 'pad', 'guard').
    Every argument is checked before anything is enqueued; on an error the caller's arrays are unchanged.

    ``devices`` shares one product of numpy arrays among several targets by rows of C: 'all' (every GPU
    and the host) or a list of device specifications and 'host' (numpy's BLAS on this machine's CPU).
    ``split`` (a ``Split``, one share per target in that order) says how many of its parts each computes;
    by default the GPUs share the rows evenly and the host computes none unless it is the only target.
    Each device computes its rows on its own queue while the host computes its own; the call blocks.

    ``backend`` 'auto' runs the product on the CUDA path where the device is a Hopper GPU the CUDA
    driver sees too and the dtype is one whose fastest kernels only CUDA reaches (16-bit, TF32, 3xTF32,
    float64, complex128; numpy arrays; ``engine.routes.cuda_host``), else on OpenCL; 'opencl' or 'cuda' asks for
    one ('cuda' raises an error saying why a call cannot run there).

    CUDA tensors (torch, cupy, jax: anything exporting DLPack from a CUDA GPU) are multiplied on the
    CUDA path where they lie, without copies (``engine.routes.cuda_tensors``): the call enqueues the product on
    ``stream`` (a handle, or a torch or cupy stream; by default the library's current stream) and
    returns at once, with ``c`` or a new tensor of ``a``'s library. Every operand must then be one;
    float32 and complex64 take ``precision`` 'tf32' or '3xtf32'.
    """
    if c is None and not options:           # (the plainest call: the host's BLAS took such operands before)
        done = plain_product(a, b)
        if done is not None:
            return done
    return _run(a, b, c, GemmOptions.given("gemm", options))


@reports_full_memory
def _run(a: Matrix, b: Matrix, c: Matrix | None, options: GemmOptions) -> Matrix:
    """``gemm``'s call on the engine, the driver's out-of-memory errors said plainly."""
    return run_gemm(a, b, c, None, options)


def clear_plans() -> None:
    """Forget every cached plan and every resolved call, and free the device buffers and the page-locked
    host memory kept for later calls. A plan keeps its temporaries, and the memory of its last call's
    operands (so that a repeated call sets no argument again): after this, both are freed once no call in
    flight still uses them. For a device whose memory (or a host whose page-locked memory, up to
    ``Thresholds.pinned_max_bytes``) is needed elsewhere."""
    clear_calls()
