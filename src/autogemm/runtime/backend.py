"""The runtimes a device is reached through, by the names profiles, families and the command line use:
OpenCL for every device, CUDA beside it for an NVIDIA GPU the CUDA driver sees too (``cuda``)."""

from __future__ import annotations

from .cuda.driver import cuda_device_of
from .opencl.device import Device

OPENCL, CUDA = "opencl", "cuda"


def backends(device: Device) -> tuple[str, ...]:
    """The runtimes that reach ``device``: OpenCL always, CUDA where it is an NVIDIA GPU the driver API
    sees too."""
    return (OPENCL, CUDA) if cuda_device_of(device) is not None else (OPENCL,)
