"""The tuning space of the ``dmma`` family for one dtype: warp layouts and tiles, the instruction's K,
consumer warpgroups, pipeline stages, raster groups and clusters, and whether operands stored MN-major
are read as they lie, less the configurations ``DmmaParams.malformed`` refuses (shared memory,
registers, TMA's box). No device facts enter it: the family runs on sm_90a alone."""

from __future__ import annotations

from ..hopper import CLUSTERS
from ..space import Knob, SearchSpace
from .params import CONSUMERS, DTYPES, GROUPS, MMA_K, READS_MN_MAJOR, STAGES, WARP_M, WARP_N, WARPS_M, DmmaParams


def space(dtype: str) -> SearchSpace[DmmaParams]:
    """Every configuration for ``dtype`` ('d' or 'z')."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    knobs = [Knob("consumers", CONSUMERS, ordered=True), Knob("warps_m", WARPS_M, ordered=True),
             Knob("warp_m", WARP_M, ordered=True), Knob("warp_n", WARP_N, ordered=True),
             Knob("stages", STAGES, ordered=True), Knob("group", GROUPS, ordered=True),
             Knob("cluster", CLUSTERS, ordered=True), Knob("mma_k", MMA_K, ordered=True),
             Knob("reads_mn_major", READS_MN_MAJOR)]
    return SearchSpace(knobs, lambda values: DmmaParams(dtype=dtype, **values),
                       lambda params: params.malformed(), family=DmmaParams.family)
