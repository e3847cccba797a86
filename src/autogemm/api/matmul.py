"""``matmul``: numpy's ``matmul`` (the ``@`` operator) on the device, for 1-D, 2-D and stacked operands."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..errors import ArgumentError, ShapeError
from ..runtime import Device
from .gemm import gemm
from .operands import as_array, call_context, events_of, on_device


def _array(value: object, name: str):
    value = as_array(value, name)
    if value.ndim == 0:
        raise ShapeError(f"{name} is a scalar; matmul needs at least one dimension")
    return value


def matmul(a, b, *, out=None, device: Device | str | int | None = None, precision: str | None = None,
           wait_for: list[cl.Event] | None = None):
    """``a @ b`` with numpy's rules: 2-D operands are matrices; a 1-D ``a`` is a row and a 1-D ``b`` a
    column, whose dimension is dropped from the result; operands of more dimensions are stacks of
    matrices in their last two, and the stack dimensions broadcast against each other.

    Operands are numpy or pyopencl arrays as for ``gemm`` (same dtypes; both of one dtype): with a device
    array among them the products are enqueued on its queue and the result is a device array whose
    ``events`` say when it is done. ``out`` receives the result when given (of the result's shape and
    dtype). A stack is computed as one product per matrix, each on a plan kept between calls.
    """
    a, b = _array(a, "a"), _array(b, "b")
    a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ShapeError(f"a has {a2.shape[-1]} columns but b has {b2.shape[-2]} rows (shapes {a.shape} and {b.shape})")
    try:
        stack = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ShapeError(f"the stack dimensions of a {a.shape} and b {b.shape} do not broadcast") from None
    m, n = a2.shape[-2], b2.shape[-1]
    shape = stack + (m, n)
    final = shape[:-2] + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    if out is not None:
        if not isinstance(out, (np.ndarray, cl_array.Array)) or out.shape != final:
            raise ShapeError(f"out must be an array of shape {final}, not {getattr(out, 'shape', type(out).__name__)}")
        if out.dtype != a.dtype:
            raise ArgumentError(f"out is {out.dtype} but the result is {a.dtype}")
    ctx = call_context(device, {"a": a, "b": b, "out": out})
    asynchronous = any(on_device(x) for x in (a, b, out))
    if out is None:
        out = cl_array.empty(ctx.queue, final, a.dtype) if asynchronous else np.empty(final, a.dtype)
    target = out.reshape(shape)            # a copy only for a host out that no view can reshape
    pending = events_of([a, b, out]) + list(wait_for or [])
    done = None
    for index in np.ndindex(*stack):
        operands = (a2[_within(index, a2.shape[:-2])], b2[_within(index, b2.shape[:-2])]) if stack else (a2, b2)
        c = gemm(*operands, target[index] if stack else target, device=device, precision=precision,
                 wait_for=pending if asynchronous else None)
        pending = []      # the queue is in order: each product follows the one before
        done = c.events[-1] if on_device(c) and c.events else done
    if on_device(out) and done is not None:
        out.add_event(done)
    elif isinstance(out, np.ndarray) and not np.shares_memory(target, out):
        out[...] = target.reshape(final)
    return out


def _within(index: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    """The operand's own index for stack ``index``: right-aligned, 0 along the dimensions it broadcasts."""
    own = index[len(index) - len(dims):]
    return tuple(i if d != 1 else 0 for i, d in zip(own, dims))
