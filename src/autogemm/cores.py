"""The cores this process may run on, which the copy threads, build processes and enumerators are
sized by: the CPUs of its affinity where the system says (a container or ``taskset`` given 4 cores of a
128-core host has 4), else the machine's."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """How many cores this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):        # no affinity on this system
        return max(1, os.cpu_count() or 1)
