"""The libraries autogemm is measured against, each timed the way it is used, on the same data:
cuBLAS through torch (TF32 off, CUDA events), CLBlast through ctypes on autogemm's own OpenCL queue
(profiling events), and numpy's BLAS on the CPU (wall clock). Each returns the median seconds of
several runs after a warm-up and the result of the last run, for checking."""

from __future__ import annotations

import ctypes
import statistics
import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..dtypes import Dtype
from ..runtime.context import DeviceContext
from ..runtime.timing import event_seconds


@dataclass
class PeerResult:
    name: str
    seconds: float
    result: np.ndarray


def numpy_gemm(a: np.ndarray, b: np.ndarray, runs: int = 3) -> PeerResult:
    """numpy's matmul (its BLAS, all CPU cores)."""
    out = a @ b
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = a @ b
        times.append(time.perf_counter() - start)
    return PeerResult("numpy", statistics.median(times), out)


def cublas_gemm(a: np.ndarray, b: np.ndarray, runs: int = 5) -> PeerResult | None:
    """cuBLAS through torch, with TF32 off; None where torch or CUDA is missing."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    out = torch.empty((a.shape[0], b.shape[1]), dtype=ta.dtype, device="cuda").fill_(float("nan"))
    torch.matmul(ta, tb, out=out)
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        out.fill_(float("nan"))
        start.record()
        torch.matmul(ta, tb, out=out)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return PeerResult("cuBLAS", statistics.median(times), out.cpu().numpy())


_ROW_MAJOR, _NO_TRANS = 101, 111


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


_PRECISION = {"s": 32, "d": 64, "c": 3232, "z": 6464}


def clblast_tuned_parameters(results: list[dict]) -> dict[str, int]:
    """The fastest configuration in the JSON results of CLBlast's tuner (``clblast_tuner_xgemm`` writes
    one file per kernel variant; pass the parsed files of one precision)."""
    best = min((r for doc in results for r in doc.get("results", [])), key=lambda r: r["time"])
    return {name: int(value) for name, value in best["parameters"].items() if name != "PRECISION"}


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
    status = func(ctx.device.cl_device.int_ptr, b"Xgemm", _PRECISION[dt.letter], len(parameters), names, values)
    if status != 0:
        raise RuntimeError(f"CLBlastOverrideParameters returned status {status}")


def clblast_gemm(ctx: DeviceContext, dt: Dtype, a: np.ndarray, b: np.ndarray, runs: int = 5) -> PeerResult | None:
    """CLBlast's xGEMM (row-major, no transposes) on the device's queue; None where it is not installed."""
    lib = _load_clblast()
    if lib is None:
        return None
    func = getattr(lib, f"CLBlast{dt.letter.upper()}gemm")
    scalar = {"s": ctypes.c_float, "d": ctypes.c_double, "c": _Float2, "z": _Double2}[dt.letter]
    m, k = a.shape
    n = b.shape[1]
    size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
    func.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, size_t, size_t, size_t, scalar,
                     ptr, size_t, size_t, ptr, size_t, size_t, scalar, ptr, size_t, size_t,
                     ctypes.POINTER(ptr), ctypes.POINTER(ptr)]
    func.restype = ctypes.c_int
    one = scalar(1.0) if not dt.is_complex else scalar(1.0, 0.0)
    zero = scalar(0.0) if not dt.is_complex else scalar(0.0, 0.0)
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a))
    b_buf = cl.Buffer(ctx.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(b))
    c_host = np.full((m, n), np.nan, dtype=dt.numpy)
    c_buf = cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=c_host)
    queue = ptr(ctx.queue.int_ptr)

    def call() -> tuple[cl.Event, cl.Event]:
        """Enqueue one GEMM; returns a marker before it and CLBlast's last event (it may launch
        helper kernels first)."""
        before = cl.enqueue_marker(ctx.queue)
        event = ptr()
        status = func(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, one, a_buf.int_ptr, 0, k, b_buf.int_ptr, 0, n,
                      zero, c_buf.int_ptr, 0, n, ctypes.byref(queue), ctypes.byref(event))
        if status != 0:
            raise RuntimeError(f"CLBlast{dt.letter.upper()}gemm returned status {status}")
        return before, cl.Event.from_int_ptr(event.value, retain=False)

    try:
        call()[1].wait()
        times = [event_seconds(*call()) for _ in range(runs)]
        cl.enqueue_copy(ctx.queue, c_host, c_buf)
    finally:
        for buf in (a_buf, b_buf, c_buf):
            buf.release()
    return PeerResult("CLBlast", statistics.median(times), c_host)
