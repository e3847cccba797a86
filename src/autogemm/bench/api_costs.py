"""Batches of small products and the cost of a call, measured the way the rest of ``bench`` measures:
fresh random data, a warm-up, the median of several runs, every result checked against float64.

- ``run_batch``: one batch (``batch`` products of n x n x n) computed three ways on the same data:
  autogemm's strided batch (one launch of each kernel, on the runtime ``gemm_batched`` of numpy stacks
  takes it to: OpenCL's or the CUDA path's, timed by its events), autogemm's ``gemm`` called in
  a Python loop over the matrices of device arrays (wall clock to the end of the last product: the loop's
  cost is on the host), and cuBLAS's batched GEMM through ``torch.bmm`` (CUDA events).
- ``call_overhead``: what the high-level call on device arrays costs on the host beyond the bare plan's
  ``enqueue`` of the same kernels.
- ``plan_reuse``: products that share A, as whole products (each packing A) and in the four-step
  ``GemmPlan`` (A copied once), by profiling events."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..accuracy import KnownReference, apply_op, gemm_flops, random_matrix
from ..api import GemmPlan, gemm
from ..blas import GemmProblem, LaunchPlan
from ..blas.cuda_gemm import CudaGemm
from ..blas.plans import gemm_plan
from ..dtypes import Dtype
from ..engine import GemmOptions
from ..engine.call import GemmCall
from ..engine.routes.cuda_host import cuda_host_route
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.timing import event_seconds, hold, median, time_enqueue
from . import peers
from .peers import PeerResult
from .runner import AUTOGEMM, Measurement, Rates, measure, resident_result
from .shapes import Shape

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
    plan = batch_plan(ctx, dt, a, b)
    case = BatchCase(dt.key, batch, n, plan.params.describe())
    reference, flops = stack_reference(dt, a, b), batch * gemm_flops(dt, n, n, n)
    calls: list[tuple[str, Callable[[], PeerResult | None]]] = [
        (STRIDED, lambda: _strided(dt, plan, a, b, runs)),
        (LOOP, lambda: _loop(ctx, dt, a, b, max(1, runs // 3)))]
    if with_torch:
        calls.append((BMM, lambda: _bmm(a, b, runs)))
    for name, call in calls:
        case.measurements.append(measure(name, call, reference, flops, dt))
    return case


def batch_plan(ctx: DeviceContext, dt: Dtype, a: np.ndarray, b: np.ndarray) -> LaunchPlan | CudaGemm:
    """The plan ``gemm_batched`` computes the strided batch of the stacks ``a`` and ``b`` with: the CUDA
    path's where it takes the batch, else ``ctx``'s OpenCL plan."""
    options = GemmOptions(device=ctx.device, precision=dt.precision or None, out_dtype=dt.output.numpy)
    call = GemmCall.build(a, b, None, a.shape[0], options).in_working_dtype()
    route = cuda_host_route(call)
    if route is not None:
        return route.plan
    return gemm_plan(ctx, GemmProblem.dense(call.dt, a.shape[1], b.shape[2], a.shape[2], batch=a.shape[0]))


def _poisoned(dt: Dtype, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C of the product of the stacks ``a`` and ``b`` in ``dt``'s output type, all NaN."""
    return np.full(a.shape[:-1] + b.shape[-1:], np.nan, dt.output.numpy)


def _device_operands(ctx: DeviceContext, dt: Dtype, a: np.ndarray, b: np.ndarray) -> tuple[ocl.DeviceArray, ...]:
    """A and B on the device, and a NaN-poisoned C."""
    queue = ctx.queue
    c = ocl.to_device(queue, _poisoned(dt, a, b))
    return ocl.to_device(queue, a), ocl.to_device(queue, b), c


def _strided(dt: Dtype, plan: LaunchPlan | CudaGemm, a: np.ndarray, b: np.ndarray, runs: int) -> PeerResult:
    """The strided batch of ``plan`` on stacks on its device, C poisoned with NaN, as its runtime times it."""
    return resident_result(STRIDED, plan, a, b, Shape(a.shape[1], b.shape[2], a.shape[2], "NN"),
                           _poisoned(dt, a, b), runs)


def _loop(ctx: DeviceContext, dt: Dtype, a: np.ndarray, b: np.ndarray, runs: int) -> PeerResult:
    """``gemm`` once per matrix on views of device stacks, as a program without a batched call would."""
    da, db, dc = _device_operands(ctx, dt, a, b)
    precision = dt.precision or None

    def once() -> None:
        for i in range(a.shape[0]):
            gemm(da[i], db[i], dc[i], precision=precision)
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


def idle_host_seconds(queue: ocl.Queue, call: Callable[[], object], calls: int = 200) -> float:
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
    plan_done_seconds: float     # wall time from ``LaunchPlan.enqueue`` to its end, waited for
    call_done_seconds: float     # wall time from ``gemm`` to its result, waited for

    @property
    def overhead_seconds(self) -> float:
        """What the high-level call costs the host beyond the bare plan."""
        return self.call_seconds - self.plan_seconds

    @property
    def latency_overhead_seconds(self) -> float:
        """How much later the high-level call's result is ready than the bare plan's."""
        return self.call_done_seconds - self.plan_done_seconds


def call_overhead(ctx: DeviceContext, dt: Dtype, n: int = 256, calls: int = 200, rng: np.random.Generator | None = None,
                  ) -> Overhead:
    """Host seconds of one call of ``gemm`` on device arrays and of the bare plan's ``enqueue`` (the
    median of ``calls`` calls, each made on an idle queue, after a warm-up), the same to the end of the
    product (each waited for), and the device seconds of the kernels; the high-level call's result is
    checked."""
    rng = rng or np.random.default_rng(0)
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    da, db, dc = _device_operands(ctx, dt, a, b)
    plan = gemm_plan(ctx, GemmProblem.dense(dt, n, n, n))

    def bare() -> list[ocl.Event]:
        return plan.enqueue(da.data, db.data, dc.data)

    try:
        kernel = median(time_enqueue(ctx.queue, bare, warmup=1, runs=5))
        times = [idle_host_seconds(ctx.queue, call, calls) for call in (
            bare, lambda: gemm(da, db, dc), lambda: bare()[-1].wait(), lambda: gemm(da, db, dc).finish())]
        error, ok = stack_reference(dt, a, b).check(dc.get())
        if not ok:
            raise AssertionError(f"gemm on device arrays was wrong (relative error {error:.1e})")
        return Overhead(n, kernel, *times)
    finally:
        plan.release()


@dataclass
class Reuse:
    dtype: str
    m: int
    n: int
    k: int
    trans_a: str
    products: int
    a_packed: bool               # False: the kernel reads A in place, so there is no copy to save
    whole_seconds: float         # each product whole: A packed for every one
    reused_seconds: float        # ``GemmPlan``: A copied once, then (copy B, compute) per product
    whole_busy: float            # the share of each span the device computed (the rest: waiting for the host)
    reused_busy: float
    launches: str

    @property
    def saved(self) -> float:
        return 1 - self.reused_seconds / self.whole_seconds


def plan_reuse(ctx: DeviceContext, dt: Dtype, m: int, n: int, k: int, products: int = 4, runs: int = 5,
               rng: np.random.Generator | None = None) -> Reuse:
    """A B1, A B2, ... (``products`` of them, m x n x k) timed by profiling events (median of ``runs``,
    first start to last end): as whole products, each packing A, and with ``GemmPlan`` copying A once.
    A is stored transposed or not, whichever the configuration must pack (the case the plan is for);
    every result is checked."""
    rng = rng or np.random.default_rng(0)
    plans = [GemmPlan(ctx.device, dt.numpy, m, n, k, trans_a, precision=dt.precision or None) for trans_a in "NT"]
    packing = [p for p in plans if p.launch_plan.staging["A"].packed]
    plan = (packing or plans)[0]
    for other in plans:
        if other is not plan:
            other.release()
    trans_a = "T" if plan.problem.op_a.transposed else "N"
    a = random_matrix(rng, dt, (k, m) if trans_a == "T" else (m, k))
    bs = [random_matrix(rng, dt, (k, n)) for _ in range(products)]
    queue = plan.queue
    da, dbs = ocl.to_device(queue, a), [ocl.to_device(queue, b) for b in bs]
    poison = np.full((m, n), np.nan, dt.output.numpy)
    cs = [ocl.to_device(queue, poison) for _ in bs]
    whole = plan.launch_plan

    def each_whole() -> list[ocl.Event]:
        return [e for db, c in zip(dbs, cs) for e in whole.enqueue(da.data, db.data, c.data)]

    def a_once() -> list[ocl.Event]:
        return plan.copy_a(da) + [e for db, c in zip(dbs, cs) for e in plan.copy_b(db) + plan.compute(c)]

    try:
        seconds, busy = {}, {}
        for name, enqueue in (("whole", each_whole), ("reused", a_once)):
            spans, shares = [], []
            for _ in range(runs + 1):          # the first is the warm-up
                for c in cs:
                    c.set(poison)
                hold(ctx.queue)
                events = enqueue()
                spans.append(event_seconds(events[0], events[-1]))
                shares.append(sum(event_seconds(e) for e in events) / spans[-1])
            seconds[name], busy[name] = median(spans[1:]), median(shares[1:])
            reference = apply_op(a.astype(dt.reference_numpy), trans_a)
            for c, b in zip(cs, bs):
                error, ok = stack_reference(dt, reference, b).check(c.get())
                if not ok:
                    raise AssertionError(f"{name}: wrong product (relative error {error:.1e})")
        return Reuse(dt.key, m, n, k, trans_a, products, whole.staging["A"].packed, seconds["whole"],
                     seconds["reused"], busy["whole"], busy["reused"], plan.describe())
    finally:
        plan.release()
