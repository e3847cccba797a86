"""The sm_90a family (issue 28), rendered as CUDA C++ with inline PTX for the CUDA path: Hopper's
warpgroup matrix instructions (wgmma) reading both operands from shared memory, which a producer
warpgroup fills by TMA in the 128-byte swizzle, a tuned number of stages ahead, for one or two consumer
warpgroups (mbarriers between them). Clusters and persistent blocks come next, as its knobs. Not yet
registered with the plans and the tuner (which run OpenCL): the CUDA path's plans will take it."""

from .params import WgmmaParams
from .render import Rendered, render
from .space import space

__all__ = ["Rendered", "WgmmaParams", "render", "space"]
