"""What every family checks first: a well-formed configuration, double precision where the dtype needs
it, a work-group the device can run, and NVIDIA-only build options only on NVIDIA."""

from __future__ import annotations

from ..dtypes import Dtype
from ..runtime.opencl.device import Device
from .simt.params import NVIDIA_OPTION


def device_limits(params, device: Device, dt: Dtype, wg_cols: int, wg_rows: int) -> str | None:
    """Why ``params`` (a work-group of ``wg_cols`` x ``wg_rows``) cannot run on ``device``, or None."""
    problem = params.malformed()
    if problem:
        return problem
    if dt.needs_fp64 and not device.fp64:
        return f"{dt.routine} needs double precision (cl_khr_fp64), which this device lacks"
    if wg_cols * wg_rows > device.max_work_group_size:
        return f"work-group of {wg_cols * wg_rows} exceeds the device's {device.max_work_group_size}"
    sizes = device.max_work_item_sizes
    if wg_cols > sizes[0] or wg_rows > sizes[1]:
        return f"work-group shape {wg_cols}x{wg_rows} exceeds the device's {sizes[:2]}"
    for option in params.build_options:
        if NVIDIA_OPTION.match(option) and not device.is_nvidia:
            return f"{option} is an NVIDIA compiler option"
    return None


def local_memory_problem(used: int, device: Device) -> str | None:
    """Why ``used`` bytes of local memory per work-group do not fit ``device``, or None."""
    if used > device.local_mem_bytes:
        return f"needs {used} bytes of local memory; the device has {device.local_mem_bytes}"
    return None
