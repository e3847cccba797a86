"""A configuration never measured on a device (one of a profile borrowed from a related device,
``profiles.store.profile_for``, or a tensor-core class default) is used there only once
``verification.verify`` has passed it on the device, on the awkward shapes a tuning run checks its
finalists on. The verdicts are kept per device in the user's cache (``verified/<fingerprint>.json``), so
each configuration is checked once, not in every process; one that fails is passed over with a warning,
and selection takes the next."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from ..cache_dir import cache_dir, read_regular, write_atomically
from ..codelets.registry import Params
from ..dtypes import Dtype
from ..profiles import Profile, ProfileWarning
from ..runtime import Device, context_for
from . import verification

VERIFIED = "verified"

_verdicts: dict[str, dict[str, str]] = {}      # by the verdicts file's path


def verified_here(device: Device, config: Params, dtype: Dtype, origin: str, measured_on: str = "") -> bool:
    """Whether ``config`` (``origin``: where it comes from, for the warning) may compute ``dtype`` on
    ``device``: always where it was measured on the device (``measured_on``, its fingerprint: the
    device's own profile); else once it computed every verification case right here."""
    if measured_on == device.fingerprint:
        return True
    path = cache_dir() / VERIFIED / f"{device.fingerprint}.json"
    verdicts = _known(path)
    key = f"{dtype.key} {json.dumps(config.to_dict(), sort_keys=True)}"
    if key not in verdicts:
        problem = verification.verify(context_for(device), config, dtype) or ""
        verdicts[key] = problem
        if not any(word in problem for word in TRANSIENT):
            _keep(path, verdicts)
        if problem:
            warnings.warn(f"{config.describe()}, {origin}, fails on {device.name.strip()} ({problem}): not used; "
                          f"autogemm tune makes this device's own profile", ProfileWarning, stacklevel=2)
    return not verdicts[key]


def verified_in(device: Device, profile: Profile, config: Params, dtype: Dtype, made_from: Params | None = None
                ) -> bool:
    """``verified_here`` for a configuration of ``profile`` (the device's own, or a borrowed one; in the
    device's own, one of the entries taken over from a borrowed profile is verified like the borrowed
    profile's: ``Profile.measured_on``), or one ``made_from`` such a configuration (in another layout, or
    fitted to a problem), verified like that one's."""
    return verified_here(device, config, dtype, f"of the profile of {profile.device_name}",
                         profile.measured_on(made_from or config))


#: What a verification that failed for want of memory or resources says: the configuration may compute
#: right once the device has them, so the verdict holds for this process only, not in the cache.
TRANSIENT = ("MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY", "MemoryError")
_unwritable: set[str] = set()    # verdict files this process could not write (kept in memory instead)


def _keep(path: Path, verdicts: dict[str, str]) -> None:
    """Write the verdicts for other processes; in a cache this user cannot write (a lab's, shared read-only)
    they are kept in memory, with one warning: a call never fails for want of a place to note them."""
    try:
        write_atomically(path, json.dumps(verdicts, indent=1))
    except OSError as exc:
        if str(path) not in _unwritable:
            _unwritable.add(str(path))
            warnings.warn(f"cannot keep verification results in {path.parent} ({exc.strerror or exc}): they hold "
                          f"for this process only", ProfileWarning, stacklevel=3)


def _known(path: Path) -> dict[str, str]:
    """The verdicts kept at ``path`` (a device's, by any process): config key -> what failed, or ''."""
    if str(path) not in _verdicts:
        try:
            stored = json.loads(read_regular(path))
        except (OSError, ValueError):
            stored = {}
        valid = isinstance(stored, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in stored.items())
        _verdicts[str(path)] = dict(stored) if valid else {}
    return _verdicts[str(path)]
