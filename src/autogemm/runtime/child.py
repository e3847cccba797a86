"""``Child``: a module of autogemm run as a child process that answers JSON lines, for work that a driver
may crash or hang (compiling, running candidate kernels). Requests go to its stdin and replies come from
its stdout, one JSON object per line: nothing is pickled. ``serve`` is the child's side.

The child runs in a session of its own: stopping it stops whatever it started (build processes of its
own), and Ctrl-C in a terminal reaches only the parent. A child that died, or that was stopped for
answering too late, is started again by the next ``send``."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO


class ChildGone(Exception):
    """The child died, or was stopped for answering too late; says which and why."""

    def __init__(self, why: str, timed_out: bool = False) -> None:
        super().__init__(why)
        self.timed_out = timed_out


class Child:
    """``python -m module`` as a child process. Its first request is ``hello``, answered ``{"ready": ...}``
    within ``start_limit`` seconds; ``started`` is called after every start (to tell a new process what the
    last one knew). A reply with ``"ending": true`` says the child exits after it. Sending is safe from
    several threads; one thread at a time may ``expect``."""

    def __init__(self, module: str, hello: dict, start_limit: float) -> None:
        self.module, self.hello, self.start_limit = module, hello, start_limit
        self.generation = 0              # counts starts
        self.restarts = 0                # processes lost: died, or stopped for answering too late
        self._process: subprocess.Popen | None = None
        self._replies: queue.Queue = queue.Queue()
        self._lock = threading.RLock()

    def started(self) -> None:
        """Called after each start, with the process answering; for subclasses."""

    # ----- the process ---------------------------------------------------------------------------
    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._process = subprocess.Popen([sys.executable, "-m", self.module], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, encoding="utf-8", env=env,
                                         start_new_session=True)
        self.generation += 1
        self._replies = queue.Queue()
        threading.Thread(target=_read, args=(self._process, self._replies), daemon=True,
                         name=f"autogemm-{self.module.rsplit('.', 1)[-1]}").start()
        self._post(self.hello)
        self.expect("ready", self.start_limit)
        self.started()

    def ensure(self) -> None:
        """Start the process if none is running; ``ChildGone`` when it cannot start."""
        with self._lock:
            if self._process is None:
                try:
                    self._start()
                except ChildGone:
                    self.stop()
                    raise

    def _post(self, message: dict) -> None:
        with self._lock:
            try:
                self._process.stdin.write(json.dumps(message) + "\n")
                self._process.stdin.flush()
            except OSError:
                pass                     # it died: the next ``expect`` says so

    def send(self, message: dict) -> int:
        """Send ``message`` (starting the process if needed); returns the generation it went to."""
        with self._lock:
            self.ensure()
            self._post(message)
            return self.generation

    def expect(self, key: str, limit: float) -> dict:
        """The next reply, which must carry ``key``; ``ChildGone`` when the process ends first or sends
        nothing within ``limit`` seconds (then it is stopped)."""
        try:
            reply = self._replies.get(timeout=limit)
        except queue.Empty:
            self.stop()
            raise ChildGone(f"nothing for {limit:g} s; its process was stopped", timed_out=True) from None
        if reply is None:
            raise ChildGone(self._death())
        if key not in reply:
            self.stop()
            raise ChildGone(f"it replied {sorted(reply)} where {key!r} was due")
        if reply.get("ending"):
            self.stop()                  # it exits after this reply: the next ``send`` starts a new one
        return reply

    def _death(self) -> str:
        """Why the process ended; forgets it and ends what is left of its session."""
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
        """Kill the process and its session now (a new one starts when next needed)."""
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


def _read(process: subprocess.Popen, replies: queue.Queue) -> None:
    for line in process.stdout:
        try:
            replies.put(json.loads(line))
        except ValueError:
            replies.put({"unreadable": line[:200]})
    replies.put(None)                    # the process ended


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def serve(handle: Callable[[dict, Callable[[dict], None]], None]) -> None:
    """The child's side: ``handle(request, reply)`` for each request line until stdin ends. Replies go to
    the original stdout alone: file descriptor 1 is pointed at stderr, so that whatever a driver or compiler
    prints cannot break a reply."""
    out: IO[str] = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    lock = threading.Lock()

    def reply(message: dict) -> None:
        with lock:
            out.write(json.dumps(message) + "\n")
            out.flush()

    for line in sys.stdin:
        handle(json.loads(line), reply)
