"""``matmul`` and ``gemm`` on dask arrays: the graph of block products and the checks made before it.

Each block C[i, j] is made by one task, ``blocks.block_in_place``, from A's row panel and B's column
panel as lists of blocks over K: the pairs are uploaded to a worker's device (or found kept there) and
multiplied into the block of C, which stays there until the sum is made, so neither the panels nor
partial blocks of C are assembled on the host; where the workers are threads of the caller's process,
each block is written at its place in one result array, which ``compute()`` hands over (``assembly``),
the blocks spread evenly over the workers (``placement``). Where a panel would outgrow ``PANEL_BYTES``
(one task would hold it all), every pair A[i, k], B[k, j] gives a partial block P[i, k, j] instead, and
``sum`` over k adds them in a tree (``split_every`` at a time), as dask's own matmul does. Blocks
smaller than ``MIN_BLOCK`` on a side are merged first."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize

from ..dtypes import NATIVE
from ..engine import GemmCall, GemmOptions
from ..errors import ArgumentError, DtypeError, ShapeError
from .assembly import InPlaceProduct
from .placement import spread
from .tasks import block_in_place, partial_product

#: Blocks of C are merged up to this many rows and columns at least (or the whole side where it is
#: shorter): a block of b x b takes 2 b K elements of panels for 2 b^2 K flops, so b = 4096 asks one
#: byte of the host for each 512 (float32) to 1024 (float64) flops, which a GPU at 50 TFLOP/s gets from
#: 25 to 50 GB/s of copies; with smaller blocks the device waits on the host's copies.
MIN_BLOCK = 4096
#: Bytes of one panel (A's rows of a block of C over K, or B's columns) one task holds at most.
PANEL_BYTES = 2**30


def matmul(a: object, b: object, *, split_every: int | None = None) -> da.Array:
    """``a @ b`` of two 2-D dask arrays of numpy chunks, lazily: a dask array of the product."""
    return gemm(a, b, split_every=split_every)


def gemm(a: object, b: object, c: object | None = None, *, alpha: complex = 1.0, beta: complex = 0.0,
         trans_a: str = "N", trans_b: str = "N", split_every: int | None = None) -> da.Array:
    """``alpha op(A) op(B) + beta C`` of dask arrays (numpy chunks, one of autogemm's dtypes), lazily.
    ``op`` is 'N', 'T' or 'C' (conjugate transpose); beta 0 never reads C. Errors are raised here,
    before anything is computed."""
    a, b = _operand(a, "a"), _operand(b, "b")
    c = None if c is None else _operand(c, "c")
    if c is not None and c.dtype != a.dtype:
        raise DtypeError(f"c is {c.dtype} but a and b are {a.dtype}: autogemm.dask writes C of the operands' dtype")
    call = GemmCall.build(a, b, c, None, GemmOptions(alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b))
    trans_a, trans_b, alpha, beta, m, n = (trans_a.upper(), trans_b.upper(), call.alpha, call.beta, call.m,
                                           call.n)
    a, b = _rechunked(a, trans_a != "N", b, trans_b != "N")
    pattern_a, pattern_b = "ki" if trans_a != "N" else "ik", "jk" if trans_b != "N" else "kj"
    options = {"dtype": a.dtype, "trans_a": trans_a, "trans_b": trans_b, "alpha": alpha}
    side = max(max(a.chunks[0 if trans_a == "N" else 1]), max(b.chunks[1 if trans_b == "N" else 0]))
    if side * a.shape[1 if trans_a == "N" else 0] * a.dtype.itemsize <= PANEL_BYTES:    # one task per block
        rows = da.arange(m, chunks=(a.chunks[0 if trans_a == "N" else 1],))
        cols = da.arange(n, chunks=(b.chunks[1 if trans_b == "N" else 0],))
        key = f"autogemm-result-{tokenize(a, b, options)}"
        with dask.annotate(**spread((len(rows.chunks[0]), len(cols.chunks[0])))):
            product = da.blockwise(block_in_place, "ij", a, pattern_a, b, pattern_b, rows, "i", cols, "j",
                                   concatenate=False, meta=np.empty((0, 0), a.dtype), result=key, shape=(m, n),
                                   **options)
        product = InPlaceProduct(product, key)
    else:
        partial = da.blockwise(partial_product, "ikj", a, pattern_a, b, pattern_b, adjust_chunks={"k": 1},
                               meta=np.empty((0, 0, 0), a.dtype), **options)
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


def _rechunked(a: da.Array, a_flipped: bool, b: da.Array, b_flipped: bool) -> tuple[da.Array, da.Array]:
    """``a`` and ``b`` (whose K axis is their first where ``flipped``) with blocks smaller than
    ``MIN_BLOCK`` on a side merged (C's rows and columns, and K)."""
    k_a, k_b = (0 if a_flipped else 1), (1 if b_flipped else 0)
    k_sizes = a.chunks[k_a] if len(a.chunks[k_a]) <= len(b.chunks[k_b]) else b.chunks[k_b]
    a = a.rechunk({1 - k_a: _merged(a.chunks[1 - k_a]), k_a: _merged(k_sizes)})
    b = b.rechunk({1 - k_b: _merged(b.chunks[1 - k_b]), k_b: _merged(k_sizes)})
    return a, b


def _merged(sizes: tuple[int, ...]) -> int | tuple[int, ...]:
    """Chunks of one axis: as they are where none is under ``MIN_BLOCK`` (or the axis is one chunk),
    else merged to ``MIN_BLOCK``."""
    return sizes if max(sizes) >= min(MIN_BLOCK, sum(sizes)) else MIN_BLOCK
