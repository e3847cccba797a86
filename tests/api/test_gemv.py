"""GEMV: the codelet of every layout and configuration shape on every dtype, checked against a float64
(complex128) reference with y poisoned and its gaps watched; the public ``gemv`` on host, column-major,
strided and device operands; the BLAS quick returns; every error before anything is enqueued."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autogemm
from autogemm.accuracy import random_matrix, relative_error
from autogemm.blas import Op
from autogemm.blas import gemv as gemv_module
from autogemm.blas.gemv import GemvProblem
from autogemm.blas.plans import gemv_plan
from autogemm.codelets.gemv import GemvParams, check
from autogemm.codelets.registry import params_from_dict
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, ConfigError, DtypeError, ShapeError

RNG = np.random.default_rng()
CONFIGS = [GemvParams("N", 32, 4, 2, 4, 0), GemvParams("N", 8, 2, 1, 1, 8), GemvParams("N", 64, 1, 4, 8, 2),
           GemvParams("T", 32, 4, 2, 4, 0), GemvParams("T", 8, 2, 1, 1, 8), GemvParams("T", 16, 8, 4, 8, 16)]
SENTINEL = 7.0


def reference(dt, a, x, y, alpha, beta, op: Op) -> np.ndarray:
    ref_type = dt.reference_numpy
    a = a.astype(ref_type)
    a = a.conj() if op.conjugated else a
    product = (a.T if op.transposed else a) @ x.astype(ref_type)
    return alpha * product + (beta * y.astype(ref_type) if beta != 0 else 0)


def error_over_magnitude(got, want, dt, a, x, y, alpha, beta, op: Op) -> float:
    """||got - want|| over the size of the sums' terms, ||alpha |op(A)| |x| + beta |y|||: a sum that
    cancels (a single output of random signs) keeps the rounding of its terms, which a relative error
    of the result would blow up."""
    ref_type = dt.reference_numpy
    magnitude = np.abs(a.astype(ref_type))
    magnitude = (magnitude.T if op.transposed else magnitude) @ np.abs(x.astype(ref_type))
    scale = np.linalg.norm(abs(alpha) * magnitude + (abs(beta) * np.abs(y.astype(ref_type)) if beta != 0 else 0))
    return float(np.linalg.norm(got.astype(ref_type) - want) / scale)


def tolerance(dt, length: int) -> float:
    return dt.tolerance * max(1.0, (length / 4096) ** 0.5)


@pytest.mark.parametrize("letter", ["s", "d", "c", "z", "h", "b"])
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: p.describe().replace(" ", "-"))
def test_every_layout_and_shape_of_the_codelet(ctx, letter, params):
    """Sizes off every block (one row, one column, a prime), a wider leading dimension, increments and
    offsets; with beta 0 a NaN-poisoned y (nothing unwritten, nothing read), else a random one; the
    elements of y's buffer between and around its increments must stay as they were."""
    dt = DTYPES[letter]
    if check(params, ctx.device, dt):
        pytest.skip(check(params, ctx.device, dt))
    conjugates = (False, True) if dt.is_complex else (False,)
    for (rows, cols), conjugate, beta in [((37, 53), conjugates[-1], 0.0), ((1, 300), False, 0.5),
                                          ((300, 1), conjugates[-1], -1.0), ((129, 64), False, 0.0)]:
        op = Op(params.layout == "T", conjugate)
        lda, incx, incy, offsets = cols + 3, 2, 3, (5, 1, 2)
        problem = GemvProblem(dt, rows, cols, op, lda, incx, incy, *offsets)
        outputs, reduction = problem.outputs, problem.reduction
        a = random_matrix(RNG, dt, (offsets[0] + rows * lda,))
        x = random_matrix(RNG, dt, (offsets[1] + reduction * incx,))
        y = np.full(offsets[2] + outputs * incy + 2, SENTINEL, dt.numpy)
        y_of = (slice(offsets[2], offsets[2] + outputs * incy, incy))
        y[y_of] = np.nan if beta == 0 else random_matrix(RNG, dt, (outputs,))
        alpha = 1.5 - 0.5j if dt.is_complex else 1.5
        operands = (a[offsets[0]:].reshape(rows, lda)[:, :cols], x[offsets[1]::incx][:reduction], y[y_of].copy())
        want = reference(dt, *operands, alpha, beta, op)
        plan = gemv_plan(ctx, problem, params)
        mf = cl.mem_flags
        buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=v) for v in (a, x, y)]
        plan.enqueue(*buffers, alpha=alpha, beta=beta)
        got = np.empty_like(y)
        cl.enqueue_copy(ctx.queue, got, buffers[2]).wait()
        plan.release()
        error = error_over_magnitude(got[y_of], want, dt, *operands, alpha, beta, op)
        assert error < tolerance(dt, reduction), (rows, cols, conjugate, plan.describe())
        gaps = np.ones(y.size, bool)
        gaps[y_of] = False
        assert np.all(got[gaps] == SENTINEL), "an element of y's buffer outside y changed"


def test_a_split_reduction_is_summed_in_its_one_launch(ctx):
    """With waves the reduction of a short, wide problem is split over work-groups, which add the slices
    up themselves: one launch."""
    params = GemvParams("N", 8, 2, 1, 1, 16)
    plan = gemv_plan(ctx, GemvProblem(DTYPES["s"], 3, 5000, Op(), 5000), params)
    assert plan.slices > 1 and "summed in the kernel" in plan.describe()
    dt = DTYPES["s"]
    a, x = random_matrix(RNG, dt, (3, 5000)), random_matrix(RNG, dt, (5000,))
    mf = cl.mem_flags
    buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=v)
               for v in (a, x, np.full(3, np.nan, np.float32))]
    for _ in range(2):         # the counts of arrivals are back at zero for the second launch
        cl.enqueue_copy(ctx.queue, buffers[2], np.full(3, np.nan, np.float32))
        assert len(plan.enqueue(*buffers)) == 1
        got = np.empty(3, np.float32)
        cl.enqueue_copy(ctx.queue, got, buffers[2]).wait()
        want = a.astype(np.float64) @ x.astype(np.float64)
        assert np.abs(got - want).max() < 1e-4 * np.abs(a).sum(axis=1).max()
    plan.release()
    unsplit = gemv_plan(ctx, GemvProblem(DTYPES["s"], 3, 5000, Op(), 5000), GemvParams("N", 8, 2, 1, 1, 0))
    assert unsplit.slices == 1


def test_small_work_groups_split_a_long_reduction_until_as_many_work_items_run(ctx, monkeypatch):
    """A configuration of 32-item work-groups splits a long reduction of few outputs until about as many
    work-items run as ``waves`` x compute units groups of ``FILL_WORK_ITEMS`` would (a slice rounded to
    whole steps of the work-group); over a reduction too short for two slices of ``FILL_MIN_SLICE``, as
    its ``waves`` alone say."""
    params = GemvParams("N", 32, 1, 1, 2, 1)
    deep, short = (GemvProblem(DTYPES["s"], 3, length, Op(), length) for length in (10**7, 3000))
    wanted = ctx.device.compute_units * gemv_module.FILL_WORK_ITEMS
    small, short_small = (gemv_plan(ctx, problem, params) for problem in (deep, short))
    monkeypatch.setattr(gemv_module, "FILL_WORK_ITEMS", 0)          # as waves alone would split them
    waves_only, short_waves_only = (gemv_plan(ctx, problem, params) for problem in (deep, short))
    assert small.slices > waves_only.slices
    assert 0.9 * wanted <= small.work_groups * params.work_group_size < 1.1 * wanted + 3 * 32
    assert short_small.slices == short_waves_only.slices
    for plan in (small, short_small, waves_only, short_waves_only):
        plan.release()


@pytest.mark.parametrize("letter", ["s", "z", "h"])
@pytest.mark.parametrize("trans", ["N", "T", "C"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_gemv_on_host_arrays(letter, trans, order):
    dt = DTYPES[letter]
    a = np.asarray(random_matrix(RNG, dt, (45, 70)), order=order)
    op = Op.from_letter(trans, "trans")
    m, n = (70, 45) if op.transposed else (45, 70)
    x = random_matrix(RNG, dt, (n,))
    y = random_matrix(RNG, dt, (m,))
    before = a.copy(), x.copy(), y.copy()
    got = autogemm.gemv(a, x, trans=trans)
    assert got.shape == (m,) and got.dtype == dt.numpy
    assert relative_error(got, reference(dt, a, x, y, 1.0, 0.0, op)) < dt.tolerance
    out = y.copy()
    assert autogemm.gemv(a, x, out, alpha=2.0, beta=-1.0, trans=trans) is out
    assert relative_error(out, reference(dt, a, x, y, 2.0, -1.0, op)) < dt.tolerance
    for was, now in zip(before, (a, x, y)):
        assert np.array_equal(was, now)


def test_gemv_on_strided_views_and_device_arrays(ctx):
    """Every-other-column views, a vector that is a column of a matrix, a y with a stride; device operands
    return at once with their events, mixed with host ones."""
    dt = DTYPES["d"]
    big = random_matrix(RNG, dt, (60, 90))
    a = big[5:50, 3:90:2]                      # 45 x 44, not contiguous
    x = big[:44, 1]                            # a column: stride 90 elements
    y = np.full((45, 3), SENTINEL)
    got = autogemm.gemv(a, x, y[:, 1], alpha=0.5, beta=2.0)
    want = 0.5 * a @ x + 2.0 * SENTINEL
    assert relative_error(got, want) < dt.tolerance and np.all(y[:, [0, 2]] == SENTINEL)
    queue = ctx.queue
    da = cl_array.to_device(queue, np.ascontiguousarray(big))[5:50]     # an offset into its buffer
    dx = cl_array.to_device(queue, random_matrix(RNG, dt, (45,)))
    result = autogemm.gemv(da, dx, trans="T")
    assert isinstance(result, cl_array.Array) and result.events
    assert relative_error(result.get(), big[5:50].T @ dx.get()) < dt.tolerance
    mixed = autogemm.gemv(da, dx.get(), trans="T")
    assert isinstance(mixed, cl_array.Array)
    assert relative_error(mixed.get(), big[5:50].T @ dx.get()) < dt.tolerance
    dy = cl_array.to_device(queue, np.full(90, np.nan))
    assert autogemm.gemv(da, dx, dy, trans="T", wait_for=list(result.events)) is dy
    assert relative_error(dy.get(), big[5:50].T @ dx.get()) < dt.tolerance


def test_blas_quick_returns():
    """alpha 0 reads neither A nor x (NaN there stays out of y); beta 0 never reads y; an empty reduction
    gives beta y; an empty y is returned as it is."""
    a = np.full((5, 4), np.nan, np.float32)
    x = np.full(4, np.nan, np.float32)
    y = np.arange(5, dtype=np.float32)
    assert np.array_equal(autogemm.gemv(a, x, y.copy(), alpha=0.0, beta=3.0), 3 * y)
    a, x = np.ones((5, 4), np.float32), np.ones(4, np.float32)
    assert np.array_equal(autogemm.gemv(a, x, np.full(5, np.nan, np.float32)), np.full(5, 4, np.float32))
    assert np.array_equal(autogemm.gemv(np.ones((5, 0), np.float32), np.ones(0, np.float32), y.copy(), beta=2.0),
                          2 * y)
    assert autogemm.gemv(np.ones((0, 4), np.float32), x).shape == (0,)


def test_gemv_errors_leave_y_unchanged():
    a, x, y = np.ones((5, 4), np.float32), np.ones(4, np.float32), np.arange(5, dtype=np.float32)
    cases = [
        (dict(a=a, x=np.ones(5, np.float32)), ShapeError, "x has 5 elements"),
        (dict(a=a, x=x, y=np.ones(4, np.float32)), ShapeError, "y has 4 elements"),
        (dict(a=a, x=x.astype(np.float64)), DtypeError, "x is float64"),
        (dict(a=a, x=x, y=y, trans="X"), ArgumentError, "trans must be"),
        (dict(a=a, x=x, beta=1.0), ArgumentError, "no y was given"),
        (dict(a=a, x=np.ones((4, 1), np.float32)), ShapeError, "x must be 1-D"),
        (dict(a=a[0], x=x), ShapeError, "a must be 2-D"),
        (dict(a=a, x=x, y=y, config=GemvParams("T")), ArgumentError, "layout T"),
        (dict(a=a, x=x, y=y, config=autogemm.SimtParams()), ArgumentError, "GemvParams"),
        (dict(a=a, x=x, y=y, alpha="2"), ArgumentError, "alpha must be a number"),
        (dict(a=a, x=x, y=y, wait_for=[]), None, None),
    ]
    for kwargs, error, words in cases:
        before = y.copy()
        if error is None:
            autogemm.gemv(**kwargs)
            continue
        with pytest.raises(error, match=words):
            autogemm.gemv(**kwargs)
        assert np.array_equal(y, before)
    frozen = y.copy()
    frozen.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only"):
        autogemm.gemv(a, x, frozen)


def test_a_configuration_of_the_wrong_layout_is_refused(ctx):
    with pytest.raises(ConfigError, match="layout"):
        gemv_plan(ctx, GemvProblem(DTYPES["s"], 4, 4, Op(True), 4), GemvParams("N"))
    with pytest.raises(ConfigError, match="wg_x=3"):
        params_from_dict({"family": "gemv", "wg_x": 3}, routine=None)
    with pytest.raises(ConfigError, match="unknown kernel family 'gemv'"):
        params_from_dict(GemvParams().to_dict())          # where a GEMM kernel is expected
    assert params_from_dict(GemvParams("T", 16).to_dict(), routine=None) == GemvParams("T", 16)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(0, 70), cols=st.integers(0, 70), trans=st.sampled_from("NTC"),
       order=st.sampled_from("CF"), step_x=st.integers(1, 3), step_y=st.integers(1, 3),
       letter=st.sampled_from("sdcz"), beta=st.sampled_from([0.0, 1.0, -0.5]))
def test_gemv_matches_numpy(rows, cols, trans, order, step_x, step_y, letter, beta):
    dt = DTYPES[letter]
    a = np.asarray(random_matrix(RNG, dt, (rows, cols)), order=order)
    op = Op.from_letter(trans, "trans")
    m, n = (cols, rows) if op.transposed else (rows, cols)
    x = random_matrix(RNG, dt, (n * step_x,))[::step_x]
    y_all = random_matrix(RNG, dt, (m * step_y,))
    y = y_all[::step_y]
    want = reference(dt, a, x, y.copy(), 1.0, beta, op)
    got = autogemm.gemv(a, x, y, beta=beta, trans=trans)
    assert relative_error(got, want) < tolerance(dt, n) or (m == 0)
