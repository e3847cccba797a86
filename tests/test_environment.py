"""Hostile or mistaken environment variables (issue 8) are refused with a clear error before anything is
read or written: the cache directory must be an absolute, printable path; the device specification a
short, printable one that names a device."""

from __future__ import annotations

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
