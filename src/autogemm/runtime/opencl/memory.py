"""Whether buffers fit a device, asked before anything is enqueued; and what a call says when the
device's memory turns out to be full only once it runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import pyopencl as cl

from ...errors import DeviceError
from .context import DeviceContext

Call = TypeVar("Call", bound=Callable)


def reports_full_memory(call: Call) -> Call:
    """``call`` (a public entry point) with the driver's out-of-memory errors turned into a
    ``DeviceError`` that says what to do: drivers allocate a buffer when it is first used, so a device
    whose memory is full fails a copy or a launch, not the allocation."""
    @functools.wraps(call)
    def reporting(*args, **kwargs):
        try:
            return call(*args, **kwargs)
        except cl.MemoryError as exc:
            raise DeviceError(f"the device has no memory left for this call ({exc}): free device arrays (and "
                              "autogemm.clear_plans(), whose plans keep their last operands) and call again"
                              ) from None
    return reporting  # type: ignore[return-value]


def check_memory(ctx: DeviceContext, sizes: list[int]) -> None:
    """``DeviceError`` when buffers of ``sizes`` bytes cannot fit the device: more in all than its
    memory, or one larger than it allocates at once."""
    total, largest = sum(sizes), max(sizes, default=0)
    dev = ctx.device
    if total > dev.global_mem_bytes or largest > dev.max_mem_alloc_bytes:
        mib = 2**20
        raise DeviceError(f"this call needs {total / mib:.0f} MiB on {dev.name.strip()}, {largest / mib:.0f} MiB "
                          f"in one buffer; the device has {dev.global_mem_bytes / mib:.0f} MiB and allocates at most "
                          f"{dev.max_mem_alloc_bytes / mib:.0f} MiB at once")
