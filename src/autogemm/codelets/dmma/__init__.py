"""The sm_90a FP64 family (issue 28), rendered as CUDA C++ with inline PTX for the CUDA path: the FP64
tensor cores through ``mma.sync`` m16n8k4 f64 (wgmma has no FP64 form), fed by the TMA pipeline the
wgmma family uses (``codelets.hopper``). ``blas.cuda_gemm`` runs it for ``autogemm.gemm``; the tuner
searches its space on the CUDA path beside OpenCL's families (``tuning.cuda_classes``)."""

from ...runtime.backend import CUDA
from ..hopper import check
from ..registry import Family, SpaceFacts, register
from ..space import SearchSpace
from .params import DTYPES, DmmaParams
from .render import render
from .space import space


def facts_space(facts: SpaceFacts) -> SearchSpace[DmmaParams] | None:
    """The space searched for ``facts.dtype``, or None where the family does not multiply it."""
    return space(facts.dtype.key) if facts.dtype.key in DTYPES else None


FAMILY = register(Family(DmmaParams.family, DmmaParams, check, render, facts_space, backend=CUDA))

__all__ = ["FAMILY", "DmmaParams", "render", "space"]
