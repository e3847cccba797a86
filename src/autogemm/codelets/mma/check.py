"""``check`` for the nvidia_mma family: why a configuration cannot run on a device, or None."""

from __future__ import annotations

from ...dtypes import Dtype, get_dtype
from ...runtime.device import Device
from ..limits import device_limits
from .params import WARP, MmaParams
from .render import local_bytes

#: The oldest NVIDIA architecture (compute capability) with each instruction shape.
MIN_CAPABILITY = {"m8n8k4": (8, 0)}


def capability(device: Device) -> tuple[int, int] | None:
    """The NVIDIA compute capability the driver reports, or None."""
    text = device.vendor_facts.get("compute_capability", "")
    major, _, minor = text.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def ptx_problem(device: Device, shape: str) -> str | None:
    """Why ``device`` cannot run ``shape`` as inline PTX, or None."""
    if not device.is_nvidia:
        return "mma 'ptx' is inline PTX for NVIDIA's compiler"
    found, needed = capability(device), MIN_CAPABILITY[shape]
    if found is None or found < needed:
        have = "an unknown" if found is None else "compute capability {}.{}".format(*found)
        return f"mma.sync {shape} needs compute capability {needed[0]}.{needed[1]}; the device has {have}"
    return None


def check(params: MmaParams, device: Device, dtype: Dtype | str) -> str | None:
    """Return the reason ``params`` is invalid for ``device`` and ``dtype``, or None."""
    dt = get_dtype(dtype)
    problem = device_limits(params, device, dt, WARP * params.warps_n, params.warps_m)
    if problem:
        return problem
    if dt.letter not in params.instruction.reals:
        return f"mma shape {params.shape} multiplies {'/'.join(params.instruction.reals)}gemm operands, not {dt.letter}"
    if params.mma == "ptx":
        problem = ptx_problem(device, params.shape)
        if problem:
            return problem
    used = local_bytes(params, dt)
    if used > device.local_mem_bytes:
        return f"needs {used} bytes of local memory; the device has {device.local_mem_bytes}"
    return None
