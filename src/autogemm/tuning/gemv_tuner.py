"""Tuning GEMV: its evaluator, its search space per codelet layout, and the search of one layout.

GEMV reads each element of A once, so its rate is set by memory bandwidth: it is tuned on matrices far
larger than the device's caches (a quarter GiB on a GPU), per layout (N for y = A x, T for y = A^T x)
and shape class (a square A, and a long one: few outputs, a long reduction), with the same strategies,
budget, checkpoints and verification on awkward shapes as GEMM.
Rates are kept as GFLOP/s like GEMM's; ``bandwidth`` turns them into the GB/s they stand for."""

from __future__ import annotations

import math
import time

import numpy as np
import pyopencl as cl

from ..blas import Op
from ..blas.gemv import DEFAULTS, GemvLaunchPlan, GemvProblem
from ..checking import apply_op, gemv_flops, random_matrix, tolerance
from ..codelets.gemv import GemvParams
from ..codelets.gemv.space import space as gemv_space
from ..codelets.registry import SpaceFacts
from ..dtypes import Dtype
from ..profiles import Ranked, SizeClassEntry
from ..runtime.context import DeviceContext
from ..runtime.device import Device
from .budget import Budget
from .checkpoint import Checkpoint
from .evaluator import KernelEvaluator, fresh_random
from .isolated import IsolatedEvaluator, WorkerProcess, evaluator_spec
from .objective import Objective
from .strategies import get_strategy

#: The bytes of A a GEMV class is tuned on: a GPU's (well past the caches, e.g. the H100's 50 MB of L2)
#: and a CPU's, and with ``quick``.
GPU_BYTES, CPU_BYTES, QUICK_BYTES = 2**28, 2**25, 2**22


#: GEMV's shape classes: a square A, and a long one with as many elements, ``LONG_RATIO`` times fewer
#: outputs and a reduction as many times longer (a short, wide A for layout N, a tall, narrow one for T),
#: where a configuration must keep the device busy with few outputs.
GEMV_SHAPES = ("square", "long")
LONG_RATIO = 8


def gemv_shape(device: Device, dt: Dtype, layout: str, kind: str, quick: bool = False) -> tuple[int, int]:
    """A's (rows, cols) for the ``kind`` class of ``layout``: of about ``*_BYTES`` (at most an eighth of the
    device's memory and of its largest allocation), the square's side a multiple of 256."""
    target = QUICK_BYTES if quick else (GPU_BYTES if device.is_gpu else CPU_BYTES)
    target = min(target, device.global_mem_bytes // 8, device.max_mem_alloc_bytes // 2)
    side = max(256, int(math.sqrt(target / dt.itemsize)) // 256 * 256)
    if kind == "square":
        return side, side
    outputs, reduction = side // LONG_RATIO, side * LONG_RATIO
    return (reduction, outputs) if layout == "T" else (outputs, reduction)


def bandwidth(dt: Dtype, shape: tuple[int, ...], gflops: float) -> float:
    """The GB/s a GEMV of ``shape`` (rows, cols) at ``gflops`` moves: A once, x once, y written."""
    rows, cols = shape[:2]
    return gflops * (rows * cols + rows + cols) * dt.itemsize / gemv_flops(dt, rows, cols)


class GemvEvaluator(KernelEvaluator):
    """Measures GEMV configurations of one layout on one problem: A of ``rows`` x ``cols`` row-major."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, layout: str, rows: int, cols: int, *, warmup: int = 1,
                 runs: int = 5, slow_factor: float = 4.0, seed: int | None = None) -> None:
        self.problem = GemvProblem(dtype, rows, cols, Op(transposed=layout == "T"), cols)
        self.seed, rng = fresh_random(seed)
        a = random_matrix(rng, dtype, (rows, cols))
        x = random_matrix(rng, dtype, (self.problem.reduction,))
        ref_type = dtype.reference_numpy
        reference = apply_op(a.astype(ref_type), layout) @ x.astype(ref_type)
        super().__init__(ctx, dtype, reference, gemv_flops(dtype, rows, cols), tolerance(dtype, self.problem.reduction),
                         warmup=warmup, runs=runs, slow_factor=slow_factor)
        self.a, self.x = self.upload(a), self.upload(x)

    @property
    def shape(self) -> tuple[int, int]:
        return self.problem.rows, self.problem.cols

    def prepare(self, params: GemvParams) -> GemvLaunchPlan:
        return GemvLaunchPlan(self.ctx, self.problem, params)

    def _launch(self, plan: GemvLaunchPlan) -> list[cl.Event]:
        return plan.enqueue(self.a, self.x, self.output, 1.0, 0.0)


def verify_gemv(ctx: DeviceContext, params: GemvParams, dt: Dtype) -> str | None:
    """What is wrong with ``params`` on problems unlike the tuned one (sizes off every block, a wider
    leading dimension, increments, offsets, beta not 0, conjugation), or None."""
    rng = np.random.default_rng()
    conjugate = dt.is_complex
    for rows, cols in ((37, 53), (1, 300), (300, 1)):
        problem = GemvProblem(dt, rows, cols, Op(params.layout == "T", conjugate), cols + 3, 2, 3, 5, 1, 2)
        a = random_matrix(rng, dt, (5 + rows * (cols + 3),))
        x = random_matrix(rng, dt, (1 + problem.reduction * 2,))
        y = random_matrix(rng, dt, (2 + problem.outputs * 3,))
        plan = GemvLaunchPlan(ctx, problem, params)
        mf = cl.mem_flags
        buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=v) for v in (a, x, y)]
        try:
            plan.enqueue(*buffers, alpha=0.5, beta=-1.0)
            got = np.empty_like(y)
            cl.enqueue_copy(ctx.queue, got, buffers[2]).wait()
        finally:
            plan.release()
            for buf in buffers:
                buf.release()
        ref_type = dt.reference_numpy
        stored = a[5:].reshape(rows, cols + 3)[:, :cols].astype(ref_type)
        stored = stored.conj() if conjugate else stored
        op_a = stored.T if params.layout == "T" else stored
        want = y.astype(ref_type)
        want[2::3] = 0.5 * op_a @ x[1::2].astype(ref_type) - want[2::3]
        error = np.linalg.norm(got.astype(ref_type) - want) / np.linalg.norm(want)
        if not error < tolerance(dt, problem.reduction):
            return f"{rows}x{cols}: relative error {error:.2e} (or an element outside y written)"
    return None


def tune_gemv_class(worker: WorkerProcess, dt: Dtype, layout: str, kind: str, shape: tuple[int, int], budget: Budget,
                    strategy: str, fresh: bool, top: int, seed: int, known: list[GemvParams],
                    on_record=None, on_start=None) -> tuple[SizeClassEntry | None, Objective,
                                                             list[tuple[GemvParams, str]]]:
    """Search the GEMV space of ``layout`` on A of ``shape`` (the ``kind`` class) under ``budget`` (the
    ``known`` configurations first), into its own checkpoint, and keep the ``top`` verified ones: (the
    profile entry or None, the objective, the configurations verification rejected). The candidates run
    in ``worker``'s process."""
    space = gemv_space(SpaceFacts(worker.device, dt, layout=layout))
    checkpoint = Checkpoint.for_problem(worker.device, dt, (*shape, 1), routine=f"gemv-{layout.lower()}")
    if fresh:
        checkpoint.clear()
    evaluator = IsolatedEvaluator(worker, evaluator_spec(dt, shape, layout))
    objective = Objective(space, evaluator, checkpoint, budget, overlap=worker.device.is_gpu, on_record=on_record)
    if on_start is not None:
        on_start(space, objective)
    started = time.monotonic()
    points = [space.point_of(_knob_values(c)) for c in [DEFAULTS[layout], *known]]
    default, *warm = [p if p is not None and space.valid(p) else None for p in points]
    try:
        get_strategy(strategy, seed).run(space, objective, default, [p for p in warm if p is not None])
    finally:
        evaluator.release()
    measured = sorted((r for r in objective.records.values() if objective.complete(r)),
                      key=lambda r: r.gflops, reverse=True)
    kept, rejected = [], []
    for record in measured:
        if len(kept) == top:
            break
        problem = worker.verify(record.config, dt)
        if problem:
            rejected.append((record.config, problem))
        else:
            kept.append(Ranked(record.config, record.gflops))
    entry = None
    if kept:
        entry = SizeClassEntry(f"{layout.lower()}-{kind}", (*shape, 1), tuple(kept), strategy, objective.evaluations,
                               time.monotonic() - started)
    return entry, objective, rejected


def _knob_values(params: GemvParams) -> dict:
    return {"wg_x": params.wg_x, "wg_y": params.wg_y, "per_item": params.per_item, "unroll": params.unroll,
            "waves": params.waves}
