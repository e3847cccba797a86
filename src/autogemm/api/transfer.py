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

import math
from collections.abc import Callable, Sequence

import numpy as np
import pyopencl as cl

from ..runtime import DeviceContext
from ..runtime.memory import check_memory
from ..shares.staging import page_locked, parallel_copy, result_pool
from .operands import Matrix, Stored, on_device

Enqueue = Callable[[list[cl.Buffer], list[cl.Event]], list[cl.Event]]

#: A call whose host operands and result take from ``PINNED_MIN_BYTES`` to ``PINNED_BYTES`` crosses
#: through page-locked memory (kept between calls, so a process holds as much as its largest such call).
#: A smaller one copies from its arrays as they are: on the H100, numpy to numpy SGEMM 1024^3 took 2.0 ms
#: so and 3.5 ms through page-locked memory (3.1 ms with every core copying), 2048^3 7.8 ms and 5.5 ms,
#: DGEMM 2048^3 20.7 ms and 8.4 ms. A larger one too (a GEMM that large streams:
#: ``api.gemm.STREAM_BYTES``). A new result from ``RESULT_MIN_BYTES`` on is page-locked memory itself.
PINNED_MIN_BYTES, PINNED_BYTES, RESULT_MIN_BYTES = 32 * 2**20, 256 * 2**20, 2**20
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
    with lock:              # held until the result is read back: the next call reuses the memory
        staging = [memory[start:] for start in places[:-2]] + [None if out_locked else memory[places[-2]:]]
        return _execute(ctx, operands, needed, out, enqueue, wait_for, staging)


def host_result(ctx: DeviceContext, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A new host array for a call's result: page-locked memory of the device's ``ResultPool`` where the
    result takes ``RESULT_MIN_BYTES`` to ``PINNED_BYTES`` and the device has memory of its own (else, or once the pool
    is full, an ordinary array)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if RESULT_MIN_BYTES <= nbytes <= PINNED_BYTES and not ctx.device.shares_host_memory:
        found = result_pool(ctx).take(shape, dtype)
        if found is not None:
            return found
    return np.empty(shape, dtype)


def _places(operands: Sequence[Stored], needed: Sequence[bool], out: Matrix, out_locked: bool
            ) -> list[int] | None:
    """Where each operand lies in the page-locked memory of a numpy-in, numpy-out call (the result last,
    and the bytes needed after them; none for a result that is page-locked memory already,
    ``out_locked``); None for a call with a device result, or outside ``PINNED_MIN_BYTES`` to
    ``PINNED_BYTES``."""
    if on_device(out) or any(st.buffer is not None for st in operands):
        return None
    places, end, total = [], 0, 0
    for st, need in zip(operands, needed):
        places.append(end)
        if st is operands[-1]:
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
    None for the result where it is page-locked itself) where given, else from their arrays."""
    mf, queue = cl.mem_flags, ctx.queue
    buffers, uploads = [], []
    try:
        for i, (st, need) in enumerate(zip(operands, needed)):
            if st.buffer is not None:
                buffers.append(st.buffer)
                continue
            buffers.append(cl.Buffer(ctx.context, mf.READ_WRITE, max(st.span.nbytes, st.span.itemsize)))
            place = None if staging is None else staging[i]
            if need and st.span.size and place is None:
                # the event keeps the host memory alive until the copy is done
                uploads.append(cl.enqueue_copy(queue, buffers[-1], np.ascontiguousarray(st.span), is_blocking=False))
            elif need and st.span.size:
                uploads += _staged_upload(queue, buffers[-1], place, st.span)
        events = enqueue(buffers, wait_for + uploads)
        if on_device(out):
            for event in uploads + events[-1:]:
                out.add_event(event)
            return out
        download(queue, operands[-1], buffers[-1], out, None if staging is None else staging[-1])
        return out
    finally:
        for st, buf in zip(operands, buffers):
            if st.buffer is None:
                buf.release()      # freed once the commands using it are done


def _staged_upload(queue: cl.CommandQueue, buffer: cl.Buffer, memory: np.ndarray, array: np.ndarray
                   ) -> list[cl.Event]:
    """Copy ``array`` to ``buffer`` through the page-locked bytes ``memory``, in parts of rows of at most
    ``PIPELINE_BYTES``: host threads copy each part there and its upload is enqueued at once, while they
    copy the next. The uploads' events."""
    staged = memory[:array.nbytes].view(array.dtype).reshape(array.shape)
    row_bytes = max(1, array.nbytes // max(1, len(array)))
    rows = max(1, PIPELINE_BYTES // row_bytes)
    events = []
    for start in range(0, len(array), rows):
        part = staged[start:start + rows]
        parallel_copy(part, array[start:start + rows])
        events.append(cl.enqueue_copy(queue, buffer, part, dst_offset=start * row_bytes, is_blocking=False))
    return events


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
