"""float16 and bfloat16: stored in 16 bits, multiplied exactly and summed in float32, C rounded to its 16
bits (or kept in float32). The simt family's kernels read the 16-bit operands as they are stored and
compute in float32 (through images, packed as floats); the nvidia_mma family multiplies them (emulated
here, as PTX on a GPU that has the instructions). Either writes a 16-bit C itself, rounding it."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pyopencl as cl
import pytest
from gemm_check import assert_rounded, run_and_check
from simt_default import simt_default

import autogemm
from autogemm.blas import GemmProblem, Op
from autogemm.blas.plans import gemm_plan
from autogemm.codelets import helpers
from autogemm.codelets.nvidia_mma import MmaParams
from autogemm.codelets.registry import check, render
from autogemm.codelets.simt import render as simt_render
from autogemm.dtypes import DTYPES, with_output
from autogemm.errors import ConfigError, DtypeError
from autogemm.tuning.scope import supported_dtypes

NUMPY = {"h": np.float16, "b": ml_dtypes.bfloat16}
SMALL = MmaParams(layout="NT", shape="m16n8k8", warps_m=1, warps_n=2, tiles_m=1, tiles_n=1, tile_k=32, stages=2,
                  vector_width=2, mma="local")


def _specials() -> np.ndarray:
    """float32 values that test rounding to 16 bits: ties (to even, both ways), overflow, the smallest
    values, infinities, signed zeros and a wide random spread."""
    ties = [1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-11)]
    edges = [65504.0, 65520.0, 65519.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 3.4e38, -3.4e38,
             np.inf, -np.inf, 0.0, -0.0, 1e-40]
    spread = np.random.default_rng(0).standard_normal(4000) * np.exp2(np.random.default_rng(1).integers(-30, 30, 4000))
    return np.concatenate([ties, edges, spread]).astype(np.float32)


@pytest.mark.parametrize("letter", "hb")
def test_the_conversion_to_16_bits_rounds_as_numpy_does(ctx, letter):
    """The merge kernel (C = 1 T + 0 C) rounds float32 T to C's 16 bits: bit for bit numpy's (and
    ml_dtypes') round to nearest even, infinities and overflow included."""
    values = _specials()
    src = helpers.epilogues(DTYPES[letter])
    merge = ctx.kernel(src.source, "merge")
    mf, n = cl.mem_flags, values.size
    t_buf = cl.Buffer(ctx.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=values)
    got = np.full(n, np.nan, NUMPY[letter])
    c_buf = cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=got)
    i32, f32 = np.int32, np.float32
    merge(ctx.queue, (helpers.TILE * -(-n // helpers.TILE), helpers.TILE), (helpers.TILE, helpers.TILE),
          i32(1), i32(n), t_buf, i32(n), i32(n), i32(1), f32(1.0), c_buf, np.int64(0), i32(n), f32(0.0), i32(0), i32(1))
    cl.enqueue_copy(ctx.queue, got, c_buf).wait()
    with np.errstate(over="ignore"):
        want = values.astype(NUMPY[letter])
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    nan = np.array([np.nan], np.float32)
    assert np.isnan(np.asarray(autogemm.gemm(nan.reshape(1, 1).astype(NUMPY[letter]),
                                              np.ones((1, 1), NUMPY[letter]))).astype(np.float32)).all()


@pytest.mark.parametrize("letter", "hb")
def test_a_kernel_writing_16_bits_rounds_as_numpy_does(ctx, device, letter):
    """C = a b^T over a K of 1: each element an exact float32 product, rounded into C by the kernel itself
    (simt and the emulated tensor-core family, guarded, and the simt one padded): bit for bit numpy's
    round to nearest even, overflow to infinity included."""
    rng = np.random.default_rng(8)
    dt, m, n = DTYPES[letter], 67, 45
    spread = np.exp2(rng.integers(-12, 9, m + n)) * rng.choice([-1, 1], m + n)
    values = (spread * (1 + rng.integers(0, 1024, m + n) / 1024)).astype(NUMPY[letter])
    a, b = values[:m].reshape(m, 1), values[m:].reshape(1, n)
    with np.errstate(over="ignore"):
        want = (a.astype(np.float32) * b.astype(np.float32)).astype(NUMPY[letter])
    assert (letter == "b" or np.isinf(want.astype(np.float32)).any()) and (want.view(np.uint16) & 1).any()
    simt = dataclasses.replace(simt_default(device), layout="NN", local_a=True, local_b=True)
    mma = dataclasses.replace(SMALL, layout="NN", shape="m16n8k16")
    for params, edge in ((simt, "guard"), (simt, "pad"), (mma, "guard")):
        plan = gemm_plan(ctx, GemmProblem.dense(dt, m, n, 1), params, edge)
        assert plan.c_stored == (edge == "guard")
        mf = cl.mem_flags
        buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(x))
                   for x in (a, b, np.full((m, n), np.nan, NUMPY[letter]))]
        plan.enqueue(*buffers)
        got = np.empty((m, n), NUMPY[letter])
        cl.enqueue_copy(ctx.queue, got, buffers[2]).wait()
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), (params.describe(), edge)


@pytest.mark.parametrize("letter", "hb")
@pytest.mark.parametrize("trans_a,trans_b", [("N", "N"), ("T", "C")])
def test_gemm_multiplies_16_bit_arrays_anywhere(host_memory, letter, trans_a, trans_b):
    rng = np.random.default_rng(3)
    m, n, k = 45, 29, 70
    a = rng.uniform(-1, 1, (k, m) if trans_a != "N" else (m, k)).astype(NUMPY[letter])
    b = rng.uniform(-1, 1, (n, k) if trans_b != "N" else (k, n)).astype(NUMPY[letter])
    op_a = a.astype(np.float64).T if trans_a != "N" else a.astype(np.float64)
    op_b = b.astype(np.float64).T if trans_b != "N" else b.astype(np.float64)
    want = op_a @ op_b
    c = autogemm.gemm(a, b, trans_a=trans_a, trans_b=trans_b)
    assert c.dtype == NUMPY[letter] and c.shape == (m, n)
    assert_rounded(c, want, DTYPES[letter], k)
    wide = autogemm.gemm(a, b, trans_a=trans_a, trans_b=trans_b, out_dtype=np.float32)
    assert wide.dtype == np.float32 and np.abs(wide - want).max() < 1e-5
    c0 = np.asfortranarray(rng.uniform(-1, 1, (m, n)).astype(np.float32))
    out = autogemm.gemm(a, b, c0.copy(order="F"), alpha=0.5, beta=-2.0, trans_a=trans_a, trans_b=trans_b)
    assert out.dtype == np.float32 and np.abs(out - (0.5 * want - 2.0 * c0)).max() < 1e-5
    c1 = rng.uniform(-1, 1, (m, n)).astype(NUMPY[letter])
    out = autogemm.gemm(a, b, c1.copy(), alpha=2.0, beta=0.25, trans_a=trans_a, trans_b=trans_b)
    assert_rounded(out, 2.0 * want + 0.25 * c1.astype(np.float64), DTYPES[letter], k)


def test_16_bit_arguments_are_checked():
    h = np.ones((4, 4), np.float16)
    with pytest.raises(DtypeError, match="out_dtype: C of float16 operands must be float16 or float32, not float64"):
        autogemm.gemm(h, h, out_dtype=np.float64)
    with pytest.raises(DtypeError, match="c: C of bfloat16 operands"):
        autogemm.gemm(h.astype(ml_dtypes.bfloat16), h.astype(ml_dtypes.bfloat16), np.ones((4, 4), np.float16))
    with pytest.raises(DtypeError, match="c is float16 but out_dtype is float32"):
        autogemm.gemm(h, h, h.copy(), out_dtype=np.float32)
    with pytest.raises(DtypeError, match="not a mode of float16"):
        autogemm.gemm(h, h, precision="tf32")
    with pytest.raises(DtypeError, match="convert them"):
        autogemm.gemm(h, h.astype(ml_dtypes.bfloat16))
    assert with_output(DTYPES["hs"], np.float16).key == "h" and with_output(DTYPES["b"], "s").key == "bs"
    assert autogemm.gemm(h[:, :0], h[:0], out_dtype=np.float32).shape == (4, 4)


@pytest.mark.parametrize("key", ["h", "b", "hs"])
def test_a_simt_kernel_reads_and_writes_16_bits_as_stored(ctx, device, key):
    """Every layout, guarded and padded, offsets and leading dimensions, alpha and beta (beta = 0 over a
    poisoned C), a K split added up in the kernel and one merged after: checked against float64, in one
    launch where nothing is packed, C written in its 16 bits by the kernel."""
    rng, dt = np.random.default_rng(11), DTYPES[key]
    base = dataclasses.replace(simt_default(device), vector_width=2, tile_cols=4, local_a=True,
                               local_b=True)
    for layout in ("NN", "NT", "TN", "TT"):
        params = dataclasses.replace(base, layout=layout)
        ta, tb = layout
        run_and_check(ctx, params, dt, 37, 29, 45, ta, tb, 1.0, 0.0, "guard", rng, extra_ld=2, offset=3)
        run_and_check(ctx, params, dt, 48, 40, 96, ta, tb, -0.5, 2.0, "pad", rng, extra_ld=1, offset=1)
        run_and_check(ctx, params, dt, 21, 19, 301, ta, tb, 0.5, 1.5, "guard", rng, split_k=3)
        plan = gemm_plan(ctx, GemmProblem.dense(dt, 37, 29, 45, *(Op.from_letter(t, "t") for t in layout)),
                         params, "guard")
        assert len(plan.launches()) == 1 and plan.c_stored == (key != "hs") and plan.kernel_dtype == dt
        merged = gemm_plan(ctx, GemmProblem.dense(dt, 37, 29, 450), dataclasses.replace(params, layout="NN"),
                           "pad", 2)
        assert merged.c_temp and not merged.c_stored
    run_and_check(ctx, dataclasses.replace(base, layout="NN"), dt, 40, 36, 450, "N", "N", 1.0, 0.5, "pad", rng,
                  split_k=2)


def test_the_plans_say_where_16_bits_are_converted(ctx, device):
    # a simt kernel staging both operands in local memory reads bfloat16 as stored, computes in float32
    simt = dataclasses.replace(simt_default(device), layout="NN", local_a=True, local_b=True)
    plan = gemm_plan(ctx, GemmProblem.dense(DTYPES["b"], 67, 64, 64), simt, edge="guard")
    assert plan.kernel_dtype.key == "b" and plan.c_stored and len(plan.launches()) == 1
    # one reading an operand through an image, or from global memory in its inner loop, takes it packed
    for other in (dataclasses.replace(simt, image_b=True), dataclasses.replace(simt, local_b=False)):
        converted = gemm_plan(ctx, GemmProblem.dense(DTYPES["b"], 64, 64, 64), other)
        assert converted.kernel_dtype.key == "s" and "pack B (to float32)" in converted.launches()
        assert converted.launches()[-1] == "merge C (to bfloat16)"
        with pytest.raises(ConfigError, match="packed as floats"):      # (asked of the family itself)
            simt_render(other, DTYPES["b"])
    plan = gemm_plan(ctx, GemmProblem.dense(DTYPES["hs"], 64, 64, 64), dataclasses.replace(SMALL, layout="NN"),
                      edge="guard")
    assert plan.kernel_dtype.key == "hs" and not any(s.startswith(("pack", "merge")) for s in plan.launches())


@pytest.mark.parametrize("key", ["h", "b", "hs", "bs"])
@pytest.mark.parametrize("shape", ["m16n8k8", "m16n8k16"])
def test_the_emulated_instruction_reads_16_bit_operands(ctx, key, shape):
    rng = np.random.default_rng(5)
    params = dataclasses.replace(SMALL, shape=shape)
    for layout, ta, tb, edge in (("NT", "N", "T", "guard"), ("TN", "T", "N", "pad"), ("NN", "N", "N", "guard")):
        p = dataclasses.replace(params, layout=layout)
        run_and_check(ctx, p, DTYPES[key], 37, 29, 45, ta, tb, 1.0, 0.0, edge, rng, extra_ld=2, offset=3)
        run_and_check(ctx, p, DTYPES[key], 48, 64, 96, tb, ta, -0.5, 2.0, edge, rng, extra_ld=1, offset=1)


@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_asynchronous_copies_stage_16_bit_operands(ctx, edge):
    params = dataclasses.replace(SMALL, copy="async", stages=3, vector_width=8)
    rng = np.random.default_rng(6)
    run_and_check(ctx, params, DTYPES["b"], 37, 29, 45, "N", "T", 1.0, 0.0, edge, rng, extra_ld=2, offset=3)
    run_and_check(ctx, params, DTYPES["h"], 48, 64, 96, "T", "N", -0.5, 2.0, edge, rng, extra_ld=8, offset=8)


@pytest.mark.parametrize("copy,stages", [("registers", 1), ("async", 2)])
def test_eight_byte_reads_pipeline_16_bit_fragments(ctx, copy, stages):
    params = dataclasses.replace(SMALL, copy=copy, stages=stages, read_width=8, fragment_sets=2, vector_width=8)
    assert params.chunks(DTYPES["h"]) == 2 and "typedef uint2 lane_read;" in render(params, "h").source
    _guarded_h_and_padded_bs(ctx, params, np.random.default_rng(10))


# PoCL builds these emulations slowly: each shape once, with x2 B loads for one and x4 for the other
@pytest.mark.parametrize("shape,copy,stages,sets,tiles_n", [("m16n8k8", "registers", 2, 1, 1),
                                                           ("m16n8k16", "async", 3, 2, 2)])
def test_matrix_loads_give_the_instruction_its_fragments(ctx, shape, copy, stages, sets, tiles_n):
    params = dataclasses.replace(SMALL, shape=shape, copy=copy, stages=stages, read_width=8, fragment_sets=sets,
                                 vector_width=8, loads="ldmatrix", tiles_m=2, tiles_n=tiles_n)
    kernel = render(dataclasses.replace(params, mma="ptx"), "h", guarded=False).source.split("__kernel")[1]
    assert f"load_matrices_x{2 if tiles_n == 1 else 4}(b_local" in kernel and "load_matrices_x4(a_local" in kernel
    _guarded_h_and_padded_bs(ctx, params, np.random.default_rng(11))
    with pytest.raises(ConfigError, match="loads 'ldmatrix' reads 16-bit operands"):
        render(dataclasses.replace(params, read_width=16), "h")


def _guarded_h_and_padded_bs(ctx, params, rng):
    """Two builds, which PoCL makes slowly: float16 C at untiled sizes with guards, float32 C from bfloat16
    operands on padded copies."""
    run_and_check(ctx, params, DTYPES["h"], 37, 29, 75, "N", "T", 1.0, 0.0, "guard", rng, extra_ld=2, offset=3)
    run_and_check(ctx, params, DTYPES["bs"], 48, 64, 96, "T", "N", -0.5, 2.0, "pad", rng, extra_ld=8, offset=8)


def test_split_k_sums_16_bit_products_in_float32(ctx):
    params = dataclasses.replace(SMALL, tile_k=64, vector_width=4)
    run_and_check(ctx, params, DTYPES["h"], 20, 33, 500, "N", "N", 1.5, 0.0, "auto", np.random.default_rng(7),
                  split_k=3)


def test_the_family_keeps_to_what_16_bit_operands_allow(device):
    with pytest.raises(ConfigError, match="vector_width 8 is for 16-bit elements"):
        render(dataclasses.replace(SMALL, vector_width=8), "s.tf32")
    ptx_async = render(dataclasses.replace(SMALL, copy="async", mma="ptx", vector_width=8), "h", guarded=False).source
    assert "cp.async.ca.shared.global [%0], [%1], 16, %2;" in ptx_async
    guarded_async = render(dataclasses.replace(SMALL, copy="async", mma="ptx", vector_width=8), "h").source
    assert "cp.async.c" not in guarded_async and "cp.async.wait" not in guarded_async   # 2 bytes: plain copies
    with pytest.raises(ConfigError, match="multiple of 32"):
        render(dataclasses.replace(SMALL, tile_k=16), "b")
    with pytest.raises(ConfigError, match="no m8n8k4 shape for bf16"):
        render(dataclasses.replace(SMALL, shape="m8n8k4"), "b")
    source = render(dataclasses.replace(SMALL, mma="ptx", shape="m16n8k16"), "b").source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}" in source
    assert "typedef uint4 lane_read;" in source and "to_real" not in source      # bits only, never converted
    if not device.is_nvidia:
        assert "inline PTX" in check(dataclasses.replace(SMALL, mma="ptx"), device, "h")
    assert all(not dt.half for dt in supported_dtypes(device))


@pytest.mark.gpu
@pytest.mark.parametrize("key", ["h", "b", "hs"])
@pytest.mark.parametrize("shape", ["m16n8k8", "m16n8k16"])
def test_the_tensor_cores_multiply_16_bit_operands(ctx, device, key, shape):
    params = dataclasses.replace(SMALL, mma="ptx", shape=shape, warps_n=2, tiles_m=2, tiles_n=2)
    if check(params, device, key) is not None:
        pytest.skip(f"{device.name.strip()}: {check(params, device, key)}")
    rng = np.random.default_rng(5)
    for edge in ("guard", "pad"):
        for layout in ("NN", "NT", "TN", "TT"):
            p = dataclasses.replace(params, layout=layout)
            run_and_check(ctx, p, DTYPES[key], 45, 70, 50, "N", "T", 1.0, 0.5, edge, rng, extra_ld=1, offset=1)
            run_and_check(ctx, p, DTYPES[key], 130, 67, 97, "T", "N", -2.0, 0.0, edge, rng)
        for read_width, sets, loads in ((16, 1, "lanes"), (8, 2, "lanes"), (8, 2, "ldmatrix"), (8, 1, "ldmatrix")):
            copied = dataclasses.replace(params, copy="async", stages=3, vector_width=8, read_width=read_width,
                                         fragment_sets=sets, loads=loads, tiles_n=1 if sets == 1 else 2)
            run_and_check(ctx, copied, DTYPES[key], 130, 67, 97, "N", "T", 1.0, 0.5, edge, rng, extra_ld=8, offset=8)
            run_and_check(ctx, copied, DTYPES[key], 45, 70, 50, "N", "T", 1.0, 0.0, edge, rng, extra_ld=1, offset=1)
