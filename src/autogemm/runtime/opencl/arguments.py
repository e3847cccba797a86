"""Kernel arguments set only where they changed since a kernel object's last launch.

A kernel's arguments are given as Python values (ints, floats, complex numbers, memory objects) with the
kernel's signature, one letter per parameter as the OpenCL C source declares it: ``i`` int, ``l`` long,
``e`` elem (the owner's scalar type) and ``m`` a memory object (a buffer or an image). A launch whose
values equal the last ones sets nothing: comparing Python values costs the host less than making the
numpy scalars a driver call takes, and setting an argument costs the host time on every driver, on
NVIDIA's much more while the queue is busy (a loop over views, whose offsets change, ran several times
slower per product than a loop over one offset)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl


class KernelArguments:
    """The arguments last set on each kernel object of one owner (a plan) whose scalars are of type
    ``elem``. Memory objects compare by handle; the last ones are held here, so no new object can take
    their handle. Not thread-safe: the owner holds its lock."""

    def __init__(self, elem: type[np.generic]) -> None:
        self._types = {"i": np.int32, "l": np.int64, "e": elem}
        self._last: dict[int, tuple[cl.Kernel, tuple]] = {}
        #: how many times arguments were set or forgotten: an owner that keeps what its last launches were
        #: set to knows by it that nothing set them since
        self.changes = 0

    def set(self, kernel: cl.Kernel, signature: str, *args: object) -> None:
        """Set ``kernel``'s arguments to ``args``, typed by ``signature`` (see the module)."""
        self.changes += 1
        last = self._last.get(id(kernel))
        if last is None or last[0] is not kernel:
            kernel.set_args(*(self._typed(letter, value) for letter, value in zip(signature, args, strict=True)))
        elif last[1] != args:
            for index, (old, new) in enumerate(zip(last[1], args)):
                if old is not new and old != new:
                    kernel.set_arg(index, self._typed(signature[index], new))
        self._last[id(kernel)] = (kernel, args)

    def _typed(self, letter: str, value: object) -> object:
        return value if letter == "m" else self._types[letter](value)

    def clear(self) -> None:
        """Forget what was set (the owner's memory objects are being released)."""
        self._last.clear()
        self.changes += 1
