"""Views whose length-1 axes have negative or zero strides (numpy calls them contiguous whatever those
strides are): every public call takes them, as numpy does, and computes the right result (issue 57, D2)."""

import numpy as np
import pytest

import autogemm


def _views(rng):
    one = rng.uniform(-1, 1, (1, 1)).astype(np.float32)
    return {
        "reversed 1x1": one[::-1, ::-1],
        "broadcast 1x1": np.broadcast_to(np.float32(rng.uniform(-1, 1)), (1, 1)),
        "zero stride 1x1": np.lib.stride_tricks.as_strided(one, (1, 1), (0, 0)),
        "negative row stride 1x1": np.lib.stride_tricks.as_strided(one, (1, 1), (-4, 4)),
    }


@pytest.mark.parametrize("name", ["reversed 1x1", "broadcast 1x1", "zero stride 1x1", "negative row stride 1x1"])
def test_gemm_matmul_gemv_and_transpose_take_a_1x1_view_of_any_strides(name):
    rng = np.random.default_rng(57)
    x = _views(rng)[name]
    a = rng.uniform(-1, 1, (5, 1)).astype(np.float32)
    want = a.astype(np.float64) @ x.astype(np.float64)
    c = np.full((5, 1), np.nan, np.float32)
    got = autogemm.gemm(a, x, c)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(autogemm.matmul(a, x), want, rtol=1e-6)
    np.testing.assert_allclose(autogemm.gemm(x, a.T), x.astype(np.float64) @ a.T, rtol=1e-6)
    np.testing.assert_allclose(autogemm.gemv(x, np.ones(1, np.float32)), x[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(autogemm.transpose(x), x.T)


def test_stacks_and_rows_with_reversed_length_one_axes():
    rng = np.random.default_rng(58)
    stack = rng.uniform(-1, 1, (1, 3, 4)).astype(np.float32)[::-1]      # one matrix, its layer stride negative
    b = rng.uniform(-1, 1, (1, 4, 2)).astype(np.float32)
    np.testing.assert_allclose(autogemm.gemm_batched(stack, b), stack.astype(np.float64) @ b, rtol=1e-5)
    row = rng.uniform(-1, 1, (1, 6)).astype(np.float32)[::-1, ::-1]     # a row read backwards: a copy
    column = rng.uniform(-1, 1, (6, 1)).astype(np.float32)[::-1, ::-1]
    np.testing.assert_allclose(autogemm.gemm(row, column), row.astype(np.float64) @ column, rtol=1e-5)
    np.testing.assert_allclose(autogemm.gemm(column, row), column.astype(np.float64) @ row, rtol=1e-5)
