"""RaijinCL's Table IV on this machine: a square product from numpy operands to a numpy result computed
four ways (CPU only: numpy's BLAS; GPU only: the device's profile kernel; CPU+GPU with that kernel and a
tuned split; CPU+GPU with kernel and split co-tuned), beside the same kernel's device-resident rate and
cuBLAS end to end (torch: copy in, multiply, copy out). The last three strategies come from one
co-tuning sweep (``tuning.cotune.co_tune``), timed the same way on the same data; CPU only, the resident
rate and cuBLAS from one ``Bench`` run of the same product; every result is checked."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..accuracy import gemm_flops
from ..blas import GemmProblem
from ..blas.selection import candidates
from ..dtypes import Dtype
from ..runtime.opencl.context import DeviceContext
from ..shares.host import HOST, target_name
from ..shares.split import Split
from ..tuning.cotune import HybridPoint, co_tune
from .runner import AUTOGEMM, END_TO_END, Bench
from .shapes import Shape

CPU_ONLY, GPU_ONLY, SIMPLE, CO_TUNED = "CPU only", "GPU only", "CPU+GPU, tuned split", "CPU+GPU, co-tuned"


@dataclass
class SharingStrategy:
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
    strategies: list[SharingStrategy] = field(default_factory=list)
    resident_tflops: float | None = None        # the GPU-only kernel on device-resident operands
    cublas_e2e_tflops: float | None = None      # torch: copies in, cuBLAS, copy out
    points: int = 0                             # (kernel, split) points the co-tuning timed

    def tflops(self, name: str) -> float | None:
        return next((s.tflops for s in self.strategies if s.name == name), None)


def run_hybrid(ctx: DeviceContext, dt: Dtype, n: int, parts: int, kernels: int, runs: int,
               rng: np.random.Generator) -> HybridCase:
    """The four strategies for an n^3 product of ``dt`` on ``ctx``'s device and the host, co-tuning
    over ``kernels`` candidate kernels and every split of ``parts`` parts; CPU only, the resident rate
    and cuBLAS end to end from one ``Bench`` run of the same product (numpy and cuBLAS as its peers)."""
    configs = candidates(ctx.device, GemmProblem.dense(dt, n, n, n), kernels)
    targets = [ctx, HOST]
    points = co_tune(targets, dt, n, n, n, configs, parts, runs, rng)
    flops = gemm_flops(dt, n, n, n)
    names = [target_name(t) for t in targets]

    def strategy(name: str, chosen: list[HybridPoint]) -> SharingStrategy:
        good = [p for p in chosen if p.seconds is not None]
        if not good:
            return SharingStrategy(name, "", "", None, None)
        best = min(good, key=lambda p: p.seconds)
        on_device = any(share for t, share in zip(targets, best.split.shares) if t != HOST)
        return SharingStrategy(name, best.config.describe() if on_device else "", best.split.describe(names),
                               best.seconds, flops / best.seconds / 1e12)

    # the co-tuning stops giving the host more rows once calls get slower: numpy times the host alone
    peers = Bench(ctx, ("numpy", "cublas"), runs, end_to_end=True, seed=int(rng.integers(2**31)))
    beside = peers.run(dt, Shape(n, n, n))
    numpy = next(m for m in beside.measurements if m.name == "numpy")
    cpu = (SharingStrategy(CPU_ONLY, "", "host", numpy.seconds, numpy.tflops) if numpy.correct
           else SharingStrategy(CPU_ONLY, "", "", None, None))
    first = [p for p in points if p.config == configs[0]]
    case = HybridCase(dt.key, n, parts, points=len(points))
    case.strategies = [cpu, strategy(GPU_ONLY, [p for p in first if p.split == Split.only(0, 2, parts)]),
                       strategy(SIMPLE, first), strategy(CO_TUNED, points)]
    case.resident_tflops = beside.rate(AUTOGEMM)
    case.cublas_e2e_tflops = beside.rate("cuBLAS" + END_TO_END)
    return case
