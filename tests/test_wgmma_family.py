"""The sm_90a family: every configuration (f16, bf16, tf32) renders a kernel that names its parameters
and that NVRTC compiles for sm_90a without spilling (CI, no GPU needed); malformed ones are refused; on an
H100 the kernel's products agree with float64, over more tiles of K than stages (every barrier goes
through both parities) and with blocks that each compute several blocks of C in turn."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from autogemm.codelets.wgmma import WgmmaParams, render
from autogemm.codelets.wgmma.params import BLOCK_N, CONSUMERS, GROUPS, OPERANDS, STAGES
from autogemm.runtime.cuda import compile_cuda, cuda_missing

# every tile shape and depth in the middle group, and every group of one of them
CONFIGS = [c for c in (WgmmaParams(*point) for point in itertools.product(OPERANDS, BLOCK_N, CONSUMERS, STAGES))
           if c.malformed() is None] + [WgmmaParams(group=group) for group in GROUPS if group != WgmmaParams.group]


def test_malformed_configurations_are_refused():
    assert len(CONFIGS) == 83                   # 5 and 6 stages of 128 x 256 tiles: over shared memory
    assert "shared memory of a block" in WgmmaParams("f16", 256, 2, 5).malformed()
    assert WgmmaParams("tf32", 256, 2, 4).malformed() is None and WgmmaParams("tf32").block_k == 32
    assert "stages" in WgmmaParams(stages=1).malformed()
    assert "operand" in WgmmaParams("f32").malformed()
    assert "block_n" in WgmmaParams(block_n=96).malformed()
    assert "consumers" in WgmmaParams(consumers=3).malformed()
    assert "group" in WgmmaParams(group=4).malformed()


@pytest.mark.parametrize("params", CONFIGS, ids=[c.describe() for c in CONFIGS])
def test_every_configuration_compiles_for_sm_90a_without_spilling(params):
    why = cuda_missing()
    if why:
        pytest.skip(f"NVRTC is not here: {why}")
    rendered = render(params)
    assert f"#define BLOCK_N {params.block_n}" in rendered.source and rendered.name in rendered.source
    cubin = compile_cuda(rendered.source, rendered.name, options=["--ptxas-options=-v"])
    assert "0 bytes spill stores" in cubin.log and "warning" not in cubin.log
    assert rendered.grid(4 * params.block_m, 3 * params.block_n, 132) == (12,)
    assert rendered.grid(40 * params.block_m, 30 * params.block_n, 132) == (132,)
    assert rendered.block == (128 * (1 + params.consumers),)


@pytest.mark.gpu
@pytest.mark.parametrize("params", CONFIGS, ids=[c.describe() for c in CONFIGS])
def test_the_kernel_agrees_with_float64_on_hopper(device, params):
    import ctypes

    import ml_dtypes

    from autogemm.runtime.cuda import CudaContext
    from autogemm.runtime.cuda.driver import cuda_device_of

    twin = None if cuda_missing() else cuda_device_of(device)
    if twin is None or twin.capability != (9, 0):
        pytest.skip("an sm_90 GPU with the CUDA bindings")
    numpy_type = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32}[params.operand]
    m, n, k = 2 * params.block_m, 3 * params.block_n, (2 * params.stages + 1) * params.block_k
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (m, k)).astype(numpy_type)
    b = rng.uniform(-1, 1, (n, k)).astype(numpy_type)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    ctx = CudaContext(twin)
    rendered = render(params)
    function = ctx.function(compile_cuda(rendered.source, rendered.name), rendered.name)
    da, db, dc = ctx.allocate(a.nbytes), ctx.allocate(b.nbytes), ctx.allocate(m * n * 4)
    bits = np.uint32 if params.operand == "tf32" else np.uint16
    ctx.upload(da, a.view(bits))
    ctx.upload(db, b.view(bits))
    ctx.upload(dc, np.full((m, n), np.nan, np.float32))       # an unwritten element fails
    (box_a, box_b) = rendered.tensor_boxes
    map_a = ctx.tensor_map(da, (m, k), rendered.tensor_type, box_a)
    map_b = ctx.tensor_map(db, (n, k), rendered.tensor_type, box_b)
    ctx.launch(function, rendered.grid(m, n, 4), rendered.block,         # 4 blocks: some take two of C
               [(map_a, None), (map_b, None), (dc, None), (m, ctypes.c_int), (n, ctypes.c_int), (k, ctypes.c_int)],
               rendered.shared_bytes)
    got = np.empty((m, n), np.float32)
    ctx.download(got, dc)
    for memory in (da, db, dc):
        memory.release()
    assert np.isfinite(got).all()
    # 16-bit inputs are exact, only float32 sums err; tf32 drops 13 bits of each float32 input
    scale = 5e-4 * np.sqrt(k) if params.operand == "tf32" else 1e-5 * k
    assert np.abs(got - want).max() <= scale * np.abs(want).max() + 1e-3
