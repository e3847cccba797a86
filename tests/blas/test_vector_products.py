"""A product whose C has at most ``MAX_VECTORS`` columns or rows goes to the multi-vector GEMV (reading
the matrix once, at memory bandwidth) and is right: every dtype, transpose and conjugation, alpha and
beta, sizes off every block (one vector, 2^k +- 1 of them, a reduction shorter than a slice, more slices
than reduction steps), host and device operands, a NaN-poisoned C with beta = 0, and the same bits on
every run."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from limits import set_thresholds

import autogemm
from autogemm.accuracy import apply_op, random_matrix, random_operands, relative_error, tolerance
from autogemm.blas import GemmProblem, Op
from autogemm.blas import gemv as gemv_plans
from autogemm.blas.plans import gemm_plan
from autogemm.blas.selection import vectors_route
from autogemm.blas.vectors import MAX_VECTORS, VectorsPlan, as_vectors
from autogemm.codelets.gemv import GemvParams
from autogemm.codelets.gemv.params import SHORT_FILL, SHORT_LANES, SHORT_STEPS
from autogemm.codelets.helpers import LANE_MIN_SLICES
from autogemm.dtypes import DTYPES
from autogemm.profiles import thresholds_for

RNG = np.random.default_rng(31)
VECTOR_COUNTS = (1, 3, 8, MAX_VECTORS - 1, MAX_VECTORS)
CASES = [(letter, ta, tb, few, VECTOR_COUNTS[i % len(VECTOR_COUNTS)])
         for i, (letter, (ta, tb), few) in enumerate(itertools.product(
             "sdczhb", itertools.product("NTC", repeat=2), ("columns", "rows")))
         if not (letter in "hb" and "C" in (ta, tb))]


@pytest.fixture
def routed(monkeypatch):
    """The products that went to the multi-vector GEMV, as (vectors, whether B was the matrix); a small
    one of a K deep enough goes to the GEMV too."""
    set_thresholds(monkeypatch, vectors_min_multiply_adds=0)
    calls = []
    real = VectorsPlan.__init__

    def spy(self, ctx, problem, route, *chosen):
        calls.append((route.gemv.vectors, route.matrix_is_b))
        real(self, ctx, problem, route, *chosen)

    monkeypatch.setattr(VectorsPlan, "__init__", spy)
    autogemm.clear_plans()
    yield calls
    autogemm.clear_plans()


def _operands(dt, m, n, k, ta, tb):
    a, b = random_operands(RNG, dt, m, n, k, ta, tb)
    wide = dt.reference_numpy
    return a, b, apply_op(a.astype(wide), ta) @ apply_op(b.astype(wide), tb)


@pytest.mark.parametrize("letter, ta, tb, few, vectors", CASES)
def test_a_product_of_few_columns_or_rows_is_right_and_goes_to_gemv(ctx, host_memory, routed, letter, ta, tb, few,
                                                                   vectors):
    dt = DTYPES[letter]
    k = max(131, thresholds_for(ctx.device).vectors_min_depth + 3)
    m, n = (77, vectors) if few == "columns" else (vectors, 77)
    a, b, product = _operands(dt, m, n, k, ta, tb)
    got = autogemm.gemm(a, b, trans_a=ta, trans_b=tb, device=ctx.device)
    assert got.shape == (m, n) and relative_error(got, product) < tolerance(dt, k)
    c0 = random_matrix(RNG, dt, (m, n))
    c = c0.copy()
    assert autogemm.gemm(a, b, c, alpha=0.5, beta=-2.0, trans_a=ta, trans_b=tb, device=ctx.device) is c
    assert relative_error(c, 0.5 * product - 2.0 * c0.astype(dt.reference_numpy)) < tolerance(dt, k)
    assert routed and all(call == (vectors, few == "rows") for call in routed)


#: Work-groups of 64 (a kernel's slices added up by one or two work-items an output, as the device's
#: compute units split it) and of 256 for a block of outputs and vectors that a quarter of them covers,
#: its reduction split into one step a slice (2 and 4 work-items an output, neither dividing the slices).
SPLIT_CONFIGURATIONS = {"narrow": dict(wg_x=16, wg_y=4, per_item=2, unroll=2, waves=16, vectors=4),
                        "wide": dict(wg_x=16, wg_y=16, per_item=1, unroll=1, waves=16, vectors=4)}


@pytest.mark.parametrize("letter", ["s", "z"])
@pytest.mark.parametrize("summed", [True, False])
@pytest.mark.parametrize("matrix", ["A", "B"])
@pytest.mark.parametrize("layout", ["N", "T"])
@pytest.mark.parametrize("k,configuration", [(1, "narrow"), (5, "narrow"), (33, "narrow"), (1025, "narrow"),
                                             (205, "wide"), (1025, "wide")])
def test_a_split_reduction_is_right_and_the_same_bits_on_every_run(ctx, monkeypatch, layout, matrix, k,
                                                                   configuration, summed, letter):
    """Reductions shorter than one slice and longer than many, split as far as the configuration asks
    (more slices than reduction steps are cut to one step each), the slices added up by the kernel (each
    output's by ``summing_lanes`` work-items) or (more partial sums than
    ``SUMMED_MAX_READS`` a work-item) by the merge, Y a row per vector (B the matrix) or a column (A):
    right, and bit-for-bit equal on two runs into a poisoned C (the slices added in an order of the
    configuration's, never by atomic adds; the counts of arrivals back at zero for the second)."""
    if not summed:
        monkeypatch.setattr(gemv_plans, "SUMMED_MAX_READS", 0)
    dt = DTYPES[letter]
    params = GemvParams(layout, **SPLIT_CONFIGURATIONS[configuration])
    if configuration == "wide":
        step = params.reduction_step
        monkeypatch.setattr(gemv_plans.GemvLaunchPlan, "_split", lambda plan: (-(-k // step), step))
    # 7 vectors: two passes of 4, the last one short; few outputs, so the reduction splits; the operands
    # stored as the layout reads them, X unpacked
    if matrix == "B":
        (m, n), ta, tb = (7, 13), "N", "T" if layout == "N" else "N"
    else:
        (m, n), ta, tb = (13, 7), "N" if layout == "N" else "T", "T"
    a, b, product = _operands(dt, m, n, k, ta, tb)
    problem = GemmProblem.dense(dt, m, n, k, Op(ta == "T"), Op(tb == "T"))
    route = as_vectors(problem)
    assert route is not None and route.matrix_is_b == (matrix == "B") and route.gemv.layout == layout
    plan = VectorsPlan(ctx, problem, route, params)
    assert (plan.gemv.slices > 1) == (k > params.reduction_step) and plan.gemv.slices <= -(-k // params.reduction_step)
    assert plan.gemv.sums_slices == (summed and plan.gemv.slices > 1) and not plan.gemv.packs_x
    if configuration == "wide":
        assert plan.gemv.slices == {205: 13, 1025: 65}[k]
        assert plan.gemv.lanes == ({205: 2, 1025: 4}[k] if summed else 1)
        assert plan.gemv.merge_lanes == (1 if summed else {205: 2, 1025: 16}[k])
    results = []
    poison = np.full((m, n), np.nan, dt.numpy)
    mf = cl.mem_flags
    buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, poison)]
    try:
        for _ in range(2):
            cl.enqueue_copy(ctx.queue, buffers[2], poison)
            launches = plan.enqueue(*buffers)
            assert len(launches) == 1 + (plan.gemv.slices > 1 and not summed)
            out = np.empty((m, n), dt.numpy)
            cl.enqueue_copy(ctx.queue, out, buffers[2]).wait()
            results.append(out)
    finally:
        plan.release()
        for buffer in buffers:
            buffer.release()
    assert relative_error(results[0], product) < tolerance(dt, k)
    assert results[0].tobytes() == results[1].tobytes()


def test_sizes_at_the_edges_of_the_route(ctx, routed):
    dt = DTYPES["d"]
    depth = thresholds_for(ctx.device).vectors_min_depth
    for m, n, k in ((0, 5, 9), (5, 0, 9), (33, 15, depth), (MAX_VECTORS, MAX_VECTORS, depth + 1), (65, 17, 63),
                    (40, 2, depth - 1), (40, 1, 3)):
        a, b, product = _operands(dt, m, n, k, "N", "N")
        c0 = random_matrix(RNG, dt, (m, n))
        got = autogemm.gemm(a, b, c0.copy(), beta=0.5, device=ctx.device)
        assert got.shape == (m, n) and np.allclose(got, product + 0.5 * c0, rtol=1e-12, atol=1e-12), (m, n, k)
    # the empty products never make a plan; 17 columns and rows is a GEMM, and so are several columns over
    # a K shorter than the device's vectors_min_depth where that GEMM runs in one launch (the device's
    # choice for it may pack); one column is a GEMV over any K
    short = GemmProblem.dense(dt, 40, 2, depth - 1)
    one_launch = len(gemm_plan(ctx, short).launches()) == 1
    assert routed == [(15, False), (MAX_VECTORS, False), *([] if one_launch else [(2, False)]), (1, False)]
    assert as_vectors(short) is not None and (vectors_route(ctx.device, short) is None) == one_launch
    # both operands transposed: the same rule (the simt family reads them as they lie); an operand to
    # conjugate is packed first, so that product is the GEMV's
    short_tt = GemmProblem.dense(dt, 40, 2, depth - 1, Op(transposed=True), Op(transposed=True))
    assert (vectors_route(ctx.device, short_tt) is None) == (len(gemm_plan(ctx, short_tt).launches()) == 1)
    short_ct = GemmProblem.dense(DTYPES["z"], 40, 2, depth - 1, Op(True, True), Op(transposed=True))
    assert vectors_route(ctx.device, short_ct) == as_vectors(short_ct)


def test_a_small_product_of_several_vectors_runs_a_gemm_kernel_where_it_takes_one_launch(ctx, monkeypatch):
    """``Thresholds.vectors_min_multiply_adds``: under it several vectors over any K run a GEMM kernel
    where its plan is one launch and the GEMV's would pack X first; from it, the GEMV. A GEMV that needs
    no pack takes the product whatever its work (it splits K, which a GEMM kernel's one block would not)."""
    dt, depth = DTYPES["s"], thresholds_for(ctx.device).vectors_min_depth
    problem = GemmProblem.dense(dt, 6, 17, depth + 8, Op(transposed=True), Op(transposed=True))
    unpacked = GemmProblem.dense(dt, 6, 17, depth + 8, Op(transposed=True), Op())
    assert as_vectors(problem).gemv.packs_x and not as_vectors(unpacked).gemv.packs_x
    set_thresholds(monkeypatch, vectors_min_multiply_adds=2**40)
    assert vectors_route(ctx.device, unpacked) == as_vectors(unpacked)
    work = problem.m * problem.n * problem.k
    one_launch = len(gemm_plan(ctx, problem).launches()) == 1
    set_thresholds(monkeypatch, vectors_min_multiply_adds=work + 1)
    assert (vectors_route(ctx.device, problem) is None) == one_launch
    set_thresholds(monkeypatch, vectors_min_multiply_adds=work)
    assert vectors_route(ctx.device, problem) == as_vectors(problem)
    a, b, product = _operands(dt, 6, 17, depth + 8, "T", "T")
    assert relative_error(autogemm.gemm(a, b, trans_a="T", trans_b="T", device=ctx.device), product) < \
        tolerance(dt, depth + 8)


def test_device_operands_with_offsets_and_a_poisoned_fortran_c(ctx, routed):
    dt = DTYPES["c"]
    k = thresholds_for(ctx.device).vectors_min_depth + 7        # deep enough for the GEMV
    a, x = random_matrix(RNG, dt, (90, k)), random_matrix(RNG, dt, (k, 5))
    stack = cl_array.to_device(ctx.queue, np.concatenate([random_matrix(RNG, dt, (3, k)), a]))
    da, dx = stack[3:], cl_array.to_device(ctx.queue, x)
    dc = autogemm.gemm(da, dx)
    assert dc.shape == (90, 5) and relative_error(dc.get(), a @ x) < dt.tolerance
    wide = np.full((90, 9), np.nan, np.complex64, order="F")    # C columns of a wider Fortran matrix
    out = wide[:, 2:7]
    autogemm.gemm(a, x, out, beta=0.0)                          # NaN in C is not read with beta = 0
    assert relative_error(out, a @ x) < dt.tolerance and np.isnan(wide[:, [0, 1, 7, 8]]).all()
    dout = cl_array.to_device(ctx.queue, np.full((5, 90), np.nan, np.complex64))
    result = autogemm.gemm(dx, da, dout, alpha=2.0, trans_a="T", trans_b="C")
    assert result is dout and dout.events
    assert relative_error(dout.get(), 2 * x.T @ a.conj().T) < dt.tolerance
    assert len(routed) == 3


def test_matmul_of_a_matrix_and_a_vector_is_a_gemv(ctx, routed):
    a, v = random_matrix(RNG, DTYPES["s"], (64, 48)), random_matrix(RNG, DTYPES["s"], (48,))
    assert relative_error(autogemm.matmul(a, v, device=ctx.device), a.astype(np.float64) @ v) < 1e-5
    w = random_matrix(RNG, DTYPES["s"], (64,))
    assert relative_error(autogemm.matmul(w, a, device=ctx.device), w.astype(np.float64) @ a) < 1e-5
    assert routed == [(1, False), (1, True)]


def test_what_the_gemv_does_not_compute_stays_a_gemm(ctx, routed):
    a = random_matrix(RNG, DTYPES["s"], (32, 16))
    x = random_matrix(RNG, DTYPES["s"], (16, 1))
    autogemm.gemm(a, x, config=autogemm.SimtParams(), device=ctx.device)          # a configuration asked for
    half = random_matrix(RNG, DTYPES["h"], (32, 16)), random_matrix(RNG, DTYPES["h"], (16, 1))
    got = autogemm.gemm(*half, out_dtype=np.float32, device=ctx.device)           # C of another dtype
    assert got.dtype == np.float32 and got.shape == (32, 1)
    autogemm.gemm(a, x, precision="tf32", device=ctx.device)                      # a precision mode
    stack = random_matrix(RNG, DTYPES["s"], (3, 32, 16))
    autogemm.gemm_batched(stack, x, device=ctx.device)                            # a batch
    autogemm.gemm(a, random_matrix(RNG, DTYPES["s"], (16, MAX_VECTORS + 1)), device=ctx.device)
    assert routed == []


@settings(max_examples=25, deadline=None)
@given(layout=st.sampled_from("NT"), matrix=st.sampled_from("AB"),
       group=st.sampled_from(((8, 8), (16, 4), (4, 16), (32, 8), (8, 32), (16, 16))),
       per_item=st.sampled_from((1, 2)), unroll=st.sampled_from((1, 2)), vector_block=st.sampled_from((1, 2, 4, 8)),
       few=st.integers(2, 9), outputs=st.integers(10, 70), slices=st.integers(LANE_MIN_SLICES, 40),
       short=st.integers(0, 3), letter=st.sampled_from("sz"), seed=st.integers(0, 2**32 - 1))
def test_any_configuration_adds_up_a_split_right(ctx, layout, matrix, group, per_item, unroll, vector_block, few,
                                                 outputs, slices, short, letter, seed):
    """Any work-group shape, outputs and vectors per work-item and block of vectors, with the reduction
    split into ``slices`` of one step each (the last ``short`` of a step): the kernel's lanes (as many as
    ``summing_lanes`` gives, often not a divisor of the slices) add each output's slices up right, into a
    poisoned C, with beta 0."""
    dt = DTYPES[letter]
    params = GemvParams(layout, *group, per_item, unroll, 16, vectors=vector_block)
    step = params.reduction_step
    k = max(1, slices * step - short)
    m, n = (few, outputs) if matrix == "B" else (outputs, few)
    # the matrix stored as the layout reads it, the vectors (the other operand) so that X is not packed
    ta, tb = {("A", "N"): "NT", ("A", "T"): "TT", ("B", "N"): "NT", ("B", "T"): "NN"}[matrix, layout]
    a, b = random_operands(np.random.default_rng(seed), dt, m, n, k, ta, tb)
    product = apply_op(a.astype(dt.reference_numpy), ta) @ apply_op(b.astype(dt.reference_numpy), tb)
    problem = GemmProblem.dense(dt, m, n, k, Op(ta == "T"), Op(tb == "T"))
    route = as_vectors(problem)
    assert route is not None and route.matrix_is_b == (matrix == "B") and route.gemv.layout == layout
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gemv_plans.GemvLaunchPlan, "_split", lambda plan: (-(-k // step), step))
        plan = VectorsPlan(ctx, problem, route, params)
    assert plan.gemv.slices == -(-k // step) and plan.gemv.sums_slices
    assert plan.gemv.lanes == params.summing_lanes(min(few, vector_block), plan.gemv.slices)
    mf = cl.mem_flags
    poison = np.full((m, n), np.nan, dt.numpy)
    buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, poison)]
    try:
        assert len(plan.enqueue(*buffers)) == 1
        got = np.empty((m, n), dt.numpy)
        cl.enqueue_copy(ctx.queue, got, buffers[2]).wait()
    finally:
        plan.release()
        for buffer in buffers:
            buffer.release()
    assert relative_error(got, product) < tolerance(dt, k), plan.describe()


def test_each_lane_adds_at_least_a_few_slices_of_an_output():
    """A split's outputs are added up by as many work-items each as the work-group has to spare, a power
    of two, but never so many that a lane adds fewer than ``LANE_MIN_SLICES`` slices."""
    params = GemvParams("T", 32, 32, 1, 1, 4, vectors=16)          # 1024 work-items, 32 outputs
    assert LANE_MIN_SLICES == 4
    assert [params.summing_lanes(1, slices) for slices in (1, 7, 8, 20, 127, 128, 1000)] == [1, 1, 2, 4, 16, 32, 32]
    assert params.summing_lanes(16, 1000) == 2 and params.summing_lanes(3, 1000) == 8


@settings(max_examples=60, deadline=None)
@given(layout=st.sampled_from("NT"), wg_x=st.sampled_from((1, 8, 32, 64, 256)), wg_y=st.sampled_from((1, 2, 8)),
       per_item=st.sampled_from((1, 2, 4, 8)), unroll=st.sampled_from((1, 2, 8)),
       vector_block=st.sampled_from((1, 4, 8, 16)),
       outputs=st.integers(1, 5000), reduction=st.integers(1, 5000), vectors=st.integers(1, MAX_VECTORS))
def test_a_class_configuration_is_fitted_to_a_narrower_problem(layout, wg_x, wg_y, per_item, unroll, vector_block,
                                                               outputs, reduction, vectors):
    """``GemvParams.fitted_to`` on a device too large for the outputs to fill (no short reduction is
    spread over outputs): a problem of one vector keeps its configuration; else well formed, the same
    work-group size and vectors, no more outputs per work-item; a work-group covers less than twice the
    outputs unless it cannot shrink further; along a short reduction fewer work-items, never below 8,
    and never more steps along it (each could be a work-group of a split: another launch)."""
    params = GemvParams(layout, wg_x, wg_y, per_item, unroll, 4, vectors=vector_block)
    fitted = params.fitted_to(outputs, reduction, vectors, compute_units=10**6)
    if vectors == 1:
        assert fitted == params
        return
    assert fitted.malformed() is None and fitted.work_group_size == params.work_group_size
    assert fitted.vectors == params.vectors and fitted.per_item <= params.per_item
    across, along = (fitted.wg_x, fitted.wg_y) if layout == "T" else (fitted.wg_y, fitted.wg_x)
    assert fitted.outputs_per_group < 2 * outputs or (fitted.per_item == 1 and (across == 1 or along == 256))
    before = params.wg_y if layout == "T" else params.wg_x
    assert along >= min(8, before)
    assert -(-reduction // (along * unroll)) <= -(-reduction // (before * unroll))      # no new split of it


@settings(max_examples=60, deadline=None)
@given(wg_x=st.sampled_from((8, 32, 64, 256)), wg_y=st.sampled_from((1, 2, 4)), per_item=st.sampled_from((1, 4)),
       unroll=st.sampled_from((1, 2, 8)), outputs=st.integers(1, 200000), reduction=st.integers(1, 5000),
       vectors=st.integers(1, MAX_VECTORS))
def test_a_short_reduction_of_many_outputs_is_read_by_fewer_work_items_a_row(wg_x, wg_y, per_item, unroll, outputs,
                                                                              reduction, vectors):
    """In layout N, where the reduction takes at most ``SHORT_STEPS`` steps of the work-group, work-items
    move from it to outputs (down to ``SHORT_LANES`` a row) while the work-groups (of every pass over A
    for a group of vectors) cover ``SHORT_FILL`` times the compute units and as many as the
    configuration's waves (4 here: no new split); the layout-T configuration and a reduction of more
    steps are not spread."""
    units = 132
    params = GemvParams("N", wg_x, wg_y, per_item, unroll, 4, vectors=4)
    narrowed = params.fitted_to(outputs, reduction, vectors, compute_units=10**6)
    fitted = params.fitted_to(outputs, reduction, vectors, units)
    assert fitted.work_group_size == params.work_group_size and fitted.per_item == narrowed.per_item
    assert fitted.wg_x <= narrowed.wg_x and fitted.wg_x >= min(SHORT_LANES, narrowed.wg_x)
    passes, fill = -(-vectors // 4), max(SHORT_FILL, 4) * units

    def groups(wg_y: int) -> int:
        return -(-outputs // (fitted.per_item * wg_y)) * passes

    if fitted.wg_x < narrowed.wg_x:      # spread: the steps were few, the groups still fill the device
        assert reduction <= SHORT_STEPS * 2 * fitted.wg_x * unroll and groups(fitted.wg_y) >= fill
    assert (fitted.wg_x == SHORT_LANES or fitted.wg_y == 256 or reduction > SHORT_STEPS * fitted.wg_x * unroll
            or groups(2 * fitted.wg_y) < fill)
    t_params = dataclasses.replace(params, layout="T")
    assert t_params.fitted_to(outputs, reduction, vectors, units) == \
        t_params.fitted_to(outputs, reduction, vectors, 10**6)


def _run_vectors_plan(ctx, plan: VectorsPlan, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """C = A B by ``plan`` on buffers of ``a``, ``b`` and ``c``, C read back into ``c``."""
    mf = cl.mem_flags
    buffers = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, c)]
    try:
        plan.enqueue(*buffers)
        cl.enqueue_copy(ctx.queue, c, buffers[2]).wait()
    finally:
        plan.release()


def test_a_short_reduction_spread_over_outputs_computes_right(ctx):
    """A wide class configuration met with thousands of rows over a K of 155 and 10 vectors takes 4
    work-items a row (of 64: 32 on a device its work-groups could not fill) and 16 times the rows a
    work-group, and still computes C right, beta 0 over a NaN-poisoned C."""
    dt = DTYPES["s"]
    m, n, k = 3001, 10, 155
    problem = GemmProblem.dense(dt, m, n, k)
    route = as_vectors(problem)
    wide = GemvParams("N", 64, 2, 4, 8, 4, vectors=8)
    params = wide.fitted_to(route.gemv.outputs, route.gemv.reduction, route.gemv.vectors, compute_units=2)
    assert (params.wg_x, params.wg_y) == (4, 32) and wide.fitted_to(m, k, n, compute_units=10**6).wg_x == 32
    a, b, product = _operands(dt, m, n, k, "N", "N")
    c = np.full((m, n), np.nan, np.float32)
    _run_vectors_plan(ctx, VectorsPlan(ctx, problem, route, params), a, b, c)
    assert relative_error(c, product) < tolerance(dt, k)


@pytest.mark.parametrize("layout", ["N", "T"])
def test_a_fitted_configuration_computes_a_narrow_product_right(ctx, layout):
    """A wide class configuration fitted to 10 vectors over 60 outputs and a short reduction computes the
    product right (two passes over A: 8 vectors, then 2)."""
    dt = DTYPES["d"]
    m, n, k = 10, 60, 155
    tb = "T" if layout == "N" else "N"
    problem = GemmProblem.dense(dt, m, n, k, Op(), Op(tb == "T"))
    route = as_vectors(problem)
    assert route is not None and route.matrix_is_b and route.gemv.vectors == 10
    params = GemvParams(layout, 64, 2, 4, 8, 4, vectors=8).fitted_to(route.gemv.outputs, route.gemv.reduction, 10,
                                                                  ctx.device.compute_units)
    assert params.vectors == 8 and params != GemvParams(layout, 64, 2, 4, 8, 4, vectors=8)
    a, b, product = _operands(dt, m, n, k, "N", tb)
    c = np.full((m, n), np.nan)
    _run_vectors_plan(ctx, VectorsPlan(ctx, problem, route, params), a, b, c)
    assert relative_error(c, product) < tolerance(dt, k)
