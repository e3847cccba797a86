"""Where profiles live: one file per device in the user's cache, and the bundled ones as fallbacks.

Writes take a file lock and replace the file atomically (a reader sees the old file or the new one,
never half of one), and merge with what another tuner wrote meanwhile. A lookup for a device takes a
valid profile made for that device's fingerprint (the user's, else a bundled one), else one of a related
device (the same model under another driver, the same architecture), borrowed until the device is
tuned; an invalid file is skipped with a warning that says why. With none, the device class defaults."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..cache_dir import cache_dir, file_lock, make_directory, read_regular, write_atomically
from ..errors import ProfileError
from ..runtime.opencl.device import Device
from .profile import Profile
from .thresholds import DEFAULTS, Thresholds, device_class


class ProfileWarning(UserWarning):
    """A profile was found but not used (invalid, or made for another device or driver)."""


PROFILES = "profiles"


def path_for(fingerprint: str) -> Path:
    """The user's profile file for a device (which may not exist; its folder is made when one is saved)."""
    return _path(cache_dir(), fingerprint)


@lru_cache(maxsize=64)
def _path(root: Path, fingerprint: str) -> Path:
    return root / PROFILES / f"{fingerprint}.json"


@lru_cache(maxsize=64)
def _name(path: Path) -> str:
    """``str(path)``, once (every call looks the profile up)."""
    return str(path)


def read(path: Path | str) -> Profile:
    """Load and validate one profile file (``ProfileError`` on any problem)."""
    path = Path(path)
    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot be read ({exc})") from None
    return Profile.from_json(text, source=str(path))


def save(profile: Profile, path: Path | None = None) -> Path:
    """Write ``profile`` (merged over the profile already at ``path``) under a lock, atomically. A file
    there that cannot be read as a profile (``profile_at``), or a profile that would not read back,
    is a ``ProfileError``: the file there is left as it was."""
    path = path or path_for(profile.device_fingerprint)
    make_directory(path.parent)
    with file_lock(path):
        older = profile_at(path)
        if older is not None and older.device_fingerprint == profile.device_fingerprint:
            profile = profile.merged_into(older)
        text = profile.to_json()
        Profile.from_json(text, source=f"the profile to be saved at {path}")
        write_atomically(path, text)   # a profile is meant to be shared: readable by all
    forget()
    return path


def profile_at(path: Path) -> Profile | None:
    """The profile at ``path``, None where there is no file; ``ProfileError`` where a file there cannot be
    read as a profile (unreadable, of a newer format, damaged, not a regular file): saving would replace
    what it holds, which autogemm never does unasked (``save``, ``tune`` before it measures anything,
    ``profile import``)."""
    if not os.path.lexists(path):
        return None
    try:
        return read(path)
    except ProfileError as exc:
        raise ProfileError(f"{exc}; autogemm leaves that file as it is: move it away (or make it readable) "
                           f"and run again") from None


def bundled() -> list[tuple[str, Profile | ProfileError]]:
    """The profiles shipped with autogemm, each parsed (or the error that rejects it)."""
    out: list[tuple[str, Profile | ProfileError]] = []
    folder = resources.files("autogemm.profiles") / "bundled"
    if not folder.is_dir():
        return out
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".json"):
            continue
        try:
            out.append((f"bundled/{item.name}", Profile.from_json(item.read_text(encoding="utf-8"),
                                                                 source=f"bundled/{item.name}")))
        except ProfileError as exc:
            out.append((f"bundled/{item.name}", exc))
    return out


def user_profiles() -> list[tuple[str, Profile | ProfileError]]:
    """The profiles in the user's cache, each parsed (or the error that rejects it); the folder is not
    made where there is none."""
    out: list[tuple[str, Profile | ProfileError]] = []
    for path in sorted((cache_dir() / PROFILES).glob("*.json")):
        try:
            out.append((str(path), read(path)))
        except ProfileError as exc:
            out.append((str(path), exc))
    return out


_memo: dict[tuple, Profile | None] = {}
#: A lookup reads a profile file's time stamp at most once in this many seconds (every call looks its
#: device's profile up, and a ``stat`` of a file that is not there is a noticeable share of a small
#: numpy-to-numpy product's time): a profile another process writes is used within this time; one this
#: process saves, at once.
RECHECK_SECONDS = 1.0
_stamps: dict[str, tuple[float, int | None]] = {}


def profile_for(device: Device) -> Profile | None:
    """The profile autogemm uses for ``device``: its own (the user's, else a bundled one, valid and made
    for this device's fingerprint), else one borrowed from a related device (``related``: the same model
    under another driver, else the same architecture), whose configurations are verified on this device
    before their first use (``blas.verified``); None when there is none (``profile_origin`` says which).
    Within ``trying``, the profile tried."""
    if device.fingerprint in _tried:
        return _tried[device.fingerprint]
    path = path_for(device.fingerprint)
    name = _name(path)
    key = (device.fingerprint, name, _stamp(name))
    if key not in _memo:
        _memo[key] = _find(device, path)
    return _memo[key]


#: fingerprint -> the profile ``profile_for`` answers within ``trying``
_tried: dict[str, Profile] = {}


@contextmanager
def trying(device: Device, profile: Profile) -> Iterator[None]:
    """Within the block, ``profile_for(device)`` is ``profile``, saved nowhere: what a product's plan
    would be under it (``autogemm tune`` times a workload's plans under the profile it started from and
    under the one it made)."""
    _tried[device.fingerprint] = profile
    try:
        yield
    finally:
        del _tried[device.fingerprint]


#: fingerprint -> (until when, after how many ``forget``s, the profile ``profile_for`` last returned)
_confirmed: dict[str, tuple[float, int, Profile | None]] = {}
#: How many times ``forget`` ran: a lookup's result confirmed before the last one is confirmed again.
FORGETS = 0


def still_current(device: Device, profile: Profile | None) -> bool:
    """Whether ``profile_for(device)`` would return ``profile`` again: asked of it at most once per
    ``RECHECK_SECONDS`` for each device, and at once after a save (for holders of a lookup's result that
    ask on every call, such as a call's resolved route: within that time they hold to the profile of a
    cache directory that ``$AUTOGEMM_CACHE_DIR`` no longer names)."""
    now = time.monotonic()
    confirmed = _confirmed.get(device.fingerprint)
    if confirmed is not None and now < confirmed[0] and confirmed[1] == FORGETS:
        return confirmed[2] is profile
    found = profile_for(device)
    _confirmed[device.fingerprint] = (now + RECHECK_SECONDS, FORGETS, found)
    return found is profile


def current_until(device: Device, profile: Profile | None) -> float:
    """Until when (``time.monotonic``) ``still_current(device, profile)`` holds without being asked again,
    while ``FORGETS`` stays as it is now; 0.0 where it does not hold (for a holder that asks on every call
    and cannot afford even ``still_current``'s lookups: a plain call the host's BLAS takes)."""
    return _confirmed[device.fingerprint][0] if still_current(device, profile) else 0.0


def thresholds_for(device: Device) -> Thresholds:
    """The thresholds a call on ``device`` follows: the fields its profile (the device's own or a borrowed
    one) names, over its class's defaults (``thresholds.DEFAULTS``) for the rest."""
    profile = profile_for(device)
    row = DEFAULTS[device_class(device)]
    if profile is None or profile.thresholds is None:
        return row
    own = profile.thresholds
    key = (own, own.given, row)            # (``given`` is not part of a Thresholds' equality)
    if key not in _followed:
        _followed[key] = own.over(row)
    return _followed[key]


#: ``thresholds_for``'s answers by (the profile's thresholds, the fields they name, the class's row).
_followed: dict[tuple, Thresholds] = {}


def forget() -> None:
    """Forget every lookup made: the next reads the profiles again (after a save, or for tests)."""
    global FORGETS
    _memo.clear()
    _stamps.clear()
    FORGETS += 1


def _stamp(name: str) -> int | None:
    """The file's modification time (None where there is none), read again after ``RECHECK_SECONDS``."""
    now = time.monotonic()
    found = _stamps.get(name)
    if found is None or now - found[0] >= RECHECK_SECONDS:
        try:
            stamp = os.stat(name).st_mtime_ns
        except OSError:
            stamp = None
        found = _stamps[name] = (now, stamp)
    return found[1]


def own_profile(device: Device) -> Profile | None:
    """``device``'s own profile (``profile_for``'s when it is not borrowed), or None: what a tuning run
    adds its entries to."""
    profile = profile_for(device)
    return profile if profile is not None and profile.device_fingerprint == device.fingerprint else None


def profile_origin(device: Device, profile: Profile | None) -> str:
    """Why ``device`` uses ``profile`` (``profile_for``'s), in a phrase for ``autogemm devices`` and
    ``profile show``."""
    if profile is None:
        return "none: the device class's defaults (autogemm tune makes one)"
    if profile.device_fingerprint == device.fingerprint:
        path = path_for(device.fingerprint)
        own = f"its own, {path}" if path.exists() else "its own, bundled with autogemm"
        return own + ("; the entries it took over from a related device's profile are verified here before "
                      "their first use" if profile.borrows() else "")
    return (f"borrowed from {profile.device_name} ({profile.device_fingerprint}): {related_because(profile, device)}"
            f"; each configuration is verified here before its first use, and autogemm tune makes its own")


def related_because(profile: Profile, device: Device) -> str | None:
    """Why ``profile``, made for another device, suits ``device``: the same vendor and model under
    another driver, or the same vendor and architecture; None where it does not."""
    if profile.device_vendor.strip().lower() != device.vendor.strip().lower():
        return None
    if profile.device_name.strip() == device.name.strip():
        return f"the same model, driver {profile.driver_version} (this one has {device.driver_version})"
    if profile.device_architecture and profile.device_architecture == device.architecture:
        return f"the same architecture, {device.architecture}"
    return None


def _find(device: Device, path: Path) -> Profile | None:
    """``profile_for``'s answer: the device's own file when it is valid and its own (nothing else read),
    else every other profile file read once; a warning for the device's own file where it is invalid
    or made for another device, and for a bundled one that is invalid."""
    if path.exists():
        try:
            profile = read(path)
            if profile.device_fingerprint == device.fingerprint:
                return profile
            warnings.warn(f"profile {path} was made for {profile.device_name} {profile.device_fingerprint}, not "
                          f"this device's {device.fingerprint}: not its own", ProfileWarning, stacklevel=3)
        except ProfileError as exc:
            warnings.warn(f"ignoring profile: {exc}", ProfileWarning, stacklevel=3)
    found = []
    for source, item in user_profiles() + bundled():
        if isinstance(item, ProfileError):
            if source.startswith("bundled/"):
                warnings.warn(f"ignoring bundled profile: {item}", ProfileWarning, stacklevel=3)
        else:
            found.append(item)
    own = next((p for p in found if p.device_fingerprint == device.fingerprint), None)
    if own is not None:
        return own
    # a related device's: the same model first (another driver), then the newest
    related = [p for p in found if related_because(p, device)]
    related.sort(key=lambda p: (p.device_name.strip() == device.name.strip(), p.created), reverse=True)
    return related[0] if related else None

