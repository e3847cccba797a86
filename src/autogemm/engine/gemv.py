"""GEMV's call below ``autogemm.gemv``: y = alpha op(A) x + beta y validated once, on its plan, its
host operands through the transfer machinery (``transfer``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import workload
from ..blas import Op
from ..blas.gemv import GemvProblem
from ..blas.plan_cache import cached_gemv_plan
from ..codelets.gemv import GemvParams
from ..dtypes import get_dtype
from ..errors import ArgumentError, DtypeError, ShapeError
from ..profiles import thresholds_for
from ..runtime import Device
from ..runtime.opencl import commands as ocl
from ..shares.staging import host_result
from .operands import (
    Matrix,
    as_array,
    as_matrix,
    call_context,
    event_list,
    events_of,
    on_device,
    scalar,
    stored,
    stored_vector,
)
from .transfer import one_block, run_blocks


def run_gemv(a: Matrix, x: Matrix, y: Matrix | None, *, alpha: complex | float, beta: complex | float, trans: str,
             device: Device | str | int | None, config: GemvParams | None,
             wait_for: list[ocl.Event] | None) -> Matrix:
    """``autogemm.gemv``'s call: every argument checked before anything is enqueued, then the plan of the
    problem on the operands' storage, enqueued on device arrays or run on host ones."""
    a, x = as_matrix(a, "a"), as_array(x, "x")
    y = None if y is None else as_array(y, "y")
    for name, vector in (("x", x), ("y", y)):
        if vector is not None and vector.ndim != 1:
            raise ShapeError(f"{name} must be 1-D, not {vector.ndim}-D with shape {vector.shape}")
    dt = get_dtype(a.dtype)
    for name, vector in (("x", x), ("y", y)):
        if vector is not None and vector.dtype != a.dtype:
            raise DtypeError(f"a is {a.dtype} but {name} is {vector.dtype}; convert them to one dtype")
    op = Op.from_letter(trans, "trans")
    m, n = a.shape[::-1] if op.transposed else a.shape
    if x.shape[0] != n:
        raise ShapeError(f"op(a) is {m}x{n} but x has {x.shape[0]} elements")
    if y is not None:
        if y.shape[0] != m:
            raise ShapeError(f"y has {y.shape[0]} elements; op(a) x has {m}")
        if isinstance(y, np.ndarray) and not y.flags.writeable:
            raise ArgumentError("y is read-only")
    if config is not None and not isinstance(config, GemvParams):
        raise ArgumentError(f"config must be a GemvParams, not {type(config).__name__}")
    wait_for = event_list(wait_for)
    ctx = call_context(device, {"a": a, "x": x, "y": y})
    limits = thresholds_for(ctx.device)
    asynchronous = any(on_device(v) for v in (a, x, y))
    if wait_for and not asynchronous:
        raise ArgumentError("wait_for is for calls on device arrays; numpy operands are read when the call is made")
    alpha, beta = scalar(alpha, "alpha", dt), scalar(beta, "beta", dt)
    if y is None and beta != 0:
        raise ArgumentError("beta is not 0 but no y was given to scale")
    sa, sx = stored(a, "a"), stored_vector(x, "x")
    if y is not None:
        out = y
    elif asynchronous:
        out = ocl.empty_array(ctx.queue, (m,), dt.numpy)
    else:
        out = host_result(ctx, (m,), dt.numpy, limits)
    sy = stored_vector(out, "y")
    problem = GemvProblem(dt, sa.rows, sa.cols, op.flipped() if sa.flipped else op, sa.ld, sx.ld, sy.ld,
                          sa.offset, sx.offset, sy.offset)
    problem.validate()
    if m == 0:
        return out
    if workload.RECORDER is not None:
        workload.RECORDER.record("gemv", dt.key, problem.layout, problem.rows, problem.cols, 1)
    if config is not None and config.layout != problem.layout:
        raise ArgumentError(f"config has layout {config.layout} but this call reads A in layout {problem.layout} "
                            f"(A {'column' if sa.flipped else 'row'}-major, trans={trans!r})")
    plan = cached_gemv_plan(ctx, replace(problem, offset_a=0, offset_x=0, offset_y=0), config)
    temporaries = [] if plan.allocated else list(plan.temporary_bytes().values())

    def enqueue(buffers: list[ocl.Buffer], events: list[ocl.Event]) -> list[ocl.Event]:
        return plan.enqueue(*buffers, alpha=alpha, beta=beta, wait_for=events,
                            offsets=(sa.offset, sx.offset, sy.offset))

    # A and x are not read when alpha is 0, y only when beta is not 0
    reads = alpha != 0 and n > 0
    return run_blocks(ctx, (sa, sx, sy), (reads, reads, beta != 0), out, temporaries,
                      one_block((sa, sx, sy), enqueue), events_of([a, x, y], ctx.queue) + wait_for,
                      limits)
