"""The sm_90a family (issue 28), rendered as CUDA C++ with inline PTX for the CUDA path: Hopper's
warpgroup matrix instructions (wgmma) reading both operands from shared memory, which a producer
warpgroup fills by TMA in the 128-byte swizzle, a tuned number of stages ahead, for one or two consumer
warpgroups (mbarriers between them), persistent blocks. ``blas.cuda_gemm`` runs it for ``autogemm.gemm``;
not yet registered with the tuner (which runs OpenCL)."""

from .params import WgmmaParams
from .render import Rendered, render
from .space import space

__all__ = ["Rendered", "WgmmaParams", "render", "space"]
