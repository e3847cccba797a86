"""The CUDA devices of this machine through the driver API: an NVIDIA GPU is one device with two ways in
(``runtime.backend``), matched by its PCI location (domain and bus), which OpenCL reports through
``cl_nv_device_attribute_query`` and CUDA through its device attributes."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..opencl.device import Device
from .nvrtc import cuda_missing


@dataclass(frozen=True)
class CudaDevice:
    """A CUDA device: its ordinal, name, compute capability and PCI location (domain, bus)."""

    ordinal: int
    name: str
    capability: tuple[int, int]
    pci: tuple[int, int]

    @property
    def arch(self) -> str:
        """NVRTC's name of the device's architecture, e.g. sm_90."""
        return "sm_{}{}".format(*self.capability)


@functools.lru_cache(maxsize=1)
def cuda_devices() -> tuple[CudaDevice, ...]:
    """The CUDA devices (none where the bindings, the driver or a GPU are missing)."""
    if cuda_missing():
        return ()
    from cuda.bindings import driver

    ok = driver.CUresult.CUDA_SUCCESS
    try:
        if driver.cuInit(0)[0] != ok:
            return ()
        result, count = driver.cuDeviceGetCount()
    except Exception:   # noqa: BLE001 - no libcuda at all
        return ()
    if result != ok:
        return ()
    found = []
    attribute = driver.CUdevice_attribute
    for ordinal in range(count):
        _, handle = driver.cuDeviceGet(ordinal)
        _, raw = driver.cuDeviceGetName(64, handle)

        def get(which: object, handle: object = handle) -> int:
            return int(driver.cuDeviceGetAttribute(which, handle)[1])

        found.append(CudaDevice(
            ordinal, raw.split(b"\0", 1)[0].decode(errors="replace"),
            (get(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
             get(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            (get(attribute.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID), get(attribute.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID))))
    return tuple(found)


def cuda_device_of(device: Device) -> CudaDevice | None:
    """The CUDA device that is the OpenCL ``device`` (same PCI location), or None."""
    location = device.pci_location
    if location is None:
        return None
    return next((d for d in cuda_devices() if d.pci == location), None)
