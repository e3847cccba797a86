"""RaijinCL's Table IV on this machine: a square product from numpy operands to a numpy result computed
four ways (CPU only: numpy's BLAS; GPU only: the device's profile kernel; CPU+GPU with that kernel and a
tuned split; CPU+GPU with kernel and split co-tuned), beside the same kernel's device-resident rate and
cuBLAS end to end (torch: copy in, multiply, copy out). The last three strategies come from one
co-tuning sweep (``tuning.hybrid.co_tune``), timed the same way on the same data; every result is checked."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyopencl.array as cl_array

from ..blas import GemmProblem, LaunchPlan
from ..blas.hybrid import HOST, target_name
from ..blas.selection import candidates
from ..blas.split import Split
from ..checking import Reference, gemm_flops, random_matrix
from ..dtypes import Dtype
from ..runtime.context import DeviceContext
from ..runtime.timing import median, time_enqueue
from ..tuning.hybrid import HybridPoint, co_tune
from . import peers

CPU_ONLY, GPU_ONLY, SIMPLE, CO_TUNED = "CPU only", "GPU only", "CPU+GPU, tuned split", "CPU+GPU, co-tuned"


@dataclass
class Strategy:
    name: str
    config: str
    split: str
    seconds: float | None
    tflops: float | None


@dataclass
class HybridCase:
    dtype: str
    n: int
    parts: int
    strategies: list[Strategy] = field(default_factory=list)
    resident_tflops: float | None = None        # the GPU-only kernel on device-resident operands
    cublas_e2e_tflops: float | None = None      # torch: copies in, cuBLAS, copy out
    points: int = 0                             # (kernel, split) points the co-tuning timed

    def tflops(self, name: str) -> float | None:
        return next((s.tflops for s in self.strategies if s.name == name), None)


def run_hybrid(ctx: DeviceContext, dt: Dtype, n: int, parts: int, kernels: int, runs: int,
               rng: np.random.Generator, with_torch: bool = True) -> HybridCase:
    """The four strategies for an n^3 product of ``dt`` on ``ctx``'s device and the host, co-tuning
    over ``kernels`` candidate kernels and every split of ``parts`` parts."""
    problem = GemmProblem.dense(dt, n, n, n)
    configs = candidates(ctx.device, problem, kernels)
    targets = [ctx, HOST]
    points = co_tune(targets, dt, n, n, n, configs, parts, runs, rng)
    flops = gemm_flops(dt, n, n, n)
    names = [target_name(t) for t in targets]

    def strategy(name: str, chosen: list[HybridPoint]) -> Strategy:
        good = [p for p in chosen if p.seconds is not None]
        if not good:
            return Strategy(name, "", "", None, None)
        best = min(good, key=lambda p: p.seconds)
        on_device = any(share for t, share in zip(targets, best.split.shares) if t != HOST)
        return Strategy(name, best.config.describe() if on_device else "", best.split.describe(names), best.seconds,
                        flops / best.seconds / 1e12)

    first = [p for p in points if p.config == configs[0]]
    case = HybridCase(dt.key, n, parts, points=len(points))
    case.strategies = [_cpu_only(dt, n, rng, runs, flops),
                       strategy(GPU_ONLY, [p for p in first if p.split == Split.only(0, 2, parts)]),
                       strategy(SIMPLE, first), strategy(CO_TUNED, points)]
    case.resident_tflops = _resident(ctx, dt, problem, configs[0], runs, rng)
    if with_torch:
        case.cublas_e2e_tflops = _cublas_end_to_end(dt, n, rng, runs)
    return case


def _cpu_only(dt: Dtype, n: int, rng: np.random.Generator, runs: int, flops: float) -> Strategy:
    """numpy's BLAS on the whole product (the co-tuning stops giving the host more rows once calls get
    slower, so it may never time this point itself)."""
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    result = peers.numpy_gemm(a, b, runs)
    if not Reference(dt, a, b, rng).check(result.result)[1]:
        return Strategy(CPU_ONLY, "", "", None, None)
    return Strategy(CPU_ONLY, "", "host", result.seconds, flops / result.seconds / 1e12)


def _resident(ctx: DeviceContext, dt: Dtype, problem: GemmProblem, config, runs: int,
              rng: np.random.Generator) -> float | None:
    """The kernel's rate on operands already on the device (profiling events), its result checked."""
    a, b = random_matrix(rng, dt, (problem.m, problem.k)), random_matrix(rng, dt, (problem.k, problem.n))
    plan = LaunchPlan(ctx, problem, config)
    da, db = cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, b)
    dc = cl_array.to_device(ctx.queue, np.full((problem.m, problem.n), np.nan, dt.output.numpy))
    try:
        seconds = median(time_enqueue(lambda: plan.enqueue(da.data, db.data, dc.data), warmup=1, runs=runs))
        if not Reference(dt, a, b, rng).check(dc.get())[1]:
            return None
        return gemm_flops(dt, problem.m, problem.n, problem.k) / seconds / 1e12
    finally:
        plan.release()


def _cublas_end_to_end(dt: Dtype, n: int, rng: np.random.Generator, runs: int) -> float | None:
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    result = peers.cublas_gemm_end_to_end(a, b, runs)
    if result is None or not Reference(dt, a, b, rng).check(result.result)[1]:
        return None
    return gemm_flops(dt, n, n, n) / result.seconds / 1e12
