"""Strided-batched GEMM: one launch of each kernel computes every product of the batch, for every family,
dtype, transpose and edge mode; ``gemm_batched`` on stacks and on lists, host or device; its errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl.array as cl_array
import pytest
from gemm_check import run_and_check

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.blas import GemmProblem, Op
from autogemm.blas.plans import gemm_plan
from autogemm.codelets.nvidia_mma import MmaParams
from autogemm.codelets.simt import SimtParams
from autogemm.codelets.subgroup import SubgroupParams
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, ConfigError, ShapeError

RNG = np.random.default_rng()
SIMT = SimtParams("TN", "offset", 4, 4, 2, 2, 4, 2, True, False, double_buffer=True)
MMA = MmaParams(layout="NT", warps_m=2, warps_n=1, tiles_m=1, tiles_n=2, tile_k=8, stages=2, vector_width=1,
                mma="local")
SUBGROUP = SubgroupParams(layout="NN", subgroup=8, wg_rows=2, tile_rows=2, vector_width=2, shuffle="local",
                          mac="mul_add")


@pytest.mark.parametrize("params,letter", [(SIMT, "s"), (SIMT, "z"), (SIMT, "h"), (MMA, "d"), (SUBGROUP, "c")])
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_every_product_of_a_batch_is_exact(ctx, params, letter, edge):
    """Products a few elements apart in one buffer, inside larger ones (offsets, wider leading
    dimensions); C poisoned and everything around it checked unchanged; packs (transposes, conjugates,
    16-bit conversions) and merges batched as well."""
    dt = DTYPES[letter]
    ta, tb = ("C", "N") if dt.is_complex else ("T", "N")
    run_and_check(ctx, params, dt, 19, 13, 11, ta, tb, 1.0, 0.0, edge, RNG, extra_ld=2, offset=3, batch=5)
    run_and_check(ctx, params, dt, 16, 24, 8, "N", tb, -0.5, 2.0, edge, RNG, extra_ld=1, offset=2, batch=3,
                  shared_a=True)


def test_a_batch_is_one_launch_of_each_kernel(ctx):
    dt = DTYPES["s"]
    single = GemmProblem.dense(dt, 30, 20, 10, Op(transposed=True))
    batched = dataclasses.replace(single, batch=1000, stride_a=300, stride_b=200, stride_c=600)
    steps = [gemm_plan(ctx, p, SIMT, "pad").launches() for p in (single, batched)]
    assert len(steps[0]) == len(steps[1]) == 4 and "a batch of 1000" in steps[1][2]
    assert gemm_plan(ctx, batched, SIMT, "pad").temporary_bytes()["A"] == 1000 * gemm_plan(
        ctx, single, SIMT, "pad").temporary_bytes()["A"]


def test_a_batch_refuses_split_k_images_and_a_shared_c(ctx):
    problem = GemmProblem.dense(DTYPES["s"], 30, 20, 600)
    batched = dataclasses.replace(problem, batch=4, stride_a=30 * 600, stride_b=600 * 20, stride_c=600)
    with pytest.raises(ArgumentError, match="split K is for single products"):
        gemm_plan(ctx, batched, SIMT, "guard", split_k=2)
    if ctx.device.image_support:
        with pytest.raises(ConfigError, match="images"):
            gemm_plan(ctx, batched, SimtParams("TN", "offset", 4, 4, 4, 4, 4, 4, False, False, image_a=True), "pad")
    with pytest.raises(ShapeError, match="stride of C is 0"):
        gemm_plan(ctx, dataclasses.replace(batched, stride_c=0), SIMT)
    with pytest.raises(ShapeError, match="stride of B must be a non-negative"):
        gemm_plan(ctx, dataclasses.replace(batched, stride_b=-1), SIMT)


def _want(a, b, c, alpha, beta, ta, tb, dt):
    ref = alpha * (apply_op(a.astype(dt.reference_numpy), ta) @ apply_op(b.astype(dt.reference_numpy), tb))
    return ref + beta * c.astype(dt.reference_numpy) if beta != 0 else ref


@pytest.mark.parametrize("letter", "sdcz")
def test_host_stacks_in_any_layout(letter):
    """Row- and column-major members, a transposed stack, a shared operand, and a C whose members
    interleave (a view of the stack's middle axis)."""
    dt = DTYPES[letter]
    batch, m, n, k = 6, 21, 17, 9
    ta = "C" if dt.is_complex else "T"
    a = random_matrix(RNG, dt, (batch, k, m))
    b = np.asfortranarray(random_matrix(RNG, dt, (batch, k, n)))          # each member column-major
    c = random_matrix(RNG, dt, (m, batch, n)).transpose(1, 0, 2)          # members interleaved
    before = c.copy()
    got = autogemm.gemm_batched(a, b, c, alpha=0.5, beta=-1.0, trans_a=ta)
    assert got is c and relative_error(c, _want(a, b, before, 0.5, -1.0, ta, "N", dt)) < tolerance(dt, k)
    shared = random_matrix(RNG, dt, (n, k))
    got = autogemm.gemm_batched(a, shared, trans_a=ta, trans_b="T")
    assert got.shape == (batch, m, n)
    assert relative_error(got, _want(a, shared, None, 1.0, 0.0, ta, "T", dt)) < tolerance(dt, k)


def test_device_stacks_are_asynchronous_and_in_place(ctx):
    dt = DTYPES["d"]
    queue = ctx.queue
    a, b = random_matrix(RNG, dt, (4, 12, 10)), random_matrix(RNG, dt, (1, 10, 7))
    wide = cl_array.to_device(queue, np.full((6, 12, 9), np.nan))
    c = wide[1:5, :, 1:8]                                  # an offset view with a wider leading dimension
    got = autogemm.gemm_batched(cl_array.to_device(queue, a), b, c)
    assert got is c and got.events
    whole = wide.get()
    assert relative_error(whole[1:5, :, 1:8], a @ b) < dt.tolerance
    assert np.isnan(whole[0]).all() and np.isnan(whole[5]).all() and np.isnan(whole[:, :, [0, 8]]).all()


def test_lists_of_matrices(ctx):
    dt = DTYPES["s"]
    a = [random_matrix(RNG, dt, (9, 5)) for _ in range(4)]
    b = [random_matrix(RNG, dt, (5, 3)) for _ in range(4)]
    c = [np.full((9, 3), np.nan, np.float32) for _ in range(4)]
    assert autogemm.gemm_batched(a, b, c) == c                     # host arrays of one shape: one batch
    assert all(relative_error(ci, ai.astype(np.float64) @ bi) < dt.tolerance for ai, bi, ci in zip(a, b, c))
    mixed_a = [a[0], random_matrix(RNG, dt, (2, 8))]
    mixed_b = [cl_array.to_device(ctx.queue, b[0]), random_matrix(RNG, dt, (8, 6))]
    first, second = autogemm.gemm_batched(mixed_a, mixed_b)       # one gemm call each
    assert isinstance(first, cl_array.Array) and first.events and second.shape == (2, 6)
    assert relative_error(first.get(), a[0].astype(np.float64) @ b[0]) < dt.tolerance
    assert relative_error(second, mixed_a[1].astype(np.float64) @ mixed_b[1]) < dt.tolerance
    assert autogemm.gemm_batched([], []) == []


def test_empty_batches_and_matrices(monkeypatch):
    """An empty batch launches nothing: it once ran as a batch of one into a new C of no elements, which
    wrote past the end of that buffer (on a CPU device, the host's heap; the fuzzing found it)."""
    from autogemm.blas.launch_plan import LaunchPlan
    with monkeypatch.context() as patch:
        patch.setattr(LaunchPlan, "enqueue", lambda *args, **kwargs: pytest.fail("an empty batch launched"))
        assert autogemm.gemm_batched(np.ones((0, 3, 4)), np.ones((0, 4, 2))).shape == (0, 3, 2)
        assert autogemm.gemm_batched(np.ones((0, 5, 0), np.complex64), np.ones((0, 0, 5), np.complex64),
                                     alpha=0.0, trans_a="C", trans_b="C").shape == (0, 0, 0)
    got = autogemm.gemm_batched(np.ones((3, 2, 0)), np.ones((3, 0, 4)))
    assert got.shape == (3, 2, 4) and not got.any()


def test_errors_name_the_argument_and_change_nothing():
    a, b = np.ones((3, 4, 5)), np.ones((3, 5, 2))
    c = np.full((3, 4, 2), 7.0)
    with pytest.raises(ShapeError, match="b is a stack of 2 matrices; the batch has 3"):
        autogemm.gemm_batched(a, np.ones((2, 5, 2)))
    with pytest.raises(ShapeError, match="a and b are both 2-D"):
        autogemm.gemm_batched(a[0], b[0])
    with pytest.raises(ShapeError, match="c must be a 3-D stack"):
        autogemm.gemm_batched(a, b, c[0])
    with pytest.raises(ShapeError, match="a must be a stack of matrices"):
        autogemm.gemm_batched(np.ones((2, 3, 4, 5)), b)
    with pytest.raises(ShapeError, match="c has shape"):
        autogemm.gemm_batched(a, b, np.ones((3, 2, 4)))
    with pytest.raises(ShapeError, match="the lists differ in length: a has 2, b has 1"):
        autogemm.gemm_batched([a[0], a[1]], [b[0]])
    with pytest.raises(ArgumentError, match="b must be a list of matrices"):
        autogemm.gemm_batched([a[0]], b)
    frozen = c[0].copy()
    frozen.flags.writeable = False
    with pytest.raises(ArgumentError, match="c holds a read-only array"):
        autogemm.gemm_batched(list(a), list(b), [c[0], frozen, c[2]], beta=1.0)
    with pytest.raises(ArgumentError, match="beta is not 0"):
        autogemm.gemm_batched(a, b, beta=1.0)
    assert np.all(c == 7.0)
