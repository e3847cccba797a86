"""A sensible configuration per device class and dtype, used until a device has a tuned profile (or
borrows one): a plain multiply-add kernel, and where the device has matrix instructions for the dtype, a
tensor-core one tried first (verified on the device before its first use, ``verified``); and the CUDA
path's configuration of each dtype it multiplies (``CUDA_DEFAULTS``)."""

from __future__ import annotations

from ..codelets.cpu import CpuParams
from ..codelets.dmma import DmmaParams
from ..codelets.nvidia_mma import MmaParams
from ..codelets.registry import check
from ..codelets.simt import SimtParams
from ..codelets.wgmma import WgmmaParams
from ..dtypes import Dtype
from ..errors import ConfigError
from ..runtime.opencl.device import Device

# Register-blocked, both operands through double-buffered local memory: the shape that suits GPUs.
_GPU = {
    "s": SimtParams("TN", "offset", 16, 16, 8, 8, 8, 4, True, True, double_buffer=True),
    "c": SimtParams("TN", "offset", 16, 16, 4, 4, 8, 2, True, True, double_buffer=True),
    "d": SimtParams("TN", "offset", 16, 16, 4, 4, 8, 2, True, True, double_buffer=True),
    "z": SimtParams("TN", "offset", 16, 16, 4, 2, 8, 1, True, True, double_buffer=True),
}
# CPUs of 64-byte vectors (AVX-512's; a float vector of 16, ``native_vector_width_float``): the cpu family (a
# work-group per core, one work-item holding its block of C in vector registers, as a CPU BLAS's micro-kernel
# does), s and d as `tune --size-class large` found them on such a CPU through PoCL (the 2-core EPYC the CI
# runs on), c and z the same registers' worth: well ahead of the simt configurations below over squares,
# skinny, deep and ragged products there (docs/guide/kernels.md has the figures); on a CPU of narrower
# vectors their accumulators would not fit its registers, and it keeps the simt ones until a tune finds its own.
_CPU_WIDE = {
    "s": CpuParams(layout="NN", tile_rows=6, vectors=4, vector_width=16, unroll=1),
    "d": CpuParams(layout="NN", tile_rows=12, vectors=2, vector_width=8, unroll=2),
    "c": CpuParams(layout="NN", tile_rows=6, vectors=2, vector_width=8, unroll=1),
    "z": CpuParams(layout="NN", tile_rows=6, vectors=2, vector_width=4, unroll=1),
}
#: Floats in a vector register of the CPUs ``_CPU_WIDE`` is for.
WIDE_FLOATS = 16
# Other CPUs: work-items vectorised across, no local memory, consecutive tiles.
_CPU = {
    "s": SimtParams("TN", "consecutive", 8, 8, 4, 8, 4, 4, False, False),
    "d": SimtParams("TN", "consecutive", 8, 8, 4, 4, 4, 4, False, False),
    "c": SimtParams("TN", "consecutive", 8, 8, 4, 4, 4, 2, False, False),
    "z": SimtParams("TN", "consecutive", 8, 8, 2, 4, 4, 1, False, False),
}
_SAFE = SimtParams("NN", "consecutive", 8, 8, 1, 1, 1, 1, False, False)
#: The large classes' best as tuned on sm_90, tried before the plain multiply-add default, which leaves an
#: untuned GPU's DGEMM far behind: FP64 tensor cores (DMMA) reach twice the FMA peak. ``check`` turns them
#: down where the PTX is not available (m16n8k4 for f64 needs sm_90; sm_80 has m8n8k4 only).
_NVIDIA_MMA = {
    "d": (MmaParams(layout="NT", shape="m16n8k4", warps_m=4, warps_n=1, tiles_m=2, tiles_n=8, tile_k=8, stages=3,
                    vector_width=2, mma="ptx", build_options=("-cl-nv-maxrregcount=255",), copy="async"),),
    "z": (MmaParams(layout="NT", shape="m16n8k8", warps_m=2, warps_n=4, tiles_m=2, tiles_n=2, tile_k=16, stages=1,
                    vector_width=1, mma="ptx", build_options=("-cl-nv-maxrregcount=255",), complex_method="3m"),),
}


#: The configuration each dtype (by its key) multiplies with on the CUDA path. FP16, BF16 and TF32 take
#: blocks of C 16 rows of blocks at a time rather than 8, so that more of the blocks working at once share
#: their tiles of B in L2 on large products. 3xTF32 runs two stages in clusters of two (A's tiles read
#: once a pair): three stages alone left its largest products, complex64's embedded ones most, waiting on
#: memory (the GEMM guide's kernels page has the figures); its other tiles, for smaller products, run
#: alone.
CUDA_DEFAULTS: dict[str, WgmmaParams | DmmaParams] = {
    "h": WgmmaParams("f16", 256, 2, 4, 16, out="f16"), "hs": WgmmaParams("f16", 256, 2, 4, 16),
    "b": WgmmaParams("bf16", 256, 2, 4, 16, out="bf16"), "bs": WgmmaParams("bf16", 256, 2, 4, 16),
    "s.tf32": WgmmaParams("tf32", 256, 2, 4, 16), "s.3xtf32": WgmmaParams("3xtf32", 128, 2, 2, 8, cluster=2),
    "d": DmmaParams("d", 2, 2, 64, 32, 4, 8, mma_k=8, reads_mn_major=True),
    "z": DmmaParams("z", 2, 2, 32, 32, 4, 8, mma_k=8, reads_mn_major=True)}


def tensor_defaults(device: Device, dtype: Dtype) -> tuple[MmaParams, ...]:
    """Tensor-core defaults to try for ``dtype`` on ``device`` before ``default_params`` (they still
    have to pass ``check`` and a verification on the device): for DGEMM and ZGEMM on an NVIDIA GPU."""
    if not device.is_gpu or "compute_capability" not in device.vendor_facts:
        return ()
    return _NVIDIA_MMA.get(dtype.key, ())


def default_params(device: Device, dtype: Dtype) -> SimtParams | CpuParams:
    """The class default for the device, or a minimal configuration where the default does not fit
    (16-bit dtypes: float32's, on converted operands)."""
    table = _GPU if device.is_gpu else _CPU_WIDE if _vector_floats(device) >= WIDE_FLOATS else _CPU
    dt = dtype.compute
    for params in (table[dt.letter], _SAFE):
        if check(params, device, dt) is None:
            return params
    raise ConfigError(f"no default configuration fits {device.name.strip()}: {check(_SAFE, device, dt)}")


def _vector_floats(device: Device) -> int:
    """Floats in one of the device's native vectors, as its driver says (0 where it cannot be asked)."""
    return device.cl_device.native_vector_width_float if device.cl_device is not None else 0
