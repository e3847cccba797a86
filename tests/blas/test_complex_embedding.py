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
    K-major, and no kernels of their own ('auto' keeps them on OpenCL: the host builds the embedding);
    every other dtype is its own kernel problem."""
    from autogemm.blas.cuda_gemm import no_kernels

    nn = (Op(), Op())
    for key, real in (("c.tf32", "s.tf32"), ("c.3xtf32", "s.3xtf32")):
        assert real_dtype(DTYPES[key]) is DTYPES[real]
        assert kernel_problem(DTYPES[key], (3, 5, 7), nn) == (DTYPES[real], (3, 10, 14), (Op(), Op(transposed=True)))
        assert "backend='cuda'" in no_kernels(DTYPES[key]) and no_kernels(DTYPES[real]) is None
    for key in ("c", "z", "s.3xtf32", "h"):
        assert real_dtype(DTYPES[key]) is None
        assert kernel_problem(DTYPES[key], (3, 5, 7), nn) == (DTYPES[key], (3, 5, 7), nn)


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 2.0), (0.25 - 2j, 0.0), (1.5, 1 - 1j), (2j, -3j)])
@pytest.mark.parametrize("trans_a,trans_b", [("N", "N"), ("T", "C"), ("C", "T")])
def test_an_embedded_run_scales_as_blas_does(monkeypatch, alpha, beta, trans_a, trans_b):
    """The CUDA path's embedded complex64 run (``engine.routes.cuda_host``), its real product computed in
    float64 by a stand-in for the device: alpha op(A) op(B) + beta C for real and complex alpha and beta
    in every op, a beta of 0 over a NaN C (never read), and a run that fails leaves a C it would have
    scaled by a complex beta as it was."""
    from autogemm.engine.routes import cuda_host
    from autogemm.errors import DeviceError

    def device(ctx, plan, a, b, out, sizes, real_alpha, real_beta):
        (parts, op_a), (form, op_b) = a, b
        assert (op_a, op_b) == (Op(), Op(transposed=True))
        assert parts.shape == (m, 2 * k) and form.shape == (2 * n, 2 * k)
        product = parts.astype(np.float64) @ form.astype(np.float64).T
        out[...] = real_alpha * product + (real_beta * out if real_beta != 0 else 0)
        return out

    rng = np.random.default_rng(7)
    dt = DTYPES["c"]
    m, n, k = 6, 5, 4
    a = random_matrix(rng, dt, (m, k) if trans_a == "N" else (k, m))
    b = random_matrix(rng, dt, (k, n) if trans_b == "N" else (n, k))
    c0 = random_matrix(rng, dt, (m, n)) if beta != 0 else np.full((m, n), np.nan, np.complex64)
    want = alpha * apply_op(a, trans_a).astype(np.complex128) @ apply_op(b, trans_b).astype(np.complex128)
    want = want + (beta * c0.astype(np.complex128) if beta != 0 else 0)
    monkeypatch.setattr(cuda_host, "_run", device)
    out = c0.copy()
    got = cuda_host._run_embedded(None, None, (a, Op.from_letter(trans_a, "a")), (b, Op.from_letter(trans_b, "b")),
                                  out, (m, n, k), complex(alpha), complex(beta))
    assert got is out and np.abs(got - want).max() < 1e-5 * np.abs(want).max()

    def failing(*args):
        raise DeviceError("out of memory")

    monkeypatch.setattr(cuda_host, "_run", failing)
    out = c0.copy()
    with pytest.raises(DeviceError):
        cuda_host._run_embedded(None, None, (a, Op.from_letter(trans_a, "a")), (b, Op.from_letter(trans_b, "b")),
                                out, (m, n, k), complex(alpha), complex(beta))
    if complex(beta).imag:
        assert np.array_equal(out, c0)
