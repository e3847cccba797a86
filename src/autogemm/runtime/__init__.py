"""OpenCL underneath everything: devices, contexts, programs and timing."""

from .context import DeviceContext, context_for, context_for_queue, live_contexts
from .device import Device
from .discovery import default_device, devices, find_device
from .timing import event_seconds, median, time_enqueue

__all__ = [
    "Device", "DeviceContext", "context_for", "context_for_queue", "default_device", "find_device", "devices",
    "live_contexts",
    "event_seconds", "median", "time_enqueue",
]
