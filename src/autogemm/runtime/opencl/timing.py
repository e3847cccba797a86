"""Timing device work with OpenCL profiling events, the queue held busy before the work (``hold``)."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pyopencl as cl

#: Dependent reads the hold kernel makes: at tens of nanoseconds a read on a GPU, long enough for the
#: host to enqueue a plan's launches behind it; on a CPU device a few microseconds.
HOLD_READS = 8192
HOLD_SOURCE = """
__kernel void hold(__global int* cells, int reads) {
    int at = 0;
    for (int i = 0; i < reads; ++i)
        at = cells[at];
    if (at != 0)
        cells[1] = at;
}
"""
_holds: dict[cl.Context, tuple[cl.Kernel, cl.Buffer]] = {}
_holds_lock = threading.Lock()


def hold(queue: cl.CommandQueue) -> cl.Event:
    """Keep ``queue`` busy for a while (one work-item's ``HOLD_READS`` dependent reads), so that what is
    enqueued next waits in the device's queue when the device reaches it: its profiling events then
    time the work alone. From an idle queue the events of a launch also count part of its submission
    (docs/benchmarks.md); cuBLAS and the CUDA path are timed from a stream held busy the same way.
    Returns the hold's event."""
    with _holds_lock:
        if queue.context not in _holds:
            program = cl.Program(queue.context, HOLD_SOURCE).build()
            cells = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=np.zeros(16, np.int32))
            kernel = cl.Kernel(program, "hold")
            kernel.set_args(cells, np.int32(HOLD_READS))
            _holds[queue.context] = kernel, cells
        kernel, _ = _holds[queue.context]
        return cl.enqueue_nd_range_kernel(queue, kernel, (1,), (1,))


def event_seconds(first: cl.Event, last: cl.Event | None = None) -> float:
    """Device time from the start of ``first`` to the end of ``last`` (default: ``first``)."""
    last = last or first
    last.wait()
    return (last.profile.end - first.profile.start) * 1e-9


def time_enqueue(queue: cl.CommandQueue, enqueue: Callable[[], Sequence[cl.Event]], warmup: int = 1,
                 runs: int = 5) -> list[float]:
    """Seconds per run of ``enqueue`` (which returns the events it enqueued on ``queue``, first to last),
    measured from profiling events after ``warmup`` untimed runs, the queue held busy before each run."""
    for _ in range(warmup):
        events = enqueue()
        events[-1].wait()
    times = []
    for _ in range(runs):
        hold(queue)
        events = enqueue()
        times.append(event_seconds(events[0], events[-1]))
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
