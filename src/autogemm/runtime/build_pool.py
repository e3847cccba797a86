"""``BuildPool``: compile OpenCL programs for one device in worker processes.

Some drivers compile one program at a time per process however many threads ask (NVIDIA's did, in the
first tuning runs on the H100), so the tuner's builds ahead of the device did not overlap. Each worker
process holds its own context on the same device, compiles source to the device's binary and sends the
binary back; the calling process then creates the program from that binary, which is quick. A compiler
that crashes takes down one worker, not the tuner: the pool is restarted and the build reported failed."""

from __future__ import annotations

import multiprocessing
import threading
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pyopencl as cl

from ..errors import BuildError
from .device import Device

_worker_context: cl.Context | None = None


def _start_worker(slot: str, fingerprint: str) -> None:
    """Worker initialiser: open a context on the device at ``slot`` ("P:D"), the one with ``fingerprint``."""
    from .discovery import find_device

    global _worker_context
    device = find_device(slot)
    if device.fingerprint != fingerprint:
        raise RuntimeError(f"device {slot} in a worker is not the device of the pool")
    _worker_context = cl.Context([device.cl_device])


def _compile(source: str, options: tuple[str, ...]) -> tuple[bytes | None, str]:
    """(binary, "") when ``source`` builds, else (None, the compiler's log). Plain values: they cross
    process boundaries."""
    assert _worker_context is not None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(_worker_context, source).build(options=list(options))
    except cl.RuntimeError as exc:
        return None, str(exc)
    return bytes(program.binaries[0]), ""


class BuildPool:
    """Worker processes that compile programs for ``device``; ``compile`` is safe to call from threads."""

    def __init__(self, device: Device, workers: int) -> None:
        self.device, self.workers = device, workers
        self._lock = threading.Lock()
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        slot = f"{self.device.platform_index}:{self.device.device_index}"
        return ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(slot, self.device.fingerprint))

    def compile(self, source: str, options: tuple[str, ...] = ()) -> bytes:
        """The device binary of ``source`` built with ``options``; ``BuildError`` with the compiler's log
        if it does not build, or if the worker died building it."""
        executor = self._executor
        try:
            binary, log = executor.submit(_compile, source, options).result()
        except BrokenProcessPool as exc:
            with self._lock:
                if self._executor is executor:
                    self._executor = self._start()
            raise BuildError(f"the compiler process died building for {self.device.name.strip()}",
                             log=str(exc), source=source) from exc
        if binary is None:
            raise BuildError(f"OpenCL build failed on {self.device.name.strip()}", log=log, source=source)
        return binary

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
