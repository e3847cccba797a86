"""``GemmEvaluator``: GEMM configurations measured on one problem of one dtype."""

from __future__ import annotations

import functools
import math
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ...accuracy import apply_op, gemm_flops, random_operands, tolerance
from ...blas import GemmProblem, LaunchPlan, Op
from ...codelets.registry import KernelParams
from ...dtypes import Dtype, get_dtype
from ...runtime.opencl import commands as ocl
from ...runtime.opencl.context import DeviceContext
from .measuring import fresh_random
from .on_device import DeviceEvaluator
from .requests import EvaluatorSpec


class GemmEvaluator(DeviceEvaluator):
    """Measures GEMM configurations on one problem C = op(A) op(B) (m x k times k x n) of one dtype, A and
    B row-major and stored as ``layout`` says: 'N' as they are, 'T' transposed (NN by default); K in
    ``split`` slices (None: as plans decide); a strided ``batch`` of such products in one call where more
    than one."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, m: int, n: int, k: int, *, layout: str = "NN",
                 split: int | None = None, warmup: int = 1, runs: int = 5, slow_factor: float = 4.0,
                 seed: int | None = None, batch: int = 1) -> None:
        self.split = split
        op_a, op_b = Op.from_letter(layout[0], "layout"), Op.from_letter(layout[1], "layout")
        self.problem = GemmProblem.dense(dtype, m, n, k, op_a, op_b, batch)
        self.seed = fresh_random(seed)[0]
        a, b, reference = operands(dtype.key, m, n, k, layout, self.seed, batch)
        super().__init__(ctx, dtype, reference, batch * m * n, batch * gemm_flops(dtype, m, n, k),
                         tolerance(dtype, k), warmup=warmup, runs=runs, slow_factor=slow_factor)
        self.a, self.b = self.upload(a), self.upload(b)

    @classmethod
    def from_spec(cls, ctx: DeviceContext, spec: EvaluatorSpec) -> GemmEvaluator:
        return cls(ctx, get_dtype(spec.dtype), *spec.shape, layout=spec.layout or "NN", split=spec.split,
                   runs=spec.runs, seed=spec.seed, batch=spec.batch,
                   **({"slow_factor": math.inf} if spec.full else {}))

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.problem.m, self.problem.n, self.problem.k

    def prepare(self, params: KernelParams) -> LaunchPlan:
        return LaunchPlan(self.ctx, self.problem, params, edge="auto", split_k=self.split)

    def _launch(self, plan: LaunchPlan) -> list[ocl.Event]:
        return plan.enqueue(self.a, self.b, self.output, 1.0, 0.0)


#: Computes the host's float64 products of the evaluators' operands, one at a time, while the worker
#: goes on building (numpy's product leaves the interpreter free).
_PRODUCTS = ThreadPoolExecutor(1, thread_name_prefix="autogemm-reference")


@functools.lru_cache(maxsize=1)
def operands(dtype_key: str, m: int, n: int, k: int, layout: str, seed: int, batch: int = 1
             ) -> tuple[np.ndarray, np.ndarray, Future[np.ndarray]]:
    """Random A and B of a problem from ``seed`` (``batch`` of each, one after another, where more than
    one), stored as ``layout`` says, and their float64 product being computed. The last problem's are
    kept: the tuner times one problem with several K splits, an evaluator each, and the host's float64
    product can take longer than the timing."""
    dtype = get_dtype(dtype_key)
    rng = fresh_random(seed)[1]
    a, b = random_operands(rng, dtype, m, n, k, *layout, batch)
    ref_type = dtype.reference_numpy
    return a, b, _PRODUCTS.submit(lambda: apply_op(a.astype(ref_type), layout[0]) @ apply_op(b.astype(ref_type),
                                                                                              layout[1]))
