"""``check``: why a configuration cannot build or run well on a device, or None."""

from __future__ import annotations

from ...dtypes import Dtype, get_dtype
from ...runtime.opencl.device import Device
from ..limits import device_limits, local_memory_problem
from .geometry import local_bytes, operands, register_estimate
from .params import NVIDIA_OPTION, SimtParams


def register_cap(params: SimtParams) -> int | None:
    """The registers per work-item ``params`` caps NVIDIA's compiler at (-cl-nv-maxrregcount), if any."""
    for option in params.build_options:
        match = NVIDIA_OPTION.match(option)
        if match:
            return int(match[1])
    return None


def check(params: SimtParams, device: Device, dtype: Dtype | str) -> str | None:
    """Return the reason ``params`` is invalid for ``device`` and ``dtype``, or None if it is valid (a
    16-bit dtype's kernel computes, and stages, in float32)."""
    dt = get_dtype(dtype).compute
    problem = device_limits(params, device, dt, params.wg_cols, params.wg_rows)
    if problem:
        return problem
    problem = local_memory_problem(local_bytes(params, dt), device)
    if problem:
        return problem
    registers = register_estimate(params, dt)
    if registers > device.max_registers_per_work_item:
        return (f"estimated {registers} registers per work-item, over the device's budget of "
                f"{device.max_registers_per_work_item}")
    cap = register_cap(params)
    if cap is not None and registers > cap:
        return f"estimated {registers} registers per work-item, over the cap of {cap} it asks the compiler for"
    for op in operands(params, dt):
        if not op.image:
            continue
        if not device.image_support:
            return f"{op.name} through an image, but the device has no image support"
        if op.vector_width % op.elements_per_texel:
            return (f"{op.name} through an image: a texel holds {op.elements_per_texel} elements, "
                    f"so vector_width must be a multiple of it")
        if op.local and op.load_width % op.elements_per_texel:
            return (f"{op.name} through an image: staging reads {op.load_width} elements along K, "
                    f"less than a texel of {op.elements_per_texel}")
        if not op.local and not op.outer_contiguous:
            return (f"{op.name} through an image read directly needs a layout with memory "
                    f"consecutive along {'M' if op.name == 'A' else 'N'}")
    return None
