"""``CudaEvaluator``: configurations of the CUDA path's families (``codelets.wgmma``, ``codelets.dmma``)
measured on one GEMM problem of one dtype, on a Hopper GPU through the CUDA driver.

It measures as the OpenCL evaluators do (``MeasuringEvaluator``, every outcome a ``Record``): the plan
is built by NVRTC, in its child process; the check is against float64 on fresh random operands
(``accuracy.Reference``: every element finite, sampled rows within the dtype's bound); the timing is
between CUDA events. A run is what ``gemm`` enqueues for the problem's stored
layout: an operand the kernels cannot read as it lies (a transposed one) is laid out first, within the
time, so that the rate compares with OpenCL's on the same problem."""

from __future__ import annotations

import math

import numpy as np

from ...accuracy import Reference, apply_op, gemm_flops, random_operands
from ...blas.cuda_gemm import CudaGemm, CudaParams, DeviceOperand
from ...blas.problem import Op
from ...dtypes import Dtype, get_dtype
from ...runtime.cuda import CudaContext
from .measuring import MeasuringEvaluator, fresh_random
from .requests import EvaluatorSpec

#: Awkward problems a CUDA finalist is verified on before it is kept: sizes that are no multiple of any
#: block, K whose rows must be padded to TMA's 16 bytes, and each stored layout (laid out on the device).
VERIFY_PROBLEMS = ((257, 131, 77, "NN"), (130, 520, 200, "TN"), (96, 300, 64, "NT"), (300, 96, 129, "TT"))


class CudaEvaluator(MeasuringEvaluator):
    """Measures CUDA configurations on C = op(A) op(B) (m x k times k x n) of ``dtype``, A and B row-major
    and stored as ``layout`` says (NN by default)."""

    def __init__(self, ctx: CudaContext, dtype: Dtype, m: int, n: int, k: int, *, layout: str = "NN",
                 warmup: int = 1, runs: int = 5, slow_factor: float = 4.0, seed: int | None = None) -> None:
        super().__init__(ctx, dtype, m * n, gemm_flops(dtype, m, n, k), warmup=warmup, runs=runs,
                         slow_factor=slow_factor)
        self.ctx, self.shape = ctx, (m, n, k)
        rng = fresh_random(seed)[1]
        op_a, op_b = Op.from_letter(layout[0], "layout"), Op.from_letter(layout[1], "layout")
        a, b = random_operands(rng, dtype, m, n, k, *layout)
        self.reference = Reference(dtype, apply_op(a, layout[0]), apply_op(b, layout[1]), rng)
        self.result = np.empty((m, n), dtype.output.numpy)
        self.a = DeviceOperand.of_a(self.upload(a), m, a.shape[1], op_a)
        self.b = DeviceOperand.of_b(self.upload(b), n, b.shape[1], op_b)

    @classmethod
    def from_spec(cls, ctx: CudaContext, spec: EvaluatorSpec) -> CudaEvaluator:
        return cls(ctx, get_dtype(spec.dtype), *spec.shape, layout=spec.layout or "NN", runs=spec.runs,
                   seed=spec.seed, **({"slow_factor": math.inf} if spec.full else {}))

    def prepare(self, params: CudaParams) -> CudaGemm:
        """The plan of ``params`` (compiles its kernel and loads it, which the driver allows beside launches
        on another thread: safe from worker threads while a candidate is timed)."""
        self.ctx.activate()
        return CudaGemm(self.ctx, self.dtype, *self.shape, params)

    def _launch(self, plan: CudaGemm) -> None:
        plan.enqueue(self.a, self.b, self.output, 1.0, 0.0)

    def _compare(self) -> tuple[float, str | None]:
        self.ctx.download(self.result, self.output)
        error, ok = self.reference.check(self.result)
        if ok:
            return error, None
        return error, ("elements unwritten or NaN" if math.isinf(error)
                       else f"relative error {error:.2e} over the bound")

    def _done(self, plan: CudaGemm) -> None:
        """Nothing: a plan's module stays loaded in the context (a few hundred in a run at most)."""


def verified(ctx: CudaContext, dt: Dtype, params: CudaParams) -> str | None:
    """What goes wrong with ``params`` on ``VERIFY_PROBLEMS`` (each checked against float64 on fresh
    random operands, C poisoned), or None."""
    for m, n, k, layout in VERIFY_PROBLEMS:
        evaluator = CudaEvaluator(ctx, dt, m, n, k, layout=layout, runs=1)
        try:
            record = evaluator.evaluate(params)
        finally:
            evaluator.release()
        if not record.ok:
            return f"{m}x{n}x{k} {layout}: {record.message or record.outcome.value}"
    return None
