"""Running one GEMM through a plan on device buffers and checking it against a float64 reference.

Operands sit inside larger buffers (an element offset, a leading dimension wider than the matrix),
surrounded by random junk; C is poisoned with NaN when beta is 0 (so an unwritten element fails and a
read of C leaks NaN), and every element outside C must come back unchanged. The error is relative to C's
norm, or, where C's sums cancel (a C of one element), to the norm its elements would have without
cancellation. A 16-bit C must moreover be
the exact result rounded: every element within one unit in its last place."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from autogemm.accuracy import apply_op, random_matrix
from autogemm.blas import GemmProblem, Op
from autogemm.blas.plans import gemm_plan
from autogemm.dtypes import Dtype


def run_and_check(ctx, params, dt: Dtype, m: int, n: int, k: int, trans_a: str, trans_b: str,
                  alpha, beta, edge: str, rng: np.random.Generator, extra_ld: int = 0,
                  offset: int = 0, split_k: int | None = None, batch: int = 1, shared_a: bool = False) -> float:
    """Run the plan and assert correctness; returns the relative error. With ``batch`` > 1 the plan
    computes a strided batch, its products a few elements apart (A one matrix for all when ``shared_a``)."""
    op_a, op_b = Op.from_letter(trans_a, "trans_a"), Op.from_letter(trans_b, "trans_b")
    shapes = {"A": (k, m) if op_a.transposed else (m, k), "B": (n, k) if op_b.transposed else (k, n),
              "C": (m, n)}
    lds = {name: shape[1] + extra_ld for name, shape in shapes.items()}
    strides = {name: 0 if (name == "A" and shared_a) or batch == 1 else (rows - 1) * lds[name] + cols + 3
               for name, (rows, cols) in shapes.items()}
    problem = GemmProblem(dt, m, n, k, op_a, op_b, lda=lds["A"], ldb=lds["B"], ldc=lds["C"],
                          offset_a=offset, offset_b=offset, offset_c=offset, batch=batch, stride_a=strides["A"],
                          stride_b=strides["B"], stride_c=strides["C"])
    hosts, views = {}, {}

    def members(x: np.ndarray, name: str) -> np.ndarray:
        """The ``batch`` x rows x cols view of operand ``name`` in its buffer's elements ``x``."""
        size = x.itemsize
        return np.lib.stride_tricks.as_strided(x[offset:], shape=(batch, *shapes[name]),
                                               strides=(strides[name] * size, lds[name] * size, size))

    for name in shapes:
        stored = dt.output if name == "C" else dt
        hosts[name] = random_matrix(rng, stored, (problem.elements_needed(name) + 5,))
        views[name] = members(hosts[name], name)
    if beta == 0:
        views["C"][...] = np.nan
    c_before = hosts["C"].copy()
    op_a_ref = apply_op(views["A"].astype(dt.reference_numpy), trans_a)
    op_b_ref = apply_op(views["B"].astype(dt.reference_numpy), trans_b)
    ref = alpha * (op_a_ref @ op_b_ref)
    # the size C's elements would have without cancellation (the sum of |a||b| over K, scaled by sqrt(K) to
    # a random sum's): a C of few elements whose sums cancel is measured against it, not against itself
    typical = abs(alpha) * (np.abs(op_a_ref) @ np.abs(op_b_ref)) / np.sqrt(max(k, 1))
    if beta != 0:
        ref = ref + beta * views["C"].astype(dt.reference_numpy)
        typical = typical + abs(beta) * np.abs(views["C"].astype(dt.reference_numpy))

    plan = gemm_plan(ctx, problem, params, edge, split_k)
    mf = cl.mem_flags
    bufs = {name: cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=h) for name, h in hosts.items()}
    try:
        plan.enqueue(bufs["A"], bufs["B"], bufs["C"], alpha, beta)
        got = np.empty_like(hosts["C"])
        cl.enqueue_copy(ctx.queue, got, bufs["C"])
    finally:
        plan.release()
        for buf in bufs.values():
            buf.release()
    got_c = members(got, "C")
    outside = np.ones(got.shape, bool)
    members(outside, "C")[...] = False
    assert np.array_equal(got[outside], c_before[outside]), "elements outside C were changed"
    unwritten = np.count_nonzero(~np.isfinite(got_c))
    assert not unwritten, f"{unwritten} elements of C not written (or NaN read)"
    scale = max(float(np.linalg.norm(ref)), float(np.linalg.norm(typical)))
    err = float(np.linalg.norm(got_c - ref)) / scale if m and n and scale else 0.0
    assert err < dt.tolerance, f"relative error {err:.2e} over {dt.tolerance:.0e} ({plan.describe()})"
    if dt.output.half:
        assert_rounded(got_c, ref, dt, k)
    return err


#: Mantissa bits of the 16-bit types.
MANTISSA_BITS = {"h": 10, "b": 7}


def assert_rounded(got: np.ndarray, ref: np.ndarray, dt: Dtype, k: int) -> None:
    """Every element of ``got`` within one unit in the last place of ``ref`` (and the float32 sum's
    rounding, k units of float32's last place of terms below 1)."""
    magnitude = np.maximum(np.abs(ref), 2.0**-14)
    ulp = np.exp2(np.floor(np.log2(magnitude)) - MANTISSA_BITS[dt.letter])
    off = np.abs(got.astype(np.float64) - ref) - (ulp + k * 2.0**-23)
    assert np.all(off <= 0), f"{np.count_nonzero(off > 0)} elements off by more than one unit in the last place"


def two_runs(ctx, plan, a: np.ndarray, b: np.ndarray, alpha: float) -> list[np.ndarray]:
    """C = alpha A B by ``plan`` twice into one NaN-poisoned C, each result copied back (then released)."""
    m, n = plan.problem.m, plan.problem.n
    mf = cl.mem_flags
    buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x)
               for x in (a, b, np.full((m, n), np.nan, plan.dtype.numpy))]
    results = []
    try:
        for _ in range(2):
            plan.enqueue(*buffers, alpha=alpha)
            results.append(np.empty((m, n), plan.dtype.numpy))
            cl.enqueue_copy(ctx.queue, results[-1], buffers[2]).wait()
    finally:
        plan.release()
        for buffer in buffers:
            buffer.release()
    return results
