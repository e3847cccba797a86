"""``GemvParams``: one point of the GEMV codelet space (y = alpha op(A) x + beta y)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ..fields import FamilyParams, choices_problem
from ..helpers import lanes_for
from ..simt.params import build_options_problem

LAYOUTS = ("N", "T")
WORK_GROUP_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PER_ITEM = (1, 2, 4, 8)
UNROLLS = (1, 2, 4, 8)
WAVES = (0, 1, 2, 4, 8, 16)
VECTORS = (1, 2, 4, 8, 16)
#: ``fitted_to`` in layout N: a reduction of at most SHORT_STEPS steps of the work-group is read by as few
#: as SHORT_LANES work-items a row while the work-groups cover SHORT_FILL times the compute units (the
#: best of 1 to 8 steps and 0 to 2 times the compute units on the programs suite's GEMV products: the
#: figures are in the routines guide).
SHORT_STEPS, SHORT_LANES, SHORT_FILL = 4, 4, 2


@dataclass(frozen=True)
class GemvParams(FamilyParams):
    """A kernel configuration of the ``gemv`` family, for a row-major A of ``rows`` x ``cols``.

    ``layout`` N computes y = A x: each output is the dot product of a stored row with x, the work-items
    of a row of the work-group (``wg_x``) read that row's consecutive elements and add their partial sums
    in local memory. ``layout`` T computes y = A^T x: each output is a stored column, the work-items of a
    row of the work-group read consecutive columns and the rows of the work-group (``wg_y``) split the
    stored rows between them. Either way GEMV reads every element of A once, so it is bound by memory:
    the knobs decide how many loads each work-item has in flight (``per_item`` outputs sharing each x
    value, ``unroll`` steps along the reduction) and, with ``waves``, whether the reduction is split over
    work-groups too, so that a short, wide problem still fills the device.

    With several right-hand sides (Y = alpha op(A) X + beta Y, X of a few columns: a GEMM whose C has few
    rows or columns) each work-item multiplies every element of A it reads by up to ``vectors`` of them,
    so that A is read once for that many; more vectors than that take more passes over A.
    """

    family: ClassVar[str] = "gemv"

    layout: str = "N"
    wg_x: int = 32          # work-items along a stored row (OpenCL dimension 0): consecutive elements
    wg_y: int = 8           # work-items along a stored column (dimension 1)
    per_item: int = 1       # outputs per work-item (N: rows of A; T: columns, wg_x apart)
    unroll: int = 4         # reduction steps per loop iteration, their loads independent
    waves: int = 0          # split the reduction until about waves x compute units work-groups run, or
    #                         for groups under 256 work-items as many work-items as such groups (0: never)
    vectors: int = 1        # right-hand sides each work-item multiplies A's elements by (at most)
    build_options: tuple[str, ...] = ()

    @property
    def work_group_size(self) -> int:
        return self.wg_x * self.wg_y

    @property
    def outputs_per_group(self) -> int:
        """Elements of y one work-group computes (with all of the reduction, or its slice of it)."""
        return self.per_item * (self.wg_y if self.layout == "N" else self.wg_x)

    @property
    def reduction_step(self) -> int:
        """Elements of the reduction a work-group covers per loop iteration (a slice is a multiple)."""
        return self.unroll * (self.wg_x if self.layout == "N" else self.wg_y)

    def passes(self, vectors: int) -> int:
        """The passes over A of a problem of ``vectors`` right-hand sides: groups of at most this
        configuration's ``vectors`` each, along the NDRange's third dimension."""
        return -(-vectors // max(1, min(vectors, self.vectors)))

    def summing_lanes(self, vectors: int, slices: int) -> int:
        """Work-items that add up each output's ``slices`` partial sums of a split reduction together, where
        the kernel adds them: a power of two, at most all of the work-group's work-items for its ``vectors``
        x ``outputs_per_group`` elements, each lane adding at least ``LANE_MIN_SLICES`` of them (every
        LANES-th), so that a long split is read by many loads in flight rather than one after another."""
        return lanes_for(slices, self.work_group_size // (self.outputs_per_group * max(1, vectors)))

    def malformed(self) -> str | None:
        """Why this point lies outside the codelet space regardless of device, or None."""
        choices = {"layout": LAYOUTS, "wg_x": WORK_GROUP_DIMS, "wg_y": WORK_GROUP_DIMS, "per_item": PER_ITEM,
                   "unroll": UNROLLS, "waves": WAVES, "vectors": VECTORS}
        return choices_problem(self, choices) or build_options_problem(self.build_options)

    def fitted_to(self, outputs: int, reduction: int, vectors: int, compute_units: int) -> GemvParams:
        """This configuration shaped to a problem of ``outputs``, a ``reduction`` that long and ``vectors``
        right-hand sides (a size class's configuration met another problem) on a device of
        ``compute_units``, its work-group size and vectors kept.

        With several vectors: outputs per work-item and work-items across outputs halved while half of them
        cover the problem; along a reduction shorter than half a step of the work-group, fewer work-items
        there and more across outputs, the reduction still one step (a second would split it over
        work-groups where outputs are few, each writing partial sums to add up after). (More vectors per
        work-item, for one pass over A, ran faster on the H200 as often as slower: the vectors stay as
        tuned.) A problem of one vector keeps those: its classes were measured on such problems.

        Then, in layout N, along a reduction of at most ``SHORT_STEPS`` steps of the work-group (a class
        tuned on a long one met a short one: its rows' many work-items idle or add up few elements each,
        in a tree of local-memory steps as deep as for a long one), work-items move from the reduction
        to outputs, down to ``SHORT_LANES`` a row, while the work-groups still cover ``SHORT_FILL`` times
        the compute units, and as many as the configuration's ``waves`` split the reduction until (none
        is split that was not)."""
        wg = {"x": self.wg_x, "y": self.wg_y}
        out_dim, red_dim = ("x", "y") if self.layout == "T" else ("y", "x")
        per_item = self.per_item
        if vectors > 1:
            while per_item > 1 and per_item * wg[out_dim] >= 2 * outputs:
                per_item //= 2
            while wg[out_dim] > 1 and wg[out_dim] >= 2 * outputs and wg[red_dim] < WORK_GROUP_DIMS[-1]:
                wg[out_dim] //= 2
                wg[red_dim] *= 2
            while (wg[red_dim] > 8 and wg[red_dim] // 2 * self.unroll >= reduction
                   and wg[out_dim] < WORK_GROUP_DIMS[-1] and per_item * wg[out_dim] < outputs):
                wg[red_dim] //= 2
                wg[out_dim] *= 2
        if self.layout == "N":
            # (the passes over A for groups of vectors are work-groups too; as many as the configuration's
            # waves ask for are left, so that the reduction, in more steps now, is split no more than before)
            passes, fill = self.passes(vectors), max(SHORT_FILL, self.waves) * compute_units
            while (wg["x"] > SHORT_LANES and wg["x"] * self.unroll * SHORT_STEPS >= reduction
                   and wg["y"] < WORK_GROUP_DIMS[-1]
                   and -(-outputs // (per_item * wg["y"] * 2)) * passes >= fill):
                wg["x"] //= 2
                wg["y"] *= 2
        return replace(self, wg_x=wg["x"], wg_y=wg["y"], per_item=per_item)

    def describe(self) -> str:
        """A one-line summary, e.g. ``gemv N wg32x8 per2 unroll4 waves2`` (``vec8`` with vectors 8)."""
        parts = [f"gemv {self.layout}", f"wg{self.wg_x}x{self.wg_y}", f"per{self.per_item}",
                 f"unroll{self.unroll}", f"waves{self.waves}" if self.waves else "unsplit"]
        parts += [f"vec{self.vectors}"] if self.vectors > 1 else []
        return " ".join(parts + list(self.build_options))
