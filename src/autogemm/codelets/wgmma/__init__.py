"""The sm_90a family (issue 28), rendered as CUDA C++ with inline PTX for the CUDA path: Hopper's
warpgroup matrix instructions (wgmma) reading both operands from shared memory, which a producer
warpgroup fills by TMA in the 128-byte swizzle, a tuned number of stages ahead, for one or two consumer
warpgroups (mbarriers between them), persistent blocks. ``blas.cuda_gemm`` runs it for ``autogemm.gemm``;
the tuner searches its space on the CUDA path beside OpenCL's families (``tuning.cuda_classes``)."""

from ...runtime.backend import CUDA
from ..hopper import check
from ..registry import Family, SpaceFacts, register
from ..space import SearchSpace
from .params import DTYPE_TYPES, WgmmaParams
from .render import Rendered, render
from .space import space


def facts_space(facts: SpaceFacts) -> SearchSpace[WgmmaParams] | None:
    """The space searched for ``facts.dtype``, or None where the family does not multiply it."""
    types = DTYPE_TYPES.get(facts.dtype.key)
    return None if types is None else space(*types)


FAMILY = register(Family(WgmmaParams.family, WgmmaParams, check, render, facts_space, reads_16bit=lambda params: True,
                         backend=CUDA))

__all__ = ["FAMILY", "DTYPE_TYPES", "Rendered", "WgmmaParams", "render", "space"]
