"""``DeviceEvaluator``: build one configuration, check it on random data, time it, on an OpenCL device in
this process, as ``MeasuringEvaluator`` says; always return a ``Record``.

It holds what the GEMM and GEMV evaluators (``gemm``, ``gemv``) share: the output buffer, the operands'
device copies, the comparison of every element with the float64 reference on the device, and timing with
profiling events (each product timed from its first launch's start to its last's end, gaps between
products left out)."""

from __future__ import annotations

from abc import abstractmethod
from concurrent.futures import Future

import numpy as np
import pyopencl as cl

from ...dtypes import Dtype
from ...runtime.opencl.context import DeviceContext
from ...runtime.opencl.timing import event_seconds
from .device_reference import DeviceReference
from .measuring import MeasuringEvaluator
from .requests import EvaluatorSpec


class DeviceEvaluator(MeasuringEvaluator):
    """An ``Evaluator`` on a device in this process: build a configuration's plan, run it once on a
    NaN-poisoned output and compare that with the ``reference`` on the device, then time it. A routine
    supplies its operands, ``prepare`` (the plan) and ``_launch`` (its events, first to last, for one
    run), and ``from_spec`` (how a worker process makes it)."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, reference: np.ndarray | Future[np.ndarray], size: int,
                 flops: float, bound: float, *, warmup: int, runs: int, slow_factor: float) -> None:
        """``reference``: the float64 result of ``size`` elements, or its computation under way."""
        super().__init__(flops, warmup=warmup, runs=runs, slow_factor=slow_factor)
        self.ctx, self.dtype = ctx, dtype
        self.reference = DeviceReference(ctx, dtype, reference, size)
        self.bound = bound
        self.output: cl.Buffer = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, size * dtype.output.itemsize)
        self._buffers = [self.output]

    def upload(self, data: np.ndarray) -> cl.Buffer:
        """A read-only device copy of an operand, released with the evaluator."""
        buf = cl.Buffer(self.ctx.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
        self._buffers.append(buf)
        return buf

    @classmethod
    @abstractmethod
    def from_spec(cls, ctx: DeviceContext, spec: EvaluatorSpec) -> DeviceEvaluator:
        """The evaluator ``spec`` describes, on ``ctx``'s device."""

    @abstractmethod
    def _launch(self, plan) -> list[cl.Event]:
        """Enqueue one run of ``plan`` on the evaluator's operands; its events, first to last."""

    def _done(self, plan) -> None:
        plan.release()
        src = plan.kernel_source
        self.ctx.forget(src.source, src.options)

    def _seconds(self, plan, repeats: int = 1) -> float:
        """Device seconds of one run, over ``repeats`` runs enqueued back to back: each run from its first
        launch's start to its last's end, so that gaps between runs (the host enqueueing late while
        compilers busy its cores) do not count against a kernel shorter than them."""
        spans = [self._launch(plan) for _ in range(repeats)]
        return sum(event_seconds(events[0], events[-1]) for events in spans) / repeats

    def _check(self, plan) -> tuple[float, str | None]:
        output = self.dtype.output
        cl.enqueue_fill_buffer(self.ctx.queue, self.output, np.array(np.nan, output.numpy), 0,
                               self.reference.size * output.itemsize)
        self._launch(plan)
        error, unwritten = self.reference.compare(self.output)
        if error < self.bound:
            return error, None
        return error, (f"{unwritten} elements unwritten or NaN" if unwritten
                       else f"relative error {error:.2e} over the bound {self.bound:.0e}")

    def release(self) -> None:
        for buf in self._buffers:
            buf.release()
        self._buffers.clear()
        self.reference.release()

