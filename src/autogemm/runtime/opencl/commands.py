"""The OpenCL objects and commands the layers above this backend use, each by one name: the seam through
which they reach OpenCL, so that ``pyopencl`` is imported nowhere outside ``runtime.opencl``.

Commands are enqueued on an in-order queue and return their event; the buffers made here are the few
kinds the package needs (device memory, a copy of a host array, a host array lent to the device,
page-locked host memory mapped for the host, a read-only image)."""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

Event = cl.Event
Buffer = cl.Buffer
Image = cl.Image
Kernel = cl.Kernel
Queue = cl.CommandQueue
Context = cl.Context
#: A pyopencl array: the device operand a program hands the high-level calls.
DeviceArray = cl_array.Array
#: What the OpenCL driver raises.
OpenCLError = cl.Error

#: Copy between host arrays, buffers and images (``pyopencl.enqueue_copy``'s arguments).
copy = cl.enqueue_copy
#: Launch a kernel whose arguments are set on a global (and local) grid.
launch = cl.enqueue_nd_range_kernel
#: An event complete once what the queue holds (or ``wait_for``) is.
marker = cl.enqueue_marker
#: Block until every event given is complete.
wait = cl.wait_for_events
#: A device array of a host array's contents, copied on ``queue``.
to_device = cl_array.to_device


def device_buffer(context: Context, nbytes: int) -> Buffer:
    """``nbytes`` of device memory for reading and writing (one byte at least: OpenCL refuses none)."""
    return cl.Buffer(context, cl.mem_flags.READ_WRITE, max(nbytes, 1))


def buffer_of(context: Context, host: np.ndarray, read_only: bool = False) -> Buffer:
    """Device memory holding a copy of the contiguous ``host`` array, made now."""
    return _host_buffer(context, host, read_only, cl.mem_flags.COPY_HOST_PTR)


def buffer_over(context: Context, host: np.ndarray, read_only: bool = False) -> Buffer:
    """A buffer that is ``host``'s own memory lent to the device (a device that shares the host's memory
    reads and writes it in place; see ``map_for_reading`` to see what it wrote)."""
    return _host_buffer(context, host, read_only, cl.mem_flags.USE_HOST_PTR)


def _host_buffer(context: Context, host: np.ndarray, read_only: bool, how: int) -> Buffer:
    """A buffer made from ``host`` as ``how`` says (copied, or lent), read-only or not."""
    access = cl.mem_flags.READ_ONLY if read_only else cl.mem_flags.READ_WRITE
    return cl.Buffer(context, access | how, hostbuf=host)


def map_for_reading(queue: Queue, buffer: Buffer, shape: tuple[int, ...], dtype: np.dtype,
                    wait_for: Sequence[Event] | None = None) -> None:
    """Map ``buffer`` (lent by a host array) for reading once ``wait_for`` are done and unmap it again,
    blocking: what makes the device's writes visible in the host's array."""
    view, _ = cl.enqueue_map_buffer(queue, buffer, cl.map_flags.READ, 0, shape, dtype,
                                    wait_for=list(wait_for) or None, is_blocking=True)
    view.base.release(queue)


def page_locked(context: Context, queue: Queue, nbytes: int) -> tuple[Buffer, np.ndarray]:
    """A buffer of ``nbytes`` of page-locked host memory, and its bytes mapped for the host (kept mapped:
    the DMA engines copy between it and the device at full speed)."""
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, max(nbytes, 1))
    flags = cl.map_flags.READ | cl.map_flags.WRITE
    return buffer, cl.enqueue_map_buffer(queue, buffer, flags, 0, (max(nbytes, 1),), np.uint8)[0]


def read_only_image(context: Context, shape: tuple[int, int], bits: bool) -> Image:
    """A 2-D image of RGBA texels of 32-bit floats, or of 32-bit unsigned integers where ``bits`` (the
    halves of doubles), for kernels that read an operand through the texture cache."""
    channel = cl.channel_type.UNSIGNED_INT32 if bits else cl.channel_type.FLOAT
    fmt = cl.ImageFormat(cl.channel_order.RGBA, channel)
    return cl.create_image(context, cl.mem_flags.READ_ONLY, fmt, shape=shape)


def user_event(context: Context) -> Event:
    """An event the host marks complete itself (``complete``), for commands that wait on host work."""
    return cl.UserEvent(context)


def complete(event: Event) -> None:
    """Mark a ``user_event`` complete, releasing what waits for it."""
    event.set_status(cl.command_execution_status.COMPLETE)


def empty_array(queue: Queue, shape: tuple[int, ...], dtype: np.dtype | type) -> DeviceArray:
    """A new device array, its elements unset."""
    return cl_array.empty(queue, shape, dtype)


def opencl_library() -> ctypes.CDLL | None:
    """The OpenCL library pyopencl loaded (its ICD loader), else the system's; None where none loads. Native
    code that calls OpenCL itself must use this one library, not a second copy with its own handles."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libOpenCL" in line and "/" in line}
    except OSError:
        paths = set()
    for name in sorted(paths) + [ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"]:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None
