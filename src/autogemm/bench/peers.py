"""The libraries autogemm is measured against, each timed the way it is used, on the same data:
cuBLAS through torch (TF32 off unless asked for, CUDA events; end to end, with the copies, by wall clock;
the bench runs it in a process of its own: ``in_own_process``),
CLBlast through ctypes on autogemm's own OpenCL queue (profiling events), and numpy's BLAS on the CPU
(wall clock). Each
computes op(A) op(B) from row-major operands as stored, and returns the median seconds of several runs
after a warm-up and the result of the last run, for checking."""

from __future__ import annotations

import atexit
import ctypes
import json
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import ml_dtypes
import numpy as np

from ..accuracy import apply_op
from ..dtypes import Dtype, get_dtype
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.timing import time_enqueue


@dataclass
class PeerResult:
    name: str
    seconds: float
    result: np.ndarray


#: Wall-clock timings warm up for at least this long (and one call), at most ``WARMUP_CALLS`` calls:
#: torch's page-locked path is many times slower for its first several calls of a size (its page-locked
#: allocator growing) than after, so one warm-up call left the median on the slow ones.
WARMUP_SECONDS, WARMUP_CALLS = 0.5, 50
#: Calls whose ``runs`` take less than this are timed again until they take this long, at most
#: ``MAX_TIMED_CALLS`` in all: the median of a few short numpy-to-numpy calls differs widely from one run
#: to the next, where medians of dozens agree closely.
TIMED_SECONDS, MAX_TIMED_CALLS = 0.25, 200


#: GPU clock cycles ``cuda_median`` holds the stream for before its start event (about 0.5 ms), so that
#: torch's time to enqueue a call is not counted: timed right after a fill of its output, cuBLAS's product
#: read well below the rate it reads held.
HOLD_CYCLES = 1_000_000


def wall_median(call: Callable[[], np.ndarray], runs: int, warmup: bool = True) -> tuple[float, np.ndarray]:
    """Median wall-clock seconds of ``call`` over ``runs`` calls, and its last result; with ``warmup``, after
    warming up (``WARMUP_SECONDS``) and over more calls where those are short (``TIMED_SECONDS``)."""
    return wall_medians([call], runs, warmup)[0]


def wall_medians(calls: Sequence[Callable[[], np.ndarray]], runs: int, warmup: bool = True
                 ) -> list[tuple[float, np.ndarray]]:
    """``wall_median`` of each of ``calls``, timed in turn, one call of each after another: whatever else
    the machine runs meanwhile (another process, a pool's threads winding down) then slows each alike,
    where timing all of one and then all of the other left it on one of them (on a machine of few cores,
    the ratio of two calls running the same BLAS product swung widely from one run to the next)."""
    outs: list = [None] * len(calls)
    if warmup:
        started, rounds = time.perf_counter(), 0
        while rounds < 1 or (rounds < WARMUP_CALLS and time.perf_counter() - started < WARMUP_SECONDS):
            outs, rounds = [call() for call in calls], rounds + 1
    times: list[list[float]] = [[] for _ in calls]
    while len(times[0]) < runs or (warmup and min(map(sum, times)) < TIMED_SECONDS
                                   and len(times[0]) < MAX_TIMED_CALLS):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            outs[i] = call()
            times[i].append(time.perf_counter() - start)
    return [(statistics.median(each), out) for each, out in zip(times, outs)]


#: numpy's products of this many multiply-adds and more take long enough to be timed once, without a
#: warm-up (``numpy_product``): tens of milliseconds even on a CPU of few cores, where a product of a few
#: milliseconds timed once left its ratio to autogemm's median at the mercy of one sample.
TIMED_ONCE_MULTIPLY_ADDS = 2**32


def numpy_product(a: np.ndarray, b: np.ndarray, trans_a: str = "N", trans_b: str = "N"
                  ) -> tuple[Callable[[], np.ndarray], bool]:
    """numpy's matmul of op(A) op(B) (its BLAS, all CPU cores) as a call, and whether it is small: under
    ``TIMED_ONCE_MULTIPLY_ADDS`` (a larger one is timed once). 16-bit
    operands are multiplied as a numpy user would, converted to float32 (numpy has no BLAS for them),
    the conversions in the call."""
    op_a, op_b = apply_op(a, trans_a), apply_op(b, trans_b)
    if get_dtype(a.dtype).half:
        def product() -> np.ndarray:
            return (op_a.astype(np.float32) @ op_b.astype(np.float32)).astype(a.dtype)
    else:
        def product() -> np.ndarray:
            return op_a @ op_b
    return product, op_a.size * op_b.shape[1] < TIMED_ONCE_MULTIPLY_ADDS


def numpy_gemm(a: np.ndarray, b: np.ndarray, runs: int = 3, trans_a: str = "N", trans_b: str = "N") -> PeerResult:
    """numpy's product (``numpy_product``), timed by the wall clock."""
    product, small = numpy_product(a, b, trans_a, trans_b)
    seconds, out = wall_median(product, runs if small else 1, warmup=small)
    return PeerResult("numpy", seconds, out)


def torch_cuda(tf32: bool = False):
    """torch with CUDA, its float32 products in TF32 or not; None where either is missing."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = tf32
    return torch


def torch_op(x, letter: str):
    """op(x) of a torch tensor for a BLAS trans letter (views; each matrix of a stack)."""
    letter = letter.upper()
    if letter == "N":
        return x
    return (x.conj() if letter == "C" else x).transpose(-2, -1)


def to_cuda(torch, x: np.ndarray):
    """``x`` as a CUDA tensor (bfloat16 passed as its bits: torch does not read ml_dtypes' arrays)."""
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(x).cuda()


def to_numpy(torch, x) -> np.ndarray:
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    return x.cpu().numpy()


def cublas_gemm(a: np.ndarray, b: np.ndarray, runs: int = 5, trans_a: str = "N",
                trans_b: str = "N", tf32: bool = False) -> PeerResult | None:
    """cuBLAS through torch, operands already on the GPU, timed with CUDA events (``tf32``: float32
    products in its TF32 mode); None without CUDA."""
    torch = torch_cuda(tf32)
    if torch is None:
        return None
    ta, tb = torch_op(to_cuda(torch, a), trans_a), torch_op(to_cuda(torch, b), trans_b)
    out = torch.empty((ta.shape[0], tb.shape[1]), dtype=ta.dtype, device="cuda")
    seconds = cuda_median(lambda: torch.matmul(ta, tb, out=out), runs, before=lambda: out.fill_(float("nan")))
    return PeerResult("cuBLAS TF32" if tf32 else "cuBLAS", seconds, to_numpy(torch, out))


def cuda_median(call: Callable[[], object], runs: int, before: Callable[[], object] | None = None) -> float:
    """Median seconds of ``call`` on the GPU between two CUDA events, after one warm-up call;
    ``before`` runs ahead of each (untimed), e.g. to poison the output, and the stream is held busy
    before the start (``HOLD_CYCLES``), as autogemm's CUDA timings are."""
    import torch
    hold = getattr(torch.cuda, "_sleep", None)      # torch's own test helper: held where it has one
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if before is not None:
            before()
        if hold is not None:
            hold(HOLD_CYCLES)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


Result = TypeVar("Result")
_processes: dict[str, ProcessPoolExecutor] = {}
_process_lock = threading.Lock()


def in_own_process(peer: Callable[..., Result], *args: object, **kwargs: object) -> Result:
    """``peer(*args, **kwargs)`` run in the peers' process (one, kept for the run): torch's CUDA context
    in the process that holds autogemm's OpenCL context slows both (torch's page-locked path ran many
    times slower there than in a process of its own, also while the OpenCL context lived in another). The
    operands and the result cross by pickling, outside the timing."""
    return in_process("peers", peer, *args, **kwargs)


def in_process(name: str, call: Callable[..., Result], *args: object, **kwargs: object) -> Result:
    """``call(*args, **kwargs)`` run in the process called ``name``: one per name, started (spawned) on
    first use and kept for the run, so that what a call leaves behind (a CUDA context, pools, plans) is
    there for that name's next call and for no other's. A process that dies (a driver's crash) fails its
    call with ``BrokenProcessPool``; the next call starts a new one."""
    with _process_lock:
        if name not in _processes:
            _processes[name] = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            atexit.register(_processes[name].shutdown)
        process = _processes[name]
    try:
        return process.submit(call, *args, **kwargs).result()
    except BrokenProcessPool:
        with _process_lock:
            if _processes.get(name) is process:
                del _processes[name]
        raise


def cublas_gemm_end_to_end(a: np.ndarray, b: np.ndarray, runs: int = 3, trans_a: str = "N",
                           trans_b: str = "N", pinned: bool = False) -> PeerResult | None:
    """numpy in, numpy out through torch: copy to the GPU, multiply with cuBLAS, copy back (wall clock).
    ``pinned``: as a user who knows torch does it, each operand copied into page-locked memory and from
    there to the GPU without blocking, the product copied back into page-locked memory."""
    torch = torch_cuda()
    if torch is None or (pinned and a.dtype == ml_dtypes.bfloat16):
        return None

    def upload(x: np.ndarray):
        return torch.from_numpy(x).pin_memory().cuda(non_blocking=True) if pinned else to_cuda(torch, x)

    def call() -> np.ndarray:
        product = torch_op(upload(a), trans_a) @ torch_op(upload(b), trans_b)
        if not pinned:
            return to_numpy(torch, product)
        out = torch.empty(product.shape, dtype=product.dtype, pin_memory=True)
        out.copy_(product, non_blocking=True)
        torch.cuda.synchronize()
        return out.numpy()

    seconds, out = wall_median(call, runs)
    return PeerResult(f"cuBLAS{' pinned' if pinned else ''} e2e", seconds, out)


_ROW_MAJOR = 101
_TRANSPOSE = {"N": 111, "T": 112, "C": 113}


class _Float2(ctypes.Structure):
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class _Double2(ctypes.Structure):
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


def _load_clblast() -> ctypes.CDLL | None:
    for name in ("libclblast.so.1", "libclblast.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


#: CLBlast's precision codes per dtype letter (its API and its tuners name precisions so); it has no
#: bfloat16, and its float16 needs the device's cl_khr_fp16.
CLBLAST_PRECISION = {"s": 32, "d": 64, "c": 3232, "z": 6464, "h": 16}


def clblast_tuned_parameters(results: list[dict]) -> dict[str, int]:
    """The fastest configuration in the JSON results of CLBlast's tuner (``clblast_tuner_xgemm`` writes
    one file per kernel variant; pass the parsed files of one precision)."""
    best = min((r for doc in results for r in doc.get("results", [])), key=lambda r: r["time"])
    return {name: int(value) for name, value in best["parameters"].items() if name != "PRECISION"}


def clblast_tuned_from(directory: Path, letter: str) -> dict[str, int] | None:
    """The best parameters ``clblast_tuner_xgemm`` wrote to ``directory`` for dtype ``letter`` (its files
    ``clblast_xgemm_*_<precision>.json``), or None when it wrote none."""
    files = sorted(Path(directory).glob(f"clblast_xgemm_*_{CLBLAST_PRECISION[letter]}.json"))
    if not files:
        return None
    return clblast_tuned_parameters([json.loads(f.read_text()) for f in files])


def clblast_override(ctx: DeviceContext, dt: Dtype, parameters: dict[str, int]) -> None:
    """Make CLBlast use ``parameters`` for its Xgemm kernel of ``dt`` on this device from now on (what its
    tuner found), instead of its database's."""
    lib = _load_clblast()
    if lib is None:
        raise RuntimeError("libclblast is not installed")
    names = (ctypes.c_char_p * len(parameters))(*(n.encode() for n in parameters))
    values = (ctypes.c_size_t * len(parameters))(*parameters.values())
    func = lib.CLBlastOverrideParameters
    func.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t,
                     ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
    func.restype = ctypes.c_int
    status = func(ctx.device.cl_device.int_ptr, b"Xgemm", CLBLAST_PRECISION[dt.letter], len(parameters), names, values)
    if status != 0:
        raise RuntimeError(f"CLBlastOverrideParameters returned status {status}")


def clblast_gemm(ctx: DeviceContext, dt: Dtype, a: np.ndarray, b: np.ndarray, runs: int = 5, trans_a: str = "N",
                 trans_b: str = "N") -> PeerResult | None:
    """CLBlast's xGEMM of op(A) op(B) (row-major operands as stored) on the device's queue; None where it
    is not installed or has no such routine (bfloat16; float16 without the device's cl_khr_fp16; C in
    another type than A and B). A reduced precision mode is compared with CLBlast's product at full
    precision."""
    lib = _load_clblast()
    if lib is None or dt.letter not in CLBLAST_PRECISION or dt.float32_output:
        return None
    if dt.half and not ctx.device.has_extension("cl_khr_fp16"):
        return None
    func = getattr(lib, f"CLBlast{dt.letter.upper()}gemm")
    scalar = {"s": ctypes.c_float, "d": ctypes.c_double, "c": _Float2, "z": _Double2, "h": ctypes.c_uint16}[dt.letter]
    m, k = apply_op(a, trans_a).shape
    n = apply_op(b, trans_b).shape[1]
    lda, ldb = a.shape[1], b.shape[1]
    size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
    func.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, size_t, size_t, size_t, scalar,
                     ptr, size_t, size_t, ptr, size_t, size_t, scalar, ptr, size_t, size_t,
                     ctypes.POINTER(ptr), ctypes.POINTER(ptr)]
    func.restype = ctypes.c_int
    if dt.half:      # cl_half: the bits of a float16
        one, zero = (scalar(int(np.array(x, np.float16).view(np.uint16))) for x in (1.0, 0.0))
    else:
        one = scalar(1.0) if not dt.is_complex else scalar(1.0, 0.0)
        zero = scalar(0.0) if not dt.is_complex else scalar(0.0, 0.0)
    a_buf = ocl.buffer_of(ctx.context, np.ascontiguousarray(a), read_only=True)
    b_buf = ocl.buffer_of(ctx.context, np.ascontiguousarray(b), read_only=True)
    c_host = np.full((m, n), np.nan, dtype=dt.numpy)
    c_buf = ocl.buffer_of(ctx.context, c_host)
    queue = ptr(ctx.queue.int_ptr)

    def call() -> tuple[ocl.Event, ocl.Event]:
        """Enqueue one GEMM; returns a marker before it and CLBlast's last event (it may launch
        helper kernels first)."""
        before = ocl.marker(ctx.queue)
        event = ptr()
        status = func(_ROW_MAJOR, _TRANSPOSE[trans_a.upper()], _TRANSPOSE[trans_b.upper()], m, n, k, one,
                      a_buf.int_ptr, 0, lda, b_buf.int_ptr, 0, ldb,
                      zero, c_buf.int_ptr, 0, n, ctypes.byref(queue), ctypes.byref(event))
        if status != 0:
            raise RuntimeError(f"CLBlast{dt.letter.upper()}gemm returned status {status}")
        return before, ocl.Event.from_int_ptr(event.value, retain=False)

    try:
        times = time_enqueue(ctx.queue, call, warmup=1, runs=runs)
        ocl.copy(ctx.queue, c_host, c_buf)
    finally:
        for buf in (a_buf, b_buf, c_buf):
            buf.release()
    return PeerResult("CLBlast", statistics.median(times), c_host)
