"""The tuning space of the ``subgroup`` codelets on one device: the shuffle spellings it offers, subgroup
sizes they allow, work-group and tile shapes, vector widths. None where the device offers no shuffle
(the portable local-memory spelling is for testing, not worth tuning: simt's local staging does more)."""

from __future__ import annotations

from ..registry import SpaceFacts
from ..space import Knob, SearchSpace
from .check import check, shuffles_available
from .params import SubgroupParams


def space(facts: SpaceFacts, shuffles: tuple[str, ...] | None = None) -> SearchSpace[SubgroupParams] | None:
    """The pruned space for ``facts.dtype`` on ``facts.device`` over ``shuffles`` (default: those it
    offers), each configuration with the multiply-add form ``facts.macs`` gives its vector width; None
    where there is no shuffle, or for a dtype only matrix instructions multiply."""
    device, dtype, macs = facts.device, facts.dtype, facts.macs
    shuffles = shuffles_available(device) if shuffles is None else shuffles
    if not shuffles or dtype.tensor_only:
        return None
    sizes = (32,) if shuffles == ("ptx",) else (8, 16, 32)
    knobs = [Knob("layout", ("NN", "TN")), Knob("shuffle", shuffles), Knob("subgroup", sizes, ordered=True),
             Knob("wg_rows", (1, 2, 4, 8), ordered=True), Knob("tile_rows", (1, 2, 4, 8), ordered=True),
             Knob("vector_width", (1, 2, 4), ordered=True)]

    def make(values: dict) -> SubgroupParams:
        return SubgroupParams(mac=macs.get(values["vector_width"], "fma"), **values)

    return SearchSpace(knobs, make, lambda params: check(params, device, dtype), family=SubgroupParams.family)
