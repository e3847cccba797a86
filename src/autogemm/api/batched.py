"""``gemm_batched``: many products of one shape in one launch (a strided batch), or over lists of
matrices."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..codelets.registry import KernelParams
from ..engine import GemmOptions, run_gemm
from ..engine.operands import Matrix, as_array
from ..errors import ArgumentError, ShapeError
from ..runtime import Device
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.memory import reports_full_memory
from .gemm import gemm

Stack = Matrix | Sequence[Matrix]


def _stack(value: object, name: str) -> Matrix:
    value = as_array(value, name)
    if value.ndim not in (2, 3):
        raise ShapeError(f"{name} must be a stack of matrices (3-D) or one matrix (2-D), not {value.ndim}-D "
                         f"with shape {value.shape}")
    return value


@reports_full_memory
def gemm_batched(a: Stack, b: Stack, c: Stack | None = None, *, alpha: complex | float = 1.0,
                 beta: complex | float = 0.0, trans_a: str = "N", trans_b: str = "N",
                 device: Device | str | int | None = None, config: KernelParams | None = None, edge: str = "auto",
                 precision: str | None = None, out_dtype: object = None,
                 wait_for: list[ocl.Event] | None = None, backend: str = "auto") -> Stack:
    """C[i] = alpha op(A[i]) op(B[i]) + beta C[i] for every i of a batch, with ``gemm``'s arguments and
    rules (dtypes, transposes, host or device arrays, asynchrony).

    Strided batch: ``a`` and ``b`` are 3-D arrays, stacks of matrices along their first dimension (each
    matrix row- or column-major, the stack evenly strided, as numpy and pyopencl arrays are); a 2-D
    operand, or a stack of one, is used in every product. ``c``, when given, is a 3-D stack of the
    batch's length. All products run in one launch of each kernel, one layer of work-groups per product,
    which is what makes a batch of small products fast. On a Hopper GPU, 16-bit, TF32, float64 and
    complex128 stacks of numpy arrays of large enough matrices run on the CUDA path's tensor-core
    kernels (``backend`` as ``gemm`` takes it; ``Thresholds.cuda_batch_min_side``).

    Over lists: ``a`` and ``b`` (and ``c``) are equally long lists of 2-D arrays, and a list of results
    is returned. Host arrays all of one shape are stacked and computed as a strided batch; otherwise each
    product is a ``gemm`` call (on device arrays those are enqueued and return at once).
    """
    options = dict(alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, device=device, config=config,
                   edge=edge, precision=precision, out_dtype=out_dtype, wait_for=wait_for, backend=backend)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return _over_lists(a, b, c, options)
    a, b = _stack(a, "a"), _stack(b, "b")
    if c is not None:
        c = as_array(c, "c")
        if c.ndim != 3:
            raise ShapeError(f"c must be a 3-D stack of results, not {c.ndim}-D with shape {c.shape}")
    lengths = {name: x.shape[0] for name, x in (("a", a), ("b", b), ("c", c)) if x is not None and x.ndim == 3}
    if not lengths:
        raise ShapeError("a and b are both 2-D: a batch needs a 3-D stack among a, b and c (or use gemm)")
    batch = c.shape[0] if c is not None else max(lengths.values())
    for name, length in lengths.items():
        if length not in (batch, 1):
            raise ShapeError(f"{name} is a stack of {length} matrices; the batch has {batch}")
    return run_gemm(a, b, c, batch, GemmOptions(**options))


def _over_lists(a: object, b: object, c: object, options: dict) -> list[Matrix]:
    """``gemm_batched`` on lists of matrices: one strided batch when they are host arrays of one shape
    (and dtype), else one ``gemm`` call each."""
    named = {"a": a, "b": b} if c is None else {"a": a, "b": b, "c": c}
    for name, value in named.items():
        if not isinstance(value, (list, tuple)):
            raise ArgumentError(f"{name} must be a list of matrices like the other operands, "
                                f"not {type(value).__name__}")
    if len({len(value) for value in named.values()}) != 1:
        raise ShapeError("the lists differ in length: " + ", ".join(f"{k} has {len(v)}" for k, v in named.items()))
    items = [dict(zip(named, values)) for values in zip(*named.values())]
    arrays = [x for item in items for x in item.values()]
    if not items:
        return []
    same = all(isinstance(x, np.ndarray) for x in arrays) and all(
        item[name].shape == items[0][name].shape and item[name].dtype == items[0][name].dtype
        for item in items for name in named)
    if not same:
        return [gemm(item["a"], item["b"], item.get("c"), **options) for item in items]
    if c is not None and not all(x.flags.writeable for x in c):
        raise ArgumentError("c holds a read-only array")
    stacks = {name: np.stack([item[name] for item in items]) for name in named}
    result = run_gemm(stacks["a"], stacks["b"], stacks.get("c"), len(items), GemmOptions(**options))
    if c is None:
        return list(result)
    for target, value in zip(c, result):
        target[...] = value
    return list(c)
