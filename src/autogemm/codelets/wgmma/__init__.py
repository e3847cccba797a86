"""The sm_90a family (issue 28), rendered as CUDA C++ with inline PTX for the CUDA path: Hopper's
warpgroup matrix instructions (wgmma) reading both operands from shared memory. This first kernel stages
tiles with cp.async in wgmma's no-swizzle layout, a tuned number of them in flight, one warpgroup a block;
TMA, warp specialization and clusters come next, as its knobs. Not yet registered with the plans and the tuner
(which run OpenCL): the CUDA path's plans will take it."""

from .params import WgmmaParams
from .render import Rendered, render

__all__ = ["Rendered", "WgmmaParams", "render"]
