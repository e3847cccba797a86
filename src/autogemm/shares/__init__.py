"""One product over several targets: C's rows shared (``split``) among devices and the host's own BLAS
(``host``), run at once (``dispatch``), each device's share streamed through page-locked staging with the
copies overlapping the kernels (``streaming``, ``staging``, the host's copies on helper threads in
``copying``), or computed in place where the device shares the host's memory (``mapped``)."""

from .dispatch import run_split
from .host import HOST, HostGemm, Target
from .split import Split

__all__ = ["HOST", "HostGemm", "Split", "Target", "run_split"]
