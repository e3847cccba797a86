"""Where profiles live: one file per device in the user's cache, and the bundled ones as fallbacks.

Writes take a file lock and replace the file atomically (a reader sees the old file or the new one,
never half of one), and merge with what another tuner wrote meanwhile. Lookups for a device accept
only a valid profile made for that device's fingerprint; anything else is skipped with a warning that
says why, and autogemm falls back (to a bundled profile, then to the device class default)."""

from __future__ import annotations

import os
import warnings
from functools import lru_cache
from importlib import resources
from pathlib import Path

from filelock import FileLock

from ..cache_dir import cache_dir, cache_subdir, make_directory, write_atomically
from ..errors import ProfileError
from ..runtime.device import Device
from .profile import Profile


class ProfileWarning(UserWarning):
    """A profile was found but not used (invalid, or made for another device or driver)."""


PROFILES = "profiles"


def profile_dir() -> Path:
    return cache_subdir(PROFILES)


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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot be read ({exc})") from None
    return Profile.from_json(text, source=str(path))


def save(profile: Profile, path: Path | None = None) -> Path:
    """Write ``profile`` (merged over a valid profile already at ``path``) under a lock, atomically."""
    path = path or path_for(profile.device_fingerprint)
    make_directory(path.parent)
    with FileLock(str(path) + ".lock"):
        if path.exists():
            try:
                older = read(path)
                if older.device_fingerprint == profile.device_fingerprint:
                    profile = profile.merged_into(older)
            except ProfileError:
                pass   # a broken file is replaced
        write_atomically(path, profile.to_json())   # a profile is meant to be shared: readable by all
    _memo.clear()
    return path


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
    out: list[tuple[str, Profile | ProfileError]] = []
    for path in sorted(profile_dir().glob("*.json")):
        try:
            out.append((str(path), read(path)))
        except ProfileError as exc:
            out.append((str(path), exc))
    return out


_memo: dict[tuple, Profile | None] = {}


def profile_for(device: Device) -> Profile | None:
    """The profile autogemm uses for ``device``: the user's, else a bundled one, each only when it is
    valid and made for this device's fingerprint; None when there is none."""
    path = path_for(device.fingerprint)
    name = _name(path)
    try:
        stamp = os.stat(name).st_mtime_ns
    except OSError:
        stamp = None
    key = (device.fingerprint, name, stamp)
    if key not in _memo:
        _memo[key] = _find(device, path)
    return _memo[key]


def _find(device: Device, path: Path) -> Profile | None:
    if path.exists():
        try:
            profile = read(path)
            if _usable(profile, device, str(path)):
                return profile
        except ProfileError as exc:
            warnings.warn(f"ignoring profile: {exc}", ProfileWarning, stacklevel=3)
    for _, item in bundled():
        if isinstance(item, Profile) and item.device_fingerprint == device.fingerprint:
            return item
        if isinstance(item, ProfileError):
            warnings.warn(f"ignoring bundled profile: {item}", ProfileWarning, stacklevel=3)
    return None


def _usable(profile: Profile, device: Device, source: str) -> bool:
    if profile.device_fingerprint == device.fingerprint:
        return True
    same_model = profile.device_name.strip() == device.name.strip()
    detail = (f"driver {profile.driver_version} (this one has {device.driver_version})" if same_model
              else f"device {profile.device_name!r}")
    warnings.warn(f"ignoring profile {source}: it was made for {detail}, fingerprint "
                  f"{profile.device_fingerprint}, not this device's {device.fingerprint}; re-tune with "
                  f"`autogemm tune`", ProfileWarning, stacklevel=4)
    return False
