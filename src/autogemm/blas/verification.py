"""``verify``: a configuration about to enter a profile must be right for every shape, not only for the
whole-tile problem it was timed on. A GEMM kernel is run through a plan with edge-guarded and padded
kernels on sizes that are not multiples of its tiles, with transposes (conjugate ones for complex), alpha
and beta, beta = 0 over a NaN-filled C; a GEMV kernel on sizes off every block, with a wider leading
dimension, increments, offsets and beta; each compared with a float64 reference."""

from __future__ import annotations

import numpy as np

from ..accuracy import apply_op, random_matrix, random_operands, relative_error, tolerance
from ..codelets.gemv import GemvParams
from ..codelets.registry import GEMM, KernelParams, Params, family_of
from ..dtypes import Dtype
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from .gemv import GemvLaunchPlan, GemvProblem
from .launch_plan import LaunchPlan
from .problem import GemmProblem, Op


def verify(ctx: DeviceContext, params: Params, dtype: Dtype) -> str | None:
    """None when ``params`` (of any family) computes every case of its routine right, else what went
    wrong."""
    return (verify_gemm if family_of(params).routine == GEMM else verify_gemv)(ctx, params, dtype)


def verify_gemm(ctx: DeviceContext, params: KernelParams, dtype: Dtype, seed: int = 0) -> str | None:
    """None when ``params`` computes every GEMM case right, else what went wrong. Where its family adds K
    slices up in the kernel, that kernel too: guarded over ragged edges, and unguarded over whole blocks
    and slices read where they lie."""
    rng = np.random.default_rng(seed)
    ragged = (params.block_rows + 3, 2 * params.block_cols + 5, 3 * params.tile_k + 1)
    whole = (params.block_rows, 2 * params.block_cols, 4 * params.tile_k)
    conj = "C" if dtype.is_complex else "T"
    cases = [("guard", "N", "N", 1.0, 0.0, 1, ragged), ("pad", "T", conj, 1.5, 0.0, 1, ragged),
             ("guard", conj, "T", -0.5, 0.75, 1, ragged), ("pad", "N", "T", 1.0, 0.5, 1, ragged)]
    if family_of(params).sums_slices:
        cases += [("guard", "T", "N", 1.0, 0.5, 3, ragged), ("auto", *params.layout, 1.0, 0.0, 2, whole)]
    for edge, ta, tb, alpha, beta, split, (m, n, k) in cases:
        a, b = random_operands(rng, dtype, m, n, k, ta, tb)
        c = random_matrix(rng, dtype.output, (m, n)) if beta else np.full((m, n), np.nan, dtype.output.numpy)
        ref_t = dtype.reference_numpy
        want = alpha * (apply_op(a.astype(ref_t), ta) @ apply_op(b.astype(ref_t), tb))
        if beta:
            want = want + beta * c.astype(ref_t)
        case = f"{edge} {ta}{tb} {m}x{n}x{k}" + (f" in {split} K slices" if split > 1 else "")
        try:
            c = _run(ctx, params, dtype, edge, split, (a, ta), (b, tb), c, alpha, beta)
        except Exception as exc:   # noqa: BLE001 - any failure disqualifies the configuration
            return f"{case}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        error = relative_error(c, want)
        if not error < tolerance(dtype, k):
            return f"{case}: relative error {error:.2e}"
    return None


def _run(ctx: DeviceContext, params: KernelParams, dtype: Dtype, edge: str, split: int, a: tuple[np.ndarray, str],
         b: tuple[np.ndarray, str], c: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """C = alpha op(A) op(B) + beta C through a plan of ``split`` K slices on device buffers; returns the
    new C."""
    (a, ta), (b, tb) = a, b
    op_a, op_b = Op.from_letter(ta, "trans_a"), Op.from_letter(tb, "trans_b")
    m, n = c.shape
    k = a.shape[0] if op_a.transposed else a.shape[1]
    problem = GemmProblem.dense(dtype, m, n, k, op_a, op_b)
    return _run_plan(ctx, LaunchPlan(ctx, problem, params, edge, split), (a, b, c), alpha, beta)


def _run_plan(ctx: DeviceContext, plan: LaunchPlan | GemvLaunchPlan, operands: tuple[np.ndarray, ...],
              alpha: float, beta: float) -> np.ndarray:
    """Enqueue ``plan`` on device copies of the host ``operands`` (its output last) and return the
    output's new contents; the plan and the buffers are released."""
    buffers = [ocl.buffer_of(ctx.context, x) for x in operands]
    try:
        plan.enqueue(*buffers, alpha=alpha, beta=beta)
        out = np.empty_like(operands[-1])
        ocl.copy(ctx.queue, out, buffers[-1]).wait()
        return out
    finally:
        plan.release()
        for buf in buffers:
            buf.release()


def verify_gemv(ctx: DeviceContext, params: GemvParams, dt: Dtype) -> str | None:
    """What is wrong with ``params`` on problems unlike the tuned one (sizes off every block, a wider
    leading dimension, increments, offsets, beta not 0, conjugation; with several right-hand sides, one
    more than a pass takes, Y stored both ways), or None."""
    rng = np.random.default_rng()
    conjugate = dt.is_complex
    cases = [(37, 53, 1, 3, 0), (1, 300, 1, 3, 0), (300, 1, 1, 3, 0)]
    if params.vectors > 1:
        vectors = params.vectors + 1
        cases += [(29, 41, vectors, 1, 0), (29, 41, vectors, vectors + 2, 1)]
    for rows, cols, vectors, incy, ldy in cases:
        outputs, reduction = (cols, rows) if params.layout == "T" else (rows, cols)
        ldy = ldy or incy * outputs + 3
        problem = GemvProblem(dt, rows, cols, Op(params.layout == "T", conjugate), cols + 3, 2, incy, 5, 1, 2,
                              vectors=vectors, ldx=2 * reduction + 1, ldy=ldy, conjugate_x=conjugate)
        a = random_matrix(rng, dt, (5 + rows * (cols + 3),))
        x = random_matrix(rng, dt, (1 + vectors * problem.ldx,))
        y = random_matrix(rng, dt, (2 + (outputs - 1) * incy + (vectors - 1) * ldy + 1,))
        got = _run_plan(ctx, GemvLaunchPlan(ctx, problem, params), (a, x, y), 0.5, -1.0)
        ref_type = dt.reference_numpy
        stored = a[5:].reshape(rows, cols + 3)[:, :cols].astype(ref_type)
        op_a = apply_op(stored.conj() if conjugate else stored, params.layout)
        xs = x.astype(ref_type)[1 + np.arange(vectors)[None, :] * problem.ldx + 2 * np.arange(reduction)[:, None]]
        at = 2 + np.arange(outputs)[:, None] * incy + np.arange(vectors)[None, :] * ldy
        want = y.astype(ref_type)
        want[at] = 0.5 * op_a @ (xs.conj() if conjugate else xs) - want[at]
        error = np.linalg.norm(got.astype(ref_type) - want) / np.linalg.norm(want)
        if not error < tolerance(dt, reduction):
            return (f"{rows}x{cols} with {vectors} vectors: relative error {error:.2e} (or an element outside Y "
                    "written)")
    return None
