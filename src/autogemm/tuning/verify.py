"""``verify``: a configuration about to enter a profile must be right for every shape, not only for the
whole-tile problem it was timed on. It is run through a plan with edge-guarded and padded kernels on
sizes that are not multiples of its tiles, with transposes (conjugate ones for complex), alpha and beta,
beta = 0 over a NaN-filled C, and compared with a float64 reference."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..blas import GemmProblem, LaunchPlan, Op
from ..checking import apply_op, random_matrix, relative_error, tolerance
from ..codelets.simt import SimtParams
from ..dtypes import Dtype
from ..runtime.context import DeviceContext


def verify(ctx: DeviceContext, params: SimtParams, dtype: Dtype, seed: int = 0) -> str | None:
    """None when ``params`` computes every case right, else what went wrong."""
    rng = np.random.default_rng(seed)
    m, n, k = params.block_rows + 3, 2 * params.block_cols + 5, 3 * params.tile_k + 1
    conj = "C" if dtype.is_complex else "T"
    cases = (("guard", "N", "N", 1.0, 0.0), ("pad", "T", conj, 1.5, 0.0), ("guard", conj, "T", -0.5, 0.75),
             ("pad", "N", "T", 1.0, 0.5))
    for edge, ta, tb, alpha, beta in cases:
        a = random_matrix(rng, dtype, (k, m) if ta != "N" else (m, k))
        b = random_matrix(rng, dtype, (n, k) if tb != "N" else (k, n))
        c = random_matrix(rng, dtype.output, (m, n)) if beta else np.full((m, n), np.nan, dtype.output.numpy)
        ref_t = dtype.reference_numpy
        want = alpha * (apply_op(a.astype(ref_t), ta) @ apply_op(b.astype(ref_t), tb))
        if beta:
            want = want + beta * c.astype(ref_t)
        try:
            c = _run(ctx, params, dtype, edge, (a, ta), (b, tb), c, alpha, beta)
        except Exception as exc:   # noqa: BLE001 - any failure disqualifies the configuration
            return f"{edge} {ta}{tb} {m}x{n}x{k}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        error = relative_error(c, want)
        if not error < tolerance(dtype, k):
            return f"{edge} {ta}{tb} {m}x{n}x{k}: relative error {error:.2e}"
    return None


def _run(ctx: DeviceContext, params: SimtParams, dtype: Dtype, edge: str, a: tuple[np.ndarray, str],
         b: tuple[np.ndarray, str], c: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """C = alpha op(A) op(B) + beta C through a plan on device buffers; returns the new C."""
    (a, ta), (b, tb) = a, b
    op_a, op_b = Op.from_letter(ta, "trans_a"), Op.from_letter(tb, "trans_b")
    m, n = c.shape
    k = a.shape[0] if op_a.transposed else a.shape[1]
    problem = GemmProblem.dense(dtype, m, n, k, op_a, op_b)
    plan = LaunchPlan(ctx, problem, params, edge)
    mf = cl.mem_flags
    buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, c)]
    try:
        plan.enqueue(*buffers, alpha=alpha, beta=beta)
        out = np.empty_like(c)
        cl.enqueue_copy(ctx.queue, out, buffers[2])
        return out
    finally:
        plan.release()
        for buf in buffers:
            buf.release()
