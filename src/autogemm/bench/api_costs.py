"""Batches of small products and the cost of a call, measured the way the rest of ``bench`` measures:
fresh random data, a warm-up, the median of several runs, every result checked against float64.

- ``run_batch``: one batch (``batch`` products of n x n x n) computed three ways on the same data:
  autogemm's strided batch (one launch of each kernel, profiling events), autogemm's ``gemm`` called in
  a Python loop over the matrices of device arrays (wall clock to the end of the last product: the loop's
  cost is on the host), and cuBLAS's batched GEMM through ``torch.bmm`` (CUDA events).
- ``call_overhead``: what the high-level call on device arrays costs on the host beyond the bare plan's
  ``enqueue`` of the same kernels.
- ``plan_reuse``: two products that share A, as two whole calls (each packing A) and in the four-step
  ``GemmPlan`` (A copied once), by profiling events."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..api import GemmPlan, gemm
from ..blas import LaunchPlan, GemmProblem
from ..checking import apply_op, gemm_flops, random_matrix
from ..dtypes import Dtype
from ..runtime.context import DeviceContext
from ..runtime.timing import median, time_enqueue
from . import peers
from .peers import PeerResult
from .runner import AUTOGEMM, KnownReference, Measurement, Rates, measure

STRIDED, LOOP, BMM = AUTOGEMM + " strided", AUTOGEMM + " loop", "torch.bmm"


@dataclass
class BatchCase(Rates):
    dtype: str
    batch: int
    n: int
    config: str
    measurements: list[Measurement] = field(default_factory=list)

    def ratio(self, peer: str) -> float | None:
        """The strided batch's rate over ``peer``'s, when both ran correctly."""
        ours, theirs = self.rate(STRIDED), self.rate(peer)
        return ours / theirs if ours and theirs else None


def stack_reference(dt: Dtype, a: np.ndarray, b: np.ndarray) -> KnownReference:
    """The float64 (complex128) products of a whole stack."""
    wide = dt.reference_numpy
    return KnownReference(dt, a.astype(wide) @ b.astype(wide), a.shape[-1])


def run_batch(ctx: DeviceContext, dt: Dtype, batch: int, n: int, runs: int, rng: np.random.Generator,
              with_torch: bool = True) -> BatchCase:
    a, b = random_matrix(rng, dt, (batch, n, n)), random_matrix(rng, dt, (batch, n, n))
    problem = GemmProblem(dt, n, n, n, lda=n, ldb=n, ldc=n, batch=batch, stride_a=n * n, stride_b=n * n,
                          stride_c=n * n)
    plan = LaunchPlan(ctx, problem)
    case = BatchCase(dt.key, batch, n, plan.params.describe())
    reference, flops = stack_reference(dt, a, b), batch * gemm_flops(dt, n, n, n)
    calls: list[tuple[str, Callable[[], PeerResult | None]]] = [
        (STRIDED, lambda: _strided(ctx, plan, a, b, runs)),
        (LOOP, lambda: _loop(ctx, a, b, max(1, runs // 3)))]
    if with_torch:
        calls.append((BMM, lambda: _bmm(a, b, runs)))
    for name, call in calls:
        case.measurements.append(measure(name, call, reference, flops, dt))
    return case


def _device_operands(ctx: DeviceContext, a: np.ndarray, b: np.ndarray) -> tuple[cl_array.Array, ...]:
    """A and B on the device, and a NaN-poisoned C."""
    queue = ctx.queue
    c = cl_array.to_device(queue, np.full(a.shape[:-1] + b.shape[-1:], np.nan, a.dtype))
    return cl_array.to_device(queue, a), cl_array.to_device(queue, b), c


def _strided(ctx: DeviceContext, plan: LaunchPlan, a: np.ndarray, b: np.ndarray, runs: int) -> PeerResult:
    da, db, dc = _device_operands(ctx, a, b)
    try:
        times = time_enqueue(lambda: plan.enqueue(da.data, db.data, dc.data), warmup=1, runs=runs)
        return PeerResult(STRIDED, median(times), dc.get())
    finally:
        plan.release()


def _loop(ctx: DeviceContext, a: np.ndarray, b: np.ndarray, runs: int) -> PeerResult:
    """``gemm`` once per matrix on views of device stacks, as a program without a batched call would."""
    da, db, dc = _device_operands(ctx, a, b)

    def once() -> None:
        for i in range(a.shape[0]):
            gemm(da[i], db[i], dc[i])
        dc.finish()

    once()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return PeerResult(LOOP, statistics.median(times), dc.get())


def _bmm(a: np.ndarray, b: np.ndarray, runs: int) -> PeerResult | None:
    torch = peers.torch_cuda()
    if torch is None:
        return None
    ta, tb = peers.to_cuda(torch, a), peers.to_cuda(torch, b)
    out = torch.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=ta.dtype, device="cuda")
    seconds = peers.cuda_median(lambda: torch.bmm(ta, tb, out=out), runs, before=lambda: out.fill_(float("nan")))
    return PeerResult(BMM, seconds, peers.to_numpy(torch, out))


def idle_host_seconds(queue: cl.CommandQueue, call: Callable[[], object], calls: int = 200) -> float:
    """Median host seconds of ``call`` made on an idle ``queue`` (finished before each), after a warm-up."""
    call()
    times = []
    for _ in range(calls):
        queue.finish()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    queue.finish()
    return statistics.median(times)


@dataclass
class Overhead:
    n: int
    kernel_seconds: float        # the plan's launches on the device, one call
    plan_seconds: float          # host time of one ``LaunchPlan.enqueue``
    call_seconds: float          # host time of one ``gemm`` on device arrays

    @property
    def overhead_seconds(self) -> float:
        return self.call_seconds - self.plan_seconds


def call_overhead(ctx: DeviceContext, dt: Dtype, n: int = 256, calls: int = 200, rng: np.random.Generator | None = None,
                  ) -> Overhead:
    """Host seconds of one call of ``gemm`` on device arrays and of the bare plan's ``enqueue`` (the
    median of ``calls`` calls, each made on an idle queue, after a warm-up), and the device seconds of
    the kernels; the high-level call's result is checked."""
    rng = rng or np.random.default_rng(0)
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    da, db, dc = _device_operands(ctx, a, b)
    plan = LaunchPlan(ctx, GemmProblem.dense(dt, n, n, n))

    try:
        kernel = median(time_enqueue(lambda: plan.enqueue(da.data, db.data, dc.data), warmup=1, runs=5))
        bare = idle_host_seconds(ctx.queue, lambda: plan.enqueue(da.data, db.data, dc.data), calls)
        high = idle_host_seconds(ctx.queue, lambda: gemm(da, db, dc), calls)
        error, ok = stack_reference(dt, a, b).check(dc.get())
        if not ok:
            raise AssertionError(f"gemm on device arrays was wrong (relative error {error:.1e})")
        return Overhead(n, kernel, bare, high)
    finally:
        plan.release()


@dataclass
class Reuse:
    n: int
    trans_a: str
    twice_seconds: float         # two whole products, each packing its operands
    reused_seconds: float        # copy A once; copy B, compute; copy B, compute
    launches: str


def plan_reuse(ctx: DeviceContext, dt: Dtype, n: int, trans_a: str = "T", runs: int = 5,
               rng: np.random.Generator | None = None) -> Reuse:
    """Device seconds (median of ``runs``, first event's start to last one's end) of A B1 and A B2 for
    n x n x n problems: as two ``LaunchPlan.enqueue`` calls, and with ``GemmPlan`` copying A once.
    Both results are checked."""
    rng = rng or np.random.default_rng(0)
    a, b1, b2 = (random_matrix(rng, dt, (n, n)) for _ in range(3))
    plan = GemmPlan(ctx.device, dt.numpy, n, n, n, trans_a, precision=dt.precision or None)
    queue = plan.queue
    da, db1, db2 = (cl_array.to_device(queue, x) for x in (a, b1, b2))
    c1, c2 = (cl_array.empty(queue, (n, n), dt.output.numpy) for _ in range(2))
    whole = plan.launch_plan

    def twice() -> list[cl.Event]:
        return whole.enqueue(da.data, db1.data, c1.data) + whole.enqueue(da.data, db2.data, c2.data)

    def reused() -> list[cl.Event]:
        return (plan.copy_a(da) + plan.copy_b(db1) + plan.compute(c1) + plan.copy_b(db2) + plan.compute(c2))

    try:
        seconds = {}
        for name, enqueue in (("twice", twice), ("reused", reused)):
            seconds[name] = median(time_enqueue(enqueue, warmup=1, runs=runs))
            for c, b in ((c1, b1), (c2, b2)):
                error, ok = stack_reference(dt, apply_op(a, trans_a), b).check(c.get())
                if not ok:
                    raise AssertionError(f"{name}: wrong product (relative error {error:.1e})")
        return Reuse(n, trans_a, seconds["twice"], seconds["reused"], plan.describe())
    finally:
        plan.release()
