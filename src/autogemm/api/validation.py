"""The validation of a product's arrays and options that holds wherever it runs (one device or several)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..blas import Op
from ..codelets.registry import GEMM, OPENCL, family_of
from ..dtypes import Dtype, get_dtype, with_output, with_precision
from ..errors import ArgumentError, ConfigError, DtypeError, ShapeError
from .operands import Matrix


class ValidCall(NamedTuple):
    """What validating a product found: its dtype, ops, sizes and the result's shape."""

    dt: Dtype
    op_a: Op
    op_b: Op
    m: int
    n: int
    k: int
    shape: tuple[int, ...]


def validate_call(a: Matrix, b: Matrix, c: Matrix | None, batch: int | None, trans_a: str, trans_b: str, config,
                 precision, out_dtype) -> ValidCall:
    """A product's arrays and options validated where that does not depend on where it runs, or the
    error that names what is wrong."""
    dt = with_precision(get_dtype(a.dtype), precision)
    if b.dtype != a.dtype:
        raise DtypeError(f"a is {a.dtype} but b is {b.dtype}; convert them to one dtype")
    if c is not None:
        if out_dtype is not None and c.dtype != get_dtype(out_dtype).numpy:
            raise DtypeError(f"c is {c.dtype} but out_dtype is {get_dtype(out_dtype).numpy}")
    try:
        dt = with_output(dt, c.dtype if c is not None else out_dtype)
    except DtypeError as exc:
        raise DtypeError(f"{'c' if c is not None else 'out_dtype'}: {exc}") from None
    op_a, op_b = Op.from_letter(trans_a, "trans_a"), Op.from_letter(trans_b, "trans_b")
    m, k = a.shape[-1:-3:-1] if op_a.transposed else a.shape[-2:]
    k_b, n = b.shape[-1:-3:-1] if op_b.transposed else b.shape[-2:]
    if k != k_b:
        raise ShapeError(f"op(a) is {m}x{k} but op(b) is {k_b}x{n}: inner dimensions differ")
    shape = (m, n) if batch is None else (batch, m, n)
    if c is not None:
        if c.shape != shape:
            raise ShapeError(f"c has shape {c.shape}; the result is {'x'.join(map(str, shape))}")
        if isinstance(c, np.ndarray) and not c.flags.writeable:
            raise ArgumentError("c is read-only")
    if config is not None and not _is_gemm_config(config):
        raise ArgumentError(f"config must be a configuration of an OpenCL kernel family (SimtParams or another "
                            f"family's), not {type(config).__name__} (the CUDA path's configurations come from "
                            f"its defaults and the device's profile)")
    return ValidCall(dt, op_a, op_b, m, n, k, shape)


def _is_gemm_config(config: object) -> bool:
    """True for a configuration of a GEMM kernel family."""
    try:
        family = family_of(config)
        return family.routine == GEMM and family.backend == OPENCL
    except ConfigError:
        return False
