"""complex64 products as the real product of their embedding (``blas.complex_embedding``): the real
operands the CUDA path's TF32 and 3xTF32 kernels multiply."""

import numpy as np
import pytest

from autogemm.accuracy import apply_op, random_matrix
from autogemm.blas.complex_embedding import kernel_problem, real_a, real_b, real_dtype
from autogemm.blas.problem import Op
from autogemm.dtypes import DTYPES


@pytest.mark.parametrize("trans_a", "NTC")
@pytest.mark.parametrize("trans_b", "NTC")
@pytest.mark.parametrize("alpha", [1, -0.5, 0.25 - 2j])
def test_the_embedding_is_the_complex_product(trans_a, trans_b, alpha):
    """op(A)'s parts (m x 2k) times op(B)'s embedding (read transposed, 2n x 2k), in float64, is alpha op(A)
    op(B) stored as complex64 stores it, for every op of A and B, and a column-major B."""
    rng = np.random.default_rng(ord(trans_a) + 3 * ord(trans_b))
    dt = DTYPES["c"]
    m, n, k = 7, 5, 9
    a = random_matrix(rng, dt, (m, k) if trans_a == "N" else (k, m))
    b = np.asfortranarray(random_matrix(rng, dt, (k, n) if trans_b == "N" else (n, k)))
    want = alpha * apply_op(a, trans_a).astype(np.complex128) @ apply_op(b, trans_b).astype(np.complex128)
    ra, rb = real_a(a, Op.from_letter(trans_a, "a")), real_b(b, Op.from_letter(trans_b, "b"), alpha)
    assert ra.dtype == rb.dtype == np.float32 and ra.flags.c_contiguous and rb.flags.c_contiguous
    assert ra.shape == (m, 2 * k) and rb.shape == (2 * n, 2 * k)
    got = ra.astype(np.float64) @ rb.astype(np.float64).T
    assert got.shape == (m, 2 * n)
    assert np.abs(got[:, 0::2] + 1j * got[:, 1::2] - want).max() < 1e-5 * np.abs(want).max()


def test_complex64_in_tf32_runs_as_a_real_product_of_twice_the_columns_and_depth():
    """c.tf32 and c.3xtf32 have real kernels (s.tf32, s.3xtf32) over m x 2n x 2k, both operands read
    K-major; every other dtype is its own kernel problem."""
    nn = (Op(), Op())
    for key, real in (("c.tf32", "s.tf32"), ("c.3xtf32", "s.3xtf32")):
        assert real_dtype(DTYPES[key]) is DTYPES[real]
        assert kernel_problem(DTYPES[key], (3, 5, 7), nn) == (DTYPES[real], (3, 10, 14), (Op(), Op(transposed=True)))
    for key in ("c", "z", "s.3xtf32", "h"):
        assert real_dtype(DTYPES[key]) is None
        assert kernel_problem(DTYPES[key], (3, 5, 7), nn) == (DTYPES[key], (3, 5, 7), nn)
