"""GEMV and transpose against their peers, measured as the GEMM bench measures: fresh random data, a
warm-up, the median of several runs, every result checked against float64 (complex128). Both routines
are bound by memory, so rates are GB/s: the bytes each must move (A, x and y; the matrix read and written)
over its time. autogemm runs on device arrays, timed by profiling events; cuBLAS's GEMV (torch.mv) and
torch's transposing copy by CUDA events, numpy by wall clock."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..accuracy import KnownReference, apply_op, gemv_flops, random_matrix
from ..blas import Op
from ..blas.gemv import GemvLaunchPlan, GemvProblem
from ..blas.plans import gemv_plan
from ..blas.transpose import Storage, enqueue_transpose
from ..dtypes import Dtype
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.timing import median, time_enqueue
from . import peers
from .peers import PeerResult, wall_median
from .runner import AUTOGEMM, Measurement, measure

CUBLAS_GEMV, TORCH_COPY, NUMPY = "cuBLAS (torch.mv)", "torch .T.contiguous()", "numpy"


@dataclass
class RoutineCase:
    """One problem of one routine: 'gemv N', 'gemv T' or 'transpose', its sizes and bytes moved."""

    routine: str
    dtype: str
    rows: int
    cols: int
    bytes: int
    config: str
    timings: list[Measurement] = field(default_factory=list)

    def gbs(self, name: str) -> float | None:
        found = next((t for t in self.timings if t.name == name), None)
        return self.bytes / found.seconds / 1e9 if found and found.correct and found.seconds else None

    def ratio(self, peer: str) -> float | None:
        """autogemm's rate over ``peer``'s, where both ran correctly."""
        ours, theirs = self.gbs(AUTOGEMM), self.gbs(peer)
        return ours / theirs if ours and theirs else None


def run_gemv(ctx: DeviceContext, dt: Dtype, rows: int, cols: int, trans: str, runs: int,
             rng: np.random.Generator) -> RoutineCase:
    """y = op(A) x for a row-major A of ``rows`` x ``cols``, trans 'N' or 'T'."""
    a = random_matrix(rng, dt, (rows, cols))
    op = Op.from_letter(trans, "trans")
    x = random_matrix(rng, dt, (rows if op.transposed else cols,))
    wide = dt.reference_numpy
    reference = KnownReference(dt, apply_op(a.astype(wide), trans) @ x.astype(wide), x.size)
    plan = gemv_plan(ctx, GemvProblem(dt, rows, cols, op, cols))
    case = RoutineCase(f"gemv {trans}", dt.key, rows, cols, (rows * cols + rows + cols) * dt.itemsize,
                       plan.describe())
    flops = gemv_flops(dt, rows, cols)
    calls = [(AUTOGEMM, lambda: _autogemm_gemv(ctx, plan, a, x)), (CUBLAS_GEMV, lambda: _torch_gemv(a, x, trans, runs)),
             (NUMPY, lambda: PeerResult(NUMPY, *wall_median(lambda: _numpy_gemv(a, x, trans), max(1, runs // 2))))]
    case.timings += [measure(name, call, reference, flops, dt) for name, call in calls]
    plan.release()
    return case


def _autogemm_gemv(ctx: DeviceContext, plan: GemvLaunchPlan, a: np.ndarray, x: np.ndarray, runs: int = 10
                   ) -> PeerResult:
    queue = ctx.queue
    da, dx = ocl.to_device(queue, a), ocl.to_device(queue, x)
    dy = ocl.to_device(queue, np.full(plan.problem.outputs, np.nan, a.dtype))
    times = time_enqueue(queue, lambda: plan.enqueue(da.data, dx.data, dy.data), warmup=2, runs=runs)
    return PeerResult(AUTOGEMM, median(times), dy.get())


def _numpy_gemv(a: np.ndarray, x: np.ndarray, trans: str) -> np.ndarray:
    if a.dtype.itemsize == 2:              # numpy has no BLAS for 16-bit types: a user converts
        return (apply_op(a.astype(np.float32), trans) @ x.astype(np.float32)).astype(a.dtype)
    return apply_op(a, trans) @ x


def _torch_gemv(a: np.ndarray, x: np.ndarray, trans: str, runs: int) -> PeerResult | None:
    torch = peers.torch_cuda()
    if torch is None:
        return None
    ta, tx = peers.to_cuda(torch, a), peers.to_cuda(torch, x)
    op_a = ta.T if trans == "T" else ta
    out = torch.empty(op_a.shape[0], dtype=ta.dtype, device="cuda")
    seconds = peers.cuda_median(lambda: torch.mv(op_a, tx, out=out), runs, before=lambda: out.fill_(float("nan")))
    return PeerResult(CUBLAS_GEMV, seconds, peers.to_numpy(torch, out))


def run_transpose(ctx: DeviceContext, dt: Dtype, rows: int, cols: int, runs: int,
                  rng: np.random.Generator) -> RoutineCase:
    """out = A^T (conjugated for complex dtypes) for a row-major A of ``rows`` x ``cols``."""
    a = random_matrix(rng, dt, (rows, cols))
    op = (a.conj() if dt.is_complex else a).T
    reference = KnownReference(dt, op.astype(dt.reference_numpy), 1, exact=True)
    case = RoutineCase("transpose", dt.key, rows, cols, 2 * rows * cols * dt.itemsize,
                       "pack helper" + (" (conjugating)" if dt.is_complex else ""))
    calls = [(AUTOGEMM, lambda: _autogemm_transpose(ctx, dt, a, runs)), (TORCH_COPY, lambda: _torch_transpose(a, runs)),
             (NUMPY, lambda: PeerResult(NUMPY, *wall_median(lambda: np.ascontiguousarray(op), max(1, runs // 2))))]
    case.timings += [measure(name, call, reference, 0.0, dt) for name, call in calls]
    return case


def _autogemm_transpose(ctx: DeviceContext, dt: Dtype, a: np.ndarray, runs: int) -> PeerResult:
    queue = ctx.queue
    rows, cols = a.shape
    da = ocl.to_device(queue, a)
    out = ocl.to_device(queue, np.full((cols, rows), np.nan, a.dtype))
    src, dst = Storage(da.data, 0, cols, 0), Storage(out.data, 0, rows, 0)

    def once() -> list[ocl.Event]:
        return [enqueue_transpose(ctx, dt, cols, rows, 1, src, dst, True, dt.is_complex)]

    times = time_enqueue(queue, once, warmup=2, runs=runs)
    return PeerResult(AUTOGEMM, median(times), out.get())


def _torch_transpose(a: np.ndarray, runs: int) -> PeerResult | None:
    torch = peers.torch_cuda()
    if torch is None:
        return None
    ta = peers.to_cuda(torch, a)
    op = (ta.conj() if ta.is_complex() else ta).T
    out = torch.empty(op.shape, dtype=ta.dtype, device="cuda")
    seconds = peers.cuda_median(lambda: out.copy_(op), runs, before=lambda: out.fill_(float("nan")))
    return PeerResult(TORCH_COPY, seconds, peers.to_numpy(torch, out))
