"""Random operands and the error measure every correctness check in autogemm uses."""

from __future__ import annotations

import numpy as np

from .dtypes import Dtype


def random_matrix(rng: np.random.Generator, dt: Dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform in [-1, 1) (complex: both parts): fresh data, never zeros, so no wrong kernel passes by luck."""
    data = rng.uniform(-1, 1, shape)
    if dt.is_complex:
        data = data + 1j * rng.uniform(-1, 1, shape)
    return data.astype(dt.numpy)


def apply_op(x: np.ndarray, letter: str) -> np.ndarray:
    """op(x) for a BLAS trans letter: 'N' as is, 'T' transposed, 'C' conjugate transposed (views; each
    matrix of a stack)."""
    return {"N": x, "T": x.swapaxes(-1, -2), "C": x.conj().swapaxes(-1, -2)}[letter.upper()]


def gemm_flops(dt: Dtype, m: int, n: int, k: int) -> float:
    """Floating-point operations of an m x n x k product (a complex multiply-add is 8 real ones)."""
    return (8.0 if dt.is_complex else 2.0) * m * n * k


def gemv_flops(dt: Dtype, rows: int, cols: int) -> float:
    """Floating-point operations of a GEMV on a rows x cols A."""
    return (8.0 if dt.is_complex else 2.0) * rows * cols


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want|| / ||want|| in the precision of ``want`` (NaN or inf in ``got`` give inf)."""
    if not np.all(np.isfinite(got)):
        return float("inf")
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got.astype(want.dtype) - want) / (scale if scale else 1.0))


def tolerance(dt: Dtype, k: int) -> float:
    """The bound on ``relative_error`` for a correct product with inner dimension ``k``: the dtype's
    bound, widened as sqrt(k) beyond k = 4096 (rounding errors of a sum grow about so)."""
    return dt.tolerance * max(1.0, (k / 4096) ** 0.5)
