"""GEMM on host operands shared among several targets by rows of C (``split.Split``): each GPU computes
its rows on its own queue while the host's BLAS (numpy's) computes the host's rows in place.

The order is RaijinCL's hybrid algorithm, for any number of devices: for every device, upload its rows of
op(A), all of op(B) (and its rows of C when beta is not 0), enqueue the product and the copy of its rows
of C back into the result, and flush the queue so that the device starts; then compute the host's rows;
then wait for the devices' copies and free their buffers. No callbacks (the seed measured that they cost
CPU time) and nothing blocks before the host's part is done."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..checking import apply_op
from ..codelets.families import KernelParams
from ..dtypes import Dtype
from ..runtime.context import DeviceContext
from ..runtime.memory import check_memory
from .plan_cache import cached_plan
from .problem import GemmProblem, Op
from .split import Split

#: The target that is the host's own BLAS rather than an OpenCL device.
HOST = "host"
Target = DeviceContext | str


def target_name(target: Target) -> str:
    """'host', or the device's name."""
    return HOST if target == HOST else target.device.name.strip()


@dataclass(frozen=True)
class HostGemm:
    """C = alpha op(A) op(B) + beta C on host arrays: ``a`` and ``b`` as stored (op given by their BLAS
    letters), ``c`` the row-major, contiguous m x n result (read only when beta is not 0)."""

    dt: Dtype
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    trans_a: str
    trans_b: str
    alpha: complex | float
    beta: complex | float

    @property
    def shape(self) -> tuple[int, int, int]:
        """(m, n, k)."""
        m, k = apply_op(self.a, self.trans_a).shape
        return m, apply_op(self.b, self.trans_b).shape[1], k

    def rows_of_a(self, start: int, stop: int) -> np.ndarray:
        """The stored part of A that rows [start, stop) of op(A) come from, contiguous."""
        part = self.a[start:stop] if self.trans_a == "N" else self.a[:, start:stop]
        return np.ascontiguousarray(part)

    def on_host(self, start: int, stop: int) -> None:
        """Rows [start, stop) of C by numpy's BLAS, in the compute type (float32 for 16-bit dtypes)."""
        if start == stop:
            return
        compute = self.dt.compute.numpy
        x = apply_op(self.a, self.trans_a)[start:stop].astype(compute, copy=False)
        y = apply_op(self.b, self.trans_b).astype(compute, copy=False)
        rows = self.c[start:stop]
        product = x @ y
        if self.beta == 0:
            rows[...] = self.alpha * product if self.alpha != 1 else product
        else:
            rows[...] = self.alpha * product + self.beta * rows.astype(compute)


class _DeviceShare:
    """One device's rows of C: its buffers, uploads, product and the copy back, enqueued by ``start``."""

    def __init__(self, ctx: DeviceContext, gemm: HostGemm, rows: tuple[int, int], config: KernelParams | None,
                 edge: str) -> None:
        self.ctx, self.gemm, (self.start_row, self.stop_row) = ctx, gemm, rows
        m, n, k = gemm.shape
        count = self.stop_row - self.start_row
        problem = GemmProblem.dense(gemm.dt, count, n, k, Op.from_letter(gemm.trans_a, "trans_a"),
                                    Op.from_letter(gemm.trans_b, "trans_b"))
        self.plan = cached_plan(ctx, problem, config, edge)
        self.a_rows = gemm.rows_of_a(self.start_row, self.stop_row)
        self.b = np.ascontiguousarray(gemm.b)
        self.c_rows = gemm.c[self.start_row:self.stop_row]
        self.buffers: list[cl.Buffer] = []

    def sizes(self) -> list[int]:
        """Bytes this share needs on its device: its operands and the plan's temporaries."""
        temporaries = [] if self.plan.allocated else list(self.plan.temporary_bytes().values())
        return [self.a_rows.nbytes, self.b.nbytes, self.c_rows.nbytes, *temporaries]

    def start(self) -> cl.Event:
        """Enqueue the uploads, the product and the copy of C's rows back; flush; the copy's event."""
        queue, mf = self.ctx.queue, cl.mem_flags
        self.buffers = [cl.Buffer(self.ctx.context, mf.READ_WRITE, max(x.nbytes, 1))
                        for x in (self.a_rows, self.b, self.c_rows)]
        uploads = [cl.enqueue_copy(queue, buf, host, is_blocking=False)
                   for buf, host in zip(self.buffers, (self.a_rows, self.b, self.c_rows))
                   if host.size and (host is not self.c_rows or self.gemm.beta != 0)]
        events = self.plan.enqueue(*self.buffers, alpha=self.gemm.alpha, beta=self.gemm.beta, wait_for=uploads)
        done = cl.enqueue_copy(queue, self.c_rows, self.buffers[2], wait_for=events[-1:] or uploads, is_blocking=False)
        queue.flush()
        return done

    def release(self) -> None:
        for buf in self.buffers:
            buf.release()
        self.buffers = []


def run_split(targets: Sequence[Target], split: Split, gemm: HostGemm,
              configs: Sequence[KernelParams | None] | None = None, edge: str = "auto") -> None:
    """Compute ``gemm`` with ``split`` over ``targets`` (device contexts and ``HOST``, one per share of
    the split); ``configs`` per target (None: the device's profile). Every device share is planned and
    its memory checked before anything is enqueued."""
    m = gemm.shape[0]
    configs = list(configs) if configs is not None else [None] * len(targets)
    shares = [_DeviceShare(target, gemm, rows, config, edge)
              for target, rows, config in zip(targets, split.rows(m), configs)
              if target != HOST and rows[1] > rows[0]]
    for share in shares:
        check_memory(share.ctx, share.sizes())
    pending = []
    try:
        for share in shares:
            pending.append(share.start())
        for target, (start, stop) in zip(targets, split.rows(m)):
            if target == HOST:
                gemm.on_host(start, stop)
    finally:              # the devices' copies, also when the host's part failed: their buffers are freed
        for event in pending:
            event.wait()
        for share in shares:
            share.release()
