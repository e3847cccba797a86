"""``GemmEvaluator``: GEMM configurations measured on one problem of one dtype."""

from __future__ import annotations

import math

import pyopencl as cl

from ...accuracy import gemm_flops, random_matrix, tolerance
from ...blas import GemmProblem, LaunchPlan
from ...codelets.registry import KernelParams
from ...dtypes import Dtype, get_dtype
from ...runtime.context import DeviceContext
from .on_device import DeviceEvaluator, fresh_random
from .requests import EvaluatorSpec


class GemmEvaluator(DeviceEvaluator):
    """Measures GEMM configurations on one problem C = A B (m x k times k x n, row-major) of one dtype."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, m: int, n: int, k: int, *, warmup: int = 1,
                 runs: int = 5, slow_factor: float = 4.0, seed: int | None = None) -> None:
        self.problem = GemmProblem.dense(dtype, m, n, k)
        self.seed, rng = fresh_random(seed)
        a, b = random_matrix(rng, dtype, (m, k)), random_matrix(rng, dtype, (k, n))
        ref_type = dtype.reference_numpy
        super().__init__(ctx, dtype, a.astype(ref_type) @ b.astype(ref_type), gemm_flops(dtype, m, n, k),
                         tolerance(dtype, k), warmup=warmup, runs=runs, slow_factor=slow_factor)
        self.a, self.b = self.upload(a), self.upload(b)

    @classmethod
    def from_spec(cls, ctx: DeviceContext, spec: EvaluatorSpec) -> GemmEvaluator:
        return cls(ctx, get_dtype(spec.dtype), *spec.shape, runs=spec.runs, seed=spec.seed,
                   **({"slow_factor": math.inf} if spec.full else {}))

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.problem.m, self.problem.n, self.problem.k

    def prepare(self, params: KernelParams) -> LaunchPlan:
        return LaunchPlan(self.ctx, self.problem, params, edge="auto")

    def _launch(self, plan: LaunchPlan) -> list[cl.Event]:
        return plan.enqueue(self.a, self.b, self.output, 1.0, 0.0)
