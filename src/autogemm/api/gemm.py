"""The public high-level call ``gemm``: on numpy arrays (blocking, the result in host memory) or on
``pyopencl`` arrays (enqueued on their queue, returning at once), or on CUDA tensors (``cuda_tensors``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .. import workload
from ..blas import GemmProblem, LaunchPlan, index_blocks, plan_cache
from ..blas.coverage import c_blocks
from ..blas.plan_cache import cached_plan, is_current
from ..blas.problem import alignment_class
from ..blas.vectors import VectorsPlan
from ..codelets.kernel import ceil_div, round_up
from ..codelets.registry import KernelParams
from ..dtypes import Dtype
from ..errors import ArgumentError
from ..runtime import Device, DeviceContext, live_contexts
from ..runtime.cuda import live_cuda_contexts
from ..runtime.memory import check_memory, reports_full_memory
from ..shares.split import Split
from ..shares.staging import release_page_locked
from .cuda_route import check_backend, cuda_gemm
from .cuda_tensors import is_cuda_tensor, tensor_gemm
from .operands import Matrix, Stored, as_matrix, call_context, event_list, events_of, on_device, scalar, stored
from .targets import Devices, gemm_on_targets
from .transfer import Block, Enqueue, execute, host_result, large_on_host, whole
from .validation import validate_call


@reports_full_memory
def gemm(a: Matrix, b: Matrix, c: Matrix | None = None, *, alpha: complex | float = 1.0,
         beta: complex | float = 0.0, trans_a: str = "N", trans_b: str = "N",
         device: Device | str | int | None = None, config: KernelParams | None = None,
         edge: str = "auto", precision: str | None = None, out_dtype: object = None,
         wait_for: list[cl.Event] | None = None, devices: Devices | None = None,
         split: Split | None = None, backend: str = "auto", stream: object = None) -> Matrix:
    """C = alpha op(A) op(B) + beta C on an OpenCL device, for arrays of one of the dtypes float32,
    float64, complex64, complex128, float16 and bfloat16 (``ml_dtypes.bfloat16``).

    Operands are numpy arrays or ``pyopencl.array.Array`` s, in any mix. With numpy arrays alone the call
    blocks and C is a numpy array. Where any operand is a device array, the call runs on that array's
    queue (in-order; all device operands of one context) and returns at once: C is then a device array
    (``c`` itself when it is one, else a new one) whose ``events`` hold the product's completion, so
    ``C.get()`` or ``C.finish()`` waits; numpy operands are uploaded first, without blocking. A numpy
    ``c`` is filled when the product is done (that call blocks). The pending ``events`` of the device
    operands, and ``wait_for``, are waited for on the device before anything reads or writes them.

    float16 and bfloat16 products are accumulated in float32; C is of the operands' type, or float32
    when ``out_dtype`` is float32 or ``c`` is a float32 array. Tensor cores multiply them where the device
    has such instructions; elsewhere the operands are converted to float32 on the device first.

    ``precision`` None computes in the arrays' own precision. For float32 and complex64, 'tf32' lets
    tensor cores multiply operands rounded to TF32 (a relative error near 3e-4, as cuBLAS's TF32 mode)
    and '3xtf32' splits each operand into two TF32 parts and sums three products (about float32's
    error); on a device without such instructions both are computed exactly, as float32.

    ``trans_a`` and ``trans_b`` are 'N', 'T' or 'C' (conjugate transpose). Without ``c`` a new array is
    returned (and ``beta`` must be 0); with ``c`` the result is written into it, as BLAS does, and ``c`` is
    returned. Row-major, column-major (Fortran-ordered) and strided 2-D views are accepted, device arrays
    with their offsets. ``device`` is a ``Device`` or a specification (see ``autogemm devices``);
    ``config`` a ``SimtParams`` (default: from the device's profile); ``edge`` chooses how sizes that are
    not whole tiles are handled ('auto', 'pad', 'guard'). Every argument is checked before anything is
    enqueued; on an error the caller's arrays are unchanged.

    ``devices`` shares one product of numpy arrays among several targets by rows of C: 'all' (every GPU
    and the host) or a list of device specifications and 'host' (numpy's BLAS on this machine's CPU).
    ``split`` (a ``Split``, one share per target in that order) says how many of its parts each computes;
    by default the GPUs share the rows evenly and the host computes none unless it is the only target.
    Each device computes its rows on its own queue while the host computes its own; the call blocks.

    ``backend`` 'auto' runs the product on the CUDA path where the device is a Hopper GPU the CUDA
    driver sees too and the dtype is one whose fastest kernels only CUDA reaches (16-bit, TF32, 3xTF32,
    float64, complex128; numpy arrays; ``api.cuda_route``), else on OpenCL; 'opencl' or 'cuda' asks for
    one ('cuda' raises an error saying why a call cannot run there).

    CUDA tensors (torch, cupy, jax: anything exporting DLPack from a CUDA GPU) are multiplied on the
    CUDA path where they lie, without copies (``api.cuda_tensors``): the call enqueues the product on
    ``stream`` (a handle, or a torch or cupy stream; by default the library's current stream) and
    returns at once, with ``c`` or a new tensor of ``a``'s library. Every operand must then be one;
    float32 takes ``precision`` 'tf32' or '3xtf32'.
    """
    given = (("devices", devices is not None), ("split", split is not None), ("config", config is not None),
             ("edge", edge != "auto"), ("wait_for", bool(wait_for)))
    other_options = next((name for name, present in given if present), None)
    if any(is_cuda_tensor(x) for x in (a, b, c)):
        return tensor_gemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, device=device,
                           precision=precision, out_dtype=out_dtype, backend=check_backend(backend),
                           stream=stream, other_options=other_options)
    if stream is not None:
        raise ArgumentError("stream is for CUDA tensors; numpy and pyopencl operands run on their own queue")
    a, b = (as_matrix(x, name, "for a vector use autogemm.gemv or autogemm.matmul",
                      "for stacks of matrices use autogemm.matmul or autogemm.gemm_batched")
            for x, name in ((a, "a"), (b, "b")))
    c = None if c is None else as_matrix(c, "c")
    done = cuda_gemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, device=device,
                     precision=precision, out_dtype=out_dtype, backend=check_backend(backend),
                     other_options=other_options)
    if done is not None:
        return done

    def on_one_device(target: Device | str | int | None, kernel: KernelParams | None,
                      events: list[cl.Event] | None = None) -> Matrix:
        return product(a, b, c, None, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, device=target,
                       config=kernel, edge=edge, precision=precision, out_dtype=out_dtype, wait_for=events)

    if devices is not None or split is not None:
        if devices is None:
            raise ArgumentError("split is for a product shared among devices: give devices= too")
        if device is not None or wait_for:
            raise ArgumentError("devices= runs on several targets and blocks: leave device and wait_for out")
        return gemm_on_targets(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, devices=devices,
                               split=split, config=config, edge=edge, precision=precision, out_dtype=out_dtype,
                               alone=on_one_device)
    if not wait_for and large_on_host(a, b, c):
        # as a share of its device: streamed (copies through page-locked staging, overlapping the
        # kernels), or in place where the device shares the host's memory
        return gemm_on_targets(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, devices=[device],
                               split=None, config=config, edge=edge, precision=precision, out_dtype=out_dtype)
    return on_one_device(device, config, wait_for)


def product(a: Matrix, b: Matrix, c: Matrix | None, batch: int | None, *, alpha, beta, trans_a: str, trans_b: str,
            device, config, edge: str, precision, out_dtype, wait_for) -> Matrix:
    """``gemm`` on checked arrays: one product of matrices (``batch`` None), or a strided batch of
    ``batch`` products where ``a``, ``b`` and ``c`` are stacks along their first dimension (``a`` or
    ``b`` a matrix, or a stack of one, is used in every product)."""
    wait_for = event_list(wait_for)
    key = _call_key(a, b, c, device, batch, trans_a, trans_b, config, edge, precision, out_dtype)
    found = _resolved.get(key) if key is not None else None
    if found is not None and is_current(found[1]):
        call, plan, layout = found
    else:
        call = _resolve(a, b, c, batch, trans_a, trans_b, device, config, edge, precision, out_dtype)
        plan = None if call.blocked else cached_plan(call.ctx, call.planned, config, edge)
        layout = None if call.blocked else _layout(call, plan, config, edge)
        if key is not None:
            _remember(key, (call, plan, layout))
    if workload.RECORDER is not None:
        pr = call.problem
        workload.RECORDER.record("gemm", pr.dtype.key, "NT"[pr.op_a.transposed] + "NT"[pr.op_b.transposed], pr.m,
                                 pr.n, pr.k, pr.batch)
    alpha, beta = scalar(alpha, "alpha", call.dt), scalar(beta, "beta", call.dt)
    if c is None and beta != 0:
        raise ArgumentError("beta is not 0 but no c was given to scale")
    if wait_for and not call.asynchronous:
        raise ArgumentError("wait_for is for calls on device arrays; numpy operands are read when the call is made")
    ctx = call.ctx
    if c is not None:
        out = c
    elif call.asynchronous:
        out = cl_array.empty(ctx.queue, call.shape, call.dt.output.numpy)
    else:
        out = host_result(ctx, call.shape, call.dt.output.numpy)
    problem = call.problem
    if problem.m == 0 or problem.n == 0 or problem.batch == 0:
        return out
    wait_for = events_of([a, b, c], ctx.queue) + wait_for
    if not all(on_device(x) for x in (a, b, c) if x is not None):
        return _run_with_transfers(call, layout, a, b, out, alpha, beta, wait_for)
    # device arrays alone: nothing to upload; the offsets are this call's own (the key holds their class)
    first, second = (b, a) if call.swapped else (a, b)
    offsets = (first.offset // first.dtype.itemsize, second.offset // second.dtype.itemsize,
               out.offset // out.dtype.itemsize)
    buffers = (first.base_data, second.base_data, out.base_data)
    if call.blocked:
        placed = replace(call.problem, offset_a=offsets[0], offset_b=offsets[1], offset_c=offsets[2])
        events = index_blocks.enqueue_blocks(ctx, placed, config, edge, buffers, alpha, beta, wait_for)
    else:
        if not plan.allocated:
            check_memory(ctx, list(plan.temporary_bytes().values()))
        events = plan.enqueue(*buffers, alpha=alpha, beta=beta, wait_for=wait_for, offsets=offsets)
    if events:
        out.add_event(events[-1])
    return out


def _run_with_transfers(call: _Call, layout: list[_Part], a: Matrix, b: Matrix, out: Matrix, alpha, beta,
                        wait_for: list[cl.Event]) -> Matrix:
    """A call with host operands: uploads, the product in the blocks of ``layout``, and a host result's
    download, overlapping where there are several blocks."""
    sa, sb, sc = stored(a, "a"), stored(b, "b"), stored(out, "c")
    operands = (sb, sa, sc) if call.swapped else (sa, sb, sc)
    if len(layout) == 1:
        blocks_of_c = whole(operands, _product(layout[0].plan, call.problem, alpha, beta))
    else:
        blocks_of_c = [Block((part.a_end, operands[1].elements, part.c_end), (part.problem.offset_c, part.c_end),
                             _product(part.plan, part.problem, alpha, beta)) for part in layout]
    temporaries = [size for p in {part.plan for part in layout} if not p.allocated
                   for size in p.temporary_bytes().values()]
    # C is uploaded only when beta is not 0: it is not read then
    return execute(call.ctx, operands, (True, True, beta != 0), out, temporaries, blocks_of_c, wait_for)


class _Part(NamedTuple):
    """One block of a call's rows of C: its problem (the call's, at the block's offsets), its plan, and
    where its reads of A and its writes of C end in their storage (elements)."""

    problem: GemmProblem
    plan: LaunchPlan | VectorsPlan
    a_end: int
    c_end: int


def _layout(call: _Call, plan: LaunchPlan | VectorsPlan, config: KernelParams | None, edge: str) -> list[_Part]:
    """The blocks a call runs in, made once per resolved call: one, the whole problem on ``plan``, where
    an operand lies on the device or the device shares the host's memory (nothing to overlap), else the
    blocks of ``row_blocks``, each on a plan of its own."""
    pr = call.problem
    whole_call = _Part(pr, plan, pr.offset_a + pr.member_elements("A"), pr.offset_c + pr.member_elements("C"))
    if call.asynchronous or call.ctx.device.shares_host_memory:
        return [whole_call]
    waves = (plan.params, plan.slices) if isinstance(plan, LaunchPlan) else ()     # GEMV's plan has no tiles
    spans = row_blocks(pr, call.ctx.device.compute_units, *waves)
    if len(spans) == 1:
        return [whole_call]
    parts = [replace(pr, m=r1 - r0, offset_a=pr.offset_a + (r0 if pr.op_a.transposed else r0 * pr.lda),
                     offset_c=pr.offset_c + r0 * pr.ldc) for r0, r1 in spans]
    return [_Part(part, cached_plan(call.ctx, part.aligned(), config, edge),
                  part.offset_a + part.member_elements("A"), part.offset_c + part.member_elements("C"))
            for part in parts]


#: A product of numpy arrays runs in blocks of C's rows, each of about ``BLOCK_TILES`` tiles of 128 x 128
#: per compute unit of the device (a block of fewer would leave units idle), at most ``MAX_BLOCKS``, each
#: a multiple of ``BLOCK_ROWS`` rows: while the device computes one block, the next block's rows of A
#: are uploaded and the last block's C comes back. On the H100, SGEMM 4096^3 from numpy to numpy took
#: 10.1 ms in one block, the device idle while 3.6 ms of uploads ran and the download after it.
#: A product of at least ``PIPELINED_ELEMENTS`` elements of C runs in two blocks at least where its plan's
#: work-groups take no more waves so (on the H100, DGEMM 1024^3 from numpy to numpy took 0.92 against
#: 0.98 ms in two blocks; SGEMM 1024^3, whose 64 work-groups take one wave, 0.74 against 0.64 ms).
BLOCK_TILES, MAX_BLOCKS, BLOCK_ROWS, PIPELINED_ELEMENTS = 1, 8, 128, 1 << 20


def row_blocks(problem: GemmProblem, compute_units: int, params: KernelParams | None = None,
               layers: int = 1) -> list[tuple[int, int]]:
    """The blocks [r0, r1) of C's rows that a product of host arrays runs in (one for a batch). Given the
    plan's ``params`` and its ``layers`` of work-groups (K slices), no fewer rows than keep its work-groups
    in as few waves over the blocks as over the whole product: a block that leaves units idle makes the
    device's time longer than its overlapped copies make it shorter."""
    m, n = problem.m, problem.n
    if problem.batch != 1:
        return [(0, m)]
    count = round(m * n / (BLOCK_TILES * compute_units * 128 * 128))
    if m * n >= PIPELINED_ELEMENTS:
        count = max(count, 2)
    count = max(1, min(MAX_BLOCKS, count, m // BLOCK_ROWS))

    def waves(spans: list[tuple[int, int]]) -> int:
        return sum(ceil_div(c_blocks(params, r1 - r0, n) * layers, compute_units) for r0, r1 in spans)

    if params is not None:
        whole = waves([(0, m)])
        while count > 1 and waves(_spans(m, count)) > whole:
            count -= 1
    return _spans(m, count)


def _spans(m: int, count: int) -> list[tuple[int, int]]:
    """``count`` blocks of C's m rows, each a multiple of ``BLOCK_ROWS`` rows but the last."""
    step = round_up(ceil_div(m, count), BLOCK_ROWS) if count > 1 else max(m, 1)
    return [(r0, min(r0 + step, m)) for r0 in range(0, m, step)] or [(0, m)]


def _product(plan: LaunchPlan, part: GemmProblem, alpha, beta) -> Enqueue:
    """The launches of ``plan`` on ``part``'s offsets, as a block enqueues them."""
    def enqueue(buffers: list[cl.Buffer], events: list[cl.Event]) -> list[cl.Event]:
        return plan.enqueue(*buffers, alpha=alpha, beta=beta, wait_for=events,
                            offsets=(part.offset_a, part.offset_b, part.offset_c))
    return enqueue


@dataclass(frozen=True)
class _Call:
    """What a call's arrays resolve to: where it runs, the dtype, the result's shape, and the problem on
    the row-major storage of the operands (A and B swapped when C is column-major: C^T = op(B)^T op(A)^T)."""

    ctx: DeviceContext
    dt: Dtype
    shape: tuple[int, ...]
    asynchronous: bool
    problem: GemmProblem
    swapped: bool
    planned: GemmProblem         # ``problem.aligned()``: what the plan is made for
    blocked: bool = False        # past 32-bit indexing: run in blocks (device arrays alone, one product)


#: Resolutions of recent calls on device arrays alone or numpy arrays alone, by everything they depend
#: on, with the plan each ran on and its blocks (``_layout``): a program that repeats a call on the same
#: arrays (or arrays of the same shapes and layouts) skips the checks and the plans' lookup while that plan
#: is current (on the H100 the checks took 0.12 ms of a 1024^3 SGEMM's 1.3 ms from numpy to numpy).
RESOLVED_CAPACITY = 64
_resolved: OrderedDict[tuple, tuple[_Call, LaunchPlan, list[_Part] | None]] = OrderedDict()
_resolved_lock = threading.Lock()


def _call_key(a: Matrix, b: Matrix, c: Matrix | None, device: object, *options) -> tuple | None:
    """The key of a call whose operands are all device arrays (shapes, strides, the alignment classes of
    their offsets, dtypes, queues, ``device`` and every other option) or all numpy arrays (shapes,
    strides, dtypes, whether C is writeable, and the rest), else None: mixed operands are resolved
    afresh each time. A ``Device`` object stands in by its place among the platforms' devices (its own
    hash covers every fact). Views of a stack at offsets of one class share a key, so a loop over them
    is resolved once."""
    if isinstance(device, Device):
        device = (device.platform_index, device.device_index)
    elif not isinstance(device, (str, int, type(None))):
        return None
    operands = [x for x in (a, b, c) if x is not None]
    if all(type(x) is np.ndarray for x in operands):
        return (*((x.shape, x.strides, x.dtype) for x in operands), c is None or c.flags.writeable,
                c is None, device, *options)
    if not all(on_device(x) for x in operands):
        return None
    return (*((x.shape, x.strides, alignment_class(x.offset // x.dtype.itemsize), x.dtype, x.queue)
              for x in operands), c is None, device, *options)


def clear_plans() -> None:
    """Forget every cached plan and every resolved call, and free the device buffers and the page-locked
    host memory kept for later calls. A plan keeps its temporaries, and the memory of its last call's
    operands (so that a repeated call sets no argument again): after this, both are freed once no call in
    flight still uses them. For a device whose memory (or a host whose page-locked memory, up to
    ``transfer.PINNED_BYTES``) is needed elsewhere."""
    with _resolved_lock:
        _resolved.clear()
    plan_cache.clear()
    for ctx in live_contexts():
        ctx.buffers.clear()
        release_page_locked(ctx)
    for cuda_ctx in live_cuda_contexts():
        cuda_ctx.release_kept()


def _remember(key: tuple, resolved: tuple[_Call, LaunchPlan, list[_Part] | None]) -> None:
    with _resolved_lock:
        _resolved[key] = resolved
        while len(_resolved) > RESOLVED_CAPACITY:
            _resolved.popitem(last=False)


def _resolve(a: Matrix, b: Matrix, c: Matrix | None, batch: int | None, trans_a: str, trans_b: str, device,
             config, edge: str, precision, out_dtype) -> _Call:
    """Check the arrays and options of a call (everything but the scalars and events) and resolve them."""
    dt, op_a, op_b, m, n, k, shape = validate_call(a, b, c, batch, trans_a, trans_b, config, precision, out_dtype)
    ctx = call_context(device, {"a": a, "b": b, "c": c})
    asynchronous = any(on_device(x) for x in (a, b, c))
    sa, sb = stored(a, "a"), stored(b, "b")
    # a new C is dense and row-major
    sc = stored(c, "c") if c is not None else Stored(max(n, 1), False, m, n, 1 if batch is None else batch, m * n)
    op_a = op_a.flipped() if sa.flipped else op_a
    op_b = op_b.flipped() if sb.flipped else op_b
    first, second = (sa, op_a), (sb, op_b)
    if sc.flipped:   # C^T = op(B)^T op(A)^T on the row-major storage of C
        first, second, (m, n) = (sb, op_b.flipped()), (sa, op_a.flipped()), (n, m)
    (pa, op_a), (pb, op_b) = first, second
    problem = GemmProblem(dt, m, n, k, op_a, op_b, lda=pa.ld, ldb=pb.ld, ldc=sc.ld, offset_a=pa.offset,
                          offset_b=pb.offset, offset_c=sc.offset, batch=sc.layers, stride_a=pa.stride,
                          stride_b=pb.stride, stride_c=sc.stride)
    # past 32-bit indexing a product of device arrays alone runs in blocks; anything else cannot
    blockable = problem.batch == 1 and all(on_device(x) for x in (a, b, c) if x is not None)
    problem.validate(index_limit=None if blockable else index_blocks.INDEX_LIMIT)
    blocked = blockable and index_blocks.exceeds(problem)
    return _Call(ctx, dt, shape, asynchronous, problem, sc.flipped, problem.aligned(), blocked)
