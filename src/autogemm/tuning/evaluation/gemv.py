"""``GemvEvaluator``: GEMV configurations of one layout measured on one problem of one dtype (GEMV is
bound by memory, so the tuner measures it on an A far larger than the device's caches)."""

from __future__ import annotations

import math

from ...accuracy import apply_op, gemv_flops, random_matrix, tolerance
from ...blas import Op
from ...blas.gemv import GemvLaunchPlan, GemvProblem
from ...codelets.gemv import GemvParams
from ...dtypes import Dtype, get_dtype
from ...runtime.opencl import commands as ocl
from ...runtime.opencl.context import DeviceContext
from .measuring import fresh_random
from .on_device import DeviceEvaluator
from .requests import EvaluatorSpec


class GemvEvaluator(DeviceEvaluator):
    """Measures GEMV configurations of one layout on one problem: A of ``rows`` x ``cols`` row-major, and
    ``vectors`` right-hand sides, each stored contiguously, as their results are (Y^T row-major)."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, layout: str, rows: int, cols: int, vectors: int = 1, *,
                 warmup: int = 1, runs: int = 5, slow_factor: float = 4.0, seed: int | None = None) -> None:
        outputs, reduction = (cols, rows) if layout == "T" else (rows, cols)
        self.problem = GemvProblem(dtype, rows, cols, Op(transposed=layout == "T"), cols, vectors=vectors,
                                   ldx=reduction, ldy=outputs)
        self.seed, rng = fresh_random(seed)
        a = random_matrix(rng, dtype, (rows, cols))
        x = random_matrix(rng, dtype, (vectors, reduction))
        ref_type = dtype.reference_numpy
        reference = x.astype(ref_type) @ apply_op(a.astype(ref_type), layout).T
        super().__init__(ctx, dtype, reference, reference.size, gemv_flops(dtype, rows, cols, vectors),
                         tolerance(dtype, reduction), warmup=warmup, runs=runs, slow_factor=slow_factor)
        self.a, self.x = self.upload(a), self.upload(x)

    @classmethod
    def from_spec(cls, ctx: DeviceContext, spec: EvaluatorSpec) -> GemvEvaluator:
        return cls(ctx, get_dtype(spec.dtype), spec.layout, *spec.shape, runs=spec.runs, seed=spec.seed,
                   **({"slow_factor": math.inf} if spec.full else {}))

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.problem.rows, self.problem.cols, self.problem.vectors

    def prepare(self, params: GemvParams) -> GemvLaunchPlan:
        return GemvLaunchPlan(self.ctx, self.problem, params)

    def _launch(self, plan: GemvLaunchPlan) -> list[ocl.Event]:
        return plan.enqueue(self.a, self.x, self.output, 1.0, 0.0)
