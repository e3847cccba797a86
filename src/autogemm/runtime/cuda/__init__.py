"""The CUDA path beside OpenCL, for what NVIDIA's OpenCL cannot reach (sm_90a's wgmma and TMA): NVRTC
compiles CUDA C++ to the device's machine code (``nvrtc``), and the driver API finds the CUDA devices,
matched to the OpenCL ones by their PCI location (``driver``), and runs kernels with device memory and
event timing (``context``). Needs the ``cuda`` extra:
``pip install 'autogemm[cuda]'``; ``cuda_missing`` says why the path cannot be used where it cannot."""

from .context import CudaContext, DeviceMemory, cuda_context, live_cuda_contexts
from .driver import CudaDevice, cuda_devices
from .nvrtc import Cubin, compile_cuda, cuda_missing

__all__ = ["CudaContext", "CudaDevice", "Cubin", "DeviceMemory", "compile_cuda", "cuda_context",
           "cuda_devices", "cuda_missing", "live_cuda_contexts"]
