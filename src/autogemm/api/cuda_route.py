"""Which runtime a call's product runs on, and its run on the CUDA path.

An NVIDIA GPU of compute capability 9.0 that the CUDA driver sees too (and the ``cuda`` extra installed)
has two ways in. NVIDIA's OpenCL compiles for sm_90, not sm_90a, so Hopper's wgmma and TMA are reached
through CUDA alone: there the dtypes ``blas.cuda_gemm.DEFAULTS`` names (16-bit operands, TF32, 3xTF32,
float64, complex128) run on the CUDA path, measured faster on the H100 (FP16 and BF16 about 2x, TF32
2.7x, float64 and complex128 1.1x to 1.3x the OpenCL kernels); float32 and complex64 stay on OpenCL,
which is as fast as cuBLAS for them. Where the device's profile has CUDA entries (``autogemm tune``
measured both backends), the one nearest a product says which backend was faster there and with which
CUDA configuration (``blas.cuda_gemm.cuda_choice``). ``backend`` 'opencl' or 'cuda' asks for one; 'cuda' says why a
call cannot run there instead of falling back.

On the CUDA path a call on numpy arrays copies its operands through page-locked memory kept by the
context (each upload enqueued once its copy is there, while the next is copied), runs the product and
copies C back the same way; the call blocks. From numpy to numpy, 'auto' keeps float64 and complex128
products on OpenCL, where the uploads, kernels and downloads of row blocks overlap (or the tiles of a
streamed product), which gains more than the CUDA kernels' speed (H100, ms, OpenCL against CUDA: DGEMM
4096^3 13.1 against 18.0, ZGEMM 4096^3 29.5 against 38.8, DGEMM 16384^3 335 against 497)."""

from __future__ import annotations

import math

import numpy as np

from ..blas.cuda_gemm import CudaParams, DeviceOperand, cuda_choice, cuda_plan, cuda_target, no_kernels
from ..blas.problem import Op
from ..blas.vectors import MAX_VECTORS
from ..dtypes import Dtype
from ..errors import ArgumentError, DeviceError
from ..runtime.cuda.driver import CUDA
from ..runtime.discovery import find_device
from ..shares.copying import parallel_copy
from ..shares.staging import result_pool
from .operands import Matrix, scalar
from .transfer import host_result
from .validation import validate_call

BACKENDS = ("auto", "opencl", "cuda")
#: Products smaller than this (m n k) stay on OpenCL: on the H100 its tensor-core DGEMM took 0.072 ms
#: at 1024^3 and the CUDA path 0.126 ms (the B operand laid out, three launches), while from 2048^3 on
#: the CUDA path was ahead (0.90x to 0.95x cuBLAS against 0.75x to 0.90x).
MIN_MULTIPLY_ADDS = {"d": 2048**3, "z": 2048**3}
#: 16-bit products of 2 to ``MAX_VECTORS`` rows (or columns) of C and at least this many multiply-adds run
#: on the CUDA path: NVIDIA's OpenCL has no half-precision arithmetic, and on the H100 FP16 8 x 14336 x 4096
#: ran at 0.21x cuBLAS in OpenCL's multi-vector GEMV, 0.83x through wgmma (8 x 4096 x 4096: 0.43x and
#: 0.77x), while 8 x 1024 x 4096 (2^25) ran at 1.95x in OpenCL and one row (a GEMV) at 1.1x to 3.2x.
FEW_ROWS_MULTIPLY_ADDS = {"h": 2**27, "hs": 2**27, "b": 2**27, "bs": 2**27}
#: The dtypes whose products on numpy arrays 'auto' keeps on OpenCL.
OVERLAPPED_ON_OPENCL = ("d", "z")


def check_backend(backend: object) -> str:
    """``backend`` if it names one of ``BACKENDS``, else ``ArgumentError``."""
    if backend not in BACKENDS:
        raise ArgumentError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, not {backend!r}")
    return backend


def cuda_gemm(a: Matrix, b: Matrix, c: Matrix | None, *, alpha, beta, trans_a: str, trans_b: str, device,
              precision, out_dtype, backend: str, other_options: str | None) -> Matrix | None:
    """The product on the CUDA path, or None where it runs on OpenCL: ``backend`` 'opencl', or 'auto'
    for a call the CUDA path does not take. With 'cuda' such a call raises an error saying why.
    ``other_options`` names an option given that only the OpenCL path has (None for none)."""
    if backend == "opencl":
        return None
    why = f"{other_options} is an option of the OpenCL path" if other_options else None
    if why is None and not all(isinstance(x, np.ndarray) for x in (a, b, c) if x is not None):
        why = "the CUDA path takes numpy arrays (pyopencl arrays stay on their OpenCL queue)"
    if why is not None and backend == "auto":
        return None
    kinds = _kinds(a, b, c, precision, out_dtype)
    if backend == "auto" and kinds in _KINDS_ON_OPENCL:
        return None
    dt, op_a, op_b, m, n, k, shape = validate_call(a, b, c, None, trans_a, trans_b, None, precision, out_dtype)
    if backend == "auto" and (dt.key in OVERLAPPED_ON_OPENCL or no_kernels(dt)):   # before the device is looked up
        if kinds is not None:
            _KINDS_ON_OPENCL.add(kinds)
        return None
    if why is None and c is not None and not c.flags.c_contiguous:
        why = "the CUDA path writes a row-major (C-ordered) c"
    ctx = None
    if why is None and 0 in (m, n, k):
        why = "an empty product"
    if backend == "auto" and (why is not None or not worth_it(dt, m, n, k)):
        return None                         # before a CUDA context is made for nothing
    if why is None:
        found = find_device(device)
        ctx, why = cuda_target(found, dt)
    if why is not None and backend == "cuda":
        raise ArgumentError(f"backend='cuda' cannot run this call: {why}")
    if why is not None:
        return None
    chosen, params = cuda_choice(found, dt, m, n, k, ctx.multiprocessors)
    if backend == "auto" and chosen != CUDA:        # the profile measured OpenCL faster here
        return None
    alpha, beta = scalar(alpha, "alpha", dt), scalar(beta, "beta", dt)
    if c is None and beta != 0:
        raise ArgumentError("beta is not 0 but no c was given to scale")
    out = c if c is not None else host_result(ctx, shape, dt.output.numpy)
    try:
        return _run(ctx, dt, params, (a, op_a), (b, op_b), out, (m, n, k), alpha, beta)
    except DeviceError:
        if backend == "cuda":
            raise
        ctx.release_kept()                  # e.g. out of device memory: OpenCL streams it
        return None


#: The operands' dtypes and options (``_kinds``) of calls 'auto' keeps on OpenCL whatever their shapes
#: and device, as found by their first call: a repeated call skips the checks (on the H100's host they
#: took 35 us of a 1024^3 SGEMM's 0.9 ms from numpy to numpy).
_KINDS_ON_OPENCL: set[tuple] = set()


def _kinds(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, precision: object, out_dtype: object) -> tuple | None:
    """What decides a call's dtype: the operands' dtypes, ``precision`` and ``out_dtype`` (None where an
    option cannot be a key)."""
    kinds = (a.dtype, b.dtype, None if c is None else c.dtype, precision, out_dtype)
    try:
        hash(kinds)
    except TypeError:
        return None
    return kinds


def worth_it(dt: Dtype, m: int, n: int, k: int) -> bool:
    """Whether 'auto' takes an m x n x k product of ``dt`` to the CUDA path: not one of few columns or
    rows (OpenCL's multi-vector GEMV, ``blas.vectors``, where a block of 64 x 64 would be mostly empty)
    unless ``FEW_ROWS_MULTIPLY_ADDS`` says, nor one under ``MIN_MULTIPLY_ADDS``."""
    if min(m, n) <= MAX_VECTORS:
        return min(m, n) > 1 and m * n * k >= FEW_ROWS_MULTIPLY_ADDS.get(dt.key, math.inf)
    return m * n * k >= MIN_MULTIPLY_ADDS.get(dt.key, 0)


def _row_major(x: np.ndarray, op: Op) -> tuple[np.ndarray, Op]:
    """``x`` as a C-ordered array and the op that gives the same operand from it (a Fortran-ordered
    array is the transpose of a C-ordered one; any other layout is copied)."""
    if x.flags.c_contiguous:
        return x, op
    if x.flags.f_contiguous:
        return x.T, op.flipped()
    return np.ascontiguousarray(x), op


def _run(ctx, dt, params: CudaParams, a: tuple[np.ndarray, Op], b: tuple[np.ndarray, Op], out: np.ndarray,
         sizes: tuple[int, int, int], alpha, beta) -> np.ndarray:
    """C = alpha op(A) op(B) + beta C on ``ctx`` with ``params`` into the C-ordered ``out``."""
    (a, op_a), (b, op_b) = _row_major(*a), _row_major(*b)
    m, n, k = sizes
    plan = cuda_plan(ctx, dt, m, n, k, params)
    pool = result_pool(ctx)
    uploads = [a, b] + ([out] if beta != 0 else [])
    locked = [pool.owns(x) for x in uploads]        # page-locked already (earlier calls' results)
    staged_bytes = max(sum(x.nbytes for x, lock in zip(uploads, locked) if not lock),
                       0 if pool.owns(out) else out.nbytes)
    with ctx.lock:
        ctx.activate()
        memory = [ctx.scratch(role, x.nbytes) for role, x in zip(("a", "b", "c"), (a, b, out))]
        staging = ctx.staging(staged_bytes) if staged_bytes else None
        start = 0
        for x, to, lock in zip(uploads, memory, locked):     # each copy sent on while the next is made
            if lock:
                ctx.upload(to, _bytes(x), wait=False)
                continue
            place = staging[start:start + x.nbytes]
            parallel_copy(place, _bytes(x))
            ctx.upload(to, place, wait=False)
            start += x.nbytes
        plan.enqueue(DeviceOperand.of_a(memory[0], m, a.shape[1], op_a),
                     DeviceOperand.of_b(memory[1], n, b.shape[1], op_b), memory[2], alpha, beta)
        if pool.owns(out):
            ctx.download(_bytes(out), memory[2])
        else:
            ctx.download(staging[:out.nbytes], memory[2])   # after the uploads: the staging is free
            parallel_copy(_bytes(out), staging[:out.nbytes])
    return out


def _bytes(x: np.ndarray) -> np.ndarray:
    """The bytes of a C-ordered array."""
    return x.reshape(-1).view(np.uint8)
