"""The CUDA path's first layer: NVRTC compiles CUDA C++ for sm_90a on any machine (no GPU needed), and
refuses what the architecture lacks with ptxas's log; an NVIDIA GPU's OpenCL device is matched to its
CUDA device, and any other device has OpenCL alone."""

from __future__ import annotations

import pytest

from autogemm.errors import BuildError
from autogemm.runtime.cuda import backends, compile_cuda, cuda_devices, cuda_missing

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
def test_an_nvidia_gpu_is_one_device_with_two_backends(device):
    if not device.is_nvidia or cuda_missing():
        pytest.skip("an NVIDIA GPU with the CUDA bindings")
    assert device.pci_location in {d.pci for d in cuda_devices()}
    assert backends(device) == ("opencl", "cuda")
