"""The runtimes underneath everything, one package per backend: OpenCL for every device (``opencl``:
devices, contexts, programs and timing) and CUDA beside it on Hopper GPUs (``cuda``); ``backend`` names
them and says which reach a device, ``child`` runs work a driver may crash or hang in child processes.
The OpenCL names every layer uses are handed on here."""

from .opencl.context import DeviceContext, context_for, context_for_queue, live_contexts
from .opencl.device import Device
from .opencl.discovery import default_device, devices, find_device
from .opencl.timing import event_seconds, hold, median, time_enqueue

__all__ = [
    "Device", "DeviceContext", "context_for", "context_for_queue", "default_device", "find_device", "devices",
    "live_contexts",
    "event_seconds", "hold", "median", "time_enqueue",
]
