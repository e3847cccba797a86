"""``MeasuringEvaluator``: the protocol every evaluator on a real device follows, whatever its runtime
(OpenCL's ``DeviceEvaluator``, the CUDA path's ``CudaEvaluator``), written once over the runtimes' seam
(``runtime.backend.Runtime``: memory, copies, timing); always a ``Record``, never an exception.

For each candidate: build its plan (a build error is a record); run it once over a NaN-poisoned output
and check that against float64 on fresh random operands; time one run, and cut the candidate short as too
slow when that run took more than ``slow_factor`` times the best so far; else time it after a warm-up, a
run averaging short products repeated until it covers a few milliseconds, and keep the median of the
runs."""

from __future__ import annotations

import math
import os
import time
from abc import ABC, abstractmethod

import numpy as np

from ...codelets.registry import Params
from ...dtypes import Dtype
from ...errors import BuildError, ConfigError
from ...runtime.backend import Memory, Runtime
from ...runtime.opencl.timing import median
from ..records import Outcome, Record
from .requests import EvaluatorSpec

#: A timed run covers at least this much device time (short products are repeated within it).
MIN_RUN_SECONDS = 2e-3
MAX_REPEATS = 200


def fresh_random(seed: int | None) -> tuple[int, np.random.Generator]:
    """``seed`` (a fresh one when None: each run checks on new data) and its generator."""
    seed = seed if seed is not None else int.from_bytes(os.urandom(4), "little")
    return seed, np.random.default_rng(seed)


def summary(exc: BaseException) -> str:
    """The exception's type and first lines (build logs can be long)."""
    text = f"{type(exc).__name__}: {exc}"
    lines = text.splitlines()
    return "\n".join(lines[:12])[:2000]


class MeasuringEvaluator(ABC):
    """Checks and times configurations of one problem of ``flops`` floating-point operations of ``dtype``,
    whose output of ``outputs`` elements lies in ``output`` on ``runtime``'s device. A runtime's evaluator
    supplies ``prepare`` (the plan), ``_launch`` (one run of it on the operands), ``_compare`` (the
    output against the reference) and ``_done`` (free the plan)."""

    def __init__(self, runtime: Runtime, dtype: Dtype, outputs: int, flops: float, *, warmup: int, runs: int,
                 slow_factor: float) -> None:
        self.runtime, self.dtype, self.flops = runtime, dtype, flops
        self.warmup, self.runs, self.slow_factor = warmup, runs, slow_factor
        self.best_seconds = math.inf
        self.output_bytes = outputs * dtype.output.itemsize
        with runtime.session():
            self.output = runtime.allocate(self.output_bytes)
        self._memory: list[Memory] = [self.output]

    def upload(self, data: np.ndarray) -> Memory:
        """A device copy of an operand, released with the evaluator."""
        with self.runtime.session():
            memory = self.runtime.allocate(data.nbytes)
            self.runtime.upload(memory, data)
        self._memory.append(memory)
        return memory

    def release(self) -> None:
        """Free the operands' and the output's device memory."""
        with self.runtime.session():
            for memory in self._memory:
                memory.release()
        self._memory.clear()

    @classmethod
    @abstractmethod
    def from_spec(cls, runtime: Runtime, spec: EvaluatorSpec) -> MeasuringEvaluator:
        """The evaluator ``spec`` describes, on ``runtime``'s device (how a worker process makes it)."""

    @abstractmethod
    def prepare(self, params: Params) -> object:
        """Build the plan (compiles its kernels; safe to call from worker threads)."""

    @abstractmethod
    def _launch(self, plan) -> object:
        """Enqueue one run of ``plan`` on the evaluator's operands into ``output`` (returning what the
        runtime times it by: OpenCL's events, first to last)."""

    @abstractmethod
    def _compare(self) -> tuple[float, str | None]:
        """The output's error against the reference (inf where elements are not finite) and why it is
        wrong, or None."""

    def _check(self, plan) -> tuple[float, str | None]:
        """Run ``plan`` once over a NaN-poisoned output and compare."""
        self.runtime.fill(self.output, np.array(np.nan, self.dtype.output.numpy), self.output_bytes)
        self._launch(plan)
        return self._compare()

    def _seconds(self, plan, repeats: int = 1) -> float:
        """Device seconds of one run, the mean over ``repeats`` runs enqueued back to back."""
        return self.runtime.seconds(lambda: self._launch(plan), repeats)

    def _measured(self, params: Params, plan, runs: int, build_seconds: float) -> Record:
        """Check and time a built plan, the device's context held."""
        with self.runtime.session():
            return self._timed(params, plan, runs, build_seconds)

    def _timed(self, params: Params, plan, runs: int, build_seconds: float) -> Record:
        error, why = self._check(plan)
        common = dict(error=None if math.isinf(error) else error, build_seconds=build_seconds)
        if why is not None:
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

    @abstractmethod
    def _done(self, plan) -> None:
        """Free what ``plan`` holds once it is measured."""

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
            return self._measured(params, plan, runs, build_seconds)
        except Exception as exc:   # noqa: BLE001 - a kernel that fails never stops the run
            return Record(params, Outcome.CRASHED, build_seconds=build_seconds, message=summary(exc))
        finally:
            self._done(plan)
