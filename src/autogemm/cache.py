"""Where autogemm keeps what it learns about devices: profiles and tuning checkpoints."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from functools import lru_cache

import platformdirs

from .errors import ArgumentError

#: Overrides the cache directory (tests use it; so may a user with a shared profile directory).
CACHE_ENV = "AUTOGEMM_CACHE_DIR"


def cache_dir() -> Path:
    """The root of autogemm's cache: ``$AUTOGEMM_CACHE_DIR`` or the user's cache directory."""
    return _root(os.environ.get(CACHE_ENV))


@lru_cache(maxsize=8)
def _root(override: str | None) -> Path:
    """The cache root for a value of ``$AUTOGEMM_CACHE_DIR`` (made once: every call looks up its profile).
    The value must be an absolute path of printable characters: a relative one would move with the
    working directory."""
    if not override:
        return Path(platformdirs.user_cache_dir("autogemm"))
    if len(override) > 4096 or not override.isprintable():
        raise ArgumentError(f"{CACHE_ENV} must be a path of printable characters")
    if not os.path.isabs(override):
        raise ArgumentError(f"{CACHE_ENV} must be an absolute path, not {override!r}")
    return Path(override)


def cache_subdir(name: str) -> Path:
    """A subdirectory of the cache, created on demand."""
    path = cache_dir() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomically(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` so that a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, mode)     # mkstemp makes files private
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
