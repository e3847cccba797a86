"""One device's rows of a product of host operands, streamed tile by tile of C so that the copies overlap
the kernels, for products larger than the device's memory too (out of core).

The rows are cut into tiles of C (``tile_side``). A tile needs its rows of op(A) and its columns of
op(B). Where both operands fit on the device beside the rest, every block is copied once and kept, and
the tiles are taken in growing squares, so the copies spread over the product; otherwise A's blocks
(and, where B does not fit either, B's) pass through two device slots, brought again as tiles need them.
Every block crosses through page-locked staging buffers in chunks: host threads copy a chunk of the
numpy block into one (several threads together copy several times faster than the driver's own copies
from pageable memory) and a transfer queue copies it to the device at the page-locked rate, while the
device computes earlier tiles on its own queue; C's tiles come back on a second transfer queue, straight
into C where C is page-locked memory (a new result is: ``staging.host_result``), else the same way
as the blocks go in, copied into C by a thread of the stream's own (a third thread faults in the pages
of a new C ahead of it: ``FirstTouch``). Events order everything: a kernel waits for its
blocks' copies and for the download of the tile its C slot last held; a device slot of A or B is
refilled only after the kernels that read it are done; a staging buffer only after its copy is done
and its user has given it back."""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..blas.launch_plan import LaunchPlan
from ..blas.plan_cache import cached_plan
from ..blas.problem import GemmProblem, Op, addressable
from ..codelets.registry import KernelParams
from ..errors import DeviceError
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from . import copying, staging
from .host import HostGemm
from .staging import FirstTouch, SharedBlocks, StagingRing, staging_rings

#: Tiles per side of C that a streamed product aims at, within the smallest and largest tile sides (a
#: tile of C is also kept within one chunk, and its sides are multiples of 128).
TILES_PER_SIDE, MIN_TILE, MAX_TILE = 8, 2048, 4096
#: The share of the device's memory a streamed product may plan to use.
MEMORY_SHARE = 0.9
#: Device slots (and staging buffers) for tiles of C: one computed while others go back to the host.
C_SLOTS = 3


def tile_side(dt_itemsize: int, m: int, n: int) -> int:
    """The tile side for an m x n C: about 1/``TILES_PER_SIDE`` of its larger side (the first tile's blocks
    are copied before anything computes, so a smaller tile starts sooner), at least ``MIN_TILE``, at most
    ``MAX_TILE`` and what keeps a tile of C within one chunk; a multiple of 128."""
    fits_chunk = int(math.sqrt(staging.CHUNK_BYTES / dt_itemsize)) // 128 * 128
    wanted = max(MIN_TILE, max(m, n) // TILES_PER_SIDE // 128 * 128)
    return max(128, min(MAX_TILE, fits_chunk, wanted))


@dataclass(frozen=True)
class Tile:
    """One tile of a share's C: its place in the grid of tiles, and its rows [row0, row1) (counted from
    the share's first row) and columns [col0, col1)."""

    grid_row: int
    grid_col: int
    row0: int
    row1: int
    col0: int
    col1: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.row1 - self.row0, self.col1 - self.col0


@dataclass(frozen=True)
class Retiring:
    """A tile of C on its way back: its copy into a staging buffer (the event, the buffer's index in the
    ring and the array over it), to be copied into the host's C by the stream's retiring thread."""

    download: ocl.Event
    staging_index: int
    staged: np.ndarray
    tile: Tile


class OperandSlots:
    """The device buffers one operand's blocks (A's rows or B's columns) pass through: one per block where
    the operand stays resident, else two used in turn; which block each holds with the copy that brought
    it, and the last kernel reading each (a slot is refilled only after it)."""

    def __init__(self, name: str, buffers: list[ocl.Buffer], resident: bool) -> None:
        self.name, self.buffers, self.resident = name, buffers, resident
        self.holding: dict[int, tuple[int, ocl.Event]] = {}     # slot -> (block in it, its copy)
        self.readers: dict[int, ocl.Event] = {}
        self._turn = 0                                        # the slot the next block goes to

    def slot_for(self, block: int) -> tuple[int, bool]:
        """The slot ``block`` is in or goes to, and whether it is there already."""
        slot = block if self.resident else next((s for s, (held, _) in self.holding.items() if held == block), None)
        if slot is None:
            slot, self._turn = self._turn, 1 - self._turn
        held = self.holding.get(slot)
        return slot, held is not None and held[0] == block


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
    """Rows [start, stop) of C = alpha op(A) op(B) + beta C on host arrays (a ``host.HostGemm``),
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
        self._staging_in: StagingRing | None = None
        #: The host memory the share takes beside the page-locked staging its context keeps: none.
        self.host_bytes = 0

    # ----- planning -------------------------------------------------------------------------------
    def tiles(self, layout: Layout | None = None) -> list[Tile]:
        """Every tile of this share's C, in the order they are computed (``tile_order``: growing squares
        where A and B both stay resident)."""
        layout = layout or self.layout
        tile = layout.tile
        grid = tile_order(math.ceil(self.m / tile), math.ceil(self.n / tile), layout.a_resident and layout.b_resident)
        return [Tile(i, j, i * tile, min((i + 1) * tile, self.m), j * tile, min((j + 1) * tile, self.n))
                for i, j in grid]

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
        shapes = {tile.shape for tile in self.tiles(layout)}
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

    def _upload(self, block: np.ndarray, buffer: ocl.Buffer, wait_for: list[ocl.Event]) -> ocl.Event:
        """Copy a 2-D host block into ``buffer`` (row-major, dense) through the staging ring, chunk by
        chunk; the last copy's event (the copies of one queue finish in order)."""
        copies = self.ctx.transfer_queue("in")
        if block.size == 0:                      # nothing to copy (k is 0): an event to wait on all the same
            return ocl.marker(copies, wait_for=wait_for or None)
        rows_per_chunk = max(1, self._staging_in.nbytes // max(block[0:1].nbytes, 1))
        event = None
        for r0 in range(0, len(block), rows_per_chunk):
            part = block[r0:r0 + rows_per_chunk]
            index, staged = self._staging_in.take(part.shape, part.dtype)
            started = time.perf_counter()
            copying.parallel_copy(staged, part)
            if self._trace is not None:
                self._trace.append(("host copy in", started, time.perf_counter(), part.nbytes))
            event = ocl.copy(copies, buffer, staged, dst_offset=r0 * block.shape[1] * block.itemsize,
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
        tile, out_size = self.layout.tile, self.out_dtype.itemsize
        widest_row = max(self.k, tile) * self.dtype.itemsize          # a chunk holds at least one row of a block
        lock, self._staging_in, staging_out = staging_rings(self.ctx, widest_row, tile * tile * out_size, C_SLOTS)
        run = _StreamRun(self, staging_out)
        lock.acquire()
        try:
            run.start()
            for index, each in enumerate(self.tiles()):
                if run.errors:
                    break
                run.compute(index, each)
        finally:
            run.stop()
            lock.release()
            run.release()
        if run.errors:
            raise run.errors[0]


class _StreamRun:
    """One run of a ``DeviceStream``: its device buffers (slots of A's and B's blocks, of C's tiles), the
    commands in flight on them, and the thread that copies C's tiles back into the host's C (with
    ``FirstTouch`` ahead of it where C is new)."""

    def __init__(self, stream: DeviceStream, staging_out: StagingRing) -> None:
        self.stream, self.staging_out = stream, staging_out
        self.allocated: list[ocl.Buffer] = []
        self.a: OperandSlots | None = None
        self.b: OperandSlots | None = None
        self.c_slots: list[ocl.Buffer] = []
        self.c_free: list[list[ocl.Event]] = [[] for _ in range(C_SLOTS)]   # a C slot is free after these
        self.retiring: queue.SimpleQueue = queue.SimpleQueue()
        self.errors: list[BaseException] = []
        self.first_touch: FirstTouch | None = None
        self.direct = False                      # C is page-locked: its tiles come back straight into it
        self.retirer = threading.Thread(target=self._retire_all, name="autogemm-retire")

    def _buffers(self, count: int, nbytes: int) -> list[ocl.Buffer]:
        ctx = self.stream.ctx
        self.allocated.extend(ocl.device_buffer(ctx.context, nbytes) for _ in range(count))
        return self.allocated[-count:]

    def start(self) -> None:
        """Allocate the device's slots, start touching a new C's pages and the retiring thread."""
        stream = self.stream
        layout, itemsize, m, n, k = stream.layout, stream.dtype.itemsize, stream.m, stream.n, stream.k
        tile = layout.tile
        self.a = OperandSlots("A", self._buffers(math.ceil(m / tile) if layout.a_resident else 2,
                                                  min(tile, m) * k * itemsize), layout.a_resident)
        self.b = OperandSlots("B", self._buffers(math.ceil(n / tile) if layout.b_resident else 2,
                                                  k * min(tile, n) * itemsize), layout.b_resident)
        self.c_slots = self._buffers(C_SLOTS, min(tile, m) * min(tile, n) * stream.out_dtype.itemsize)
        rows = stream.gemm.c[stream.start:stream.stop]
        self.direct = staging.in_result_pool(rows)
        if stream.gemm.beta == 0 and rows.flags.c_contiguous and not self.direct:
            self.first_touch = FirstTouch(rows, min(tile, 256))
        self.retirer.start()

    def block(self, slots: OperandSlots, index: int, start: int, stop: int) -> tuple[int, ocl.Buffer, ocl.Event]:
        """Block ``index`` of ``slots``'s operand (rows or columns [start, stop)) on the device, copied into
        its slot unless there: (the slot, its buffer, the copy that brought it)."""
        stream = self.stream
        slot, present = slots.slot_for(index)
        if not present:
            host = stream._a_rows(start, stop) if slots.name == "A" else stream._b_columns(start, stop)
            after = [slots.readers[slot]] if slot in slots.readers else []
            if slots.name == "B" and stream.shared_b is not None:
                host = stream.shared_b.block(index, host)      # page-locked already: one copy
                copies = stream.ctx.transfer_queue("in")
                copied = ocl.copy(copies, slots.buffers[slot], host, is_blocking=False, wait_for=after or None)
                copies.flush()
            else:
                copied = stream._upload(host, slots.buffers[slot], after)
            slots.holding[slot] = (index, copied)
        return slot, slots.buffers[slot], slots.holding[slot][1]

    def compute(self, index: int, tile: Tile) -> None:
        """Enqueue tile number ``index``: its blocks of A and B brought in, its product into a C slot (once
        the last tile in that slot has gone back), and its copy back to a staging buffer for the retiring
        thread."""
        stream = self.stream
        gemm = stream.gemm
        a_slot, a_buffer, a_copied = self.block(self.a, tile.grid_row, tile.row0, tile.row1)
        b_slot, b_buffer, b_copied = self.block(self.b, tile.grid_col, tile.col0, tile.col1)
        c_index = index % C_SLOTS
        waits = [a_copied, b_copied, *self.c_free[c_index]]
        if gemm.beta != 0:
            rows = slice(stream.start + tile.row0, stream.start + tile.row1)
            waits.append(stream._upload(gemm.c[rows, tile.col0:tile.col1], self.c_slots[c_index], waits))
        events = stream._plan(*tile.shape).enqueue(a_buffer, b_buffer, self.c_slots[c_index], alpha=gemm.alpha,
                                                   beta=gemm.beta, wait_for=waits)
        stream.ctx.queue.flush()
        if stream._trace is not None:
            stream._trace.extend(("kernel", event) for event in events)
        self.a.readers[a_slot] = self.b.readers[b_slot] = events[-1]
        out_queue = stream.ctx.transfer_queue("out")
        if self.direct:
            download = staging.read_into(out_queue, gemm.c, self.c_slots[c_index], stream.start + tile.row0,
                                         tile.col0, tile.shape, events[-1:])
            if stream._trace is not None:
                stream._trace.append(("copy out", download))
        else:
            staging_index, staged = self.staging_out.take(tile.shape, stream.out_dtype)
            download = ocl.copy(out_queue, staged, self.c_slots[c_index], is_blocking=False,
                                wait_for=events[-1:])
            self.staging_out.pending[staging_index] = download
            self.retiring.put(Retiring(download, staging_index, staged, tile))
        out_queue.flush()
        self.c_free[c_index] = [download]

    def _retire_all(self) -> None:
        """The retiring thread: copy each tile that comes back into C and give its staging buffer back;
        after an error only give the buffers back."""
        while (item := self.retiring.get()) is not None:
            try:
                if not self.errors:
                    self._retire(item)
            except BaseException as exc:  # noqa: BLE001 - raised by ``run``
                self.errors.append(exc)
            finally:
                self.staging_out.done(item.staging_index)

    def _retire(self, item: Retiring) -> None:
        """Copy a tile from its staging buffer into C, once its download is done (and C's pages there are
        touched)."""
        stream, tile = self.stream, item.tile
        item.download.wait()
        if self.first_touch is not None:
            self.first_touch.wait(tile.row1)
        started = time.perf_counter()
        rows = slice(stream.start + tile.row0, stream.start + tile.row1)
        copying.parallel_copy(stream.gemm.c[rows, tile.col0:tile.col1], item.staged)
        if stream._trace is not None:
            stream._trace.extend([("copy out", item.download),
                                  ("host copy out", started, time.perf_counter(), item.staged.nbytes)])

    def stop(self) -> None:
        """End the retiring thread and the page touching, and wait for every command enqueued."""
        self.retiring.put(None)
        if self.retirer.is_alive():
            self.retirer.join()
        if self.first_touch is not None:
            self.first_touch.stop()
        readers = [*self.a.readers.values(), *self.b.readers.values()] if self.a and self.b else []
        for event in [*readers, *(e for events in self.c_free for e in events)]:
            event.wait()
        self.staging_out.wait()
        self.stream._staging_in.wait()

    def release(self) -> None:
        """Free the device's slots."""
        for buf in self.allocated:
            buf.release()


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
