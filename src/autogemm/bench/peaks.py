"""The peak a benchmark's rates are shares of: for a dtype multiplied by matrix instructions (FP16, BF16,
TF32, FP64), the device's tensor cores' dense peak for that format where NVIDIA publishes one for the
device; else the multiply-add peak measured in the run (``Bench.peak_tflops``). A kernel on tensor cores
is over 100% of the FMA peak, which says nothing of how near it is to what the device can do."""

from __future__ import annotations

from ..dtypes import Dtype
from ..runtime import Device

#: NVIDIA's published dense (not sparse) tensor-core peaks, TFLOP/s, by the device's name as its driver
#: gives it, from the H100 and H200 datasheets: the SXM parts run their tensor cores at higher clocks
#: than the PCIe and NVL ones.
TENSOR_PEAKS: dict[str, dict[str, float]] = {
    "NVIDIA H100 80GB HBM3": {"f16": 989.4, "bf16": 989.4, "tf32": 494.7, "f64": 66.9},
    "NVIDIA H200": {"f16": 989.4, "bf16": 989.4, "tf32": 494.7, "f64": 66.9},
    "NVIDIA H100 PCIe": {"f16": 756.5, "bf16": 756.5, "tf32": 378.0, "f64": 51.2},
    "NVIDIA H100 NVL": {"f16": 835.5, "bf16": 835.5, "tf32": 417.5, "f64": 60.0},
    "NVIDIA H200 NVL": {"f16": 835.5, "bf16": 835.5, "tf32": 417.5, "f64": 60.0},
}
#: The tensor products one product of a precision mode takes: 3xTF32's three, of two parts of each input.
PRODUCTS = {"3xtf32": 3}
#: What a case's peak is (``CaseResult.peak``, the plot's line).
MEASURED_FMA = "FMA peak (measured)"
TENSOR = "tensor-core peak (NVIDIA's, dense)"


def tensor_peak_tflops(device: Device, dt: Dtype) -> float | None:
    """The dense tensor-core peak of the format that multiplies ``dt`` on ``device`` (a third of TF32's
    for 3xTF32), or None: no matrix instructions for ``dt``, or no published figure for the device."""
    if dt.mma_operand is None:
        return None
    peak = TENSOR_PEAKS.get(device.name.strip(), {}).get(dt.mma_operand)
    return peak / PRODUCTS.get(dt.precision, 1) if peak else None
