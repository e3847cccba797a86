"""The tuning space of the ``wgmma`` family for one operand type: tile widths, consumer warpgroups,
pipeline stages, raster groups and clusters, less the configurations ``WgmmaParams.malformed`` refuses (shared
memory, 3xtf32's accumulators). No device facts enter it: the family runs on sm_90a alone."""

from __future__ import annotations

from ..hopper import CLUSTERS
from ..space import Knob, SearchSpace
from .params import BLOCK_N, CONSUMERS, GROUPS, OPERANDS, STAGES, WgmmaParams


def space(operand: str, out: str = "f32") -> SearchSpace[WgmmaParams]:
    """Every configuration for ``operand`` (one of ``OPERANDS``) and a C of ``out``."""
    if operand not in OPERANDS:
        raise ValueError(f"operand {operand!r}: expected one of {', '.join(OPERANDS)}")
    knobs = [Knob("block_n", BLOCK_N, ordered=True), Knob("consumers", CONSUMERS, ordered=True),
             Knob("stages", STAGES, ordered=True), Knob("group", GROUPS, ordered=True),
             Knob("cluster", CLUSTERS, ordered=True)]
    return SearchSpace(knobs, lambda values: WgmmaParams(operand=operand, out=out, **values),
                       lambda params: params.malformed(), family=WgmmaParams.family)
