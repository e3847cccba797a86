"""Candidates measured in a worker process (``worker``), so that a kernel that crashes the process or
its context, or never finishes, becomes a record and the tuning goes on.

``WorkerProcess`` is that process (a ``runtime.child.Child``, spoken to in the typed ``requests``); a
tuning run keeps one for all its problems, and a new process is told the evaluator in use.
``IsolatedEvaluator`` is what the tuner's search sees: an ``Evaluator`` of one problem in that worker.
What becomes of a candidate:

- its process dies while building it (a compiler that crashes) or while it runs (an out-of-bounds access
  the operating system stops): ``CRASHED``, once a new process died of it too (builds ahead of it share
  the process, and one of them may have been what crashed);
- it runs longer than the run limit (a kernel that never finishes): the process is killed, ``TIMED_OUT``;
- the runtime reports an error while it runs (on NVIDIA an illegal access poisons the context): the
  worker's own evaluator records ``CRASHED`` and the worker exits, so the next candidate has a new context."""

from __future__ import annotations

import math
import os
from dataclasses import replace

from ...codelets.registry import Params
from ...dtypes import Dtype
from ...errors import TuningError
from ...profiles import Profile
from ...runtime.child import Child, ChildGone
from ...runtime.opencl.build_pool import default_builders
from ...runtime.opencl.device import Device
from ..fma import FmaResult
from ..records import Outcome, Record
from .requests import (
    BenchmarkFma,
    ComparePlans,
    Discard,
    Evaluate,
    EvaluatorSpec,
    MakeEvaluator,
    Prepare,
    Request,
    Start,
    TimeCalls,
    TimeHostCalls,
    Verify,
    encode,
)

#: Seconds a candidate may run on the device (its check and its timed runs) before its process is killed.
RUN_LIMIT_SECONDS = 60.0
#: Seconds the worker may take to build a candidate (builds ahead share the time) or to make an evaluator.
BUILD_LIMIT_SECONDS = 900.0


class WorkerProcess(Child):
    """The evaluation worker on ``device`` (started when first needed), with ``preload`` imported there
    first (families tests define) and ``run_limit`` seconds for each candidate's run."""

    def __init__(self, device: Device, preload: tuple[str, ...] = (), run_limit: float = RUN_LIMIT_SECONDS) -> None:
        builders = default_builders()
        start = Start(device.slot, device.fingerprint, tuple(preload), builders, builders if device.is_gpu else 0)
        super().__init__("autogemm.tuning.evaluation.worker", encode(start), BUILD_LIMIT_SECONDS)
        self.device, self.run_limit = device, run_limit
        self._spec: EvaluatorSpec | None = None
        self._next_id = 0

    def request(self, request: Request) -> int:
        """Send ``request`` (starting the process if needed); the generation of the process it went to."""
        return self.send(encode(request))

    def started(self) -> None:
        if self._spec is not None:
            self._post(encode(MakeEvaluator(self._spec)))
            self.expect("ready", BUILD_LIMIT_SECONDS)

    def ensure(self) -> None:
        """Start the worker if none runs; a worker that cannot start ends the tuning (``TuningError``)."""
        try:
            super().ensure()
        except ChildGone as gone:
            raise TuningError(f"the evaluation process on {self.device.name.strip()} could not start: {gone}") \
                from None

    def use(self, spec: EvaluatorSpec) -> None:
        """Make the evaluator ``spec`` describes the worker's (and the one each new process makes)."""
        with self._lock:
            self._spec = spec
            if self._process is None:
                self.ensure()            # starting makes it
                return
            self._post(encode(MakeEvaluator(spec)))
        try:
            self.expect("ready", BUILD_LIMIT_SECONDS)
        except ChildGone as gone:
            raise TuningError(f"the evaluation process on {self.device.name.strip()} failed making its "
                              f"evaluator: {gone}") from None

    def verify(self, params: Params, dtype: Dtype) -> str | None:
        """What goes wrong when ``params`` computes awkward shapes of ``dtype`` (``verification.verify``),
        run in the worker; None when nothing does. A worker that dies or stalls doing it is what went
        wrong."""
        try:
            self.request(Verify(params, dtype.key))
            return self.expect("verified", BUILD_LIMIT_SECONDS + self.run_limit)["verified"]
        except ChildGone as gone:
            return f"the verification lost its process: {gone}"

    def time_calls(self, params: Params, dtype: Dtype, shape: tuple[int, int, int], layout: str = "NN",
                   seconds: float = 0.1) -> float | None:
        """Wall seconds per product of ``params`` on ``shape`` (A and B stored as ``layout`` says) enqueued
        back to back in the worker (``requests.TimeCalls``); None where it fails to build or run, or loses
        its process."""
        try:
            self.request(TimeCalls(params, dtype.key, tuple(shape), layout, seconds))
            return self.expect("seconds", BUILD_LIMIT_SECONDS + self.run_limit)["seconds"]
        except ChildGone:
            return None

    def time_host_calls(self, dtype: Dtype, side: int, seconds: float = 0.1) -> tuple[float | None, float | None]:
        """Wall seconds per product of two ``side`` squares of ``dtype`` from numpy to numpy on the device
        and by the host's BLAS, in the worker (``requests.TimeHostCalls``); None for a way that failed."""
        try:
            self.request(TimeHostCalls(dtype.key, side, seconds))
            times = self.expect("host", BUILD_LIMIT_SECONDS + self.run_limit)
            return times["device"], times["host"]
        except ChildGone:
            return None, None

    def compare_plans(self, profiles: tuple[Profile, ...], problems: list[tuple], runs: int
                      ) -> list[list[dict] | None] | None:
        """The plans of GEMM ``problems`` under each of ``profiles``, timed in the worker where they differ
        (``requests.ComparePlans``); None where it loses its process."""
        try:
            self.request(ComparePlans(tuple(profile.to_json() for profile in profiles), tuple(problems), runs))
            return self.expect("compared", (2 * BUILD_LIMIT_SECONDS + self.run_limit) * max(1, len(problems)))[
                "compared"]
        except ChildGone:
            return None

    def fma(self, reals: tuple[str, ...], widths: tuple[int, ...]) -> list[FmaResult]:
        """The FMA benchmark (``fma.benchmark``) run in the worker; ``TuningError`` when it fails there."""
        try:
            self.request(BenchmarkFma(tuple(reals), tuple(widths)))
            return [FmaResult(**result) for result in self.expect("fma", BUILD_LIMIT_SECONDS)["fma"]]
        except ChildGone as gone:
            raise TuningError(f"the FMA benchmark on {self.device.name.strip()} lost its process: {gone}") from None

    def new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PendingPlan:
    """A plan the worker is building ahead (what ``IsolatedEvaluator.prepare`` returns)."""

    def __init__(self, worker: WorkerProcess, index: int, generation: int) -> None:
        self.worker, self.index, self.generation = worker, index, generation

    def release(self) -> None:
        if self.generation == self.worker.generation:
            self.worker.request(Discard(self.index))


class _Lost(Exception):
    """The worker died or was stopped during a candidate: while it was built, or while it ran."""

    def __init__(self, gone: ChildGone, running: bool) -> None:
        super().__init__(str(gone))
        self.gone, self.running = gone, running

    def record(self, params: Params) -> Record:
        outcome = Outcome.TIMED_OUT if self.gone.timed_out and self.running else Outcome.CRASHED
        when = "while it ran" if self.running else "while it was built"
        return Record(params, outcome, message=f"{when}: {self.gone}")


class IsolatedEvaluator:
    """The evaluator ``spec`` describes, run in ``worker``, with ``runs`` timed runs and operands from
    ``seed`` (a fresh one when None; the same after a restart)."""

    def __init__(self, worker: WorkerProcess, spec: EvaluatorSpec, runs: int = 5, seed: int | None = None) -> None:
        self.worker, self.runs = worker, runs
        self.best_seconds = math.inf
        self.seed = seed if seed is not None else int.from_bytes(os.urandom(4), "little")
        worker.use(replace(spec, runs=runs, seed=self.seed))

    def prepare(self, params: Params) -> PendingPlan:
        index = self.worker.new_id()
        generation = self.worker.request(Prepare(index, params))
        return PendingPlan(self.worker, index, generation)

    def evaluate(self, params: Params, plan: object = None, runs: int | None = None,
                 build_seconds: float = 0.0) -> Record:
        """Measure ``params`` in the worker, with the plan it prepared if it still has it (else it builds
        it now). A process that dies is started again and the candidate tried once more before it is
        blamed: builds ahead of it share the process, and one of them may have been what crashed."""
        runs = self.runs if runs is None else runs
        index = plan.index if isinstance(plan, PendingPlan) else self.worker.new_id()
        try:
            return self._attempt(params, index, runs)
        except _Lost as lost:
            if lost.gone.timed_out:
                return lost.record(params)
        try:
            return self._attempt(params, self.worker.new_id(), runs)
        except _Lost as lost:
            return lost.record(params)

    def _attempt(self, params: Params, index: int, runs: int) -> Record:
        """One try; ``_Lost`` when the worker dies or stalls."""
        try:
            self.worker.request(Evaluate(index, params, runs, self.best_seconds))
            self.worker.expect("running", BUILD_LIMIT_SECONDS)
        except ChildGone as gone:
            raise _Lost(gone, running=False) from None
        try:
            reply = self.worker.expect("record", self.worker.run_limit)
        except ChildGone as gone:
            raise _Lost(gone, running=True) from None
        self.best_seconds = min(self.best_seconds, float(reply["best_seconds"]))
        return Record.from_dict(reply["record"])

    def release(self) -> None:
        """Nothing to free here: the worker frees an evaluator when it makes the next, or when it ends."""
