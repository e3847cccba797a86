"""``check`` for the subgroup family: why a configuration cannot run on a device, or None."""

from __future__ import annotations

from ...dtypes import Dtype, get_dtype
from ...runtime.opencl.device import Device
from ..limits import device_limits, local_memory_problem
from .params import SubgroupParams

#: The extensions each shuffle spelling needs ("ptx" needs NVIDIA's compiler instead); the Intel one also
#: fixes the subgroup size, so that the lanes are the work-items along dimension 0.
EXTENSIONS = {"intel": ("cl_intel_subgroups", "cl_intel_required_subgroup_size"),
              "khr": ("cl_khr_subgroup_shuffle",)}
#: NVIDIA's subgroups are warps of 32.
WARP = 32


def shuffles_available(device: Device) -> tuple[str, ...]:
    """The shuffle spellings this device offers (not counting the portable local-memory one)."""
    found = tuple(name for name, needed in EXTENSIONS.items() if all(map(device.has_extension, needed)))
    return found + (("ptx",) if device.is_nvidia else ())


def check(params: SubgroupParams, device: Device, dtype: Dtype | str) -> str | None:
    """Return the reason ``params`` is invalid for ``device`` and ``dtype``, or None."""
    dt = get_dtype(dtype)
    problem = device_limits(params, device, dt, params.subgroup, params.wg_rows)
    if problem:
        return problem
    missing = [ext for ext in EXTENSIONS.get(params.shuffle, ()) if not device.has_extension(ext)]
    if missing:
        return f"shuffle '{params.shuffle}' needs {', '.join(missing)}, which this device lacks"
    if params.shuffle == "ptx" and not device.is_nvidia:
        return "shuffle 'ptx' is inline PTX for NVIDIA's compiler"
    if params.shuffle == "ptx" and params.subgroup != WARP:
        return f"shuffle 'ptx' works on warps: subgroup must be {WARP}"
    if params.shuffle == "local":
        return local_memory_problem(params.wg_rows * params.tile_rows * params.subgroup * dt.itemsize, device)
    return None
