"""Timing device work with OpenCL profiling events."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import pyopencl as cl


def event_seconds(first: cl.Event, last: cl.Event | None = None) -> float:
    """Device time from the start of ``first`` to the end of ``last`` (default: ``first``)."""
    last = last or first
    last.wait()
    return (last.profile.end - first.profile.start) * 1e-9


def time_enqueue(enqueue: Callable[[], Sequence[cl.Event]], warmup: int = 1, runs: int = 5) -> list[float]:
    """Seconds per run of ``enqueue`` (which returns the events it enqueued, first to last), measured
    from profiling events after ``warmup`` untimed runs."""
    for _ in range(warmup):
        events = enqueue()
        events[-1].wait()
    times = []
    for _ in range(runs):
        events = enqueue()
        times.append(event_seconds(events[0], events[-1]))
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
