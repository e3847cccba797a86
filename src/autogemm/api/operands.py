"""The operands of a public call as the plans see them: row-major storage in a buffer, with a leading
dimension and an element offset, whether they come as numpy arrays (uploaded) or as ``pyopencl`` arrays
(used where they lie, on their own queue)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..errors import ArgumentError, ShapeError
from ..runtime import Device, DeviceContext, context_for, context_for_queue, find_device

Matrix = np.ndarray | cl_array.Array


def on_device(value: object) -> bool:
    return isinstance(value, cl_array.Array)


@dataclass(frozen=True)
class Stored:
    """A 2-D operand seen as row-major storage: ``rows`` x ``cols`` with leading dimension ``ld`` from
    element ``offset`` of its memory. ``flipped`` is True when the array is column-major, i.e. the
    row-major storage of its transpose. The memory is ``span`` (host: a 1-D view from the first element
    to the last, uploaded before use) or ``buffer`` (device)."""

    ld: int
    flipped: bool
    rows: int
    cols: int
    offset: int = 0
    span: np.ndarray | None = None
    buffer: cl.Buffer | None = None

    @property
    def elements(self) -> int:
        """Elements from the first to the last of the storage."""
        return (self.rows - 1) * self.ld + self.cols if self.rows and self.cols else 0


def _layout(shape: tuple[int, int], strides: tuple[int, int], itemsize: int) -> tuple[int, bool] | None:
    """(ld, flipped) of a 2-D array of these byte strides, or None when it is neither row- nor
    column-major with unit stride along one axis."""
    rows, cols = shape
    s0, s1 = strides
    if not rows or not cols:
        return max(cols, 1), False
    if (s1 == itemsize or cols == 1) and s0 % itemsize == 0 and s0 >= cols * itemsize:
        return s0 // itemsize, False
    if (s0 == itemsize or rows == 1) and s1 % itemsize == 0 and s1 >= rows * itemsize:
        return s1 // itemsize, True
    return None


def stored(arr: Matrix, name: str) -> Stored:
    """The row-major storage of ``arr``: a host array in place where its strides allow (else a dense
    copy); a device array in place, or ``ShapeError`` when its strides do not allow it."""
    rows, cols = arr.shape
    layout = _layout(arr.shape, arr.strides, arr.dtype.itemsize)
    if on_device(arr):
        if layout is None:
            raise ShapeError(f"{name}: a device array with strides {arr.strides} is neither row- nor column-major; "
                             f"pass a contiguous one")
        ld, flipped = layout
        shape = (cols, rows) if flipped else (rows, cols)
        if arr.base_data is None:          # pyopencl gives an empty array no buffer: the kernels get a stand-in
            return Stored(ld, flipped, *shape, span=np.empty(0, arr.dtype))
        return Stored(ld, flipped, *shape, offset=arr.offset // arr.dtype.itemsize, buffer=arr.base_data)
    if layout is None:
        arr = np.ascontiguousarray(arr)
        ld, flipped = max(cols, 1), False
    else:
        ld, flipped = layout
    st = Stored(ld, flipped, *((cols, rows) if flipped else (rows, cols)))
    span = np.lib.stride_tricks.as_strided(arr, shape=(st.elements,), strides=(arr.itemsize,), writeable=False)
    return replace(st, span=span)


def as_array(value: object, name: str) -> Matrix:
    """``value`` if it is a numpy or pyopencl array, else ``ArgumentError``."""
    if not isinstance(value, (np.ndarray, cl_array.Array)):
        raise ArgumentError(f"{name} must be a numpy or pyopencl array, not {type(value).__name__}")
    return value


def as_matrix(value: object, name: str) -> Matrix:
    """``value`` if it is a 2-D numpy or pyopencl array, else ``ArgumentError``/``ShapeError``."""
    value = as_array(value, name)
    if value.ndim != 2:
        raise ShapeError(f"{name} must be 2-D, not {value.ndim}-D with shape {value.shape}")
    return value


def call_context(device: Device | str | int | None, named: dict[str, object]) -> DeviceContext:
    """Where a call runs: on the queue of its device arrays (all of one context, and of ``device`` when
    one is named too), else on ``device``'s own context."""
    arrays = {name: value for name, value in named.items() if on_device(value)}
    if not arrays:
        return context_for(device)
    (first, array), *others = arrays.items()
    for name, other in others:
        if other.context != array.context:
            raise ArgumentError(f"{name} and {first} are device arrays of different OpenCL contexts")
    ctx = context_for_queue(array.queue)
    if device is not None and find_device(device).cl_device != ctx.device.cl_device:
        raise ArgumentError(f"device={device!r} is not the device {first} lies on ({ctx.device.name.strip()})")
    return ctx


def events_of(values: list[object]) -> list[cl.Event]:
    """The pending events of the device arrays among ``values`` (what must finish before they are read
    or written)."""
    return [event for value in values if on_device(value) for event in value.events]
