"""Find every OpenCL platform and device, choose the default one, and register NVIDIA's driver where
a container ships ``libnvidia-opencl.so.1`` without an ICD file naming it. A CPU driver whose compiler
cannot build for the host CPU (PyPI's PoCL, on LLVM 14: nothing on AMD's Zen 5, no 512-bit vectors on
Zen 4) is passed over for another."""

from __future__ import annotations

import ctypes
import logging
import os
import re
import subprocess
import sys
import tempfile
import warnings
from functools import cache, lru_cache
from pathlib import Path

import pyopencl as cl

from ...errors import DeviceError, driver_fault
from .device import Device, describe

log = logging.getLogger("autogemm")

NVIDIA_LIBRARY = "libnvidia-opencl.so.1"
SYSTEM_VENDORS_DIR = "/etc/OpenCL/vendors"
DEVICE_ENV = "AUTOGEMM_DEVICE"

#: What discovery did to find NVIDIA's driver, if anything (shown by ``autogemm devices``).
icd_note: str | None = None


def _icd_files(vendors_dir: str) -> list[Path]:
    return sorted(Path(vendors_dir).glob("*.icd")) if os.path.isdir(vendors_dir) else []


def _bundled_icd_files() -> list[Path]:
    """ICD files shipped inside the pyopencl wheel (its PoCL), which its own loader would read."""
    libs = Path(cl.__file__).parent / ".libs"
    return sorted(libs.glob("*.icd"))


def _nvidia_library_loadable() -> bool:
    try:
        ctypes.CDLL(NVIDIA_LIBRARY)
    except OSError:
        return False
    return True


def _registered_libraries() -> list[str]:
    vendors = os.environ.get("OCL_ICD_VENDORS", SYSTEM_VENDORS_DIR)
    return [p.read_text().strip() for p in _icd_files(vendors)]


def register_nvidia_icd() -> str | None:
    """If NVIDIA's OpenCL library is present but unregistered, point the ICD loader at a vendors
    directory that names it next to every ICD already known. Must run before the first platform query
    (the loader reads the vendors once per process). Returns a note saying what was done, or None."""
    if any("nvidia" in lib.lower() for lib in _registered_libraries()):
        return None
    if not _nvidia_library_loadable():
        return None
    vendors = Path(tempfile.gettempdir()) / f"autogemm-icd-{os.getuid()}"
    vendors.mkdir(mode=0o700, exist_ok=True)
    (vendors / "nvidia.icd").write_text(NVIDIA_LIBRARY + "\n")
    known = _icd_files(os.environ.get("OCL_ICD_VENDORS", SYSTEM_VENDORS_DIR)) + _bundled_icd_files()
    for icd in known:
        lib = icd.read_text().strip()
        if not os.path.isabs(lib) and (icd.parent / lib).exists():
            lib = str(icd.parent / lib)        # a bundled ICD names its library relative to its folder
        (vendors / icd.name).write_text(lib + "\n")
    os.environ["OCL_ICD_VENDORS"] = str(vendors)
    return (
        f"NVIDIA's {NVIDIA_LIBRARY} was found but no ICD file registered it; autogemm registered it "
        f"through OCL_ICD_VENDORS={vendors} (set OCL_ICD_VENDORS yourself to override)"
    )


@lru_cache(maxsize=1)
def devices() -> tuple[Device, ...]:
    """Every device on every platform, in platform order."""
    global icd_note
    icd_note = register_nvidia_icd()
    if icd_note:
        log.info(icd_note)
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    found = []
    for p_index, platform in enumerate(platforms):
        try:
            cl_devices = platform.get_devices()
        except cl.Error:
            continue
        for d_index, dev in enumerate(cl_devices):
            found.append(describe(p_index, d_index, platform, dev))
    return tuple(found)


#: The smallest kernel; a compiler that cannot build it can build nothing.
PROBE_SOURCE = "__kernel void probe(__global int *out) { out[get_global_id(0)] = 1; }"
#: The widest vectors the CPU family's kernels take (512 bits) in a fused multiply-add.
WIDE_PROBE_SOURCE = ("__kernel void probe(__global float16 *x) "
                     "{ const size_t i = get_global_id(0); x[i] = fma(x[i], x[i + 1], x[i + 2]); }")
#: A child process builds ``WIDE_PROBE_SOURCE`` on device (platform, device) of its own listing, then
#: again from the binary (as the build processes' programs are): the compiler may abort the process.
_WIDE_PROBE = """
import sys, warnings
import pyopencl as cl
warnings.simplefilter("ignore")
device = cl.get_platforms()[int(sys.argv[1])].get_devices()[int(sys.argv[2])]
context = cl.Context([device])
built = cl.Program(context, sys.argv[3]).build()
again = cl.Program(context, [device], built.binaries).build()
sys.exit(0 if again.kernel_names == "probe" else 3)
"""
WIDE_PROBE_SECONDS = 120


@cache
def compiler_fault(device: Device) -> str | None:
    """None when ``device``'s compiler builds a minimal kernel (and, for a CPU, ``wide_vectors_fault``'s
    kernel), else why not: the first line of the build log and the ``BuildError`` explanation where there
    is one. Some drivers list a device and build nothing for it: PyPI's PoCL, on LLVM 14, does not know
    AMD's Zen 5 as a target."""
    try:
        context = cl.Context([device.cl_device])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            cl.Program(context, PROBE_SOURCE).build()
    except cl.Error as exc:
        log = str(exc)
        errors = [line.strip() for line in log.splitlines() if "error" in line.lower()]
        return driver_fault(log) or (errors[-1] if errors else log.strip().splitlines()[0])
    return wide_vectors_fault(device) if device.device_type == "CPU" else None


def wide_vectors_fault(device: Device) -> str | None:
    """None when ``device``'s compiler builds a 512-bit multiply-add, from source and from its binary (in
    a child process: the compiler may abort it), else why not. PyPI's PoCL, on LLVM 14, takes AMD's Zen 4
    for a Zen 3: it reports 512-bit vectors native and cannot build their multiply-adds (its build from a
    binary aborts, and its kernel cache then holds a program without kernels)."""
    try:
        run = subprocess.run([sys.executable, "-c", _WIDE_PROBE, str(device.platform_index), str(device.device_index),
                              WIDE_PROBE_SOURCE], capture_output=True, timeout=WIDE_PROBE_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return f"its compiler took over {WIDE_PROBE_SECONDS} s to build a 512-bit multiply-add"
    if run.returncode == 0:
        return None
    return "its compiler cannot build 512-bit vector multiply-adds for this CPU (a driver older than the CPU)"


def cpu_devices(listed: tuple[Device, ...]) -> list[Device]:
    """The CPU devices of ``listed``; where there are several, those whose compiler works, if any does
    (PyPI's PoCL beside Debian's, on a CPU the first does not know)."""
    cpus = [d for d in listed if d.device_type == "CPU"]
    if len(cpus) > 1:
        return [d for d in cpus if compiler_fault(d) is None] or cpus
    return cpus


def default_device() -> Device:
    """``AUTOGEMM_DEVICE`` if set, else the fastest GPU, else the first CPU whose compiler works, else any
    device."""
    spec = os.environ.get(DEVICE_ENV)
    if spec:
        return find_device(spec)
    listed = devices()
    if not listed:
        raise DeviceError(
            "no OpenCL device found; install a driver, or PoCL for the CPU: pip install 'autogemm[pocl]'"
        )
    gpus = [d for d in listed if d.is_gpu]
    if gpus:
        return max(gpus, key=lambda d: d.peak_gflops_estimate)
    return (cpu_devices(listed) or list(listed))[0]


_SLOT = re.compile(r"^(\d+):(\d+)$")


def same_device(slot: str, fingerprint: str) -> Device:
    """The device at ``slot`` in this process, which must be the one with ``fingerprint`` (a child process
    opening its parent's device); ``DeviceError`` when it is another."""
    device = find_device(slot)
    if device.fingerprint != fingerprint:
        raise DeviceError(f"device {slot} in this process is not the device {fingerprint} asked for")
    return device


def find_device(spec: str | int | Device | None) -> Device:
    """A device by ``"P:D"`` (platform and device numbers), by flat index, by ``gpu``/``cpu``, or by a
    case-insensitive piece of its name; None means the default device."""
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    listed = devices()
    text = str(spec).strip()
    if len(text) > 200 or not text.isprintable():
        raise DeviceError("device specification must be a short printable string")
    match = _SLOT.match(text)
    if match:
        p, d = int(match[1]), int(match[2])
        for dev in listed:
            if (dev.platform_index, dev.device_index) == (p, d):
                return dev
    elif text.isdigit():
        if int(text) < len(listed):
            return listed[int(text)]
    elif text.lower() in ("gpu", "cpu"):
        of_type = [d for d in listed if d.is_gpu] if text.lower() == "gpu" else cpu_devices(listed)
        if of_type:
            return max(of_type, key=lambda d: d.peak_gflops_estimate)
    else:
        named = [d for d in listed if text.lower() in d.name.lower() or text.lower() in d.platform_name.lower()]
        if named:
            return named[0]
    listing = "\n".join(f"  {d.label}" for d in listed) or "  (none)"
    raise DeviceError(f"no OpenCL device matches {text!r}; devices are:\n{listing}")
