"""BLAS's quick return: with alpha = 0 (or K = 0) and beta = 1, C = beta C + 0 leaves C as it is, bit for
bit, whatever it holds (issue 57: autogemm multiplied C by beta, so a complex C holding inf became
inf+nanj)."""

import numpy as np
import pyopencl.array as cl_array
import pytest

import autogemm


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("alpha, k", [(0.0, 5), (1.5, 0)])
def test_alpha_zero_or_k_zero_with_beta_one_leaves_c_as_it_is(ctx, dtype, alpha, k):
    rng = np.random.default_rng(11)
    a, b = rng.random((7, k)).astype(dtype), rng.random((k, 6)).astype(dtype)
    c = rng.random((7, 6)).astype(dtype)
    c[0, 0], c[1, 1], c[2, 2] = np.inf, -np.inf, np.nan
    if np.iscomplexobj(c):
        c[3, 3] = complex(np.inf, 0)
    before = c.copy()
    autogemm.gemm(a, b, c, alpha=alpha, beta=1.0, device=ctx.device)
    np.testing.assert_array_equal(c, before)
    on_device = cl_array.to_device(ctx.queue, before)
    autogemm.gemm(cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, b), on_device, alpha=alpha,
                  beta=1.0)
    np.testing.assert_array_equal(on_device.get(), before)
    y = before[:, 0].copy()
    autogemm.gemv(a, rng.random(k).astype(dtype), y, alpha=alpha, beta=1.0, device=ctx.device)
    np.testing.assert_array_equal(y, before[:, 0])
