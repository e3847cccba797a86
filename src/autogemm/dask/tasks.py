"""The product of one pair of blocks, run by a Dask worker: on the worker's device through
``autogemm.gemm``, or with numpy's BLAS where the worker has no usable device (said once per device).
The blocks of A and B a worker uploads stay on its device for the later tasks that read them again
(``KeptBlocks``): a block of A serves a whole row of C's blocks, one of B a whole column. Where the
worker is a thread of the caller's process, a block of C is written at its place in the product's result
array (``block_in_place``, ``assembly``): by the device where that array is page-locked."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from ..accuracy import apply_op
from ..api import gemm
from ..engine.transfer import staged_uploads
from ..errors import DeviceError
from ..profiles import thresholds_for
from ..runtime import Device, context_for, context_for_queue
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.discovery import default_device, find_device
from ..shares.copying import parallel_copy
from ..shares.staging import host_result, in_result_pool, page_locked, read_into
from .assembly import INPROC, claim, in_process, memory_owner

log = logging.getLogger("autogemm.dask")
#: The share of a device's memory its worker keeps uploaded blocks of A and B in.
KEPT_SHARE = 0.25

#: Each worker's device, as ``"P:D"`` (set by ``AutogemmPlugin``), by the worker's address: workers that
#: are threads of one process each keep their own.
_slots: dict[str, str] = {}
_slots_lock = threading.Lock()


def pin_worker(address: str, slot: str) -> None:
    """Make ``slot`` the device of the worker at ``address``."""
    with _slots_lock:
        _slots[address] = slot


def unpin_worker(address: str) -> None:
    """Forget the device of the worker at ``address`` (closed)."""
    with _slots_lock:
        _slots.pop(address, None)


def workers_in_process() -> list[str]:
    """The addresses of the pinned workers that are threads of this process, in order."""
    with _slots_lock:
        return sorted(address for address in _slots if address.startswith(INPROC))


def worker_device() -> Device | None:
    """The device of the worker running this (its pinned slot; outside a pinned worker, ``AUTOGEMM_DEVICE``
    or the default device), or None where there is none; the reason is logged once."""
    try:
        from distributed import get_worker

        address = get_worker().address
    except (ImportError, ValueError):
        address = None
    return device_of_worker(address)


def device_of_worker(address: str | None) -> Device | None:
    """The device of the worker at ``address`` (see ``worker_device``)."""
    with _slots_lock:
        slot = _slots.get(address)
    return slot_device(slot)


@functools.cache
def slot_device(slot: str | None) -> Device | None:
    """The device of ``slot`` (``"P:D"``; None: ``AUTOGEMM_DEVICE`` or the default device), or None where
    there is none, said once."""
    try:
        return find_device(slot) if slot else default_device()
    except DeviceError as exc:
        log.warning("autogemm.dask: no usable OpenCL device in this worker (%s); its block products run "
                    "on numpy's BLAS", exc)
        return None


def block_product(a: np.ndarray | list[np.ndarray], b: np.ndarray | list[np.ndarray], *, trans_a: str,
                  trans_b: str, alpha: complex, place: Callable[[Device | None], Place] | None = None
                  ) -> np.ndarray:
    """``alpha`` op(A) op(B) of one pair of blocks, or the sum over K of such products of two lists of
    blocks (A's row panel and B's column panel, in K's order): the pairs are uploaded (or found kept) and
    multiplied into the block of C on the device, which stays there until the sum is made. The block is
    written at ``place(device)`` where given (returned as its view there), else into a new array."""
    pairs = list(zip(a, b)) if isinstance(a, list) else [(a, b)]
    device = worker_device()
    if device is None:
        product = sum(alpha * (apply_op(x, trans_a) @ apply_op(y, trans_b)) for x, y in pairs)
        if place is None:
            return product
        out = place(None).view(product.shape)
        out[...] = product
        return out
    first_a, first_b = pairs[0]
    rows = first_a.shape[1 if trans_a != "N" else 0]
    cols = first_b.shape[0 if trans_b != "N" else 1]
    queue, ctx = thread_queue(device), context_for(device)     # (the device's pools serve every thread)
    nbytes = rows * cols * first_a.dtype.itemsize
    memory = ctx.buffers.take(nbytes)       # as gemm's own operands: kept for the next block, not freed
    try:
        c = ocl.DeviceArray(queue, (rows, cols), first_a.dtype, data=memory)
        return _product_into(c, pairs, device, place, trans_a=trans_a, trans_b=trans_b, alpha=alpha)
    finally:
        queue.finish()
        ctx.buffers.give(memory, nbytes)


def _product_into(c: ocl.DeviceArray, pairs: list[tuple[np.ndarray, np.ndarray]], device: Device,
                  place: Callable[[Device | None], Place] | None, *, trans_a: str, trans_b: str, alpha: complex
                  ) -> np.ndarray:
    """``block_product`` on ``device``: the sum made in ``c`` in the device's turn, the first pair of blocks
    uploaded (or found kept) before it and each next one while the last multiplies (one pair at a time
    beyond those kept: a panel may not fit beside them), then brought back to ``place(device)`` (found
    while the device computes), else into a new array."""
    queue, kept = c.queue, kept_blocks(device)
    first = kept.on_device(queue, pairs[0][0]), kept.on_device(queue, pairs[0][1])    # before the turn
    with device_turn(device):
        started = time.perf_counter()
        for step, (x, y) in enumerate(pairs):     # (each next pair uploaded while the last multiplies)
            x, y = first if step == 0 else (kept.on_device(queue, x), kept.on_device(queue, y))
            gemm(x, y, c, alpha=alpha, beta=1.0 if step else 0.0, trans_a=trans_a, trans_b=trans_b)
        at = place(device) if place is not None else None
        c.finish()
        back = time.perf_counter()
        _record(TURN, device, started, back)
    try:
        return _brought_back(c, at, device)
    finally:
        _record(COPY, device, back, time.perf_counter())


def _brought_back(c: ocl.DeviceArray, at: Place | None, device: Device) -> np.ndarray:
    """The block of C computed in ``c`` on the host: at ``at`` (written there by the device where it lies
    in a page-locked result, else through the context's kept page-locked memory), else a new array."""
    if at is not None and in_result_pool(at.array):     # the device writes it there, no host copy
        read_into(c.queue, at.array, c.data, at.row, at.col, c.shape, c.events).wait()
        return at.view(c.shape)
    ctx = context_for(device)
    if at is None:
        return c.get(ary=host_result(ctx, c.shape, c.dtype, thresholds_for(device)))
    out = at.view(c.shape)
    with page_locked(ctx, c.nbytes) as memory:      # kept: page-locking a block's bytes anew took longer
        block = memory[:c.nbytes].view(c.dtype).reshape(c.shape)
        c.get(ary=block)
        parallel_copy(out, block)
    return out


_turns: dict[Device, threading.Lock] = {}
_turns_lock = threading.Lock()


def device_turn(device: Device) -> threading.Lock:
    """The lock a block product holds on ``device`` from its first kernel to its last one's end: a worker's
    threads take turns, one bringing its block back and copying it into place while the other's kernels
    run. Sharing the device, their kernels tend to end together and leave it idle while both copy."""
    with _turns_lock:
        return _turns.setdefault(device, threading.Lock())


#: What a span of a block product is: its turn on the device (from its first kernel's enqueue to its last
#: one's end), or its block's way back (read back and copied into place).
TURN, COPY = "turn", "copy"
#: A span: what it is (``TURN`` or ``COPY``), the device, and when it began and ended (seconds,
#: ``time.perf_counter``).
Span = tuple[str, Device, float, float]
_recorders: list[list[Span]] = []


@contextlib.contextmanager
def recorded_spans() -> Iterator[list[Span]]:
    """The spans of this process's block products while the ``with`` block runs: their sums over a
    product's wall time and devices say how busy the devices were, and how long blocks took to come back
    (only where the workers are threads of this process)."""
    spans: list[Span] = []
    with _turns_lock:
        _recorders.append(spans)
    try:
        yield spans
    finally:
        with _turns_lock:
            _recorders.remove(spans)


def spans_share(spans: list[Span], seconds: float, kind: str = TURN) -> float | None:
    """The share of ``seconds`` (a product's wall time) that the devices of ``spans`` spent in spans of
    ``kind``, on average over them; None without spans."""
    devices = {span[1] for span in spans}
    if not devices or seconds <= 0:
        return None
    return sum(end - start for what, _, start, end in spans if what == kind) / (seconds * len(devices))


def _record(kind: str, device: Device, start: float, end: float) -> None:
    with _turns_lock:
        for spans in _recorders:
            spans.append((kind, device, start, end))


class Place(NamedTuple):
    """Where a block of C goes: the C-contiguous array it is part of, and its first row and column."""

    array: np.ndarray
    row: int
    col: int

    def view(self, shape: tuple[int, int]) -> np.ndarray:
        """The block's view of ``array``."""
        return self.array[self.row:self.row + shape[0], self.col:self.col + shape[1]]


def block_in_place(a: list[np.ndarray], b: list[np.ndarray], rows: np.ndarray, cols: np.ndarray, *, result: str,
                   shape: tuple[int, int], trans_a: str, trans_b: str, alpha: complex) -> np.ndarray:
    """``block_product`` of the block of C at ``rows`` and ``cols`` (the ranges of C's indices it covers),
    written at its place in a result array of ``result`` where the worker shares the caller's process
    (``assembly``: computing the product then takes no copy), else into a new array."""
    place = None
    if in_process() and len(rows) and len(cols):
        row, col, dtype = int(rows[0]), int(cols[0]), a[0].dtype

        def place(device: Device | None) -> Place:
            allocate = ((lambda shape, dtype: host_result(context_for(device), shape, dtype, thresholds_for(device)))
                        if device is not None else lambda shape, dtype: np.empty(shape, dtype))
            return Place(claim(result, shape, dtype, row, col, allocate), row, col)

    return block_product(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha, place=place)


class KeptBlocks:
    """Host blocks uploaded to one device and kept there, the least recently used dropped past
    ``capacity`` bytes. A block is known by its memory (address, shape, strides, dtype) while the array
    that owns that memory lives: dask's chunks are not written once made, so while their owner lives
    the uploaded copy is theirs."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._blocks: OrderedDict[tuple, tuple[weakref.ref, ocl.DeviceArray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def on_device(self, queue: ocl.Queue, x: np.ndarray) -> ocl.DeviceArray:
        """``x`` on the device (a C-ordered copy): the kept one, else uploaded through page-locked memory
        now and kept."""
        owner = memory_owner(x)
        key = (x.__array_interface__["data"][0], x.shape, x.strides, x.dtype.str)
        with self._lock:
            found = self._blocks.get(key)
            if found is not None and found[0]() is owner:
                self._blocks.move_to_end(key)
                return found[1]
        uploaded = ocl.empty_array(queue, x.shape, x.dtype)
        ctx = context_for_queue(queue)
        if ctx.device.shares_host_memory or not x.size:       # no DMA to feed: a copy is all it takes
            uploaded.set(np.ascontiguousarray(x))
        else:
            with page_locked(ctx, x.nbytes) as memory:
                ocl.wait(staged_uploads(queue, [(uploaded.data, memory, x)]))
        with self._lock:
            replaced = self._blocks.pop(key, None)
            self._bytes += uploaded.nbytes - (replaced[1].nbytes if replaced else 0)
            self._blocks[key] = (weakref.ref(owner), uploaded)
            while self._bytes > self.capacity and len(self._blocks) > 1:
                _, (_, dropped) = self._blocks.popitem(last=False)
                self._bytes -= dropped.nbytes
        return uploaded


@functools.cache
def kept_blocks(device: Device) -> KeptBlocks:
    """The blocks kept on ``device`` (one store for all of a process's workers on it)."""
    return KeptBlocks(int(KEPT_SHARE * device.global_mem_bytes))


_queues = threading.local()


def thread_queue(device: Device) -> ocl.Queue:
    """An in-order queue of ``device``'s context for the calling thread, made once: the block products of
    a worker's threads each run on a queue of their own, so that one's copies overlap another's
    kernels, as a stream's copy queues do."""
    queues = getattr(_queues, "by_device", None)
    if queues is None:
        queues = _queues.by_device = {}
    if device not in queues:
        queues[device] = ocl.Queue(context_for(device).context, device.cl_device)
    return queues[device]


def partial_product(a: np.ndarray, b: np.ndarray, *, trans_a: str, trans_b: str, alpha: complex) -> np.ndarray:
    """``block_product`` of one pair of blocks with a middle axis of length 1: the K block it came from,
    summed away later."""
    return block_product(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha)[:, None, :]
