"""A ``Device``: one OpenCL device with the facts autogemm plans, checks and fingerprints by."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from functools import cached_property

import pyopencl as cl

from ...errors import ArgumentError


@dataclass(frozen=True)
class Device:
    """An OpenCL device and its facts; ``fingerprint`` identifies the device and driver stably."""

    platform_index: int
    device_index: int
    platform_name: str
    vendor: str
    name: str
    driver_version: str
    opencl_version: str
    device_type: str                 # "GPU", "CPU", "ACCELERATOR" or "OTHER"
    compute_units: int
    clock_mhz: int
    global_mem_bytes: int
    local_mem_bytes: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    extensions: tuple[str, ...]
    fp64: bool
    image_support: bool
    image2d_max: tuple[int, int]      # (width, height) in texels
    max_mem_alloc_bytes: int
    vendor_facts: dict[str, str] = field(default_factory=dict, hash=False)
    cl_device: cl.Device | None = field(default=None, compare=False, repr=False, hash=False)

    @property
    def is_gpu(self) -> bool:
        return self.device_type == "GPU"

    @cached_property
    def shares_host_memory(self) -> bool:
        """True where the device computes in the host's own memory (a CPU, an integrated GPU): buffers made
        over host arrays need no copies. Asked of the driver once (every call on host arrays asks), not
        part of the fingerprint."""
        return self.cl_device is not None and bool(self.cl_device.host_unified_memory)

    @property
    def pci_location(self) -> tuple[int, int] | None:
        """(domain, bus) of an NVIDIA GPU on PCI, as its OpenCL driver reports them (each GPU has a bus of
        its own), else None. Not part of the fingerprint: two cards of one model share their profile
        wherever they sit."""
        if self.cl_device is None or "cl_nv_device_attribute_query" not in self.extensions:
            return None
        try:
            info = self.cl_device.get_info
            return info(cl.device_info.PCI_DOMAIN_ID_NV), info(cl.device_info.PCI_BUS_ID_NV)
        except (cl.Error, AttributeError):
            return None

    @property
    def is_nvidia(self) -> bool:
        return "nvidia" in self.vendor.lower() or "nvidia" in self.platform_name.lower()

    @property
    def max_registers_per_work_item(self) -> int:
        """32-bit registers a work-item may use before the compiler spills (RaijinCL pruned at 128)."""
        return 255 if self.is_nvidia else 128

    def has_extension(self, name: str) -> bool:
        return name in self.extensions

    def facts(self) -> dict:
        """The identifying facts, JSON-ready (no OpenCL handles)."""
        skip = ("cl_device", "platform_index", "device_index")
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        out["vendor_facts"] = dict(self.vendor_facts)
        out["max_work_item_sizes"] = list(self.max_work_item_sizes)
        out["extensions"] = sorted(self.extensions)
        out["image2d_max"] = list(self.image2d_max)
        return out

    @classmethod
    def from_facts(cls, facts: object) -> Device:
        """A device described by ``facts`` (as ``facts()`` writes them, read from a file someone could
        have edited: every field is checked for its type), with no OpenCL device behind it: for planning
        and pruning as on that device, e.g. to replay a search measured there."""
        if not isinstance(facts, dict):
            raise ArgumentError("device facts must be a JSON object")
        expected = {f.name: f for f in fields(cls) if f.name not in ("cl_device", "platform_index", "device_index")}
        if set(facts) != set(expected):
            raise ArgumentError(f"device facts must have the fields {sorted(expected)}, not {sorted(facts)}")
        values: dict = {}
        for name, value in facts.items():
            kind = _FACT_TYPES.get(name, str)
            if kind is bool:
                ok = isinstance(value, bool)
            elif kind is int:
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            elif kind is dict:
                ok = isinstance(value, dict) and all(isinstance(x, str) for item in value.items() for x in item)
            elif kind is tuple:
                ok = isinstance(value, list) and all(isinstance(x, (int, str)) and not isinstance(x, bool)
                                                     for x in value)
                value = tuple(value)
            else:
                ok = isinstance(value, str) and len(value) <= 4096
            if not ok:
                raise ArgumentError(f"device fact {name} has the wrong type: {value!r}"[:300])
            values[name] = value
        return cls(platform_index=-1, device_index=-1, **values)

    @cached_property
    def fingerprint(self) -> str:
        """A short stable hash of vendor, name, driver and hardware facts (not of the slot it sits in).

        Memory sizes count in whole GiB, and not at all on CPU devices: a CPU driver such as PoCL reports a
        share of the memory free when it starts, which differs from one process to the next, and derives
        its largest image from it (``POCL_MEMORY_LIMIT`` changed the fingerprint of one CPU). Computed
        once per object (every call looks the device's profile up by it)."""
        facts = self.facts()
        cpu = self.device_type == "CPU"
        for name in ("global_mem_bytes", "max_mem_alloc_bytes"):
            facts[name] = None if cpu else facts[name] >> 30
        if cpu:
            facts["image2d_max"] = None
        blob = json.dumps(facts, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def architecture(self) -> str:
        """The device's microarchitecture as far as its driver tells: NVIDIA's compute capability
        ("NVIDIA sm_90"), else its vendor and name (an AMD GPU's name is its gfx target). A device with
        no profile of its own borrows one of the same architecture (``profiles.store``)."""
        capability = self.vendor_facts.get("compute_capability")
        if capability:
            return f"NVIDIA sm_{capability.replace('.', '')}"
        return f"{self.vendor.strip()} {self.name.strip()}"

    @property
    def slot(self) -> str:
        """"P:D": the platform and device numbers that ``find_device`` takes (in this process's listing)."""
        return f"{self.platform_index}:{self.device_index}"

    @property
    def label(self) -> str:
        return f"[{self.slot}] {self.name.strip()} ({self.platform_name.strip()})"

    @property
    def peak_gflops_estimate(self) -> float:
        """A rough single-precision peak used only to order devices (not a measured figure)."""
        lanes = 128 if self.is_gpu else 16
        return self.compute_units * lanes * 2 * self.clock_mhz / 1000.0


#: The type of each fact that is not a string (``from_facts`` checks them).
_FACT_TYPES = {"compute_units": int, "clock_mhz": int, "global_mem_bytes": int, "local_mem_bytes": int,
               "max_work_group_size": int, "max_mem_alloc_bytes": int, "fp64": bool, "image_support": bool,
               "max_work_item_sizes": tuple, "extensions": tuple, "image2d_max": tuple, "vendor_facts": dict}

_TYPE_NAMES = {
    cl.device_type.GPU: "GPU",
    cl.device_type.CPU: "CPU",
    cl.device_type.ACCELERATOR: "ACCELERATOR",
}


def _vendor_facts(dev: cl.Device) -> dict[str, str]:
    facts: dict[str, str] = {}
    if "cl_nv_device_attribute_query" in dev.extensions:
        try:
            facts["compute_capability"] = (
                f"{dev.compute_capability_major_nv}.{dev.compute_capability_minor_nv}"
            )
            facts["registers_per_block"] = str(dev.registers_per_block_nv)
            facts["warp_size"] = str(dev.warp_size_nv)
        except cl.Error:
            pass
    if "cl_amd_device_attribute_query" in dev.extensions:
        try:
            facts["board_name"] = str(dev.board_name_amd)
            facts["wavefront_width"] = str(dev.wavefront_width_amd)
        except cl.Error:
            pass
    return facts


def describe(platform_index: int, device_index: int, platform: cl.Platform, dev: cl.Device) -> Device:
    """Read the facts of one OpenCL device."""
    dev_type = next((n for t, n in _TYPE_NAMES.items() if dev.type & t), "OTHER")
    image_support = bool(dev.image_support)
    return Device(
        platform_index=platform_index,
        device_index=device_index,
        platform_name=platform.name,
        vendor=dev.vendor,
        name=dev.name,
        driver_version=dev.driver_version,
        opencl_version=dev.version,
        device_type=dev_type,
        compute_units=int(dev.max_compute_units),
        clock_mhz=int(dev.max_clock_frequency),
        global_mem_bytes=int(dev.global_mem_size),
        local_mem_bytes=int(dev.local_mem_size),
        max_work_group_size=int(dev.max_work_group_size),
        max_work_item_sizes=tuple(int(x) for x in dev.max_work_item_sizes),
        extensions=tuple(sorted(dev.extensions.split())),
        fp64=bool(dev.double_fp_config) or "cl_khr_fp64" in dev.extensions,
        image_support=image_support,
        image2d_max=(int(dev.image2d_max_width), int(dev.image2d_max_height)) if image_support else (0, 0),
        max_mem_alloc_bytes=int(dev.max_mem_alloc_size),
        vendor_facts=_vendor_facts(dev),
        cl_device=dev,
    )
