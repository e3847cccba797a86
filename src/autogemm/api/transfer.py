"""Running a routine's launches on a call's operands: upload what lives on the host, enqueue, bring a host
result back; a device result gets the events to wait on instead. Shared by every high-level call."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyopencl as cl

from ..runtime import DeviceContext
from ..runtime.memory import check_memory
from .operands import Matrix, Stored, on_device

Enqueue = Callable[[list[cl.Buffer], list[cl.Event]], list[cl.Event]]


def execute(ctx: DeviceContext, operands: Sequence[Stored], needed: Sequence[bool], out: Matrix,
            temporaries: Sequence[int], enqueue: Enqueue, wait_for: list[cl.Event]) -> Matrix:
    """Give each operand a buffer (its own on the device; a host one uploaded where ``needed``: an output
    that is only written is not), call ``enqueue(buffers, events to wait for)`` and, for a host ``out``,
    download the last operand (the result's storage) into it; a device ``out`` gets the uploads' events
    and the last launch's. ``temporaries`` are the bytes the launches still have to allocate, for the
    memory check made before anything is enqueued."""
    mf, queue = cl.mem_flags, ctx.queue
    check_memory(ctx, [st.span.nbytes for st in operands if st.buffer is None] + list(temporaries))
    buffers, uploads = [], []
    try:
        for st, need in zip(operands, needed):
            if st.buffer is not None:
                buffers.append(st.buffer)
                continue
            buffers.append(cl.Buffer(ctx.context, mf.READ_WRITE, max(st.span.nbytes, st.span.itemsize)))
            if need and st.span.size:
                # the event keeps the host memory alive until the copy is done
                uploads.append(cl.enqueue_copy(queue, buffers[-1], np.ascontiguousarray(st.span), is_blocking=False))
        events = enqueue(buffers, wait_for + uploads)
        if on_device(out):
            for event in uploads + events[-1:]:
                out.add_event(event)
            return out
        download(queue, operands[-1], buffers[-1], out)
        return out
    finally:
        for st, buf in zip(operands, buffers):
            if st.buffer is None:
                buf.release()      # freed once the commands using it are done


def download(queue: cl.CommandQueue, st: Stored, buffer: cl.Buffer, out: np.ndarray) -> None:
    """Read a result's storage back into ``out``: straight into its memory when it is dense and row-major."""
    if out.flags.c_contiguous and not st.flipped and st.elements == out.size:
        cl.enqueue_copy(queue, out.reshape(-1), buffer)
        return
    result = np.empty(max(st.elements, 1), dtype=out.dtype)
    cl.enqueue_copy(queue, result, buffer)
    size = out.itemsize
    view = np.lib.stride_tricks.as_strided(result, shape=(st.layers, st.rows, st.cols),
                                           strides=(st.stride * size, st.ld * size, size))
    out[...] = (view.transpose(0, 2, 1) if st.flipped else view).reshape(out.shape)
