"""The host's memory a call may still take, and the check, made before anything runs, that what a call
allocates on the host (a new result, copies of its operands) fits it: past that the system swaps, or
kills the process part way through a long product, where an error up front says what to do."""

from __future__ import annotations

import os

from ..errors import HostMemoryError

#: Allocations of fewer bytes than this in all are not checked (asking the system costs the call).
CHECKED_BYTES = 256 * 2**20


def available_bytes() -> int | None:
    """Memory the host can give without swapping: Linux's ``MemAvailable``, else its free pages, else
    None where the system does not say."""
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_host_memory(parts: dict[str, int]) -> None:
    """``HostMemoryError`` (a ``MemoryError``) when the bytes a call is about to allocate on the host,
    ``parts`` by what they hold, exceed what the host has available."""
    needed = sum(parts.values())
    if needed < CHECKED_BYTES:
        return
    available = available_bytes()
    if available is None or needed <= available:
        return
    gib = 2**30
    held = ", ".join(f"{name} {size / gib:.1f} GiB" for name, size in parts.items() if size)
    raise HostMemoryError(f"this product needs {needed / gib:.1f} GiB more of the host's memory ({held}); "
                          f"{available / gib:.1f} GiB is available: free memory, pass c= (written in place) or "
                          f"multiply in parts of C's rows")
