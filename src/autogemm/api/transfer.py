"""Running a routine's launches on a call's operands: upload what lives on the host, enqueue, bring a host
result back; a device result gets the events to wait on instead. Shared by every high-level call.

numpy in, numpy out, the host's arrays cross through page-locked memory kept between calls
(``shares.staging.page_locked``), as torch's users copy with ``pin_memory``: the device's DMA engines
read and write page-locked memory at several times the rate of pageable memory, which the driver
copies through a small staging area of its own (on the H100, SGEMM 4096^3 took 50 ms from numpy to
numpy through pageable copies, 9 ms in torch through page-locked ones)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyopencl as cl

from ..runtime import DeviceContext
from ..runtime.memory import check_memory
from ..shares.staging import page_locked, parallel_copy
from .operands import Matrix, Stored, on_device

Enqueue = Callable[[list[cl.Buffer], list[cl.Event]], list[cl.Event]]

#: A call whose host operands and result take from ``PINNED_MIN_BYTES`` to ``PINNED_BYTES`` crosses
#: through page-locked memory (kept between calls, so a process holds as much as its largest such call).
#: A smaller one copies from its arrays as they are: on the H100, numpy to numpy SGEMM 1024^3 took 2.0 ms
#: so and 3.5 ms through page-locked memory, 2048^3 7.8 ms and 5.5 ms, DGEMM 2048^3 20.7 ms and 8.4 ms.
#: A larger one too (a GEMM that large streams: ``api.gemm.STREAM_BYTES``).
PINNED_MIN_BYTES, PINNED_BYTES = 32 * 2**20, 256 * 2**20
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
    places = _places(operands, needed, out)
    if places is None:
        return _execute(ctx, operands, needed, out, enqueue, wait_for, None)
    lock, memory = page_locked(ctx, places[-1])
    with lock:              # held until the result is read back: the next call reuses the memory
        return _execute(ctx, operands, needed, out, enqueue, wait_for,
                        [memory[start:] for start in places[:-1]])


def _places(operands: Sequence[Stored], needed: Sequence[bool], out: Matrix) -> list[int] | None:
    """Where each operand lies in the page-locked memory of a numpy-in, numpy-out call (the result last,
    and the bytes needed after them); None for a call with a device result, or outside ``PINNED_MIN_BYTES``
    to ``PINNED_BYTES``."""
    if on_device(out) or any(st.buffer is not None for st in operands):
        return None
    places, end = [], 0
    for st, need in zip(operands, needed):
        places.append(end)
        size = st.elements * st.span.itemsize if st is operands[-1] else (st.span.nbytes if need else 0)
        end += -(-size // PINNED_ALIGNMENT) * PINNED_ALIGNMENT
    return places + [end] if PINNED_MIN_BYTES <= end <= PINNED_BYTES else None


def _execute(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix,
             enqueue: Enqueue, wait_for: list[cl.Event], staging: list[np.ndarray] | None) -> Matrix:
    """``execute``, host operands copied from ``staging`` (page-locked memory, one place per operand)
    where given, else from their arrays."""
    mf, queue = cl.mem_flags, ctx.queue
    buffers, uploads = [], []
    try:
        for i, (st, need) in enumerate(zip(operands, needed)):
            if st.buffer is not None:
                buffers.append(st.buffer)
                continue
            buffers.append(cl.Buffer(ctx.context, mf.READ_WRITE, max(st.span.nbytes, st.span.itemsize)))
            if need and st.span.size:
                source = np.ascontiguousarray(st.span) if staging is None else _staged(staging[i], st.span)
                # the event keeps the host memory alive until the copy is done
                uploads.append(cl.enqueue_copy(queue, buffers[-1], source, is_blocking=False))
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


def _staged(memory: np.ndarray, array: np.ndarray) -> np.ndarray:
    """``array`` copied into the page-locked bytes ``memory`` (host threads), as an array there."""
    staged = memory[:array.nbytes].view(array.dtype).reshape(array.shape)
    parallel_copy(staged, array)
    return staged


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
