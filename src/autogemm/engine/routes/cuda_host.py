"""Which runtime a call of numpy operands runs on, and its run on the CUDA path.

An NVIDIA GPU of compute capability 9.0 that the CUDA driver sees too (and the ``cuda`` extra installed)
has two ways in. NVIDIA's OpenCL compiles for sm_90, not sm_90a, so Hopper's wgmma and TMA are reached
through CUDA alone: there the dtypes ``blas.defaults.CUDA_DEFAULTS`` names (16-bit operands, TF32, 3xTF32,
float64, complex128) run on the CUDA path, whose tensor-core kernels are faster than the OpenCL ones for
them (but small ones whose operands it would lay out for TMA first: ``goes_to_cuda``), and complex64 in
TF32 or 3xTF32 as the real product of its embedding (``blas.complex_embedding``); float32 and complex64
in their own precision stay on OpenCL, which is as fast as cuBLAS there. Where the device's profile has
CUDA entries (``autogemm tune`` measured both backends), the one nearest a product says which backend
was faster there and with which CUDA configuration (``blas.selection.choose_cuda_params``). ``backend``
'opencl' or 'cuda' asks for one; 'cuda' says why a call cannot run there instead of falling back.

On the CUDA path a call on numpy arrays copies its operands through page-locked memory kept by the
context (each upload enqueued once its copy is there, while the next is copied), runs the product and
copies C back the same way; the call blocks. From numpy to numpy, 'auto' keeps float64 and complex128
products, and complex64 ones in TF32 (``Thresholds.numpy_on_opencl``), on OpenCL, where the uploads,
kernels and downloads of row blocks overlap (or the tiles of a streamed product), which gains more than
the CUDA kernels' speed (the figures are in the GEMM guide).

A strided batch of numpy stacks (``gemm_batched``, ``matmul``'s stacks) runs on the CUDA path in one
launch where its matrices are large enough (``Thresholds.cuda_batch_min_side``: OpenCL has no row blocks
to overlap in a batch) and its kernel reads the stacks as they lie (``batch_params``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...blas.complex_embedding import kernel_dtype, kernel_problem, real_dtype
from ...blas.cuda_gemm import (
    CudaGemm,
    CudaParams,
    DeviceOperand,
    cuda_plan,
    cuda_target,
    no_kernels,
    reads_in_place,
    stack_stride,
)
from ...blas.defaults import CUDA_DEFAULTS
from ...blas.problem import Op
from ...blas.selection import choose_cuda_params
from ...blas.vectors import MAX_VECTORS
from ...codelets.dmma import DmmaParams
from ...dtypes import Dtype
from ...errors import ArgumentError, DeviceError
from ...profiles import Thresholds, profile_for, thresholds_for
from ...runtime.backend import CUDA
from ...runtime.cuda import CudaContext
from ...runtime.opencl.device import Device
from ...runtime.opencl.discovery import find_device
from ...shares.copying import parallel_copy
from ...shares.staging import as_bytes, crossing, host_result, result_pool
from ..call import GemmCall, GemmOptions, checked_scalars


class CudaHostRoute:
    """A call of numpy operands resolved on the CUDA path: its context, its configuration and the plan
    that runs it; each run copies the operands in and C out through page-locked memory."""

    def __init__(self, call: GemmCall, device: Device, limits: Thresholds, ctx: CudaContext, params: CudaParams
                 ) -> None:
        self.ctx, self.dt, self.shape, self.has_c = ctx, call.dt, call.shape, call.c is not None
        self.ops, self.sizes = (call.op_a, call.op_b), (call.m, call.n, call.k)
        self.device, self.limits = device, limits
        self.profile = profile_for(device)
        self.plan: CudaGemm = cuda_plan(ctx, call.dt, call.m, call.n, call.k, params, call.batch or 1)

    def current(self) -> bool:
        """Whether the device's profile, which chose the configuration, is still the one it was."""
        return profile_for(self.device) is self.profile

    def run(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None, options: GemmOptions) -> np.ndarray | None:
        """The product into ``c`` or a new page-locked array; None where the device fails it (out of its
        memory, say) and 'auto' lets OpenCL take it (``backend='cuda'`` raises then)."""
        alpha, beta = checked_scalars(options, self.dt, self.has_c)
        out = c if c is not None else host_result(self.ctx, self.shape, self.dt.output.numpy, self.limits)
        try:
            return _run(self.ctx, self.plan, (a, self.ops[0]), (b, self.ops[1]), out, self.sizes, alpha, beta)
        except DeviceError:
            if options.backend == "cuda":
                raise
            self.ctx.release_kept()                  # e.g. out of device memory: OpenCL streams it
            return None


def cuda_host_route(call: GemmCall) -> CudaHostRoute | None:
    """The CUDA route of a call of numpy operands, or None where it runs on OpenCL: ``backend`` 'opencl',
    or 'auto' for a call the CUDA path does not take. With 'cuda' such a call raises an error saying why."""
    options = call.options
    backend = options.backend
    if backend == "opencl":
        return None
    why = f"{options.opencl_only()} is an option of the OpenCL path" if options.opencl_only() else None
    if why is None and not all(isinstance(x, np.ndarray) for x in (call.a, call.b, call.c) if x is not None):
        why = "the CUDA path takes numpy arrays (pyopencl arrays stay on their OpenCL queue)"
    dt, (m, n, k) = call.dt, (call.m, call.n, call.k)
    if backend == "auto" and (why is not None or no_kernels(kernel_dtype(dt))):
        return None                         # before the device is looked up
    device = find_device(options.device)
    limits = thresholds_for(device)
    if why is None and call.c is not None and not call.c.flags.c_contiguous:
        why = "the CUDA path writes a row-major (C-ordered) c"
    if why is None and 0 in (m, n, k, call.batch):
        why = "an empty product"
    stacks = [x for x in (call.a, call.b) if x.ndim == 3]
    if why is None and not all(x.flags.c_contiguous for x in stacks):
        why = "the CUDA path takes stacks of row-major (C-ordered) matrices"
    if why is None and call.batch is not None and real_dtype(dt) is not None:
        why = "the CUDA path embeds complex64 products one at a time (a batch runs on OpenCL)"
    ops = (tuple(_stored_op(x, op) for x, op in ((call.a, call.op_a), (call.b, call.op_b))) if why is None
           else (call.op_a, call.op_b))
    dt, (m, n, k), ops = kernel_problem(dt, (m, n, k), ops)       # complex64 in TF32: its real product
    if call.batch is None:
        kept_on_opencl = call.dt.key in limits.numpy_on_opencl or not goes_to_cuda(dt, m, n, k, limits, *ops)
    else:
        kept_on_opencl = min(m, n) < limits.cuda_batch_min(dt.key)
    if backend == "auto" and (why is not None or kept_on_opencl):
        return None                         # before a CUDA context is made for nothing
    if why is None:
        ctx, why = cuda_target(device, dt)
    if why is None and call.batch is not None:
        params = batch_params(choose_cuda_params(device, dt, m, n, k, ctx.multiprocessors, call.batch, ops).params,
                              dt, m, n, k, *ops)
        why = None if params is not None else ("its kernel would lay the stacks out first, or split them into "
                                               "3xtf32's planes (a batch is read as it lies)")
    elif why is None:
        params = (choose_cuda_params(device, dt, m, n, k, ctx.multiprocessors, ops=ops).params if backend == "cuda"
                  else auto_cuda_params(device, dt, m, n, k, *ops, ctx, limits))
    if why is not None:
        if backend == "cuda":
            raise ArgumentError(f"backend='cuda' cannot run this call: {why}")
        return None
    return None if params is None else CudaHostRoute(call, device, limits, ctx, params)


def batch_params(params: CudaParams, dt: Dtype, m: int, n: int, k: int, op_a: Op, op_b: Op) -> CudaParams | None:
    """The configuration a strided batch of m x n x k products runs with on the CUDA path, ``params`` or
    its form that reads operands stored MN-major as they lie (``reads_mn_major``, where its family has
    one), or None where neither reads the stacks as they lie: one launch cannot lay out every matrix of
    a stack, nor split it into 3xtf32's planes (``cuda_gemm.reads_in_place``)."""
    forms = [params] + ([replace(params, reads_mn_major=True)] if isinstance(params, DmmaParams) else [])
    return next((form for form in forms if reads_in_place(form, dt, m, n, k, op_a, op_b)), None)


def goes_to_cuda(dt: Dtype, m: int, n: int, k: int, limits: Thresholds, op_a: Op, op_b: Op) -> bool:
    """Whether 'auto' takes an m x n x k product of ``dt``, A and B stored row-major as ``op_a`` and
    ``op_b`` say, to the CUDA path: not one of few columns or rows (OpenCL's multi-vector GEMV,
    ``blas.vectors``) unless ``limits.cuda_few_rows_multiply_adds`` says (NVIDIA's OpenCL has no
    half-precision arithmetic, so its GEMV falls behind wgmma on long 16-bit products of few rows) or it
    has ``limits.cuda_many_vectors`` of them (wgmma's narrow blocks waste little on them), nor one under
    ``limits.cuda_min_multiply_adds`` (where OpenCL's kernels need no layout pass and fewer launches), nor
    one under ``limits.cuda_laid_out_min_multiply_adds`` (over a K of at most ``cuda_shallow_depth``,
    ``cuda_shallow_laid_out_multiply_adds``) whose operands the dtype's default configuration would lay
    out first (``cuda_gemm.reads_in_place``; ``auto_cuda_params`` asks the one chosen)."""
    work, vectors = m * n * k, min(m, n)
    if vectors <= MAX_VECTORS and vectors < limits.cuda_vectors(dt.key):
        return vectors > 1 and work >= limits.cuda_few_rows(dt.key)
    return work >= limits.cuda_min(dt.key) and not (
        dt.key in CUDA_DEFAULTS and _lays_out_small(CUDA_DEFAULTS[dt.key], dt, m, n, k, op_a, op_b, limits))


def auto_cuda_params(device: Device, dt: Dtype, m: int, n: int, k: int, op_a: Op, op_b: Op, ctx: CudaContext,
                     limits: Thresholds) -> CudaParams | None:
    """The configuration 'auto' runs a product that ``goes_to_cuda`` with on the CUDA path
    (``choose_cuda_params``), or None where it stays on OpenCL after all: the profile measured OpenCL
    faster there, or the product is under ``limits.cuda_laid_out_min_multiply_adds`` (or, shallow, the
    bound of ``Thresholds.cuda_laid_out_below``) and that configuration would lay an operand out first."""
    chosen = choose_cuda_params(device, dt, m, n, k, ctx.multiprocessors, ops=(op_a, op_b))
    if chosen.backend != CUDA or _lays_out_small(chosen.params, dt, m, n, k, op_a, op_b, limits):
        return None
    return chosen.params


def _lays_out_small(params: CudaParams, dt: Dtype, m: int, n: int, k: int, op_a: Op, op_b: Op,
                    limits: Thresholds) -> bool:
    """Whether the product is under ``limits.cuda_laid_out_min_multiply_adds`` (over a short K,
    ``cuda_shallow_laid_out_multiply_adds``: ``Thresholds.cuda_laid_out_below``) and the kernel of
    ``params`` would lay an operand out first (``cuda_gemm.reads_in_place``)."""
    return m * n * k < limits.cuda_laid_out_below(dt.key, k) and not reads_in_place(params, dt, m, n, k, op_a, op_b)


def _stored_op(x: np.ndarray, op: Op) -> Op:
    """The op that gives ``x``'s operand from ``x`` seen as a C-ordered array (a Fortran-ordered array is
    the transpose of a C-ordered one; any other layout is copied so)."""
    return op.flipped() if x.flags.f_contiguous and not x.flags.c_contiguous else op


def _row_major(x: np.ndarray, op: Op) -> tuple[np.ndarray, Op]:
    """``x`` as a C-ordered array and the op that gives the same operand from it (``_stored_op``)."""
    if x.flags.c_contiguous:
        return x, op
    if x.flags.f_contiguous:
        return x.T, _stored_op(x, op)
    return np.ascontiguousarray(x), op


def _run(ctx: CudaContext, plan: CudaGemm, a: tuple[np.ndarray, Op], b: tuple[np.ndarray, Op], out: np.ndarray,
         sizes: tuple[int, int, int], alpha, beta) -> np.ndarray:
    """C = alpha op(A) op(B) + beta C on ``ctx`` with ``plan`` into the C-ordered ``out``."""
    (a, op_a), (b, op_b) = _row_major(*a), _row_major(*b)
    m, n, k = sizes
    uploads = [a, b] + ([out] if beta != 0 else [])
    crossed = crossing(result_pool(ctx), [as_bytes(x) for x in uploads], as_bytes(out))
    with ctx.lock:
        ctx.activate()
        memory = [ctx.scratch(role, x.nbytes) for role, x in zip(("a", "b", "c"), (a, b, out))]
        staging = ctx.staging(crossed.nbytes) if crossed.nbytes else None
        for x, to, start in zip(uploads, memory, crossed.starts):     # each copy sent on while the next is made
            if start is None:           # page-locked already (an earlier call's result)
                ctx.upload(to, as_bytes(x), wait=False)
                continue
            place = staging[start:start + x.nbytes]
            parallel_copy(place, as_bytes(x))
            ctx.upload(to, place, wait=False)
        plan.enqueue(DeviceOperand.of_a(memory[0], m, a.shape[-1], op_a, stack_stride(a.shape)),
                     DeviceOperand.of_b(memory[1], n, b.shape[-1], op_b, stack_stride(b.shape)), memory[2], alpha, beta)
        if crossed.landing:
            ctx.download(staging[:out.nbytes], memory[2])   # after the uploads: the staging is free
            parallel_copy(as_bytes(out), staging[:out.nbytes])
        else:
            ctx.download(as_bytes(out), memory[2])
    return out
