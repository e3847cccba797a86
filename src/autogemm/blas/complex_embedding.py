"""complex64 products on the CUDA path's real kernels. C = op(A) op(B), m x n complex, is a real product:
op(A) seen as m x 2k float32 (each element's real and imaginary parts side by side, as complex64 stores
them) times the 2k x 2n real embedding of op(B), whose 2 x 2 block for each element b is
[[re b, im b], [-im b, re b]]. It takes as many real multiply-adds as complex arithmetic's four real
products, and C comes out as complex64 stores it (m x 2n float32). The kernels of TF32 and 3xTF32
(``wgmma``) compute complex64 so, with each real part of a sum rounded and accumulated as a float32
product of that precision is; ``cuda_gemm.CudaGemm`` brings the operands into that form on the device
(``codelets.complex_embedding``)."""

from __future__ import annotations

from ..dtypes import DTYPES, Dtype
from .problem import Op

#: The real dtype whose kernels compute each complex64 precision's products (by dtype key).
REAL_KEYS = {"c.tf32": "s.tf32", "c.3xtf32": "s.3xtf32"}


def real_dtype(dt: Dtype) -> Dtype | None:
    """The real dtype that computes ``dt``'s products by the embedding, or None where ``dt`` has none."""
    key = REAL_KEYS.get(dt.key)
    return None if key is None else DTYPES[key]


def kernel_dtype(dt: Dtype) -> Dtype:
    """The dtype whose CUDA kernels compute ``dt``'s products: its real dtype (``REAL_KEYS``), else itself."""
    return real_dtype(dt) or dt


def depth(k: int) -> int:
    """The K of the real forms, in complex elements: ``k`` made even (a column of zeros after an odd K),
    so that a form's rows of 2K float32 lie 16 bytes apart, as TMA reads them in place."""
    return k + k % 2


def real_sizes(m: int, n: int, k: int) -> tuple[int, int, int]:
    """The real product that computes an m x n x k complex64 one: m x 2n x 2 ``depth(k)``."""
    return m, 2 * n, 2 * depth(k)


def kernel_problem(dt: Dtype, sizes: tuple[int, int, int], ops: tuple[Op, Op]
                   ) -> tuple[Dtype, tuple[int, int, int], tuple[Op, Op]]:
    """The product a CUDA kernel computes for an m x n x k product of ``dt``, its operands stored as
    ``ops`` say: that product, or for a dtype of ``REAL_KEYS`` the real product of the embedding
    (``real_sizes``, op(A)'s parts and op(B)'s embedding transposed, both read K-major as they lie)."""
    kernel = kernel_dtype(dt)
    if kernel is dt:
        return dt, sizes, ops
    return kernel, real_sizes(*sizes), (Op(), Op(transposed=True))
