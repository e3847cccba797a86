"""The kernel families autogemm generates, behind one interface: a frozen parameter class per family
(with the geometry a plan needs: ``layout``, ``block_rows``, ``block_cols``, ``tile_k``, ``vector_width``,
``image_a``, ``image_b``, ``build_options``), its ``check`` and its ``render``. Configurations read from
outside name their family (``"family"``; none means ``simt``, as profiles written before there were
families do)."""

from __future__ import annotations

from typing import Union, get_args

from ..dtypes import Dtype, get_dtype
from ..errors import ConfigError
from ..runtime.device import Device
from . import gemv, mma, simt, subgroup
from .kernel import KernelSource

KernelParams = Union[simt.SimtParams, subgroup.SubgroupParams, mma.MmaParams]
#: The GEMM families' configuration types, for isinstance checks of a ``KernelParams``.
KERNEL_PARAMS = get_args(KernelParams)
#: A configuration of any routine's codelets (what tuning records and checkpoints hold).
AnyParams = Union[KernelParams, gemv.GemvParams]

FAMILIES = {
    "simt": (simt.SimtParams, simt.check, simt.render),
    "subgroup": (subgroup.SubgroupParams, subgroup.check, subgroup.render),
    "nvidia_mma": (mma.MmaParams, mma.check, mma.render),
}
#: The GEMV codelets' family (its configurations never stand for a GEMM kernel, nor the reverse).
GEMV_FAMILIES = {"gemv": (gemv.GemvParams, gemv.check, gemv.render)}
ALL_FAMILIES = {**FAMILIES, **GEMV_FAMILIES}


def _family(params: object) -> tuple:
    """The family entry of ``params``, by the family its class names."""
    entry = FAMILIES.get(getattr(type(params), "family", None))
    if entry is None or not isinstance(params, entry[0]):
        raise ConfigError(f"not a kernel configuration: {type(params).__name__}")
    return entry


def kernel_dtype(params: KernelParams, dtype: Dtype | str) -> Dtype:
    """The dtype the kernel of ``params`` computes a ``dtype`` problem in: ``dtype`` itself where the
    family reads 16-bit operands (nvidia_mma: its instructions take them), else ``dtype.compute``
    (a plan then converts such operands to float32 before the product)."""
    dt = get_dtype(dtype)
    return dt if isinstance(params, mma.MmaParams) else dt.compute


def check(params: KernelParams, device: Device, dtype: Dtype | str) -> str | None:
    """Why ``params`` (of any family) cannot run on ``device`` for ``dtype``, or None."""
    return _family(params)[1](params, device, kernel_dtype(params, dtype))


def render(params: KernelParams, dtype: Dtype | str, guarded: bool = True) -> KernelSource:
    """The OpenCL source of ``params`` (of any family) for a ``dtype`` problem."""
    return _family(params)[2](params, kernel_dtype(params, dtype), guarded)


def params_from_dict(data: object, families: dict = FAMILIES) -> AnyParams:
    """A configuration of the family ``data`` names, validated field by field; the family must be one of
    ``families`` (by default the GEMM kernels')."""
    if not isinstance(data, dict):
        raise ConfigError("a configuration must be a JSON object")
    fields = dict(data)
    name = fields.pop("family", "simt")
    if name not in families:
        raise ConfigError(f"unknown kernel family {name!r}; expected one of {', '.join(families)}")
    return families[name][0].from_dict(fields)
