"""``matmul`` and ``gemm`` on dask arrays: the graph of block products and the checks made before it.

Every pair of blocks A[i, k] and B[k, j] is multiplied by ``blocks.block_product`` into a partial block
P[i, k, j]; ``sum`` over k adds the partials in a tree (``split_every`` at a time), as dask's own matmul
does. Blocks smaller than ``MIN_BLOCK`` on a side are merged first (a device is not kept busy by small
products; a block larger than a device's memory streams through it, as ``autogemm.gemm`` does)."""

from __future__ import annotations

import dask.array as da
import numpy as np

from ..dtypes import NATIVE
from ..errors import ArgumentError, DtypeError, ShapeError
from .blocks import block_product

#: Blocks are merged up to this many rows and columns at least (or the whole side where it is shorter).
MIN_BLOCK = 2048
_TRANSPOSES = ("N", "T", "C")


def matmul(a: object, b: object, *, split_every: int | None = None) -> da.Array:
    """``a @ b`` of two 2-D dask arrays of numpy chunks, lazily: a dask array of the product."""
    return gemm(a, b, split_every=split_every)


def gemm(a: object, b: object, c: object | None = None, *, alpha: complex = 1.0, beta: complex = 0.0,
         trans_a: str = "N", trans_b: str = "N", split_every: int | None = None) -> da.Array:
    """``alpha op(A) op(B) + beta C`` of dask arrays (numpy chunks, one of autogemm's dtypes), lazily.
    ``op`` is 'N', 'T' or 'C' (conjugate transpose); beta 0 never reads C. Errors are raised here,
    before anything is computed."""
    a, b = _operand(a, "a"), _operand(b, "b")
    trans_a, trans_b = _transpose(trans_a, "trans_a"), _transpose(trans_b, "trans_b")
    if a.dtype != b.dtype:
        raise DtypeError(f"a is {a.dtype} and b is {b.dtype}: convert one, e.g. b.astype(np.{a.dtype})")
    m, k = a.shape[::-1] if trans_a != "N" else a.shape
    k_b, n = b.shape[::-1] if trans_b != "N" else b.shape
    if k != k_b:
        raise ShapeError(f"op(a) is {m} x {k} but op(b) is {k_b} x {n}: their inner sizes differ")
    if c is not None:
        c = _operand(c, "c")
        if c.shape != (m, n) or c.dtype != a.dtype:
            raise ShapeError(f"c must be {m} x {n} of {a.dtype}, not {c.shape[0]} x {c.shape[1]} of {c.dtype}")
    if beta != 0 and c is None:
        raise ArgumentError("beta is not 0 but no c was given to scale")
    a, b = _merged(a), _merged(b)
    partial = da.blockwise(block_product, "ikj", a, "ki" if trans_a != "N" else "ik",
                           b, "jk" if trans_b != "N" else "kj", adjust_chunks={"k": 1}, dtype=a.dtype,
                           meta=np.empty((0, 0, 0), a.dtype), trans_a=trans_a, trans_b=trans_b, alpha=alpha)
    product = partial.sum(axis=1, split_every=split_every, dtype=a.dtype)
    if beta == 0:
        return product
    return product + beta * c.rechunk(product.chunks)


def _operand(x: object, name: str) -> da.Array:
    """``x`` as a 2-D dask array of numpy chunks of an autogemm dtype with known chunk sizes."""
    if isinstance(x, np.ndarray):
        x = da.from_array(x, chunks=MIN_BLOCK)
    if not isinstance(x, da.Array):
        raise ArgumentError(f"{name} must be a dask array (or a numpy one), not {type(x).__name__}")
    if type(x._meta) is not np.ndarray:
        raise ArgumentError(f"{name} holds chunks of {type(x._meta).__module__}.{type(x._meta).__name__}; "
                            f"autogemm.dask multiplies numpy chunks (map_blocks(cupy.asnumpy) converts cupy's)")
    if x.ndim != 2:
        raise ShapeError(f"{name} must be a matrix (2-D), not {x.ndim}-D")
    if any(np.isnan(size) for sizes in x.chunks for size in sizes):
        raise ShapeError(f"{name}'s chunk sizes are unknown: call {name}.compute_chunk_sizes() first")
    if x.dtype not in {np.dtype(dt.numpy) for dt in NATIVE if not dt.tensor_only}:
        raise DtypeError(f"{name} is {x.dtype}; autogemm.dask multiplies float32, float64, complex64 and "
                         f"complex128 (e.g. {name}.astype(np.float64))")
    return x


def _transpose(letter: object, name: str) -> str:
    if not isinstance(letter, str) or letter.upper() not in _TRANSPOSES:
        raise ArgumentError(f"{name} must be 'N', 'T' or 'C', not {letter!r}")
    return letter.upper()


def _merged(x: da.Array) -> da.Array:
    """``x`` with blocks of at least ``MIN_BLOCK`` on a side where they were smaller."""
    wanted = {axis: MIN_BLOCK for axis, sizes in enumerate(x.chunks) if max(sizes) < min(MIN_BLOCK, sum(sizes))}
    return x.rechunk(wanted) if wanted else x
