"""The cpu family: one work-item a work-group, a block of C in named vector accumulators. It runs here
(PoCL's CPU) through plans like any family, exact against float64 for every dtype, both layouts, guarded
and padded edges, K slices and stream-K; it refuses GPUs and blocks whose accumulators would not fit a
core's vector registers; its space is a CPU's alone."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
from gemm_check import run_and_check

from autogemm.codelets.cpu import CpuParams
from autogemm.codelets.cpu.check import REGISTER_BYTES
from autogemm.codelets.cpu.space import space
from autogemm.codelets.registry import SpaceFacts, check, params_from_dict, render
from autogemm.codelets.stream_k import STREAM_K
from autogemm.dtypes import DTYPES
from autogemm.errors import ConfigError

SMALL = CpuParams(layout="NN", tile_rows=2, vectors=2, vector_width=2, unroll=2, mac="mul_add")


@pytest.mark.parametrize("letter", "sdcz")
@pytest.mark.parametrize("layout,ta,tb", [("NN", "N", "N"), ("TN", "T", "N"), ("TN", "C", "N"), ("NN", "N", "T")])
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_the_kernel_is_exact_for_every_dtype_layout_and_edge(ctx, letter, layout, ta, tb, edge):
    params = dataclasses.replace(SMALL, layout=layout)
    rng = np.random.default_rng(2)
    for m, n, k, alpha, beta in ((37, 29, 21, 1.0, 0.0), (16, 32, 48, -0.5, 2.0)):
        run_and_check(ctx, params, DTYPES[letter], m, n, k, ta, tb, alpha, beta, edge, rng, extra_ld=2, offset=3)


@pytest.mark.parametrize("split", [3, STREAM_K])
def test_k_slices_and_stream_k_work_for_the_family_too(ctx, split):
    params = CpuParams(tile_rows=4, vectors=1, vector_width=8, unroll=4)
    run_and_check(ctx, params, DTYPES["s"], 20, 33, 300, "T", "N", 1.5, 0.0, "auto", np.random.default_rng(3),
                  split_k=split)


@pytest.mark.parametrize("letter", "sdcz")
def test_the_default_fits_every_dtype_and_is_exact_where_its_block_is_larger_than_c(ctx, letter):
    from autogemm.codelets.cpu import FAMILY

    params = FAMILY.default(DTYPES[letter])
    assert params.vector_width == {"s": 16, "d": 8, "c": 8, "z": 4}[letter]
    assert check(params, ctx.device, letter) is None
    run_and_check(ctx, params, DTYPES[letter], 5, 3, 70, "N", "T", 1.0, 1.0, "guard", np.random.default_rng(4))


def test_the_kernel_names_its_accumulators_and_reads_a_rows_of_b_as_vectors():
    source = render(CpuParams(tile_rows=2, vectors=2, vector_width=16), "s").source
    assert "#define TILE_ROWS 2" in source and "reqd_work_group_size(1, 1, 1)" in source
    assert "elems16 acc_1_1 = (elems16)(0);" in source and "acc_1_1 = mac(acc_1_1, a, b_1);" in source
    assert "load_16(B, ldb, K, N, k, col0 + 1 * VW)" in source and "load_1(A, lda, K, M, k, row0 + 1)" in source
    assert "__local" not in source and "barrier" not in source


def test_configurations_round_trip_and_forged_ones_fail():
    data = json.loads(json.dumps(SMALL.to_dict()))
    assert data["family"] == "cpu" and params_from_dict(data) == SMALL
    for bad, words in (({**data, "tile_rows": 5}, "tile_rows=5"), ({**data, "vector_width": 32}, "vector_width=32"),
                       ({**data, "extra": 1}, "unknown cpu parameter")):
        with pytest.raises(ConfigError, match=words):
            params_from_dict(bad)


def test_check_refuses_gpus_blocks_over_the_registers_and_wide_complex_vectors(device):
    assert check(CpuParams(), device, "s") is None
    gpu = SimpleNamespace(**{**vars(device), "is_gpu": True}) if not device.is_gpu else device
    assert "CPU devices" in check(CpuParams(), gpu, "s")
    assert check(CpuParams(tile_rows=16, vectors=4, vector_width=16), device, "s") == (
        f"its accumulators take {16 * 64 * 4} bytes of registers, over the {REGISTER_BYTES} a core has for them")
    assert "at most 8" in check(CpuParams(tile_rows=1, vectors=1, vector_width=16), device, "c")


def test_the_space_is_a_cpus_and_holds_only_what_check_allows(device):
    found = space(SpaceFacts(device, DTYPES["s"]))
    configs = [found.config(point) for point in found.points()]
    assert configs and CpuParams() in configs and all(check(c, device, "s") is None for c in configs)
    gpu = SimpleNamespace(is_gpu=True)
    assert space(SpaceFacts(gpu, DTYPES["s"])) is None


@pytest.mark.parametrize("letter", ["s", "d", "c", "z", "h"])
def test_a_cpu_of_wide_vectors_defaults_to_the_family_and_others_to_simt(ctx, device, letter):
    """A CPU whose driver says 16 floats a native vector (AVX-512's) takes the cpu family's class default,
    exact on a ragged product of every dtype; one of narrower vectors, or whose driver cannot be asked,
    keeps the simt one (the cpu family's blocks would not fit its registers); a GPU never takes it."""
    from autogemm.blas import default_params
    from autogemm.codelets.simt import SimtParams

    dt = DTYPES[letter]
    chosen = default_params(device, dt)
    wide = not device.is_gpu and device.cl_device.native_vector_width_float >= 16
    assert isinstance(chosen, CpuParams if wide else SimtParams)
    run_and_check(ctx, chosen, dt, 37, 29, 45, "N", "T", 1.5, 0.5, "guard", np.random.default_rng(3))
    narrow = SimpleNamespace(native_vector_width_float=8)
    for cl_device in (narrow, None):
        assert isinstance(default_params(dataclasses.replace(device, cl_device=cl_device), dt), SimtParams)
