"""What a call costs the host: repeated products queued back to back, for each kind of operand a program
hands autogemm, beside the least the same work can cost and, where torch is installed with CUDA,
``torch.matmul`` in the same run.

- ``pyopencl``: ``gemm`` on device arrays, which only enqueues; the host's time per call is the loop's
  wall time over its calls (the queue is drained after the loop). Beside it, the bare plan's ``enqueue``
  of the same launches. The arrays lie on a queue without profiling, as a program's usually do (on a
  profiling queue every launch costs the host more).
- ``numpy``: ``gemm`` from numpy to numpy, which blocks; beside it the same work by hand on the same plan
  (the operands copied in, the launches, C copied out, waited for), so that what ``gemm`` adds beyond
  the copies and the kernels is the difference. A device that shares the host's memory has no bare
  figure: ``gemm`` copies nothing there, so the copies by hand are no floor.
- ``torch``: ``gemm`` on CUDA tensors (the CUDA path, enqueued on torch's current stream) against
  ``torch.matmul`` of the same tensors into the same output.

Every result is checked against float64 after the loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..accuracy import KnownReference, random_matrix
from ..api import gemm
from ..blas import GemmProblem
from ..blas.plans import plan_for, round_trip
from ..dtypes import Dtype
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from . import peers

#: What each row of the table compares.
PYOPENCL, NUMPY, TORCH = "pyopencl", "numpy", "torch"


@dataclass
class CallCost:
    """The host's seconds per call of one kind of operand and size: autogemm's high-level call, the
    least the same work costs (``bare``: the plan's own enqueue, or the copies and launches by hand) and
    ``torch.matmul`` where it ran; ``error``: the relative error of the last result against float64."""

    kind: str
    dtype: str
    n: int
    calls: int
    call_seconds: float
    bare_seconds: float | None
    torch_seconds: float | None
    error: float

    @property
    def added_seconds(self) -> float | None:
        """What the high-level call adds to the bare work, per call."""
        return None if self.bare_seconds is None else self.call_seconds - self.bare_seconds


def per_call(run: Callable[[], object], calls: int, drain: Callable[[], object]) -> float:
    """Seconds per call of ``calls`` calls of ``run`` back to back (after a warm-up of a tenth of them),
    the loop's wall time; ``drain`` waits for what they enqueued, after the clock stops (and before it
    starts, so that the loop begins on an idle device)."""
    for _ in range(max(1, calls // 10)):
        run()
    drain()
    start = time.perf_counter()
    for _ in range(calls):
        run()
    seconds = time.perf_counter() - start
    drain()
    return seconds / calls


def on_device_arrays(ctx: DeviceContext, dt: Dtype, n: int, calls: int, rng: np.random.Generator) -> CallCost:
    """``gemm`` on pyopencl arrays against its plan's bare ``enqueue``."""
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    ctx = ctx.for_calls
    queue = ctx.queue
    da, db = ocl.to_device(queue, a), ocl.to_device(queue, b)
    dc = ocl.to_device(queue, np.full((n, n), np.nan, dt.output.numpy))
    plan = plan_for(ctx, GemmProblem.dense(dt, n, n, n))
    bare = per_call(lambda: plan.enqueue(da.data, db.data, dc.data), calls, queue.finish)
    dc.set(np.full((n, n), np.nan, dt.output.numpy))
    call = per_call(lambda: gemm(da, db, dc), calls, queue.finish)
    error = _error(dt, a, b, dc.get())
    plan.release()
    return CallCost(PYOPENCL, dt.key, n, calls, call, bare, _torch_matmul(a, b, calls), error)


def on_host_arrays(ctx: DeviceContext, dt: Dtype, n: int, calls: int, rng: np.random.Generator) -> CallCost:
    """``gemm`` from numpy to numpy against the same copies and launches made by hand on its plan."""
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    c = np.full((n, n), np.nan, dt.output.numpy)
    ctx = ctx.for_calls         # where gemm runs numpy operands
    queue = ctx.queue
    buffers = [ocl.device_buffer(ctx.context, x.nbytes) for x in (a, b, c)]
    plan = plan_for(ctx, GemmProblem.dense(dt, n, n, n))
    by_hand = round_trip(plan, buffers, a, b, c)

    bare = None if ctx.device.shares_host_memory else per_call(by_hand, calls, queue.finish)
    c[...] = np.nan
    call = per_call(lambda: gemm(a, b, c), calls, queue.finish)
    error = _error(dt, a, b, c)
    plan.release()
    for buffer in buffers:
        buffer.release()
    return CallCost(NUMPY, dt.key, n, calls, call, bare, None, error)


def on_cuda_tensors(dt: Dtype, n: int, calls: int, rng: np.random.Generator) -> CallCost | None:
    """``gemm`` on torch CUDA tensors against ``torch.matmul`` into the same output; None without torch
    and CUDA."""
    torch = peers.torch_cuda()
    if torch is None:
        return None
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    ta, tb = peers.to_cuda(torch, a), peers.to_cuda(torch, b)
    out = torch.full((n, n), float("nan"), dtype=ta.dtype, device=ta.device)
    matmul = _torch_matmul(a, b, calls, tf32=dt.precision == "tf32")
    precision = dt.precision or None
    call = per_call(lambda: gemm(ta, tb, out, precision=precision), calls, torch.cuda.synchronize)
    return CallCost(TORCH, dt.key, n, calls, call, None, matmul, _error(dt, a, b, peers.to_numpy(torch, out)))


def _torch_matmul(a: np.ndarray, b: np.ndarray, calls: int, tf32: bool = False) -> float | None:
    """Seconds per call of ``torch.matmul`` on CUDA copies of ``a`` and ``b`` into one output, queued back
    to back (float32 in TF32 where ``tf32``); None without torch and CUDA."""
    torch = peers.torch_cuda(tf32)
    if torch is None:
        return None
    ta, tb = peers.to_cuda(torch, a), peers.to_cuda(torch, b)
    out = torch.empty((a.shape[0], b.shape[1]), dtype=ta.dtype, device=ta.device)
    return per_call(lambda: torch.matmul(ta, tb, out=out), calls, torch.cuda.synchronize)


def _error(dt: Dtype, a: np.ndarray, b: np.ndarray, got: np.ndarray) -> float:
    """The relative error of ``got`` against the float64 product; ``AssertionError`` past the dtype's
    tolerance (a wrong result is never reported as a timing)."""
    wide = dt.reference_numpy
    error, ok = KnownReference(dt, a.astype(wide) @ b.astype(wide), a.shape[1]).check(got)
    if not ok:
        raise AssertionError(f"{dt.key} {a.shape[0]}^3: wrong result (relative error {error:.1e})")
    return error
