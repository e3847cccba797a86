"""``BuildPool``: compile OpenCL programs for one device in child processes (``compile_worker``).

Some drivers compile one program at a time per process however many threads ask (NVIDIA's did, in the
first tuning runs on the H100), so the tuner's builds ahead of the device did not overlap. Each child
holds its own context on the same device, compiles source to the device's binary and sends the binary
back; the calling process then creates the program from that binary, which is quick. A compiler that
crashes or hangs takes down one child, not the caller: the build is reported failed and the child is
started again for the next one."""

from __future__ import annotations

import base64
import queue

from ...cores import usable_cores
from ...errors import BuildError
from ..child import Child, ChildGone
from .device import Device

#: Seconds one build may take before its child is stopped and the build reported failed.
BUILD_LIMIT_SECONDS = 900.0


def default_builders() -> int:
    """How many builds to run at once: a core each, one left for the process timing them (at most 16)."""
    return max(1, min(16, usable_cores() - 1))


class BuildPool:
    """Child processes that compile programs for ``device``; ``compile`` is safe to call from threads
    (each call takes an idle child, waiting for one if all are busy)."""

    def __init__(self, device: Device, workers: int) -> None:
        self.device = device
        hello = {"device": device.slot, "fingerprint": device.fingerprint}
        self._idle: queue.Queue[Child] = queue.Queue()
        self._children = [Child("autogemm.runtime.opencl.compile_worker", hello, BUILD_LIMIT_SECONDS)
                          for _ in range(workers)]
        for child in self._children:
            self._idle.put(child)

    def compile(self, source: str, options: tuple[str, ...] = ()) -> bytes:
        """The device binary of ``source`` built with ``options``; ``BuildError`` with the compiler's log
        if it does not build, or if its child died or took too long building it."""
        child = self._idle.get()
        try:
            child.send({"source": source, "options": list(options)})
            reply = child.expect("binary", BUILD_LIMIT_SECONDS)
        except ChildGone as gone:
            raise BuildError(f"the compiler process failed building for {self.device.name.strip()}: {gone}",
                             source=source) from None
        finally:
            self._idle.put(child)
        if reply["binary"] is None:
            raise BuildError(f"OpenCL build failed on {self.device.name.strip()}", log=reply["log"], source=source)
        return base64.b64decode(reply["binary"])

    def close(self) -> None:
        for child in self._children:
            child.close()
