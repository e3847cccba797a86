"""The operands of a public call as the plans see them: row-major storage in a buffer, with a leading
dimension and an element offset, whether they come as numpy arrays (uploaded) or as ``pyopencl`` arrays
(used where they lie, on their own queue)."""

from __future__ import annotations

import numbers
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from ..dtypes import Dtype
from ..errors import ArgumentError, DtypeError, ShapeError
from ..runtime import Device, DeviceContext, context_for, context_for_queue, find_device
from ..runtime.opencl import commands as ocl

Matrix = np.ndarray | ocl.DeviceArray


def on_device(value: object) -> bool:
    return isinstance(value, ocl.DeviceArray)


class Stored(NamedTuple):
    """A matrix operand seen as row-major storage: ``rows`` x ``cols`` with leading dimension ``ld`` from
    element ``offset`` of its memory; a stack of ``layers`` such matrices ``stride`` elements apart
    (0: one matrix stands for all). ``flipped`` is True when the matrices are column-major, i.e. the
    row-major storage of their transposes. The memory is ``span`` (host: a 1-D view from the first
    element to the last, uploaded before use) or ``buffer`` (device). (A named tuple: made three times
    per call, it must cost little.)"""

    ld: int
    flipped: bool
    rows: int
    cols: int
    layers: int = 1
    stride: int = 0
    offset: int = 0
    span: np.ndarray | None = None
    buffer: ocl.Buffer | None = None

    @property
    def elements(self) -> int:
        """Elements from the first to the last of the storage (``placed`` counts them as this does)."""
        if not (self.rows and self.cols and self.layers):
            return 0
        return (self.layers - 1) * self.stride + (self.rows - 1) * self.ld + self.cols


def layout_of(shape: tuple[int, int], strides: tuple[int, int], itemsize: int) -> tuple[int, bool] | None:
    """(ld, flipped) of a 2-D array of these strides (in bytes, or in elements with ``itemsize`` 1), or
    None when it is neither row- nor column-major with unit stride along one axis. The stride of an axis
    of length 1 is never stepped: numpy calls such a view contiguous whatever it is (negative, zero), so
    it counts as a dense one."""
    rows, cols = shape
    s0, s1 = strides
    if not rows or not cols:
        return max(cols, 1), False
    if cols == 1:
        s1 = itemsize
    if rows == 1:
        s0 = cols * itemsize if s1 == itemsize else itemsize
    if (s1 == itemsize or cols == 1) and s0 % itemsize == 0 and s0 >= cols * itemsize:
        return s0 // itemsize, False
    if (s0 == itemsize or rows == 1) and s1 % itemsize == 0 and s1 >= rows * itemsize:
        return s1 // itemsize, True
    return None


def storage_layout(arr: Matrix) -> tuple[int, bool, int, int, int, int] | None:
    """(ld, flipped, rows, cols, layers, stride) of the row-major storage of a 2-D array or a 3-D stack
    of matrices (its first dimension), or None when the strides do not allow one (not row- nor
    column-major matrices, a negative or partial-element stride)."""
    itemsize = arr.dtype.itemsize
    rows, cols = arr.shape[-2:]
    layers = arr.shape[0] if arr.ndim == 3 else 1
    if arr.size == 0:                      # numpy gives an empty array zero strides
        return max(cols, 1), False, rows, cols, layers, 0
    layout = layout_of(arr.shape[-2:], arr.strides[-2:], itemsize)
    stride = arr.strides[0] if layers > 1 else 0        # (one matrix's stride is never stepped)
    if layout is None or stride < 0 or stride % itemsize:
        return None
    ld, flipped = layout
    if flipped:
        rows, cols = cols, rows
    return ld, flipped, rows, cols, layers, stride // itemsize if layers > 1 else 0


def stored(arr: Matrix, name: str) -> Stored:
    """The row-major storage of ``arr`` (a matrix, or a stack of them along its first dimension): a host
    array in place where its strides allow (else a dense copy); a device array in place, or
    ``ShapeError`` when its strides do not allow it."""
    found = storage_layout(arr)
    if on_device(arr):
        if found is None:
            raise ShapeError(f"{name}: a device array with strides {arr.strides} does not hold row- or column-major "
                             f"matrices; pass a contiguous one")
        return placed(arr, found)
    if found is None:
        arr = np.ascontiguousarray(arr)
        found = storage_layout(arr)
    return placed(arr, found)


def stored_vector(arr: Matrix, name: str) -> Stored:
    """The storage of a 1-D ``arr`` as a column (``rows`` its length, ``ld`` its increment): a host array
    in place where its stride is a positive whole number of elements (else a dense copy); a device array
    in place, or ``ShapeError``."""
    length, stride, itemsize = arr.shape[0], arr.strides[0], arr.dtype.itemsize
    if length <= 1 or (stride > 0 and stride % itemsize == 0):
        return placed(arr, (stride // itemsize if length > 1 else 1, False, length, 1, 1, 0))
    if on_device(arr):
        raise ShapeError(f"{name}: a device vector with stride {stride} bytes is not a positive whole number of "
                         f"elements apart; pass a contiguous one")
    return stored_vector(np.ascontiguousarray(arr), name)


def placed(arr: Matrix, layout: tuple[int, bool, int, int, int, int]) -> Stored:
    """The ``Stored`` of ``layout`` (ld, flipped, rows, cols, layers, stride) with the memory of ``arr``: its
    buffer and offset on the device, or a 1-D view of the host memory it covers (made once: calls make
    three per product)."""
    if on_device(arr):
        if arr.base_data is None:          # pyopencl gives an empty array no buffer: the kernels get a stand-in
            return Stored(*layout, span=np.empty(0, arr.dtype))
        return Stored(*layout, offset=arr.offset // arr.dtype.itemsize, buffer=arr.base_data)
    ld, _, rows, cols, layers, stride = layout
    elements = (layers - 1) * stride + (rows - 1) * ld + cols if rows and cols and layers else 0
    flags = arr.flags
    if elements == arr.size and (flags.c_contiguous or flags.f_contiguous):
        span = arr.ravel("K")              # its elements in memory order, a view (a quarter of as_strided's time)
        span.flags.writeable = False
    else:
        span = np.lib.stride_tricks.as_strided(arr, shape=(elements,), strides=(arr.itemsize,), writeable=False)
    return Stored(*layout, span=span)


def scalar(value: object, name: str, dt: Dtype) -> complex | float:
    """``value`` as the Python number a kernel argument of ``dt`` is made from; ``ArgumentError`` for a
    non-number, ``DtypeError`` for a complex one with real matrices."""
    kind = type(value)
    if kind is float or kind is int:        # the common case, without the costlier checks below
        return complex(value) if dt.is_complex else float(value)
    if kind is bool or not isinstance(value, numbers.Number):
        raise ArgumentError(f"{name} must be a number, not {value!r}")
    if not dt.is_complex and isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if complex(value).imag != 0:
            raise DtypeError(f"{name}={value!r} is complex but the matrices are real ({dt.numpy})")
        value = complex(value).real
    return complex(value) if dt.is_complex else float(value)  # type: ignore[arg-type]


def as_array(value: object, name: str) -> Matrix:
    """``value`` if it is a numpy or pyopencl array, else ``ArgumentError``."""
    if not isinstance(value, (np.ndarray, ocl.DeviceArray)):
        raise ArgumentError(f"{name} must be a numpy or pyopencl array, not {type(value).__name__}")
    return value


def as_matrix(value: object, name: str, for_vectors: str = "", for_stacks: str = "") -> Matrix:
    """``value`` if it is a 2-D numpy or pyopencl array, else ``ArgumentError``/``ShapeError`` (naming
    the call that takes a vector, ``for_vectors``, or a stack of matrices, ``for_stacks``, where given)."""
    value = as_array(value, name)
    if value.ndim != 2:
        instead = for_vectors if value.ndim < 2 else for_stacks
        raise ShapeError(f"{name} must be 2-D, not {value.ndim}-D with shape {value.shape}"
                         + (f"; {instead}" if instead else ""))
    return value


def call_context(device: Device | str | int | None, named: dict[str, object]) -> DeviceContext:
    """Where a call runs: on the queue of its device arrays (all of one context, and of ``device`` when
    one is named too), else on the context of ``device``'s calls on host arrays (``for_calls``)."""
    arrays = {name: value for name, value in named.items() if on_device(value)}
    if not arrays:
        return context_for(device).for_calls
    (first, array), *others = arrays.items()
    for name, other in others:
        if other.context != array.context:
            raise ArgumentError(f"{name} and {first} are device arrays of different OpenCL contexts")
    ctx = context_for_queue(array.queue)
    if device is not None and find_device(device).cl_device != ctx.device.cl_device:
        raise ArgumentError(f"device={device!r} is not the device {first} lies on ({ctx.device.name.strip()})")
    return ctx


def event_list(wait_for: object) -> list[ocl.Event]:
    """``wait_for`` (None or a list or tuple of pyopencl events) as a list; ``ArgumentError`` otherwise."""
    if wait_for is None:
        return []
    if not isinstance(wait_for, (list, tuple)) or not all(isinstance(e, ocl.Event) for e in wait_for):
        raise ArgumentError("wait_for must be a list of pyopencl events")
    return list(wait_for)


def events_of(values: list[object], queue: ocl.Queue) -> list[ocl.Event]:
    """The pending events of the device arrays among ``values`` (what must finish before they are read
    or written) that ``queue`` does not order by itself: those enqueued on other queues, and user events
    (an in-order queue runs its commands one after the other; waiting on its own events only costs time).
    An array's events may come from any queue: a call on the queue of its first device operand adds its
    last event to C, which may lie on another."""
    handle = queue.int_ptr
    return [event for value in values if isinstance(value, ocl.DeviceArray) for event in value.events
            if _queue_of(event) != handle]


#: The handle of the queue of each event recently asked about, by the event's id (the event held with it,
#: so that its id is no other's meanwhile): asking the driver costs every call on device arrays, whose
#: events stay with them, and an event's queue never changes.
_QUEUES: OrderedDict[int, tuple[ocl.Event, int | None]] = OrderedDict()
QUEUES_KEPT = 256


def _queue_of(event: ocl.Event) -> int | None:
    """The handle of ``event``'s command queue (None for a user event), asked of the driver once."""
    found = _QUEUES.get(id(event))
    if found is not None and found[0] is event:
        return found[1]
    queue = event.command_queue
    return _noted(event, None if queue is None else queue.int_ptr)


def hand_events(out: ocl.DeviceArray, events: list[ocl.Event], queue: ocl.Queue) -> None:
    """Add ``events``, enqueued on ``queue``, to ``out``'s pending events, their queue noted: the next call
    on ``out`` finds it without asking the driver (which makes a queue object for the answer and releases
    it, on every call of a loop that writes one C)."""
    handle = queue.int_ptr
    for event in events:
        out.add_event(event)
        _noted(event, handle)


def _noted(event: ocl.Event, handle: int | None) -> int | None:
    _QUEUES[id(event)] = (event, handle)
    while len(_QUEUES) > QUEUES_KEPT:
        _QUEUES.popitem(last=False)
    return handle
