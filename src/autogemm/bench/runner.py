"""``Bench``: time autogemm and its peers on the same problems in one run, and check every result.

For each (dtype, shape): fresh random operands; autogemm with the device's profile, operands on the
device, timed with profiling events (warm-up, median of ``runs``) over a NaN-poisoned C; each peer as it
is used (see ``peers``); with ``end_to_end`` also the numpy-in, numpy-out calls of autogemm (also
shared with the host as its profile's hybrid entry says, "autogemm+host"; in a process of their own,
``end_to_end``) and of cuBLAS (through torch), copies included (named with the suffix " e2e"). Every
result is compared with a float64 reference: all of it for small problems, else a sample of rows (the
first and last blocks and random ones) after checking that every element is finite. The fraction of
peak is against the tensor cores' dense peak for a dtype multiplied by them where NVIDIA publishes it
for the device, else the FMA peak measured on the device in the same run (the micro-benchmark the tuner
uses; ``bench.peaks``)."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..accuracy import Reference, apply_op, gemm_flops, random_operands
from ..api import gemm
from ..blas import GemmProblem, LaunchPlan, Op
from ..blas.complex_embedding import kernel_problem
from ..blas.cuda_gemm import CudaGemm, DeviceOperand, cuda_plan, cuda_target, stack_stride
from ..blas.plans import plan_for
from ..blas.selection import working_dtype
from ..blas.vectors import VectorsPlan
from ..dtypes import DTYPES, Dtype
from ..engine import GemmCall, GemmOptions
from ..engine.dispatch import HOST_BLAS, route_elsewhere
from ..engine.routes.cuda_host import auto_cuda_params, goes_to_cuda
from ..errors import ArgumentError
from ..profiles import thresholds_for
from ..runtime.backend import Runtime, resident_seconds
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.discovery import default_device, find_device
from ..shares.host import HOST, HOST_SETTLE_SECONDS
from ..tuning import fma
from . import peers as peer_functions
from .peaks import MEASURED_FMA, TENSOR, tensor_peak_tflops
from .peers import PeerResult, wall_median, wall_medians
from .shapes import Shape

AUTOGEMM = "autogemm"
END_TO_END = " e2e"          # suffix of the numpy-in, numpy-out timings
#: Peers whose calls go from host arrays to a host array, end to end by nature.
HOST_PEERS = ("numpy",)
#: numpy-in, numpy-out calls are timed at least this many times (after a warm-up): the first calls of a
#: size pay for page-locked memory (torch's caching allocator and autogemm's pools alike), which a median
#: of two still counted (the first calls took several times as long as each call after them).
MIN_END_TO_END_RUNS = 5
#: autogemm sharing the product with the host's BLAS (``gemm(..., devices=[device, 'host'])``)
WITH_HOST = AUTOGEMM + "+host"
PEERS = ("cublas", "clblast", "numpy")
#: cuBLAS in its TF32 mode: the peer of the reduced precision modes, beside its float32 products.
CUBLAS_TF32 = "cuBLAS TF32"


@dataclass
class Measurement:
    """One implementation on one problem: its rate, its error against the reference, and whether it
    passed (a failed or wrong implementation has no rate)."""

    name: str
    seconds: float | None
    tflops: float | None
    error: float | None
    correct: bool
    note: str = ""


class Rates:
    """Looks up the rates in a case's ``measurements``."""

    measurements: list[Measurement]

    def rate(self, name: str) -> float | None:
        """``name``'s rate, when it ran and was correct."""
        found = next((m for m in self.measurements if m.name == name), None)
        return found.tflops if found is not None and found.correct else None


@dataclass
class CaseResult(Rates):
    dtype: str
    shape: Shape
    peak_tflops: float | None
    config: str
    measurements: list[Measurement] = field(default_factory=list)
    peak: str = MEASURED_FMA                 # which peak ``peak_tflops`` is (``bench.peaks``)

    def ratio(self, peer: str) -> float | None:
        """autogemm's rate over ``peer``'s, when both ran correctly: end to end against an end-to-end
        peer, and against numpy (whose calls take host arrays and return one) where autogemm's calls from
        numpy to numpy were timed; else device-resident."""
        if peer.startswith(AUTOGEMM):
            return None
        whole = peer.endswith(END_TO_END) or (peer in HOST_PEERS and self.rate(AUTOGEMM + END_TO_END) is not None)
        ours = self.rate(AUTOGEMM + END_TO_END if whole else AUTOGEMM)
        theirs = self.rate(peer)
        return ours / theirs if ours and theirs else None


class Bench:
    """Runs cases on one device; ``peers`` are names from ``PEERS``."""

    def __init__(self, ctx: DeviceContext, peers: Sequence[str] = PEERS, runs: int = 10,
                 end_to_end: bool = False, seed: int = 0, clblast_tuned: Path | None = None) -> None:
        unknown = set(peers) - set(PEERS)
        if unknown:
            raise ArgumentError(f"unknown peer {', '.join(sorted(unknown))}; choose from {', '.join(PEERS)}")
        self.ctx, self.peers, self.runs, self.end_to_end = ctx, tuple(peers), runs, end_to_end
        self.end_to_end_runs = max(MIN_END_TO_END_RUNS, runs // 3)
        self.rng = np.random.default_rng(seed)
        self._peaks: dict[str, float] = {}
        self.clblast_tuned = clblast_tuned      # a directory of clblast_tuner_xgemm results
        self._clblast_names: dict[str, str] = {}

    def peak_tflops(self, dt: Dtype) -> float:
        """The device's multiply-add peak for ``dt``'s real type, measured (best form and vector width).
        On a CPU, double's is half of float's, whose widest vectors (float16) fill an AVX-512 register:
        double8, which would, crashes PoCL 3 where it builds it afresh, and a register holds half as many
        doubles at the same rate."""
        real = "d" if dt.needs_fp64 else "s"
        cpu = not self.ctx.device.is_gpu
        if real not in self._peaks:
            if cpu and real == "d":
                self._peaks[real] = self.peak_tflops(DTYPES["s"]) / 2
            else:
                widths = (1, 2, 4, 8, 16) if cpu else (1, 2, 4)
                if cpu:         # (numpy's BLAS threads spin on after the reference's product, on these cores)
                    time.sleep(HOST_SETTLE_SECONDS)
                results = fma.benchmark(self.ctx, (real,), widths)
                self._peaks[real] = max(max(r.gflops.values()) for r in results) / 1e3
        return self._peaks[real]

    def run(self, dt: Dtype, shape: Shape) -> CaseResult:
        a, b = random_operands(self.rng, dt, shape.m, shape.n, shape.k, shape.trans_a, shape.trans_b)
        reference = Reference(dt, apply_op(a, shape.trans_a), apply_op(b, shape.trans_b), self.rng)
        flops = gemm_flops(dt, shape.m, shape.n, shape.k)
        tensor_peak = tensor_peak_tflops(self.ctx.device, dt)
        case = CaseResult(dt.key, shape, tensor_peak or self.peak_tflops(dt), "",
                          peak=TENSOR if tensor_peak else MEASURED_FMA)
        plan_or_error = self._plan(dt, shape)
        if not isinstance(plan_or_error, Exception):
            case.config = plan_or_error.params.describe()
        calls: list[tuple[str, Callable[[], PeerResult | None]]] = [
            (AUTOGEMM, lambda: self._autogemm(dt, plan_or_error, a, b, shape))]
        # numpy in and out beside numpy's own product, timed in turn in one process (``end_to_end``)
        beside = self.end_to_end and "numpy" in self.peers
        paired = functools.cache(lambda: self._autogemm_end_to_end(dt, a, b, shape, beside_numpy=beside))
        if self.end_to_end:
            calls.append((AUTOGEMM + END_TO_END, lambda: paired()[0]))
            # shared with the host as the device profile's hybrid entry says (without one: the device alone)
            calls.append((WITH_HOST + END_TO_END, lambda: self._autogemm_end_to_end(dt, a, b, shape, True)[0]))
        ops = dict(trans_a=shape.trans_a, trans_b=shape.trans_b)
        if "cublas" in self.peers:      # torch in a process of its own (``peers.in_own_process``)
            calls.append(("cuBLAS", lambda: peer_functions.in_own_process(
                peer_functions.cublas_gemm, a, b, self.runs, **ops)))
            if dt.precision:      # its own reduced mode, checked as such
                calls.append((CUBLAS_TF32, lambda: peer_functions.in_own_process(
                    peer_functions.cublas_gemm, a, b, self.runs, **ops, tf32=True)))
            if self.end_to_end:
                calls += [(f"cuBLAS{' pinned' if pinned else ''}{END_TO_END}",
                           lambda pinned=pinned: peer_functions.in_own_process(
                               peer_functions.cublas_gemm_end_to_end, a, b, self.end_to_end_runs, **ops,
                               pinned=pinned)) for pinned in (False, True)]
        if "clblast" in self.peers:
            calls.append((self._clblast_peer(dt),
                          lambda: peer_functions.clblast_gemm(self.ctx, dt, a, b, self.runs, **ops)))
        if "numpy" in self.peers:
            numpy_runs = max(1, min(3, self.runs))
            calls.append(("numpy", (lambda: _beside(paired, a, b, numpy_runs, ops)) if beside
                          else lambda: peer_functions.numpy_gemm(a, b, numpy_runs, **ops)))
        for name, call in calls:
            precision = DTYPES[f"{dt.letter}.tf32"] if name == CUBLAS_TF32 else dt
            if dt.float32_output and not name.startswith(AUTOGEMM):
                precision = dt.native        # the peers write C in the operands' 16 bits
            case.measurements.append(measure(name, call, reference, flops, precision))
        return case

    def _clblast_peer(self, dt: Dtype) -> str:
        """Give CLBlast its tuner's parameters for ``dt`` the first time ``dt`` is benchmarked (when
        ``clblast_tuned`` has them); the peer's name: "CLBlast tuned" with them, else "CLBlast"."""
        if dt.letter not in self._clblast_names:
            params = (peer_functions.clblast_tuned_from(self.clblast_tuned, dt.letter)
                      if self.clblast_tuned else None)
            if params:
                peer_functions.clblast_override(self.ctx, dt, params)
            self._clblast_names[dt.letter] = "CLBlast tuned" if params else "CLBlast"
        return self._clblast_names[dt.letter]

    def _plan(self, dt: Dtype, shape: Shape) -> LaunchPlan | VectorsPlan | CudaGemm | Exception:
        """The plan ``gemm`` computes the shape's product with (on the CUDA path where ``gemm`` takes it
        there; else ``blas.plans.plan_for``: a multi-vector GEMV's where C has few columns or rows, else
        a GEMM's), or why there is none."""
        try:
            # (goes_to_cuda first: the target's lookup makes a CUDA context, which a product on OpenCL
            # would carry for nothing)
            op_a, op_b = Op.from_letter(shape.trans_a, "trans_a"), Op.from_letter(shape.trans_b, "trans_b")
            limits = thresholds_for(self.ctx.device)
            dt = working_dtype(dt, shape.m, shape.n, shape.k, limits)
            kernel_dt, (m, n, k), ops = kernel_problem(dt, (shape.m, shape.n, shape.k), (op_a, op_b))
            cuda = goes_to_cuda(kernel_dt, m, n, k, limits, *ops)
            cuda_ctx = cuda_target(self.ctx.device, kernel_dt)[0] if cuda else None
            if cuda_ctx is not None:
                params = auto_cuda_params(self.ctx.device, kernel_dt, m, n, k, *ops, cuda_ctx, limits)
                if params is not None:
                    return cuda_plan(cuda_ctx, dt, shape.m, shape.n, shape.k, params)
            return plan_for(self.ctx, GemmProblem.dense(dt, shape.m, shape.n, shape.k, op_a, op_b))
        except Exception as exc:   # noqa: BLE001 - reported in the table, the run goes on
            return exc

    def _autogemm(self, dt: Dtype, plan: LaunchPlan | VectorsPlan | CudaGemm | Exception, a: np.ndarray, b: np.ndarray,
                  shape: Shape) -> PeerResult:
        """Device-resident, on the plan's runtime (OpenCL, or the CUDA path, whose stored operands are laid
        out for the kernel within the timing, as ``gemm`` does each call): operands already on the device,
        C poisoned with NaN, the device's own timing after a warm-up."""
        if isinstance(plan, Exception):
            raise plan
        return resident_result(AUTOGEMM, plan, a, b, shape, np.full((shape.m, shape.n), np.nan, dt.output.numpy),
                               self.runs)

    def _autogemm_end_to_end(self, dt: Dtype, a: np.ndarray, b: np.ndarray, shape: Shape,
                             with_host: bool = False, beside_numpy: bool = False) -> list[PeerResult]:
        """numpy in, numpy out, in a process of its own (``end_to_end``), and with ``beside_numpy``
        numpy's product timed in turn with it."""
        return peer_functions.in_process(AUTOGEMM, end_to_end, self.ctx.device.slot, dt.key, a, b, shape.trans_a,
                                         shape.trans_b, with_host, self.end_to_end_runs, beside_numpy)


def end_to_end(device: str, dtype: str, a: np.ndarray, b: np.ndarray, trans_a: str, trans_b: str, with_host: bool,
               runs: int, beside_numpy: bool = False) -> list[PeerResult]:
    """``gemm`` from numpy to numpy on ``device`` (a specification), streamed where large, or shared with
    the host as the device profile's hybrid entry says (``with_host``), timed by the wall clock; with
    ``beside_numpy``, numpy's own product too: where both run on the host's cores (a device that shares
    the host's memory, or the call's host route) the two timed in turn (``peers.wall_medians``), as one
    program using both runs them; else numpy's after a pause (``HOST_SETTLE_SECONDS``), where in turn its
    BLAS threads, still spinning, would take the cores the copy threads of the next call need; numpy's
    once, after, where it is large (``peers.numpy_product``). It
    runs in a process of its own, as a numpy user's program would: the bench's own timings make a CUDA
    context for products on the CUDA path, which would stay beside this call's OpenCL context, and a
    CUDA context slows the OpenCL one in its process (see ``peers.in_own_process``)."""
    dt, found = DTYPES[dtype], find_device(device)
    # as a numpy user calls it: the options that are not their defaults, the default device unnamed
    given: dict = {"devices": [found, HOST]} if with_host else {} if found == default_device() else {"device": found}
    given |= {name: op for name, op in (("trans_a", trans_a), ("trans_b", trans_b)) if op != "N"}
    if dt.precision:
        given["precision"] = dt.precision
    if dt.output.numpy != a.dtype:
        given["out_dtype"] = dt.output.numpy
    # (numpy's operands made only where it is timed: a conjugate transpose is a copy)
    product, small = peer_functions.numpy_product(a, b, trans_a, trans_b) if beside_numpy else (None, False)
    in_turn = beside_numpy and small and (found.shares_host_memory or route_elsewhere(
        GemmCall.build(a, b, None, None, GemmOptions(**given)).in_working_dtype())[0] == HOST_BLAS)
    time.sleep(HOST_SETTLE_SECONDS)
    timed = wall_medians([lambda: gemm(a, b, **given), *([product] if in_turn else [])], runs)
    if beside_numpy and not in_turn:        # (a large one long enough to be timed once)
        time.sleep(HOST_SETTLE_SECONDS)
        timed.append(wall_median(product, runs, warmup=True) if small else wall_median(product, 1, warmup=False))
    names = [(WITH_HOST if with_host else AUTOGEMM) + END_TO_END, "numpy"]
    return [PeerResult(name, seconds, out) for name, (seconds, out) in zip(names, timed)]


def _beside(paired: Callable[[], list[PeerResult]], a: np.ndarray, b: np.ndarray, runs: int, ops: dict
            ) -> PeerResult:
    """numpy's product as timed in turn with autogemm's numpy call (``paired``), or, where that call
    failed, alone in its process."""
    try:
        return paired()[1]
    except Exception:   # noqa: BLE001 - autogemm's failure is its own row's; numpy is timed still
        return peer_functions.in_process(AUTOGEMM, peer_functions.numpy_gemm, a, b, runs, **ops)


def measure(name: str, call: Callable[[], PeerResult | None], reference: Reference,
             flops: float, precision: Dtype) -> Measurement:
    try:
        got = call()
    except Exception as exc:   # noqa: BLE001 - a failing implementation is reported, the run goes on
        return Measurement(name, None, None, None, False, f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
    if got is None:
        return Measurement(name, None, None, None, False, "not available")
    error, ok = reference.check(got.result, precision)
    return Measurement(name, got.seconds, flops / got.seconds / 1e12 if got.seconds > 0 else None,
                       None if math.isinf(error) else error, ok, "" if ok else "wrong result")


def resident_result(name: str, plan: LaunchPlan | VectorsPlan | CudaGemm, a: np.ndarray, b: np.ndarray,
                    shape: Shape, poisoned: np.ndarray, runs: int) -> PeerResult:
    """``plan``'s product (or strided batch) of A and B stored as ``shape`` says, C ``poisoned``, all on
    its runtime's device first, timed as that runtime times it after a warm-up (``resident_seconds``), as
    ``name``; the plan is released after (the CUDA path's plans keep nothing between calls)."""
    runtime = plan.ctx
    try:
        with on_device(runtime, (a, b, poisoned)) as memory:
            seconds = resident_seconds(runtime, launch_of(plan, memory, a, b, shape), runs)
            runtime.download(poisoned, memory[2])
    finally:
        if not isinstance(plan, CudaGemm):
            plan.release()
    return PeerResult(name, seconds, poisoned)


@contextmanager
def on_device(runtime: Runtime, arrays: Sequence[np.ndarray]) -> Iterator[list]:
    """Memory of ``runtime``'s device holding a copy of each of ``arrays``, within one of its sessions,
    released after."""
    with runtime.session():
        memory = [runtime.allocate(x.nbytes) for x in arrays]
        try:
            for to, x in zip(memory, arrays):
                runtime.upload(to, x)
            yield memory
        finally:
            for block in memory:
                block.release()


def launch_of(plan: LaunchPlan | VectorsPlan | CudaGemm, memory: list, a: np.ndarray, b: np.ndarray,
              shape: Shape) -> Callable[[], object]:
    """One run of ``plan`` on A, B and C in ``memory`` (A and B stored as ``shape`` says), as its runtime
    times it."""
    if isinstance(plan, CudaGemm):
        stored_a, stored_b = stored_operands(memory, a, b, shape)
        return lambda: plan.enqueue(stored_a, stored_b, memory[2], 1.0, 0.0)
    return lambda: plan.enqueue(*memory)


def stored_operands(memory: list, a: np.ndarray, b: np.ndarray, shape: Shape) -> tuple[DeviceOperand, DeviceOperand]:
    """The CUDA path's view of A and B in ``memory`` (row-major matrices or dense stacks of them, stored as
    ``shape`` says)."""
    op_a, op_b = Op.from_letter(shape.trans_a, "trans_a"), Op.from_letter(shape.trans_b, "trans_b")
    return (DeviceOperand.of_a(memory[0], shape.m, a.shape[-1], op_a, stack_stride(a.shape)),
            DeviceOperand.of_b(memory[1], shape.n, b.shape[-1], op_b, stack_stride(b.shape)))
