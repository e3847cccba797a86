"""A profile borrowed from a related device (``profiles.store.profile_for``) was measured elsewhere: each
of its configurations is used on this device only once ``verification.verify`` has passed it here, on
the awkward shapes a tuning run checks its finalists on. The verdicts are kept per device in the user's
cache (``verified/<fingerprint>.json``), so each configuration is checked once, not in every process; a
configuration that fails is passed over with a warning, and selection takes the next."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from ..cache_dir import cache_subdir, write_atomically
from ..codelets.registry import Params
from ..dtypes import Dtype
from ..profiles import Profile, ProfileWarning
from ..runtime import Device, context_for

VERIFIED = "verified"

_verdicts: dict[str, dict[str, str]] = {}      # by the verdicts file's path


def verified_here(device: Device, profile: Profile, config: Params, dtype: Dtype) -> bool:
    """Whether ``config`` of ``profile`` may compute ``dtype`` on ``device``: always for the device's own
    profile; for a borrowed one, once it computed every verification case right here."""
    if profile.device_fingerprint == device.fingerprint:
        return True
    path = cache_subdir(VERIFIED) / f"{device.fingerprint}.json"
    verdicts = _known(path)
    key = f"{dtype.key} {json.dumps(config.to_dict(), sort_keys=True)}"
    if key not in verdicts:
        from .verification import verify  # (it runs plans, whose module imports this one's caller)

        problem = verify(context_for(device), config, dtype) or ""
        verdicts[key] = problem
        write_atomically(path, json.dumps(verdicts, indent=1))
        if problem:
            warnings.warn(f"{config.describe()}, of the profile borrowed from {profile.device_name}, fails on "
                          f"{device.name.strip()} ({problem}): not used; autogemm tune makes this device's own",
                          ProfileWarning, stacklevel=2)
    return not verdicts[key]


def _known(path: Path) -> dict[str, str]:
    """The verdicts kept at ``path`` (a device's, by any process): config key -> what failed, or ''."""
    if str(path) not in _verdicts:
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stored = {}
        valid = isinstance(stored, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in stored.items())
        _verdicts[str(path)] = dict(stored) if valid else {}
    return _verdicts[str(path)]
