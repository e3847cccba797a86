"""Device buffers kept between calls, as torch's caching allocator keeps its blocks: a driver allocates a
buffer's device memory when it is first used, which costs a small numpy-to-numpy product a sizeable
share of its time."""

from __future__ import annotations

import threading

import pyopencl as cl

#: Device bytes a pool keeps free at most: a sixteenth of the device's memory, at most this many.
POOL_BYTES = 2**30


class BufferPool:
    """Free device buffers of one context by size. ``take`` hands out one of at least the bytes asked
    (sizes rounded up to an eighth of their power of two, so nearby sizes share buffers); ``give`` takes
    it back once no command uses it any more, or releases it when the pool holds its most already."""

    def __init__(self, context: cl.Context, capacity: int) -> None:
        self.context, self.capacity = context, capacity
        self._free: dict[int, list[cl.Buffer]] = {}
        self.held = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> cl.Buffer:
        """A read-write buffer of at least ``nbytes`` (one kept free, else a new one)."""
        size = rounded(nbytes)
        with self._lock:
            free = self._free.get(size)
            if free:
                self.held -= size
                return free.pop()
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size)

    def give(self, buffer: cl.Buffer, nbytes: int) -> None:
        """Keep ``buffer`` (from ``take(nbytes)``; every command using it is done) for a later ``take``.
        (Its size is not asked of the driver, a call into it on every call of a loop.)"""
        size = rounded(nbytes)
        with self._lock:
            if self.held + size <= self.capacity:
                self._free.setdefault(size, []).append(buffer)
                self.held += size
                return
        buffer.release()

    def give_all(self, taken: list[tuple[cl.Buffer, int]]) -> None:
        """``give`` back each (buffer, bytes) of one call's, last first: the pool hands out the last given
        first, so that the next call of those sizes takes each buffer back in its place, and its plan sets
        no kernel argument anew."""
        for buffer, nbytes in reversed(taken):
            self.give(buffer, nbytes)

    def clear(self) -> None:
        """Release every free buffer (their device memory is the driver's again)."""
        with self._lock:
            buffers = [buffer for free in self._free.values() for buffer in free]
            self._free.clear()
            self.held = 0
        for buffer in buffers:
            buffer.release()


def rounded(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of an eighth of its power of two (at least 256 bytes)."""
    nbytes = max(nbytes, 256)
    step = max(1, (1 << (nbytes - 1).bit_length()) // 8)
    return -(-nbytes // step) * step
