"""``CudaContext``: one CUDA device's primary context and stream, through the driver API: device memory,
copies, modules (cubins from ``nvrtc``), launches and event timing. What the CUDA path's plans and the
tuner's evaluators run on, as ``runtime.opencl.context`` is for OpenCL."""

from __future__ import annotations

import ctypes
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from ...errors import DeviceError
from .driver import CudaDevice
from .nvrtc import Cubin, compile_cuda


@functools.cache
def bindings():
    """The CUDA driver API's bindings (``cuda.bindings.driver``), imported once: the calls that launch
    kernels run on every product, and an import statement there costs each of them."""
    from cuda.bindings import driver

    return driver

#: Dynamic shared memory a kernel may use without asking for more (the rest up to the device's limit
#: needs ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``).
DEFAULT_SHARED_BYTES = 48 * 1024
#: Tensor maps a context keeps (a map only describes memory by its address: one kept for memory since
#: freed is never used on other memory unless that has the same address and shape, when it is right).
TENSOR_MAPS_KEPT = 256
#: The handles of CUDA's legacy default stream: 0, and DLPack's and the driver's name for it, 1.
LEGACY_STREAM = (0, 1)
#: A kernel argument: its value and its ctypes type (None for device memory, a tensor map or a
#: structure such as ``Complex128``).
Argument = tuple[object, type | None]
#: ``seconds`` holds the stream busy this long before its start event, so that the host's time to
#: enqueue the work is not counted, as OpenCL's profiling events time the kernels alone. From an idle
#: stream the first launch waits for the host to enqueue it, so a product's rate read well below the one
#: it keeps back to back; held, it reads as it does back to back.
HOLD_SECONDS = 5e-4
#: The kernel that holds a stream: one thread waiting on the global timer (nanoseconds).
HOLD_SOURCE = r"""
extern "C" __global__ void hold(unsigned long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanoseconds);
}
"""


class Complex128(ctypes.Structure):
    """A complex128 kernel argument (CUDA's ``double2``)."""

    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


def checked(answer: tuple) -> object:
    """The values a driver call returned after its status; ``DeviceError`` naming the status when it
    failed."""
    status, *values = answer if isinstance(answer, tuple) else (answer,)
    if status != bindings().CUresult.CUDA_SUCCESS:
        raise DeviceError(f"CUDA driver: {status.name}")
    return values[0] if len(values) == 1 else tuple(values)


def as_stream(handle: object) -> object:
    """A CUDA stream handle (an int, as DLPack and other libraries give them; 0 the legacy default
    stream) as the driver API takes it."""
    if type(handle) is int:
        return _stream_of(handle)
    driver = bindings()
    return handle if isinstance(handle, driver.CUstream) else driver.CUstream(int(handle))


@functools.lru_cache(maxsize=64)
def _stream_of(handle: int) -> object:
    """The driver's object for the stream ``handle``, made once a handle: a call on tensors names its
    stream every time, and the object only holds the handle."""
    return bindings().CUstream(handle)


class Mark(NamedTuple):
    """A launch or memset that ``CudaContext.timeline`` marked: its name and the events around it."""

    name: str
    start: object
    end: object


class Prepared(NamedTuple):
    """A kernel launch as the driver takes it: the function, its grid and block (three dimensions each),
    its dynamic shared memory and its arguments (``CudaContext.prepared``): the address of an array of
    pointers to their values, which ``held`` keeps alive (the driver copies them at each launch)."""

    function: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    arguments: int
    held: tuple


class DeviceMemory:
    """``nbytes`` of device memory at ``pointer``, freed by ``release``: at once, or in the order of
    ``stream`` for memory allocated on one (``CudaContext.allocate``), so that what is enqueued before
    on that stream still has it."""

    def __init__(self, pointer: object, nbytes: int, stream: object = None, owned: bool = True) -> None:
        self.pointer, self.nbytes, self.stream, self.owned = pointer, nbytes, stream, owned

    @classmethod
    def lent(cls, pointer: int) -> DeviceMemory:
        """Memory another library owns, at the address ``pointer`` (``release`` leaves it alone). The
        address stays an int, which the driver's bindings take where they take a ``CUdeviceptr`` (a call on
        tensors lends three every time, and making the driver's object costs more than the int)."""
        return cls(pointer, 0, owned=False)

    def release(self) -> None:
        from cuda.bindings import driver

        if self.pointer is not None and self.owned:
            if self.stream is None:
                checked(driver.cuMemFree(self.pointer))
            else:
                checked(driver.cuMemFreeAsync(self.pointer, self.stream))
            self.pointer = None


class PinnedMemory:
    """``nbytes`` of page-locked host memory (the device's DMA engines read and write it directly), as the
    bytes ``array``; freed by ``release``."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.pointer, self.nbytes = pointer, nbytes
        self.array = np.ctypeslib.as_array((ctypes.c_ubyte * max(1, nbytes)).from_address(pointer))[:nbytes]

    def release(self) -> None:
        from cuda.bindings import driver

        if self.pointer:
            self.array = None
            checked(driver.cuMemFreeHost(self.pointer))
            self.pointer = 0


class CudaContext:
    """The primary context of ``device`` (current in the thread that made it; ``activate`` makes it
    current in another) and one stream."""

    def __init__(self, device: CudaDevice) -> None:
        from cuda.bindings import driver

        self.device = device
        checked(driver.cuInit(0))
        self._handle = checked(driver.cuDeviceGet(device.ordinal))
        self.context = checked(driver.cuDevicePrimaryCtxRetain(self._handle))
        self.activate()
        self.stream = checked(driver.cuStreamCreate(0))
        self._pool = checked(driver.cuDeviceGetDefaultMemPool(self._handle))
        checked(driver.cuMemPoolSetAttribute(          # stream-ordered memory is kept for reuse, not returned
            self._pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            driver.cuuint64_t(2**64 - 1)))
        self.lock = threading.Lock()           # held by a call for its use of the stream and the scratch
        self._modules: dict[bytes, object] = {}
        self._scratch: dict[str, DeviceMemory] = {}
        self._staging: PinnedMemory | None = None
        self._maps: OrderedDict[tuple, object] = OrderedDict()     # tensor maps by what they describe
        self._raised: set[tuple[int, int]] = set()   # (kernel, shared bytes) allowed beyond the default
        self._hold: object | None = None               # the kernel ``seconds`` holds the stream with
        self._names: dict[int, str] = {}               # kernels' names by function, for ``timeline``
        self._marks: list[Mark] | None = None          # what ``timeline`` records, while it does
        self.multiprocessors = int(checked(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self._handle)))

    def activate(self) -> None:
        checked(bindings().cuCtxSetCurrent(self.context))

    @contextmanager
    def session(self) -> Iterator[None]:
        """The context current on this thread, and its stream this thread's, for what runs within."""
        with self.lock:
            self.activate()
            yield

    def fill(self, memory: DeviceMemory, value: np.generic, nbytes: int) -> None:
        """Set the first ``nbytes`` of ``memory`` to repetitions of ``value`` (zeros enqueued, other values
        copied from the host, blocking)."""
        value = np.asarray(value)
        if not value.any():
            self.zero(memory, nbytes)
        else:
            self.upload(memory, np.full(nbytes // value.itemsize, value))

    def allocate(self, nbytes: int, stream: object = None) -> DeviceMemory:
        """``nbytes`` of device memory; on ``stream`` (a CUDA stream), in its order from the device's
        pool: usable by what is enqueued on it next, and quick to get again once released."""
        from cuda.bindings import driver

        if stream is None:
            return DeviceMemory(checked(driver.cuMemAlloc(max(1, nbytes))), nbytes)
        return DeviceMemory(checked(driver.cuMemAllocAsync(max(1, nbytes), stream)), nbytes, stream)

    def zero(self, memory: DeviceMemory, nbytes: int, stream: object = None) -> None:
        """Enqueue setting the first ``nbytes`` of ``memory`` to zero on ``stream`` (by default the
        context's)."""
        from cuda.bindings import driver

        stream = self.stream if stream is None else stream
        mark = None if self._marks is None else self._mark("zero", stream)
        checked(driver.cuMemsetD8Async(memory.pointer, 0, nbytes, stream))
        if mark is not None:
            checked(driver.cuEventRecord(mark.end, stream))

    def pinned(self, nbytes: int) -> PinnedMemory:
        """``nbytes`` of page-locked host memory."""
        from cuda.bindings import driver

        return PinnedMemory(int(checked(driver.cuMemHostAlloc(max(1, nbytes), 0))), nbytes)

    def scratch(self, role: str, nbytes: int) -> DeviceMemory:
        """Device memory kept for ``role`` between calls, made anew only when too small (allocating is
        slow); the caller holds ``lock`` while it uses it."""
        found = self._scratch.get(role)
        if found is None or found.nbytes < nbytes:
            if found is not None:
                self.finish()                  # nothing in flight may still use the old memory
                found.release()
            found = self._scratch[role] = self.allocate(nbytes)
        return found

    def staging(self, nbytes: int) -> np.ndarray:
        """``nbytes`` of page-locked host memory kept between calls (as ``scratch``), as bytes."""
        if self._staging is None or self._staging.nbytes < nbytes:
            if self._staging is not None:
                self.finish()
                self._staging.release()
            self._staging = self.pinned(nbytes)
        return self._staging.array[:nbytes]

    def release_kept(self) -> None:
        """Free the scratch and the staging memory, and the stream-ordered memory the pool keeps (a later
        call makes them anew)."""
        from cuda.bindings import driver

        with self.lock:
            self.finish()
            checked(driver.cuMemPoolTrimTo(self._pool, 0))
            for memory in self._scratch.values():
                memory.release()
            self._scratch.clear()
            if self._staging is not None:
                self._staging.release()
                self._staging = None

    def free_bytes(self) -> int:
        """Device memory free now."""
        from cuda.bindings import driver

        free, _ = checked(driver.cuMemGetInfo())
        return int(free)

    def upload(self, memory: DeviceMemory, array: np.ndarray, wait: bool = True) -> None:
        """Copy a contiguous ``array`` to ``memory``; without ``wait`` the copy is only enqueued, and
        ``array`` (page-locked memory, for the copy to run on its own) must live until it is done."""
        from cuda.bindings import driver

        source = np.ascontiguousarray(array)
        checked(driver.cuMemcpyHtoDAsync(memory.pointer, source.ctypes.data, source.nbytes, self.stream))
        if wait:
            self.finish()

    def download(self, array: np.ndarray, memory: DeviceMemory, wait: bool = True) -> None:
        """Copy ``memory`` into the contiguous ``array`` (as ``upload`` for ``wait``)."""
        from cuda.bindings import driver

        checked(driver.cuMemcpyDtoHAsync(array.ctypes.data, memory.pointer, array.nbytes, self.stream))
        if wait:
            self.finish()

    def tensor_map(self, memory: DeviceMemory, shape: tuple[int, int], element: str, box: tuple[int, int],
                   layers: int = 1, layer_bytes: int = 0) -> object:
        """A TMA tensor map of ``layers`` row-major ``shape`` matrices of ``element`` values ('float16',
        'bfloat16', 'float32' or 'float64') in ``memory``, ``layer_bytes`` apart (a strided batch; by
        default one matrix), copied in boxes of ``box`` (rows, columns; the columns 128 bytes) of one
        matrix in the 128-byte swizzle: a kernel argument (its type None). A box reaching past a matrix's
        rows or columns reads zeros there (and stores nothing), never the next matrix's elements."""
        driver = bindings()
        key = (int(memory.pointer), shape, element, box, layers, layer_bytes)
        found = self._maps.get(key)
        if found is not None:
            self._maps.move_to_end(key)
            return found
        kinds = driver.CUtensorMapDataType
        kind, size = {"float16": (kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2),
                      "bfloat16": (kinds.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2),
                      "float32": (kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4),
                      "float64": (kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8)}[element]
        rows, cols = shape
        wide, narrow = driver.cuuint64_t, driver.cuuint32_t
        made = self._maps[key] = checked(driver.cuTensorMapEncodeTiled(
            kind, 3, memory.pointer, [wide(cols), wide(rows), wide(layers)],
            [wide(cols * size), wide(layer_bytes or rows * cols * size)], [narrow(box[1]), narrow(box[0]), narrow(1)],
            [narrow(1), narrow(1), narrow(1)],
            driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
            driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
        if len(self._maps) > TENSOR_MAPS_KEPT:
            self._maps.popitem(last=False)
        return made

    def function(self, cubin: Cubin, name: str) -> object:
        """The kernel ``name`` of ``cubin``, its module loaded once."""
        from cuda.bindings import driver

        module = self._modules.get(cubin.image)
        if module is None:
            module = self._modules[cubin.image] = checked(driver.cuModuleLoadData(cubin.image))
        function = checked(driver.cuModuleGetFunction(module, name.encode()))
        self._names[int(function)] = name
        return function

    def _allow_shared(self, function: object, shared_bytes: int) -> None:
        """Let ``function`` take ``shared_bytes`` of dynamic shared memory (over 48 KiB must be asked for)."""
        driver = bindings()
        if shared_bytes > DEFAULT_SHARED_BYTES and (int(function), shared_bytes) not in self._raised:
            attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            checked(driver.cuFuncSetAttribute(function, attribute, shared_bytes))
            self._raised.add((int(function), shared_bytes))

    def resident_blocks(self, function: object, threads: int, shared_bytes: int, cluster: int,
                        per_multiprocessor: int = 1) -> int:
        """Blocks of ``function`` (``threads`` each, with ``shared_bytes``; ``per_multiprocessor`` on each
        multiprocessor) that the device runs at once, the grid of a persistent kernel: in clusters of
        ``cluster`` blocks, the whole clusters it places at once, which can be fewer than its
        multiprocessors allow (a cluster lies within one processing cluster of the GPU; more blocks than
        it runs at once would wait for the others to finish, doubling the time)."""
        from cuda.bindings import driver

        blocks = self.multiprocessors * per_multiprocessor
        if cluster == 1 and per_multiprocessor == 1:
            return blocks
        self._allow_shared(function, shared_bytes)
        if cluster == 1:                    # as many as fit it, were its registers or memory short
            fit = int(checked(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, shared_bytes)))
            return self.multiprocessors * max(1, min(per_multiprocessor, fit))
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = blocks // cluster * cluster, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
        config.sharedMemBytes = shared_bytes
        config.hStream = self.stream
        config.numAttrs = 0
        clusters = int(checked(driver.cuOccupancyMaxActiveClusters(function, config)))
        return min(blocks // cluster, clusters) * cluster

    def launch(self, function: object, grid: Sequence[int], block: Sequence[int], args: Sequence[Argument],
               shared_bytes: int = 0, stream: object = None) -> None:
        """Enqueue ``function`` on ``stream`` (by default the context's) over ``grid`` blocks of ``block``
        threads (up to three dimensions each) with ``shared_bytes`` of dynamic shared memory."""
        self.enqueue_prepared(self.prepared(function, grid, block, args, shared_bytes), stream)

    def prepared(self, function: object, grid: Sequence[int], block: Sequence[int], args: Sequence[Argument],
                 shared_bytes: int = 0) -> Prepared:
        """A launch of ``function`` (as ``launch`` takes it) with its arguments converted once, for a
        caller that enqueues the same launch again (``enqueue_prepared``)."""
        self._allow_shared(function, shared_bytes)
        held, addresses = [], []
        for value, kind in args:
            if isinstance(value, DeviceMemory):
                value, kind = int(value.pointer), ctypes.c_uint64
            if kind is not None:
                value = kind(value)
            held.append(value)
            # a driver object (a tensor map) gives its own address; a ctypes value (a scalar, a pointer)
            # is addressed where it lies
            addresses.append(int(value.getPtr()) if hasattr(value, "getPtr") else ctypes.addressof(value))
        pointers = (ctypes.c_void_p * max(len(addresses), 1))(*addresses)
        return Prepared(function, (*grid, 1, 1)[:3], (*block, 1, 1)[:3], shared_bytes, ctypes.addressof(pointers),
                        (pointers, *held))

    def enqueue_prepared(self, launch: Prepared, stream: object = None) -> None:
        """Enqueue ``launch`` on ``stream`` (by default the context's)."""
        stream = self.stream if stream is None else stream
        mark = None if self._marks is None else self._mark(self._names.get(int(launch.function), "kernel"), stream)
        checked(bindings().cuLaunchKernel(launch.function, *launch.grid, *launch.block, launch.shared_bytes,
                                          stream, launch.arguments, 0))
        if mark is not None:
            checked(bindings().cuEventRecord(mark.end, stream))

    @contextmanager
    def timeline(self) -> Iterator[list[Mark]]:
        """While within, each launch and memset enqueued on the context's stream is marked: listed with
        two timing events around it, which ``marked_seconds`` reads once the stream has run them (what
        ``explain`` shows of a CUDA plan). A launch outside it pays one test for it."""
        self._marks = marks = []
        try:
            yield marks
        except BaseException:
            self._destroyed(marks)
            raise
        finally:
            self._marks = None

    def _mark(self, name: str, stream: object) -> Mark | None:
        """A mark of what is enqueued next on ``stream``, listed for ``timeline``, its start recorded (the
        caller records its end); None where ``stream`` is not the context's."""
        from cuda.bindings import driver

        if int(stream) != int(self.stream):
            return None
        mark = Mark(name, *(checked(driver.cuEventCreate(0)) for _ in range(2)))
        self._marks.append(mark)
        checked(driver.cuEventRecord(mark.start, stream))
        return mark

    @staticmethod
    def _destroyed(marks: list[Mark]) -> None:
        """Destroy the events of ``marks``."""
        from cuda.bindings import driver

        for mark in marks:
            driver.cuEventDestroy(mark.start)
            driver.cuEventDestroy(mark.end)

    def marked_seconds(self, marks: list[Mark]) -> list[tuple[str, float, float]]:
        """Each of ``marks`` (``timeline``) as its name, device seconds and the idle seconds between the end
        of the one before and its start (0 for the first), once run; their events are destroyed."""
        from cuda.bindings import driver

        try:
            if marks:
                checked(driver.cuEventSynchronize(marks[-1].end))
            elapsed = [float(checked(driver.cuEventElapsedTime(mark.start, mark.end))) * 1e-3 for mark in marks]
            gaps = [0.0] + [float(checked(driver.cuEventElapsedTime(before.end, mark.start))) * 1e-3
                            for before, mark in zip(marks, marks[1:])]
            return [(mark.name, seconds, gap) for mark, seconds, gap in zip(marks, elapsed, gaps)]
        finally:
            self._destroyed(marks)

    def finish(self) -> None:
        from cuda.bindings import driver

        checked(driver.cuStreamSynchronize(self.stream))

    def order(self, before: object, after: object) -> None:
        """Make what is enqueued on the stream ``after`` from now on wait for what is on ``before`` now
        (nothing where they are one stream)."""
        from cuda.bindings import driver

        if int(before) in LEGACY_STREAM and int(after) in LEGACY_STREAM or int(before) == int(after):
            return
        event = checked(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING))
        try:
            checked(driver.cuEventRecord(event, before))
            checked(driver.cuStreamWaitEvent(after, event, 0))
        finally:
            driver.cuEventDestroy(event)

    def hold(self) -> None:
        """Hold the stream busy for ``HOLD_SECONDS``, so that what is enqueued next runs back to back, its
        timing free of the host's."""
        if self._hold is None:
            self._hold = self.function(compile_cuda(HOLD_SOURCE, "hold", arch=self.device.arch), "hold")
        self.launch(self._hold, (1,), (1,), [(round(HOLD_SECONDS * 1e9), ctypes.c_ulonglong)])

    def seconds(self, enqueue: Callable[[], object], repeats: int = 1) -> float:
        """Device seconds of what ``enqueue`` puts on the stream, per call, over ``repeats`` calls between
        two events, the stream held busy before the first (``hold``)."""
        from cuda.bindings import driver

        self.hold()
        start, end = (checked(driver.cuEventCreate(0)) for _ in range(2))
        try:
            checked(driver.cuEventRecord(start, self.stream))
            for _ in range(repeats):
                enqueue()
            checked(driver.cuEventRecord(end, self.stream))
            checked(driver.cuEventSynchronize(end))
            return float(checked(driver.cuEventElapsedTime(start, end))) * 1e-3 / repeats
        finally:
            for event in (start, end):
                driver.cuEventDestroy(event)


_contexts: dict[CudaDevice, CudaContext] = {}
_contexts_lock = threading.Lock()


def cuda_context(device: CudaDevice) -> CudaContext:
    """The one ``CudaContext`` of ``device`` in this process, made on first use."""
    with _contexts_lock:
        if device not in _contexts:
            _contexts[device] = CudaContext(device)
        return _contexts[device]


def live_cuda_contexts() -> list[CudaContext]:
    """The CUDA contexts made so far (``clear_plans`` frees what they keep)."""
    with _contexts_lock:
        return list(_contexts.values())
