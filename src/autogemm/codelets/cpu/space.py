"""The tuning space of the ``cpu`` codelets on one device: block heights, vectors of a row and their
widths, K unrolling and A's layout, on CPU devices only."""

from __future__ import annotations

from ..registry import SpaceFacts
from ..space import Knob, SearchSpace
from .check import check
from .params import LAYOUTS, TILE_ROWS, UNROLLS, VECTOR_WIDTHS, VECTORS, CpuParams


def space(facts: SpaceFacts) -> SearchSpace[CpuParams] | None:
    """The pruned space for ``facts.dtype`` on ``facts.device``, each configuration with the multiply-add
    form ``facts.macs`` gives its vector width; None on a GPU, or for a dtype only matrix instructions
    multiply."""
    device, dtype, macs = facts.device, facts.dtype, facts.macs
    if device.is_gpu or dtype.tensor_only:
        return None
    knobs = [Knob("layout", LAYOUTS), Knob("tile_rows", TILE_ROWS, ordered=True),
             Knob("vectors", VECTORS, ordered=True), Knob("vector_width", VECTOR_WIDTHS, ordered=True),
             Knob("unroll", UNROLLS, ordered=True)]

    def make(values: dict) -> CpuParams:
        return CpuParams(mac=macs.get(values["vector_width"], "fma"), **values)

    return SearchSpace(knobs, make, lambda params: check(params, device, dtype), family=CpuParams.family)
