"""Host copies on native threads (``copier.c``, built with the package where a C compiler is found): a
call's pieces are copied into page-locked memory by threads that spin a while between calls, and the
thread that ends a piece marks its OpenCL user event complete, so no Python thread has to wake and take
the GIL. ``copier()`` is None where the library was not built, could not be loaded or the OpenCL library
is not found, or ``AUTOGEMM_NATIVE_COPIES`` is 0 (for a host that needs its cores more than these copies
need a quick start: the threads poll for ``SPIN_NS`` after each call); the copy threads of
``shares.copying`` serve then."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from ...cores import usable_cores
from ...runtime.opencl.commands import opencl_library

#: How long an idle native thread polls for the next call's copies before it sleeps (OpenMP's threads
#: spin about as long): calls in quick succession find them awake.
SPIN_NS = 1_000_000
#: The environment variable that turns the native copies off where it is 0.
NATIVE_ENV = "AUTOGEMM_NATIVE_COPIES"


class _Piece(ctypes.Structure):
    _fields_ = [("to", ctypes.c_void_p), ("source", ctypes.c_void_p), ("bytes", ctypes.c_size_t),
                ("event", ctypes.c_void_p), ("rows", ctypes.c_size_t), ("to_pitch", ctypes.c_size_t),
                ("from_pitch", ctypes.c_size_t)]


#: A piece to copy: (to, from, bytes, user event or None), addresses of host memory; or, for the rows of
#: a matrix, (to, from, bytes of a row, user event or None, rows, bytes between rows at to, at from).
Piece = tuple[int, int, int, int | None] | tuple[int, int, int, int | None, int, int, int]


class Copier:
    """Pools of native copy threads. ``start`` begins copying pieces (``Piece``) on a free pool while the
    caller goes on; ``wait`` has the caller copy what is left and returns once every piece is copied and
    its event marked complete. A pool copies one batch at a time; another pool is made when a batch comes
    while every one is busy, up to ``pools``, so that callers on several devices (Dask workers that are
    threads of one process) copy at once. A caller that finds every pool busy (``start`` returns None)
    copies its own way."""

    def __init__(self, library: ctypes.CDLL, set_status: int, threads: int, pools: int) -> None:
        self._library, self._set_status, self._threads = library, set_status, threads
        #: The most pools this copier makes, of ``threads`` threads each.
        self.pools = max(1, pools)
        self._pools: list[tuple[int, threading.Lock]] = []
        self._lock = threading.Lock()

    def start(self, pieces: Sequence[Piece]) -> object | None:
        """The batch under way, or None where every pool is busy (nothing started)."""
        pool = self._free_pool()
        if pool is None:
            return None
        try:
            array = (_Piece * len(pieces))(*(_Piece(*piece) for piece in pieces))
            return array, pool, self._library.copier_start(pool[0], array, len(pieces), self._set_status)
        except BaseException:
            pool[1].release()           # nothing started: the pool is free again
            raise

    def wait(self, batch: object) -> None:
        """Copy what no thread has taken of ``batch``, wait for the rest (the GIL released)."""
        _, (handle, busy), started = batch
        try:
            self._library.copier_wait(handle, started)
        finally:
            busy.release()

    def _free_pool(self) -> tuple[int, threading.Lock] | None:
        """A pool now the caller's (its lock held), made where every one is busy and fewer than ``pools``
        exist; None where there is none."""
        for pool in self._pools:
            if pool[1].acquire(blocking=False):
                return pool
        with self._lock:
            if len(self._pools) >= self.pools:
                return None
            pool = (self._library.copier_new(self._threads, SPIN_NS), threading.Lock())
            pool[1].acquire()
            self._pools.append(pool)
            return pool


def _load(threads: int) -> Copier | None:
    built = sorted(Path(__file__).parent.glob("_copier*.so"))
    opencl = opencl_library()
    if not built or opencl is None:
        return None
    try:
        library = ctypes.CDLL(str(built[0]))
    except OSError:
        return None
    library.copier_new.argtypes, library.copier_new.restype = [ctypes.c_int, ctypes.c_long], ctypes.c_void_p
    library.copier_start.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    library.copier_start.restype = ctypes.c_void_p
    library.copier_wait.argtypes, library.copier_wait.restype = [ctypes.c_void_p, ctypes.c_void_p], None
    set_status = ctypes.cast(opencl.clSetUserEventStatus, ctypes.c_void_p).value
    return Copier(library, set_status, threads, usable_cores() // (threads + 1))


_copier: list[Copier | None] = []
_copier_lock = threading.Lock()


def copier(threads: int) -> Copier | None:
    """This process's native copier (made on first use): pools of ``threads`` threads besides the
    caller's, as many as the cores hold; None where there is none."""
    with _copier_lock:
        if not _copier:
            wanted = threads > 0 and os.environ.get(NATIVE_ENV, "1").strip() != "0"
            _copier.append(_load(threads) if wanted else None)
        return _copier[0]


def _forget() -> None:
    """In a forked child: the parent's native threads are not there."""
    _copier.clear()


os.register_at_fork(after_in_child=_forget)
