"""The process a tuning run's candidates are measured in (``isolated.WorkerProcess`` starts it;
``runtime.child.serve`` carries its requests and replies, a JSON object per line, made and read by
``requests``). It opens its own context on the device and makes the evaluator of each problem tuned
(``GemmEvaluator`` or ``GemvEvaluator`` by the spec's routine, or on the CUDA path's runtime, opened when
first asked for, ``CudaEvaluator``); the requests and their replies are described in ``requests``.

A candidate that crashes the process or never finishes costs this process, not the tuner: the parent
stops it and starts another. After a candidate that crashed while running, or failed its verification,
the context may be unusable (on NVIDIA an illegal access poisons it), so this process exits at once when
it has replied, and says so in the reply (``"ending": true``). Otherwise it ends when its stdin does."""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict

import numpy as np

from ...accuracy import random_matrix
from ...blas import GemmProblem, LaunchPlan, Op
from ...blas.cuda_gemm import cuda_target
from ...blas.plans import Choice, choice_for, plan_of
from ...blas.verification import verify
from ...codelets.registry import GEMM, GEMV, Params, family_of
from ...dtypes import Dtype, get_dtype
from ...engine import GemmOptions, run_gemm
from ...engine.dispatch import clear_calls
from ...errors import DeviceError
from ...profiles import Profile, trying
from ...runtime.backend import CUDA, OPENCL, Runtime, resident_seconds
from ...runtime.child import serve
from ...runtime.opencl.context import DeviceContext, context_for
from ...runtime.opencl.discovery import same_device
from ...shares.host import HOST_SETTLE_SECONDS
from .. import fma
from ..records import Outcome
from .cuda import CudaEvaluator, verified
from .gemm import GemmEvaluator
from .gemv import GemvEvaluator
from .interface import discard_plan
from .measuring import MeasuringEvaluator, summary
from .requests import (
    BenchmarkFma,
    ComparePlans,
    Discard,
    Evaluate,
    MakeEvaluator,
    Prepare,
    Request,
    Start,
    TimeCalls,
    TimeHostCalls,
    Verify,
    decode,
)

#: The evaluators a worker makes, by the runtime and the routine of the spec.
EVALUATORS: dict[tuple[str, str], type[MeasuringEvaluator]] = {
    (OPENCL, GEMM): GemmEvaluator, (OPENCL, GEMV): GemvEvaluator, (CUDA, GEMM): CudaEvaluator}
Reply = Callable[[dict], None]


#: The rounds of a ``TimeHostCalls`` request's timings of each way, the fastest kept.
HOST_CALL_ROUNDS = 3


class Worker:
    """The device's context (made by the start request), the evaluator of the problem being tuned and the
    plans being built ahead for it."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.ctx: DeviceContext | None = None
        self.pool: ThreadPoolExecutor | None = None
        self.evaluator: MeasuringEvaluator | None = None
        self.plans: dict[int, Future] = {}
        self.handlers: dict[type, Callable[[Request, Reply], None]] = {
            Start: self._start, MakeEvaluator: self._make_evaluator, Prepare: self._prepare_ahead,
            Discard: self._discard, Evaluate: self._evaluate, BenchmarkFma: self._fma, Verify: self._verify,
            TimeCalls: self._time_calls, TimeHostCalls: self._time_host_calls, ComparePlans: self._compare_plans}

    def handle(self, message: dict, reply: Reply) -> None:
        """Serve one request."""
        request = decode(message)
        self.handlers[type(request)](request, reply)

    def _start(self, start: Start, reply: Reply) -> None:
        for module in start.preload:
            importlib.import_module(module)
        self.ctx = context_for(same_device(start.slot, start.fingerprint))
        if start.build_processes:
            self.stack.enter_context(self.ctx.building_in_processes(start.build_processes))
        self.pool = ThreadPoolExecutor(start.builders, thread_name_prefix="autogemm-build")
        reply({"ready": True})

    def _runtime(self, backend: str, dt: Dtype) -> Runtime:
        """The context ``dt``'s products run in on the device on ``backend``: OpenCL's, or the CUDA
        path's (made once)."""
        if backend == OPENCL:
            return self.ctx
        cuda, why = cuda_target(self.ctx.device, dt)
        if cuda is None:
            raise DeviceError(f"no CUDA path on {self.ctx.device.name.strip()}: {why}")
        return cuda

    def _make_evaluator(self, request: MakeEvaluator, reply: Reply) -> None:
        self._drop_evaluator()
        spec = request.spec
        runtime = self._runtime(spec.backend, get_dtype(spec.dtype))
        self.evaluator = EVALUATORS[spec.backend, spec.routine].from_spec(runtime, spec)
        reply({"ready": True})

    def _prepare(self, config: Params) -> tuple[object, float]:
        started = time.perf_counter()
        try:
            plan: object = self.evaluator.prepare(config)
        except Exception as exc:   # noqa: BLE001 - the evaluator turns it into a record
            plan = exc
        return plan, time.perf_counter() - started

    def _prepare_ahead(self, request: Prepare, reply: Reply) -> None:
        self.plans[request.index] = self.pool.submit(self._prepare, request.config)

    def _discard(self, request: Discard, reply: Reply) -> None:
        future = self.plans.pop(request.index, None)
        if future is not None:
            future.add_done_callback(lambda done: discard_plan(done.result()[0]))

    def _evaluate(self, request: Evaluate, reply: Reply) -> None:
        future = self.plans.pop(request.index, None)
        plan, build_seconds = future.result() if future is not None else self._prepare(request.config)
        self.evaluator.best_seconds = request.best_seconds
        reply({"running": request.index})
        record = self.evaluator.evaluate(request.config, plan, request.runs, build_seconds)
        crashed = record.outcome is Outcome.CRASHED
        reply({"record": record.to_dict(), "best_seconds": self.evaluator.best_seconds, "ending": crashed})
        if crashed:
            os._exit(0)       # its context may be unusable, and freeing it could hang: the parent starts anew

    def _fma(self, request: BenchmarkFma, reply: Reply) -> None:
        results = fma.benchmark(self.ctx, request.reals, request.widths)
        reply({"fma": [asdict(result) for result in results]})

    def _verify(self, request: Verify, reply: Reply) -> None:
        dt = get_dtype(request.dtype)
        if family_of(request.config).backend == CUDA:
            problem = verified(self._runtime(CUDA, dt), dt, request.config)
        else:
            problem = verify(self.ctx, request.config, dt)
        reply({"verified": problem, "ending": bool(problem)})
        if problem:
            os._exit(0)       # it may have failed by losing the context: the next request starts anew

    def _time_calls(self, request: TimeCalls, reply: Reply) -> None:
        dt = get_dtype(request.dtype)
        m, n, k = request.shape
        ops = (Op.from_letter(letter, "layout") for letter in request.layout)
        ctx = self.ctx.for_calls           # on a queue without profiling, as a program's calls run
        sizes = (m * k * dt.itemsize, k * n * dt.itemsize, m * n * dt.output.itemsize)
        memory: list = []
        try:
            for nbytes in sizes:
                memory.append(ctx.allocate(nbytes))
                ctx.fill(memory[-1], np.zeros((), np.uint8), nbytes)     # (zeros: no NaN to slow a CPU)
            plan = LaunchPlan(ctx, GemmProblem.dense(dt, m, n, k, *ops), request.config, edge="auto")
            try:
                seconds = _per_call(lambda: plan.enqueue(*memory), ctx.queue.finish, request.seconds)
            finally:
                plan.release()
        except Exception as exc:   # noqa: BLE001 - a configuration that fails is answered, not fatal
            reply({"seconds": None, "error": summary(exc)})
            return
        finally:
            for block in memory:
                block.release()
        reply({"seconds": seconds})

    def _compare_plans(self, request: ComparePlans, reply: Reply) -> None:
        profiles = [Profile.from_json(text) for text in request.profiles]
        device = self.ctx.device
        compared: list[list[dict] | None] = []
        for key, m, n, k, layout in request.problems:
            dt = get_dtype(key)
            problem = GemmProblem.dense(dt, m, n, k, *(Op.from_letter(letter, "layout") for letter in layout))
            choices = []
            for profile in profiles:
                with trying(device, profile):
                    choices.append(choice_for(device, problem))
            if len({choice.key for choice in choices}) == 1:
                compared.append(None)
                continue
            sizes = (m * k * dt.itemsize, k * n * dt.itemsize, m * n * dt.output.itemsize)
            memory = [self.ctx.allocate(nbytes) for nbytes in sizes]
            try:
                for block, nbytes in zip(memory, sizes):
                    self.ctx.fill(block, np.zeros((), np.uint8), nbytes)
                timed = []
                for profile, choice in zip(profiles, choices):
                    with trying(device, profile):
                        timed.append(_timed_choice(self.ctx, problem, choice, memory, request.runs))
                compared.append(timed)
            finally:
                for block in memory:
                    block.release()
        reply({"compared": compared})

    def _time_host_calls(self, request: TimeHostCalls, reply: Reply) -> None:
        dt, n = get_dtype(request.dtype), request.side
        rng = np.random.default_rng(0)
        a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
        # the device's way as ``gemm`` takes it, host route aside, after a pause (numpy's BLAS threads spin
        # on after its products, on the cores the copy threads need), then the host's BLAS (a new result
        # each, as a program's); each the fastest of a few rounds: on a host of many cores one round's
        # timings swung several times over from the next
        on_device = GemmOptions(device=self.ctx.device, backend=OPENCL)
        seconds = request.seconds / HOST_CALL_ROUNDS
        time.sleep(HOST_SETTLE_SECONDS)
        try:
            device = min(_per_call(lambda: run_gemm(a, b, None, None, on_device), lambda: None, seconds)
                         for _ in range(HOST_CALL_ROUNDS))
        except Exception:   # noqa: BLE001 - the device's way failed: the host's stands alone
            device = None
        finally:            # (the plans, buffers and page-locked memory those calls keep)
            clear_calls()
        host = min(_per_call(lambda: a @ b, lambda: None, seconds) for _ in range(HOST_CALL_ROUNDS))
        reply({"device": device, "host": host})

    def _drop_evaluator(self) -> None:
        for future in self.plans.values():
            discard_plan(future.result()[0])
        self.plans.clear()
        if self.evaluator is not None:
            self.evaluator.release()
            self.evaluator = None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self._drop_evaluator()
        self.stack.close()


def _per_call(call: Callable[[], object], drain: Callable[[], None], seconds: float) -> float:
    """Wall seconds per ``call``, calls enqueued back to back after a warm-up (the queue drained before
    the clock stops), as many as take about ``seconds`` by a first estimate, 3 to 2000."""
    for _ in range(2):
        call()
    drain()
    started = time.perf_counter()
    call()
    drain()
    calls = min(2000, max(3, round(seconds / max(time.perf_counter() - started, 1e-7))))
    started = time.perf_counter()
    for _ in range(calls):
        call()
    drain()
    return (time.perf_counter() - started) / calls


def _timed_choice(ctx: DeviceContext, problem: GemmProblem, choice: Choice, memory: list, runs: int) -> dict:
    """``choice``'s plan for ``problem`` timed on ``memory`` (A, B, C) as ``autogemm bench`` times it, and
    what it ran (``requests.ComparePlans``)."""
    chosen, route = choice.selection, choice.route
    gemv = route and [route.gemv.layout, route.gemv.rows, route.gemv.cols, route.gemv.vectors]
    try:
        plan = plan_of(ctx, problem, choice)
        try:
            seconds = resident_seconds(ctx, lambda: plan.enqueue(*memory), runs)
        finally:
            plan.release()
    except Exception as exc:   # noqa: BLE001 - a plan that fails is answered, not fatal
        return {"seconds": None, "error": summary(exc)}
    return {"seconds": seconds, "config": chosen.params.to_dict(), "split": chosen.split, "gemv": gemv}


def main() -> None:
    worker = Worker()
    try:
        serve(worker.handle)
    finally:
        worker.close()


if __name__ == "__main__":
    main()
