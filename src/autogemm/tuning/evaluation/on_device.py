"""``DeviceEvaluator``: build one configuration, check it on random data, time it, on an OpenCL device in
this process, as ``MeasuringEvaluator`` says; always return a ``Record``.

It holds what the GEMM and GEMV evaluators (``gemm``, ``gemv``) share: the comparison of every element
with the float64 reference on the device, and the kernels' sources forgotten once measured (the timing
with profiling events is the runtime's: each product from its first launch's start to its last's end,
gaps between products left out)."""

from __future__ import annotations

from abc import abstractmethod
from concurrent.futures import Future

import numpy as np

from ...dtypes import Dtype
from ...runtime.opencl import commands as ocl
from ...runtime.opencl.context import DeviceContext
from .device_reference import DeviceReference
from .measuring import MeasuringEvaluator


class DeviceEvaluator(MeasuringEvaluator):
    """An ``Evaluator`` on an OpenCL device in this process, comparing with the ``reference`` on the
    device. A routine supplies its operands, ``prepare`` (the plan) and ``_launch`` (its events, first
    to last, for one run), and ``from_spec``."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, reference: np.ndarray | Future[np.ndarray], size: int,
                 flops: float, bound: float, *, warmup: int, runs: int, slow_factor: float) -> None:
        """``reference``: the float64 result of ``size`` elements, or its computation under way."""
        super().__init__(ctx, dtype, size, flops, warmup=warmup, runs=runs, slow_factor=slow_factor)
        self.ctx = ctx
        self.reference = DeviceReference(ctx, dtype, reference, size)
        self.bound = bound

    @abstractmethod
    def _launch(self, plan) -> list[ocl.Event]:
        """Enqueue one run of ``plan`` on the evaluator's operands; its events, first to last."""

    def _done(self, plan) -> None:
        plan.release()
        src = plan.kernel_source
        self.ctx.forget(src.source, src.options)

    def _compare(self) -> tuple[float, str | None]:
        error, unwritten = self.reference.compare(self.output)
        if error < self.bound:
            return error, None
        return error, (f"{unwritten} elements unwritten or NaN" if unwritten
                       else f"relative error {error:.2e} over the bound {self.bound:.0e}")

    def release(self) -> None:
        super().release()
        self.reference.release()
