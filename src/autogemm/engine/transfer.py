"""Running a routine's launches on a call's operands: upload what lives on the host, enqueue, bring a host
result back; a device result gets the events to wait on instead. Shared by every high-level call.

numpy in, numpy out, the host's arrays cross through page-locked memory, as torch's users copy with
``pin_memory``: the device's DMA engines read and write page-locked memory at several times the rate of
pageable memory, which the driver copies through a small staging area of its own.
The operands are copied in pieces by the copy threads (``shares.copying``) into page-locked memory kept
between calls (``shares.staging.page_locked``); a new result is page-locked memory itself
(``shares.staging.host_result``), which the device writes and the caller keeps. A call comes in blocks (``Block``: a
product in blocks of C's rows). Every upload, launch and download is enqueued at once, while the copy
threads start: each upload waits for a user event its piece's copy marks complete (``_Copies``), each
block for the last upload it reads, and its part of the result comes back while the next computes, so
that the host's copies, the uploads, the kernels and the downloads overlap and no copy waits for the
caller to enqueue anything. A small call of one block (``Thresholds.overlap_min_bytes``) has nothing to
overlap but its copies with its uploads: it copies every piece first, and its uploads wait on no event
(such a call of dense numpy arrays does not come here: its route runs it whole, ``OpenCLRoute``; strided
views and device results do)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from ctypes import memmove
from typing import NamedTuple

import numpy as np

from ..blas import GemmProblem, index_blocks
from ..profiles import Thresholds
from ..runtime import DeviceContext
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.memory import check_memory
from ..shares.copying import COPY_THREADS, Background, native_copier, parallel_copy
from ..shares.staging import page_locked, result_pool
from .call import GemmCall
from .operands import Matrix, Stored, hand_events, on_device

Enqueue = Callable[[list[ocl.Buffer], list[ocl.Event]], list[ocl.Event]]

#: The staged operands cross in pieces, the first round of them (one for each copy thread) of
#: ``PIECE_BYTES``, each round twice as long as the last up to ``PIPELINE_BYTES``: the host copies the next
#: pieces while the device's DMA engine reads the last (each piece costs a hand-over between threads, so
#: pieces much smaller than these cost more than they overlap).
PIECE_BYTES, PIPELINE_BYTES = 4 * 2**20, 8 * 2**20
#: Each operand's place in the page-locked memory starts at a multiple of this many bytes.
PINNED_ALIGNMENT = 4096


def large_on_host(call: GemmCall, limits: Thresholds) -> bool:
    """Whether a product streams through its device as a share of it (tile by tile, out of core where need
    be, or in place): numpy arrays all, of ``limits.stream_bytes`` or more, or with a matrix past the
    kernels' 32-bit indexing (a product of device arrays runs in blocks of its own instead); smaller ones
    cross through page-locked memory in row blocks."""
    operands = [x for x in (call.a, call.b, call.c) if x is not None]
    if call.batch is not None or not all(isinstance(x, np.ndarray) for x in operands):
        return False
    return (sum(x.nbytes for x in operands) >= limits.stream_bytes
            or index_blocks.exceeds(GemmProblem.dense(call.dt, call.m, call.n, call.k)))


class Block(NamedTuple):
    """One group of a call's launches (``enqueue(buffers, events to wait for)``, returning its events): it
    reads the first ``needs[i]`` elements of operand i's storage (each uploaded before it runs) and
    writes elements [``writes[0]``, ``writes[1]``) of the result's (the last operand). A call in several
    blocks, each needing more of the operands, overlaps its uploads, launches and downloads."""

    needs: tuple[int, ...]
    writes: tuple[int, int]
    enqueue: Enqueue


def one_block(operands: Sequence[Stored], enqueue: Enqueue) -> list[Block]:
    """A call in one block: ``enqueue`` needs every operand whole and writes the whole result."""
    return [Block(tuple(st.elements for st in operands), (0, operands[-1].elements), enqueue)]


def run_blocks(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix,
               temporaries: Sequence[int], blocks: Sequence[Block], wait_for: list[ocl.Event], limits: Thresholds
               ) -> Matrix:
    """Give each operand a buffer (its own on the device; a host one uploaded where ``needed``: an output
    that is only written is not), enqueue each block once the parts of the operands it needs are
    uploaded and, for a host ``out``, download what it writes into ``out``; a device ``out`` gets the
    uploads' events and the last launch's. ``temporaries`` are the bytes the launches still have to
    allocate, for the memory check made before anything is enqueued; ``limits`` the device's thresholds
    (``pinned_min_bytes`` to ``pinned_max_bytes`` cross through page-locked memory)."""
    check_memory(ctx, [st.span.nbytes for st in operands if st.buffer is None] + list(temporaries))
    out_locked = places = None
    if not ctx.device.shares_host_memory:       # else nothing to stage, nor a pool to ask
        out_locked = result_pool(ctx).owns(out)
        places = _places(operands, needed, out, out_locked, limits)
    if places is None and len(blocks) == 1:
        return _direct(ctx, operands, needed, out, blocks[0], wait_for)
    if places is None:
        return _execute(ctx, operands, needed, out, blocks, wait_for, None)
    with page_locked(ctx, places[-1]) as memory:     # until the uploads are done and a host result is back
        staging = [memory[start:] for start in places[:-2]] + [None if out_locked else memory[places[-2]:]]
        return _execute(ctx, operands, needed, out, blocks, wait_for, staging, limits.overlap_min_bytes)


def _places(operands: Sequence[Stored], needed: Sequence[bool], out: Matrix, out_locked: bool, limits: Thresholds
            ) -> list[int] | None:
    """Where each host operand lies in the page-locked memory of a call (the result last, and the bytes
    needed after them; none for an operand on the device, nor for a result that is page-locked memory
    already, ``out_locked``); None for a call whose host operands and result take less than
    ``limits.pinned_min_bytes`` or more than ``limits.pinned_max_bytes``."""
    places, end, total = [], 0, 0
    for st, need in zip(operands, needed):
        places.append(end)
        if st.buffer is not None:
            size = 0
        elif st is operands[-1]:
            total += st.elements * st.span.itemsize
            size = 0 if out_locked else st.elements * st.span.itemsize
        else:
            size = st.span.nbytes if need else 0
            total += size
        end += -(-size // PINNED_ALIGNMENT) * PINNED_ALIGNMENT
    return places + [end] if limits.pinned_min_bytes <= total <= limits.pinned_max_bytes else None


def _execute(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix,
             blocks: Sequence[Block], wait_for: list[ocl.Event], staging: list[np.ndarray | None] | None,
             overlap_min_bytes: int = 0) -> Matrix:
    """``run_blocks``, host operands copied through ``staging`` (page-locked memory, one place per operand;
    None for one that is page-locked itself) where given, else from their arrays: piece by piece, each
    upload starting as its piece is copied, in a call of several blocks or of ``overlap_min_bytes`` copied
    or more; else every piece copied before the first upload is enqueued (a command waiting on a user
    event that a copy thread marks complete cost a small call more than the overlap gained). Their device
    buffers come from the context's pool, and go back to it once a host result is read. A call in several
    blocks uploads on one transfer queue and downloads on another, so that they run while the device
    computes."""
    pieces, ready = _pieces(operands, needed, [block.needs for block in blocks], staging is not None)
    copied = sum((stop - start) * operands[i].span.itemsize for i, start, stop in pieces
                 if staging is not None and staging[i] is not None)
    overlap = len(blocks) > 1 or copied >= overlap_min_bytes
    copies = _Copies(ctx.context, operands, pieces, staging, overlap)       # the copy threads start first
    sizes = _buffer_bytes(operands)
    buffers: list[ocl.Buffer | None] = [st.buffer for st in operands]
    launched: list[ocl.Event] = []
    downloads: list[tuple[int, int]] = []          # the elements of the result each block writes
    last: tuple[int, int, list[ocl.Event]] | None = None     # the last block's, and the launch it follows
    reads: list[ocl.Event] = []                     # the other blocks' reads
    done = False
    try:
        copies.first()
        _take_buffers(ctx, operands, buffers, sizes)
        if not overlap:
            copies.join()
        spread = len(blocks) > 1
        up_queue = ctx.transfer_queue("in") if spread else ctx.queue
        down_queue = ctx.transfer_queue("out") if spread else ctx.queue
        flat = _flat(out, operands[-1])
        landing = None if flat is None or staging is None or staging[-1] is None else \
            staging[-1][:flat.nbytes].view(flat.dtype)
        uploads = [ocl.copy(up_queue, buffers[i], source, dst_offset=start * source.itemsize,
                            wait_for=copies.ready[k], is_blocking=False)
                   for k, ((i, start, _), source) in enumerate(zip(pieces, copies.sources))]
        into = flat if landing is None else landing
        for count, block in zip(ready, blocks):      # the uploads run in order: a block waits for its last
            launched.extend(block.enqueue(buffers, wait_for + uploads[count - 1:count]))
            start, stop = block.writes
            if flat is not None and stop > start and launched:
                downloads.append((start, stop))
                if block is blocks[-1]:
                    last = (start, stop, launched[-1:])
                else:       # read back while the next block computes (its event held: pyopencl's event of
                    # a read into host memory waits for the read as it is collected)
                    reads.append(ocl.copy(down_queue, into[start:stop], buffers[-1],
                                          src_offset=start * into.itemsize, wait_for=launched[-1:],
                                          is_blocking=False))
        copies.join()
        if on_device(out):
            for event in uploads:       # (not noted: an upload's event holds its host array)
                out.add_event(event)
            hand_events(out, launched[-1:], ctx.queue)
            if staging is not None:     # the page-locked memory is the next call's once they are done
                ocl.wait(uploads)
            return out
        if flat is None:
            download(down_queue, operands[-1], buffers[-1], out, None if staging is None else staging[-1],
                     launched[-1:])
        if last is not None:
            # the last block's download blocks (a blocking read returns sooner than a wait on an event
            # does on some drivers); the others, before it on its in-order queue, have ended too
            start, stop, after = last
            ocl.copy(down_queue, into[start:stop], buffers[-1], src_offset=start * into.itemsize,
                     wait_for=after, is_blocking=True)
        elif downloads:
            down_queue.finish()
        if landing is not None:
            for start, stop in downloads:
                parallel_copy(flat[start:stop], landing[start:stop])
        done = True        # every command before the downloads on their queues has ended too
        return out
    finally:
        copies.close()             # no copy runs on, nor an upload waits for one that never ends
        _give_buffers(ctx, operands, buffers, sizes, done)


def _direct(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix, block: Block,
            wait_for: list[ocl.Event]) -> Matrix:
    """``run_blocks`` of one block with nothing staged (nothing to overlap): each needed host operand
    uploaded from its array, the block's launches, and a host result read back, blocking; its buffers
    from the context's pool (``_take_buffers``, ``_give_buffers``)."""
    queue = ctx.queue
    sizes = _buffer_bytes(operands)
    buffers: list[ocl.Buffer | None] = [st.buffer for st in operands]
    done = False
    try:
        _take_buffers(ctx, operands, buffers, sizes)
        # (the uploads' events held: pyopencl's event of a copy from host memory waits for it as it goes)
        uploads = [ocl.copy(queue, buffers[i], st.span, is_blocking=False)
                   for i, (st, need) in enumerate(zip(operands, needed)) if st.buffer is None and need and st.elements]
        launched = block.enqueue(buffers, wait_for + uploads[-1:])
        if on_device(out):
            for event in uploads:       # (not noted: an upload's event holds its host array)
                out.add_event(event)
            hand_events(out, launched[-1:], queue)
            return out
        flat = _flat(out, operands[-1])
        if flat is None:
            download(queue, operands[-1], buffers[-1], out, None, launched[-1:])
        elif launched:
            ocl.copy(queue, flat, buffers[-1], wait_for=launched[-1:], is_blocking=True)
        done = True
        return out
    finally:
        _give_buffers(ctx, operands, buffers, sizes, done)


def _buffer_bytes(operands: Sequence[Stored]) -> list[int]:
    """The bytes of the pool's buffer each host operand crosses in (0 for one on the device)."""
    return [max(st.span.nbytes, st.span.itemsize) if st.buffer is None else 0 for st in operands]


def _take_buffers(ctx: DeviceContext, operands: Sequence[Stored], buffers: list[ocl.Buffer | None],
                  sizes: Sequence[int]) -> None:
    """Fill ``buffers`` (each operand's, None for a host one) from the context's pool, in order."""
    for i, st in enumerate(operands):
        if st.buffer is None:
            buffers[i] = ctx.buffers.take(sizes[i])


def _give_buffers(ctx: DeviceContext, operands: Sequence[Stored], buffers: Sequence[ocl.Buffer | None],
                  sizes: Sequence[int], done: bool) -> None:
    """The host operands' buffers back to the pool once every command using them is ``done``
    (``BufferPool.give_all``); else released, freed once those commands end."""
    taken = [(buf, size) for st, buf, size in zip(operands, buffers, sizes) if st.buffer is None and buf is not None]
    if done:
        ctx.buffers.give_all(taken)
    else:
        for buf, _ in taken:
            buf.release()


def _pieces(operands: Sequence[Stored], needed: Sequence[bool], needs: Sequence[tuple[int, ...]], staged: bool
            ) -> tuple[list[tuple[int, int, int]], list[int]]:
    """The uploads of a call in the order its blocks need them (``needs``: each block's elements of each
    operand, as ``Block.needs``), as (operand, first element, end) ranges
    of the operands' storage, and for each block how many of them it waits for. Where ``staged``, the
    copy threads share the pieces: the first round of them (one per thread) are ``PIECE_BYTES`` long,
    and each round twice as long as the last, up to ``PIPELINE_BYTES``, so that the first uploads start
    soon and later ones cost few hand-overs; else one piece per block and operand."""
    host = [i for i, (st, need) in enumerate(zip(operands, needed)) if st.buffer is None and need and st.elements]
    sent = [0] * len(operands)
    pieces, ready = [], []
    for block_needs in needs:
        for i in host:
            itemsize, end = operands[i].span.itemsize, min(block_needs[i], operands[i].elements)
            while sent[i] < end:
                step = end - sent[i] if not staged else \
                    max(1, min(PIPELINE_BYTES, PIECE_BYTES << min(len(pieces) // COPY_THREADS, 30)) // itemsize)
                pieces.append((i, sent[i], min(sent[i] + step, end)))
                sent[i] = pieces[-1][2]
        ready.append(len(pieces))
    return pieces, ready


class _Copies:
    """The copies of a call's pieces into their page-locked places (``staging``), run by the copy threads
    in order from the moment this is made (``shares.native``'s where built and free, else
    ``copying.Background``): each marks a user event of its own
    complete once done, so that the caller enqueues every upload (behind its piece's event), launch and
    download at once while the threads copy, no copy waits for an enqueue, and each upload starts as soon
    as its piece is there; where the uploads do not ``overlap`` the copies, no piece has an event (the
    caller joins the copies first). Without ``staging`` nothing is copied: the uploads read the operands'
    arrays."""

    def __init__(self, context: ocl.Context, operands: Sequence[Stored], pieces: Sequence[tuple[int, int, int]],
                 staging: Sequence[np.ndarray | None] | None, overlap: bool = True) -> None:
        places = {i: None if staging is None or staging[i] is None else
                  staging[i][:operands[i].span.nbytes].view(operands[i].span.dtype) for i, _, _ in pieces}
        addresses = {i: (_address(place), _address(operands[i].span)) for i, place in places.items()
                     if place is not None}
        #: What each piece's upload reads, and the events it waits for (a copy's, where there is one).
        self.sources: list[np.ndarray] = []
        self.ready: list[list[ocl.Event]] = []
        tasks, moves = [], []
        for k, (i, start, stop) in enumerate(pieces):
            span, place = operands[i].span, places[i]
            if place is None:       # page-locked itself, or nothing staged
                self.sources.append(span[start:stop])
                self.ready.append([])
                moves.append(None)
            else:
                self.sources.append(place[start:stop])
                self.ready.append([ocl.user_event(context)] if overlap else [])
                offset = start * span.itemsize     # (both contiguous: a copy is one memmove of its bytes)
                to, source = addresses[i]
                moves.append((to + offset, source + offset, (stop - start) * span.itemsize))
                tasks.append(functools.partial(self._copy, k))
        native = native_copier() if tasks else None
        self._batch = native.start([(*move, _event_address(self.ready[k])) for k, move in enumerate(moves)
                                    if move is not None]) if native is not None else None
        if self._batch is not None:     # native threads copy every piece and mark its event
            self._native, tasks, moves = native, [], [None] * len(moves)
        self._moves = moves             # each piece's (to, from, bytes) until it is copied
        self._copies = Background(tasks)

    def _copy(self, k: int) -> None:
        memmove(*self._moves[k])
        for event in self.ready[k]:
            ocl.complete(event)
        self._moves[k] = None

    def first(self) -> None:
        """Copy the first piece in this thread, already running, while the copy threads wake, so that the
        first upload starts soonest."""
        self._copies.run_next()

    def join(self) -> None:
        """Copy the pieces no thread has taken, and wait for every copy (raising the first error)."""
        self._end_native()
        self._copies.join()

    def _end_native(self) -> None:
        """Wait for the native threads' copies, if they have some (they cannot fail)."""
        if self._batch is not None:
            batch, self._batch = self._batch, None
            self._native.wait(batch)

    def close(self) -> None:
        """Wait for the copies under way and start none; then copy, in this thread, each piece not copied
        (after an error or an interrupt), so that the commands already enqueued behind them run on whole
        operands and end. A piece whose copy fails again has its event, and those of the pieces after
        it, marked failed: the commands waiting for them end (failed) rather than never."""
        self._end_native()
        self._copies.close()
        left = [k for k, move in enumerate(self._moves) if move is not None]
        try:
            for k in left:
                self._copy(k)
        finally:
            for k in left:
                if self._moves[k] is not None:
                    for event in self.ready[k]:
                        event.set_status(-1)


def _event_address(events: list[ocl.Event]) -> int | None:
    """The address of the user event a native thread marks once it has copied a piece (None: none)."""
    return events[0].int_ptr if events else None


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _flat(out: Matrix, st: Stored) -> np.ndarray | None:
    """A host result's memory as its storage's elements in order (a writeable 1-D view), or None where it
    has other elements between them (a leading dimension or stride larger than its shape)."""
    if on_device(out):
        return None
    view = np.swapaxes(out, -1, -2) if st.flipped else out
    return view.reshape(-1) if view.flags.c_contiguous and st.elements == out.size else None


def staged_uploads(queue: ocl.Queue, staged: Sequence[tuple[ocl.Buffer, np.ndarray, np.ndarray]]
                   ) -> list[ocl.Event]:
    """Copy each ``(buffer, memory, array)``'s contiguous array to its buffer through its page-locked bytes
    ``memory``, in parts the copy threads copy while their uploads are enqueued (``_Copies``). The uploads'
    events."""
    ops = [Stored(1, False, 1, array.size, span=np.ascontiguousarray(array).reshape(-1)) for _, _, array in staged]
    pieces, _ = _pieces(ops, [True] * len(ops), [tuple(st.elements for st in ops)], True)
    copies = _Copies(queue.context, ops, pieces, [memory for _, memory, _ in staged])
    try:
        uploads = [ocl.copy(queue, staged[i][0], source, dst_offset=start * source.itemsize,
                            wait_for=ready, is_blocking=False)
                   for (i, start, _), source, ready in zip(pieces, copies.sources, copies.ready)]
        copies.join()
        return uploads
    finally:
        copies.close()


def download(queue: ocl.Queue, st: Stored, buffer: ocl.Buffer, out: np.ndarray,
             staging: np.ndarray | None = None, wait_for: list[ocl.Event] | None = None) -> None:
    """Read a result's storage back into ``out`` once ``wait_for`` are done: through the page-locked bytes
    ``staging`` where given, else through a temporary array, then into ``out``'s elements."""
    result = (np.empty(max(st.elements, 1), dtype=out.dtype) if staging is None
              else staging[:max(st.elements, 1) * out.itemsize].view(out.dtype))
    ocl.copy(queue, result, buffer, wait_for=wait_for)
    size = out.itemsize
    view = np.lib.stride_tricks.as_strided(result, shape=(st.layers, st.rows, st.cols),
                                           strides=(st.stride * size, st.ld * size, size))
    out[...] = (view.transpose(0, 2, 1) if st.flipped else view).reshape(out.shape)
