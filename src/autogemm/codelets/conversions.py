"""OpenCL C that converts 16-bit storage (float16, bfloat16) to and from float, for devices without half
arithmetic: the buffers hold ``ushort`` bits, and only core OpenCL is used (``vload_half`` and
``vstore_half_rte`` take a pointer to half without the cl_khr_fp16 extension)."""

from __future__ import annotations

from ..dtypes import Dtype

_FLOAT16 = """\
// float16 bits to and from float (rounding to nearest, ties to even), through core OpenCL
inline float to_real(const ushort bits) { return vload_half(0, (const half*)&bits); }
inline ushort to_stored(const float x) { ushort bits; vstore_half_rte(x, 0, (half*)&bits); return bits; }
"""

_BFLOAT16 = """\
// bfloat16 bits (float's upper half) to and from float (rounding to nearest, ties to even; NaN stays NaN)
inline float to_real(const ushort bits) { return as_float((uint)bits << 16); }
inline ushort to_stored(const float x)
{
    const uint u = as_uint(x);
    if (isnan(x)) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
"""


def conversions(dt: Dtype) -> str:
    """``to_real`` and ``to_stored`` for ``dt``'s 16-bit storage (empty for the other dtypes)."""
    if not dt.half:
        return ""
    return _BFLOAT16 if dt.letter == "b" else _FLOAT16
