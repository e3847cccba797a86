"""Whether buffers fit a device, asked before anything is enqueued."""

from __future__ import annotations

from ..errors import DeviceError
from .context import DeviceContext


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
