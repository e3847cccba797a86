"""One device's rows of a product of host operands, streamed tile by tile of C so that the copies overlap
the kernels, for products larger than the device's memory too (out of core).

The rows are cut into tiles of C (``tile_side``). A tile needs its rows of op(A) and its columns of
op(B). Where both operands fit on the device beside the rest, every block is copied once and kept, and
the tiles are taken in growing squares, so the copies spread over the product; otherwise A's blocks
(and, where B does not fit either, B's) pass through two device slots, brought again as tiles need them.
Every block crosses through page-locked staging buffers in chunks: host threads copy a chunk of the
numpy block into one (27 GB/s on the H100's host with 8 threads, where the driver's own copies from
pageable memory ran at 7-10 GB/s) and a transfer queue copies it to the device (54 GB/s), while the
device computes earlier tiles on its own queue; C's tiles come back the same way on a second transfer
queue, copied into C by a thread of the stream's own (a third thread faults in the pages of a new C
ahead of it: ``FirstTouch``). Events order everything: a kernel waits for its
blocks' copies and for the download of the tile its C slot last held; a device slot of A or B is
refilled only after the kernels that read it are done; a staging buffer only after its copy is done
and its user has given it back."""

from __future__ import annotations

import math
import os
import queue
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from ..codelets.registry import KernelParams
from ..errors import DeviceError
from ..runtime.context import DeviceContext
from .plan import LaunchPlan
from .plan_cache import cached_plan
from .problem import GemmProblem, Op, addressable

if TYPE_CHECKING:                      # hybrid runs streams: a type only, no import at run time
    from .hybrid import HostGemm

#: Bytes of one staging buffer: a block crosses in chunks of at most this size.
CHUNK_BYTES = 64 * 2**20
#: Staging buffers for copies to the device (a chunk is copied into one while the last is in flight).
STAGING_IN = 3
#: Tiles per side of C that a streamed product aims at, within the smallest and largest tile sides (a
#: tile of C is also kept within one chunk, and its sides are multiples of 128).
TILES_PER_SIDE, MIN_TILE, MAX_TILE = 8, 2048, 4096
#: Host threads copying between numpy arrays and staging buffers (numpy's copies release the GIL): half the
#: cores, at most 16 (8 reached 27 GB/s on the H100's 16-core host; several devices share them).
COPY_THREADS = max(1, min(16, (os.cpu_count() or 2) // 2))
#: Chunks smaller than this are copied by the calling thread alone.
THREADED_BYTES = 4 * 2**20
#: The share of the device's memory a streamed product may plan to use.
MEMORY_SHARE = 0.9
#: Device slots (and staging buffers) for tiles of C: one computed while others go back to the host.
C_SLOTS = 3
#: Bytes of a page of host memory: ``FirstTouch`` writes one element in each, by this many threads.
PAGE_BYTES, TOUCH_THREADS = 4096, 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_rings: weakref.WeakKeyDictionary[DeviceContext, tuple[threading.Lock, Staging, Staging]] = weakref.WeakKeyDictionary()
_rings_lock = threading.Lock()
_page_locked: weakref.WeakKeyDictionary[DeviceContext, tuple[threading.Lock, cl.Buffer, np.ndarray]] = \
    weakref.WeakKeyDictionary()


def parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for 2-D arrays of one shape, by ``COPY_THREADS`` threads over row ranges."""
    global _pool
    if src.nbytes < THREADED_BYTES or COPY_THREADS == 1 or len(src) < 2:
        np.copyto(dst, src)
        return
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="autogemm-copy")
    bounds = np.linspace(0, len(src), min(COPY_THREADS, len(src)) + 1).astype(int)
    futures = [_pool.submit(np.copyto, dst[a:b], src[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]
    for future in futures:
        future.result()


def tile_side(dt_itemsize: int, m: int, n: int) -> int:
    """The tile side for an m x n C: about 1/``TILES_PER_SIDE`` of its larger side (the first tile's blocks
    are copied before anything computes, so a smaller tile starts sooner), at least ``MIN_TILE``, at most
    ``MAX_TILE`` and what keeps a tile of C within one chunk; a multiple of 128."""
    fits_chunk = int(math.sqrt(CHUNK_BYTES / dt_itemsize)) // 128 * 128
    wanted = max(MIN_TILE, max(m, n) // TILES_PER_SIDE // 128 * 128)
    return max(128, min(MAX_TILE, fits_chunk, wanted))


class Staging:
    """Page-locked host buffers (allocated with ALLOC_HOST_PTR and mapped once) in a ring. A buffer is
    handed out again once the copy that last used it is done (its event in ``pending``) and its user
    has given it back (``done``: at once for copies to the device, after the host has read it for
    copies from the device)."""

    def __init__(self, ctx: DeviceContext, count: int, nbytes: int) -> None:
        mf = cl.mem_flags
        self.buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, nbytes) for _ in range(count)]
        flags = cl.map_flags.READ | cl.map_flags.WRITE
        self.arrays = [cl.enqueue_map_buffer(ctx.queue, buf, flags, 0, (nbytes,), np.uint8)[0] for buf in self.buffers]
        self.pending: list[cl.Event | None] = [None] * count
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


def staging_rings(ctx: DeviceContext, in_bytes: int, out_bytes: int) -> tuple[threading.Lock, Staging, Staging]:
    """The device's staging rings for copies in (buffers of at least ``in_bytes``) and out (``out_bytes``:
    a tile of C), kept between calls (page-locked memory is slow to allocate) and made anew, larger, only
    when too small; with the lock a stream holds while it uses them."""
    with _rings_lock:
        found = _rings.get(ctx)
        if found is None or found[1].nbytes < in_bytes or found[2].nbytes < out_bytes:
            lock = found[0] if found else threading.Lock()
            with lock:                         # not while a stream still uses the old ones
                _rings[ctx] = (lock, Staging(ctx, STAGING_IN, max(in_bytes, CHUNK_BYTES)),
                                   Staging(ctx, C_SLOTS, max(out_bytes, CHUNK_BYTES)))
        return _rings[ctx]


class SharedBlocks:
    """The blocks of op(B) (columns ``tile`` wide) staged once in page-locked memory for several device
    streams, which all need all of B: the first stream to need a block copies it in (host threads), the
    others wait for it, and every stream copies it to its own device from there. Page-locked memory of
    one context copies to another device at the page-locked rate (55 GB/s on two H200s, against 8 GB/s
    from pageable memory), so the host copies B once instead of once per device."""

    def __init__(self, ctx: DeviceContext, b: np.ndarray, transposed: bool, tile: int) -> None:
        self.b, self.transposed, self.tile = b, transposed, tile
        self._memory_lock, self.array = page_locked(ctx, b.nbytes)
        self._memory_lock.acquire()
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
                parallel_copy(staged, source)
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
        self._memory_lock.release()


def page_locked(ctx: DeviceContext, nbytes: int) -> tuple[threading.Lock, np.ndarray]:
    """At least ``nbytes`` of page-locked host memory of ``ctx`` (mapped), kept between calls and made anew,
    larger, only when too small: page-locking is slow (a new 4 GiB each call made a 32768^3 SGEMM on two
    H200s take 3.1 s instead of 0.9), so a process that shares B among devices holds as much as its
    largest B. With the lock its user holds while it uses the memory."""
    with _rings_lock:
        found = _page_locked.get(ctx)
        if found is None or found[2].nbytes < nbytes:
            lock = found[0] if found else threading.Lock()
            with lock:                         # not while a product still uses the old memory
                if found is not None:
                    found[2].base.release()
                    found[1].release()
                buffer = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, max(nbytes, 1))
                flags = cl.map_flags.READ | cl.map_flags.WRITE
                array = cl.enqueue_map_buffer(ctx.queue, buffer, flags, 0, (max(nbytes, 1),), np.uint8)[0]
                _page_locked[ctx] = (lock, buffer, array)
        return _page_locked[ctx][0], _page_locked[ctx][2]


class FirstTouch:
    """Faults in the pages of C's rows ahead of the copies that write the tiles, by ``TOUCH_THREADS``
    threads taking blocks of rows in order: a new C (``np.empty``) has no pages yet, and the kernel zeroes
    each on the first write (3.6 GB/s for one thread on the H100's host), which made the copies out of a
    16384^3 SGEMM 10-35 ms slower into a new C than into one written before. Only where beta is 0 (C's
    old values are not read, so one written element per page can be lost): a copy into rows [0, r)
    waits for ``wait(r)``."""

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


@dataclass(frozen=True)
class Layout:
    """How a streamed product uses the device: the tile side, and which operands stay resident (all of
    their blocks on the device; else two slots that blocks pass through)."""

    tile: int
    a_resident: bool
    b_resident: bool


def tile_order(rows: int, cols: int, growing: bool) -> list[tuple[int, int]]:
    """(row, column) of every tile of a rows x cols grid in the order they are computed: row by row, or
    ``growing`` squares (row s up to column s, then column s down to row s - 1), so that where both
    operands stay resident each new block of A or B brings more tiles to compute as the product goes on,
    and the copies spread over the whole product instead of gathering in its first row."""
    if not growing:
        return [(i, j) for i in range(rows) for j in range(cols)]
    order = []
    for s in range(max(rows, cols)):
        if s < rows:
            order += [(s, j) for j in range(min(s, cols - 1) + 1)]
        if s < cols:
            order += [(i, s) for i in range(min(s, rows))]
    return order


class DeviceStream:
    """Rows [start, stop) of C = alpha op(A) op(B) + beta C on host arrays (a ``hybrid.HostGemm``),
    computed on ``ctx``'s device in tiles; ``run`` blocks until they are in C."""

    def __init__(self, ctx: DeviceContext, gemm: HostGemm, rows: tuple[int, int], config: KernelParams | None,
                 edge: str) -> None:
        self.ctx, self.gemm, self.config, self.edge = ctx, gemm, config, edge
        self.shared_b: SharedBlocks | None = None     # B staged once for several streams (``share_b``)
        self.start, self.stop = rows
        self.m, self.n, self.k = self.stop - self.start, gemm.shape[1], gemm.shape[2]
        self.dtype, self.out_dtype = np.dtype(gemm.dt.numpy), np.dtype(gemm.dt.output.numpy)
        self.op_a, self.op_b = Op.from_letter(gemm.trans_a, "trans_a"), Op.from_letter(gemm.trans_b, "trans_b")
        self.layout = self._layout(tile_side(self.out_dtype.itemsize, self.m, self.n))
        self._trace: list | None = None
        self._first_touch: FirstTouch | None = None

    # ----- planning -------------------------------------------------------------------------------
    def tiles(self, layout: Layout | None = None) -> list[tuple[int, int, int, int]]:
        """(row0, row1, col0, col1) of each tile of this share's C (rows relative to the share), in the
        order they are computed (``tile_order``: growing squares where A and B both stay resident)."""
        layout = layout or self.layout
        tile = layout.tile
        grid = tile_order(math.ceil(self.m / tile), math.ceil(self.n / tile), layout.a_resident and layout.b_resident)
        return [(i * tile, min((i + 1) * tile, self.m), j * tile, min((j + 1) * tile, self.n)) for i, j in grid]

    def _plan(self, rows: int, cols: int) -> LaunchPlan:
        problem = GemmProblem.dense(self.gemm.dt, rows, cols, self.k, self.op_a, self.op_b)
        return cached_plan(self.ctx, problem, self.config, self.edge)

    def _needs(self, layout: Layout) -> tuple[int, int]:
        """(bytes in all, largest buffer) of the device memory a layout takes: A's and B's blocks (all,
        or two slots each), ``C_SLOTS`` slots of C and the plans' temporaries."""
        tile = layout.tile
        a_block = min(tile, self.m) * self.k * self.dtype.itemsize
        b_block = self.k * min(tile, self.n) * self.dtype.itemsize
        a_blocks = math.ceil(self.m / tile) if layout.a_resident else 2
        b_blocks = math.ceil(self.n / tile) if layout.b_resident else 2
        c_block = min(tile, self.m) * min(tile, self.n) * self.out_dtype.itemsize
        shapes = {(r1 - r0, c1 - c0) for r0, r1, c0, c1 in self.tiles(layout)}
        temporaries = sum(sum(self._plan(*shape).temporary_bytes().values()) for shape in shapes)
        return (a_blocks * a_block + b_blocks * b_block + C_SLOTS * c_block + temporaries,
                max(a_block, b_block, c_block))

    def _layout(self, tile: int) -> Layout:
        """The largest tile (halving from ``tile``), with as much resident as fits (both operands, then B
        alone, then neither) within ``MEMORY_SHARE`` of the device's memory, each buffer within one
        allocation and the kernels' 32-bit indices; ``DeviceError`` when not even a 128-wide tile fits."""
        dev = self.ctx.device
        while True:
            for a_resident, b_resident in ((True, True), (False, True), (False, False)):
                layout = Layout(tile, a_resident, b_resident)
                total, largest = self._needs(layout)
                if (total <= MEMORY_SHARE * dev.global_mem_bytes and largest <= dev.max_mem_alloc_bytes
                        and largest <= addressable(self.gemm.dt) * self.dtype.itemsize):
                    return layout
            if tile <= 128:
                mib = 2**20
                raise DeviceError(f"a streamed product of k = {self.k} needs {total / mib:.1f} MiB on "
                                  f"{dev.name.strip()} even in tiles of 128, {largest / mib:.1f} MiB of it in "
                                  f"one buffer; the device has {dev.global_mem_bytes / mib:.0f} MiB and allocates "
                                  f"at most {dev.max_mem_alloc_bytes / mib:.0f} MiB at once (and the kernels "
                                  f"index {addressable(self.gemm.dt)} elements)")
            tile = max(128, tile // 2)

    # ----- blocks of the operands ---------------------------------------------------------------
    def _a_rows(self, r0: int, r1: int) -> np.ndarray:
        """The stored block of A that rows [r0, r1) of the share's op(A) come from (a view)."""
        a, start = self.gemm.a, self.start
        return a[start + r0:start + r1] if not self.op_a.transposed else a[:, start + r0:start + r1]

    def _b_columns(self, c0: int, c1: int) -> np.ndarray:
        b = self.gemm.b
        return b[:, c0:c1] if not self.op_b.transposed else b[c0:c1]

    def _upload(self, block: np.ndarray, buffer: cl.Buffer, wait_for: list[cl.Event]) -> cl.Event:
        """Copy a 2-D host block into ``buffer`` (row-major, dense) through the staging ring, chunk by
        chunk; the last copy's event (the copies of one queue finish in order)."""
        copies = self.ctx.transfer_queue("in")
        if block.size == 0:                      # nothing to copy (k is 0): an event to wait on all the same
            return cl.enqueue_marker(copies, wait_for=wait_for or None)
        rows_per_chunk = max(1, self._staging_in.nbytes // max(block[0:1].nbytes, 1))
        event = None
        for r0 in range(0, len(block), rows_per_chunk):
            part = block[r0:r0 + rows_per_chunk]
            index, staged = self._staging_in.take(part.shape, part.dtype)
            started = time.perf_counter()
            parallel_copy(staged, part)
            if self._trace is not None:
                self._trace.append(("host copy in", started, time.perf_counter(), part.nbytes))
            event = cl.enqueue_copy(copies, buffer, staged, dst_offset=r0 * block.shape[1] * block.itemsize,
                                    is_blocking=False, wait_for=wait_for if event is None else None)
            self._staging_in.pending[index] = event
            self._staging_in.done(index)
            if self._trace is not None:
                self._trace.append(("copy in", event))
        copies.flush()
        return event

    # ----- running ---------------------------------------------------------------------------------
    def run(self, trace: list | None = None) -> None:
        """Compute the share's tiles; blocks until all of C's rows are written (also on an error, every
        enqueued command is waited for before the buffers are freed). The calling thread copies blocks
        in and enqueues; a thread of the stream's own copies the tiles of C out as they come back.
        ``trace`` collects what happened, for timelines: (what, event) for device commands, (what,
        start, end, bytes), in ``time.perf_counter`` seconds, for the host's copies."""
        self._trace = trace
        if not (self.m and self.n):
            return
        layout, mf = self.layout, cl.mem_flags
        tile, itemsize, out_size = layout.tile, self.dtype.itemsize, self.out_dtype.itemsize
        widest_row = max(self.k, tile) * itemsize          # a chunk holds at least one row of a block
        lock, self._staging_in, staging_out = staging_rings(self.ctx, widest_row, tile * tile * out_size)
        allocated: list[cl.Buffer] = []

        def buffers(count: int, nbytes: int) -> list[cl.Buffer]:
            allocated.extend(cl.Buffer(self.ctx.context, mf.READ_WRITE, max(nbytes, 1)) for _ in range(count))
            return allocated[-count:]

        retiring: queue.SimpleQueue = queue.SimpleQueue()
        errors: list[BaseException] = []
        retirer = threading.Thread(target=self._retirer, args=(retiring, staging_out, errors), name="autogemm-retire")
        readers: dict[tuple[str, int], cl.Event] = {}       # a slot of A or B -> the last kernel reading it
        c_free: list[list[cl.Event]] = [[] for _ in range(C_SLOTS)]
        lock.acquire()
        try:
            slots = {"A": buffers(math.ceil(self.m / tile) if layout.a_resident else 2,
                                  min(tile, self.m) * self.k * itemsize),
                     "B": buffers(math.ceil(self.n / tile) if layout.b_resident else 2,
                                  self.k * min(tile, self.n) * itemsize)}
            c_slots = buffers(C_SLOTS, min(tile, self.m) * min(tile, self.n) * out_size)
            holding: dict[tuple[str, int], tuple[int, cl.Event]] = {}   # slot -> (block in it, its copy)
            turn = {"A": 0, "B": 0}                  # the slot a block of a non-resident operand goes to next
            readers_key: dict[str, tuple[str, int]] = {}     # operand -> the slot the current tile reads
            rows = self.gemm.c[self.start:self.stop]
            if self.gemm.beta == 0 and rows.flags.c_contiguous:
                self._first_touch = FirstTouch(rows, min(tile, 256))
            retirer.start()

            def block(name: str, index: int, start: int, stop: int) -> tuple[cl.Buffer, cl.Event]:
                """Operand ``name``'s block ``index`` on the device: copied into its slot unless there."""
                resident = layout.a_resident if name == "A" else layout.b_resident
                slot = index if resident else next((s for s in range(2) if holding.get((name, s), (None,))[0] == index),
                                                   None)
                if slot is None:
                    slot, turn[name] = turn[name], 1 - turn[name]
                if holding.get((name, slot), (None,))[0] != index:
                    host = self._a_rows(start, stop) if name == "A" else self._b_columns(start, stop)
                    after = [readers[(name, slot)]] if (name, slot) in readers else []
                    if name == "B" and self.shared_b is not None:
                        host = self.shared_b.block(index, host)      # page-locked already: one copy
                        copied = cl.enqueue_copy(self.ctx.transfer_queue("in"), slots[name][slot], host,
                                                 is_blocking=False, wait_for=after or None)
                        self.ctx.transfer_queue("in").flush()
                    else:
                        copied = self._upload(host, slots[name][slot], after)
                    holding[(name, slot)] = (index, copied)
                readers_key[name] = (name, slot)
                return slots[name][slot], holding[(name, slot)][1]

            gemm, out_queue = self.gemm, self.ctx.transfer_queue("out")
            for t, (r0, r1, c0, c1) in enumerate(self.tiles()):
                if errors:
                    break
                a_buffer, a_copied = block("A", r0 // tile, r0, r1)
                b_buffer, b_copied = block("B", c0 // tile, c0, c1)
                c_index = t % C_SLOTS
                waits = [a_copied, b_copied, *c_free[c_index]]
                if gemm.beta != 0:
                    waits.append(self._upload(gemm.c[self.start + r0:self.start + r1, c0:c1], c_slots[c_index], waits))
                events = self._plan(r1 - r0, c1 - c0).enqueue(a_buffer, b_buffer, c_slots[c_index], alpha=gemm.alpha,
                                                               beta=gemm.beta, wait_for=waits)
                self.ctx.queue.flush()
                if self._trace is not None:
                    self._trace.extend(("kernel", event) for event in events)
                for key in readers_key.values():
                    readers[key] = events[-1]
                index, staged = staging_out.take((r1 - r0, c1 - c0), self.out_dtype)
                download = cl.enqueue_copy(out_queue, staged, c_slots[c_index], is_blocking=False, wait_for=events[-1:])
                out_queue.flush()
                staging_out.pending[index] = download
                c_free[c_index] = [download]
                retiring.put((download, index, staged, r0, r1, c0, c1))
        finally:
            retiring.put(None)
            if retirer.is_alive():
                retirer.join()
            if self._first_touch is not None:
                self._first_touch.stop()
                self._first_touch = None
            for event in [*readers.values(), *(e for events in c_free for e in events)]:
                event.wait()
            staging_out.wait()
            self._staging_in.wait()
            lock.release()
            for buf in allocated:
                buf.release()
        if errors:
            raise errors[0]

    def _retirer(self, retiring: queue.SimpleQueue, staging: Staging, errors: list[BaseException]) -> None:
        """The stream's second thread: copy each downloaded tile into C as it comes back, give its staging
        buffer back; after an error only give the buffers back."""
        while (item := retiring.get()) is not None:
            download, index, staged, r0, r1, c0, c1 = item
            try:
                if not errors:
                    self._retire((download, staged, r0, r1, c0, c1))
            except BaseException as exc:  # noqa: BLE001 - raised by ``run``
                errors.append(exc)
            finally:
                staging.done(index)

    def _retire(self, download: tuple) -> None:
        """Copy a downloaded tile from its staging buffer into C."""
        event, staged, r0, r1, c0, c1 = download
        event.wait()
        if self._first_touch is not None:
            self._first_touch.wait(r1)
        started = time.perf_counter()
        parallel_copy(self.gemm.c[self.start + r0:self.start + r1, c0:c1], staged)
        if self._trace is not None:
            self._trace.extend([("copy out", event), ("host copy out", started, time.perf_counter(), staged.nbytes)])


def share_b(streams: list[DeviceStream]) -> SharedBlocks | None:
    """Stage B once for the streams of one product that take it in blocks of one width (two or more):
    returned for the caller to release after the streams are done; None where there is nothing to share."""
    sharing = [x for x in streams if x.layout.tile == streams[0].layout.tile] if len(streams) > 1 else []
    if len(sharing) < 2 or not streams[0].k:
        return None
    gemm = streams[0].gemm
    shared = SharedBlocks(streams[0].ctx, gemm.b, streams[0].op_b.transposed, streams[0].layout.tile)
    for stream in sharing:
        stream.shared_b = shared
    return shared
