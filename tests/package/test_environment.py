"""Hostile or mistaken environment variables (issue 8) are refused with a clear error before anything is
read or written: the cache directory must be an absolute, printable path; the device specification a
short, printable one that names a device."""

from __future__ import annotations

import os

import numpy as np
import pytest

import autogemm


@pytest.mark.parametrize("value, message", [("relative/cache", "absolute path"), ("/tmp/a\tb", "printable"),
                                            ("/tmp/" + "x" * 5000, "printable"), ("/tmp/new\nline", "printable")])
def test_a_bad_cache_directory_is_refused_before_anything_is_written(monkeypatch, tmp_path, value, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", value)
    a = np.ones((3, 4), np.float32)
    with pytest.raises(autogemm.ArgumentError, match=message):
        autogemm.gemm(a, a.T.copy())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["no such device", "x\n" * 3, "9" * 300, "99:99"])
def test_a_bad_device_specification_is_refused(monkeypatch, value):
    monkeypatch.setenv("AUTOGEMM_DEVICE", value)
    a = np.ones((3, 4), np.float32)
    with pytest.raises(autogemm.DeviceError):
        autogemm.gemm(a, a.T.copy())


def test_what_autogemm_writes_is_writable_by_the_user_alone_whatever_the_umask(monkeypatch, tmp_path, device):
    """Profiles, checkpoints and the cache's directories are readable by all (profiles are shared) and
    writable by the user alone, even under a umask of 0: no one else can plant or change a file there."""
    from autogemm.blas import default_params
    from autogemm.dtypes import DTYPES
    from autogemm.profiles import save
    from autogemm.tuning.checkpoint import Checkpoint
    from autogemm.tuning.records import Outcome, Record
    from autogemm.tuning.tuner import new_profile

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path / "deep" / "cache"))
    old = os.umask(0)
    try:
        Checkpoint.for_problem(device, DTYPES["s"], (64, 64, 64)).add(
            Record(default_params(device, DTYPES["s"]), Outcome.WRONG, message="for the test"))
        save(new_profile(device, "test"))
    finally:
        os.umask(old)
    written = [p for p in (tmp_path / "deep").rglob("*") if not p.name.endswith(".lock")]
    assert {p.suffix for p in written if p.is_file()} >= {".json", ".jsonl"}
    modes = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in written}
    assert all(mode == oct(0o755 if (tmp_path / p).is_dir() else 0o644) for p, mode in modes.items()), modes
