"""complex64 products as the real product of their embedding (``blas.complex_embedding``): the real
problem the CUDA path's TF32 and 3xTF32 kernels compute, and the kernels that make its operands (run on
a GPU by ``tests/engine/test_cuda_route.py`` and ``test_cuda_tensors.py``)."""

import numpy as np
import pytest

from autogemm.blas.complex_embedding import kernel_problem, real_dtype
from autogemm.blas.problem import Op
from autogemm.codelets import complex_embedding
from autogemm.dtypes import DTYPES
from autogemm.runtime.cuda import compile_cuda, cuda_missing


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


def test_the_real_form_is_the_embedding():
    """The blocks the embedding kernel writes for B, [[re x, -im x], [im x, re x]] as rows 2j and 2j + 1
    of op(B)^T's real form, make op(A)'s parts times it the complex product (in float64, ops N)."""
    rng = np.random.default_rng(4)
    m, n, k = 5, 4, 6
    a = rng.standard_normal((m, k)) + 1j * rng.standard_normal((m, k))
    b = rng.standard_normal((k, n)) + 1j * rng.standard_normal((k, n))
    x = b.T                                                     # op(B)^T, n x k
    form = np.empty((n, 2, k, 2))
    form[:, 0, :, 0], form[:, 0, :, 1], form[:, 1, :, 0], form[:, 1, :, 1] = x.real, -x.imag, x.imag, x.real
    parts = a.view(np.float64)                                  # m x 2k: each element's parts side by side
    got = (parts @ form.reshape(2 * n, 2 * k).T).view(np.complex128)
    assert np.abs(got - a @ b).max() < 1e-12


def test_the_embedding_kernels_compile_for_sm_90a():
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    cubin = compile_cuda(complex_embedding.render(), "complex_embedding")
    assert all(name.encode() in cubin.image for name in (complex_embedding.EMBED, complex_embedding.SCALE))
    assert complex_embedding.grid(10, 132) == (1,) and complex_embedding.grid(10**9, 132) == (8 * 132,)
