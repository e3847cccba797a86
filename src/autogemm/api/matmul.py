"""``matmul``: numpy's ``matmul`` (the ``@`` operator) on the device, for 1-D, 2-D and stacked operands."""

from __future__ import annotations

import numpy as np

from ..engine.operands import Matrix, as_array, call_context, events_of, hand_events, on_device
from ..engine.routes.cuda_tensors import is_cuda_tensor
from ..engine.routes.host_blas import plain_product
from ..errors import ArgumentError, DtypeError, ShapeError
from ..profiles import thresholds_for
from ..runtime import Device
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.memory import reports_full_memory
from ..shares.staging import host_result
from .batched import gemm_batched
from .gemm import gemm


def _operands(a: object, b: object) -> tuple[Matrix, Matrix]:
    """``a`` and ``b`` as ``matmul`` computes them: an array-like (a list, a tuple) converted once as
    numpy converts it, a host array in the other byte order converted to this machine's, and host
    operands of two dtypes both converted to the one numpy's ``matmul`` returns (device arrays are never
    copied to convert them; ``gemm`` says what to do about those)."""
    a, b = (x if isinstance(x, (np.ndarray, ocl.DeviceArray)) else np.asarray(x) for x in (a, b))
    a, b = (x.astype(x.dtype.newbyteorder("="), copy=False) if isinstance(x, np.ndarray) and not x.dtype.isnative
            else x for x in (a, b))
    for value, name in ((a, "a"), (b, "b")):
        if as_array(value, name).ndim == 0:
            raise ShapeError(f"{name} is a scalar; matmul needs at least one dimension (numpy's rule too: "
                             f"multiply by a scalar with *)")
    if a.dtype != b.dtype and not (on_device(a) or on_device(b)):
        common = np.result_type(a, b)
        a, b = a.astype(common, copy=False), b.astype(common, copy=False)
    return a, b


def matmul(a, b, out=None, *, device: Device | str | int | None = None, precision: str | None = None,
           wait_for: list[ocl.Event] | None = None):
    """``a @ b`` with numpy's rules: 2-D operands are matrices; a 1-D ``a`` is a row and a 1-D ``b`` a
    column, whose dimension is dropped from the result; operands of more dimensions are stacks of
    matrices in their last two, and the stack dimensions broadcast against each other.

    Operands are numpy or pyopencl arrays as for ``gemm``, or what numpy turns into arrays (lists,
    tuples); host operands of two dtypes are converted to the one numpy's result has, device arrays
    must be of one dtype. With a device array among them the products are enqueued on its queue and the
    result is a device array whose ``events`` say when it is done. As numpy's, a product of two 1-D host
    operands is a numpy scalar. ``out`` (positional or by name) receives the result when given: of the
    result's shape; a host ``out`` of another dtype receives it cast as numpy casts (its ``same_kind``
    rule; ``DtypeError``, a ``TypeError``, where that rule refuses), a device ``out`` must be of the
    result's dtype. A stack is computed as a strided batch (``gemm_batched``):
    one launch where the stacks are evenly spaced in memory, as numpy's own arrays and their broadcasts
    are.

    CUDA tensors (torch, cupy, jax) are multiplied as ``gemm`` does: matrices (2-D) only, the result a
    tensor of ``a``'s library (or ``out``), enqueued on the library's current stream.
    """
    if out is None and device is None and precision is None and not wait_for:
        done = plain_product(a, b)          # (as gemm's plain call: matrices the host's BLAS took before)
        if done is not None:
            return done
    return _matmul(a, b, out, device, precision, wait_for)


@reports_full_memory
def _matmul(a, b, out, device: Device | str | int | None, precision: str | None,
            wait_for: list[ocl.Event] | None):
    """``matmul``'s call, the driver's out-of-memory errors said plainly."""
    # numpy arrays of one native dtype, not scalars, are as ``_operands`` would make them (the commonest
    # call: its checks cost more than a small product's own time)
    if not (type(a) is np.ndarray and type(b) is np.ndarray and (out is None or type(out) is np.ndarray)
            and a.dtype == b.dtype and a.dtype.isnative and a.ndim and b.ndim):
        if any(is_cuda_tensor(x) for x in (a, b, out)):
            if any(len(getattr(x, "shape", ())) != 2 for x in (a, b)):
                raise ShapeError("matmul multiplies CUDA tensors as matrices (2-D); vectors and stacks are for "
                                 "the tensors' own library")
            return gemm(a, b, out, device=device, precision=precision, wait_for=wait_for)
        a, b = _operands(a, b)
    if a.ndim == b.ndim == 2 and a.shape[1] == b.shape[0] and (
            out is None or (isinstance(out, (np.ndarray, ocl.DeviceArray)) and out.dtype == a.dtype
                            and out.shape == (a.shape[0], b.shape[1]))):
        # one product of matrices is gemm's own call, whose repeats find their route kept
        return gemm(a, b, out, device=device, precision=precision, wait_for=wait_for)
    a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ShapeError(f"a has {a2.shape[-1]} columns but b has {b2.shape[-2]} rows (shapes {a.shape} and {b.shape})")
    try:
        stack = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ShapeError(f"the stack dimensions of a {a.shape} and b {b.shape} do not broadcast") from None
    m, n = a2.shape[-2], b2.shape[-1]
    shape = stack + (m, n)
    final = shape[:-2] + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    if out is not None:
        if not isinstance(out, (np.ndarray, ocl.DeviceArray)):
            raise ArgumentError(f"out must be a numpy or pyopencl array, not {type(out).__name__}")
        if out.shape != final:
            raise ShapeError(f"out is a non-broadcastable output: of shape {out.shape}, where the result's is "
                             f"{final}")
        _check_cast(a.dtype, out)
    ctx = call_context(device, {"a": a, "b": b, "out": out})
    asynchronous = any(on_device(x) for x in (a, b, out))
    given = out
    if out is None or out.dtype != a.dtype:
        # (a host out of another dtype takes the result through a host array of its dtype: the call blocks)
        out = (ocl.empty_array(ctx.queue, final, a.dtype) if asynchronous and (out is None or on_device(out))
               else host_result(ctx, final, a.dtype, thresholds_for(ctx.device)))
    target = out.reshape(shape)            # a copy only for a host out that no view can reshape
    waits = events_of([a, b, out], ctx.queue) + list(wait_for or []) if asynchronous else None
    options = dict(device=device, precision=precision, wait_for=waits)
    if 0 in stack:
        done = []                           # no products
    elif stack:
        done = _stacked(a2, b2, target, stack, options)
    else:
        result = gemm(a2, b2, target, **options)
        done = result.events[-1:] if on_device(result) else []
    if on_device(out):
        hand_events(out, done, ctx.queue)
        return out
    if not np.shares_memory(target, out):
        out[...] = target.reshape(final)
    if given is None:
        return out[()] if out.ndim == 0 else out        # numpy's scalar for a product of two vectors
    if given is not out:
        np.copyto(given, out, casting="same_kind")
    return given


def _check_cast(result: np.dtype, out: Matrix) -> None:
    """``DtypeError`` (a ``TypeError``, as numpy raises) where ``out`` cannot take a result of dtype
    ``result``: a device array of another dtype, or a host one numpy's ``same_kind`` rule refuses."""
    if out.dtype == result:
        return
    if on_device(out):
        raise DtypeError(f"out is {out.dtype} but the result is {result}: a device array is not converted; "
                         f"pass one of {result}")
    if not np.can_cast(result, out.dtype, "same_kind"):
        raise DtypeError(f"Cannot cast ufunc 'matmul' output from {result} to {out.dtype} (numpy's same_kind "
                         f"rule): pass out of {result} or of a type it casts to")


def _stacked(a: Matrix, b: Matrix, c: Matrix, stack: tuple[int, ...], options: dict) -> list[ocl.Event]:
    """C = A B over the broadcast ``stack``: one strided batch when every operand's stack flattens to
    evenly spaced matrices, else one call per index of the first stack dimension (each of which flattens
    further). Returns the events that mark the end, for device arrays."""
    flat = [_flattened(x, stack) for x in (a, b, c)]
    if all(x is not None for x in flat):
        result = gemm_batched(*flat, **options)
        return result.events[-1:] if on_device(result) else []
    done: list[ocl.Event] = []
    for i in range(stack[0]):
        done = _stacked(*(_first(x, i, len(stack)) for x in (a, b, c)), stack[1:], options) or done
    return done


def _first(x: Matrix, i: int, depth: int) -> Matrix:
    """``x`` at index ``i`` of the first of ``depth`` stack dimensions (right-aligned: an operand without
    that dimension is used whole, one of size 1 broadcasts)."""
    if x.ndim - 2 < depth:
        return x
    return x[0 if x.shape[0] == 1 else i]


def _flattened(x: Matrix, stack: tuple[int, ...]) -> Matrix | None:
    """``x`` broadcast to ``stack`` as one stack of evenly spaced matrices (a 3-D view; a stack of one
    matrix when ``x`` broadcasts whole), or None when its spacing is uneven."""
    dims = x.shape[:-2]
    if all(d == 1 for d in dims):
        count, stride = 1, 0
    else:
        own = dict(zip(range(len(stack) - len(dims), len(stack)), zip(dims, x.strides)))
        spaced = [(size, own[j][1] if own.get(j, (1,))[0] == size else 0) for j, size in enumerate(stack) if size > 1]
        if any(outer[1] != inner[1] * inner[0] for outer, inner in zip(spaced, spaced[1:])):
            return None
        count, stride = int(np.prod(stack)), spaced[-1][1]
    shape, strides = (count, *x.shape[-2:]), (stride, *x.strides[-2:])
    if on_device(x):
        return ocl.DeviceArray(x.queue, shape, x.dtype, data=x.base_data, offset=x.offset, strides=strides)
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)
