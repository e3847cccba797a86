"""One OpenCL context and in-order profiling queue per device, the programs built on it (by source) and the
device buffers it keeps free between calls."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

import numpy as np
import pyopencl as cl

from ...errors import ArgumentError, BuildError
from .buffer_pool import POOL_BYTES, BufferPool
from .build_pool import BuildPool
from .device import Device
from .discovery import devices, find_device
from .timing import event_seconds, hold


class DeviceContext:
    """The context, queue, built programs and free buffers (``buffers``) of one device; get it with
    ``context_for``. Its own queue profiles (the tuner and the benchmarks time by its events); the
    calls on host arrays run on ``for_calls``, whose queue does not."""

    def __init__(self, device: Device, queue: cl.CommandQueue | None = None,
                 beside: DeviceContext | None = None) -> None:
        self.device = device
        #: the context whose page-locked memory and pools of results this one uses (``shares.staging``):
        #: itself, or the one it sits beside
        self.owner: DeviceContext = beside if beside is not None else self
        if beside is not None:          # the same context, programs and free buffers; a queue of its own
            self.context, self._programs, self._lock = beside.context, beside._programs, beside._lock
            self.buffers = beside.buffers
            self.queue = cl.CommandQueue(self.context)
        else:
            if queue is None:
                self.context = cl.Context([device.cl_device])
                queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
            self.context, self.queue = queue.context, queue
            self._programs: dict[tuple[str, str], cl.Program] = {}
            self._lock = threading.Lock()
            self.buffers = BufferPool(self.context, min(POOL_BYTES, device.global_mem_bytes // 16))
        self._build_pool: BuildPool | None = None
        self._transfer_queues: dict[str, cl.CommandQueue] = {}
        self._for_calls: DeviceContext | None = None

    @property
    def for_calls(self) -> DeviceContext:
        """The context of calls on host arrays, made once: this one's OpenCL context, programs and free
        buffers, on an in-order queue without profiling. Nobody reads the times of those calls' events,
        and a launch or a copy on a profiling queue costs the host more (docs/benchmarks.md says how much
        on NVIDIA's driver)."""
        with self._lock:
            if self._for_calls is None:
                self._for_calls = DeviceContext(self.device, beside=self)
            return self._for_calls
    def session(self) -> AbstractContextManager[None]:
        """Nothing to hold: an OpenCL context is current everywhere, its in-order queue takes any thread."""
        return nullcontext()

    def allocate(self, nbytes: int) -> cl.Buffer:
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(nbytes, 1))

    def upload(self, memory: cl.Buffer, array: np.ndarray) -> None:
        cl.enqueue_copy(self.queue, memory, np.ascontiguousarray(array), is_blocking=True)

    def download(self, array: np.ndarray, memory: cl.Buffer) -> None:
        cl.enqueue_copy(self.queue, array, memory, is_blocking=True)

    def fill(self, memory: cl.Buffer, value: np.generic, nbytes: int) -> None:
        cl.enqueue_fill_buffer(self.queue, memory, np.array(value), 0, nbytes)

    def seconds(self, enqueue: Callable[[], Sequence[cl.Event]], repeats: int = 1) -> float:
        """Device seconds of ``enqueue``'s launches per call, over ``repeats`` calls, from their profiling
        events, the queue held busy before the first (``timing.hold``)."""
        hold(self.queue)
        spans = [enqueue() for _ in range(repeats)]
        return sum(event_seconds(events[0], events[-1]) for events in spans) / repeats

    def transfer_queue(self, direction: str) -> cl.CommandQueue:
        """An in-order queue of this context (profiling as its own queue does) for the copies ``direction``
        ('in' or 'out') of a product in blocks, made once: copies on it run while kernels run on
        ``queue``, so a copy no longer than the kernels beside it adds almost nothing to their time."""
        with self._lock:
            if direction not in self._transfer_queues:
                profiling = self.queue.properties & cl.command_queue_properties.PROFILING_ENABLE
                self._transfer_queues[direction] = cl.CommandQueue(self.context, properties=profiling)
            return self._transfer_queues[direction]

    @contextmanager
    def building_in_processes(self, workers: int) -> Iterator[None]:
        """Within the block, compile programs in ``workers`` worker processes (see ``BuildPool``)."""
        pool = BuildPool(self.device, workers)
        self._build_pool = pool
        try:
            yield
        finally:
            self._build_pool = None
            pool.close()

    def program(self, source: str, options: tuple[str, ...] = ()) -> cl.Program:
        """Build ``source`` with ``options`` once; later calls return the program built then.
        Builds run outside the programs' lock, so several threads can compile different programs at once
        (the tuner compiles ahead while the device times), in worker processes within
        ``building_in_processes``. Raises ``BuildError`` with the compiler's log
        when the build fails."""
        key = (source, " ".join(options))
        with self._lock:
            cached = self._programs.get(key)
        if cached is not None:
            return cached
        pool = self._build_pool
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                if pool is None:
                    program = cl.Program(self.context, source)
                else:
                    binary = pool.compile(source, options)
                    program = cl.Program(self.context, [self.device.cl_device], [binary])
                built = program.build(options=list(options))
        except cl.RuntimeError as exc:
            raise BuildError(
                f"OpenCL build failed on {self.device.name.strip()}", log=str(exc), source=source
            ) from exc
        with self._lock:
            return self._programs.setdefault(key, built)

    def forget(self, source: str, options: tuple[str, ...] = ()) -> None:
        """Forget a built program (the tuner builds thousands it will not run again)."""
        with self._lock:
            self._programs.pop((source, " ".join(options)), None)

    def kernel(self, source: str, name: str, options: tuple[str, ...] = ()) -> cl.Kernel:
        """A fresh kernel object (kernels carry their arguments, so each user gets its own)."""
        return cl.Kernel(self.program(source, options), name)


_contexts: dict[tuple[int, int, str], DeviceContext] = {}
_contexts_lock = threading.Lock()


def context_for(device: Device | str | int | None = None) -> DeviceContext:
    """The shared ``DeviceContext`` of a device (a ``Device``, a specification, or None for the default)."""
    dev = find_device(device)
    key = (dev.platform_index, dev.device_index, dev.fingerprint)
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = _contexts[key] = DeviceContext(dev)
        return ctx


_adopted: dict[int, DeviceContext] = {}


def live_contexts() -> list[DeviceContext]:
    """Every ``DeviceContext`` made so far: the devices' own, those of their calls on host arrays, and
    those on callers' queues."""
    with _contexts_lock:
        own = list(_contexts.values())
        return [*own, *(ctx._for_calls for ctx in own if ctx._for_calls is not None), *_adopted.values()]


def context_for_queue(queue: cl.CommandQueue) -> DeviceContext:
    """A ``DeviceContext`` on a caller's in-order queue (the one its device arrays were made with), kept
    per queue so that its built programs are reused. ``ArgumentError`` for an out-of-order queue: the
    launches of a plan rely on running in the order they are enqueued."""
    if queue.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE:
        raise ArgumentError("the arrays' queue is out of order; autogemm needs an in-order queue")
    with _contexts_lock:
        ctx = _adopted.get(queue.int_ptr)      # holds the queue, so its handle is not reused
        if ctx is not None:
            return ctx
    dev = next((d for d in devices() if d.cl_device == queue.device), None)
    if dev is None:
        raise ArgumentError(f"the arrays' device {queue.device.name.strip()} is not among the devices autogemm finds")
    ctx = DeviceContext(dev, queue)
    with _contexts_lock:
        return _adopted.setdefault(queue.int_ptr, ctx)
