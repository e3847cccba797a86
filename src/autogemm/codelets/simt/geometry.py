"""Quantities derived from a ``SimtParams`` and a dtype, shared by ``check`` and ``render``."""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import Dtype, get_dtype
from ..kernel import ceil_div
from .params import SimtParams

TEXEL_BYTES = 16          # images hold RGBA texels of four 32-bit channels


@dataclass(frozen=True)
class OperandPath:
    """How the kernel moves one operand (A or B) from memory into its registers."""

    name: str                 # "A" or "B"
    outer: int                # rows (A) or columns (B) of the work-group's block
    outer_contiguous: bool    # stored with memory consecutive along M (A) or N (B), else along K
    local: bool
    image: bool
    tile_k: int
    vector_width: int
    local_pad: bool
    work_group_size: int
    elements_per_texel: int

    @property
    def load_width(self) -> int:
        """Elements per global read when staging a block into local memory."""
        return self.vector_width if self.outer_contiguous else min(self.vector_width, self.tile_k)

    @property
    def stored_shape(self) -> tuple[int, int]:
        """(rows, columns) of the staged block in stored order: columns are the contiguous run."""
        return (self.tile_k, self.outer) if self.outer_contiguous else (self.outer, self.tile_k)

    @property
    def vectors(self) -> int:
        """Global reads of ``load_width`` elements that stage one block."""
        return self.tile_k * self.outer // self.load_width

    @property
    def loads_per_item(self) -> int:
        return ceil_div(self.vectors, self.work_group_size)

    @property
    def local_row(self) -> int:
        """Elements per row of the local tile (one row per k), padded by a vector when asked."""
        return self.outer + (self.vector_width if self.local_pad else 0)


def operands(params: SimtParams, dtype: Dtype | str) -> tuple[OperandPath, OperandPath]:
    dtype = get_dtype(dtype)
    ept = max(1, TEXEL_BYTES // dtype.itemsize)
    common = dict(tile_k=params.tile_k, vector_width=params.vector_width, local_pad=params.local_pad,
                  work_group_size=params.work_group_size, elements_per_texel=ept)
    a = OperandPath("A", params.block_rows, params.a_outer_contiguous, params.local_a, params.image_a, **common)
    b = OperandPath("B", params.block_cols, params.b_outer_contiguous, params.local_b, params.image_b, **common)
    return a, b


def local_bytes(params: SimtParams, dtype: Dtype | str) -> int:
    """Local memory one work-group uses."""
    dtype = get_dtype(dtype)
    buffers = 2 if params.double_buffer else 1
    return sum(op.tile_k * op.local_row * dtype.itemsize * buffers
               for op in operands(params, dtype) if op.local)


def register_estimate(params: SimtParams, dtype: Dtype | str) -> int:
    """32-bit registers per work-item: accumulators, the fragments of A and B for one k, the staging
    registers of local loads (all in flight at once), and a fixed share for indices."""
    per = get_dtype(dtype).registers_per_element
    acc = params.tile_rows * params.tile_cols * per
    fragments = (params.tile_rows + params.tile_cols + params.vector_width) * per
    staging = 0
    for op in operands(params, dtype):
        if op.local:
            staging += op.loads_per_item * op.load_width * per
    return acc + fragments + staging + 24
