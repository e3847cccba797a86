"""The transpose's call below ``autogemm.transpose``: validated once, its host operands through the
transfer machinery (``transfer``)."""

from __future__ import annotations

import numpy as np

from ..blas.transpose import Storage, enqueue_transpose
from ..dtypes import get_dtype
from ..errors import ArgumentError, DtypeError, ShapeError
from ..profiles import thresholds_for
from ..runtime import Device
from ..runtime.opencl import commands as ocl
from ..shares.staging import host_result
from .operands import Matrix, Stored, as_array, call_context, event_list, events_of, on_device, stored
from .transfer import one_block, run_blocks


def run_transpose(a: Matrix, out: Matrix | None, *, conjugate: bool, device: Device | str | int | None,
                  wait_for: list[ocl.Event] | None) -> Matrix:
    """``autogemm.transpose``'s call: every argument checked before anything is enqueued, then the
    transpose enqueued on device arrays or run on host ones."""
    a = as_array(a, "a")
    if a.ndim not in (2, 3):
        raise ShapeError(f"a must be a matrix or a stack of matrices (2-D or 3-D), not {a.ndim}-D")
    if not isinstance(conjugate, bool):
        raise ArgumentError(f"conjugate must be True or False, not {conjugate!r}")
    dt = get_dtype(a.dtype)
    shape = a.shape[:-2] + a.shape[:-3:-1]
    sa = stored(a, "a")
    if out is not None:
        out = as_array(out, "out")
        if out.shape != shape:
            raise ShapeError(f"out has shape {out.shape}; the transpose of a {a.shape} array is {shape}")
        if out.dtype != a.dtype:
            raise DtypeError(f"a is {a.dtype} but out is {out.dtype}")
        if isinstance(out, np.ndarray) and not out.flags.writeable:
            raise ArgumentError("out is read-only")
        if _overlap(a, sa, out):
            raise ArgumentError("out overlaps a: the transpose is out of place")
    wait_for = event_list(wait_for)
    ctx = call_context(device, {"a": a, "out": out})
    limits = thresholds_for(ctx.device)
    asynchronous = on_device(a) or on_device(out)
    if wait_for and not asynchronous:
        raise ArgumentError("wait_for is for calls on device arrays; numpy operands are read when the call is made")
    if out is None:
        out = (ocl.empty_array(ctx.queue, shape, dt.numpy) if asynchronous
               else host_result(ctx, shape, dt.numpy, limits))
    if not all(shape):
        return out
    so = stored(out, "out")
    # the storages are each other's transposes unless exactly one of them is column-major
    flip = sa.flipped == so.flipped

    def enqueue(buffers: list[ocl.Buffer], events: list[ocl.Event]) -> list[ocl.Event]:
        src, dst = (Storage(buf, st.offset, st.ld, st.stride) for buf, st in zip(buffers, (sa, so)))
        return [enqueue_transpose(ctx, dt, so.rows, so.cols, so.layers, src, dst, flip, conjugate, events)]

    return run_blocks(ctx, (sa, so), (True, False), out, [], one_block((sa, so), enqueue),
                      events_of([a, out], ctx.queue) + wait_for, limits)


def _overlap(a: Matrix, sa: Stored, out: Matrix) -> bool:
    """True when ``a`` (stored as ``sa``) and ``out`` share memory (for device arrays: byte ranges of one
    buffer meet)."""
    if on_device(a) != on_device(out):
        return False
    if not on_device(a):
        return np.may_share_memory(a, out)
    if a.base_data is None or a.base_data != out.base_data:
        return False
    itemsize = a.dtype.itemsize
    a0, b0 = a.offset, out.offset
    a1, b1 = a0 + sa.elements * itemsize, b0 + stored(out, "out").elements * itemsize
    return a0 < b1 and b0 < a1
