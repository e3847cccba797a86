"""``check`` for the cpu family: why a configuration cannot run on a device, or None."""

from __future__ import annotations

from ...dtypes import Dtype, get_dtype
from ...runtime.opencl.device import Device
from ..limits import device_limits
from .params import REGISTER_WIDTH, CpuParams

#: The bytes of vector registers a work-item's accumulators may take: 32 registers (AVX-512's), less
#: the few that hold B's vectors and A's broadcast value.
REGISTER_BYTES = 28 * REGISTER_WIDTH


def check(params: CpuParams, device: Device, dtype: Dtype | str) -> str | None:
    """Return the reason ``params`` is invalid for ``device`` and ``dtype``, or None."""
    dt = get_dtype(dtype)
    problem = device_limits(params, device, dt, 1, 1)
    if problem:
        return problem
    if device.is_gpu:
        return "the cpu family is for CPU devices (a GPU runs a work-item's registers thin)"
    held = params.accumulators * dt.itemsize
    if held > REGISTER_BYTES:
        return f"its accumulators take {held} bytes of registers, over the {REGISTER_BYTES} a core has for them"
    if dt.is_complex and params.vector_width > 8:
        return "complex elements take at most 8 to a vector (16 reals)"
    return None
