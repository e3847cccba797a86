"""Host memory for streamed products: page-locked staging buffers in rings (``StagingRing``) and a
page-locked copy of B that several devices' streams share (``SharedBlocks``), both kept between calls
(page-locking is slow); page-locked results handed out and taken back (``ResultPool``); where a whole
call's arrays lie in page-locked memory (``crossing``); and ``FirstTouch``, which faults in a new C's pages
ahead of the copies that write its tiles."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, Protocol

import numpy as np

from ..errors import DeviceError
from ..profiles import Thresholds
from ..runtime.cuda import CudaContext
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from . import copying

#: Bytes of one staging buffer: a block crosses in chunks of at most this size.
CHUNK_BYTES = 64 * 2**20
#: Staging buffers for copies to the device (a chunk is copied into one while the last is in flight).
STAGING_IN = 3
#: Bytes of a page of host memory: ``FirstTouch`` writes one element in each, by this many threads.
PAGE_BYTES, TOUCH_THREADS = 4096, 4

_rings: weakref.WeakKeyDictionary[DeviceContext, tuple[threading.Lock, StagingRing, StagingRing]] = \
    weakref.WeakKeyDictionary()
_rings_lock = threading.Lock()
_page_locked: weakref.WeakKeyDictionary[DeviceContext, _KeptMemory] = weakref.WeakKeyDictionary()


class StagingRing:
    """Page-locked host buffers (allocated with ALLOC_HOST_PTR and mapped once) in a ring. A buffer is
    handed out again once the copy that last used it is done (its event in ``pending``) and its user
    has given it back (``done``: at once for copies to the device, after the host has read it for
    copies from the device)."""

    def __init__(self, ctx: DeviceContext, count: int, nbytes: int) -> None:
        self.buffers, self.arrays = map(list, zip(*(_mapped(ctx, nbytes) for _ in range(count))))
        self.pending: list[ocl.Event | None] = [None] * count
        self.free = [threading.Event() for _ in range(count)]
        for flag in self.free:
            flag.set()
        self.nbytes = nbytes
        self._next = 0

    def take(self, shape: tuple[int, int], dtype: np.dtype) -> tuple[int, np.ndarray]:
        """The next buffer, once free, as a C-contiguous array of ``shape`` and ``dtype``."""
        index, self._next = self._next, (self._next + 1) % len(self.buffers)
        self.free[index].wait()
        self.free[index].clear()
        if self.pending[index] is not None:
            self.pending[index].wait()
            self.pending[index] = None
        size = shape[0] * shape[1] * dtype.itemsize
        return index, self.arrays[index][:size].view(dtype).reshape(shape)

    def done(self, index: int) -> None:
        """Give buffer ``index`` back (its copy's event, if any, is in ``pending``)."""
        self.free[index].set()

    def wait(self) -> None:
        """Wait for every copy that used a buffer of the ring."""
        for index, event in enumerate(self.pending):
            if event is not None:
                event.wait()
                self.pending[index] = None


def staging_rings(ctx: DeviceContext, in_bytes: int, out_bytes: int, out_count: int
                  ) -> tuple[threading.Lock, StagingRing, StagingRing]:
    """The device's staging rings for copies in (``STAGING_IN`` buffers of at least ``in_bytes``) and out
    (``out_count`` of ``out_bytes``: tiles of C), kept between calls (page-locked memory is slow to
    allocate) and made anew, larger, only when too small; with the lock a stream holds while it uses
    them."""
    with _rings_lock:
        found = _rings.get(ctx)
        if found is None or found[1].nbytes < in_bytes or found[2].nbytes < out_bytes:
            lock = found[0] if found else threading.Lock()
            with lock:                         # not while a stream still uses the old ones
                _rings[ctx] = (lock, StagingRing(ctx, STAGING_IN, max(in_bytes, CHUNK_BYTES)),
                                   StagingRing(ctx, out_count, max(out_bytes, CHUNK_BYTES)))
        return _rings[ctx]


class SharedBlocks:
    """The blocks of op(B) (columns ``tile`` wide) staged once in page-locked memory for several device
    streams, which all need all of B: the first stream to need a block copies it in (host threads), the
    others wait for it, and every stream copies it to its own device from there. Page-locked memory of
    one context copies to another device at the page-locked rate (several times the rate from pageable
    memory), so the host copies B once instead of once per device."""

    def __init__(self, ctx: DeviceContext, b: np.ndarray, transposed: bool, tile: int) -> None:
        self.b, self.transposed, self.tile = b, transposed, tile
        self._memory = contextlib.ExitStack()
        self.array = self._memory.enter_context(page_locked(ctx, b.nbytes))
        columns = b.shape[0] if transposed else b.shape[1]
        self._ready = [threading.Event() for _ in range(math.ceil(columns / tile))]
        self._claimed = [False] * len(self._ready)
        self._failed = False
        self._lock = threading.Lock()

    def block(self, index: int, source: np.ndarray) -> np.ndarray:
        """Block ``index`` (``source``, its stored columns of B) in page-locked memory, copied in by the
        first caller; the others wait until it is there."""
        offset = index * self.tile * (self.b.shape[1] if self.transposed else self.b.shape[0]) * self.b.itemsize
        staged = self.array[offset:offset + source.nbytes].view(source.dtype).reshape(source.shape)
        with self._lock:
            first, self._claimed[index] = not self._claimed[index], True
        if first:
            try:
                copying.parallel_copy(staged, source)
            except BaseException:
                self._failed = True
                raise
            finally:
                self._ready[index].set()
        else:
            self._ready[index].wait()
        if self._failed:
            raise DeviceError("another device's stream failed while copying B in")
        return staged

    def release(self) -> None:
        """Give the page-locked memory back for the next product (it is kept: see ``page_locked``)."""
        self._memory.close()


class _KeptMemory:
    """A context's page-locked memory of ``page_locked`` (none yet, or a mapped buffer), and the lock its
    one user at a time holds."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.buffer: ocl.Buffer | None = None
        self.array: np.ndarray | None = None

    def release(self) -> None:
        """Give the memory back to the system (its user's lock held)."""
        if self.buffer is not None:
            self.array.base.release()
            self.buffer.release()
        self.buffer = self.array = None


@contextlib.contextmanager
def page_locked(ctx: DeviceContext, nbytes: int) -> Iterator[np.ndarray]:
    """At least ``nbytes`` of page-locked host memory of ``ctx`` (mapped), the caller's for the ``with``
    block (one user at a time: another waits), kept between calls and made anew, larger, only when too
    small: page-locking is slow (page-locking a new B each call cost more than the product), so a
    process that shares B among devices holds as much as its largest B."""
    with _rings_lock:
        kept = _page_locked.setdefault(ctx.owner, _KeptMemory())
    with kept.lock:
        if kept.array is None or kept.array.nbytes < nbytes:
            kept.release()
            kept.buffer, kept.array = _mapped(ctx, nbytes)
        yield kept.array


def release_page_locked(ctx: DeviceContext) -> None:
    """Give the page-locked memory of ``page_locked`` back to the system (once no call uses it); a later
    call makes it anew."""
    with _rings_lock:
        kept = _page_locked.get(ctx.owner)
    if kept is not None:
        with kept.lock:
            kept.release()


def _host_memory_bytes() -> int | None:
    """This machine's physical memory in bytes, where the system says."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


#: Page-locked memory one context's ``ResultPool`` holds at most (handed out and free), in bytes: enough
#: for two results of ``Thresholds.pinned_max_bytes`` (a loop's new result is taken while its last is still
#: held), within an eighth of the host's memory (page-locked memory cannot be paged out).
RESULT_POOL_BYTES = min(4 * 2**30, (_host_memory_bytes() or 2**33) // 8)
#: A pooled result's memory is a multiple of this many bytes (results of nearby sizes share buffers).
RESULT_GRAIN = 2**20


class ResultPool:
    """Page-locked host memory handed out as the results of numpy-in, numpy-out calls, as torch's users
    keep results in ``pin_memory`` tensors: the device writes such a result at the page-locked rate and no
    host copy follows, nor the page faults of a new array's first writes (numpy to numpy SGEMM 1024^3 spent
    more time in those than on the device). A result's memory comes back to the pool when the array and
    every view of it are gone, for the next result of its size; past ``RESULT_POOL_BYTES`` held, ``take``
    finds none and the caller makes an ordinary array."""

    def __init__(self, allocate: Callable[[int], PageLocked]) -> None:
        self.allocate = allocate
        self._free: dict[int, list[tuple[PageLocked, int]]] = {}    # by size: the memory, and its address
        self._handed: set[int] = set()     # the leases of the results out now, by id
        self.held = 0
        self._lock = threading.RLock()     # (a lease freed by the collector within ``take`` gives back)

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
        """A C-contiguous array of ``shape`` and ``dtype`` in page-locked memory, or None when the pool
        holds its most already."""
        dtype = np.dtype(dtype)
        nbytes = max(1, math.prod(shape)) * dtype.itemsize
        size = -(-nbytes // RESULT_GRAIN) * RESULT_GRAIN
        with self._lock:
            free = self._free.get(size)
            found = free.pop() if free else None
            if found is None:
                self._make_room(size)
                if self.held + size > RESULT_POOL_BYTES:
                    return None
                self.held += size
        if found is None:
            try:
                entry = self.allocate(size)
            except (ocl.OpenCLError, DeviceError):
                with self._lock:
                    self.held -= size
                return None
            found = entry, entry.array.__array_interface__["data"][0]
        entry, start = found
        lease = _Lease(entry.array, start, tuple(shape), dtype)
        with self._lock:
            self._handed.add(id(lease))
        lease.on_free = functools.partial(self._give_back, id(lease), size, found)
        return np.asarray(lease).view(dtype)     # (bfloat16 has no typestr numpy reads back)

    def owns(self, array: object) -> bool:
        """Whether ``array`` is a result the pool handed out, or a view of one (its bases lead to the
        result's lease; asked of every array a whole call crosses with, so it reads no address). An array
        made over the same memory from its address alone is not known: it crosses as any other."""
        if not self._handed:
            return False
        while isinstance(array, np.ndarray):
            array = array.base
        return type(array) is _Lease and id(array) in self._handed

    def _give_back(self, handed: int, size: int, found: tuple[PageLocked, int]) -> None:
        with self._lock:
            self._handed.discard(handed)
            self._free.setdefault(size, []).append(found)

    def _make_room(self, size: int) -> None:
        """Free the buffers of other sizes no result uses until ``size`` more bytes fit (lock held)."""
        for other in list(self._free):
            while self._free[other] and self.held + size > RESULT_POOL_BYTES:
                self._free[other].pop()[0].release()
                self.held -= other


class Crossing(NamedTuple):
    """Where a whole call's host arrays lie in one block of page-locked memory (``crossing``)."""

    #: each uploaded array's first byte in the block; None for one that is page-locked itself (an earlier
    #: result of the pool), uploaded from where it lies
    starts: list[int | None]
    #: whether the result comes back into the block's first bytes (once the uploads are done), to be
    #: copied out after: it is not page-locked itself
    landing: bool
    #: the block's bytes (0: nothing crosses through it)
    nbytes: int


def crossing(pool: ResultPool, uploads: Sequence[np.ndarray], result: np.ndarray) -> Crossing:
    """Where the arrays of a call that crosses whole (A, B, and C where it is read; each its bytes,
    ``as_bytes``) and its ``result`` lie in page-locked memory: one after another, each from a page's
    start, but those of ``pool``'s memory, which are page-locked already."""
    starts, end = [], 0
    for x in uploads:
        if pool.owns(x):
            starts.append(None)
        else:
            starts.append(end)
            end += -(-x.nbytes // PAGE_BYTES) * PAGE_BYTES
    landing = not pool.owns(result)
    return Crossing(starts, landing, max(end, result.nbytes if landing else 0))


def as_bytes(x: np.ndarray) -> np.ndarray:
    """A dense array's memory as its bytes in order (a view: C- or Fortran-ordered, or a transpose)."""
    return x.ravel(order="K").view(np.uint8)


class _Lease:
    """Holds one result's page-locked bytes while an array over them lives: the result and every view of
    it have the lease as their base (numpy keeps the object an array was made from), so the memory goes
    back to the pool only when the last of them is gone."""

    def __init__(self, memory: np.ndarray, address: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.memory = memory
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "version": 3, "data": (address, False)}
        #: Called once the lease is gone (cheaper per call than a ``weakref.finalize``).
        self.on_free: Callable[[], None] | None = None

    def __del__(self) -> None:
        if self.on_free is not None:
            self.on_free()


class PageLocked(Protocol):
    """Page-locked host memory as its bytes, ``array``, until ``release``."""

    array: np.ndarray

    def release(self) -> None: ...


class _MappedMemory:
    """Page-locked memory of an OpenCL context: a buffer in host memory, mapped."""

    def __init__(self, ctx: DeviceContext, nbytes: int) -> None:
        self.buffer, self.array = _mapped(ctx, nbytes)

    def release(self) -> None:
        self.array.base.release()
        self.buffer.release()


_result_pools: weakref.WeakKeyDictionary[DeviceContext | CudaContext, ResultPool] = weakref.WeakKeyDictionary()


def result_pool(ctx: DeviceContext | CudaContext) -> ResultPool:
    """The context's ``ResultPool`` (of an OpenCL context's mapped buffers, or of a CUDA context's
    page-locked memory), made on first use; a context beside another (``DeviceContext.for_calls``) uses
    that one's."""
    owner = ctx.owner if isinstance(ctx, DeviceContext) else ctx
    with _rings_lock:
        if owner not in _result_pools:
            allocate = owner.pinned if isinstance(owner, CudaContext) else functools.partial(_MappedMemory, owner)
            _result_pools[owner] = ResultPool(allocate)
        return _result_pools[owner]


def host_result(ctx: DeviceContext | CudaContext, shape: tuple[int, ...], dtype: np.dtype, limits: Thresholds
                ) -> np.ndarray:
    """A new host array for a call's result: page-locked memory of the context's ``ResultPool`` where the
    result takes ``result_min_bytes`` to ``pinned_max_bytes`` (the device's ``limits``) and the device
    has memory of its own (else, or once the pool is full, an ordinary array)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    shared = isinstance(ctx, DeviceContext) and ctx.device.shares_host_memory
    if limits.result_min_bytes <= nbytes <= limits.pinned_max_bytes and not shared:
        found = result_pool(ctx).take(shape, dtype)
        if found is not None:
            return found
    return np.empty(shape, dtype)


def in_result_pool(array: np.ndarray) -> bool:
    """Whether ``array`` lies in a page-locked result some context's ``ResultPool`` handed out, which every
    device's DMA engines write at the page-locked rate."""
    with _rings_lock:
        pools = list(_result_pools.values())
    return any(pool.owns(array) for pool in pools)


def read_into(queue: ocl.Queue, host: np.ndarray, buffer: ocl.Buffer, row: int, col: int,
              shape: tuple[int, int], wait_for: list[ocl.Event] | None = None) -> ocl.Event:
    """Enqueue the copy of ``buffer`` (a dense row-major matrix of ``shape``) into ``host`` (a C-contiguous
    matrix) from its element (``row``, ``col``) on: one rectangle, which the DMA engines write straight
    where ``host`` is page-locked."""
    size = host.itemsize
    width = shape[1] * size
    return ocl.copy(queue, host, buffer, buffer_origin=(0, 0), host_origin=(col * size, row),
                    region=(width, shape[0]), buffer_pitches=(width,), host_pitches=(host.shape[1] * size,),
                    is_blocking=False, wait_for=wait_for)


def _mapped(ctx: DeviceContext, nbytes: int) -> tuple[ocl.Buffer, np.ndarray]:
    """A new buffer of ``nbytes`` of page-locked host memory, and its bytes mapped for the host."""
    return ocl.page_locked(ctx.context, ctx.queue, nbytes)


class FirstTouch:
    """Faults in the pages of C's rows ahead of the copies that write the tiles, by ``TOUCH_THREADS``
    threads taking blocks of rows in order: a new C (``np.empty``) has no pages yet, and the kernel zeroes
    each on the first write, slowly for one thread, which made the copies out of a large product slower
    into a new C than into one written before. Only where beta is 0 (C's old values are not read, so one
    written element per page can be lost): a copy into rows [0, r) waits for ``wait(r)``."""

    def __init__(self, rows: np.ndarray, block_rows: int) -> None:
        self._rows, self._block = rows, max(1, block_rows)
        self._blocks = math.ceil(len(rows) / self._block)
        self._next = self._done_blocks = 0            # the next block to take; blocks [0, done) are touched
        self._done: set[int] = set()
        self._stop = False
        self._changed = threading.Condition()
        self._threads = [threading.Thread(target=self._touch, name="autogemm-first-touch", daemon=True)
                         for _ in range(min(TOUCH_THREADS, self._blocks))]
        self._running = len(self._threads)
        for thread in self._threads:
            thread.start()

    def _touch(self) -> None:
        step = max(1, PAGE_BYTES // self._rows.itemsize)
        try:
            while True:
                with self._changed:
                    if self._stop or self._next == self._blocks:
                        return
                    block, self._next = self._next, self._next + 1
                r0 = block * self._block
                self._rows[r0:r0 + self._block].reshape(-1)[::step] = 0
                with self._changed:
                    self._done.add(block)
                    while self._done_blocks in self._done:
                        self._done.remove(self._done_blocks)
                        self._done_blocks += 1
                    self._changed.notify_all()
        finally:                                 # the last thread out: nothing is waited for any more
            with self._changed:
                self._running -= 1
                if not self._running:
                    self._done_blocks = self._blocks
                    self._changed.notify_all()

    def wait(self, rows: int) -> None:
        """Block until rows [0, ``rows``) are touched."""
        with self._changed:
            self._changed.wait_for(lambda: self._done_blocks * self._block >= rows)

    def stop(self) -> None:
        """Stop touching (once the threads' current blocks are done) and wait for the threads."""
        with self._changed:
            self._stop = True
        for thread in self._threads:
            thread.join()
