"""complex64 products as the real product of their embedding (``blas.complex_embedding``): the real
problem the CUDA path's TF32 and 3xTF32 kernels compute, and the kernels that make its operands (run on
a GPU by ``tests/engine/test_cuda_route.py`` and ``test_cuda_tensors.py``)."""

import pytest

from autogemm.blas.complex_embedding import kernel_problem, real_dtype
from autogemm.blas.cuda_gemm import CudaGemm, DeviceOperand
from autogemm.blas.problem import Op
from autogemm.codelets import complex_embedding
from autogemm.dtypes import DTYPES
from autogemm.errors import DeviceError
from autogemm.runtime.cuda import compile_cuda, cuda_missing


def test_complex64_in_tf32_runs_as_a_real_product_of_twice_the_columns_and_depth():
    """c.tf32 and c.3xtf32 have real kernels (s.tf32, s.3xtf32) over m x 2n x 2k, k made even (the forms'
    rows 16 bytes apart), both operands read K-major; every other dtype is its own kernel problem."""
    nn = (Op(), Op())
    for key, real in (("c.tf32", "s.tf32"), ("c.3xtf32", "s.3xtf32")):
        assert real_dtype(DTYPES[key]) is DTYPES[real]
        assert kernel_problem(DTYPES[key], (3, 5, 7), nn) == (DTYPES[real], (3, 10, 16), (Op(), Op(transposed=True)))
        assert kernel_problem(DTYPES[key], (3, 5, 6), nn)[1] == (3, 10, 12)
    for key in ("c", "z", "s.3xtf32", "h"):
        assert real_dtype(DTYPES[key]) is None
        assert kernel_problem(DTYPES[key], (3, 5, 7), nn) == (DTYPES[key], (3, 5, 7), nn)


class _Memory:
    def __init__(self, log: list, nbytes: int) -> None:
        self.log, self.nbytes = log, nbytes

    def release(self) -> None:
        self.log.append(("release", self.nbytes))


class _Context:
    """A CUDA context stood in: what is allocated, launched and released, in order."""

    multiprocessors = 132

    def __init__(self) -> None:
        self.log: list = []

    def allocate(self, nbytes: int, stream: object) -> _Memory:
        self.log.append(("allocate", nbytes))
        return _Memory(self.log, nbytes)

    def launch(self, function: str, grid: tuple, block: tuple, args: list, stream: object) -> None:
        self.log.append((function, [value for value, _ in args]))


class _RealProduct:
    def __init__(self, log: list, fails: bool) -> None:
        self.log, self.fails = log, fails

    def enqueue(self, a, b, c, alpha, beta, stream) -> None:
        self.log.append(("product", (a.rows, a.ld, b.rows, b.ld, alpha, beta)))
        if self.fails:
            raise DeviceError("out of memory")


def _embedded_plan(m: int, n: int, k: int, fails: bool = False) -> tuple[CudaGemm, list]:
    ctx = _Context()
    plan = object.__new__(CudaGemm)
    plan.ctx, plan.m, plan.n, plan.k = ctx, m, n, k
    plan.embed, plan.scale = "embed", "scale"
    plan.embedded = _RealProduct(ctx.log, fails)
    return plan, ctx.log


@pytest.mark.parametrize("alpha,beta", [(2.0, 0.0), (0.5 - 1j, 2j), (1j, 0.5)])
def test_the_embedded_product_makes_both_forms_scales_c_by_a_complex_beta_and_frees_them(alpha, beta):
    """A's parts (alpha 1) and alpha op(B)'s embedding (a complex alpha alone: a real one reaches the real
    kernel) in memory freed after the product; a complex beta scales C first, the kernel then adding to it."""
    m, n, k = 3, 5, 7
    plan, log = _embedded_plan(m, n, k)
    a = DeviceOperand("A", m, k, False, False)
    b = DeviceOperand("B", n, 9, True, True)                    # op(B) = B^H, stored n x k, ld 9
    plan._enqueue_embedded(a, b, "C", complex(alpha), complex(beta), None)
    embeds = [args for what, args in log if what == "embed"]
    # (source, ld, transposed, conjugated, rows, k, depth, alpha re, alpha im, doubled, form): k 7 made 8
    assert [e[:10] for e in embeds] == [["A", k, 0, 0, m, k, k + 1, 1.0, 0.0, 0],
                                        ["B", 9, 1, 1, n, k, k + 1,
                                         complex(alpha).real if complex(alpha).imag else 1.0, complex(alpha).imag, 1]]
    assert [nbytes for what, nbytes in log if what == "allocate"] == [m * 2 * (k + 1) * 4, 2 * n * 2 * (k + 1) * 4]
    scales = [args for what, args in log if what == "scale"]
    assert scales == ([] if complex(beta).imag == 0 else [["C", m * n, complex(beta).real, complex(beta).imag]])
    product = next(args for what, args in log if what == "product")
    assert product == (m, 2 * (k + 1), 2 * n, 2 * (k + 1), alpha if complex(alpha).imag == 0 else 1.0,
                       beta if complex(beta).imag == 0 else 1.0)
    assert [what for what, _ in log][-2:] == ["release", "release"]


def test_an_embedded_product_that_fails_frees_its_forms():
    plan, log = _embedded_plan(4, 4, 4, fails=True)
    operand = DeviceOperand("X", 4, 4, False, False)
    with pytest.raises(DeviceError):
        plan._enqueue_embedded(operand, operand, "C", 1 + 0j, 0j, None)
    assert sum(what == "allocate" for what, _ in log) == sum(what == "release" for what, _ in log) == 2


def test_the_embedding_kernels_compile_for_sm_90a():
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    cubin = compile_cuda(complex_embedding.render(), "complex_embedding")
    assert all(name.encode() in cubin.image for name in (complex_embedding.EMBED, complex_embedding.SCALE))
    assert complex_embedding.scale_grid(10, 132) == (1,) and complex_embedding.scale_grid(10**9, 132) == (8 * 132,)
    assert complex_embedding.embed_grid(33, 33, 132) == (4,)                 # tiles of 32 x 32
    assert complex_embedding.embed_grid(10**5, 10**5, 132) == (8 * 132,)
