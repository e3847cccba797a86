"""Why one product runs as fast as it does: where a call of it goes, the plan chosen and where from, each
launch's device time and the gaps between them, the host's time to enqueue them, how many work-groups
the product's kernel gives each compute unit; on request the plans of the profile's predictor ranked
next to it, each timed; and, where torch has CUDA, cuBLAS's kernels for the same product (from torch's
profiler), so that the two can be read side by side."""

from __future__ import annotations

import itertools
import json
import statistics
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..accuracy import KnownReference, apply_op, gemm_flops, random_operands
from ..blas import GemmProblem, Op
from ..blas.complex_embedding import kernel_problem
from ..blas.cuda_gemm import CudaParams
from ..blas.launch_plan import LaunchPlan
from ..blas.plans import plan_for
from ..blas.selection import Selection, choose_cuda_params, choose_params, predicted_plans
from ..blas.vectors import VectorsPlan
from ..codelets.hopper import Schedule
from ..dtypes import Dtype
from ..engine.call import GemmCall, GemmOptions
from ..engine.dispatch import CUDA_PATH, OPENCL_PLAN, route_elsewhere
from ..engine.routes.cuda_host import CudaHostRoute
from ..errors import AutogemmError
from ..runtime.backend import CUDA
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.device import Device
from ..runtime.opencl.timing import hold
from . import peers
from .runner import launch_of, on_device, stored_operands
from .shapes import Shape


@dataclass(frozen=True)
class Launch:
    """One launch of a plan: what it is, its device seconds (median over the runs), and the idle seconds
    between the end of the launch before it and its start (0 for the first)."""

    name: str
    seconds: float
    gap_before: float


@dataclass(frozen=True)
class Alternative:
    """A plan the profile's predictor ranked for the product: its configuration and K split (0: stream-K),
    the rate predicted, and its device seconds as ``explain`` timed it (its result checked), or why it
    could not be timed."""

    config: str
    split: int
    predicted_gflops: float
    seconds: float | None          # None where it failed
    failure: str = ""              # why it could not be timed


@dataclass(frozen=True)
class PeerKernel:
    """One kernel a peer launched for the product: its name, device seconds (one call's), grid and block."""

    name: str
    seconds: float
    grid: tuple[int, ...]
    block: tuple[int, ...]


@dataclass
class Explanation:
    """What ``explain`` found for one product (``dt`` of ``shape`` on a device of ``compute_units``), or
    for a strided ``batch`` of them."""

    dt: Dtype
    shape: Shape
    device: str
    compute_units: int
    route: str                     # where gemm on numpy operands of this product runs
    choice: str                    # the selection's configuration and where it came from
    backend: str                   # the runtime the profile measured faster for it
    plan: str                      # what the plan shown launches: the CUDA path's, or the OpenCL one
    work_groups: int
    launches: list[Launch]
    device_seconds: float          # the first launch's start to the last's end, median
    host_seconds: float            # the host's time to enqueue the launches, median
    error: float
    peer_seconds: float | None = None
    peer_kernels: list[PeerKernel] = field(default_factory=list)
    batch: int = 1
    alternatives: list[Alternative] = field(default_factory=list)
    #: the plan shown is the CUDA path's, which numpy operands take (else OpenCL's, device arrays' plan)
    on_cuda: bool = False
    #: how the CUDA path's kernel shares the blocks of C out among its blocks (empty for OpenCL's)
    sharing: str = ""

    @property
    def tflops(self) -> float:
        flops = self.batch * gemm_flops(self.dt, self.shape.m, self.shape.n, self.shape.k)
        return flops / self.device_seconds / 1e12

    @property
    def waves(self) -> float:
        """Work-groups of the product's kernel per compute unit."""
        return self.work_groups / max(self.compute_units, 1)


def explain(ctx: DeviceContext, dt: Dtype, shape: Shape, runs: int = 10, seed: int = 0, batch: int = 1,
            alternatives: int = 0) -> Explanation:
    """Build, check and time ``shape``'s plan on ``ctx``'s device, or that of a strided ``batch`` of such
    products, as ``gemm_batched`` runs it (operands random, C poisoned and checked against float64 after
    the runs), and find the route and the choice a call of it would take; with ``alternatives``, also as
    many of the (kernel, K split) pairs the profile's predictor ranks fastest for the product after the
    plan's own (one product that a GEMM kernel runs), each built, checked and timed the same way, or
    the reason it could not be."""
    rng = np.random.default_rng(seed)
    op_a, op_b = Op.from_letter(shape.trans_a, "trans_a"), Op.from_letter(shape.trans_b, "trans_b")
    a, b = random_operands(rng, dt, shape.m, shape.n, shape.k, shape.trans_a, shape.trans_b, batch)
    c = np.full(a.shape[:-2] + (shape.m, shape.n), np.nan, dt.output.numpy)
    options = GemmOptions(trans_a=shape.trans_a, trans_b=shape.trans_b, device=ctx.device,
                          precision=dt.precision or None)
    call = GemmCall.build(a, b, c, batch if batch > 1 else None, options).in_working_dtype()
    dt = call.dt
    route, kept = route_elsewhere(call)
    wide = dt.reference_numpy
    reference = KnownReference(dt, apply_op(a, shape.trans_a).astype(wide) @ apply_op(b, shape.trans_b).astype(wide),
                               shape.k)
    if isinstance(kept, CudaHostRoute):
        found = _explain_cuda(kept, ctx.device, shape, a, b, c, reference, runs, batch)
        found.peer_seconds, found.peer_kernels = cublas_kernels(dt, a, b, shape, runs)
        return found
    problem = GemmProblem.dense(dt, shape.m, shape.n, shape.k, op_a, op_b, batch)
    chosen = choose_params(ctx.device, problem)
    buffers = [ocl.buffer_of(ctx.context, np.ascontiguousarray(x)) for x in (a, b, c)]
    try:
        plan = plan_for(ctx, problem)
        spans, hosts, error = _timed(ctx, plan, buffers, c, reference, runs)
        names = plan.describe().split(" ; ")
        launches = [Launch(names[i] if len(names) == len(spans[0]) else f"launch {i + 1}",
                           statistics.median((run[i][1] - run[i][0]) * 1e-9 for run in spans),
                           statistics.median((run[i][0] - run[i - 1][1]) * 1e-9 for run in spans) if i else 0.0)
                    for i in range(len(spans[0]))]
        found = Explanation(dt, shape, ctx.device.label, ctx.device.compute_units, route,
                            f"{plan.params.describe()} ({plan.params_source})", chosen.backend, plan.describe(),
                            plan.work_groups, launches, _span(spans), statistics.median(hosts), error, batch=batch)
        if alternatives and not isinstance(plan, VectorsPlan):      # (GEMV's products: GEMV's own classes)
            others = ((other, gflops) for other, gflops in predicted_plans(ctx.device, problem)
                      if (other.params, other.split) != (plan.params, plan.split))
            for other, gflops in itertools.islice(others, alternatives):
                found.alternatives.append(_alternative(ctx, problem, other, gflops, buffers, c, reference, runs))
    finally:
        for buffer in buffers:
            buffer.release()
    found.peer_seconds, found.peer_kernels = cublas_kernels(dt, a, b, shape, runs)
    return found


def _explain_cuda(route: CudaHostRoute, device: Device, shape: Shape, a: np.ndarray, b: np.ndarray,
                  poisoned: np.ndarray, reference: KnownReference, runs: int, batch: int) -> Explanation:
    """The CUDA path's plan for the product (or strided ``batch`` of them), as numpy operands take it:
    each of its launches (the layout pass, a memset, the kernel) timed on a held stream over ``runs``
    runs from operands on the device, C poisoned first and checked after (``AssertionError`` for a wrong
    result); the host's time to enqueue them from as many runs of their own, unmarked (marking costs
    the host)."""
    ctx, plan, dt = route.ctx, route.plan, route.dt
    kernel_dt, sizes, ops = kernel_problem(dt, (shape.m, shape.n, shape.k),
                                           (Op.from_letter(shape.trans_a, "a"), Op.from_letter(shape.trans_b, "b")))
    chosen = choose_cuda_params(device, kernel_dt, *sizes, ctx.multiprocessors, batch, ops)
    result = poisoned.copy()
    with on_device(ctx, (a, b, poisoned)) as memory:
        run = launch_of(plan, memory, a, b, shape)
        run()                                   # warm-up: tensor maps, the kernels' modules
        ctx.finish()
        timed, hosts = [], []
        for _ in range(runs):
            ctx.hold()                          # (the launches then run back to back, timed alone)
            with ctx.timeline() as marks:
                run()
            timed.append(ctx.marked_seconds(marks))
            ctx.hold()
            start = time.perf_counter()
            run()
            hosts.append(time.perf_counter() - start)
        ctx.finish()
        ctx.download(result, memory[2])
        schedule = plan.schedule(*stored_operands(memory, a, b, shape))
    error, ok = reference.check(result)
    if not ok:
        raise AssertionError(f"{dt.routine} {plan.params.describe()}: wrong result (relative error {error:.1e})")
    launches = [Launch(timed[0][i][0], statistics.median(run[i][1] for run in timed),
                       statistics.median(run[i][2] for run in timed)) for i in range(len(timed[0]))]
    device_seconds = statistics.median(sum(s + g for _, s, g in run) for run in timed)
    return Explanation(dt, shape, device.label, ctx.multiprocessors, CUDA_PATH,
                       f"{plan.params.describe()} ({chosen.source})", chosen.backend,
                       " ; ".join(x.name for x in launches), schedule.grid[0], launches, device_seconds,
                       statistics.median(hosts), error, batch=batch, on_cuda=True,
                       sharing=_sharing(plan.params, schedule))


def _sharing(params: CudaParams, schedule: Schedule) -> str:
    """How a CUDA kernel's blocks take the blocks of C: whole, in rounds, and those whose K they share."""
    tile = f"{params.block_m * params.cluster} x {params.block_n}"
    shared = schedule.tiles - schedule.whole if schedule.arrivals else 0
    return (f"{schedule.tiles} block{'s' * (schedule.tiles != 1)} of C of {tile}"
            + (f", the K of {shared} shared by {schedule.grid[0]} blocks (stream-K)" if shared else ""))


def _alternative(ctx: DeviceContext, problem: GemmProblem, other: Selection, gflops: float, buffers: list,
                 poisoned: np.ndarray, reference: KnownReference, runs: int) -> Alternative:
    """``other``'s plan for ``problem``, timed as the plan was; where it cannot be built here, or its
    result is wrong (a borrowed profile's configuration the selection would have verified first), why."""
    try:
        plan = LaunchPlan(ctx, problem, other.params, split_k=other.split, source=other.source)
        seconds, failure = _span(_timed(ctx, plan, buffers, poisoned, reference, runs)[0]), ""
    except (AutogemmError, AssertionError, ocl.OpenCLError) as exc:
        seconds, failure = None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return Alternative(other.params.describe(), other.split, gflops, seconds, failure)


def _timed(ctx: DeviceContext, plan, buffers: list, poisoned: np.ndarray, reference: KnownReference, runs: int
           ) -> tuple[list[list[tuple[int, int]]], list[float], float]:
    """Each of ``runs`` runs of ``plan`` on ``buffers`` (A, B and a C poisoned first), its launches'
    (start, end) nanoseconds from a held queue, and the host's seconds to enqueue them; and the result's
    error against ``reference`` (``AssertionError`` for a wrong one). The plan is released after."""
    try:
        ocl.copy(ctx.queue, buffers[2], poisoned)
        plan.enqueue(*buffers)                      # warm-up: builds, allocates, binds
        ctx.queue.finish()
        spans, hosts = [], []
        for _ in range(runs):
            hold(ctx.queue)                         # (the launches' events then time them alone)
            start = time.perf_counter()
            events = plan.enqueue(*buffers)
            hosts.append(time.perf_counter() - start)
            ctx.queue.finish()
            spans.append([(e.profile.start, e.profile.end) for e in events])
        result = np.empty_like(poisoned)
        ocl.copy(ctx.queue, result, buffers[2])
    finally:
        plan.release()
    error, ok = reference.check(result)
    if not ok:
        raise AssertionError(f"{plan.problem.dtype.routine} {plan.describe()}: wrong result (relative error "
                             f"{error:.1e})")
    return spans, hosts, error


def _span(spans: list[list[tuple[int, int]]]) -> float:
    """The median over runs of the first launch's start to the last one's end, in seconds."""
    return statistics.median((run[-1][1] - run[0][0]) * 1e-9 for run in spans)


def cublas_kernels(dt: Dtype, a: np.ndarray, b: np.ndarray, shape: Shape, runs: int
                   ) -> tuple[float | None, list[PeerKernel]]:
    """cuBLAS's device seconds for the product, or the batch of them that stacks ``a`` and ``b`` hold
    (``torch.matmul``, median of ``runs``, CUDA events), and the kernels it launches for one call, from
    torch's profiler; (None, []) without torch and CUDA."""
    torch = peers.torch_cuda(tf32=dt.precision == "tf32")
    if torch is None:
        return None, []
    ta = peers.torch_op(peers.to_cuda(torch, a), shape.trans_a)
    tb = peers.torch_op(peers.to_cuda(torch, b), shape.trans_b)
    out = torch.empty(a.shape[:-2] + (shape.m, shape.n), dtype=ta.dtype, device="cuda")
    seconds = peers.cuda_median(lambda: torch.matmul(ta, tb, out=out), runs)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        torch.matmul(ta, tb, out=out)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.json"
        profile.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text()).get("traceEvents", [])
    kernels = [PeerKernel(e["name"], e.get("dur", 0) * 1e-6, tuple(e.get("args", {}).get("grid", ())),
                          tuple(e.get("args", {}).get("block", ()))) for e in events if e.get("cat") == "kernel"]
    return seconds, kernels


def describe(found: Explanation) -> list[str]:
    """The explanation as lines of at most 80 columns (kernel names cut to fit)."""
    shape, us = found.shape, 1e6
    batch = f"a strided batch of {found.batch} x " if found.batch > 1 else ""
    unit = "block" if found.on_cuda else "work-group"
    head = [f"{found.dt.routine} {batch}{shape.m} x {shape.n} x {shape.k} {shape.layout}", f"on {found.device}",
             f"numpy operands run on {found.route}"
             + (" (the profile measured the CUDA path faster)" if found.backend == CUDA
                and not found.choice.endswith("(default)") else ""),
             f"the plan's configuration: {found.choice}",
             f"device time {found.device_seconds * us:.1f} us ({found.tflops:.3g} TFLOP/s), "
             f"host enqueue {found.host_seconds * us:.1f} us, error {found.error:.1e}",
             f"the product's kernel: {found.work_groups} {unit}{'s' * (found.work_groups != 1)} on "
             f"{found.compute_units} {'multiprocessors' if found.on_cuda else 'compute units'} "
             f"({found.waves:.2f} a unit)" + (f": {found.sharing}" if found.sharing else ""),
             "launches (device us, idle us before)" + ("" if found.route == OPENCL_PLAN or found.on_cuda else
                                                      ", of the plan device arrays run on") + ":"]
    lines = [part for line in head for part in textwrap.wrap(line, 80, subsequent_indent="  ")]
    for launch in found.launches:
        lines.append(f"  {launch.seconds * us:8.1f} {launch.gap_before * us:6.1f}  {_cut(launch.name, 60)}")
    if found.alternatives:
        lines.append("the predictor's next plans (device us, predicted GFLOP/s, K; * faster):")
        for other in found.alternatives:
            split = "stream-K" if other.split == 0 else f"K/{other.split}"
            if other.seconds is None:
                lines.append(f"  {'failed':>8} {other.predicted_gflops:8.0f} {split:>8}  {_cut(other.config, 50)}")
                lines.append(f"    {_cut(other.failure, 76)}")
                continue
            mark = "*" if other.seconds < found.device_seconds else " "
            lines.append(f" {mark}{other.seconds * us:8.1f} {other.predicted_gflops:8.0f} {split:>8}  "
                         f"{_cut(other.config, 50)}")
        best = min((other.seconds for other in found.alternatives if other.seconds is not None), default=None)
        if best is not None and best < found.device_seconds:
            lines += textwrap.wrap(f"one ran {found.device_seconds / best:.2f}x faster than the plan: `autogemm "
                                   "tune --shapes` times such plans for a shape it tunes exactly", 80)
    if found.peer_seconds is not None:
        ratio = found.peer_seconds / found.device_seconds
        lines.append(f"cuBLAS: {found.peer_seconds * us:.1f} us (autogemm / cuBLAS {ratio:.2f}); its kernels "
                     "(us, grid, block):")
        for kernel in found.peer_kernels:
            lines.append(f"  {kernel.seconds * us:8.1f} {_dims(kernel.grid):>12} {_dims(kernel.block):>9}  "
                         f"{_cut(kernel.name, 45)}")
    return lines


def _dims(dims: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in dims) or "?"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"

