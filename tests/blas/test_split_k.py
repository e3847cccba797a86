"""Split K: slices of K computed in parallel, added up by the kernel itself (one launch) or into a temporary
that the merge kernel adds up (read in place by the guarded kernel, or padded)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest
from gemm_check import run_and_check, two_runs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autogemm.accuracy import random_matrix, relative_error, tolerance
from autogemm.blas import GemmProblem, Op
from autogemm.blas.coverage import MAX_SLICES, busy_share, split_count
from autogemm.blas.plans import gemm_plan
from autogemm.codelets import helpers
from autogemm.codelets.nvidia_mma import MmaParams
from autogemm.codelets.simt import SimtParams
from autogemm.codelets.subgroup import SubgroupParams
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, ConfigError
from autogemm.runtime.opencl import commands as ocl
from autogemm.runtime.opencl.arguments import KernelArguments

LOCAL = SimtParams("NN", "offset", 4, 8, 2, 4, 4, 2, True, True, double_buffer=True, mac="mul_add")


@pytest.mark.parametrize("letter", "sdcz")
@pytest.mark.parametrize("layout,ta,tb", [("NN", "N", "N"), ("TN", "T", "N"), ("NT", "N", "C"), ("TN", "C", "T"),
                                          ("TT", "T", "T")])
@pytest.mark.parametrize("slices", [2, 5])
@pytest.mark.parametrize("edge", ["auto", "pad"])
def test_split_k_is_exact_for_every_dtype_and_layout(ctx, letter, layout, ta, tb, slices, edge):
    """Summed in the kernel (small products under ``edge='auto'``) or merged (padded), every dtype and
    layout, transposed and conjugated operands, offsets, leading dimensions, alpha and beta."""
    params = dataclasses.replace(LOCAL, layout=layout)
    rng = np.random.default_rng(slices)
    for m, n, k, alpha, beta in ((33, 17, 301, 1.5, 0.0), (16, 32, 160, -1.0, 0.5)):
        run_and_check(ctx, params, DTYPES[letter], m, n, k, ta, tb, alpha, beta, edge, rng,
                      extra_ld=3, offset=5, split_k=slices)
        plan = gemm_plan(ctx, GemmProblem.dense(DTYPES[letter], m, n, k), params, edge, slices)
        assert plan.summed == (edge == "auto") and plan.c_temp == (edge == "pad")


@pytest.mark.parametrize("letter", "sz")
@pytest.mark.parametrize("params", [dataclasses.replace(LOCAL, layout="TT"),
                                    SimtParams("TT", "consecutive", 8, 4, 4, 2, 8, 2, False, True, mac="fma")])
def test_slices_summed_in_the_kernel_are_one_launch_and_a_second_launch_adds_up_again(ctx, letter, params):
    """The kernel adds the slices up (no temporary C, no merge: one launch, operands read where they
    lie), counting each tile's arrivals and resetting them for the next launch: two launches of one plan
    give the same bits; tiles cut by M and N's edges, K not a multiple of the slices or of TILE_K."""
    dt, rng = DTYPES[letter], np.random.default_rng(7)
    m, n, k = 2 * params.block_rows + 3, params.block_cols + 5, 7 * params.tile_k * 3 + 1
    problem = GemmProblem(dt, m, n, k, Op.from_letter("T", "trans_a"), Op.from_letter("T", "trans_b"),
                          lda=m, ldb=k, ldc=n)
    plan = gemm_plan(ctx, problem, params, "guard", 3)
    assert plan.summed and plan.launches() == [plan.launches()[-1]] and not plan.c_temp
    assert "summed in the kernel" in plan.describe() and plan.traffic().launches == 1
    a, b = random_matrix(rng, dt, (k, m)), random_matrix(rng, dt, (n, k))
    results = two_runs(ctx, plan, a, b, -0.5)
    reference = -0.5 * (a.T.astype(dt.reference_numpy) @ b.T.astype(dt.reference_numpy))
    assert relative_error(results[0], reference) < dt.tolerance
    assert results[0].tobytes() == results[1].tobytes()
    run_and_check(ctx, params, dt, m, n, k, "T", "T", 1.5, 0.5, "guard", rng, extra_ld=2, offset=3, split_k=3)


def test_small_products_split_where_the_kernel_sums_the_slices(ctx, monkeypatch):
    """Below ``SPLIT_MIN_WORK`` a product whose blocks leave compute units idle splits K into slices at
    least ``SUMMED_MIN_DEPTH`` deep, read in place (over the device's in-place bound too) and summed in
    its one launch; from there it is split as before, padded and merged."""
    from limits import set_thresholds

    from autogemm.blas.coverage import SPLIT_MIN_WORK, SUMMED_MIN_DEPTH
    monkeypatch.setattr(ctx, "device", dataclasses.replace(ctx.device, compute_units=132))
    set_thresholds(monkeypatch, in_place_multiply_adds=2**20)
    small = gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], 64, 64, 2048), LOCAL)
    assert small.summed and 1 < small.slices <= 2048 // SUMMED_MIN_DEPTH and small.traffic().launches == 1
    shallow = gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], 64, 64, SUMMED_MIN_DEPTH + 7), LOCAL)
    assert shallow.slices == 1
    large = gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], 64, 64, SPLIT_MIN_WORK // 64**2), LOCAL)
    assert large.slices > 1 and not large.summed and large.c_temp


def test_split_k_in_place_operands(ctx):
    """K a multiple of slices x TILE_K and whole blocks: A and B are read where they are."""
    problem = GemmProblem(DTYPES["s"], 16, 32, 256, lda=256, ldb=32, ldc=32)
    plan = gemm_plan(ctx, problem, LOCAL, "pad", split_k=4)
    assert not any(st.packed for st in plan.staging.values()) and plan.c_temp and "K split in 4" in plan.describe()
    run_and_check(ctx, LOCAL, DTYPES["s"], 16, 32, 256, "N", "N", 2.0, 0.0, "pad", np.random.default_rng(1),
                  split_k=4)


@pytest.mark.parametrize("letter", "sz")
@pytest.mark.parametrize("k_tiles, slices", [(0, 5), (2, 8), (3, MAX_SLICES)])
def test_more_slices_than_k_tiles_are_right_and_the_same_bits_on_every_run(ctx, letter, k_tiles, slices):
    """K shorter than one slice (and than one tile), and more slices than K has tiles (empty slices add
    zeros): right with a NaN-poisoned C, and bit-for-bit equal on two runs, since the merge adds the slices
    in their order, never by atomics."""
    dt, rng = DTYPES[letter], np.random.default_rng(k_tiles)
    m, n, k = 2 * LOCAL.block_rows + 1, LOCAL.block_cols - 1, k_tiles * LOCAL.tile_k + 3
    run_and_check(ctx, LOCAL, dt, m, n, k, "N", "T", 1.0, 0.0, "auto", rng, split_k=slices)
    a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
    plan = gemm_plan(ctx, GemmProblem.dense(dt, m, n, k), LOCAL, split_k=slices)
    assert plan.slices == slices
    results = two_runs(ctx, plan, a, b, 0.5)
    assert np.all(np.isfinite(results[0])) and results[0].tobytes() == results[1].tobytes()


def test_split_count():
    assert split_count(blocks=200, compute_units=132, k=65536, tile_k=8) == 1        # the device is full
    assert split_count(blocks=1, compute_units=132, k=65536, tile_k=8) == MAX_SLICES
    assert split_count(blocks=64, compute_units=132, k=8192, tile_k=8) == 4          # 256 groups: 2 full waves
    assert split_count(blocks=40, compute_units=132, k=8192, tile_k=8) == 6          # 240 of 264, not 280 of 396
    assert busy_share(264, 132) == 1.0 and busy_share(133, 132) == 133 / 264
    assert split_count(blocks=4, compute_units=132, k=600, tile_k=8) == 2            # slices 256 deep at least
    assert split_count(blocks=4, compute_units=132, k=300, tile_k=16) == 1


def test_deep_narrow_problems_split_automatically(ctx, monkeypatch):
    monkeypatch.setattr(ctx, "device", dataclasses.replace(ctx.device, compute_units=132))
    deep = GemmProblem(DTYPES["s"], 64, 64, 2**18, lda=2**18, ldb=64, ldc=64)
    assert gemm_plan(ctx, deep, LOCAL).slices > 1
    square = GemmProblem(DTYPES["s"], 96, 96, 96, lda=96, ldb=96, ldc=96)
    assert gemm_plan(ctx, square, LOCAL).slices == 1


def test_bad_split_requests(ctx):
    problem = GemmProblem(DTYPES["s"], 16, 16, 64, lda=64, ldb=16, ldc=16)
    for bad in (-1, MAX_SLICES + 1, 2.5, True):
        with pytest.raises(ArgumentError, match="split_k"):
            gemm_plan(ctx, problem, LOCAL, split_k=bad)
    imaged = dataclasses.replace(LOCAL, local_a=False, image_a=True, vector_width=4, tile_rows=4,
                                 layout="TN")
    with pytest.raises(ConfigError, match="images"):
        gemm_plan(ctx, problem, imaged, split_k=2)


def test_a_cpus_deep_products_are_computed_in_slices_that_stay_in_its_caches(ctx, monkeypatch):
    """``Thresholds.slice_depth``: K in slices of at most that many, from ``SPLIT_MIN_WORK`` multiply-adds,
    as many as their partial sums fit one allocation; none on images, batches, or where the device names
    no depth; a plan takes the more of these and of its coverage's."""
    from limits import set_thresholds

    from autogemm.blas.coverage import SPLIT_MIN_WORK, auto_slices, cache_slices

    params, two_gib = SimtParams(), 2**31
    s, d = DTYPES["s"], DTYPES["d"]
    assert [cache_slices(params, GemmProblem.dense(dt, n, n, n), 512, two_gib)
            for dt, n in ((s, 512), (s, 1024), (s, 4096), (d, 4096))] == [1, 2, 8, 8]
    assert cache_slices(params, GemmProblem.dense(d, 4096, 4096, 4096), 512, 3 * 4352**2 * 8) == 3   # fits
    assert cache_slices(params, GemmProblem.dense(d, 4096, 4096, 4096), 0, two_gib) == 1
    assert cache_slices(SimtParams(image_a=True), GemmProblem.dense(d, 4096, 4096, 4096), 512, two_gib) == 1
    assert cache_slices(params, dataclasses.replace(GemmProblem.dense(d, 64, 64, 2**20), batch=4), 512, two_gib) == 1
    assert cache_slices(params, GemmProblem.dense(d, 16, 16, SPLIT_MIN_WORK // 256 - 1), 512, two_gib) == 1
    problem = GemmProblem.dense(d, 1024, 1024, 2048)
    set_thresholds(monkeypatch, slice_depth=512)
    assert gemm_plan(ctx, problem, params).slices == max(4, auto_slices(params, problem, ctx.device.compute_units))
    set_thresholds(monkeypatch, slice_depth=0)
    assert gemm_plan(ctx, problem, params).slices == auto_slices(params, problem, ctx.device.compute_units)


SUMMING = (dataclasses.replace(LOCAL, layout="TT"), dataclasses.replace(LOCAL, layout="TN", double_buffer=False),
           SubgroupParams(layout="NN", subgroup=8, wg_rows=2, tile_rows=2, vector_width=2, shuffle="local",
                          mac="mul_add"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.sampled_from(SUMMING), letter=st.sampled_from("sz"), m=st.integers(1, 70), n=st.integers(1, 70),
       k=st.integers(1, 400), slices=st.integers(2, 12), alpha=st.sampled_from([1.0, -0.5]),
       beta=st.sampled_from([0.0, 2.0]), seed=st.integers(0, 2**32 - 1))
def test_slices_summed_in_the_kernel_over_random_shapes(ctx, params, letter, m, n, k, slices, alpha, beta, seed):
    """Any M, N and K (slices past K's end left empty), any count of slices, operands at offsets with
    wider leading dimensions, beta 0 on a NaN-poisoned C: right, one launch."""
    trans = {"TT": ("T", "T"), "TN": ("T", "N"), "NN": ("N", "N")}[params.layout]
    run_and_check(ctx, params, DTYPES[letter], m, n, k, *trans, alpha, beta, "guard", np.random.default_rng(seed),
                  extra_ld=1, offset=2, split_k=slices)
    problem = GemmProblem.dense(DTYPES[letter], m, n, k, *(Op.from_letter(t, "t") for t in trans))
    plan = gemm_plan(ctx, problem, params, "guard", slices)
    assert plan.summed and len(plan.launches()) == 1


MMA = MmaParams(layout="NT", warps_m=2, warps_n=1, tiles_m=1, tiles_n=2, tile_k=8, stages=2, vector_width=2,
                mma="local")


@pytest.mark.parametrize("letter,method", [("d", "4m"), ("z", "4m"), ("z", "3m")])
@pytest.mark.parametrize("layout,trans", [("NT", ("N", "T")), ("TN", ("C", "N"))])
def test_the_tensor_core_family_sums_its_slices_too(ctx, letter, method, layout, trans):
    """nvidia_mma's guarded kernel (its instruction emulated, so that any device runs it) adds its K
    slices up in one launch: each element of its warps' fragments, complex ones held by parts (the 3M
    method's three), at edges of M, N and K, a slice past K's end, beta 0 on a NaN-poisoned C and not."""
    params = dataclasses.replace(MMA, layout=layout, complex_method=method)
    rng = np.random.default_rng(len(layout) + ord(method[0]))
    for m, n, k, slices, beta in ((37, 21, 203, 3, 0.0), (5, 40, 50, 8, -0.5)):
        run_and_check(ctx, params, DTYPES[letter], m, n, k, *trans, 1.5, beta, "guard", rng, extra_ld=2, offset=3,
                      split_k=slices)
        problem = GemmProblem.dense(DTYPES[letter], m, n, k, *(Op.from_letter(t, "t") for t in trans))
        plan = gemm_plan(ctx, problem, params, "guard", slices)
        conjugated = letter == "z" and "C" in trans            # (a conjugating pack first)
        assert plan.summed and len(plan.launches()) == 1 + conjugated


@pytest.mark.parametrize("params,letter", [(LOCAL, "s"), (dataclasses.replace(LOCAL, layout="TT"), "z"), (MMA, "d"),
                                           (dataclasses.replace(MMA, layout="TN", complex_method="3m"), "z")])
def test_a_whole_product_split_in_slices_is_summed_by_the_unguarded_kernel(ctx, params, letter):
    """Whole blocks and slices, A and B aligned where they lie: the kernel that adds its slices up is the
    unguarded one (its wide loads, no edge tests), one launch; right on a NaN-poisoned C, the same bits
    twice. One row more, and it is guarded."""
    dt, slices = DTYPES[letter], 4
    m, n, k = 2 * params.block_rows, 3 * params.block_cols, 2 * slices * params.tile_k
    trans = tuple(params.layout)
    problem = GemmProblem.dense(dt, m, n, k, *(Op.from_letter(t, "t") for t in trans))
    plan = gemm_plan(ctx, problem, params, split_k=slices)
    assert plan.summed and not plan.guarded and not plan.c_temp and len(plan.launches()) == 1
    rng = np.random.default_rng(slices)
    a = random_matrix(rng, dt, (k, m) if trans[0] == "T" else (m, k))
    b = random_matrix(rng, dt, (n, k) if trans[1] == "T" else (k, n))
    results = two_runs(ctx, plan, a, b, 0.5)
    wide = dt.reference_numpy
    reference = 0.5 * ((a.T if trans[0] == "T" else a).astype(wide) @ (b.T if trans[1] == "T" else b).astype(wide))
    assert relative_error(results[0], reference) < dt.tolerance and results[0].tobytes() == results[1].tobytes()
    run_and_check(ctx, params, dt, m, n, k, *trans, 1.5, 0.5, "auto", rng, split_k=slices)
    ragged = GemmProblem.dense(dt, m + 1, n, k, *(Op.from_letter(t, "t") for t in trans))
    assert gemm_plan(ctx, ragged, params, split_k=slices).guarded


def test_a_kernel_adds_up_at_most_so_many_partial_sums_in_all(ctx, monkeypatch):
    """``SUMMED_MAX_PARTIALS``: slices x C of a summed split stay within it (beyond, their traffic costs more
    than the idle units the split fills); a C that alone fills it is not split below ``SPLIT_MIN_WORK``."""
    from autogemm.blas.coverage import SUMMED_MAX_PARTIALS, most_summed

    monkeypatch.setattr(ctx, "device", dataclasses.replace(ctx.device, compute_units=4096))
    for m, n in ((64, 64), (512, 512), (1024, 1024)):
        problem = GemmProblem.dense(DTYPES["s"], m, n, 512)       # (under SPLIT_MIN_WORK)
        plan = gemm_plan(ctx, problem, LOCAL)
        padded = -(-m // LOCAL.block_rows) * LOCAL.block_rows * -(-n // LOCAL.block_cols) * LOCAL.block_cols
        assert plan.slices * padded <= max(SUMMED_MAX_PARTIALS, padded) and plan.slices <= most_summed(LOCAL, problem)
        assert (plan.slices > 1) == (2 * padded <= SUMMED_MAX_PARTIALS) and plan.summed == (plan.slices > 1)


def test_an_nvidia_device_builds_the_summing_kernel_with_a_fence_for_the_whole_device(ctx, monkeypatch):
    """NVIDIA's OpenCL compiles ``mem_fence`` to a fence for the work-group alone (PTX ``membar.cta``):
    there the kernel that adds its slices up is built with ``PTX_FENCE`` defined, which makes its fences
    ``membar.gl``; other plans, and other devices, build without it."""
    from autogemm.codelets.writer import NVIDIA_FENCE_OPTIONS

    built = []
    monkeypatch.setattr(ctx, "kernel", lambda source, name, options=(): built.append((name, options, source)))
    problem = GemmProblem.dense(DTYPES["s"], 33, 17, 301)
    for vendor, slices in (("NVIDIA Corporation", 3), ("NVIDIA Corporation", 1), (ctx.device.vendor, 3)):
        built.clear()
        monkeypatch.setattr(ctx, "device", dataclasses.replace(ctx.device, vendor=vendor, platform_name=vendor))
        plan = gemm_plan(ctx, problem, LOCAL, "guard", slices)
        options, source = next((options, source) for name, options, source in built if name == "gemm")
        fenced = all(option in options for option in NVIDIA_FENCE_OPTIONS)
        assert fenced == (plan.summed and ctx.device.is_nvidia)
        assert ('asm volatile("membar.gl;"' in source) == plan.summed


@pytest.fixture
def unsummed(monkeypatch):
    """Kernels that add up no more than one slice (``most_summed`` 1): a guarded split is merged after."""
    from autogemm.blas import coverage

    monkeypatch.setattr(coverage, "SUMMED_MAX_ELEMENTS", 1)


SLICING = [(params, letter) for params in (LOCAL, dataclasses.replace(LOCAL, layout="TT")) for letter in "sdz"] + [
    (params, letter) for params in (MMA, dataclasses.replace(MMA, layout="TN")) for letter in "dz"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=st.sampled_from(SLICING), m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 400),
       slices=st.integers(2, 12), alpha=st.sampled_from([1.0, -0.5]), beta=st.sampled_from([0.0, 2.0]),
       seed=st.integers(0, 2**32 - 1))
def test_slices_the_kernel_does_not_add_up_are_read_in_place_and_merged(ctx, unsummed, chosen, m, n, k, slices,
                                                                        alpha, beta, seed):
    """A product split in more slices than its kernel adds up, each slice under the device's in-place
    bound (under ``edge='auto'``): guarded, its slices read where A and B lie, each into its layer of a
    temporary C that the merge adds up (no pack);
    right for any M, N and K (slices past K's end left empty), operands at offsets with wider leading
    dimensions, beta 0 on a NaN-poisoned C."""
    params, letter = chosen
    trans = {"TT": ("T", "T"), "TN": ("T", "N"), "NN": ("N", "N"), "NT": ("N", "T")}[params.layout]
    run_and_check(ctx, params, DTYPES[letter], m, n, k, *trans, alpha, beta, "auto", np.random.default_rng(seed),
                  extra_ld=1, offset=2, split_k=slices)
    op_a, op_b = (Op.from_letter(t, "t") for t in trans)
    problem = GemmProblem(DTYPES[letter], m, n, k, op_a, op_b, lda=(m if op_a.transposed else k) + 1,
                          ldb=(k if op_b.transposed else n) + 1, ldc=n + 1, offset_a=2, offset_b=2, offset_c=2)
    plan = gemm_plan(ctx, problem, params, "auto", slices)          # (the plan run_and_check ran)
    whole = m % params.block_rows == 0 and n % params.block_cols == 0 and k % (slices * params.tile_k) == 0
    assert not plan.summed and plan.c_temp and (plan.guarded or whole)
    if plan.guarded:
        assert plan.sliced and plan.launches()[-1] == "merge C" and "slices read in place" in plan.describe()
        assert not any(route.packed for route in plan.staging.values())
        assert plan.traffic().launches == 2


@pytest.mark.parametrize("letter", "sh")
def test_a_guarded_split_is_merged_where_the_kernel_does_not_add_it_up(ctx, unsummed, letter):
    """A ragged product split in slices that its kernel does not add up: two launches (the kernel reading
    its slices in place, the merge), where before it packed both operands first; a C of float16 the same
    way, its kernel reading A and B in their 16 bits and the merge rounding into C, and asked to guard,
    adding the slices up into C itself, as for float32. A family whose kernels cannot find their slices
    (cpu), or whose guarded kernels the packs pay for (subgroup), still pads."""
    from autogemm.codelets.cpu import CpuParams

    dt, rng = DTYPES[letter], np.random.default_rng(3)
    m, n, k = 2 * LOCAL.block_rows + 3, LOCAL.block_cols + 5, 29 * LOCAL.tile_k + 3
    plan = gemm_plan(ctx, GemmProblem.dense(dt, m, n, k), LOCAL, "auto", 4)
    assert plan.guarded and plan.sliced and not plan.summed and plan.launches()[1:] == [
        "merge C" + " (to float16)" * (letter == "h")]
    run_and_check(ctx, LOCAL, dt, m, n, k, "N", "N", 1.5, 0.0, "auto", rng, extra_ld=2, offset=3, split_k=4)
    guarded = gemm_plan(ctx, GemmProblem.dense(dt, m, n, k), LOCAL, "guard", 4)
    assert guarded.sliced and guarded.summed and len(guarded.launches()) == 1   # (asked to guard: summed)
    run_and_check(ctx, LOCAL, dt, m, n, k, "N", "N", 1.5, 0.5, "guard", rng, split_k=4)
    cpu = gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], m, n, k), CpuParams(tile_rows=4, vector_width=8), "auto", 4)
    subgroup = gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], m, n, k), SUMMING[2], "auto", 4)
    for padded in (cpu, subgroup):
        assert not padded.guarded and not padded.sliced and padded.c_temp


def test_a_split_whose_slices_are_large_products_is_padded_as_before(ctx, unsummed, monkeypatch):
    """Each slice of a merged split is a product of its own: read in place under the device's
    ``in_place_multiply_adds``, packed and padded from there (its kernel's time then outweighs the
    packs)."""
    from limits import set_thresholds

    m, n, k, slices = 2 * LOCAL.block_rows + 3, LOCAL.block_cols + 5, 29 * LOCAL.tile_k + 3, 4
    per_slice = m * n * -(-k // slices)
    for bound, guarded in ((per_slice + 1, True), (per_slice, False)):
        set_thresholds(monkeypatch, in_place_multiply_adds=bound)
        plan = gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], m, n, k), LOCAL, "auto", slices)
        assert plan.guarded == guarded and plan.sliced == guarded and plan.c_temp and not plan.summed
        assert any(route.packed for route in plan.staging.values()) != guarded


def test_lanes_are_a_power_of_two_each_adding_a_few_slices():
    """A work-item an element up to ``2 LANE_MIN_SLICES - 1`` slices; then as many as keep a lane to
    ``LANE_MIN_SLICES`` slices or more, a power of two, up to the most given (the merge's: one work-group's
    ``TILE``), rounded down to a power of two."""
    assert helpers.LANE_MIN_SLICES == 4 and helpers.TILE == 16
    slices = (1, 2, 7, 8, 15, 16, 63, 64, 1000)
    assert [helpers.lanes_for(s, helpers.TILE) for s in slices] == [1, 1, 1, 2, 2, 4, 8, 16, 16]
    assert [helpers.lanes_for(s, 3) for s in slices] == [1, 1, 1, 2, 2, 2, 2, 2, 2]


@pytest.mark.parametrize("letter", "sdzh")
@pytest.mark.parametrize("slices", [1, 3, 9, 16, 37, 100])
def test_merge_adds_many_slices_with_several_work_items_an_element(ctx, letter, slices):
    """``merge`` with ``lanes_for(slices, TILE)`` work-items to an element of a 13 x 21 C (rows off the
    work-group's, an element's lanes in one work-group), slices padded to a leading dimension of 24 (in
    the compute type: float32 for a 16-bit C): into a NaN-poisoned C with beta 0 (C not read) and into C
    with beta, at an offset and a leading dimension of its own, the elements past C's rows and columns
    untouched."""
    dt = DTYPES[letter]
    lanes = helpers.lanes_for(slices, helpers.TILE)
    m, n, t_ld, ldc, offset = 13, 21, 24, 25, 3
    rng = np.random.default_rng(slices)
    slices_of_t = random_matrix(rng, dt.compute, (slices, m, t_ld))
    kernel = ctx.kernel(helpers.epilogues(dt).source, "merge")
    arguments = KernelArguments(dt.scalar_numpy.type)
    grid = (-(-n // helpers.TILE) * helpers.TILE, -(-m * lanes // helpers.TILE) * helpers.TILE, 1)
    want_sum = slices_of_t.astype(dt.reference_numpy).sum(axis=0)[:, :n]
    t_buffer = ocl.buffer_of(ctx.context, slices_of_t)
    for alpha, beta in ((1.5, 0.0), (-1.0, 0.5)):
        c = random_matrix(rng, dt, (offset + (m + 2) * ldc,))       # two rows past C's
        if beta == 0:
            c[:] = np.nan
        c_buffer = ocl.buffer_of(ctx.context, c)
        try:
            arguments.set(kernel, helpers.MERGE_SIGNATURE, m, n, t_buffer, t_ld, m * t_ld, slices, alpha,
                          c_buffer, offset, ldc, beta, 0, lanes)
            ocl.launch(ctx.queue, kernel, grid, (helpers.TILE, helpers.TILE, 1))
            got = np.empty_like(c)
            cl.enqueue_copy(ctx.queue, got, c_buffer).wait()
        finally:
            c_buffer.release()
        matrix = lambda flat: flat[offset:].reshape(m + 2, ldc)   # noqa: E731
        want = alpha * want_sum + (beta * matrix(c)[:m, :n].astype(dt.reference_numpy) if beta else 0)
        assert relative_error(matrix(got)[:m, :n], want) < tolerance(dt, slices), (lanes, beta)
        assert np.array_equal(matrix(got)[:, n:], matrix(c)[:, n:], equal_nan=True)
        assert np.array_equal(matrix(got)[m:], matrix(c)[m:], equal_nan=True)
        assert np.array_equal(got[:offset], c[:offset], equal_nan=True)
    t_buffer.release()
