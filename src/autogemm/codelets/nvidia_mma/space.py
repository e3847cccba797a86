"""The tuning space of the ``nvidia_mma`` codelets on one device: over the instruction shapes the device
was probed to run (``probe.instructions_available``), the warps, warp tiles, K blocks, pipeline stages,
copies and fragment reads; for a skinny C (``SpaceFacts.skinny``) narrow blocks too."""

from __future__ import annotations

from ..registry import SpaceFacts
from ..space import Knob, SearchSpace
from .check import check
from .params import MmaParams

#: A skinny C's space also holds blocks of one warp, and warp tiles in one column or row: blocks as
#: narrow as one instruction (16 rows or 8 columns), or 8 instructions tall or wide.
SKINNY_WARPS = ((1, 1),)
SKINNY_TILES = ((1, 1), (1, 2), (2, 1), (8, 1), (1, 8))
#: The register cap every configuration asks NVIDIA's compiler for (its default is lower than the
#: accumulators of a 64 x 32 warp tile need).
REGISTER_CAP = "-cl-nv-maxrregcount=255"


def space(facts: SpaceFacts) -> SearchSpace[MmaParams] | None:
    """The pruned space for ``facts.dtype`` on ``facts.device`` over the instruction shapes it runs
    (``facts.instructions``); None when none of them multiplies the dtype."""
    device, dtype = facts.device, facts.dtype
    shapes = facts.instructions.get(dtype.mma_operand or "", ())
    if not shapes:
        return None
    skinny = facts.skinny
    knobs = [Knob("shape", shapes), Knob("layout", ("NT", "TT", "NN", "TN")),
             Knob("warps", ((2, 4), (4, 2), (2, 2), (1, 4), (4, 1), (2, 1), (1, 2), (4, 4))
                  + (SKINNY_WARPS if skinny else ())),
             Knob("tiles", ((4, 4), (2, 4), (4, 2), (2, 2), (2, 8), (1, 4), (4, 1)) + (SKINNY_TILES if skinny else ())),
             Knob("tile_k", (32, 64) if dtype.half else (8, 16, 32), ordered=True), Knob("stages", (1, 2, 3)),
             Knob("copy", ("registers", "async")),
             Knob("vector_width", (1, 2, 4, 8) if dtype.half else (1, 2, 4) if dtype.real_bytes == 4 else (1, 2),
                  ordered=True),
             Knob("read_width", (16, 8) if dtype.real_bytes < 8 else (16,)), Knob("fragment_sets", (1, 2)),
             Knob("loads", ("ldmatrix", "lanes") if dtype.half else ("lanes",)),
             Knob("complex_method", ("4m", "3m") if dtype.is_complex else ("4m",))]

    def make(values: dict) -> MmaParams:
        (warps_m, warps_n), (tiles_m, tiles_n) = values["warps"], values["tiles"]
        return MmaParams(layout=values["layout"], shape=values["shape"], warps_m=warps_m, warps_n=warps_n,
                         tiles_m=tiles_m, tiles_n=tiles_n, tile_k=values["tile_k"], stages=values["stages"],
                         vector_width=values["vector_width"], mma="ptx", build_options=(REGISTER_CAP,),
                         copy=values["copy"], complex_method=values["complex_method"],
                         read_width=values["read_width"], fragment_sets=values["fragment_sets"],
                         loads=values["loads"])

    return SearchSpace(knobs, make, lambda params: check(params, device, dtype), family=MmaParams.family)
