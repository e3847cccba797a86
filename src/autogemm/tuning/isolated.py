"""Candidates measured in a worker process (``eval_worker``), so that a kernel that crashes the process or
its context, or never finishes, becomes a record and the tuning goes on.

``WorkerProcess`` starts the worker, talks to it and starts it again after it died or was stopped; a
tuning run keeps one for all its problems. ``IsolatedEvaluator`` is what the tuner's search sees: the
evaluator interface (``prepare``, ``evaluate``, ``runs``, ``best_seconds``, ``release``) over one problem
in that worker. What becomes of a candidate:

- its process dies while building it (a compiler that crashes) or while it runs (an out-of-bounds access
  the operating system stops): ``CRASHED``, once a new process died of it too (builds ahead of it share
  the process, and one of them may have been what crashed);
- it runs longer than the run limit (a kernel that never finishes): the process is killed, ``TIMED_OUT``;
- the runtime reports an error while it runs (on NVIDIA an illegal access poisons the context): the
  worker's own evaluator records ``CRASHED`` and the worker exits, so the next candidate has a new context."""

from __future__ import annotations

import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Any

from ..errors import TuningError
from ..runtime.device import Device
from .objective import default_workers
from .records import Outcome, Record

#: Seconds a candidate may run on the device (its check and its timed runs) before its process is killed.
RUN_LIMIT_SECONDS = 60.0
#: Seconds the worker may take to build a candidate (builds ahead share the time) or to make an evaluator.
BUILD_LIMIT_SECONDS = 900.0


class WorkerGone(Exception):
    """The worker died, or was stopped for taking too long; says which and why."""

    def __init__(self, why: str, timed_out: bool = False) -> None:
        super().__init__(why)
        self.timed_out = timed_out
        self.running = False             # whether the candidate was running on the device (else being built)


class WorkerProcess:
    """One worker process on ``device`` (started when first needed), and what it must be told again when
    it starts anew: the evaluator in use. Sending is safe from several threads; receiving is the caller
    of ``evaluate``'s alone."""

    def __init__(self, device: Device, preload: tuple[str, ...] = (), run_limit: float = RUN_LIMIT_SECONDS) -> None:
        self.device, self.preload, self.run_limit = device, tuple(preload), run_limit
        self.generation = 0              # counts starts: a plan prepared before the last one is gone
        self.restarts = 0                # processes lost: died, or stopped for taking too long
        self._spec: dict | None = None
        self._process: subprocess.Popen | None = None
        self._replies: queue.Queue = queue.Queue()
        self._lock = threading.RLock()
        self._next_id = 0

    # ----- the process ---------------------------------------------------------------------------
    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        # a session of its own: stopping it stops its build processes too, and Ctrl-C reaches only the tuner
        self._process = subprocess.Popen([sys.executable, "-m", "autogemm.tuning.eval_worker"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, encoding="utf-8", env=env,
                                         start_new_session=True)
        self.generation += 1
        self._replies = queue.Queue()
        threading.Thread(target=self._read, args=(self._process, self._replies), daemon=True,
                         name="autogemm-eval-reader").start()
        builders = default_workers()
        self._send({"start": {"device": f"{self.device.platform_index}:{self.device.device_index}",
                              "fingerprint": self.device.fingerprint, "preload": list(self.preload),
                              "builders": builders, "build_processes": builders if self.device.is_gpu else 0}})
        self.expect("ready", BUILD_LIMIT_SECONDS)
        if self._spec is not None:
            self._send({"evaluator": self._spec})
            self.expect("ready", BUILD_LIMIT_SECONDS)

    @staticmethod
    def _read(process: subprocess.Popen, replies: queue.Queue) -> None:
        for line in process.stdout:
            try:
                replies.put(json.loads(line))
            except ValueError:
                replies.put({"unreadable": line[:200]})
        replies.put(None)                # the process ended

    def _alive(self) -> subprocess.Popen:
        """The running process, started (again) if there is none."""
        with self._lock:
            if self._process is None:
                try:
                    self._start()
                except WorkerGone as gone:
                    self.stop()
                    raise TuningError(f"the evaluation process on {self.device.name.strip()} could not start: "
                                      f"{gone}") from None
            return self._process

    def _send(self, message: dict) -> None:
        with self._lock:
            try:
                self._process.stdin.write(json.dumps(message) + "\n")
                self._process.stdin.flush()
            except OSError:
                pass                     # it died: the next ``expect`` says so

    def send(self, message: dict) -> int:
        """Send ``message`` to the worker (started if needed); returns the generation it went to."""
        with self._lock:
            self._alive()
            self._send(message)
            return self.generation

    def new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def expect(self, key: str, limit: float) -> dict:
        """The worker's next reply, which must carry ``key``; ``WorkerGone`` when it ends first or sends
        nothing within ``limit`` seconds (then it is killed)."""
        try:
            reply = self._replies.get(timeout=limit)
        except queue.Empty:
            self.stop()
            raise WorkerGone(f"nothing for {limit:g} s; its process was stopped", timed_out=True) from None
        if reply is None:
            raise WorkerGone(self._death())
        if key not in reply:
            self.stop()
            raise WorkerGone(f"it replied {sorted(reply)} where {key!r} was due")
        return reply

    def _death(self) -> str:
        """Why the process ended, and forget it (and whatever of its session is left)."""
        with self._lock:
            process, self._process = self._process, None
        code = None
        if process is not None:
            code = process.wait(timeout=60)
            _kill(process)
        self.restarts += 1
        if code is not None and code < 0:
            return f"its process died of {signal.Signals(-code).name}"
        return f"its process ended with status {code}"

    def stop(self) -> None:
        """Kill the process now (a new one starts when next needed)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            _kill(process)
            self.restarts += 1

    def close(self) -> None:
        """End the process: closing its input ends it; killed if it does not end within a minute."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
            process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            _kill(process)

    def __enter__(self) -> "WorkerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the evaluator in use -----------------------------------------------------------------
    def use(self, spec: dict) -> None:
        """Make the evaluator ``spec`` describes the worker's (and the one a new process makes)."""
        with self._lock:
            self._spec = spec
            if self._process is None:
                self._alive()            # starting makes it
                return
            self._send({"evaluator": spec})
        try:
            self.expect("ready", BUILD_LIMIT_SECONDS)
        except WorkerGone as gone:
            raise TuningError(f"the evaluation process on {self.device.name.strip()} failed making its "
                              f"evaluator: {gone}") from None


class PendingPlan:
    """A plan the worker is building ahead (what ``IsolatedEvaluator.prepare`` returns)."""

    def __init__(self, worker: WorkerProcess, index: int, generation: int) -> None:
        self.worker, self.index, self.generation = worker, index, generation

    def release(self) -> None:
        if self.generation == self.worker.generation:
            self.worker.send({"discard": self.index})


class IsolatedEvaluator:
    """The evaluator ``spec`` describes (``eval_worker.EVALUATORS``), run in ``worker``: a kind (``gemm``
    or ``gemv``), a dtype key and the problem's ``shape`` (and a GEMV's ``layout``); ``runs`` timed runs,
    and operands from ``seed`` (the same after a restart)."""

    def __init__(self, worker: WorkerProcess, spec: dict[str, Any], runs: int = 5, seed: int | None = None) -> None:
        self.worker, self.runs = worker, runs
        self.best_seconds = math.inf
        self.seed = seed if seed is not None else int.from_bytes(os.urandom(4), "little")
        worker.use({**spec, "runs": runs, "seed": self.seed})

    def prepare(self, params) -> PendingPlan:
        index = self.worker.new_id()
        generation = self.worker.send({"prepare": index, "config": params.to_dict()})
        return PendingPlan(self.worker, index, generation)

    def evaluate(self, params, plan: PendingPlan | BaseException | None = None, runs: int | None = None,
                 build_seconds: float = 0.0) -> Record:
        """Measure ``params`` in the worker, with the plan it prepared if it still has it (else it builds
        it now). A process that dies is started again and the candidate tried once more before it is
        blamed: builds ahead of it share the process, and one of them may have been what crashed."""
        runs = self.runs if runs is None else runs
        index = plan.index if isinstance(plan, PendingPlan) else self.worker.new_id()
        try:
            return self._attempt(params, index, runs)
        except WorkerGone as gone:
            if gone.timed_out:
                return _failed(params, gone)
        try:
            return self._attempt(params, self.worker.new_id(), runs)
        except WorkerGone as gone:
            return _failed(params, gone)

    def _attempt(self, params, index: int, runs: int) -> Record:
        """One try: ``WorkerGone`` (saying whether the candidate was running) when the worker dies or stalls."""
        self.worker.send({"evaluate": index, "config": params.to_dict(), "runs": runs, "best_seconds": self.best_seconds})
        self.worker.expect("running", BUILD_LIMIT_SECONDS)
        try:
            reply = self.worker.expect("record", self.worker.run_limit)
        except WorkerGone as gone:
            gone.running = True
            raise
        self.best_seconds = min(self.best_seconds, float(reply["best_seconds"]))
        return Record.from_dict(reply["record"])

    def release(self) -> None:
        """Nothing to free here: the worker frees an evaluator when it makes the next, or when it ends."""


def _kill(process: subprocess.Popen) -> None:
    """Kill the worker and every process of its session (its build processes)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def _failed(params, gone: WorkerGone) -> Record:
    """The record of a candidate whose worker died or was stopped."""
    outcome = Outcome.TIMED_OUT if gone.timed_out and gone.running else Outcome.CRASHED
    return Record(params, outcome, message=f"{'while it ran' if gone.running else 'while it was built'}: {gone}")
