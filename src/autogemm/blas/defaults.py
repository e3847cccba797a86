"""A sensible configuration per device class and dtype, used until a device has a tuned profile."""

from __future__ import annotations

from ..codelets.simt import SimtParams, check
from ..dtypes import Dtype
from ..errors import ConfigError
from ..runtime.device import Device

# Register-blocked, both operands through double-buffered local memory: the shape that suits GPUs.
_GPU = {
    "s": SimtParams("TN", "offset", 16, 16, 8, 8, 8, 4, True, True, double_buffer=True),
    "c": SimtParams("TN", "offset", 16, 16, 4, 4, 8, 2, True, True, double_buffer=True),
    "d": SimtParams("TN", "offset", 16, 16, 4, 4, 8, 2, True, True, double_buffer=True),
    "z": SimtParams("TN", "offset", 16, 16, 4, 2, 8, 1, True, True, double_buffer=True),
}
# CPUs vectorise across work-items and cache well: no local memory, consecutive tiles.
_CPU = {
    "s": SimtParams("TN", "consecutive", 8, 8, 4, 8, 4, 4, False, False),
    "d": SimtParams("TN", "consecutive", 8, 8, 4, 4, 4, 4, False, False),
    "c": SimtParams("TN", "consecutive", 8, 8, 4, 4, 4, 2, False, False),
    "z": SimtParams("TN", "consecutive", 8, 8, 2, 4, 4, 1, False, False),
}
_SAFE = SimtParams("NN", "consecutive", 8, 8, 1, 1, 1, 1, False, False)


def default_params(device: Device, dtype: Dtype) -> SimtParams:
    """The class default for the device, or a minimal configuration where the default does not fit
    (16-bit dtypes: float32's, on converted operands)."""
    table = _GPU if device.is_gpu else _CPU
    dt = dtype.compute
    for params in (table[dt.letter], _SAFE):
        if check(params, device, dt) is None:
            return params
    raise ConfigError(f"no default configuration fits {device.name.strip()}: {check(_SAFE, device, dt)}")
