"""Running a routine's launches on a call's operands: upload what lives on the host, enqueue, bring a host
result back; a device result gets the events to wait on instead. Shared by every high-level call.

numpy in, numpy out, the host's arrays cross through page-locked memory, as torch's users copy with
``pin_memory``: the device's DMA engines read and write page-locked memory at several times the rate of
pageable memory, which the driver copies through a small staging area of its own (on the H100, SGEMM
4096^3 took 50 ms from numpy to numpy through pageable copies, 9 ms in torch through page-locked ones).
The operands are copied by host threads into page-locked memory kept between calls
(``shares.staging.page_locked``), each part sent on as soon as it is there, so that the host's copies
and the device's overlap; a new result is page-locked memory itself (``host_result``), which the device
writes and the caller keeps."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pyopencl as cl

from ..runtime import DeviceContext
from ..runtime.cuda import CudaContext
from ..runtime.memory import check_memory
from ..shares.staging import COPY_THREADS, PART_BYTES, copy_into, in_parallel, page_locked, parallel_copy, result_pool
from .operands import Matrix, Stored, on_device

Enqueue = Callable[[list[cl.Buffer], list[cl.Event]], list[cl.Event]]

#: A call whose host operands and result take from ``PINNED_MIN_BYTES`` to ``PINNED_BYTES`` crosses
#: through page-locked memory (kept between calls, so a process holds as much as its largest such call,
#: until ``clear_plans``); a smaller one copies from its arrays as they are, a larger one streams
#: (``api.gemm.STREAM_BYTES``). On the H100, numpy to numpy (ms, page-locked / as they are): SGEMM 1024^3
#: 2.4 / 1.5, 1536^3 4.3 / 5.1, 2048^3 5.8 / 7.9; DGEMM 1024^3 3.8 / 4.0, 2048^3 6.8 / 16.6. A new result
#: from ``RESULT_MIN_BYTES`` on is page-locked memory itself.
PINNED_MIN_BYTES, PINNED_BYTES, RESULT_MIN_BYTES = 16 * 2**20, 1536 * 2**20, 2**20
#: The staged operands cross in parts of this many bytes at most: the host copies the next part while
#: the device's DMA engine reads the last.
PIPELINE_BYTES = 8 * 2**20
#: Each operand's place in the page-locked memory starts at a multiple of this many bytes.
PINNED_ALIGNMENT = 4096


def execute(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix,
            temporaries: Sequence[int], enqueue: Enqueue, wait_for: list[cl.Event]) -> Matrix:
    """Give each operand a buffer (its own on the device; a host one uploaded where ``needed``: an output
    that is only written is not), call ``enqueue(buffers, events to wait for)`` and, for a host ``out``,
    download the last operand (the result's storage) into it; a device ``out`` gets the uploads' events
    and the last launch's. ``temporaries`` are the bytes the launches still have to allocate, for the
    memory check made before anything is enqueued."""
    check_memory(ctx, [st.span.nbytes for st in operands if st.buffer is None] + list(temporaries))
    if ctx.device.shares_host_memory:       # nothing to stage, nor a pool to ask
        return _execute(ctx, operands, needed, out, enqueue, wait_for, None)
    out_locked = result_pool(ctx).owns(out)
    places = _places(operands, needed, out, out_locked)
    if places is None:
        return _execute(ctx, operands, needed, out, enqueue, wait_for, None)
    lock, memory = page_locked(ctx, places[-1])
    with lock:              # held until the uploads are done and a host result is read back
        staging = [memory[start:] for start in places[:-2]] + [None if out_locked else memory[places[-2]:]]
        return _execute(ctx, operands, needed, out, enqueue, wait_for, staging)


def host_result(ctx: DeviceContext | CudaContext, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A new host array for a call's result: page-locked memory of the context's ``ResultPool`` where the
    result takes ``RESULT_MIN_BYTES`` to ``PINNED_BYTES`` and the device has memory of its own (else, or once the pool
    is full, an ordinary array)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    shared = isinstance(ctx, DeviceContext) and ctx.device.shares_host_memory
    if RESULT_MIN_BYTES <= nbytes <= PINNED_BYTES and not shared:
        found = result_pool(ctx).take(shape, dtype)
        if found is not None:
            return found
    return np.empty(shape, dtype)


def _places(operands: Sequence[Stored], needed: Sequence[bool], out: Matrix, out_locked: bool
            ) -> list[int] | None:
    """Where each host operand lies in the page-locked memory of a call (the result last, and the bytes
    needed after them; none for an operand on the device, nor for a result that is page-locked memory
    already, ``out_locked``); None for a call whose host operands and result take less than
    ``PINNED_MIN_BYTES`` or more than ``PINNED_BYTES``."""
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
    return places + [end] if PINNED_MIN_BYTES <= total <= PINNED_BYTES else None


def _execute(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix,
             enqueue: Enqueue, wait_for: list[cl.Event], staging: list[np.ndarray] | None) -> Matrix:
    """``execute``, host operands copied through ``staging`` (page-locked memory, one place per operand;
    None for the result where it is page-locked itself) where given, else from their arrays. Their
    device buffers come from the context's pool, and go back to it once a host result is read."""
    queue = ctx.queue
    buffers, uploads, staged = [], [], []
    done = False
    try:
        for i, (st, need) in enumerate(zip(operands, needed)):
            if st.buffer is not None:
                buffers.append(st.buffer)
                continue
            buffers.append(ctx.buffers.take(max(st.span.nbytes, st.span.itemsize)))
            place = None if staging is None else staging[i]
            if need and st.span.size and place is None:
                # the event keeps the host memory alive until the copy is done
                uploads.append(cl.enqueue_copy(queue, buffers[-1], np.ascontiguousarray(st.span), is_blocking=False))
            elif need and st.span.size:
                staged.append((buffers[-1], place, st.span))
        uploads += staged_uploads(queue, staged)
        events = enqueue(buffers, wait_for + uploads)
        if on_device(out):
            for event in uploads + events[-1:]:
                out.add_event(event)
            if staging is not None:     # the page-locked memory is the next call's once they are done
                cl.wait_for_events(uploads)
            return out
        download(queue, operands[-1], buffers[-1], out, None if staging is None else staging[-1])
        done = True        # the download waited for every command before it on the in-order queue
        return out
    finally:
        for st, buf in zip(operands, buffers):
            if st.buffer is None and done:
                ctx.buffers.give(buf)
            elif st.buffer is None:
                buf.release()      # freed once the commands using it are done


def staged_uploads(queue: cl.CommandQueue, staged: Sequence[tuple[cl.Buffer, np.ndarray, np.ndarray]]
                    ) -> list[cl.Event]:
    """Copy each ``(buffer, memory, array)``'s array to its buffer through its page-locked bytes ``memory``:
    in parts of rows (one for each copying thread, ``PART_BYTES`` to ``PIPELINE_BYTES``), each copied by
    one of the host's copy threads and its upload enqueued as soon as it is there, while the other threads
    copy theirs. Parts are few because each costs the threads about 0.1 ms to hand over (on the H100's
    host, 8 MiB took 0.84 ms in 8 parts and 3.1 ms in 32; 128 MiB reached 20 GB/s with the uploads, the
    driver's own copies of pageable memory 7 to 10 GB/s). The uploads' events."""
    total = sum(array.nbytes for _, _, array in staged)
    part_bytes = max(PART_BYTES, min(PIPELINE_BYTES, total // COPY_THREADS))
    parts = []
    for buffer, memory, array in staged:
        held = memory[:array.nbytes].view(array.dtype).reshape(array.shape)
        row_bytes = max(1, array.nbytes // max(1, len(array)))
        rows = max(1, part_bytes // row_bytes)
        parts += [functools.partial(_send, queue, buffer, held[start:start + rows], array[start:start + rows],
                                    start * row_bytes) for start in range(0, len(array), rows)]
    return in_parallel(parts)


def _send(queue: cl.CommandQueue, buffer: cl.Buffer, held: np.ndarray, part: np.ndarray, offset: int) -> cl.Event:
    """Copy ``part`` into the page-locked ``held`` and enqueue its upload to ``buffer`` at ``offset``."""
    copy_into(held, part)
    return cl.enqueue_copy(queue, buffer, held, dst_offset=offset, is_blocking=False)


def download(queue: cl.CommandQueue, st: Stored, buffer: cl.Buffer, out: np.ndarray,
             staging: np.ndarray | None = None) -> None:
    """Read a result's storage back into ``out``: through the page-locked bytes ``staging`` where given,
    else straight into its memory when it is dense and row-major."""
    dense = out.flags.c_contiguous and not st.flipped and st.elements == out.size
    if dense and staging is None:
        cl.enqueue_copy(queue, out.reshape(-1), buffer)
        return
    result = (np.empty(max(st.elements, 1), dtype=out.dtype) if staging is None
              else staging[:max(st.elements, 1) * out.itemsize].view(out.dtype))
    cl.enqueue_copy(queue, result, buffer)
    if dense:
        parallel_copy(out.reshape(-1), result[:out.size])
        return
    size = out.itemsize
    view = np.lib.stride_tricks.as_strided(result, shape=(st.layers, st.rows, st.cols),
                                           strides=(st.stride * size, st.ld * size, size))
    out[...] = (view.transpose(0, 2, 1) if st.flipped else view).reshape(out.shape)
