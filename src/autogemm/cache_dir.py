"""The cache directory: where autogemm keeps what it learns about devices (profiles, tuning checkpoints,
the FMA benchmark's and the instruction probe's findings), written safely by several processes."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from functools import lru_cache
from pathlib import Path

import platformdirs
from filelock import FileLock

from .errors import ArgumentError

#: Overrides the cache directory (tests use it; so may a user with a shared profile directory).
CACHE_ENV = "AUTOGEMM_CACHE_DIR"
#: Modes of what autogemm writes, whatever the umask: readable by all (profiles are meant to be shared),
#: writable by the user alone (no one else can plant a file in them or change one).
FILE_MODE, DIRECTORY_MODE = 0o644, 0o755


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
    """A subdirectory of the cache, created on demand (and the cache with it)."""
    path = cache_dir() / name
    make_directory(path)
    return path


def make_directory(path: Path) -> None:
    """``path`` and the directories above it that are missing, each ``DIRECTORY_MODE``."""
    if not path.is_dir():
        make_directory(path.parent)
        path.mkdir(mode=DIRECTORY_MODE, exist_ok=True)
        os.chmod(path, DIRECTORY_MODE)      # mkdir's mode passes through the umask


def _regular(path: Path | str, flags: int, mode: int = FILE_MODE) -> int:
    """A descriptor of ``path`` opened with ``flags``, never through a symbolic link nor blocking on a
    FIFO; ``OSError`` where it is not a regular file (a FIFO would hang every reader, a planted link
    would lead a write outside the cache)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path | str) -> bytes:
    """The bytes of the regular file ``path`` (see ``_regular``)."""
    with os.fdopen(_regular(path, os.O_RDONLY), "rb") as f:
        return f.read()


def open_for_appending(path: Path):
    """``path`` opened to append text, created with ``FILE_MODE`` if it is not there (a regular file,
    not through a link: see ``_regular``)."""
    fd = _regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    if os.fstat(fd).st_size == 0:
        os.fchmod(fd, FILE_MODE)            # a new file: its mode passed through the umask
    return os.fdopen(fd, "a", encoding="utf-8")


def file_lock(path: Path | str) -> CacheLock:
    """The lock beside ``path`` (``path`` + '.lock') that writers of one file in the cache take in turn."""
    return CacheLock(Path(str(path) + ".lock"))


class CacheLock:
    """A ``filelock.FileLock`` at ``path`` that refuses, each time it is taken, a link planted there
    (``OSError`` naming the fix): followed, it would lead the lock file outside the cache, or loop. A
    lock kept for a long run (a checkpoint's) is taken many times."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(str(path))

    def __enter__(self) -> CacheLock:
        if self.path.is_symlink():
            raise OSError(errno.ELOOP, f"a link lies where autogemm keeps a lock ({os.readlink(self.path)!r}); "
                          f"autogemm never follows links in its cache: remove it", str(self.path))
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def write_atomically(path: Path, text: str, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``text`` so that a reader sees the old file or the new one, never a part."""
    make_directory(path.parent)
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
