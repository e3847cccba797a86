"""A product on one OpenCL device: resolved once per call signature (the device, the problem on the
operands' row-major storage, the plan and, for host operands, the blocks of C's rows it runs in), then
run by binding each call's buffers, offsets and scalars.

Host operands cross through the transfer machinery (``engine.transfer``) in blocks of C's rows, so that
while the device computes one block the next block's rows of A are uploaded and the last block's C comes
back; a call of dense numpy arrays too small to gain from that overlap crosses whole, with as few steps
as the commands need (``OpenCLRoute.whole_bytes``); device operands are used where they lie, on their queue, and
the call returns at once."""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ... import workload
from ...blas import GemmProblem, LaunchPlan, index_blocks
from ...blas.coverage import c_blocks
from ...blas.plan_cache import cached_plan, is_current
from ...blas.vectors import VectorsPlan
from ...codelets.kernel import ceil_div, round_up
from ...codelets.registry import KernelParams
from ...errors import ArgumentError
from ...profiles import Thresholds, thresholds_for
from ...runtime.opencl import commands as ocl
from ...runtime.opencl.memory import check_memory
from ...shares.copying import copy_all, parallel_copy
from ...shares.staging import as_bytes, crossing, host_result, page_locked, result_pool
from ..call import GemmCall, GemmOptions, checked_scalars, oriented
from ..operands import (
    Matrix,
    Stored,
    call_context,
    event_list,
    events_of,
    hand_events,
    on_device,
    placed,
    storage_layout,
    stored,
)
from ..transfer import Block, Enqueue, one_block, run_blocks


class Part(NamedTuple):
    """One block of a call's rows of C: its problem (the call's, at the block's offsets), its plan, and
    where its reads of A and its writes of C end in their storage (elements)."""

    problem: GemmProblem
    plan: LaunchPlan | VectorsPlan
    a_end: int
    c_end: int


class OpenCLRoute:
    """A ``GemmCall`` resolved on one OpenCL device: where it runs, its problem on the row-major storage
    of the operands (A and B swapped where C is column-major), the plan it runs on and its blocks; past
    32-bit indexing a product of device arrays alone runs in blocks of its own (``blas.index_blocks``)."""

    def __init__(self, call: GemmCall) -> None:
        a, b, c, o = call.a, call.b, call.c, call.options
        self.ctx = call_context(o.device, {"a": a, "b": b, "c": c})
        self.dt, self.shape, self.asynchronous = call.dt, call.shape, call.on_device
        self.config, self.edge, self.has_c = o.config, o.edge, c is not None
        # every call of the route's signature has operands of the same kinds and dtypes as this one
        self.device_only = all(on_device(x) for x in (a, b, c) if x is not None)
        self.itemsizes = tuple(x.dtype.itemsize if x is not None else 0 for x in (a, b, c))
        sa, sb = stored(a, "a"), stored(b, "b")
        # a new C is dense and row-major
        sc = stored(c, "c") if c is not None else Stored(max(call.n, 1), False, call.m, call.n,
                                                         1 if call.batch is None else call.batch, call.m * call.n)
        pa, op_a, pb, op_b, m, n, self.swapped = oriented(sa, call.op_a, sa.flipped, sb, call.op_b, sb.flipped,
                                                          call.m, call.n, sc.flipped)
        problem = GemmProblem(call.dt, m, n, call.k, op_a, op_b, lda=pa.ld, ldb=pb.ld, ldc=sc.ld, offset_a=pa.offset,
                              offset_b=pb.offset, offset_c=sc.offset, batch=sc.layers, stride_a=pa.stride,
                              stride_b=pb.stride, stride_c=sc.stride)
        # past 32-bit indexing a product of device arrays alone runs in blocks; anything else cannot
        blockable = problem.batch == 1 and self.device_only
        problem.validate(index_limit=None if blockable else index_blocks.INDEX_LIMIT)
        self.problem = problem
        self.blocked = blockable and index_blocks.exceeds(problem)
        # an empty product makes no plan: nothing runs (a borrowed profile's pick would be verified first)
        planned = not (self.blocked or call.empty)
        self.limits = thresholds_for(self.ctx.device)
        self._layouts: list[tuple | None] = [None, None, None]      # host operands' storage (``_stored``)
        self.plan = cached_plan(self.ctx, problem.aligned(), o.config, o.edge) if planned else None
        self.layout = self._layout() if planned else None
        self.whole_bytes = self._whole_bytes(call) if planned and len(self.layout) == 1 else None
        # on a device of memory of its own a whole call crosses through page-locked memory, but for the
        # smallest
        self.staged = (self.whole_bytes is not None and not self.ctx.device.shares_host_memory
                       and sum(self.whole_bytes) >= self.limits.pinned_min_bytes)
        self._buffers: list[ocl.Buffer] | None = None        # the resident call's (``_resident_call``)
        self._buffers_lock = threading.Lock()

    def _whole_bytes(self, call: GemmCall) -> tuple[int, int, int] | None:
        """The bytes of the first and second operand the kernels read and of C, where the call's operands
        are numpy arrays all, each dense (its memory is its storage, in order, as for every call of this
        signature), taking together less than the device's ``overlap_min_bytes`` (on a device that shares
        the host's memory, ``shared_resident_bytes``): such a call copies its arrays whole, nothing to
        overlap, into buffers the route keeps (``_resident_call``) or, from ``pinned_min_bytes`` on a
        device of memory of its own, through page-locked memory into the pool's (``_staged_call``); else
        None."""
        operands = (call.a, call.b, call.c)
        if any(x is not None and not isinstance(x, np.ndarray) for x in operands):
            return None
        if not all(x is None or _dense(x) for x in operands):
            return None
        c_bytes = call.c.nbytes if call.c is not None else math.prod(call.shape) * self.dt.output.numpy.itemsize
        sizes = (call.b.nbytes, call.a.nbytes, c_bytes) if self.swapped else (call.a.nbytes, call.b.nbytes, c_bytes)
        limits = self.limits
        bound = limits.shared_resident_bytes if self.ctx.device.shares_host_memory else limits.overlap_min_bytes
        return sizes if sum(sizes) < bound else None

    def current(self) -> bool:
        """Whether this resolution still holds: its plan is the one a lookup would give again (the device's
        profile is unchanged). A blocked product makes its plans per block, afresh each call; an empty one
        is resolved afresh too (it costs nothing)."""
        return self.plan is not None and is_current(self.plan)

    def _layout(self) -> list[Part]:
        """The blocks the call runs in: one, the whole problem on ``plan``, where an operand lies on the
        device or the device shares the host's memory (nothing to overlap), else the blocks of
        ``row_blocks``, each on a plan of its own."""
        pr, plan, device = self.problem, self.plan, self.ctx.device
        whole_call = Part(pr, plan, pr.offset_a + pr.member_elements("A"), pr.offset_c + pr.member_elements("C"))
        if self.asynchronous or device.shares_host_memory:
            return [whole_call]
        waves = (plan.params, plan.slices) if isinstance(plan, LaunchPlan) else ()     # GEMV's plan has no tiles
        spans = row_blocks(pr, device.compute_units, self.limits, *waves)
        if len(spans) == 1:
            return [whole_call]
        parts = [replace(pr, m=r1 - r0, offset_a=pr.offset_a + (r0 if pr.op_a.transposed else r0 * pr.lda),
                         offset_c=pr.offset_c + r0 * pr.ldc) for r0, r1 in spans]
        return [Part(part, cached_plan(self.ctx, part.aligned(), self.config, self.edge),
                     part.offset_a + part.member_elements("A"), part.offset_c + part.member_elements("C"))
                for part in parts]

    def run(self, a: Matrix, b: Matrix, c: Matrix | None, options: GemmOptions) -> Matrix:
        """The product of these operands (of the call this route was resolved for, or of one of the same
        signature): bind their memory, the scalars and the events, and enqueue."""
        pr = self.problem
        if workload.RECORDER is not None:
            workload.RECORDER.record("gemm", pr.dtype.key, "NT"[pr.op_a.transposed] + "NT"[pr.op_b.transposed],
                                     pr.m, pr.n, pr.k, pr.batch)
        alpha, beta = checked_scalars(options, self.dt, self.has_c)
        wait_for = event_list(options.wait_for)
        if wait_for and not self.asynchronous:
            raise ArgumentError("wait_for is for calls on device arrays; numpy operands are read when the call is "
                                "made")
        ctx = self.ctx
        if c is not None:
            out = c
        elif self.asynchronous:
            out = ocl.empty_array(ctx.queue, self.shape, self.dt.output.numpy)
        else:
            out = host_result(ctx, self.shape, self.dt.output.numpy, self.limits)
        if pr.m == 0 or pr.n == 0 or pr.batch == 0:
            return out
        wait_for = events_of([a, b, c], ctx.queue) + wait_for
        if self.staged:
            return self._staged_call(a, b, out, alpha, beta, wait_for)
        if self.whole_bytes is not None and self._buffers_lock.acquire(blocking=False):
            try:
                return self._resident_call(a, b, out, alpha, beta, wait_for)
            finally:
                self._buffers_lock.release()
        if not self.device_only:
            return self._with_transfers(a, b, out, alpha, beta, wait_for)
        # device arrays alone: nothing to upload; the offsets are this call's own (the key holds their class)
        size_a, size_b, size_c = self.itemsizes
        offset_a, offset_b = a.offset // size_a, b.offset // size_b
        offset_c = out.offset // (size_c or out.dtype.itemsize)
        if self.swapped:
            offsets, buffers = (offset_b, offset_a, offset_c), (b.base_data, a.base_data, out.base_data)
        else:
            offsets, buffers = (offset_a, offset_b, offset_c), (a.base_data, b.base_data, out.base_data)
        if self.blocked:
            placed = replace(pr, offset_a=offsets[0], offset_b=offsets[1], offset_c=offsets[2])
            events = index_blocks.enqueue_blocks(ctx, placed, self.config, self.edge, buffers, alpha, beta, wait_for)
        else:
            if not self.plan.allocated:
                check_memory(ctx, list(self.plan.temporary_bytes().values()))
            events = self.plan.enqueue(*buffers, alpha=alpha, beta=beta, wait_for=wait_for, offsets=offsets)
        # the last launch ends after every event C held (each was waited for, or lies on this in-order
        # queue): it alone stands for them, so a loop that writes one C keeps one event to look at
        if events:
            out.events.clear()
        hand_events(out, events[-1:], ctx.queue)
        return out

    def _resident_call(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha, beta, wait_for: list[ocl.Event]
                       ) -> np.ndarray:
        """The smallest whole call (``whole_bytes``, not ``staged``): each array copied from where it lies into a
        buffer the route keeps (made at its first call, checked against the device's memory with the plan's
        temporaries). The caller holds the buffers' lock (a call that finds them taken runs on the pool's,
        ``_with_transfers``)."""
        if self._buffers is None:
            check_memory(self.ctx, [*self.whole_bytes, *self.plan.temporary_bytes().values()])
            self._buffers = [ocl.device_buffer(self.ctx.context, size) for size in self.whole_bytes]
        first, second = (b, a) if self.swapped else (a, b)
        self._enqueue_whole(self._buffers, [first, second] + ([out] if beta != 0 else []), out, alpha, beta, wait_for)
        return out

    def _staged_call(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, alpha, beta, wait_for: list[ocl.Event]
                     ) -> np.ndarray:
        """A whole call through page-locked memory (``staged``): the arrays that are not page-locked
        themselves (earlier calls' results are) copied there at once by the copy threads (``crossing``), into
        the pool's buffers, and C read back into the memory's first bytes where it is not page-locked (after
        the uploads), then copied out."""
        ctx = self.ctx
        first, second = (b, a) if self.swapped else (a, b)
        uploads = [as_bytes(x) for x in [first, second] + ([out] if beta != 0 else [])]
        result = as_bytes(out)
        crossed = crossing(result_pool(ctx), uploads, result)
        check_memory(ctx, [*self.whole_bytes, *([] if self.plan.allocated else self.plan.temporary_bytes().values())])
        taken = [(ctx.buffers.take(size), size) for size in self.whole_bytes]
        done = False
        try:
            with page_locked(ctx, crossed.nbytes) if crossed.nbytes else contextlib.nullcontext() as memory:
                places = [x if start is None else memory[start:start + x.nbytes]
                          for x, start in zip(uploads, crossed.starts)]
                copy_all([(place, x) for place, x in zip(places, uploads) if place is not x])
                into = memory[:result.nbytes] if crossed.landing else result
                self._enqueue_whole([buffer for buffer, _ in taken], places, into, alpha, beta, wait_for)
                if crossed.landing:
                    parallel_copy(result, into)
            done = True
            return out
        finally:
            if done:
                ctx.buffers.give_all(taken)
            else:       # (commands may still use them: freed once they end)
                for buffer, _ in taken:
                    buffer.release()

    def _enqueue_whole(self, buffers: list[ocl.Buffer], sources: list[np.ndarray], into: np.ndarray, alpha, beta,
                       wait_for: list[ocl.Event]) -> None:
        """A whole call's commands: each of ``sources`` (the first and second operand, and C where it is
        read) uploaded from host memory, the plan's launches, and C read back into ``into``, blocking."""
        queue = self.ctx.queue
        # (the uploads' events held: pyopencl's event of a copy from host memory waits for it as it goes)
        uploads = [ocl.copy(queue, buffer, source, is_blocking=False) for buffer, source in zip(buffers, sources)]
        events = self.plan.enqueue(*buffers, alpha=alpha, beta=beta, wait_for=wait_for + uploads[-1:])
        ocl.copy(queue, into, buffers[2], wait_for=events[-1:], is_blocking=True)

    def _stored(self, i: int, x: Matrix, name: str) -> Stored:
        """Operand ``i`` (A, B, C) of a call as row-major storage: its layout, the same for every call of
        this route's signature, worked out once; only its memory is the call's own. One whose strides
        allow no storage in place is copied every call."""
        layout = self._layouts[i]
        if layout is None:
            layout = storage_layout(x)
            if layout is None:
                return stored(x, name)
            self._layouts[i] = layout
        return placed(x, layout)

    def _with_transfers(self, a: Matrix, b: Matrix, out: Matrix, alpha, beta, wait_for: list[ocl.Event]) -> Matrix:
        """A call with host operands: uploads, the product in the blocks of the layout, and a host
        result's download, overlapping where there are several blocks."""
        sa, sb, sc = (self._stored(i, x, name) for i, (x, name) in enumerate(((a, "a"), (b, "b"), (out, "c"))))
        operands = (sb, sa, sc) if self.swapped else (sa, sb, sc)
        if len(self.layout) == 1:
            blocks_of_c = one_block(operands, _product(self.layout[0].plan, self.problem, alpha, beta))
        else:
            blocks_of_c = [Block((part.a_end, operands[1].elements, part.c_end), (part.problem.offset_c, part.c_end),
                                 _product(part.plan, part.problem, alpha, beta)) for part in self.layout]
        temporaries = [size for p in {part.plan for part in self.layout} if not p.allocated
                       for size in p.temporary_bytes().values()]
        # C is uploaded only when beta is not 0: it is not read then
        return run_blocks(self.ctx, operands, (True, True, beta != 0), out, temporaries, blocks_of_c, wait_for,
                          self.limits)


def _dense(x: np.ndarray) -> bool:
    """Whether a host array's memory is its row-major storage (of it or of its transpose), in order."""
    layout = storage_layout(x)
    return (layout is not None and (x.flags.c_contiguous or x.flags.f_contiguous)
            and Stored(*layout).elements == x.size)


def row_blocks(problem: GemmProblem, compute_units: int, limits: Thresholds, params: KernelParams | None = None,
               layers: int = 1) -> list[tuple[int, int]]:
    """The blocks [r0, r1) of C's rows that a product of host arrays runs in (one for a batch): about
    ``limits.block_tiles`` tiles of 128 x 128 per compute unit each (a block of fewer would leave units
    idle), at most ``limits.max_blocks``, each a multiple of ``limits.block_rows`` rows, and two at least
    from ``limits.pipelined_elements`` elements of C: while the device computes one block, the next
    block's rows of A are uploaded and the last block's C comes back, where in one block the device would
    idle through the uploads and the download. Given the plan's ``params`` and its ``layers`` of
    work-groups (K slices), no fewer rows than keep its work-groups in as few waves over the blocks as
    over the whole product: a block that leaves units idle makes the device's time longer than its
    overlapped copies make it shorter."""
    m, n = problem.m, problem.n
    if problem.batch != 1:
        return [(0, m)]
    count = round(m * n / (limits.block_tiles * compute_units * 128 * 128))
    if m * n >= limits.pipelined_elements:
        count = max(count, 2)
    count = max(1, min(limits.max_blocks, count, m // limits.block_rows))

    def waves(spans: list[tuple[int, int]]) -> int:
        return sum(ceil_div(c_blocks(params, r1 - r0, n) * layers, compute_units) for r0, r1 in spans)

    if params is not None:
        whole = waves([(0, m)])
        while count > 1 and waves(_spans(m, count, limits.block_rows)) > whole:
            count -= 1
    return _spans(m, count, limits.block_rows)


def _spans(m: int, count: int, block_rows: int) -> list[tuple[int, int]]:
    """``count`` blocks of C's m rows, each a multiple of ``block_rows`` rows but the last."""
    step = round_up(ceil_div(m, count), block_rows) if count > 1 else max(m, 1)
    return [(r0, min(r0 + step, m)) for r0 in range(0, m, step)] or [(0, m)]


def _product(plan: LaunchPlan, part: GemmProblem, alpha, beta) -> Enqueue:
    """The launches of ``plan`` on ``part``'s offsets, as a block enqueues them."""
    def enqueue(buffers: list[ocl.Buffer], events: list[ocl.Event]) -> list[ocl.Event]:
        return plan.enqueue(*buffers, alpha=alpha, beta=beta, wait_for=events,
                            offsets=(part.offset_a, part.offset_b, part.offset_c))
    return enqueue
