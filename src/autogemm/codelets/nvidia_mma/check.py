"""``check`` for the nvidia_mma family: why a configuration cannot run on a device, or None."""

from __future__ import annotations

from ...dtypes import Dtype, get_dtype
from ...runtime.opencl.device import Device
from ..limits import device_limits, local_memory_problem
from .params import OPERANDS, WARP, MmaParams
from .render import local_bytes

#: 32-bit registers a work-item needs besides its accumulators, fragments and prefetched operands
#: (indices, pointers, loop counters), as ptxas reported on the H100.
OVERHEAD_REGISTERS = 16

def capability(device: Device) -> tuple[int, int] | None:
    """The NVIDIA compute capability the driver reports, or None."""
    text = device.vendor_facts.get("compute_capability", "")
    major, _, minor = text.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def ptx_problem(device: Device, operand: str, shape: str) -> str | None:
    """Why ``device`` cannot run ``shape`` on ``operand`` operands as inline PTX, or None."""
    if not device.is_nvidia:
        return "mma 'ptx' is inline PTX for NVIDIA's compiler"
    found, needed = capability(device), OPERANDS[operand].shapes[shape]
    if found is None or found < needed:
        have = "an unknown" if found is None else "compute capability {}.{}".format(*found)
        return f"mma.sync {shape} {operand} needs compute capability {needed[0]}.{needed[1]}; the device has {have}"
    return None


def register_estimate(params: MmaParams, dtype: Dtype) -> int:
    """32-bit registers per work-item: accumulators (and a tile's chunk sum where split operands sum
    each chunk apart) and each fragment set's chunk of fragments (as many as each operand is split into),
    per real part (per product of parts with the 3M method); the next K block's share; the overhead."""
    shape = params.geometry
    sets = 3 if dtype.is_complex and params.complex_method == "3m" else dtype.reals_per_element
    accumulator_words = 2 if dtype.real_bytes == 8 else 1        # 16-bit operands accumulate in float
    accumulators = (params.tiles_m * params.tiles_n + (dtype.operand_splits > 1)) * 2 * shape.row_halves
    fragments = ((params.tiles_m * shape.row_halves + params.tiles_n) * params.lane_k(dtype)
                 * dtype.operand_splits * dtype.real_bytes // 4 * params.fragment_sets)
    prefetched = 0 if params.copy == "async" else \
        (params.block_rows + params.block_cols) * params.tile_k // params.work_group_size
    return (sets * (accumulators * accumulator_words + fragments) + -(-prefetched * dtype.itemsize // 4)
            + OVERHEAD_REGISTERS)


def check(params: MmaParams, device: Device, dtype: Dtype | str) -> str | None:
    """Return the reason ``params`` is invalid for ``device`` and ``dtype``, or None."""
    dt = get_dtype(dtype)
    problem = device_limits(params, device, dt, WARP * params.warps_n, params.warps_m)
    if problem:
        return problem
    problem = params.dtype_problem(dt)
    if problem:
        return problem
    if params.mma == "ptx":
        problem = ptx_problem(device, dt.mma_operand, params.shape)
        if problem:
            return problem
    problem = local_memory_problem(local_bytes(params, dt), device)
    if problem:
        return problem
    registers, budget = register_estimate(params, dt), register_budget(device, params.work_group_size)
    if registers > budget:
        return f"estimated {registers} registers per work-item, over the budget of {budget} for its work-group"
    return None


def register_budget(device: Device, work_group_size: int) -> int:
    """Registers a work-item of a work-group of ``work_group_size`` may use: the device's per-work-item
    budget, and its share of a multiprocessor's registers where the driver reports them."""
    per_block = device.vendor_facts.get("registers_per_block", "")
    share = int(per_block) // work_group_size if per_block.isdigit() else device.max_registers_per_work_item
    return min(device.max_registers_per_work_item, share)
