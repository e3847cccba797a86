"""The tuning space of the ``subgroup`` codelets on one device: the shuffle spellings it offers, subgroup
sizes they allow, work-group and tile shapes, vector widths. None where the device offers no shuffle
(the portable local-memory spelling is for testing, not worth tuning: simt's local staging does more)."""

from __future__ import annotations

from ..codelets.subgroup import SubgroupParams, check, shuffles_available
from ..dtypes import Dtype
from ..runtime.device import Device
from .space import Knob, SearchSpace


def subgroup_space(device: Device, dtype: Dtype, macs: dict[int, str] | None = None,
                   shuffles: tuple[str, ...] | None = None) -> SearchSpace[SubgroupParams] | None:
    """The pruned space for ``dtype`` on ``device`` over ``shuffles`` (default: those it offers);
    ``macs`` maps a vector width to the multiply-add form to use."""
    macs = macs or {}
    shuffles = shuffles_available(device) if shuffles is None else shuffles
    if not shuffles:
        return None
    sizes = (32,) if shuffles == ("ptx",) else (8, 16, 32)
    knobs = [Knob("layout", ("NN", "TN")), Knob("shuffle", shuffles), Knob("subgroup", sizes, ordered=True),
             Knob("wg_rows", (1, 2, 4, 8), ordered=True), Knob("tile_rows", (1, 2, 4, 8), ordered=True),
             Knob("vector_width", (1, 2, 4), ordered=True)]

    def make(values: dict) -> SubgroupParams:
        return SubgroupParams(mac=macs.get(values["vector_width"], "fma"), **values)

    return SearchSpace(knobs, make, lambda params: check(params, device, dtype), family="subgroup")
