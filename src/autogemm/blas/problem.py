"""``GemmProblem``: one C = alpha op(A) op(B) + beta C on row-major storage, with leading dimensions
and offsets, or a strided batch of such products, as the plan sees it once the public API has resolved
numpy layouts."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..dtypes import Dtype
from ..errors import ArgumentError, ShapeError

INT32_MAX = 2**31 - 1
#: A plan depends on its operands' element offsets only through the powers of two up to this that divide
#: them (their alignment for vector access), so one plan serves every offset of that class (``aligned``).
OFFSET_ALIGNMENT = 64


def addressable(dt: Dtype, limit: int = INT32_MAX) -> int:
    """How many elements of ``dt`` a kernel's 32-bit indices reach when they reach ``limit`` reals: half
    as many complex elements, which kernels address through their first real (index times 2)."""
    return limit // dt.reals_per_element


def alignment_class(offset: int) -> int:
    """The smallest offset divisible by the same powers of two up to ``OFFSET_ALIGNMENT`` as ``offset``."""
    return 0 if offset % OFFSET_ALIGNMENT == 0 else offset & -offset


@dataclass(frozen=True)
class Op:
    """What is applied to a stored operand: a transpose, a conjugation, or both ('C')."""

    transposed: bool = False
    conjugated: bool = False

    @classmethod
    def from_letter(cls, letter: object, name: str) -> Op:
        if not isinstance(letter, str) or letter.upper() not in ("N", "T", "C"):
            raise ArgumentError(f"{name} must be 'N', 'T' or 'C', not {letter!r}")
        upper = letter.upper()
        return cls(transposed=upper != "N", conjugated=upper == "C")

    def flipped(self) -> Op:
        """The op for the same matrix seen through its transpose (a column-major array)."""
        return Op(not self.transposed, self.conjugated)

    @property
    def letter(self) -> str:
        return "C" if self.transposed and self.conjugated else ("T" if self.transposed else "N")


@dataclass(frozen=True)
class GemmProblem:
    """Sizes and storage of one GEMM: op(A) is m x k, op(B) is k x n, C is m x n, all row-major with
    leading dimensions ``ld*`` and element offsets ``offset_*`` into their buffers. A strided batch of
    ``batch`` such products has product i's operands ``i * stride_*`` elements further (a stride of 0
    for A or B uses one matrix in every product)."""

    dtype: Dtype
    m: int
    n: int
    k: int
    op_a: Op = Op()
    op_b: Op = Op()
    lda: int = 0
    ldb: int = 0
    ldc: int = 0
    offset_a: int = 0
    offset_b: int = 0
    offset_c: int = 0
    batch: int = 1
    stride_a: int = 0
    stride_b: int = 0
    stride_c: int = 0

    @classmethod
    def dense(cls, dtype: Dtype, m: int, n: int, k: int, op_a: Op = Op(), op_b: Op = Op(), batch: int = 1
              ) -> GemmProblem:
        """A problem on operands stored contiguously (each leading dimension its stored row's length), or
        a strided ``batch`` of them, each matrix right after the one before."""
        return cls(dtype, m, n, k, op_a, op_b, lda=max(1, m if op_a.transposed else k),
                   ldb=max(1, k if op_b.transposed else n), ldc=max(1, n), batch=batch,
                   stride_a=m * k if batch > 1 else 0, stride_b=k * n if batch > 1 else 0,
                   stride_c=m * n if batch > 1 else 0)

    def aligned(self) -> GemmProblem:
        """This problem with each offset replaced by its alignment class: what plans are made for."""
        return replace(self, offset_a=alignment_class(self.offset_a), offset_b=alignment_class(self.offset_b),
                       offset_c=alignment_class(self.offset_c))

    def stored_shape(self, name: str) -> tuple[int, int]:
        """(rows, cols) of the stored A, B or C."""
        if name == "A":
            return (self.k, self.m) if self.op_a.transposed else (self.m, self.k)
        if name == "B":
            return (self.n, self.k) if self.op_b.transposed else (self.k, self.n)
        return (self.m, self.n)

    def ld(self, name: str) -> int:
        return {"A": self.lda, "B": self.ldb, "C": self.ldc}[name]

    def offset(self, name: str) -> int:
        return {"A": self.offset_a, "B": self.offset_b, "C": self.offset_c}[name]

    def stride(self, name: str) -> int:
        return {"A": self.stride_a, "B": self.stride_b, "C": self.stride_c}[name]

    def member_elements(self, name: str) -> int:
        """Elements from the first to the last of one stored A, B or C."""
        rows, cols = self.stored_shape(name)
        return (rows - 1) * self.ld(name) + cols if rows and cols else 0

    def elements_needed(self, name: str) -> int:
        """Elements a buffer must hold, from its start, for operand ``name`` (every product's)."""
        one = self.member_elements(name)
        if one == 0 or self.batch == 0:
            return self.offset(name)
        return self.offset(name) + (self.batch - 1) * self.stride(name) + one

    def validate(self, index_limit: int | None = INT32_MAX) -> None:
        """Raise ``ShapeError`` for negative sizes, short leading dimensions, products of a batch that
        would write one C, or one matrix spanning more than ``index_limit`` reals (the kernels' indices
        within a matrix are 32-bit, their offsets 64-bit; None for a caller that cuts such a problem into
        blocks, ``index_blocks``)."""
        for size_name in ("m", "n", "k", "batch"):
            size = getattr(self, size_name)
            if not isinstance(size, int) or size < 0:
                raise ShapeError(f"{size_name} must be a non-negative integer, not {size!r}")
        for name in ("A", "B", "C"):
            rows, cols = self.stored_shape(name)
            ld, offset = self.ld(name), self.offset(name)
            if offset < 0:
                raise ShapeError(f"offset of {name} must be >= 0, not {offset}")
            stride = self.stride(name)
            if not isinstance(stride, int) or stride < 0:
                raise ShapeError(f"stride of {name} must be a non-negative integer, not {stride!r}")
            if ld < max(1, cols):
                raise ShapeError(f"ld{name.lower()}={ld} is less than the {cols} columns of the stored {name}")
            if index_limit is not None and self.member_elements(name) > addressable(self.dtype, index_limit):
                raise ShapeError(f"{name} spans more than {addressable(self.dtype, index_limit)} elements, beyond "
                                 "this kernel's 32-bit indexing")
            if stride > INT32_MAX:
                raise ShapeError(f"stride of {name} is {stride} elements, beyond this kernel's 32-bit strides")
        if self.batch > 1 and self.stride_c == 0 and self.member_elements("C"):
            raise ShapeError("stride of C is 0: every product of the batch would write the same C")
