"""The runtimes a device is reached through, by the names profiles, families and the command line use:
OpenCL for every device, CUDA beside it for an NVIDIA GPU the CUDA driver sees too (``cuda``); and the
seam between them: what a device context of either offers the layers above (``Runtime``), so that what
measures kernels is written once for both."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np

from .cuda.driver import cuda_device_of
from .opencl.device import Device

OPENCL, CUDA = "opencl", "cuda"


def backends(device: Device) -> tuple[str, ...]:
    """The runtimes that reach ``device``: OpenCL always, CUDA where it is an NVIDIA GPU the driver API
    sees too."""
    return (OPENCL, CUDA) if cuda_device_of(device) is not None else (OPENCL,)


class Memory(Protocol):
    """Device memory of either runtime: an OpenCL buffer, or the CUDA path's ``DeviceMemory``."""

    def release(self) -> None: ...


class Runtime(Protocol):
    """A device context of either runtime (``runtime.opencl.DeviceContext``, ``runtime.cuda.CudaContext``),
    as work that runs on both sees it: memory, copies and timing on the context's own queue or stream.
    Kernels are compiled and launched by each runtime's plans, whose forms differ."""

    def session(self) -> AbstractContextManager[None]:
        """Hold the context for a sequence of calls from this thread (the CUDA driver's context is current
        per thread, and its stream shared: one thread at a time)."""

    def allocate(self, nbytes: int) -> Memory:
        """``nbytes`` of device memory (at least one byte)."""

    def upload(self, memory: Memory, array: np.ndarray) -> None:
        """Copy ``array`` into ``memory``, blocking."""

    def download(self, array: np.ndarray, memory: Memory) -> None:
        """Copy ``memory`` into the contiguous ``array``, blocking."""

    def fill(self, memory: Memory, value: np.generic, nbytes: int) -> None:
        """Enqueue setting the first ``nbytes`` of ``memory`` to repetitions of ``value``."""

    def seconds(self, enqueue: Callable[[], object], repeats: int = 1) -> float:
        """Device seconds of the work ``enqueue`` puts on the context's queue, per call, over ``repeats``
        calls back to back (OpenCL: from each call's first event to its last, the events ``enqueue``
        returns, so that gaps between calls do not count; CUDA: between two events around them all, the
        stream held busy first so that enqueueing does not count)."""


def resident_seconds(runtime: Runtime, enqueue: Callable[[], object], runs: int) -> float:
    """The median of ``runs`` device times of ``enqueue``'s work after one run to warm up, as ``runtime``
    times it: how ``autogemm bench`` times a product whose operands are on the device, and ``autogemm
    tune`` the plans it compares."""
    return statistics.median([runtime.seconds(enqueue) for _ in range(runs + 1)][1:])
