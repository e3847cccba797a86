"""The nvidia_mma family: warps multiply through mma.sync. The emulated spelling (the instruction done in
local memory with the same fragment layout) runs here through plans like any family, so the kernel around
the instruction is checked on any device; the PTX spelling runs wherever the device is an NVIDIA GPU that
has the instruction, and everywhere else ``check`` must refuse it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from gemm_check import run_and_check

from autogemm.blas import GemmProblem, Op
from autogemm.blas.plans import gemm_plan
from autogemm.codelets.nvidia_mma import MmaParams, ptx_problem
from autogemm.codelets.nvidia_mma.render import mn_swizzle, swizzle
from autogemm.codelets.registry import check, params_from_dict, render
from autogemm.codelets.stream_k import STREAM_K
from autogemm.dtypes import DTYPES
from autogemm.errors import ConfigError
from autogemm.tuning.evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess

SMALL = MmaParams(layout="NT", warps_m=2, warps_n=1, tiles_m=1, tiles_n=2, tile_k=8, stages=2, vector_width=2,
                  mma="local")


def _for(letter: str, params: MmaParams) -> MmaParams:
    """Complex elements are 16 bytes: one per load."""
    return dataclasses.replace(params, vector_width=1) if letter == "z" else params


LAYOUTS = [("NN", "N", "N"), ("NT", "N", "T"), ("TN", "C", "N"), ("TT", "T", "C")]


# Complex emulations build slowly on PoCL: each layout once for z, the edges alternating
@pytest.mark.parametrize("letter,layout,ta,tb,edge",
                         [("d", *layout, edge) for layout in LAYOUTS for edge in ("guard", "pad")]
                         + [("z", *layout, edge) for layout, edge in zip(LAYOUTS, ["guard", "pad"] * 2)])
def test_the_emulated_spelling_is_exact(ctx, letter, layout, ta, tb, edge):
    params = _for(letter, dataclasses.replace(SMALL, layout=layout, stages=1 if edge == "pad" else 2))
    _check_small_problems(ctx, params, letter, ta, tb, edge)


# m16n8k16 is left to the GPU test: PoCL 3.0 crashes running its emulation (it builds)
@pytest.mark.parametrize("letter", "dz")
@pytest.mark.parametrize("shape,tile_k", [("m16n8k4", 8), ("m16n8k8", 16)])
def test_the_larger_shapes_emulated_are_exact(ctx, letter, shape, tile_k):
    params = _for(letter, dataclasses.replace(SMALL, layout="NN", shape=shape, tile_k=tile_k, warps_m=1, warps_n=2))
    _check_small_problems(ctx, params, letter, "N", "T", "guard")


# the skinny space's blocks: one warp of one instruction (16 x 8), a column or a row of 8 of them
@pytest.mark.parametrize("warps,tiles", [((1, 1), (1, 1)), ((1, 1), (8, 1)), ((1, 1), (1, 8)), ((4, 1), (1, 1))])
def test_skinny_blocks_are_exact(ctx, warps, tiles):
    params = dataclasses.replace(SMALL, warps_m=warps[0], warps_n=warps[1], tiles_m=tiles[0], tiles_n=tiles[1])
    rng = np.random.default_rng(5)
    for m, n, k in ((9, 130, 37), (130, 9, 20)):
        run_and_check(ctx, params, DTYPES["d"], m, n, k, "N", "T", 1.5, 0.0, "guard", rng, extra_ld=1, offset=2)


def test_smaller_blocks_halve_the_warps_tiles_then_the_warps_and_compute_right(ctx):
    large = dataclasses.replace(SMALL, shape="m16n8k8", warps_m=2, warps_n=2, tiles_m=2, tiles_n=4)
    smaller = large.smaller_blocks()
    assert [(c.block_rows, c.block_cols, c.warps_m, c.warps_n, c.tiles_m, c.tiles_n) for c in smaller] == \
        [(64, 32, 2, 2, 2, 2), (32, 32, 1, 2, 2, 2), (16, 16, 1, 1, 1, 2)]
    rng = np.random.default_rng(6)
    for params in smaller:
        run_and_check(ctx, _for("d", params), DTYPES["d"], 45, 37, 29, "N", "T", 1.5, 0.5, "guard", rng)
    # one warp of one instruction tile has no smaller block
    assert dataclasses.replace(large, warps_m=1, warps_n=1, tiles_m=1, tiles_n=1).smaller_blocks() == ()


def _check_small_problems(ctx, params, letter, ta, tb, edge):
    rng = np.random.default_rng(4)
    for m, n, k, alpha, beta in ((37, 29, 21, 1.0, 0.0), (16, 32, 40, -0.5, 2.0)):
        run_and_check(ctx, params, DTYPES[letter], m, n, k, ta, tb, alpha, beta, edge, rng, extra_ld=2, offset=3)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_asynchronous_copies_run_the_pipeline_right(ctx, stages, edge):
    params = dataclasses.replace(SMALL, copy="async", stages=stages)
    _check_small_problems(ctx, params, "d", "N", "T", edge)
    run_and_check(ctx, params, DTYPES["d"], 33, 40, 81, "T", "N", 1.0, 0.5, edge, np.random.default_rng(6), offset=1)


@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
@pytest.mark.parametrize("stages,edge,sets", [(2, "pad", 1), (3, "guard", 1), (3, "guard", 2)])
def test_asynchronous_copies_stage_float64_as_it_lies(ctx, layout, stages, edge, sets):
    """A float64 operand whose rows or columns are consecutive (A in T, B in N) is copied as it lies, its
    stage rows of k padded: every layout's product is right at any size, edge, offset and leading
    dimension, the pipeline two or three stages deep, one fragment set or two."""
    params = dataclasses.replace(SMALL, layout=layout, copy="async", stages=stages, tile_k=16, fragment_sets=sets)
    assert check(params, ctx.device, "d") is None
    source = render(params, "d", guarded=edge == "guard").source
    assert ("A_AT" in source) == (layout[0] == "T") and ("B_AT" in source) == (layout[1] == "N")
    _check_small_problems(ctx, params, "d", *layout, edge)
    run_and_check(ctx, params, DTYPES["d"], 33, 40, 81, *layout, 1.0, 0.5, edge, np.random.default_rng(6), offset=1)


@pytest.mark.parametrize("key,shape,vw,layout,split", [
    ("d", "m16n8k16", 1, "TN", 3), ("d", "m16n8k8", 2, "TT", STREAM_K), ("d", "m16n8k4", 2, "NN", None),
    ("s.tf32", "m16n8k8", 4, "NN", 3), ("s.3xtf32", "m16n8k4", 2, "TN", STREAM_K),
    ("s.3xtf32", "m16n8k8", 1, "TT", None)])
def test_staged_as_it_lies_takes_every_instruction_split_and_batch(ctx, key, shape, vw, layout, split):
    """Wider blocks (rows of 32 and 64 elements: other swizzles), float64's and TF32's instructions (a
    lane's 2 or 4 k), 3xTF32's split operands, one to four elements a copy, a K split added up in the
    kernel and stream-K, and a strided batch."""
    dt = DTYPES[key]
    params = MmaParams(layout=layout, shape=shape, warps_m=2, warps_n=2, tiles_m=1, tiles_n=2, tile_k=16, stages=3,
                       vector_width=vw, mma="local", copy="async")
    assert check(params, ctx.device, dt) is None
    rng = np.random.default_rng(7)
    run_and_check(ctx, params, dt, 45, 70, 301, *layout, 0.5, 1.5, "guard", rng, extra_ld=3, offset=2, split_k=split)
    run_and_check(ctx, params, dt, 64, 64, 96, *layout, 1.0, 0.0, "pad", rng)
    run_and_check(ctx, params, dt, 19, 33, 40, *layout, 1.0, 0.0, "guard", rng, batch=3)


@pytest.mark.parametrize("key,outer", [("d", 16), ("d", 32), ("d", 64), ("d", 128),
                                       ("s.tf32", 32), ("s.tf32", 64), ("s.tf32", 128)])
@pytest.mark.parametrize("lane_k", [2, 4])
def test_a_stage_as_it_lies_is_read_without_bank_conflicts(key, outer, lane_k):
    """``mn_swizzle``: a pass of a warp's fragment reads (a half warp's for 8-byte elements) reads rows of
    k t LANE_K + e, 32 consecutive bytes each, from any instruction tile's rows; the chunk permutation
    puts them in 32 distinct banks. (Rows of 8 or 16 floats, of narrow blocks, share lines: there two
    rows of a pass meet in their banks.)"""
    size = DTYPES[key].real_bytes
    per_chunk, per_pass, words = 16 // size, 128 // size // 4 * 4, size // 4
    variants = mn_swizzle(outer, DTYPES[key])
    for first in range(0, outer, 8):
        for e in range(lane_k):
            for start in range(0, 32, per_pass):
                banks = set()
                for lane in range(start, start + per_pass):
                    g, t = lane // 4, lane % 4
                    k, o = t * lane_k + e, first + g
                    place = k * outer + ((o // per_chunk) ^ (k // lane_k % variants * 2)) * per_chunk + o % per_chunk
                    banks |= {(place * words + w) % 32 for w in range(words)}
                assert len(banks) == 32, (first, e, start)


def test_asynchronous_copies_keep_to_their_rules(device):
    nn = dataclasses.replace(SMALL, copy="async", layout="NN")
    assert nn.dtype_problem(DTYPES["d"]) is None
    assert nn.fitted(DTYPES["s.tf32"]).dtype_problem(DTYPES["s.tf32"]) is None
    assert "layout NT" in nn.fitted(DTYPES["h"]).dtype_problem(DTYPES["h"])
    with pytest.raises(ConfigError, match="stages 2 or 3"):
        params_from_dict({**SMALL.to_dict(), "copy": "async", "stages": 1})
    with pytest.raises(ConfigError, match="stages 1 or 2"):
        params_from_dict({**SMALL.to_dict(), "stages": 3})
    assert "complex" in check(dataclasses.replace(SMALL, copy="async", vector_width=1), device, "z")


@pytest.mark.parametrize("key,vw,layout,split", [("d", 2, "NT", None), ("d", 1, "TN", 3), ("d", 1, "NN", STREAM_K),
                                                  ("d", 2, "TT", None), ("s.tf32", 1, "NT", None)])
def test_copies_take_16_bytes_where_every_row_starts_at_a_16_byte_boundary(ctx, key, vw, layout, split):
    """Where every row of A and B starts at a 16-byte boundary (the leading dimensions and offsets here),
    a kernel's asynchronous copies take 16 bytes whatever its vector width, a guarded kernel's too, a copy
    at an edge (K, M and N odd) taking the elements inside and zeros for the rest: right in every layout,
    a K split and stream-K. An offset off that boundary keeps a guarded kernel's copies to one element."""
    dt = DTYPES[key]
    params = dataclasses.replace(SMALL, layout=layout, copy="async", stages=3, vector_width=vw,
                                 shape="m16n8k8" if key == "s.tf32" else SMALL.shape,
                                 tile_k=16 if key == "s.tf32" else 8)
    assert check(params, ctx.device, dt) is None
    unit = 16 // dt.itemsize
    ta, tb = layout[0], layout[1]
    m, n, k, extra = 37, 45, 81, unit - 1        # (each side one past a multiple of 4: its rows padded to one)
    problem = GemmProblem(dt, m, n, k, Op.from_letter(ta, "a"), Op.from_letter(tb, "b"),
                          lda=(m if ta == "T" else k) + extra, ldb=(k if tb == "T" else n) + extra, ldc=n + extra,
                          offset_a=unit, offset_b=2 * unit, offset_c=1)
    plan = gemm_plan(ctx, problem, params, "guard", split)
    assert plan.aligned and "guarded, 16-byte copies" in " ".join(plan.launches())
    assert not gemm_plan(ctx, dataclasses.replace(problem, offset_a=1), params, "guard", split).aligned
    assert f"#define COPY {unit}" in render(params, dt, guarded=True, aligned=True).source
    assert "#define COPY 1" in render(params, dt, guarded=True).source
    run_and_check(ctx, params, dt, m, n, k, ta, tb, 1.5, 0.5, "guard", np.random.default_rng(8), extra_ld=extra,
                  offset=unit, split_k=split)


def test_whole_products_copy_16_bytes_where_their_rows_allow(ctx):
    """An unguarded kernel of vector width 1 copies 16 bytes where the rows of A and B (packed, or as
    stored) start at 16-byte boundaries; one element where they may not."""
    params = dataclasses.replace(SMALL, copy="async", stages=3, vector_width=1)
    whole = GemmProblem.dense(DTYPES["d"], 64, 64, 64, Op(), Op(True))
    assert not gemm_plan(ctx, whole, params, "pad").guarded and gemm_plan(ctx, whole, params, "pad").aligned
    assert not gemm_plan(ctx, dataclasses.replace(whole, lda=65, ldb=65), params, "pad").aligned
    assert "#define COPY 1" in render(params, "d", guarded=False).source
    run_and_check(ctx, params, DTYPES["d"], 64, 64, 64, "N", "T", 1.0, 0.0, "pad", np.random.default_rng(9), extra_ld=2)


def test_split_k_and_longer_blocks_work_for_the_family_too(ctx):
    params = dataclasses.replace(SMALL, tile_k=16, warps_m=1, warps_n=2, tiles_m=2, tiles_n=1)
    run_and_check(ctx, params, DTYPES["d"], 20, 33, 300, "N", "N", 1.5, 0.0, "auto", np.random.default_rng(3),
                  split_k=3)


@pytest.mark.parametrize("copy,stages,edge", [("registers", 1, "guard"), ("registers", 2, "pad"), ("async", 2, "pad"),
                                               ("async", 3, "guard")])
def test_two_fragment_sets_read_each_chunk_while_the_last_multiplies(ctx, copy, stages, edge):
    params = dataclasses.replace(SMALL, tile_k=16, fragment_sets=2, copy=copy, stages=stages)
    assert params.chunks(DTYPES["d"]) == 2
    _check_small_problems(ctx, params, "d", "N", "T", edge)
    run_and_check(ctx, params, DTYPES["d"], 33, 40, 81, "T", "N", 1.0, 0.5, edge, np.random.default_rng(6), offset=1)


def test_read_width_and_fragment_sets_keep_to_their_rules(device):
    wide = dataclasses.replace(SMALL, read_width=8)
    assert "one double" in check(wide, device, "d")
    odd = dataclasses.replace(SMALL, fragment_sets=2)                  # tile_k 8: one chunk of 8 k
    assert "even number of chunks" in check(odd, device, "d")
    assert check(dataclasses.replace(odd, tile_k=16), device, "d") is None
    assert "read8 prefetch" in dataclasses.replace(SMALL, read_width=8, fragment_sets=2).describe()


def _read_banks(params, dt, chunk, first_row):
    """Per pass of local memory (of a warp's fragment reads of one chunk at rows first_row + g): the banks
    each lane reads, from the byte addresses the swizzle gives (the kernel's AT and lane_chunk)."""
    sw = swizzle(params, dt)
    span = params.lane_k(dt) * dt.real_bytes
    row_bytes = params.tile_k * dt.real_bytes
    if params.loads == "ldmatrix":       # a pass per 8 x 8 matrix: 8 rows at one 16-byte chunk
        return [[{(row * row_bytes + ((2 * chunk + half) ^ sw.xor(row)) * 16) // 4 % 32 + b for b in range(4)}
                 for row in range(first_row + 8 * block, first_row + 8 * block + 8)]
                for block in (0, 1) for half in (0, 1)]
    passes = []
    for piece in range(max(1, span // 16)):          # wider reads go as 16-byte pieces, each its own pass
        width = min(span, 16)
        lanes = {}
        for lane in range(32):
            g, t = lane // 4, lane % 4
            row = first_row + g
            logical = chunk * 4 * span + t * span + piece * 16
            address = row * row_bytes + ((logical // 16) ^ sw.xor(row)) * 16 + logical % 16
            lanes[lane] = {(address + b) // 4 % 32 for b in range(0, width, 4)}
        per_pass = 128 // width
        passes += [[lanes[lane] for lane in range(start, start + per_pass)] for start in range(0, 32, per_pass)]
    return passes


@pytest.mark.parametrize("key", ["h", "s.tf32", "d", "z"])
def test_the_swizzle_keeps_a_warps_fragment_reads_free_of_bank_conflicts(key):
    dt = DTYPES[key]
    cases = 0
    for shape in ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"):
        for tile_k in (8, 16, 32, 64):
            for read_width, loads in ((8, "lanes"), (16, "lanes"), (8, "ldmatrix")):
                params = MmaParams(shape=shape, tile_k=tile_k, read_width=read_width, loads=loads)
                if params.dtype_problem(dt):
                    continue
                sw, row_chunks = swizzle(params, dt), tile_k * dt.real_bytes // 16
                for row in range(16):     # a row's chunks are permuted within the row
                    assert sorted(q ^ sw.xor(row) for q in range(row_chunks)) == list(range(row_chunks))
                for chunk in range(params.chunks(dt)):
                    for first_row in (0, 8, 16):
                        for banks in _read_banks(params, dt, chunk, first_row):
                            assert sum(map(len, banks)) == len(set().union(*banks)), (params.describe(), chunk)
                cases += 1
    assert cases >= 4


#: (lowest, highest) relative error of each precision mode on uniform random data: TF32 must really
#: round (a kernel multiplying in float32 would pass a plain bound), 3xTF32 must recover float32's.
PRECISION_ERRORS = {"tf32": (5e-5, 2e-3), "3xtf32": (0.0, 1e-6)}


# PoCL takes minutes to build emulations with many instructions per block: one tile per warp here
@pytest.mark.parametrize("key,shape", [("s.tf32", "m16n8k4"), ("s.3xtf32", "m16n8k4"), ("s.tf32", "m16n8k8"),
                                       ("s.3xtf32", "m16n8k8"), ("c.tf32", "m16n8k8"), ("c.3xtf32", "m16n8k8")])
def test_the_tf32_modes_round_as_documented(ctx, key, shape):
    dt = DTYPES[key]
    params = dataclasses.replace(SMALL, shape=shape, tile_k=16, warps_m=1, warps_n=2, tiles_n=1, layout="TN",
                                 vector_width=1 if dt.is_complex else 2)
    _check_precision(ctx, params, dt)
    if key == "s.tf32" and shape == "m16n8k8":           # 8-byte reads: one instruction's k, two chunks a block
        _check_precision(ctx, dataclasses.replace(params, read_width=8, fragment_sets=2, layout="NT"), dt)


def _check_precision(ctx, params, dt):
    low, high = PRECISION_ERRORS[dt.precision]
    rng = np.random.default_rng(8)
    for m, n, k, ta, tb, alpha, beta, edge in ((37, 29, 45, "N", "T", 1.0, 0.0, "guard"),
                                               (48, 64, 96, "T", "N", -0.5, 2.0, "pad")):
        err = run_and_check(ctx, params, dt, m, n, k, ta, tb, alpha, beta, edge, rng, extra_ld=2, offset=3)
        assert low <= err < high, f"{dt.routine}: relative error {err:.1e} outside [{low:.0e}, {high:.0e})"


@pytest.mark.parametrize("key", ["z", "c.tf32", "c.3xtf32"])
def test_the_3m_method_makes_a_complex_product_of_three_real_ones(ctx, key):
    dt = DTYPES[key]
    params = dataclasses.replace(SMALL, shape="m16n8k8", tile_k=16, warps_m=1, warps_n=2, tiles_n=1, vector_width=1,
                                 complex_method="3m")
    source = render(dataclasses.replace(params, mma="ptx"), dt).source
    products = 3 if dt.operand_splits == 2 else 1          # 3xTF32: three per real product
    assert source.count("mma(acc_") == 3 * params.steps(dt) * params.chunks(dt) * products
    rng = np.random.default_rng(9)
    high = PRECISION_ERRORS[dt.precision][1] if dt.precision else dt.tolerance
    for m, n, k, ta, tb, alpha, beta in ((37, 29, 21, "N", "C", 1.0, 0.0), (16, 32, 40, "C", "T", -0.5 + 1j, 2.0)):
        err = run_and_check(ctx, params, dt, m, n, k, ta, tb, alpha, beta, "guard", rng, extra_ld=2, offset=3)
        assert err < high
    with pytest.raises(ConfigError, match="is real"):
        render(params, "d")


@pytest.mark.parametrize("letter", "dz")
def test_the_ptx_spelling_renders_the_instruction(letter):
    source = render(dataclasses.replace(_for(letter, SMALL), mma="ptx"), letter).source
    assert "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};" in source
    assert "barrier" not in source.split("__kernel")[0]          # no emulation in the instruction
    assert ("acc_im" in source) == (letter == "z")


def test_check_offers_the_instruction_only_where_it_runs(device):
    ptx = dataclasses.replace(SMALL, mma="ptx")
    assert (check(ptx, device, "d") is None) == (ptx_problem(device, "f64", "m8n8k4") is None)
    if not device.is_nvidia:
        assert "NVIDIA" in check(ptx, device, "d")
    nvidia = dataclasses.replace(device, vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA", fp64=True,
                                 vendor_facts={"compute_capability": "7.5"})
    assert "compute capability 8.0" in check(ptx, nvidia, "d")
    ampere = dataclasses.replace(nvidia, vendor_facts={"compute_capability": "8.0"})
    assert check(ptx, ampere, "d") is None
    assert "compute capability 9.0" in check(dataclasses.replace(ptx, shape="m16n8k8"), ampere, "d")
    tf32 = dataclasses.replace(ptx, shape="m16n8k8", tile_k=16)
    assert check(tf32, ampere, "s.tf32") is None and check(tf32, ampere, "c.3xtf32") is None
    assert "no matrix instruction" in check(tf32, ampere, "s")          # float32 itself: exact kernels only
    assert "no m8n8k4 shape for tf32" in check(ptx, ampere, "s.tf32")
    assert "multiple of 16" in check(dataclasses.replace(tf32, tile_k=8), ampere, "s.tf32")
    tight = dataclasses.replace(ampere, local_mem_bytes=2048)
    assert "local memory" in check(ptx, tight, "d")


def test_configurations_round_trip_and_forged_ones_fail():
    data = json.loads(json.dumps(SMALL.to_dict()))
    assert data["family"] == "nvidia_mma" and params_from_dict(data) == SMALL
    for bad, words in (({**data, "mma": "asm"}, "mma="), ({**data, "shape": "m64n8k4"}, "shape="),
                       ({**data, "tile_k": 12}, "tile_k="), ({**data, "extra": 1}, "unknown nvidia_mma parameter"),
                       ({**data, "build_options": ["-DX=1"]}, "not one autogemm allows")):
        with pytest.raises(ConfigError, match=words):
            params_from_dict(bad)


@pytest.mark.gpu
@pytest.mark.parametrize("letter", "dz")
@pytest.mark.parametrize("shape", ["m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"])
def test_the_tensor_cores_are_exact_where_offered(ctx, device, letter, shape):
    params = dataclasses.replace(_for(letter, SMALL), mma="ptx", warps_n=2, tiles_m=2, shape=shape, tile_k=16)
    if check(params, device, letter) is not None:
        pytest.skip(f"{device.name.strip()}: {check(params, device, letter)}")
    rng = np.random.default_rng(5)
    for edge in ("guard", "pad"):
        for layout in ("NN", "TT"):
            run_and_check(ctx, dataclasses.replace(params, layout=layout), DTYPES[letter], 45, 70, 50, "N", "T",
                          1.0, 0.5, edge, rng, extra_ld=1, offset=1)
            run_and_check(ctx, dataclasses.replace(params, layout=layout), DTYPES[letter], 130, 67, 97, "T", "N",
                          -2.0, 0.0, edge, rng)
        sets = 2 if params.chunks(DTYPES[letter]) % 2 == 0 else 1       # m16n8k16 reads the block at once
        run_and_check(ctx, dataclasses.replace(params, fragment_sets=sets), DTYPES[letter], 130, 67, 97, "N", "T",
                      1.0, 0.5, edge, rng, offset=1)
        if letter == "d":
            for stages in (2, 3):
                copied = dataclasses.replace(params, copy="async", stages=stages, fragment_sets=sets)
                if check(copied, device, letter) is not None:      # three stages of 64 rows need too much
                    continue
                run_and_check(ctx, copied, DTYPES[letter], 130, 67, 97, "N", "T", 1.0, 0.5, edge, rng, offset=1)


@pytest.mark.gpu
@pytest.mark.parametrize("key", ["s.tf32", "s.3xtf32", "c.tf32", "c.3xtf32"])
@pytest.mark.parametrize("shape", ["m16n8k4", "m16n8k8"])
def test_the_tf32_tensor_cores_round_as_documented(ctx, device, key, shape):
    dt = DTYPES[key]
    params = dataclasses.replace(SMALL, mma="ptx", shape=shape, tile_k=16, warps_n=2, tiles_m=2,
                                 vector_width=1 if dt.is_complex else 2)
    if check(params, device, dt) is not None:
        pytest.skip(f"{device.name.strip()}: {check(params, device, dt)}")
    for layout in ("NN", "NT"):
        _check_precision(ctx, dataclasses.replace(params, layout=layout), dt)
    if shape == "m16n8k8":
        _check_precision(ctx, dataclasses.replace(params, read_width=8, fragment_sets=2), dt)


def _h100_like(device):
    return dataclasses.replace(device, vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA", fp64=True,
                               device_type="GPU", local_mem_bytes=48 << 10, max_work_group_size=1024,
                               max_work_item_sizes=(1024, 1024, 64),
                               vendor_facts={"compute_capability": "9.0", "registers_per_block": "65536"})


def test_the_tuning_space_holds_the_instructions_the_device_runs(device):
    from autogemm.codelets.nvidia_mma.space import space as mma_space
    from autogemm.codelets.registry import SpaceFacts

    h100 = _h100_like(device)

    def facts(dtype, instructions):
        return SpaceFacts(h100, DTYPES[dtype], instructions=instructions)

    assert mma_space(facts("d", {})) is None and mma_space(facts("s", {"f64": ("m8n8k4",)})) is None
    tf32 = mma_space(facts("s.3xtf32", {"tf32": ("m16n8k8",), "f64": ("m8n8k4",)}))
    assert {tf32.config(p).shape for p in tf32.points()} == {"m16n8k8"}
    space = mma_space(facts("z", {"f64": ("m8n8k4", "m16n8k8")}))
    configs = [space.config(p) for p in space.points()]
    assert len(configs) > 100 and {c.shape for c in configs} == {"m8n8k4", "m16n8k8"}
    assert all(c.mma == "ptx" and check(c, h100, "z") is None for c in configs)
    # a 512-work-item group has 128 registers each on a multiprocessor of 65536: big warp tiles are out
    assert not [c for c in configs if c.work_group_size == 512 and c.tiles_m * c.tiles_n >= 8]
    # a skinny C's space adds narrow blocks, down to one instruction's 16 x 8
    skinny = mma_space(dataclasses.replace(facts("d", {"f64": ("m16n8k8",)}), skinny=True))
    blocks = {(c.block_rows, c.block_cols) for c in (skinny.config(p) for p in skinny.points())}
    wide = mma_space(facts("d", {"f64": ("m16n8k8",)}))
    assert (16, 8) in blocks and (128, 8) in blocks
    assert (16, 8) not in {(c.block_rows, c.block_cols) for c in (wide.config(p) for p in wide.points())}


def test_the_instruction_probe_runs_once_per_device(ctx, monkeypatch, tmp_path):
    from autogemm.codelets.nvidia_mma import probe as module

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    with WorkerProcess(ctx.device) as worker:
        def isolated(dt, shape):
            return IsolatedEvaluator(worker, EvaluatorSpec.gemm(dt, shape), runs=1)

        found = module.instructions_available(ctx.device, isolated)
        assert found == ({} if ptx_problem(ctx.device, "f64", "m8n8k4") else module.instructions_available(
            ctx.device, isolated))
    probed = []

    class FakeEvaluator:
        def __init__(self, dt, shape):
            assert shape == module.PROBE_SHAPE

        def prepare(self, params):
            return params.shape

        def evaluate(self, params, plan):
            assert plan == params.shape
            probed.append(params.shape)
            return type("Record", (), {"ok": params.shape != "m16n8k16"})()

        def release(self):
            pass

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path / "fake"))      # not what a real probe found
    monkeypatch.setattr(module, "ptx_problem", lambda device, operand, shape: None)
    first = module.instructions_available(ctx.device, FakeEvaluator)
    assert first == {"f64": ("m8n8k4", "m16n8k4", "m16n8k8"), "tf32": ("m16n8k4", "m16n8k8"),
                     "f16": ("m16n8k8",), "bf16": ("m16n8k8",)} and len(probed) == 10
    assert module.instructions_available(ctx.device, FakeEvaluator) == first and len(probed) == 10   # remembered
    (tmp_path / "fake" / "capabilities" / f"{ctx.device.fingerprint}-mma.json").write_text("{not json")
    assert module.instructions_available(ctx.device, FakeEvaluator) == first and len(probed) == 20   # broken file


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("key", ["d", "s.tf32", "h"])
def test_a_configuration_in_another_layout_keeps_its_tiles_and_is_well_formed(layout, key):
    """``in_layout`` (how a small product reads its operands where they lie): asynchronous copies read
    32- and 64-bit operands in any layout, 16-bit ones in NT only, so there the same tiles copy through
    registers, two stages at most."""
    dt = DTYPES[key]
    fast = dataclasses.replace(SMALL, copy="async", stages=3, mma="ptx").fitted(dt)
    twin = fast.in_layout(layout, dt)
    assert twin.layout == layout and twin.malformed() is None and twin.dtype_problem(dt) is None
    assert (twin.block_rows, twin.block_cols, twin.tile_k) == (fast.block_rows, fast.block_cols, fast.tile_k)
    kept = layout == "NT" or key != "h"
    assert twin == dataclasses.replace(fast, layout=layout, **({} if kept else {"copy": "registers", "stages": 2}))
    assert SMALL.in_layout(layout, dt) == dataclasses.replace(SMALL, layout=layout)


def test_a_small_product_takes_the_fast_copies_tiles_in_its_stored_layout(ctx):
    """``selection.read_as_stored``: a small product stored NN, given a configuration of NT, takes its tiles
    in NN (one launch, no packs; float64's asynchronous copies read it as it lies) rather than packing A
    and B for the NT kernel; a large one keeps the configuration as chosen."""
    from autogemm.blas import GemmProblem
    from autogemm.blas.selection import Selection, read_as_stored

    fast = dataclasses.replace(SMALL, copy="async", stages=3)
    chosen = Selection(fast, "default")
    small = read_as_stored(chosen, ctx.device, GemmProblem.dense(DTYPES["d"], 40, 30, 50))
    assert small.params == fast.in_layout("NN", DTYPES["d"]) and small.params.copy == "async"
    assert "as stored" in small.source
    large = GemmProblem.dense(DTYPES["d"], 4096, 4096, 4096)
    assert read_as_stored(chosen, ctx.device, large).params == fast


def test_a_product_whose_kernel_reads_an_operand_once_reads_it_where_it_lies(ctx, monkeypatch):
    """``Thresholds.pack_min_passes``: above the in-place bound, a product whose kernel would read the
    operand its layout transposes fewer times than that (B once per block of C's rows) takes the tiles in
    its stored layout, in one launch, where the pack would read and write all of B to save nothing; where
    the kernel reads it often enough, or the bound is 0, the configuration stays as chosen."""
    from limits import set_thresholds

    from autogemm.blas import GemmProblem
    from autogemm.blas.plans import gemm_plan
    from autogemm.blas.selection import Selection, read_as_stored, read_too_few_times

    fast = dataclasses.replace(SMALL, stages=2)          # (through registers: it stages NN otherwise than NT)
    chosen = Selection(fast, "default")
    set_thresholds(monkeypatch, in_place_multiply_adds=2**10, pack_min_passes=3)
    deep = GemmProblem.dense(DTYPES["d"], fast.block_rows, 20, 3000)         # B (3000 x 20) read once
    assert read_too_few_times(fast, deep, "NN", 3) and not read_too_few_times(fast, deep, "NT", 3)
    twin = read_as_stored(chosen, ctx.device, deep)
    assert twin.params == fast.in_layout("NN", DTYPES["d"]) and "as stored" in twin.source
    assert len(gemm_plan(ctx, deep, twin.params).launches()) == 1
    many = GemmProblem.dense(DTYPES["d"], 3 * fast.block_rows, 20, 3000)     # B read three times
    assert read_as_stored(chosen, ctx.device, many).params == fast
    # unsplit and padded (edges not guarded), the twin would pack as many operands as the chosen
    set_thresholds(monkeypatch, guard_multiply_adds=0)
    assert read_as_stored(Selection(fast, "default", split=1), ctx.device, deep).params == fast
    set_thresholds(monkeypatch, pack_min_passes=0)
    assert read_as_stored(chosen, ctx.device, deep).params == fast


def test_a_product_whose_copies_stage_any_layout_alike_reads_it_where_it_lies(ctx, monkeypatch):
    """``stages_alike``: float64's asynchronous copies stage every layout as it lies, so a product above
    the in-place bound whose kernel reads each operand many times still takes its tiles in the stored
    layout, one launch, where its edges are guarded (padded, the twin would pack as many operands); a
    float16 one (NT alone staged so) keeps the configuration and its packs, as does 3xTF32 (staged as
    it lies too, but not measured as fast)."""
    from limits import set_thresholds

    from autogemm.blas import GemmProblem
    from autogemm.blas.plans import gemm_plan
    from autogemm.blas.selection import Selection, read_as_stored, read_too_few_times

    set_thresholds(monkeypatch, in_place_multiply_adds=2**10, pack_min_passes=3)
    fast = dataclasses.replace(SMALL, copy="async", stages=3)
    many = GemmProblem.dense(DTYPES["d"], 4 * fast.block_rows, 4 * fast.block_cols, 300)
    assert not read_too_few_times(fast, many, "NN", 3) and fast.stages_alike(DTYPES["d"])
    twin = read_as_stored(Selection(fast, "default"), ctx.device, many)
    assert twin.params == fast.in_layout("NN", DTYPES["d"]) and twin.params.copy == "async"
    assert len(gemm_plan(ctx, many, twin.params).launches()) == 1
    set_thresholds(monkeypatch, guard_multiply_adds=0)
    assert read_as_stored(Selection(fast, "default", split=1), ctx.device, many).params == fast
    half = dataclasses.replace(fast.fitted(DTYPES["h"]), vector_width=8)
    assert not half.stages_alike(DTYPES["h"]) and not SMALL.stages_alike(DTYPES["d"])
    assert not fast.fitted(DTYPES["s.3xtf32"]).stages_alike(DTYPES["s.3xtf32"])     # (not measured)
    product = GemmProblem.dense(DTYPES["h"], 4 * half.block_rows, 4 * half.block_cols, 300)
    assert read_as_stored(Selection(half, "default"), ctx.device, product).params == half


def test_a_twin_that_would_still_transpose_the_operand_read_once_is_not_taken(ctx, monkeypatch):
    """The cpu family lays out NN and TN only: for a product stored TT whose B (read once) the chosen NN
    would transpose, TN reads A as stored but still transposes B, so it is no answer to
    ``pack_min_passes``; and a split measured for the problem (stream-K too) is the one its plans take."""
    from limits import set_thresholds

    from autogemm.blas import GemmProblem, Op
    from autogemm.blas.selection import Selection, planned_split, read_as_stored, read_too_few_times
    from autogemm.codelets.cpu import CpuParams
    from autogemm.codelets.stream_k import STREAM_K
    from autogemm.profiles import thresholds_for

    set_thresholds(monkeypatch, in_place_multiply_adds=2**10, pack_min_passes=3)
    nn = CpuParams(layout="NN", tile_rows=4, vectors=1, vector_width=4)
    tt = GemmProblem(DTYPES["s"], nn.block_rows, 400, 3000, Op(transposed=True), Op(transposed=True))
    assert read_too_few_times(nn, tt, "TT", 3) and read_too_few_times(nn.in_layout("TN", DTYPES["s"]), tt, "TT", 3)
    assert read_as_stored(Selection(nn, "default"), ctx.device, tt).params == nn
    limits = thresholds_for(ctx.device)
    assert planned_split(Selection(nn, "default", split=STREAM_K), nn, tt, ctx.device, limits) == STREAM_K


@pytest.mark.parametrize("key", ["s.3xtf32", "c.3xtf32"])
@pytest.mark.parametrize("edge, split", [("guard", None), ("pad", None), ("guard", 2), ("pad", 2),
                                         ("pad", STREAM_K)])
def test_3xtf32_keeps_float32s_infinities_nans_and_extremes(ctx, key, edge, split):
    """Values 3xTF32 cannot split (inf, NaN, nonzero below 2^-115) send their block to float32, so inf and
    NaN come out where a float32 product has them (splitting inf made inf - inf = NaN); a value within half
    a TF32 place of float's largest is split toward zero, not rounded to inf; a row of values near 2^-126
    keeps float32's accuracy. Elsewhere 3xTF32's. Whole or in K slices (added up by the guarded kernel,
    or merged after the padded one), or under stream-K (each unit of work checks its own values)."""
    from gemm_check import two_runs

    from autogemm.blas import GemmProblem, Op
    from autogemm.blas.plans import gemm_plan

    dt = DTYPES[key]
    params = dataclasses.replace(SMALL, shape="m16n8k8", tile_k=16, warps_m=1, warps_n=2, tiles_n=1, layout="TN",
                                 vector_width=1 if dt.is_complex else 2)
    m, n, k = 40, 21, 37
    rng = np.random.default_rng(12)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(0.5, 1, (k, n)).astype(np.float32)
    a[3, 5], a[7, 2], a[10, 0] = np.inf, -np.inf, np.nan
    a[12, 4] = np.nextafter(np.finfo(np.float32).max, 0, dtype=np.float32)     # rounds past the largest in TF32
    a[15] *= np.float32(2.0**-126)                                               # a row below 2^-115
    a_im = rng.uniform(-1, 1, (m, k)).astype(np.float32) * (np.arange(m) != 15)[:, None]
    b_im = -0.5 * b

    def product(x: np.ndarray, y: np.ndarray, x_im: np.ndarray, y_im: np.ndarray) -> np.ndarray:
        """op(A) op(B) summing its terms in float32 (or, given float64, exactly), complex parts apart (a
        BLAS's own treatment of inf, which may skip or reorder terms, is not the reference)."""
        def dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
            return (u[:, :, None] * v[None, :, :]).sum(axis=1)

        with np.errstate(invalid="ignore", over="ignore"):
            if not dt.is_complex:
                return dot(x, y)
            out = np.empty((m, n), np.complex128)      # (1j * an infinite part would make its real part NaN)
            out.real, out.imag = dot(x, y) - dot(x_im, y_im), dot(x, y_im) + dot(x_im, y)
            return out

    as_float32 = product(a, b, a_im, b_im)
    want = product(*(x.astype(np.float64) for x in (a, b, a_im, b_im)))
    if dt.is_complex:
        a, b = (np.array(x, np.complex64) for x in (a, b))
        a.imag, b.imag = a_im, b_im
    problem = GemmProblem.dense(dt, m, n, k, Op.from_letter("T", "trans_a"), Op.from_letter("N", "trans_b"))
    plan = gemm_plan(ctx, problem, params, edge, split)
    assert (plan.slices, plan.stream) == ((1, True) if split == STREAM_K else (split or 1, False))
    got = two_runs(ctx, plan, np.ascontiguousarray(a.T), b, 1.0)[0]
    for part in ((np.real, np.imag) if dt.is_complex else (np.real,)):
        assert np.array_equal(np.isnan(part(got)), np.isnan(part(as_float32)))
        assert np.array_equal(np.isinf(part(got)), np.isinf(part(as_float32)))
        assert np.array_equal(np.sign(part(got))[np.isinf(part(got))], np.sign(part(as_float32))[np.isinf(part(got))])
    finite = np.isfinite(want).all(axis=1)
    scale = np.abs(a[finite]).astype(np.float64) @ np.abs(b).astype(np.float64)   # (|a| of a complex: its modulus)
    error = np.abs(got[finite] - want[finite]) / scale
    assert finite[12] and finite[15] and error.max() < 1e-6
