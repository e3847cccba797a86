"""``check``: why a GEMV configuration cannot run on a device, or None."""

from __future__ import annotations

from ...dtypes import Dtype, get_dtype
from ...runtime.opencl.device import Device
from ..limits import device_limits, local_memory_problem
from .params import GemvParams


def local_bytes(params: GemvParams, dt: Dtype) -> int:
    """Local memory of the partial sums the work-group adds (one element per output and right-hand side
    per work-item), and the count of slices arrived before it where a split reduction is added up in the
    kernel (declared in every kernel: whether it splits is the launch's)."""
    return params.work_group_size * params.per_item * params.vectors * dt.compute.itemsize + 4


#: The most 32-bit registers a work-item's sums may take (per_item x vectors elements); past it they spill.
SUM_REGISTERS = 128


def check(params: GemvParams, device: Device, dtype: Dtype | str) -> str | None:
    """Return the reason ``params`` is invalid for ``device`` and ``dtype``, or None if it is valid."""
    dt = get_dtype(dtype)
    registers = params.per_item * params.vectors * dt.compute.itemsize // 4
    if registers > SUM_REGISTERS:
        return (f"{params.per_item} outputs x {params.vectors} vectors of sums take {registers} registers, "
                f"over {SUM_REGISTERS}")
    problem = device_limits(params, device, dt, params.wg_x, params.wg_y)
    if problem:
        return problem
    return local_memory_problem(local_bytes(params, dt), device)
