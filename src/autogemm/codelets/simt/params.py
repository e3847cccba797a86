"""``SimtParams``: one point of the RaijinCL codelet space, extended with what modern GPUs need."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import ClassVar

from ..fields import FamilyParams, choices_problem, halved_blocks

LAYOUTS = ("NN", "NT", "TN", "TT")
ASSIGNMENTS = ("consecutive", "offset")
TILE_SIZES = (1, 2, 4, 8, 16)
TILE_K_SIZES = (1, 2, 4, 8, 16)
VECTOR_WIDTHS = (1, 2, 4, 8)
WORK_GROUP_SIZES = (32, 64, 128, 256)
WORK_GROUP_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
WARP = 32                       # work-items per warp in the ``warp_cols`` arrangement
WARP_COLS = (0, 1, 2, 4, 8, 16, 32)
MACS = ("fma", "mad", "mul_add")

#: Build options a configuration may carry: a closed list, so a profile cannot inject others.
PORTABLE_OPTIONS = ("-cl-mad-enable", "-cl-no-signed-zeros")
NVIDIA_OPTION = re.compile(r"^-cl-nv-maxrregcount=(\d{2,3})$")


def build_options_problem(options: tuple[str, ...]) -> str | None:
    """Why these build options are not allowed (closed list, a register cap within 32..255, no
    repeats), or None; every family's ``malformed`` asks this."""
    for option in options:
        match = NVIDIA_OPTION.match(option)
        if option not in PORTABLE_OPTIONS and not match:
            return f"build option {option!r} is not one autogemm allows"
        if match and not 32 <= int(match[1]) <= 255:
            return f"{option}: the register cap must be within 32..255"
    if len(set(options)) != len(options):
        return "build options repeat"
    return None


@dataclass(frozen=True)
class SimtParams(FamilyParams):
    """A kernel configuration of the ``simt`` family (plain FMA arithmetic, one work-item per tile).

    The kernel computes C = alpha op(A) op(B) + beta C for row-major matrices. ``layout`` says how the
    kernel reads its operands: N = as stored (A is M x K, B is K x N), T = transposed (A^T is stored
    K x M, B^T is stored N x K); an operand stored otherwise reaches the kernel through the pack helper.
    """

    family: ClassVar[str] = "simt"
    names_family: ClassVar[bool] = False        # (profiles written before there were families)

    layout: str = "TN"
    assignment: str = "offset"      # a work-item's tile: consecutive elements, or vectors WG apart
    wg_rows: int = 8                # work-items along M (OpenCL dimension 1)
    wg_cols: int = 8                # work-items along N (OpenCL dimension 0)
    tile_rows: int = 4              # rows of C per work-item
    tile_cols: int = 4              # columns of C per work-item
    tile_k: int = 4                 # K step of the main loop
    vector_width: int = 1           # elements per load, store and multiply-add (along M and N)
    local_a: bool = True            # stage A through local memory (else read it from global)
    local_b: bool = True
    image_a: bool = False           # read A from an image (else from a buffer)
    image_b: bool = False
    double_buffer: bool = False     # two local buffers: load the next K block while computing this one
    local_pad: bool = False         # pad local rows by one vector against bank conflicts
    unroll_k: bool = True           # fully unroll the K step loop
    mac: str = "fma"                # fma(a,b,c), mad(a,b,c) or a*b+c
    build_options: tuple[str, ...] = ()
    warp_cols: int = 0              # each 32 consecutive work-items cover a (32 / warp_cols) x warp_cols
                                    # patch of the work-group; 0: rows of the work-group as they come

    @property
    def block_rows(self) -> int:
        return self.wg_rows * self.tile_rows

    @property
    def block_cols(self) -> int:
        return self.wg_cols * self.tile_cols

    @property
    def work_group_size(self) -> int:
        return self.wg_rows * self.wg_cols

    @property
    def a_outer_contiguous(self) -> bool:
        """True when A is stored K x M, so consecutive memory runs along M."""
        return self.layout[0] == "T"

    @property
    def b_outer_contiguous(self) -> bool:
        """True when B is stored K x N, so consecutive memory runs along N."""
        return self.layout[1] == "N"

    def reads_16bit(self) -> bool:
        """True when the kernel reads 16-bit operands as they are stored: both staged in local memory from
        buffers, each value converted to float once a block. Read from global memory in the inner loop,
        each would be converted at every multiply-add (on PoCL's CPU device three times slower than the
        float32 kernel on operands packed as floats first); an image holds floats, packed from them."""
        return self.local_a and self.local_b and not (self.image_a or self.image_b)

    def smaller_blocks(self) -> tuple[SimtParams, ...]:
        """Blocks of a half, a quarter and a sixteenth of this one's (``halved_blocks``: the work-item's tile
        along N, then the work-group's rows, then its columns and the tile's rows); warps keep their
        arrangement where it still tiles the work-group, else take its rows as they come."""
        return halved_blocks(self, "tile_cols", "wg_rows", "wg_cols", "tile_rows",
                             lambda c: c if c._warp_problem() is None else replace(c, warp_cols=0))

    def malformed(self) -> str | None:
        """Why this point lies outside the codelet space regardless of device, or None."""
        choices = {
            "layout": LAYOUTS, "assignment": ASSIGNMENTS, "wg_rows": WORK_GROUP_DIMS,
            "wg_cols": WORK_GROUP_DIMS, "tile_rows": TILE_SIZES, "tile_cols": TILE_SIZES,
            "tile_k": TILE_K_SIZES, "vector_width": VECTOR_WIDTHS, "mac": MACS, "warp_cols": WARP_COLS,
        }
        problem = choices_problem(self, choices) or build_options_problem(self.build_options)
        if problem:
            return problem
        if self.tile_rows % self.vector_width or self.tile_cols % self.vector_width:
            return (f"vector_width {self.vector_width} must divide tile_rows {self.tile_rows} and "
                    f"tile_cols {self.tile_cols} (vectors run along M and N)")
        if (self.double_buffer or self.local_pad) and not (self.local_a or self.local_b):
            return "double_buffer and local_pad need an operand in local memory"
        return self._warp_problem()

    def _warp_problem(self) -> str | None:
        if not self.warp_cols:
            return None
        if self.warp_cols == self.wg_cols:
            return "warp_cols equal to wg_cols is the plain arrangement: say 0"
        if (self.work_group_size % WARP or self.wg_cols % self.warp_cols
                or self.wg_rows % (WARP // self.warp_cols)):
            return (f"warp_cols {self.warp_cols}: {WARP // self.warp_cols} x {self.warp_cols} patches of "
                    f"{WARP} work-items must tile the {self.wg_rows} x {self.wg_cols} work-group")
        return None

    def describe(self) -> str:
        """A one-line summary, e.g. ``TN offset wg16x16 tile8x8x8 v4 local AB dbuf``."""
        local = "".join(x for x, on in (("A", self.local_a), ("B", self.local_b)) if on) or "-"
        image = "".join(x for x, on in (("A", self.image_a), ("B", self.image_b)) if on)
        parts = [
            self.layout, self.assignment[:4], f"wg{self.wg_rows}x{self.wg_cols}"
            + (f"/warp{WARP // self.warp_cols}x{self.warp_cols}" if self.warp_cols else ""),
            f"tile{self.tile_rows}x{self.tile_cols}x{self.tile_k}", f"v{self.vector_width}",
            f"local:{local}",
        ]
        if image:
            parts.append(f"image:{image}")
        if self.double_buffer:
            parts.append("dbuf")
        if self.local_pad:
            parts.append("pad")
        if not self.unroll_k:
            parts.append("no-unroll")
        parts.append(self.mac)
        parts.extend(self.build_options)
        return " ".join(parts)
