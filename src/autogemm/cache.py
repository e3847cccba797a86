"""Where autogemm keeps what it learns about devices: profiles and tuning checkpoints."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

#: Overrides the cache directory (tests use it; so may a user with a shared profile directory).
CACHE_ENV = "AUTOGEMM_CACHE_DIR"


def cache_dir() -> Path:
    """The root of autogemm's cache: ``$AUTOGEMM_CACHE_DIR`` or the user's cache directory."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) if root else Path(platformdirs.user_cache_dir("autogemm"))


def cache_subdir(name: str) -> Path:
    """A subdirectory of the cache, created on demand."""
    path = cache_dir() / name
    path.mkdir(parents=True, exist_ok=True)
    return path
