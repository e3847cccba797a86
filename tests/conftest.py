"""Shared fixtures: the device tests run on (PoCL's CPU device where there is no GPU)."""

from __future__ import annotations

import os
import tempfile

import pytest

# Profiles and checkpoints of the person running the tests must not change what the tests see.
os.environ["AUTOGEMM_CACHE_DIR"] = tempfile.mkdtemp(prefix="autogemm-test-cache-")

from limits import set_thresholds

import autogemm
from autogemm.profiles import store
from autogemm.runtime import context_for


@pytest.fixture(autouse=True)
def products_on_the_device(monkeypatch):
    """Products from numpy to numpy run on the device under test, as the tests mean them to, not on the
    host's BLAS where its class's defaults would send them (tests of that route set its bound)."""
    set_thresholds(monkeypatch, host_multiply_adds=())


@pytest.fixture(scope="session")
def device() -> autogemm.Device:
    return autogemm.default_device()


@pytest.fixture(scope="session")
def ctx(device):
    return context_for(device)


@pytest.fixture
def hopper(device):
    """The CUDA device that is the test device, where it is a Hopper GPU the CUDA bindings reach; else the
    test is skipped."""
    from autogemm.runtime.cuda import cuda_missing
    from autogemm.runtime.cuda.driver import cuda_device_of

    twin = None if cuda_missing() else cuda_device_of(device)
    if twin is None or twin.capability != (9, 0):
        pytest.skip("an sm_90 GPU with the CUDA bindings")
    return twin


@pytest.fixture
def discrete(ctx, monkeypatch):
    """The test device run as a GPU runs numpy operands, where PoCL would share the host's memory: they
    cross through page-locked memory (a pool of the test's own) from the first byte, and a product of two
    blocks of 16 rows or more is cut in row blocks. Returns the context."""
    from autogemm.shares import staging

    monkeypatch.setattr(type(ctx.device), "shares_host_memory", property(lambda self: False))
    monkeypatch.setattr(staging, "_page_locked", type(staging._page_locked)())
    set_thresholds(monkeypatch, pinned_min_bytes=0, pipelined_elements=1, block_rows=16)
    return ctx


@pytest.fixture(params=["shared", "discrete"])
def host_memory(request) -> str:
    """Runs a test of numpy operands twice: on the test device as it is, and ``discrete``."""
    if request.param == "discrete":
        request.getfixturevalue("discrete")
    return request.param


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of the test's own: the profiles it saves are seen by it alone, and no bundled one
    (the H100's would be this device's on the GPU machine, or a related one's on another GPU)."""
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(store, "bundled", lambda: [])
    store.forget()
    yield tmp_path
    store.forget()


def pytest_collection_modifyitems(config, items):
    if any(d.is_gpu for d in autogemm.devices()):
        return
    skip = pytest.mark.skip(reason="no GPU OpenCL device here")
    for item in items:
        if "gpu" in item.keywords or "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def fresh_routes():
    """Every test resolves its calls afresh: a route kept by an earlier test may rest on facts that test
    patched (a device made discrete, a faked CUDA target)."""
    from autogemm.engine.resolved import ROUTES
    from autogemm.engine.routes.host_blas import PLAIN_ROUTES

    ROUTES.clear()
    PLAIN_ROUTES.clear()
