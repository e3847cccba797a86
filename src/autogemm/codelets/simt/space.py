"""The tuning space of the ``simt`` codelets on one device: which knob values a search visits.

The codelet space (every value ``SimtParams`` allows) is far too large to measure; this is the pruned space
the tuner searches, chosen per device class. Pruning is first by ``check`` (work-group, local memory and
register limits, as RaijinCL pruned at a register budget), then by what each class of device can use:
GPUs get local-memory staging variants and larger work-groups, CPUs no double buffering (their local
memory is ordinary cache); on NVIDIA devices the register cap given to the compiler is searched too. The
multiply-add instruction is not searched: the FMA micro-benchmark picks it per vector width."""

from __future__ import annotations

from ...runtime.opencl.device import Device
from ..registry import SpaceFacts
from ..space import Knob, SearchSpace
from .check import check
from .params import SimtParams

#: How the operands travel to the registers: (local_a, local_b, double_buffer, local_pad, image_a, image_b).
STAGING = {
    "global": (False, False, False, False, False, False),
    "local": (True, True, False, False, False, False),
    "local-pad": (True, True, False, True, False, False),
    "local-dbuf": (True, True, True, False, False, False),
    "image-local": (True, True, False, False, True, True),
}
_STAGING_FIELDS = ("local_a", "local_b", "double_buffer", "local_pad", "image_a", "image_b")

#: Register caps searched on NVIDIA devices (-cl-nv-maxrregcount): the compiler's own cap is below what
#: 8x8 tiles need, and a lower cap lets more work-groups share a multiprocessor. The first is the default.
NVIDIA_REGISTER_CAPS = (255, 168, 128)


#: How the work-items of each warp of 32 lie on the work-group's grid of tiles (``warp_cols``): as the
#: work-group's rows come, or as 4 x 8 and 8 x 4 patches, which read fewer distinct local-memory vectors.
WARP_ARRANGEMENTS = (0, 8, 4)


#: A skinny C's space also holds blocks of few rows or columns: work-groups of 2 or 4 rows (or columns)
#: and tiles of 1 or 2, so that such a C is not mostly padding.
SKINNY_GROUPS = ((2, 32), (4, 16), (4, 32), (2, 64))
SKINNY_TILES = ((1, 2), (1, 4), (1, 8), (2, 8))


def _knobs(device: Device, register_caps: tuple[int, ...], skinny: bool) -> list[Knob]:
    tiles = tuple((r, c) for r in (2, 4, 8) for c in (2, 4, 8))
    if skinny:
        tiles += tuple(t for t in SKINNY_TILES + tuple(t[::-1] for t in SKINNY_TILES) if t not in tiles)
    if device.is_gpu:
        groups = ((8, 8), (8, 16), (16, 8), (16, 16))
        if skinny:
            groups += SKINNY_GROUPS + tuple(g[::-1] for g in SKINNY_GROUPS)
        staging = ("global", "local", "local-pad", "local-dbuf") + (("image-local",) if device.image_support else ())
        return [Knob("layout", ("TN", "NN", "NT")), Knob("assignment", ("offset", "consecutive")),
                Knob("work_group", groups), Knob("warps", WARP_ARRANGEMENTS),
                Knob("tile", tiles + ((8, 16), (16, 8))), Knob("vector_width", (1, 2, 4), ordered=True),
                Knob("tile_k", (4, 8, 16), ordered=True), Knob("staging", staging)] + (
                    [Knob("registers", register_caps, ordered=True)] if device.is_nvidia else [])
    groups = ((4, 8), (8, 4), (8, 8), (8, 16), (16, 8)) + (((2, 16), (16, 2)) if skinny else ())
    return [Knob("layout", ("TN", "NN", "NT")), Knob("assignment", ("consecutive", "offset")),
            Knob("work_group", groups), Knob("tile", tiles), Knob("vector_width", (1, 2, 4, 8), ordered=True),
            Knob("tile_k", (2, 4, 8), ordered=True), Knob("staging", ("global", "local"))]


def space(facts: SpaceFacts, register_caps: tuple[int, ...] = NVIDIA_REGISTER_CAPS) -> SearchSpace[SimtParams] | None:
    """The pruned tuning space for ``facts.dtype`` on ``facts.device``, each configuration with the
    multiply-add form ``facts.macs`` gives its vector width (default: ``fma``); ``register_caps`` are the
    caps searched on NVIDIA devices. None for a dtype only matrix instructions multiply (its exact
    products are float32's, tuned there)."""
    device, dtype, macs = facts.device, facts.dtype, facts.macs
    if dtype.tensor_only:
        return None

    def make(values: dict) -> SimtParams:
        staging = dict(zip(_STAGING_FIELDS, STAGING[values["staging"]]))
        (wg_rows, wg_cols), (tile_rows, tile_cols) = values["work_group"], values["tile"]
        return SimtParams(layout=values["layout"], assignment=values["assignment"], wg_rows=wg_rows,
                          wg_cols=wg_cols, tile_rows=tile_rows, tile_cols=tile_cols, tile_k=values["tile_k"],
                          vector_width=values["vector_width"], mac=macs.get(values["vector_width"], "fma"),
                          warp_cols=values.get("warps", 0),
                          build_options=(f"-cl-nv-maxrregcount={values['registers']}",) if "registers" in values
                          else (), **staging)

    return SearchSpace(_knobs(device, register_caps, facts.skinny), make, lambda params: check(params, device, dtype),
                       family=SimtParams.family)
