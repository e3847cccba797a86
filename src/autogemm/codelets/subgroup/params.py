"""``SubgroupParams``: a GEMM kernel that shares A among the work-items of a subgroup by shuffles (after
Intel's cl_intel_subgroups SGEMM sample) instead of through local memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..fields import FamilyParams, choices_problem
from ..simt.params import MACS, build_options_problem

LAYOUTS = ("NN", "TN")                 # B is read as stored, K x N; A as M x K or (T) K x M
SUBGROUPS = (8, 16, 32)
WG_ROWS = (1, 2, 4, 8)
TILE_ROWS = (1, 2, 4, 8)
VECTOR_WIDTHS = (1, 2, 4)
#: How a value travels between the work-items of a subgroup: the Intel and Khronos shuffle built-ins,
#: NVIDIA's shfl.sync through inline PTX, or local memory and barriers (portable, for testing anywhere).
SHUFFLES = ("intel", "khr", "ptx", "local")


@dataclass(frozen=True)
class SubgroupParams(FamilyParams):
    """One configuration of the ``subgroup`` family.

    A work-group is ``wg_rows`` subgroups of ``subgroup`` work-items. Each work-item computes a
    ``tile_rows`` x ``vector_width`` tile of C: its subgroup covers tile_rows rows and subgroup x
    vector_width columns. Per K step of ``subgroup``, work-item l reads A at column k0 + l for its rows,
    and the subgroup's work-items pass those values around by shuffles while each reads its own columns
    of B.
    """

    family: ClassVar[str] = "subgroup"

    layout: str = "NN"
    subgroup: int = 32
    wg_rows: int = 4
    tile_rows: int = 4
    vector_width: int = 2
    shuffle: str = "local"
    mac: str = "fma"
    build_options: tuple[str, ...] = ()

    # ----- what plans ask of every family ---------------------------------------------------------
    image_a: ClassVar[bool] = False
    image_b: ClassVar[bool] = False

    @property
    def block_rows(self) -> int:
        return self.wg_rows * self.tile_rows

    @property
    def block_cols(self) -> int:
        return self.subgroup * self.vector_width

    @property
    def tile_k(self) -> int:
        return self.subgroup

    @property
    def work_group_size(self) -> int:
        return self.subgroup * self.wg_rows


    def malformed(self) -> str | None:
        """Why this point lies outside the family's space regardless of device, or None."""
        choices = {"layout": LAYOUTS, "subgroup": SUBGROUPS, "wg_rows": WG_ROWS, "tile_rows": TILE_ROWS,
                   "vector_width": VECTOR_WIDTHS, "shuffle": SHUFFLES, "mac": MACS}
        return choices_problem(self, choices) or build_options_problem(self.build_options)

    def describe(self) -> str:
        """A one-line summary, e.g. ``subgroup NN sg32x4 tile4x2 shuffle:ptx fma``."""
        parts = ["subgroup", self.layout, f"sg{self.subgroup}x{self.wg_rows}",
                 f"tile{self.tile_rows}x{self.vector_width}", f"shuffle:{self.shuffle}", self.mac,
                 *self.build_options]
        return " ".join(parts)
