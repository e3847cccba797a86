"""Host copies on helper threads: ``in_parallel`` runs tasks at once, ``Background`` runs them in order
while the caller does something else, ``parallel_copy`` copies one array into another by parts, ``copy_all``
several at once. numpy's copies and ``ctypes.memmove`` release the GIL, so the helpers copy at the same
time.

A helper is a thread of its own that sleeps on a lock of its own until it is given tasks: handing tasks
over costs a lock release per helper, where a ``ThreadPoolExecutor`` queues a future per task (on a copy
of a few MiB, an executor's overhead cost much of what several threads gain over one). Callers in several
threads share the helpers: each takes those idle at the time, and ``in_parallel``'s callers take more as
they come free."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ..cores import usable_cores
from .native import Copier, Piece, copier

#: Threads copying between numpy arrays and page-locked memory, the caller's own among them: half the
#: cores the process may use, at most 16. A few threads copy several times faster than one, and past about
#: half a host's cores more threads copied slower (the GIL each takes to start its copy is passed on one
#: at a time).
COPY_THREADS = max(1, min(16, usable_cores() // 2))
#: Copies smaller than this are made by the calling thread alone; larger ones in parts of at least
#: ``PART_BYTES``, one part by the calling thread.
THREADED_BYTES, PART_BYTES = 4 * 2**20, 2**20
#: ... where the native threads copy (they start within microseconds, where a helper thread takes tens to
#: wake), from this many bytes: two of their parts (``copier.c``), so that two threads share the copy.
NATIVE_THREADED_BYTES = 2**19
#: Parts of a copy are at most this long, so that a large copy has parts left for the helpers that join
#: a caller late (``_Crew``).
LARGEST_PART_BYTES = 8 * 2**20

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


def in_parallel(tasks: Sequence[Callable[[], Result]]) -> list[Result]:
    """The results of ``tasks``, run on the calling thread and the helper threads at once (``_Crew``);
    every task has ended when this returns or raises (the first error)."""
    if len(tasks) < 2 or COPY_THREADS == 1:
        return [task() for task in tasks]
    slots = [_Slot(task) for task in tasks]
    crew = _Crew(slots)
    crew.recruit(len(slots) - 1)
    for index in crew.order:        # (shared with the helpers: each takes the next task no one has)
        slots[index].run()
        crew.recruit(len(slots) - index - 2)
    _collect(crew.hands)
    return _collect(slots)


class _Crew:
    """The caller of ``in_parallel`` and the helpers it has, each taking the next task no one has taken.
    The caller takes the idle helpers at the start and again after each task it runs, so that a caller
    which found every helper busy with another caller's copy (two Dask workers writing blocks of C at
    once: one copied alone, several times slower) is joined by them as they come free."""

    def __init__(self, slots: list[_Slot]) -> None:
        self.slots = slots
        self.order = iter(range(len(slots)))      # taking from it is atomic under the GIL
        self.hands: list[_Slot] = []

    def _take(self) -> None:
        for index in self.order:
            self.slots[index].run()

    def recruit(self, left: int) -> None:
        """Start idle helpers on the tasks, one for each of at most ``left`` tasks (those not yet taken,
        less the caller's next), ``COPY_THREADS`` threads in all."""
        wanted = min(left, COPY_THREADS - 1 - len(self.hands))
        if wanted > 0:
            for helper in _helpers.borrow(wanted):
                self.hands.append(_Slot(self._take))
                helper.start([self.hands[-1]])


class Background:
    """Tasks the helper threads run in order, each taking the next one as it ends the last, while the
    calling thread does something else; ``join`` has the calling thread take the rest too and waits for
    every task. Once a task fails, no thread starts another."""

    def __init__(self, tasks: Sequence[Callable[[], object]]) -> None:
        self._tasks = tasks
        self._next = iter(range(len(tasks)))     # taking from it is atomic under the GIL
        self._stopped = False
        helpers = _helpers.borrow(min(COPY_THREADS - 1, len(tasks))) if COPY_THREADS > 1 else []
        self._slots = [_Slot(self._take) for _ in helpers]
        for helper, slot in zip(helpers, self._slots):
            helper.start([slot])

    def _take(self) -> None:
        for index in self._next:
            if self._stopped:
                return
            self._run(index)

    def _run(self, index: int) -> None:
        try:
            self._tasks[index]()
        except BaseException:
            self._stopped = True
            raise

    def run_next(self) -> None:
        """Run the next task no helper has taken yet (if any) in the calling thread: the first, where
        called at once, while the helpers wake."""
        index = next(self._next, None)
        if index is not None:
            self._run(index)

    def join(self) -> None:
        """Run the tasks no helper has taken yet, then wait for every task; the first error raised."""
        if not self._tasks:        # (a call that stages nothing makes no slot to wait on)
            return
        caller = _Slot(self._take)
        caller.run()
        _collect([caller, *self._slots])

    def close(self) -> None:
        """Start no more tasks, and wait for those under way (their errors dropped)."""
        self._stopped = True
        _collect(self._slots, raising=False)


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


def native_copier() -> Copier | None:
    """The native copy threads (``shares.native``), one fewer than ``COPY_THREADS`` besides the caller's,
    or None where there are none."""
    return copier(COPY_THREADS - 1)


def copy_threads() -> str:
    """Which threads copy host arrays into page-locked memory and back: "native threads", else "Python
    threads" (the native library not built, turned off, or a host of too few cores), which copy slower,
    most where several callers copy at once (Dask workers on several GPUs)."""
    return "native threads" if native_copier() is not None else "Python threads"


def parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for arrays of one shape, by up to ``COPY_THREADS`` threads: the native ones where
    both are contiguous, or matrices of contiguous rows (a block of C into its place), and a pool of them
    is free (``shares.native``); else the helpers, over equal byte ranges where both are contiguous, else
    over ranges of rows."""
    native = native_copier()
    if src.nbytes < (THREADED_BYTES if native is None else NATIVE_THREADED_BYTES) or COPY_THREADS == 1 or len(src) < 2:
        copy_into(dst, src)
        return
    piece = _native_piece(dst, src) if native is not None else None
    batch = native.start([piece]) if piece is not None else None
    if batch is not None:
        native.wait(batch)
        return
    if src.nbytes < THREADED_BYTES:         # (every native pool busy: small for the helpers)
        copy_into(dst, src)
        return
    if dst.flags.c_contiguous and src.flags.c_contiguous:
        dst, src = dst.reshape(-1), src.reshape(-1)
    parts = max(min(COPY_THREADS, src.nbytes // PART_BYTES), src.nbytes // LARGEST_PART_BYTES)
    parts = max(1, min(len(src), parts))
    bounds = np.linspace(0, len(src), parts + 1).astype(int)
    in_parallel([_copier(dst[a:b], src[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a])


def copy_all(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    """``dst[...] = src`` for each pair of C-contiguous arrays of one dtype and size, all at once: by the
    native threads where a pool of them is free (in parts, every thread busy), else by the helper threads,
    a pair each, or by the calling thread alone where they take fewer than ``THREADED_BYTES``."""
    if not all(dst.flags.c_contiguous and src.flags.c_contiguous and dst.nbytes == src.nbytes for dst, src in pairs):
        raise ValueError("copy_all copies C-contiguous arrays of one size")
    native = native_copier()
    batch = native.start([(dst.ctypes.data, src.ctypes.data, src.nbytes, None) for dst, src in pairs]) \
        if native is not None else None
    if batch is not None:
        native.wait(batch)
    elif sum(src.nbytes for _, src in pairs) < THREADED_BYTES:
        for dst, src in pairs:
            copy_into(dst, src)
    else:
        in_parallel([_copier(dst, src) for dst, src in pairs])


def _native_piece(dst: np.ndarray, src: np.ndarray) -> Piece | None:
    """The native threads' piece of ``dst[...] = src`` (one dtype): one range where both are
    C-contiguous, the rows of matrices whose rows are (a block of a larger matrix); else None."""
    if dst.dtype != src.dtype:
        return None
    if dst.flags.c_contiguous and src.flags.c_contiguous:
        return dst.ctypes.data, src.ctypes.data, src.nbytes, None
    size = src.itemsize
    if dst.ndim == 2 and dst.strides[1] == size == src.strides[1] and min(dst.strides[0], src.strides[0]) > 0:
        return dst.ctypes.data, src.ctypes.data, src.shape[1] * size, None, src.shape[0], dst.strides[0], src.strides[0]
    return None


def _copier(dst: np.ndarray, src: np.ndarray) -> Callable[[], None]:
    return lambda: copy_into(dst, src)


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src``: one ``memmove`` where both are C-contiguous (faster than ``np.copyto`` for
    large copies split among threads), else numpy's copy. Either releases the GIL."""
    if dst.flags.c_contiguous and src.flags.c_contiguous and dst.dtype == src.dtype:
        ctypes.memmove(dst.ctypes.data, src.ctypes.data, src.nbytes)
    else:
        np.copyto(dst, src)
