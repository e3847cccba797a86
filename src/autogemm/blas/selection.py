"""Which configuration a plan uses when the caller names none: the device profile's, else the default."""

from __future__ import annotations

from ..codelets.simt import SimtParams, check
from ..profiles import profile_for
from ..runtime.device import Device
from .defaults import default_params
from .problem import GemmProblem


def choose_params(device: Device, problem: GemmProblem) -> tuple[SimtParams, str]:
    """The configuration for ``problem`` on ``device`` and where it came from: the best stored one of the
    profile's size class nearest to the problem's shape (that still passes ``check``), or the device
    class default when there is no usable profile."""
    dt = problem.dtype
    profile = profile_for(device)
    if profile is not None:
        for params in profile.candidates(dt.letter, problem.m, problem.n, problem.k):
            if check(params, device, dt) is None:
                return params, f"profile {profile.device_fingerprint}"
    return default_params(device, dt), "default"
