"""``space``: the configurations of the simt family that ``check`` accepts on a device."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from ...dtypes import Dtype, get_dtype
from ...runtime.device import Device
from .check import check
from .params import (ASSIGNMENTS, LAYOUTS, MACS, PORTABLE_OPTIONS, TILE_K_SIZES, TILE_SIZES,
                     VECTOR_WIDTHS, WARP_COLS, WORK_GROUP_DIMS, WORK_GROUP_SIZES, SimtParams)


def work_group_shapes() -> list[tuple[int, int]]:
    """(rows, cols) shapes with 32 to 256 work-items, square and rectangular."""
    return [(r, c) for r in WORK_GROUP_DIMS for c in WORK_GROUP_DIMS if r * c in WORK_GROUP_SIZES]


def option_sets(device: Device) -> list[tuple[str, ...]]:
    """Build option sets worth trying on a device."""
    sets: list[tuple[str, ...]] = [()] + [(o,) for o in PORTABLE_OPTIONS]
    if device.is_nvidia:
        sets += [(f"-cl-nv-maxrregcount={n}",) for n in (128, 255)]
    return sets


def _axes(device: Device) -> dict[str, list]:
    return {
        "layout": list(LAYOUTS), "assignment": list(ASSIGNMENTS), "shape": work_group_shapes(),
        "tile_rows": list(TILE_SIZES), "tile_cols": list(TILE_SIZES), "tile_k": list(TILE_K_SIZES),
        "vector_width": list(VECTOR_WIDTHS), "local_a": [True, False], "local_b": [True, False],
        "image_a": [False, True], "image_b": [False, True], "double_buffer": [False, True],
        "local_pad": [False, True], "unroll_k": [True, False], "mac": list(MACS), "warp_cols": list(WARP_COLS),
        "build_options": option_sets(device),
    }


def _make(point: dict) -> SimtParams:
    values = dict(point)
    values["wg_rows"], values["wg_cols"] = values.pop("shape")
    return SimtParams(**values)


def space(device: Device, dtype: Dtype | str) -> Iterator[SimtParams]:
    """Every valid configuration, lazily (the full product is large: the tuner prunes and samples)."""
    dt = get_dtype(dtype)
    axes = _axes(device)
    names = list(axes)
    for combo in itertools.product(*(axes[n] for n in names)):
        params = _make(dict(zip(names, combo)))
        if check(params, device, dt) is None:
            yield params


def sample(device: Device, dtype: Dtype | str, count: int, rng: random.Random,
           max_tries: int = 1_000_000) -> list[SimtParams]:
    """``count`` distinct valid configurations drawn uniformly per parameter (rejecting invalid ones)."""
    dt = get_dtype(dtype)
    axes = _axes(device)
    found: dict[SimtParams, None] = {}
    for _ in range(max_tries):
        if len(found) == count:
            break
        params = _make({name: rng.choice(values) for name, values in axes.items()})
        if check(params, device, dt) is None:
            found[params] = None
    return list(found)
