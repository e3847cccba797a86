"""The sm_90a FP64 family (issue 28), rendered as CUDA C++ with inline PTX for the CUDA path: the FP64
tensor cores through ``mma.sync`` m16n8k4 f64 (wgmma has no FP64 form), fed by the TMA pipeline the
wgmma family uses (``codelets.hopper``). ``blas.cuda_gemm`` runs it for ``autogemm.gemm``; not yet
registered with the tuner."""

from .params import DmmaParams
from .render import render
from .space import space

__all__ = ["DmmaParams", "render", "space"]
