"""Host copies on helper threads: ``in_parallel`` runs tasks at once, ``in_order`` hands their results over
one by one as they end, ``parallel_copy`` copies one array into another by parts. numpy's copies and
``ctypes.memmove`` release the GIL, so the helpers copy at the same time.

A helper is a thread of its own that sleeps on a lock of its own until it is given tasks: handing tasks
over costs a lock release per helper, where a ``ThreadPoolExecutor`` queues a future per task (on the
H100's 16-core host, 8 tasks that do nothing took 0.16 ms through an executor and 0.08 ms so; 8 MiB
copied by 6 threads in 0.27 ms, against 0.45 ms through an executor and 0.73 ms by one thread). Callers
in several threads share the helpers: each takes those idle at the time, and does the rest itself."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Generator, Sequence
from typing import TypeVar

import numpy as np

#: Threads copying between numpy arrays and page-locked memory, the caller's own among them: half the
#: cores, at most 16. On the H100's 16-core host one thread copied 10 GB/s, 6 to 8 threads 30 to 47 GB/s,
#: and 12 or more did worse than 8 (the GIL each takes to start its copy is passed on one at a time).
COPY_THREADS = max(1, min(16, (os.cpu_count() or 2) // 2))
#: Copies smaller than this are made by the calling thread alone; larger ones in parts of at least
#: ``PART_BYTES``, one part by the calling thread.
THREADED_BYTES, PART_BYTES = 4 * 2**20, 2**20

Result = TypeVar("Result")


class _Helper:
    """A daemon thread that runs the tasks it is given (``start``), in order, and marks each one done."""

    def __init__(self, pool: _Helpers) -> None:
        self._pool = pool
        self._go = threading.Lock()
        self._go.acquire()
        self._work: list[_Slot] = []
        threading.Thread(target=self._loop, name="autogemm-copy", daemon=True).start()

    def start(self, work: list[_Slot]) -> None:
        self._work = work
        self._go.release()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            work, self._work = self._work, []
            for slot in work:
                slot.run()
            self._pool.give_back(self)


class _Slot:
    """One task, its result or error, and a lock held until it has run."""

    __slots__ = ("task", "result", "error", "_done")

    def __init__(self, task: Callable[[], object]) -> None:
        self.task, self.result, self.error = task, None, None
        self._done = threading.Lock()
        self._done.acquire()

    def run(self) -> None:
        try:
            self.result = self.task()
        except BaseException as error:          # handed to the caller, which raises it
            self.error = error
        finally:
            self._done.release()

    def wait(self) -> object:
        """The task's result once it has run (its error raised)."""
        self._done.acquire()
        self._done.release()
        if self.error is not None:
            raise self.error
        return self.result


class _Helpers:
    """The process's helper threads, made as callers need them (``COPY_THREADS`` - 1 at most)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Helper] = []
        self._made = 0

    def borrow(self, wanted: int) -> list[_Helper]:
        """Up to ``wanted`` idle helpers (new ones while fewer than ``COPY_THREADS`` - 1 exist)."""
        with self._lock:
            taken, self._idle = self._idle[:wanted], self._idle[wanted:]
            while len(taken) < wanted and self._made < COPY_THREADS - 1:
                self._made += 1
                taken.append(_Helper(self))
        return taken

    def give_back(self, helper: _Helper) -> None:
        with self._lock:
            self._idle.append(helper)


_helpers = _Helpers()


def _forget_helpers() -> None:
    """In a forked child: the parent's helper threads are not there."""
    global _helpers
    _helpers = _Helpers()


os.register_at_fork(after_in_child=_forget_helpers)


def _deal(tasks: Sequence[Callable[[], Result]], caller_too: bool) -> tuple[list[_Slot], list[_Slot]]:
    """Slots for ``tasks``, dealt in turn to the idle helpers (and to the calling thread where
    ``caller_too``, or where no helper is idle); the helpers are started. Returns every slot, and the
    calling thread's own in order."""
    slots = [_Slot(task) for task in tasks]
    helpers = _helpers.borrow(min(COPY_THREADS - 1, len(slots) - (1 if caller_too else 0)))
    hands = len(helpers) + (1 if caller_too or not helpers else 0)
    dealt = [slots[i::hands] for i in range(hands)]
    own = dealt.pop(0) if hands > len(helpers) else []
    for helper, work in zip(helpers, dealt):
        helper.start(work)
    return slots, own


def in_parallel(tasks: Sequence[Callable[[], Result]]) -> list[Result]:
    """The results of ``tasks``, run on the helper threads and the calling thread at once; every task has
    ended when this returns or raises (the first error)."""
    if len(tasks) < 2 or COPY_THREADS == 1:
        return [task() for task in tasks]
    slots, own = _deal(tasks, caller_too=True)
    for slot in own:
        slot.run()
    return _collect(slots)


def in_order(tasks: Sequence[Callable[[], Result]]) -> Generator[Result, None, None]:
    """The results of ``tasks``, one by one in the order of ``tasks`` as soon as each has run, so that the
    calling thread can act on them while later ones run. The tasks are dealt in turn to the helper
    threads and to the calling thread, which runs its own when their turn comes (the first among them:
    it need not wait for a helper to wake). An error is raised where its task's result would come. Every
    task has ended when the iterator is done, fails or is closed."""
    if len(tasks) < 2 or COPY_THREADS == 1:
        for task in tasks:
            yield task()
        return
    slots, own = _deal(tasks, caller_too=True)
    own_ids = {id(slot) for slot in own}
    waited = 0
    try:
        for slot in slots:
            if id(slot) in own_ids:
                slot.run()
            waited += 1
            yield slot.wait()
    finally:            # the caller's slots it never reached are not waited for
        _collect([slot for slot in slots[waited:] if id(slot) not in own_ids] + slots[:waited], raising=False)


def _collect(slots: list[_Slot], raising: bool = True) -> list:
    """Wait for every slot; their results, or the first error raised (where ``raising``)."""
    results, error = [], None
    for slot in slots:
        try:
            results.append(slot.wait())
        except BaseException as failed:     # wait for the others before raising
            error = error or failed
    if error is not None and raising:
        raise error
    return results


def parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for arrays of one shape, by up to ``COPY_THREADS`` threads: over equal byte ranges
    where both are contiguous, else over ranges of rows."""
    if src.nbytes < THREADED_BYTES or COPY_THREADS == 1 or len(src) < 2:
        copy_into(dst, src)
        return
    if dst.flags.c_contiguous and src.flags.c_contiguous:
        dst, src = dst.reshape(-1), src.reshape(-1)
    parts = max(1, min(COPY_THREADS, len(src), src.nbytes // PART_BYTES))
    bounds = np.linspace(0, len(src), parts + 1).astype(int)
    in_parallel([_copier(dst[a:b], src[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a])


def _copier(dst: np.ndarray, src: np.ndarray) -> Callable[[], None]:
    return lambda: copy_into(dst, src)


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src``: one ``memmove`` where both are C-contiguous (about a fifth faster than
    ``np.copyto`` on the H100's host at 16 MiB by 4 threads), else numpy's copy. Either releases the GIL."""
    if dst.flags.c_contiguous and src.flags.c_contiguous and dst.dtype == src.dtype:
        ctypes.memmove(dst.ctypes.data, src.ctypes.data, src.nbytes)
    else:
        np.copyto(dst, src)
