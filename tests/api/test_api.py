"""The numpy-facing ``autogemm.gemm``: results for every layout of numpy arrays, BLAS edge semantics,
and clear errors that leave the caller's arrays untouched."""

from __future__ import annotations

import gc
import importlib
import weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from limits import set_thresholds

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error
from autogemm.dtypes import DTYPES
from autogemm.profiles import Thresholds

RNG = np.random.default_rng()


def reference(a, b, c, alpha, beta, ta, tb, dt):
    ref = alpha * (apply_op(a.astype(dt.reference_numpy), ta) @ apply_op(b.astype(dt.reference_numpy), tb))
    return ref + beta * c.astype(dt.reference_numpy) if c is not None and beta != 0 else ref


@pytest.mark.parametrize("letter", "sdcz")
@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_layouts_of_numpy_arrays(host_memory, letter, order):
    dt = DTYPES[letter]
    m, n, k = 45, 17, 31               # (discrete: two row blocks)
    a, b = random_matrix(RNG, dt, (m, k)), random_matrix(RNG, dt, (k, n))
    c = random_matrix(RNG, dt, (m, n))
    if order == "F":
        a, b, c = np.asfortranarray(a), np.asfortranarray(b), np.asfortranarray(c)
    elif order == "strided":   # views into wider arrays: leading dimensions beyond the columns
        a = random_matrix(RNG, dt, (m, k + 9))[:, 4:4 + k]
        b = random_matrix(RNG, dt, (2 * k, n))[::2]
        c = random_matrix(RNG, dt, (m, n + 5))[:, :n]
    alpha, beta = (0.5 + 1j, -0.5) if dt.is_complex else (0.5, -0.5)
    want = reference(a, b, c, alpha, beta, "N", "N", dt)
    out = autogemm.gemm(a, b, c, alpha=alpha, beta=beta)
    assert out is c
    assert relative_error(c, want) < dt.tolerance


def test_strided_c_leaves_the_gaps_alone(host_memory):
    dt = DTYPES["s"]
    base = random_matrix(RNG, dt, (20, 30))
    before = base.copy()
    c = base[:, 3:13]
    a, b = random_matrix(RNG, dt, (20, 8)), random_matrix(RNG, dt, (8, 10))
    autogemm.gemm(a, b, c, beta=1.0)
    assert np.array_equal(base[:, :3], before[:, :3]) and np.array_equal(base[:, 13:], before[:, 13:])
    assert relative_error(c, reference(a, b, before[:, 3:13], 1.0, 1.0, "N", "N", dt)) < dt.tolerance


@pytest.mark.parametrize("ta,tb", [("T", "C"), ("C", "N")])
def test_conjugate_transposes_on_column_major(host_memory, ta, tb):
    dt = DTYPES["z"]
    a = np.asfortranarray(random_matrix(RNG, dt, (9, 14)))
    b = random_matrix(RNG, dt, (11, 9) if tb != "N" else (9, 11))
    if ta == "C":
        a = np.asfortranarray(random_matrix(RNG, dt, (9, 14)))
        b = random_matrix(RNG, dt, (9, 11))
    out = autogemm.gemm(a, b, trans_a=ta, trans_b=tb)
    assert relative_error(out, reference(a, b, None, 1.0, 0.0, ta, tb, dt)) < dt.tolerance


@pytest.mark.parametrize("edge", ["pad", "guard"])
def test_beta_zero_does_not_read_nan_c(host_memory, edge):
    dt = DTYPES["d"]
    a, b = random_matrix(RNG, dt, (40, 30)), random_matrix(RNG, dt, (30, 50))
    c = np.full((40, 50), np.nan)
    autogemm.gemm(a, b, c, beta=0.0, edge=edge)
    assert np.all(np.isfinite(c))
    assert relative_error(c, a @ b) < dt.tolerance


def test_alpha_zero_skips_the_product_as_blas_does(host_memory):
    dt = DTYPES["s"]
    a = np.full((8, 5), np.nan, np.float32)
    b = random_matrix(RNG, dt, (5, 6))
    c = random_matrix(RNG, dt, (8, 6))
    want = 2 * c.astype(np.float64)
    autogemm.gemm(a, b, c, alpha=0.0, beta=2.0)
    assert relative_error(c, want) < dt.tolerance


def test_k_zero_scales_c(host_memory):
    c = random_matrix(RNG, DTYPES["c"], (4, 3))
    want = c * (1 - 1j)
    autogemm.gemm(np.zeros((4, 0), np.complex64), np.zeros((0, 3), np.complex64), c, beta=1 - 1j)
    assert np.allclose(c, want)


def test_empty_outputs(host_memory):
    assert autogemm.gemm(np.ones((0, 4), np.float32), np.ones((4, 3), np.float32)).shape == (0, 3)
    assert autogemm.gemm(np.ones((2, 4), np.float32), np.ones((4, 0), np.float32)).shape == (2, 0)


def test_result_without_c_is_new_array(host_memory):
    a, b = random_matrix(RNG, DTYPES["s"], (3, 4)), random_matrix(RNG, DTYPES["s"], (4, 5))
    out = autogemm.gemm(a, b, alpha=2.0)
    assert out.shape == (3, 5) and out.dtype == np.float32
    assert relative_error(out, 2 * a.astype(np.float64) @ b) < 1e-5


def _bad_calls():
    f4 = np.ones((4, 4), np.float32)
    return [
        (dict(a=f4, b=np.ones((5, 4), np.float32)), autogemm.ShapeError, "inner dimensions"),
        (dict(a=f4, b=np.ones((4, 4), np.float64)), autogemm.DtypeError, "convert"),
        (dict(a=f4.astype(np.int32), b=f4.astype(np.int32)), autogemm.DtypeError, "unsupported dtype"),
        (dict(a=f4, b=f4, trans_a="X"), autogemm.ArgumentError, "trans_a"),
        (dict(a=f4, b=f4, trans_b=1), autogemm.ArgumentError, "trans_b"),
        (dict(a=f4, b=f4, alpha=1 + 2j), autogemm.DtypeError, "complex"),
        (dict(a=f4, b=f4, alpha="2"), autogemm.ArgumentError, "alpha"),
        (dict(a=f4, b=f4, c=np.ones((4, 5), np.float32), beta=1.0), autogemm.ShapeError, "shape"),
        (dict(a=f4, b=f4, c=np.ones((4, 4), np.float64), beta=1.0), autogemm.DtypeError, "c: C of float32"),
        (dict(a=f4, b=f4, beta=1.0), autogemm.ArgumentError, "no c"),
        (dict(a=np.ones(4, np.float32), b=f4), autogemm.ShapeError, "2-D, not 1-D.*use autogemm.gemv"),
        (dict(a=[[1.0]], b=f4), autogemm.ArgumentError, "a must be a numpy or pyopencl array, not list"),
        (dict(a=f4, b=f4, edge="sideways"), autogemm.ArgumentError, "edge"),
        (dict(a=f4, b=f4, config=autogemm.SimtParams(tile_rows=3)), autogemm.ConfigError, "tile_rows"),
        (dict(a=f4, b=f4, device="no such device"), autogemm.DeviceError, "no OpenCL device"),
        (dict(a=f4, b=f4, precision="tf16"), autogemm.DtypeError, "precision 'tf16'"),
        (dict(a=f4.astype(np.float64), b=f4.astype(np.float64), precision="tf32"), autogemm.DtypeError,
         "not a mode of float64"),
    ]


@pytest.mark.parametrize("kwargs,error,words", _bad_calls())
def test_bad_input_raises_clear_error_and_changes_nothing(host_memory, kwargs, error, words):
    copies = {k: v.copy() for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    with pytest.raises(error, match=words):
        autogemm.gemm(**kwargs)
    for key, before in copies.items():
        assert np.array_equal(kwargs[key], before, equal_nan=True)


def test_read_only_c_is_refused():
    c = np.zeros((4, 4), np.float32)
    c.flags.writeable = False
    with pytest.raises(autogemm.ArgumentError, match="read-only"):
        autogemm.gemm(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), c)


def test_rejected_config_names_the_reason(device):
    too_big = autogemm.SimtParams(wg_rows=256, wg_cols=256)
    with pytest.raises(autogemm.ConfigError, match="work-group of 65536"):
        autogemm.gemm(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), config=too_big)


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_a_precision_mode_without_its_instructions_computes_in_float32(precision, device):
    if device.is_nvidia:
        pytest.skip("this device may have the instructions")
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (70, 90)).astype(np.complex64)
    b = rng.uniform(-1, 1, (90, 50)).astype(np.complex64)
    out = autogemm.gemm(a, b, precision=precision)
    assert out.dtype == np.complex64
    assert relative_error(out, a.astype(np.complex128) @ b) < 1e-6      # float32's error, not TF32's


def test_numpy_operands_cross_through_page_locked_memory_kept_between_calls(ctx, discrete, monkeypatch):
    """numpy in, numpy out goes through page-locked staging (as torch's users copy with pin_memory), in
    parts each sent on as soon as it is copied: a dense C, a column-major one and a strided one with beta,
    each right, the staging made once and reused by calls that fit; past ``pinned_max_bytes`` the arrays are
    copied as they are. (PoCL's device shares the host's memory and skips all this: it is made to look as
    if it had its own.)"""
    from autogemm.engine import transfer
    from autogemm.shares import copying, staging

    monkeypatch.setattr(transfer, "PIECE_BYTES", 256)
    monkeypatch.setattr(transfer, "PIPELINE_BYTES", 1000)         # a, b and c in several parts
    monkeypatch.setattr(copying, "COPY_THREADS", 3)               # copied by several threads
    monkeypatch.setattr(transfer, "native_copier", lambda: None)     # Python's (test_copying: native ones)
    rng = np.random.default_rng(3)
    dt = DTYPES["d"]
    a, b = random_matrix(rng, dt, (70, 45)), random_matrix(rng, dt, (45, 33))
    want = a @ b
    c = np.asfortranarray(random_matrix(rng, dt, (70, 33)))
    wide = np.full((70, 40), 7.0)
    strided = wide[:, :33]
    strided[...] = c
    for out in (c, strided):
        expected = 2.0 * want + 0.5 * out
        autogemm.gemm(a, b, out, alpha=2.0, beta=0.5, device=ctx.device)
        assert relative_error(out, expected) < dt.tolerance
    assert np.all(wide[:, 33:] == 7.0)                          # the gaps of a strided C left alone
    kept, = staging._page_locked.values()
    memory = kept.array
    assert relative_error(autogemm.gemm(a, b.T.copy(), trans_b="T", device=ctx.device), want) < dt.tolerance
    assert kept.array is memory and not kept.lock.locked()      # reused, and let go
    sent = []
    real_copy = transfer.memmove
    monkeypatch.setattr(transfer, "memmove", lambda dst, src, size: sent.append(size) or real_copy(dst, src, size))
    on_device = cl_array.to_device(ctx.queue, c)              # host operands, a device result
    got = autogemm.gemm(a, b, on_device, alpha=2.0, beta=0.5, device=ctx.device)
    assert relative_error(got.get(), 2.0 * want + 0.5 * c) < dt.tolerance
    assert sum(sent) == a.nbytes + b.nbytes and not kept.lock.locked()
    set_thresholds(monkeypatch, pinned_max_bytes=1024)
    assert relative_error(autogemm.gemm(a, b, device=ctx.device), want) < dt.tolerance


@pytest.mark.parametrize("overlap_min_bytes", [0, 20000, 2**40])
def test_a_numpy_product_in_one_block_copies_before_it_uploads_where_its_operands_are_small(
        ctx, discrete, monkeypatch, overlap_min_bytes):
    """A staged product in one block whose operands and result (A and B take 19080 bytes here, C 5280
    more) take fewer than ``overlap_min_bytes`` copies them all before its first upload, which waits on no
    user event: dense arrays as a whole call, with no part of the blocks' machinery, a strided view of A in
    one block of it; from that size each piece's upload waits for the event of its copy. Right always."""
    from autogemm.engine import transfer
    from autogemm.runtime.opencl import commands

    gemm_module = importlib.import_module("autogemm.engine.routes.opencl")
    monkeypatch.setattr(transfer, "PIECE_BYTES", 256)
    monkeypatch.setattr(transfer, "native_copier", lambda: None)     # (test_copying: the native ones)
    set_thresholds(monkeypatch, overlap_min_bytes=overlap_min_bytes)
    blocks, events = [], []
    real_blocks, real_event = gemm_module.run_blocks, commands.user_event
    monkeypatch.setattr(gemm_module, "run_blocks", lambda *args: blocks.append(len(args[5])) or real_blocks(*args))
    monkeypatch.setattr(commands, "user_event", lambda context: events.append(1) or real_event(context))
    dt = DTYPES["d"]
    a, b, old = (random_matrix(RNG, dt, shape) for shape in ((20, 45), (45, 33), (20, 33)))
    wide = np.full((20, 50), np.nan)
    wide[:, :45] = a
    for x in (a, wide[:, :45]):
        blocks.clear()
        events.clear()
        c = old.copy()
        out = autogemm.gemm(x, b, c, alpha=2.0, beta=0.5, device=ctx.device)
        assert out is c and relative_error(c, 2.0 * (a @ b) + 0.5 * old) < dt.tolerance
        if overlap_min_bytes < 2**40:
            assert blocks == [1] and len(events) > 3        # several pieces, an event each
        else:
            assert blocks == ([] if x is a else [1]) and not events


@pytest.mark.parametrize("letter, trans_a, trans_b, c_order, beta", [
    ("s", "N", "N", "new", 0.0), ("d", "T", "N", "C", 0.5), ("c", "N", "C", "F", 1.0), ("z", "C", "T", "pool", -1.0),
    ("d", "N", "T", "pool", 0.0), ("s", "T", "T", "C", 0.0)])
def test_a_whole_numpy_call_crosses_through_page_locked_memory_at_once(ctx, discrete, monkeypatch, letter, trans_a,
                                                                      trans_b, c_order, beta):
    """A product of dense numpy arrays in one block under ``overlap_min_bytes`` (a whole call, ``_staged_call``):
    the arrays copied into page-locked memory at once, uploaded, C read back into its place there and
    copied out where it is not page-locked itself: right with transposes, beta (a C that beta = 0 must not
    read is NaN), a C of the user's (row- or column-major), a page-locked one (an earlier result, which is
    also an operand in place), a new result; none of the blocks' machinery, every buffer back in the pool
    and the page-locked memory let go. Sizes are no multiple of any tile."""
    from autogemm.engine import transfer
    from autogemm.shares import staging

    gemm_module = importlib.import_module("autogemm.engine.routes.opencl")
    monkeypatch.setattr(gemm_module, "run_blocks", lambda *args: pytest.fail("ran in blocks"))
    set_thresholds(monkeypatch, result_min_bytes=0, pipelined_elements=2**40)
    copied, sent, given = [], [], []
    real_copy_all, real_enqueue = gemm_module.copy_all, gemm_module.OpenCLRoute._enqueue_whole
    monkeypatch.setattr(gemm_module, "copy_all", lambda pairs: copied.append(pairs) or real_copy_all(pairs))
    monkeypatch.setattr(gemm_module.OpenCLRoute, "_enqueue_whole",
                        lambda self, buffers, sources, *rest: sent.append(sources) or real_enqueue(self, buffers,
                                                                                                  sources, *rest))
    dt = DTYPES[letter]
    m, n, k = 37, 29, 41
    a = random_matrix(RNG, dt, (k, m) if trans_a != "N" else (m, k))
    b = random_matrix(RNG, dt, (n, k) if trans_b != "N" else (k, n))
    if c_order == "pool":       # an earlier result: page-locked C, and page-locked A
        a = autogemm.gemm(a, np.eye(a.shape[1], dtype=dt.numpy), device=ctx.device)
        assert transfer.result_pool(ctx).owns(a)
    want = apply_op(a, trans_a).astype(np.complex128) @ apply_op(b, trans_b)
    real_give_all = ctx.buffers.give_all
    monkeypatch.setattr(ctx.buffers, "give_all", lambda taken: given.append(len(taken)) or real_give_all(taken))
    if c_order == "new":
        given.clear()
        out = autogemm.gemm(a, b, trans_a=trans_a, trans_b=trans_b, device=ctx.device)
    else:
        old = random_matrix(RNG, dt, (m, n))
        c = autogemm.gemm(old, np.eye(n, dtype=dt.numpy), device=ctx.device) if c_order == "pool" else \
            {"C": old.copy(), "F": np.asfortranarray(old)}[c_order]
        c[...] = old if beta != 0 else np.nan
        want = want + beta * old
        ctx.buffers.clear()
        for size in {a.nbytes, b.nbytes, c.nbytes}:       # the pool's buffers poisoned: a C not uploaded fails
            poisoned = [ctx.buffers.take(size) for _ in range(3)]
            for buffer in poisoned:
                cl.enqueue_copy(ctx.queue, buffer, np.full(size, 255, np.uint8))
                ctx.buffers.give(buffer, size)
        given.clear()
        out = autogemm.gemm(a, b, c, alpha=1.0, beta=beta, trans_a=trans_a, trans_b=trans_b, device=ctx.device)
        assert out is c
    assert relative_error(out, want) < dt.tolerance
    assert not any(kept.lock.locked() for kept in staging._page_locked.values())
    # what crossed: each array not page-locked itself (an earlier result is), at once; every upload from
    # page-locked memory; the three buffers back in the pool
    pool = transfer.result_pool(ctx)
    kept, = staging._page_locked.values()
    low, high = kept.array.ctypes.data, kept.array.ctypes.data + kept.array.nbytes
    uploaded = (b, a) if c_order == "F" else (a, b)     # (a column-major C: the transposed product)
    uploaded += (out,) if beta != 0 else ()
    pooled = [x is a or x is out for x in uploaded] if c_order == "pool" else [False] * len(uploaded)
    assert [pool.owns(x) for x in uploaded] == pooled
    assert [src.nbytes for _, src in copied[-1]] == [x.nbytes for x, own in zip(uploaded, pooled) if not own]
    assert all((low <= source.ctypes.data < high) != own for source, own in zip(sent[-1], pooled))
    assert len(sent[-1]) == len(uploaded) and given == [3]


@pytest.mark.parametrize("letter, trans_a, trans_b, c_order, beta", [
    ("s", "N", "N", "C", 0.0), ("d", "T", "N", "C", 0.5), ("c", "N", "C", "F", 1.0), ("z", "C", "T", "strided", -1.0),
    ("d", "N", "T", "F", 0.0), ("s", "T", "T", "pool", 0.0)])
def test_numpy_products_run_in_blocks_of_rows_whose_copies_overlap(ctx, discrete, monkeypatch, letter, trans_a, trans_b,
                                                                   c_order, beta):
    """A product of numpy arrays runs in blocks of C's rows, each launched once the rows of A (and C) it
    reads are uploaded, its rows downloaded while the next computes: every block right, with transposes,
    beta (C uploaded by blocks too), a column-major C (the blocks are rows of its transpose), a strided one
    (read back whole) and a new result from the page-locked pool. Sizes are no multiple of the blocks."""
    from autogemm.engine import transfer

    gemm_module = importlib.import_module("autogemm.engine.routes.opencl")
    monkeypatch.setattr(transfer, "PIECE_BYTES", 256)
    monkeypatch.setattr(transfer, "PIPELINE_BYTES", 3000)
    set_thresholds(monkeypatch, block_tiles=1e-4, block_rows=16)
    real_blocks = gemm_module.row_blocks                       # as many blocks as the plan's waves or not
    monkeypatch.setattr(gemm_module, "row_blocks",
                        lambda problem, units, limits, *plan: real_blocks(problem, units, limits))
    ran = []
    real_execute = gemm_module.run_blocks
    monkeypatch.setattr(gemm_module, "run_blocks", lambda *args: ran.append(len(args[5])) or real_execute(*args))
    dt = DTYPES[letter]
    m, n, k = 83, 61, 47
    a = random_matrix(RNG, dt, (k, m) if trans_a != "N" else (m, k))
    b = random_matrix(RNG, dt, (n, k) if trans_b != "N" else (k, n))
    want = apply_op(a, trans_a).astype(np.complex128) @ apply_op(b, trans_b)
    if c_order == "pool":
        set_thresholds(monkeypatch, result_min_bytes=0)
        out = autogemm.gemm(a, b, trans_a=trans_a, trans_b=trans_b, device=ctx.device)
        assert transfer.result_pool(ctx).owns(out)             # written by the downloads, no copy
    else:
        old = random_matrix(RNG, dt, (m, n))
        wide = np.full((m, n + 9), np.nan, dtype=dt.numpy)
        c = {"C": old.copy(), "F": np.asfortranarray(old), "strided": wide[:, 4:4 + n]}[c_order]
        c[...] = old if beta != 0 else np.nan                   # beta = 0 must not read it
        want = want + beta * old
        out = autogemm.gemm(a, b, c, beta=beta, trans_a=trans_a, trans_b=trans_b, device=ctx.device)
        assert out is c
        if c_order == "strided":
            assert np.isnan(wide[:, :4]).all() and np.isnan(wide[:, 4 + n:]).all()
    assert ran == [3 if c_order != "F" else 2]        # 83 (or 61, C^T's) rows in blocks of 32 (2 x 16)
    assert relative_error(out, want) < dt.tolerance


@pytest.mark.parametrize("n", [3, 61])
def test_numpy_products_on_a_discrete_device_run_in_row_blocks_on_gemm_and_gemv_plans(ctx, discrete, monkeypatch, n):
    """Where the device does not share the host's memory, a product of numpy arrays is cut in row blocks
    by its plan's tiles: a GEMM plan's, or none for the multi-vector GEMV's plan of a C of few columns."""

    set_thresholds(monkeypatch, pipelined_elements=1, block_rows=16)
    dt = DTYPES["d"]
    a, b = random_matrix(RNG, dt, (97, 45)), random_matrix(RNG, dt, (45, n))
    assert relative_error(autogemm.gemm(a, b, device=ctx.device), a @ b) < dt.tolerance


@pytest.mark.parametrize("m, n, tile, spans", [
    (512, 512, None, [(0, 512)]),                        # too small to gain from overlapped copies
    (1024, 1024, None, [(0, 512), (512, 1024)]),         # fills the device in one block, runs in two
    (1024, 1024, (64, 64), [(0, 512), (512, 1024)]),     # 256 work-groups: two waves either way
    (1024, 1024, (128, 128), [(0, 1024)]),               # 64: one wave, two in two blocks
    (1000, 2000, None, [(0, 512), (512, 1000)]),
    (4096, 4096, (128, 128), [(r, r + 512) for r in range(0, 4096, 512)]),   # a block's tiles a unit, 8 at most
    (4096, 64, None, [(0, 4096)])])
def test_numpy_products_run_in_row_blocks_that_fill_the_device_and_in_two_at_least_where_waves_allow(
        m, n, tile, spans):
    from types import SimpleNamespace

    from autogemm.blas.problem import GemmProblem

    gemm_module = importlib.import_module("autogemm.engine.routes.opencl")
    params = tile and SimpleNamespace(block_rows=tile[0], block_cols=tile[1])
    assert gemm_module.row_blocks(GemmProblem.dense(DTYPES["s"], m, n, 256), 132, Thresholds(), params) == spans


def test_a_copy_that_fails_reaches_the_caller_and_leaves_nothing_waiting(ctx, discrete, monkeypatch):
    """A host copy into the page-locked memory that fails (here the third piece's, once) raises its error
    from the call once the other copies have ended; the pieces left are copied after it, so that the
    commands enqueued behind them run and end: the queues drain and the next call runs right."""
    from autogemm.engine import transfer
    from autogemm.shares import copying

    gemm_module = importlib.import_module("autogemm.engine.routes.opencl")
    monkeypatch.setattr(transfer, "PIECE_BYTES", 1024)
    monkeypatch.setattr(transfer, "PIPELINE_BYTES", 1024)
    monkeypatch.setattr(copying, "COPY_THREADS", 3)
    monkeypatch.setattr(transfer, "native_copier", lambda: None)     # Python's threads (memmove)
    set_thresholds(monkeypatch, block_tiles=1e-4, block_rows=16)
    real_blocks = gemm_module.row_blocks                       # as many blocks as the plan's waves or not
    monkeypatch.setattr(gemm_module, "row_blocks",
                        lambda problem, units, limits, *plan: real_blocks(problem, units, limits))
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (90, 70)), random_matrix(RNG, dt, (70, 50))
    copied, real_copy = [], transfer.memmove

    def failing(dst, src, nbytes):
        copied.append(nbytes)
        if len(copied) == 3:
            raise MemoryError("the third piece")
        real_copy(dst, src, nbytes)

    monkeypatch.setattr(transfer, "memmove", failing)
    with pytest.raises(MemoryError, match="third piece"):
        autogemm.gemm(a, b, device=ctx.device)
    assert sum(copied) > a.nbytes + b.nbytes            # the failed piece tried again
    ctx.queue.finish()
    ctx.transfer_queue("in").finish()
    monkeypatch.setattr(transfer, "memmove", real_copy)
    assert relative_error(autogemm.gemm(a, b, device=ctx.device), a.astype(np.float64) @ b) < dt.tolerance


def test_device_buffers_of_a_host_call_are_kept_for_the_next_and_freed_by_clear_plans(ctx, monkeypatch):
    """numpy in, numpy out, the operands' device buffers go back to the context's pool once the result is
    read, and the next call of those sizes takes them again; a device result's are not kept (its commands
    may still run); ``clear_plans`` frees the pool. (Operands past ``pinned_min_bytes``, or on a device
    that shares the host's memory ``shared_resident_bytes``: smaller ones cross through buffers of their
    route's own, below.)"""
    set_thresholds(monkeypatch, pinned_min_bytes=0, shared_resident_bytes=0)
    dt = DTYPES["s"]
    rng = np.random.default_rng(6)
    a, b = random_matrix(rng, dt, (300, 200)), random_matrix(rng, dt, (200, 100))
    autogemm.clear_plans()
    assert ctx.buffers.held == 0
    assert relative_error(autogemm.gemm(a, b, device=ctx.device), a.astype(np.float64) @ b) < dt.tolerance
    kept = ctx.buffers.held
    assert kept >= a.nbytes + b.nbytes + 300 * 100 * 4
    made, real_buffer = [], cl.Buffer
    monkeypatch.setattr(cl, "Buffer", lambda *args: made.append(args) or real_buffer(*args))
    a2 = random_matrix(rng, dt, (300, 200))
    assert relative_error(autogemm.gemm(a2, b, device=ctx.device), a2.astype(np.float64) @ b) < dt.tolerance
    assert ctx.buffers.held == kept and not made            # the same three buffers, none made
    monkeypatch.undo()
    on_queue = autogemm.runtime.context_for_queue(ctx.queue)      # the device array's call context
    on_queue.buffers.clear()
    out = autogemm.gemm(cl_array.to_device(ctx.queue, a), b, device=ctx.device)
    assert relative_error(out.get(), a.astype(np.float64) @ b) < dt.tolerance
    assert on_queue.buffers.held == 0                       # b's buffer went with the device result
    autogemm.clear_plans()
    assert ctx.buffers.held == 0


def test_a_small_host_calls_own_buffers_are_bounded_by_the_devices_memory(ctx, host_memory, monkeypatch):
    """A small call on dense numpy arrays keeps buffers of its own below ``shared_resident_bytes`` on a
    device that shares the host's memory, below ``pinned_min_bytes`` on one of memory of its own (above
    it the operands cross through page-locked memory and the pool's buffers): 4400 bytes here, between
    the two bounds. Right either way."""
    set_thresholds(monkeypatch, pinned_min_bytes=4096, shared_resident_bytes=2**20)
    dt = DTYPES["s"]
    rng = np.random.default_rng(12)
    a, b = random_matrix(rng, dt, (30, 20)), random_matrix(rng, dt, (20, 10))
    autogemm.clear_plans()
    for _ in range(2):
        assert relative_error(autogemm.gemm(a, b, device=ctx.device), a.astype(np.float64) @ b) < dt.tolerance
    assert (ctx.buffers.held == 0) == ctx.device.shares_host_memory       # (a GPU's "shared" run: its own)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_small_host_call_keeps_buffers_of_its_own_for_the_next(ctx, monkeypatch, order):
    """numpy in, numpy out, a small product on dense arrays copies them whole into buffers its route
    keeps: the next call of its signature makes none and takes none from the pool, and computes with the
    new arrays' values (a C-ordered C, and an F-ordered one, which runs as the swapped product)."""
    dt = DTYPES["s"]
    rng = np.random.default_rng(7)
    a, b = random_matrix(rng, dt, (30, 20)), random_matrix(rng, dt, (20, 10))
    c = np.full((30, 10), np.nan, np.float32, order=order)
    autogemm.clear_plans()
    autogemm.gemm(a, b, c, device=ctx.device)
    made, real_buffer = [], cl.Buffer
    monkeypatch.setattr(cl, "Buffer", lambda *args: made.append(args) or real_buffer(*args))
    for _ in range(3):
        a, b = random_matrix(rng, dt, (30, 20)), random_matrix(rng, dt, (20, 10))
        c[...] = np.nan
        got = autogemm.gemm(a, b, c, alpha=2.0, device=ctx.device)
        assert got is c and relative_error(c, 2 * a.astype(np.float64) @ b) < dt.tolerance
        c0 = random_matrix(rng, dt, (30, 10))
        c[...] = c0
        autogemm.gemm(a, b, c, beta=-1.0, device=ctx.device)         # C read where beta is not 0
        assert relative_error(c, a.astype(np.float64) @ b - c0) < dt.tolerance
    assert not made and ctx.for_calls.buffers.held == 0
    autogemm.clear_plans()


def test_a_new_result_is_page_locked_memory_taken_back_when_it_is_gone(ctx, monkeypatch):
    """A numpy-in, numpy-out call's new result is page-locked memory from the device's pool, which the
    device writes directly; once the array and its views are gone the next result of its size reuses it,
    a result given back as C is read and written in place, and past the pool's cap results are ordinary
    arrays."""
    from autogemm.shares import staging

    monkeypatch.setattr(type(ctx.device), "shares_host_memory", property(lambda self: False))
    set_thresholds(monkeypatch, result_min_bytes=0)
    monkeypatch.setattr(staging, "_result_pools", weakref.WeakKeyDictionary())   # a pool of this test's own
    pool = staging.result_pool(ctx)
    rng = np.random.default_rng(4)
    dt = DTYPES["s"]
    a, b = random_matrix(rng, dt, (65, 33)), random_matrix(rng, dt, (33, 47))
    want = a.astype(np.float64) @ b
    first = autogemm.gemm(a, b, device=ctx.device)
    assert pool.owns(first) and pool.owns(first[3:, 1:]) and pool.owns(staging.as_bytes(first.T)) and not pool.owns(a)
    assert not pool.owns(first.copy())
    assert relative_error(first, want) < dt.tolerance
    address = first.__array_interface__["data"][0]
    view = first[1:]
    del first
    second = autogemm.gemm(a, b, device=ctx.device)           # the first's memory is still held by its view
    assert second.__array_interface__["data"][0] != address and relative_error(second, want) < dt.tolerance
    del view
    gc.collect()
    third = autogemm.matmul(a, b, device=ctx.device)
    assert third.__array_interface__["data"][0] == address and relative_error(third, want) < dt.tolerance
    autogemm.gemm(a, b, third, alpha=0.5, beta=2.0, device=ctx.device)        # C read and written in place
    assert relative_error(third, 2.5 * want) < dt.tolerance
    monkeypatch.setattr(staging, "RESULT_POOL_BYTES", pool.held)
    fourth = autogemm.gemm(a, b, device=ctx.device)
    assert not pool.owns(fourth) and relative_error(fourth, want) < dt.tolerance


def test_a_dtype_by_name_is_one_autogemm_knows_and_an_integer_array_names_the_fix():
    from autogemm.dtypes import get_dtype

    with pytest.raises(autogemm.DtypeError, match="unknown dtype 'q'; autogemm knows s, "):
        get_dtype("q")                          # numpy's code of int64, not a BLAS letter
    assert get_dtype("float32") is DTYPES["s"] and get_dtype(np.complex128) is DTYPES["z"]
    with pytest.raises(autogemm.DtypeError, match=r"astype\(np.float64\)"):
        get_dtype(np.int32)


def test_gemv_transpose_and_stacked_matmul_results_in_page_locked_memory_are_right(ctx, monkeypatch):
    """Every routine's new host result may be page-locked memory from the pool: GEMV, transpose and a
    stacked matmul (whose result the batched product writes through a view) come out right in it."""
    from autogemm.shares import staging

    monkeypatch.setattr(type(ctx.device), "shares_host_memory", property(lambda self: False))
    set_thresholds(monkeypatch, result_min_bytes=0)
    pool = staging.result_pool(ctx)
    rng = np.random.default_rng(6)
    dt = DTYPES["d"]
    a, x = random_matrix(rng, dt, (57, 43)), random_matrix(rng, dt, (43,))
    y = autogemm.gemv(a, x, device=ctx.device)
    assert pool.owns(y) and relative_error(y, a @ x) < dt.tolerance
    t = autogemm.transpose(a, device=ctx.device)
    assert pool.owns(t) and np.array_equal(t, a.T)
    stack, b = random_matrix(rng, dt, (3, 21, 43)), random_matrix(rng, dt, (43, 17))
    product = autogemm.matmul(stack, b, device=ctx.device)
    assert pool.owns(product) and relative_error(product, stack @ b) < dt.tolerance


@pytest.mark.parametrize("key", ["h", "b", "bs"])
def test_a_16_bit_result_in_page_locked_memory_keeps_its_type(ctx, monkeypatch, key):
    """bfloat16 has no typestr numpy can read back: a pooled result must still be bfloat16, not bytes."""
    from autogemm.shares import staging

    monkeypatch.setattr(type(ctx.device), "shares_host_memory", property(lambda self: False))
    set_thresholds(monkeypatch, result_min_bytes=0)
    rng = np.random.default_rng(8)
    dt = DTYPES[key]
    a, b = random_matrix(rng, dt, (40, 24)), random_matrix(rng, dt, (24, 30))
    got = autogemm.gemm(a, b, out_dtype=dt.output.numpy, device=ctx.device, backend="opencl")
    assert staging.result_pool(ctx).owns(got) and got.dtype == dt.output.numpy
    assert relative_error(got.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64)) < dt.tolerance


def test_matmul_of_two_matrices_repeats_on_gemms_kept_route(ctx, monkeypatch):
    """``a @ b`` of matrices is one ``gemm`` call: a repeat finds the route kept for its signature and
    validates nothing again, host and device operands alike, into a new result or ``out``."""
    from autogemm.engine import call as call_module

    built = []
    real = call_module.GemmCall.build.__func__
    monkeypatch.setattr(call_module.GemmCall, "build",
                        classmethod(lambda cls, *args: built.append(1) or real(cls, *args)))
    autogemm.clear_plans()
    a, b = random_matrix(RNG, DTYPES["s"], (33, 20)), random_matrix(RNG, DTYPES["s"], (20, 17))
    out = np.full((33, 17), np.nan, np.float32)
    da, db = cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, b)
    for _ in range(3):
        assert relative_error(autogemm.matmul(a, b, device=ctx.device), a.astype(np.float64) @ b) < 1e-5
        assert autogemm.matmul(a, b, out, device=ctx.device) is out
        assert relative_error(autogemm.matmul(da, db).get(), a.astype(np.float64) @ b) < 1e-5
    assert relative_error(out, a.astype(np.float64) @ b) < 1e-5
    assert len(built) == 3                   # one per signature, none for its repeats


@pytest.mark.parametrize("letter", ["s", "c"])
def test_3xtf32_runs_a_product_with_a_short_side_in_plain_arithmetic(letter, device, monkeypatch):
    """A product shorter than ``split_min_side`` in M or N or ``split_min_depth`` in K is bound by memory
    or launches: 3xTF32's split would only slow it, and plain float32 is the accuracy it promises. The
    bounds are the profile's; a call that names its backend keeps the precision it asked for, and a short
    product the host's BLAS finishes first runs there."""
    from autogemm.engine import dispatch
    from autogemm.engine.routes import cuda_host, host_blas

    monkeypatch.setattr(cuda_host, "cuda_host_route", lambda call: None)     # (a Hopper's CUDA path aside)
    set_thresholds(monkeypatch, split_min_side=40, split_min_depth=10, host_multiply_adds=())
    seen = []
    real = dispatch.OpenCLRoute
    monkeypatch.setattr(dispatch, "OpenCLRoute", lambda call: seen.append(call.dt.key) or real(call))
    rng = np.random.default_rng(5)
    dt = DTYPES[letter]
    cases = (((50, 45, 11), "auto", f"{letter}.3xtf32"), ((50, 39, 41), "auto", letter), ((39, 45, 41), "auto", letter),
             ((50, 45, 9), "auto", letter), ((50, 45, 9), "opencl", f"{letter}.3xtf32"))
    for (m, n, k), backend, key in cases:
        a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
        out = autogemm.gemm(a, b, precision="3xtf32", backend=backend)
        assert seen[-1] == key and out.dtype == dt.numpy
        assert relative_error(out, a.astype(dt.reference_numpy) @ b) < dt.tolerance
    set_thresholds(monkeypatch, split_min_side=40, split_min_depth=10, host_multiply_adds=((letter, 10**6),))
    hosted = []
    monkeypatch.setattr(host_blas.HostRoute, "run", lambda self, *args: hosted.append(self.dt.key) or "host")
    a, b = random_matrix(rng, dt, (30, 20)), random_matrix(rng, dt, (20, 10))
    assert autogemm.gemm(a, b, precision="3xtf32") == "host" and hosted == [letter]
