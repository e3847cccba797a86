"""Kernel arguments set only where they changed since a kernel object's last launch."""

from __future__ import annotations

import pyopencl as cl


class KernelArguments:
    """The arguments last set on each kernel object of one owner (a plan), so that a launch sets only
    those that changed. Setting an argument costs the host time on every driver, and on NVIDIA's much more
    while the queue is busy (a loop over views, whose offsets change, ran several times slower per product
    than a loop over one offset). Memory objects compare by handle; the last ones are held here, so no new
    object can take their handle. Not thread-safe: the owner holds its lock."""

    def __init__(self) -> None:
        self._last: dict[int, tuple] = {}

    def set(self, kernel: cl.Kernel, *args: object) -> None:
        """Set ``kernel``'s arguments to ``args`` (each position always of one type)."""
        last = self._last.get(kernel.int_ptr)
        if last is None:
            kernel.set_args(*args)
        elif last != args:
            for index, (old, new) in enumerate(zip(last, args)):
                if old is not new and old != new:
                    kernel.set_arg(index, new)
        self._last[kernel.int_ptr] = args

    def clear(self) -> None:
        """Forget what was set (the owner's memory objects are being released)."""
        self._last.clear()
