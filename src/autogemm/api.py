"""The public high-level call: ``gemm`` on numpy arrays."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .blas import GemmPlan, GemmProblem, Op
from .blas.plan_cache import cached_plan
from .codelets.simt import SimtParams
from .dtypes import Dtype, get_dtype, with_output, with_precision
from .errors import ArgumentError, DtypeError, ShapeError
from .runtime import Device, context_for


@dataclass(frozen=True)
class _Stored:
    """A 2-D numpy operand seen as row-major storage: a 1-D span of memory and its leading dimension.
    ``flipped`` is True when the array is column-major, i.e. the row-major storage of its transpose."""

    span: np.ndarray
    ld: int
    flipped: bool
    rows: int      # of the row-major storage (the array's shape, swapped when flipped)
    cols: int


def _stored(arr: np.ndarray) -> _Stored:
    """The row-major view of ``arr`` without copying where its strides allow, else of a copy."""
    rows, cols = arr.shape
    size = arr.itemsize
    s0, s1 = arr.strides
    if rows and cols:
        if (s1 == size or cols == 1) and s0 % size == 0 and s0 >= cols * size:
            return _Stored(_span(arr, rows, cols, s0 // size), s0 // size, False, rows, cols)
        if (s0 == size or rows == 1) and s1 % size == 0 and s1 >= rows * size:
            return _Stored(_span(arr, cols, rows, s1 // size), s1 // size, True, cols, rows)
    dense = np.ascontiguousarray(arr)
    return _Stored(dense.reshape(-1), max(cols, 1), False, rows, cols)


def _span(arr: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    """The contiguous memory from the first to the last element of a row-major rows x cols view."""
    length = (rows - 1) * ld + cols
    return np.lib.stride_tricks.as_strided(arr, shape=(length,), strides=(arr.itemsize,), writeable=False)


def _as_matrix(value: object, name: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise ArgumentError(f"{name} must be a numpy array, not {type(value).__name__}")
    if value.ndim != 2:
        raise ShapeError(f"{name} must be 2-D, not {value.ndim}-D with shape {value.shape}")
    return value


def _scalar(value: object, name: str, dt: Dtype) -> complex | float:
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise ArgumentError(f"{name} must be a number, not {value!r}")
    if not dt.is_complex and isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if complex(value).imag != 0:
            raise DtypeError(f"{name}={value!r} is complex but the matrices are real ({dt.numpy})")
        value = complex(value).real
    return complex(value) if dt.is_complex else float(value)  # type: ignore[arg-type]


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: complex | float = 1.0,
         beta: complex | float = 0.0, trans_a: str = "N", trans_b: str = "N",
         device: Device | str | int | None = None, config: SimtParams | None = None,
         edge: str = "auto", precision: str | None = None, out_dtype: object = None) -> np.ndarray:
    """C = alpha op(A) op(B) + beta C on an OpenCL device, for numpy arrays of one of the dtypes
    float32, float64, complex64, complex128, float16 and bfloat16 (``ml_dtypes.bfloat16``).

    float16 and bfloat16 products are accumulated in float32; C is of the operands' type, or float32
    when ``out_dtype`` is float32 or ``c`` is a float32 array. Tensor cores multiply them where the device
    has such instructions; elsewhere the operands are converted to float32 on the device first.

    ``precision`` None computes in the arrays' own precision. For float32 and complex64, 'tf32' lets
    tensor cores multiply operands rounded to TF32 (a relative error near 3e-4, as cuBLAS's TF32 mode)
    and '3xtf32' splits each operand into two TF32 parts and sums three products (about float32's
    error); on a device without such instructions both are computed exactly, as float32.

    ``trans_a`` and ``trans_b`` are 'N', 'T' or 'C' (conjugate transpose). Without ``c`` a new array is
    returned (and ``beta`` must be 0); with ``c`` the result is written into it, as BLAS does, and ``c`` is
    returned. Row-major, column-major and strided 2-D views are accepted. ``device`` is a ``Device`` or a
    specification (see ``autogemm devices``); ``config`` a ``SimtParams`` (default: one for the device
    class); ``edge`` chooses how sizes that are not whole tiles are handled ('auto', 'pad', 'guard').
    Every argument is checked before anything runs; on an error the caller's arrays are unchanged.
    """
    a = _as_matrix(a, "a")
    b = _as_matrix(b, "b")
    dt = with_precision(get_dtype(a.dtype), precision)
    if b.dtype != a.dtype:
        raise DtypeError(f"a is {a.dtype} but b is {b.dtype}; convert them to one dtype")
    if c is not None:
        c = _as_matrix(c, "c")
        if out_dtype is not None and c.dtype != get_dtype(out_dtype).numpy:
            raise DtypeError(f"c is {c.dtype} but out_dtype is {get_dtype(out_dtype).numpy}")
    try:
        dt = with_output(dt, c.dtype if c is not None else out_dtype)
    except DtypeError as exc:
        raise DtypeError(f"{'c' if c is not None else 'out_dtype'}: {exc}") from None
    op_a, op_b = Op.from_letter(trans_a, "trans_a"), Op.from_letter(trans_b, "trans_b")
    alpha, beta = _scalar(alpha, "alpha", dt), _scalar(beta, "beta", dt)
    m, k = (a.shape[1], a.shape[0]) if op_a.transposed else a.shape
    k_b, n = (b.shape[1], b.shape[0]) if op_b.transposed else b.shape
    if k != k_b:
        raise ShapeError(f"op(a) is {m}x{k} but op(b) is {k_b}x{n}: inner dimensions differ")
    if c is None:
        if beta != 0:
            raise ArgumentError("beta is not 0 but no c was given to scale")
    else:
        if c.shape != (m, n):
            raise ShapeError(f"c has shape {c.shape}; op(a) op(b) is {m}x{n}")
        if not c.flags.writeable:
            raise ArgumentError("c is read-only")
    if config is not None and not isinstance(config, SimtParams):
        raise ArgumentError(f"config must be a SimtParams, not {type(config).__name__}")
    ctx = context_for(device)

    out = c if c is not None else np.empty((m, n), dtype=dt.output.numpy)
    sa, sb, sc = _stored(a), _stored(b), _stored(out)
    op_a = op_a.flipped() if sa.flipped else op_a
    op_b = op_b.flipped() if sb.flipped else op_b
    if sc.flipped:   # C^T = op(B)^T op(A)^T on the row-major storage of C
        (sa, op_a), (sb, op_b), (m, n) = (sb, op_b.flipped()), (sa, op_a.flipped()), (n, m)
    problem = GemmProblem(dt, m, n, k, op_a, op_b, lda=sa.ld, ldb=sb.ld, ldc=sc.ld)
    plan = cached_plan(ctx, problem, config, edge)
    if m == 0 or n == 0:
        return out
    direct = out.reshape(-1) if out.flags.c_contiguous and not sc.flipped else None
    result = _run(ctx, plan, sa.span, sb.span, sc.span, alpha, beta, direct)
    if result is direct:
        return out
    rows, cols = sc.rows, sc.cols
    size = dt.output.itemsize
    stored = np.lib.stride_tricks.as_strided(result, shape=(rows, cols), strides=(sc.ld * size, size))
    if sc.flipped:
        out[...] = stored.T
    else:
        out[...] = stored
    return out


def _run(ctx, plan: GemmPlan, a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha, beta,
         direct: np.ndarray | None) -> np.ndarray:
    """Upload (C only when beta is not 0: it is not read then), compute and download; returns the new
    span of C, read straight into ``direct`` when given (C's own memory, when it is dense)."""
    mf, queue = cl.mem_flags, ctx.queue
    buffers, sources = [], []
    try:
        for span, needed in ((a, True), (b, True), (c, beta != 0)):
            buffers.append(cl.Buffer(ctx.context, mf.READ_WRITE, max(span.nbytes, span.itemsize)))
            if needed and span.size:
                sources.append(np.ascontiguousarray(span))    # kept alive until the copies are done
                cl.enqueue_copy(queue, buffers[-1], sources[-1], is_blocking=False)
        plan.enqueue(*buffers, alpha=alpha, beta=beta)
        result = direct if direct is not None else np.empty(max(c.size, 1), dtype=c.dtype)
        if c.size:
            cl.enqueue_copy(queue, result, buffers[2])
        return result if direct is not None else result[: c.size]
    finally:
        for buf in buffers:
            buf.release()
