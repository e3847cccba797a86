"""NaN and Inf go through ``gemm`` as they go through numpy's BLAS (issue 8): an element of C is NaN where
a term of its sum is NaN, or where terms of both infinities meet (Inf - Inf, Inf * 0); it is an infinity
of the same sign where a term is; the rest are as finite as numpy's. Both edge modes (guarded loads and
padded copies fill the edges with zeros, which must not meet an infinity), every transpose pair, sizes
that are multiples of no tile. With alpha = 0 the product is skipped, as BLAS does, and NaN in A or B
does not reach C; with beta = 0, C is not read."""

from __future__ import annotations

import numpy as np
import pytest

import autogemm
from autogemm.accuracy import apply_op, random_matrix
from autogemm.dtypes import DTYPES

SPECIALS = (np.nan, np.inf, -np.inf)


def _sprinkle(rng: np.random.Generator, x: np.ndarray, count: int) -> np.ndarray:
    x = x.copy()
    flat = x.reshape(-1)
    for index in rng.choice(flat.size, size=min(count, flat.size), replace=False):
        flat[index] = SPECIALS[rng.integers(len(SPECIALS))]
    return x


@pytest.mark.parametrize("edge", ["guard", "pad"])
@pytest.mark.parametrize("letter, ta, tb", [("s", "N", "N"), ("s", "T", "N"), ("d", "N", "T"), ("d", "T", "T")])
def test_nan_and_inf_go_through_as_in_numpy(ctx, letter, ta, tb, edge):
    dt, rng = DTYPES[letter], np.random.default_rng()
    m, n, k = 37, 29, 45
    a = _sprinkle(rng, random_matrix(rng, dt, (k, m) if ta == "T" else (m, k)), 6)
    b = _sprinkle(rng, random_matrix(rng, dt, (n, k) if tb == "T" else (k, n)), 6)
    ours = autogemm.gemm(a, b, trans_a=ta, trans_b=tb, edge=edge, device=ctx.device)
    with np.errstate(invalid="ignore", over="ignore"):
        want = apply_op(a.astype(np.float64), ta) @ apply_op(b.astype(np.float64), tb)
    assert np.isnan(want).any() and np.isinf(want).any()          # the sprinkling reached C both ways
    assert np.array_equal(np.isnan(ours), np.isnan(want))
    assert np.array_equal(np.isposinf(ours), np.isposinf(want)) and np.array_equal(np.isneginf(ours), np.isneginf(want))
    finite = np.isfinite(want)
    scale = np.abs(want[finite]).max()
    assert np.allclose(ours[finite], want[finite], rtol=10 * dt.tolerance, atol=10 * dt.tolerance * scale)


@pytest.mark.parametrize("letter", ["s", "d"])
def test_alpha_zero_skips_the_product_and_beta_zero_never_reads_c(ctx, letter):
    dt, rng = DTYPES[letter], np.random.default_rng()
    a = _sprinkle(rng, random_matrix(rng, dt, (33, 20)), 30)
    b = _sprinkle(rng, random_matrix(rng, dt, (20, 17)), 30)
    c = random_matrix(rng, dt, (33, 17))
    scaled = autogemm.gemm(a, b, c.copy(), alpha=0.0, beta=-2.0, device=ctx.device)
    assert np.array_equal(scaled, (-2.0 * c.astype(np.float64)).astype(dt.numpy))
    clean_a, clean_b = random_matrix(rng, dt, (33, 20)), random_matrix(rng, dt, (20, 17))
    poisoned = _sprinkle(rng, c, c.size)                              # every element NaN or infinite
    out = autogemm.gemm(clean_a, clean_b, poisoned, alpha=1.0, beta=0.0, device=ctx.device)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("edge", ["guard", "pad"])
@pytest.mark.parametrize("letter", ["c", "z"])
def test_a_complex_overflow_keeps_its_zero_imaginary_part(ctx, letter, edge):
    """A complex sum that overflows to inf + 0j stays so, as in numpy: alpha and beta of exactly 1 are not
    multiplied in (a complex product with 1 + 0j makes inf * 0 of the zero part: NaN). In ``matmul``, in
    ``gemm`` with alpha = beta = 1 onto a finite C, and in a matrix-vector product."""
    dt, rng = DTYPES[letter], np.random.default_rng()
    huge = 1e20 if letter == "c" else 1e160          # its square overflows the dtype
    m, n, k = 37, 29, 45
    a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
    a[0], b[:, 0] = huge, huge                         # C[0, 0] alone overflows, to inf + 0j
    c = random_matrix(rng, dt, (m, n))
    with np.errstate(over="ignore", invalid="ignore"):
        exact = a.astype(np.complex128) @ b.astype(np.complex128)
    finite = np.ones((m, n), bool)
    finite[0, 0] = False
    results = {"matmul": (autogemm.matmul(a, b, device=ctx.device), exact, 0),
               "gemm beta 1": (autogemm.gemm(a, b, c.copy(), beta=1.0, edge=edge, device=ctx.device), exact + c,
                               c[0, 0].imag),
               "matrix-vector": (autogemm.matmul(a, b[:, 0], device=ctx.device)[:, None], exact[:, :1], 0)}
    for name, (got, want, imaginary) in results.items():
        corner = got[0, 0]
        assert np.isposinf(corner.real) and corner.imag == imaginary, f"{name}: C[0, 0] is {corner}"
        rest = finite[:, :got.shape[1]]
        scale = np.abs(want[rest]).max()
        assert np.allclose(got[rest], want[rest], rtol=10 * dt.tolerance, atol=10 * dt.tolerance * scale), name
