"""The ``subgroup`` codelet family: A shared among the work-items of a subgroup by shuffles (Intel's
cl_intel_subgroups, Khronos cl_khr_subgroup_shuffle, NVIDIA's shfl.sync in inline PTX, or local memory
as a portable fallback) instead of through local memory and barriers."""

from ..registry import Family, register
from . import space
from .check import check, shuffles_available
from .params import SubgroupParams
from .render import render

# its guarded kernels read a deep split's operands where they lie so much slower than its padded ones
# read packed copies that the packs pay (docs/guide/gemm.md): such a split is padded
FAMILY = register(Family(SubgroupParams.family, SubgroupParams, check, render, space.space,
                         weight=1.0, sums_slices=True))

__all__ = ["FAMILY", "SubgroupParams", "check", "render", "shuffles_available"]
