"""``DeviceEvaluator``: build one configuration, check it on random data, time it, on a device in this
process; always return a ``Record``.

It holds what the GEMM and GEMV evaluators (``gemm``, ``gemv``) share. For each candidate: build the plan
for the evaluator's problem (a build error is a record, not an exception); run it once over a NaN-poisoned
C and compare every element, on the device, with a float64 reference computed once from fresh random
operands; time one run, and cut the candidate short as too slow when that run took more than
``slow_factor`` times the best so far; else time it with profiling events after a warm-up, a run averaging
short products repeated until it covers a few milliseconds (each product timed from its first launch's
start to its last's end, gaps between products left out), and keep the median of the runs."""

from __future__ import annotations

import math
import os
import time
from abc import ABC, abstractmethod
from concurrent.futures import Future

import numpy as np
import pyopencl as cl

from ...codelets.registry import Params
from ...dtypes import Dtype
from ...errors import BuildError, ConfigError
from ...runtime.context import DeviceContext
from ...runtime.timing import event_seconds, median
from ..records import Outcome, Record
from .device_reference import DeviceReference
from .requests import EvaluatorSpec

#: A timed run covers at least this much device time (short products are repeated within it).
MIN_RUN_SECONDS = 2e-3
MAX_REPEATS = 200


def fresh_random(seed: int | None) -> tuple[int, np.random.Generator]:
    """``seed`` (a fresh one when None: each run checks on new data) and its generator."""
    seed = seed if seed is not None else int.from_bytes(os.urandom(4), "little")
    return seed, np.random.default_rng(seed)


class DeviceEvaluator(ABC):
    """An ``Evaluator`` on a device in this process: build a configuration's plan, run it once on a
    NaN-poisoned output and compare that with the ``reference`` on the device, then time it. A routine
    supplies its operands, ``prepare`` (the plan) and ``_launch`` (its events, first to last, for one
    run), and ``from_spec`` (how a worker process makes it)."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, reference: np.ndarray | Future[np.ndarray], size: int,
                 flops: float, bound: float, *, warmup: int, runs: int, slow_factor: float) -> None:
        """``reference``: the float64 result of ``size`` elements, or its computation under way."""
        self.ctx, self.dtype = ctx, dtype
        self.warmup, self.runs, self.slow_factor = warmup, runs, slow_factor
        self.reference = DeviceReference(ctx, dtype, reference, size)
        self.flops, self.bound = flops, bound
        self.best_seconds = math.inf
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
    def prepare(self, params: Params) -> object:
        """Build the plan (compiles its kernels; safe to call from worker threads)."""

    @abstractmethod
    def _launch(self, plan) -> list[cl.Event]:
        """Enqueue one run of ``plan`` on the evaluator's operands; its events, first to last."""

    def evaluate(self, params: Params, plan: object = None, runs: int | None = None,
                 build_seconds: float = 0.0) -> Record:
        """Measure ``params``; ``plan`` is a prepared plan, or the exception preparing it raised."""
        runs = self.runs if runs is None else runs
        if plan is None:
            started = time.perf_counter()
            try:
                plan = self.prepare(params)
            except Exception as exc:   # noqa: BLE001 - every failure becomes a record
                plan = exc
            build_seconds = time.perf_counter() - started
        if isinstance(plan, BaseException):
            outcome = Outcome.BUILD_ERROR if isinstance(plan, (BuildError, ConfigError)) else Outcome.CRASHED
            return Record(params, outcome, build_seconds=build_seconds, message=summary(plan))
        try:
            return self._run(params, plan, runs, build_seconds)
        except Exception as exc:   # noqa: BLE001 - a kernel that fails never stops the run
            return Record(params, Outcome.CRASHED, build_seconds=build_seconds, message=summary(exc))
        finally:
            plan.release()
            src = plan.kernel_source
            self.ctx.forget(src.source, src.options)

    def _seconds(self, plan, repeats: int = 1) -> float:
        """Device seconds of one run, over ``repeats`` runs enqueued back to back: each run from its first
        launch's start to its last's end, so that gaps between runs (the host enqueueing late while
        compilers busy its cores) do not count against a kernel shorter than them."""
        spans = [self._launch(plan) for _ in range(repeats)]
        return sum(event_seconds(events[0], events[-1]) for events in spans) / repeats

    def _run(self, params, plan, runs: int, build_seconds: float) -> Record:
        output = self.dtype.output
        cl.enqueue_fill_buffer(self.ctx.queue, self.output, np.array(np.nan, output.numpy), 0,
                               self.reference.size * output.itemsize)
        self._launch(plan)
        error, unwritten = self.reference.compare(self.output)
        common = dict(error=None if math.isinf(error) else error, build_seconds=build_seconds)
        if not error < self.bound:
            why = (f"{unwritten} elements unwritten or NaN" if unwritten
                   else f"relative error {error:.2e} over the bound {self.bound:.0e}")
            return Record(params, Outcome.WRONG, message=why, **common)
        # The run that checked may have paid for a lazy first-launch compile (PoCL does that): the
        # next one decides whether the candidate is worth timing in full, and warms it up.
        seconds = self._seconds(plan)
        if seconds > self.slow_factor * self.best_seconds:
            return Record(params, Outcome.TOO_SLOW, self.flops / seconds / 1e9, seconds, runs=1,
                          message=f"{seconds * 1e3:.3g} ms, over {self.slow_factor:g}x the best", **common)
        for _ in range(self.warmup - 1):
            seconds = self._seconds(plan)
        repeats = min(MAX_REPEATS, max(1, math.ceil(MIN_RUN_SECONDS / max(seconds, 1e-9))))
        times = [self._seconds(plan, repeats) for _ in range(max(1, runs))]
        seconds = median(times)
        self.best_seconds = min(self.best_seconds, seconds)
        return Record(params, Outcome.OK, self.flops / seconds / 1e9, seconds, runs=len(times), **common)

    def release(self) -> None:
        for buf in self._buffers:
            buf.release()
        self._buffers.clear()
        self.reference.release()


def summary(exc: BaseException) -> str:
    """The exception's type and first lines (build logs can be long)."""
    text = f"{type(exc).__name__}: {exc}"
    lines = text.splitlines()
    return "\n".join(lines[:12])[:2000]
