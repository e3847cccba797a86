"""The process a tuning run's candidates are measured in (``isolated.WorkerProcess`` starts it;
``runtime.child.serve`` carries its requests and replies, a JSON object per line): it opens its own context
on the device and makes the evaluator of each problem tuned. Its requests:

- ``{"start": {...}}`` first: the device's slot and fingerprint, the build threads and processes, and
  modules to import first (families that tests define); replied ``{"ready": true}``.
- ``{"evaluator": {...}}``: make the evaluator described (``EVALUATORS``: a kind, a dtype, a problem, its
  runs and the seed of its random operands), in place of the last; replied ``{"ready": true}``.
- ``{"prepare": id, "config": {...}}``: build that configuration's plan in the background; no reply.
- ``{"discard": id}``: free a plan prepared and not measured; no reply.
- ``{"evaluate": id, "config": {...}, "runs": n, "best_seconds": s}``: replied ``{"running": id}`` once the
  plan is built and the device is about to run it, then ``{"record": {...}, "best_seconds": s}``.
- ``{"fma": {"reals": [...], "widths": [...]}}``: the FMA benchmark (``fma.benchmark``); replied with
  its results.
- ``{"verify": {...}, "dtype": key}``: a finalist on awkward shapes (``verify``, or ``verify_gemv``);
  replied ``{"verified": null}`` or what went wrong.

A candidate that crashes the process or never finishes costs this process, not the tuner: the parent
stops it and starts another. After a candidate that crashed while running, or failed its verification,
the context may be unusable (on NVIDIA an illegal access poisons it), so this process exits at once when
it has replied, and says so in the reply (``"ending": true``). Otherwise it ends when its stdin does."""

from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict

from ..codelets.gemv import GemvParams
from ..codelets.registry import params_from_dict
from ..dtypes import get_dtype
from ..runtime.child import serve
from ..runtime.context import DeviceContext, context_for
from ..runtime.discovery import same_device
from . import fma
from .evaluator import Evaluator, KernelEvaluator
from .gemv_tuner import GemvEvaluator, verify_gemv
from .objective import discard_plan
from .records import Outcome
from .verify import verify


def _options(spec: dict) -> dict:
    """An evaluator's options in ``spec``: its runs and seed, and its slow factor where given (None: every
    candidate is timed in full)."""
    options = {"runs": spec["runs"], "seed": spec["seed"]}
    if "slow_factor" in spec:
        options["slow_factor"] = math.inf if spec["slow_factor"] is None else float(spec["slow_factor"])
    return options


def _gemm(ctx: DeviceContext, spec: dict) -> KernelEvaluator:
    return Evaluator(ctx, get_dtype(spec["dtype"]), *spec["shape"], **_options(spec))


def _gemv(ctx: DeviceContext, spec: dict) -> KernelEvaluator:
    return GemvEvaluator(ctx, get_dtype(spec["dtype"]), spec["layout"], *spec["shape"], **_options(spec))


#: The evaluators a worker can make, by the ``kind`` of the start request's ``evaluator``.
EVALUATORS: dict[str, Callable[[DeviceContext, dict], KernelEvaluator]] = {"gemm": _gemm, "gemv": _gemv}


class Worker:
    """The device's context (made by the start request), the evaluator of the problem being tuned and the
    plans being built ahead for it."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.ctx: DeviceContext | None = None
        self.pool: ThreadPoolExecutor | None = None
        self.evaluator: KernelEvaluator | None = None
        self.plans: dict[int, Future] = {}

    def _start(self, start: dict) -> None:
        for module in start["preload"]:
            importlib.import_module(module)
        self.ctx = context_for(same_device(start["device"], start["fingerprint"]))
        if start["build_processes"]:
            self.stack.enter_context(self.ctx.building_in_processes(start["build_processes"]))
        self.pool = ThreadPoolExecutor(start["builders"], thread_name_prefix="autogemm-build")

    def _prepare(self, config) -> tuple[object, float]:
        started = time.perf_counter()
        try:
            plan: object = self.evaluator.prepare(config)
        except Exception as exc:   # noqa: BLE001 - the evaluator turns it into a record
            plan = exc
        return plan, time.perf_counter() - started

    def handle(self, request: dict, reply: Callable[[dict], None]) -> None:
        """Serve one request."""
        if "start" in request:
            self._start(request["start"])
            reply({"ready": True})
        elif "evaluator" in request:
            self._drop_evaluator()
            spec = request["evaluator"]
            self.evaluator = EVALUATORS[spec["kind"]](self.ctx, spec)
            reply({"ready": True})
        elif "prepare" in request:
            config = params_from_dict(request["config"], routine=None)
            self.plans[request["prepare"]] = self.pool.submit(self._prepare, config)
        elif "discard" in request:
            future = self.plans.pop(request["discard"], None)
            if future is not None:
                future.add_done_callback(lambda done: discard_plan(done.result()[0]))
        elif "fma" in request:
            results = fma.benchmark(self.ctx, tuple(request["fma"]["reals"]), tuple(request["fma"]["widths"]))
            reply({"fma": [asdict(result) for result in results]})
        elif "verify" in request:
            config = params_from_dict(request["verify"], routine=None)
            check = verify_gemv if isinstance(config, GemvParams) else verify
            problem = check(self.ctx, config, get_dtype(request["dtype"]))
            reply({"verified": problem, "ending": bool(problem)})
            if problem:
                os._exit(0)       # it may have failed by losing the context: the next request starts anew
        elif "evaluate" in request:
            index = request["evaluate"]
            config = params_from_dict(request["config"], routine=None)
            future = self.plans.pop(index, None)
            plan, build_seconds = future.result() if future is not None else self._prepare(config)
            self.evaluator.best_seconds = float(request["best_seconds"])
            reply({"running": index})
            record = self.evaluator.evaluate(config, plan, request["runs"], build_seconds)
            crashed = record.outcome is Outcome.CRASHED
            reply({"record": record.to_dict(), "best_seconds": self.evaluator.best_seconds, "ending": crashed})
            if crashed:
                os._exit(0)       # its context may be unusable, and freeing it could hang: the parent starts anew

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


def main() -> None:
    worker = Worker()
    try:
        serve(worker.handle)
    finally:
        worker.close()


if __name__ == "__main__":
    main()
