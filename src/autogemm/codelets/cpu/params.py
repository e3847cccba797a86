"""``CpuParams``: a GEMM kernel for CPU OpenCL devices, one work-item a work-group, each computing a block
of C in vector registers from a row of A's values and vectors of B's, as a CPU BLAS's micro-kernel does."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...dtypes import Dtype
from ..fields import FamilyParams, choices_problem
from ..simt.params import MACS, build_options_problem

LAYOUTS = ("NN", "TN")                 # B is read as stored, K x N; A as M x K or (T) K x M
TILE_ROWS = (1, 2, 4, 6, 8, 12, 16)
VECTORS = (1, 2, 4)
VECTOR_WIDTHS = (2, 4, 8, 16)
UNROLLS = (1, 2, 4)


@dataclass(frozen=True)
class CpuParams(FamilyParams):
    """One configuration of the ``cpu`` family.

    A work-group is one work-item (a CPU runs a work-group on one core, and its compiler keeps one
    work-item's vectors in registers, where it would have to make several work-items' lanes of one loop).
    It computes ``tile_rows`` rows by ``vectors`` vectors of ``vector_width`` columns of C: for each k, the
    ``vectors`` vectors of B's row k and, one after the other, each row's value of A, broadcast and
    multiplied into that row's accumulators. Layout TN reads A as stored K x M (A transposed), so a k's
    values of the block's rows lie side by side, as a packed panel's do; K is unrolled ``unroll`` times.
    The plan's K slices keep the rows of A and B one work-item reads within its core's cache
    (``Thresholds.slice_depth``).
    """

    family: ClassVar[str] = "cpu"

    layout: str = "TN"
    tile_rows: int = 8
    vectors: int = 2
    vector_width: int = 16
    unroll: int = 1
    mac: str = "fma"
    build_options: tuple[str, ...] = ()

    # ----- what plans ask of every family ---------------------------------------------------------
    image_a: ClassVar[bool] = False
    image_b: ClassVar[bool] = False

    @property
    def block_rows(self) -> int:
        return self.tile_rows

    @property
    def block_cols(self) -> int:
        return self.vectors * self.vector_width

    @property
    def tile_k(self) -> int:
        return self.unroll

    @property
    def accumulators(self) -> int:
        """Elements of C a work-item holds."""
        return self.tile_rows * self.block_cols


    def malformed(self) -> str | None:
        """Why this point lies outside the family's space regardless of device, or None."""
        choices = {"layout": LAYOUTS, "tile_rows": TILE_ROWS, "vectors": VECTORS, "vector_width": VECTOR_WIDTHS,
                   "unroll": UNROLLS, "mac": MACS}
        return choices_problem(self, choices) or build_options_problem(self.build_options)

    def describe(self) -> str:
        """A one-line summary, e.g. ``cpu TN tile8x2x16 k1 fma``."""
        parts = ["cpu", self.layout, f"tile{self.tile_rows}x{self.vectors}x{self.vector_width}", f"k{self.unroll}",
                 self.mac, *self.build_options]
        return " ".join(parts)


#: The bytes of one vector register (AVX-512's), which a vector of the default configuration fills.
REGISTER_WIDTH = 64


def fit(params: CpuParams, dtype: Dtype) -> CpuParams:
    """``params`` with vectors no wider than a register of ``dtype``'s elements (16 floats, 8 doubles or
    single-precision complex, 4 double-precision complex), so the default fits every dtype."""
    return replace(params, vector_width=min(params.vector_width, max(2, REGISTER_WIDTH // dtype.itemsize)))
