"""Kernel generators: one folder per family (``simt``, ``subgroup``, ``cpu``, ``nvidia_mma``, ``gemv``), each with
its parameters, ``check``, ``render`` and tuning ``space``, registered in ``registry``; the helper
kernels (pack, merge, scale, residual) in ``helpers``. Importing the package registers the families, in
the order a tuning run searches them (simt, the RaijinCL space every device has, first)."""

# isort: off
from . import simt, subgroup, cpu, nvidia_mma, gemv, wgmma, dmma  # noqa: F401  (each registers its family)
