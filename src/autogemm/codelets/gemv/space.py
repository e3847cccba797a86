"""The tuning space of the ``gemv`` codelets of one layout on one device."""

from __future__ import annotations

from ..registry import SpaceFacts
from ..space import Knob, SearchSpace
from .check import check
from .params import VECTORS, GemvParams


def space(facts: SpaceFacts) -> SearchSpace[GemvParams]:
    """The GEMV configurations of ``facts.layout`` a search visits: work-groups of at least a warp on a
    GPU (fewer, down to 8 work-items, on a CPU, whose compiler vectorises across them). The reduction is
    always split where too few work-groups would run (``waves`` at least 1): on the square problem tuned
    for, splitting never happens, so an unsplit configuration would tie with it there and then leave
    most of the device idle on a short, wide A (N) or a tall, narrow one (T). With V right-hand sides a
    work-item takes all of them or half per pass over A: more passes read A again (with a quarter, short
    searches kept configurations reading A four times, at a quarter of the bandwidth)."""
    device, dtype, layout = facts.device, facts.dtype, facts.layout or "N"
    least = 32 if device.is_gpu else 8
    knobs = [Knob("wg_x", (8, 16, 32, 64, 128, 256), ordered=True), Knob("wg_y", (1, 2, 4, 8, 16), ordered=True),
             Knob("per_item", (1, 2, 4), ordered=True), Knob("unroll", (1, 2, 4, 8), ordered=True),
             Knob("waves", (1, 2, 4, 8), ordered=True),
             Knob("vectors", tuple(v for v in VECTORS if facts.vectors / 2 <= v <= max(1, facts.vectors)),
                  ordered=True)]

    def reject(params: GemvParams) -> str | None:
        if params.work_group_size < least:
            return f"a work-group of {params.work_group_size} is below {least}"
        return check(params, device, dtype)

    return SearchSpace(knobs, lambda values: GemvParams(layout, **values), reject, family=GemvParams.family)
