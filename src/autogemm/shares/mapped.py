"""One device's rows of a product of host operands on a device that shares the host's memory (a CPU, an
integrated GPU): the kernels read A and B where they lie and write the share's rows of C in place,
through buffers made over the numpy arrays (``USE_HOST_PTR``), with no copies, as RaijinCL did on
single-chip CPU+GPU systems."""

from __future__ import annotations

import numpy as np

from ..blas import index_blocks
from ..blas.plan_cache import cached_plan
from ..blas.problem import GemmProblem, Op, addressable
from ..codelets.registry import KernelParams
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.memory import check_memory
from .host import HostGemm


class MappedShare:
    """Rows [start, stop) of C = alpha op(A) op(B) + beta C (a ``host.HostGemm``) on ``ctx``'s device,
    in the host's memory; ``run`` blocks until they are in C. Operands that are not C-contiguous are
    copied once (the buffers must cover row-major storage). Rows whose C or A would span more than the
    kernels index (``index_blocks.INDEX_LIMIT``) run in blocks of rows that do not. The plans'
    temporaries are checked against the device's memory when the share is made, before anything runs;
    ``host_bytes`` says what its copies take of the host's, at most, at once."""

    def __init__(self, ctx: DeviceContext, gemm: HostGemm, rows: tuple[int, int], config: KernelParams | None,
                 edge: str) -> None:
        self.ctx, self.gemm = ctx, gemm
        start, stop = rows
        m, n, k = gemm.shape
        op_a, op_b = Op.from_letter(gemm.trans_a, "trans_a"), Op.from_letter(gemm.trans_b, "trans_b")
        self.alignment = max(ctx.device.cl_device.mem_base_addr_align // 8, 1)
        self.a: np.ndarray | None = None             # A and B as the buffers cover them (``run``)
        self.b: np.ndarray | None = None
        lda = max(gemm.a.shape[1], 1)
        limit = addressable(gemm.dt, index_blocks.INDEX_LIMIT)
        step = max(1, min(limit // max(n, 1), limit // lda if not op_a.transposed else stop - start))
        #: (first row, end row, problem, plan) of each block
        self.blocks = []
        for r0 in range(start, stop, step):
            r1 = min(r0 + step, stop)
            problem = GemmProblem(gemm.dt, r1 - r0, n, k, op_a, op_b, lda=lda, ldb=max(gemm.b.shape[1], 1),
                                  ldc=max(n, 1), offset_a=r0 if op_a.transposed else 0)
            self.blocks.append((r0, r1, problem, cached_plan(ctx, problem.aligned(), config, edge)))
        plans = {plan for *_, plan in self.blocks}
        check_memory(ctx, [size for plan in plans if not plan.allocated for size in plan.temporary_bytes().values()])

    @property
    def host_bytes(self) -> int:
        """The most host memory the share's copies take at once: A where not C-contiguous and B where not
        also at an aligned address (copied once, ``run``), and a block's rows of A and C where not aligned
        (copied for the block)."""
        gemm = self.gemm
        whole = (0 if gemm.a.flags.c_contiguous else gemm.a.nbytes) + \
            (0 if self._in_place(gemm.b) else gemm.b.nbytes + self.alignment)

        def block(r0: int, r1: int, problem: GemmProblem) -> int:
            a_part = gemm.a if problem.op_a.transposed else gemm.a[r0:r1]
            # (a copy of A lies anywhere: its rows are taken as copied again)
            a_copied = not (gemm.a.flags.c_contiguous and self._in_place(a_part))
            return sum(x.nbytes + self.alignment for x, copied in ((a_part, a_copied),
                                                                   (gemm.c[r0:r1], not self._in_place(gemm.c[r0:r1])))
                       if copied)

        return whole + max((block(r0, r1, problem) for r0, r1, problem, _ in self.blocks), default=0)

    def _in_place(self, x: np.ndarray) -> bool:
        """Whether a buffer can be made over ``x`` as it lies: C-contiguous at an aligned address."""
        return x.flags.c_contiguous and x.ctypes.data % self.alignment == 0

    def run(self) -> None:
        """Enqueue each block's product on buffers over the host arrays and wait for its rows of C."""
        self.a = np.ascontiguousarray(self.gemm.a)
        self.b = address_aligned(np.ascontiguousarray(self.gemm.b), self.alignment)
        for block in self.blocks:
            self._run_block(*block)

    def _run_block(self, start: int, stop: int, problem: GemmProblem, plan) -> None:
        gemm, queue = self.gemm, self.ctx.queue
        rows = gemm.c[start:stop]
        if not rows.size:
            return
        # A's rows of op(A): stored rows (op N, a block of its own) or columns (op T: all of A, at an offset)
        a_part = address_aligned(self.a[start:stop] if not problem.op_a.transposed else self.a, self.alignment)
        target = address_aligned(rows, self.alignment, copy=gemm.beta != 0)      # C is not read where beta is 0
        buffers = [ocl.buffer_over(self.ctx.context, host, read_only)
                   for host, read_only in ((a_part if a_part.size else np.empty(1, self.a.dtype), True),
                                           (self.b if self.b.size else np.empty(1, self.b.dtype), True),
                                           (target, False))]
        try:
            events = plan.enqueue(*buffers, alpha=gemm.alpha, beta=gemm.beta,
                                  offsets=(problem.offset_a, problem.offset_b, problem.offset_c))
            # mapping C's buffer after the product makes the results visible in the host's array
            ocl.map_for_reading(queue, buffers[2], rows.shape, rows.dtype, wait_for=events[-1:])
        finally:
            queue.finish()
            for buf in buffers:
                buf.release()
        if target is not rows:
            rows[...] = target


def address_aligned(array: np.ndarray, alignment: int, copy: bool = True) -> np.ndarray:
    """``array`` (C-contiguous) where its address is a multiple of ``alignment`` bytes, else an array of
    its shape that is (holding a copy of it where ``copy``): a buffer made over host memory is read and
    written in place, and a device's kernels may do so with aligned vector instructions (PoCL on an
    AVX-512 CPU faulted on a C 16 bytes off a multiple of 32). ``alignment``: the device's base
    address alignment, in bytes."""
    if array.ctypes.data % alignment == 0:
        return array
    memory = np.empty(array.nbytes + alignment, np.uint8)
    start = -memory.ctypes.data % alignment
    placed = memory[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    if copy:
        placed[...] = array
    return placed
