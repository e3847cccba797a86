"""The CUDA path's first layer: NVRTC compiles CUDA C++ for sm_90a on any machine (no GPU needed), and
refuses what the architecture lacks with ptxas's log; an NVIDIA GPU's OpenCL device is matched to its
CUDA device, and any other device has OpenCL alone."""

from __future__ import annotations

import pytest

from autogemm.errors import BuildError
from autogemm.runtime.backend import backends
from autogemm.runtime.cuda import compile_cuda, cuda_devices, cuda_missing

FENCED = r'''
extern "C" __global__ void fenced(float* out) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    out[threadIdx.x] = 2.0f * threadIdx.x;
}
'''


@pytest.fixture
def nvrtc():
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")


def test_a_hopper_kernel_compiles_to_machine_code(nvrtc):
    cubin = compile_cuda(FENCED, "fenced")
    assert cubin.arch == "sm_90a" and cubin.image[:4] == b"\x7fELF" and len(cubin.image) > 500


def test_an_instruction_the_architecture_lacks_fails_with_the_compilers_log(nvrtc):
    with pytest.raises(BuildError, match=r"(?s)fenced for sm_80:.*wgmma"):
        compile_cuda(FENCED, "fenced", arch="sm_80")
    with pytest.raises(BuildError, match=r"broken.cu\(2\)"):
        compile_cuda('extern "C" __global__ void k() {\n  not C++;\n}\n', "broken")


def test_devices_without_a_cuda_twin_have_opencl_alone(device):
    if device.is_nvidia:
        assert backends(device)[0] == "opencl"
        return
    assert device.pci_location is None and backends(device) == ("opencl",)


@pytest.mark.gpu
@pytest.mark.cuda
def test_an_nvidia_gpu_is_one_device_with_two_backends(device):
    if not device.is_nvidia or cuda_missing():
        pytest.skip("an NVIDIA GPU with the CUDA bindings")
    assert device.pci_location in {d.pci for d in cuda_devices()}
    assert backends(device) == ("opencl", "cuda")


def test_a_failed_driver_call_is_a_device_error_naming_its_status(nvrtc):
    from cuda.bindings import driver

    from autogemm.errors import DeviceError
    from autogemm.runtime.cuda.context import checked

    assert checked((driver.CUresult.CUDA_SUCCESS, 7)) == 7
    with pytest.raises(DeviceError, match="CUDA_ERROR_INVALID_VALUE"):
        checked((driver.CUresult.CUDA_ERROR_INVALID_VALUE,))


SCALED = r'''
extern "C" __global__ void scaled(float* y, const float* x, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}
'''


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_kernel_compiled_by_nvrtc_runs_on_the_cuda_device_and_is_timed(device):
    import ctypes
    import time

    import numpy as np

    from autogemm.runtime.cuda import CudaContext
    from autogemm.runtime.cuda.context import HOLD_SECONDS
    from autogemm.runtime.cuda.driver import cuda_device_of

    twin = cuda_device_of(device) if not cuda_missing() else None
    if twin is None:
        pytest.skip("an NVIDIA GPU with the CUDA bindings")
    ctx = CudaContext(twin)
    function = ctx.function(compile_cuda(SCALED, "scaled", arch=twin.arch), "scaled")
    n = 1000
    x, y = np.random.default_rng(1).random(n, np.float32), np.ones(n, np.float32)
    dx, dy = ctx.allocate(x.nbytes), ctx.allocate(y.nbytes)
    ctx.upload(dx, x)
    ctx.upload(dy, y)
    args = [(dy, None), (dx, None), (2.0, ctypes.c_float), (n, ctypes.c_int)]
    seconds = ctx.seconds(lambda: ctx.launch(function, (4,), (256,), args))
    got = np.empty_like(y)
    ctx.download(got, dy)
    assert np.allclose(got, 2.0 * x + 1.0) and 0 < seconds < 1
    # the host's time to enqueue is not the kernel's: a pause of 0.4 HOLD_SECONDS before the launch
    # would read as at least that much from an idle stream (taken again where a loaded host slept
    # past the hold, which no hold covers)
    pause, slept = 0.4 * HOLD_SECONDS, []

    def paused() -> None:
        begin = time.perf_counter()
        time.sleep(pause)
        slept.append(time.perf_counter() - begin)
        ctx.launch(function, (4,), (256,), args)

    for _ in range(5):
        held = ctx.seconds(paused)
        if slept[-1] < 0.8 * HOLD_SECONDS:
            break
    assert 0 < held < pause / 2
    dx.release()
    dy.release()
