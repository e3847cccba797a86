"""Random operands, the error measure and the float64 references every correctness check in autogemm
uses."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .dtypes import Dtype


def random_matrix(rng: np.random.Generator, dt: Dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform in [-1, 1) (complex: both parts): fresh data, never zeros, so no wrong kernel passes by luck.
    Made in place, without copies: a copy of a large float64 matrix took longer than drawing it, and the
    CUDA tuner draws two for its large class."""
    data = rng.uniform(-1, 1, shape)
    if not dt.is_complex:
        return data.astype(dt.numpy, copy=False)
    out = np.empty(shape, dt.numpy)
    out.real, out.imag = data, rng.uniform(-1, 1, shape)
    return out


def random_operands(rng: np.random.Generator, dt: Dtype, m: int, n: int, k: int, trans_a: str = "N",
                    trans_b: str = "N", batch: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``random_matrix`` A and B (A drawn first) of an m x n x k product stored as the BLAS trans letters
    say (any but 'N': stored transposed, A k x m, B n x k), a stack of ``batch`` of each where more than
    one."""
    stack = (batch,) if batch > 1 else ()
    a = random_matrix(rng, dt, stack + ((m, k) if trans_a.upper() == "N" else (k, m)))
    b = random_matrix(rng, dt, stack + ((k, n) if trans_b.upper() == "N" else (n, k)))
    return a, b


def apply_op(x: np.ndarray, letter: str) -> np.ndarray:
    """op(x) for a BLAS trans letter: 'N' as is, 'T' transposed, 'C' conjugate transposed (views; each
    matrix of a stack)."""
    letter = letter.upper()
    if letter == "N":
        return x
    if letter == "T":
        return x.swapaxes(-1, -2)
    if letter == "C":
        return x.conj().swapaxes(-1, -2)        # (a copy for complex arrays: only where asked for)
    raise KeyError(letter)


def gemm_flops(dt: Dtype, m: int, n: int, k: int) -> float:
    """Floating-point operations of an m x n x k product (a complex multiply-add is 8 real ones)."""
    return (8.0 if dt.is_complex else 2.0) * m * n * k


def gemv_flops(dt: Dtype, rows: int, cols: int, vectors: int = 1) -> float:
    """Floating-point operations of a GEMV on a rows x cols A (with ``vectors`` right-hand sides)."""
    return (8.0 if dt.is_complex else 2.0) * rows * cols * vectors


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want|| / ||want|| in the precision of ``want`` (NaN or inf in ``got`` give inf)."""
    if not np.all(np.isfinite(got)):
        return float("inf")
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got.astype(want.dtype) - want) / (scale if scale else 1.0))


def relative_error_where_finite(got: np.ndarray, want: np.ndarray) -> float:
    """``relative_error`` over the elements where ``want`` is finite; inf unless ``got`` is NaN exactly
    where ``want`` is and the same infinity where ``want`` is one (a product of NaN or inf among its
    operands or scalars, as numpy's BLAS computes it)."""
    special = ~np.isfinite(want)
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("inf")
    infinite = special & ~np.isnan(want)
    for part in (np.real, np.imag) if np.iscomplexobj(want) else (np.asarray,):
        # (a complex element infinite in one part need match only that part: the other is rounded)
        had, has = part(want[infinite]), part(got[infinite])
        if not all(np.array_equal(test(had), test(has)) for test in (np.isposinf, np.isneginf)):
            return float("inf")
    return relative_error(got[~special], want[~special])


def tolerance(dt: Dtype, k: int) -> float:
    """The bound on ``relative_error`` for a correct product with inner dimension ``k``: the dtype's
    bound, widened as sqrt(k) beyond k = 4096 (rounding errors of a sum grow about so)."""
    return dt.tolerance * max(1.0, (k / 4096) ** 0.5)


#: Products with more rows than this are checked on a sample of rows.
FULL_CHECK_ROWS = 512
SAMPLE_EDGE_ROWS, SAMPLE_RANDOM_ROWS = 64, 128


class Reference:
    """The float64 (complex128) product op(A) op(B) of one problem, whole or on sampled rows, and the check
    of a result against it (``exact``: it must match to the last bit, as a copy must). A result is
    first checked to be finite everywhere, so an unwritten (NaN-poisoned) element fails even outside
    the sample, which holds the first and last ``SAMPLE_EDGE_ROWS`` rows, random ones, and ``rows``
    (where a result is assembled from parts: the rows on each side of every boundary)."""

    exact = False

    def __init__(self, dt: Dtype, op_a: np.ndarray, op_b: np.ndarray, rng: np.random.Generator,
                 rows: Iterable[int] = ()) -> None:
        m = op_a.shape[0]
        if m <= FULL_CHECK_ROWS:
            self.rows = None
        else:
            edges = np.r_[0:SAMPLE_EDGE_ROWS, m - SAMPLE_EDGE_ROWS:m]
            inner = rng.choice(np.arange(SAMPLE_EDGE_ROWS, m - SAMPLE_EDGE_ROWS), SAMPLE_RANDOM_ROWS, replace=False)
            asked = np.array([r for r in rows if 0 <= r < m], dtype=np.int64)
            self.rows = np.unique(np.r_[edges, inner, asked])
            op_a = op_a[self.rows]
        wide = dt.reference_numpy
        self.product = op_a.astype(wide) @ op_b.astype(wide)
        self.dt, self.k = dt, op_b.shape[0]

    def check(self, result: np.ndarray, precision: Dtype | None = None) -> tuple[float, bool]:
        """(relative error, within the bound of ``precision``, by default the case's dtype); inf when any
        element of the result is not finite."""
        if not np.all(np.isfinite(result)):
            return math.inf, False
        error = relative_error(result if self.rows is None else result[self.rows], self.product)
        return error, error == 0 if self.exact else error < tolerance(precision or self.dt, self.k)


class KnownReference(Reference):
    """A reference result given whole: ``expected`` (in float64 or complex128) of a sum of ``k`` terms per
    element, or, with ``exact``, of a copy."""

    def __init__(self, dt: Dtype, expected: np.ndarray, k: int, exact: bool = False) -> None:
        self.rows, self.product, self.dt, self.k, self.exact = None, expected, dt, k, exact
