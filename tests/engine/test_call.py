"""The engine's call value and dispatcher (``engine.call``, ``engine.dispatch``, ``engine.resolved``):
options listed and validated once, the one rule for column-major operands, and a call's signature."""

import importlib

import numpy as np
import pyopencl.array as cl_array
import pytest
from limits import set_thresholds

import autogemm
from autogemm.blas import Op
from autogemm.codelets.simt import SimtParams
from autogemm.engine import GemmCall, GemmOptions, dispatch
from autogemm.engine.call import oriented
from autogemm.engine.resolved import CAPACITY, Resolved
from autogemm.errors import ArgumentError, DtypeError, ShapeError


def test_options_say_which_option_only_opencl_has_and_what_a_route_depends_on(device):
    assert GemmOptions().opencl_only() is None
    assert GemmOptions(edge="pad").opencl_only() == "edge" and GemmOptions(wait_for=[]).opencl_only() is None
    assert GemmOptions(devices=["host"], config=SimtParams()).opencl_only() == "devices"
    with pytest.raises(ArgumentError, match="backend must be one of"):
        GemmOptions(backend="metal").check()
    # the scalars and the stream are bound by every call; a Device stands in by its place
    assert GemmOptions(alpha=2.0, beta=3.0).key() == GemmOptions().key()
    assert GemmOptions(device=device).key() == GemmOptions(device=(device.platform_index,
                                                                    device.device_index)).key()
    assert GemmOptions(trans_a="T").key() != GemmOptions().key()
    assert GemmOptions(wait_for=[object()]).key() != GemmOptions().key()
    assert GemmOptions(devices=["host"]).key() is None and GemmOptions(config={"family": "simt"}).key() is None


def test_a_call_is_validated_once_and_names_what_is_wrong():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    call = GemmCall.build(a, b, None, None, GemmOptions(alpha=2))
    assert (call.m, call.n, call.k, call.shape, call.alpha, call.beta) == (3, 5, 4, (3, 5), 2.0, 0.0)
    assert not call.empty and not call.on_device
    with pytest.raises(ShapeError, match="inner dimensions differ"):
        GemmCall.build(a, a, None, None, GemmOptions())
    with pytest.raises(DtypeError, match="convert them to one dtype"):
        GemmCall.build(a, b.astype(np.float64), None, None, GemmOptions())
    with pytest.raises(ArgumentError, match="beta is not 0 but no c"):
        GemmCall.build(a, b, None, None, GemmOptions(beta=1))
    with pytest.raises(ArgumentError, match="c is read-only"):
        c = np.zeros((3, 5), np.float32)
        c.flags.writeable = False
        GemmCall.build(a, b, c, None, GemmOptions())
    with pytest.raises(ShapeError, match="the result is 2x3x5"):
        GemmCall.build(a, b, np.zeros((3, 5), np.float32), 2, GemmOptions())


@pytest.mark.parametrize("a_flipped, b_flipped, c_flipped", [(f, g, h) for f in (0, 1) for g in (0, 1)
                                                             for h in (0, 1)])
def test_a_column_major_operand_flips_its_op_and_a_column_major_c_swaps_the_product(a_flipped, b_flipped,
                                                                                    c_flipped):
    """The rule checked against numpy: the row-major product ``oriented`` gives, computed on the operands'
    row-major storage, is the product of the arrays as given, stored the way C is."""
    rng = np.random.default_rng(1)
    m, n, k = 3, 4, 5
    a, b = rng.random((m, k)), rng.random((k, n))
    stored = [x.T if flipped else x for x, flipped in ((a, a_flipped), (b, b_flipped))]   # row-major storage
    r = oriented(stored[0], Op(), bool(a_flipped), stored[1], Op(), bool(b_flipped), m, n, bool(c_flipped))
    first = r.first.T if r.op_first.transposed else r.first
    second = r.second.T if r.op_second.transposed else r.second
    got = first @ second
    assert got.shape == (r.m, r.n) and r.swapped == bool(c_flipped)
    assert np.allclose(got.T if c_flipped else got, a @ b)


def test_a_signature_covers_what_the_route_depends_on(ctx):
    a, b = np.ones((8, 4), np.float32), np.ones((4, 6), np.float32)
    options = GemmOptions()
    key = dispatch.call_signature(a, b, None, None, options)
    assert key == dispatch.call_signature(a.copy(), b.copy(), None, None, GemmOptions(alpha=3.0))
    assert key != dispatch.call_signature(np.asfortranarray(a), b, None, None, options)
    assert key != dispatch.call_signature(a, b, None, 2, options)
    assert key != dispatch.call_signature(a, b, np.zeros((8, 6), np.float32), None, options)
    da, db = cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, b)
    assert dispatch.call_signature(da, b, None, None, options) is None          # mixed operands: resolved each time
    assert dispatch.call_signature(da, db, None, None, options) is not None


def test_a_repeated_call_runs_on_its_route_and_binds_its_own_operands(device, monkeypatch):
    resolved = []
    real = dispatch.OpenCLRoute
    monkeypatch.setattr(dispatch, "OpenCLRoute", lambda call: resolved.append(call) or real(call))
    rng = np.random.default_rng(2)
    for alpha in (1.0, -0.5, 2.0):
        a, b = rng.random((33, 17)).astype(np.float32), rng.random((17, 9)).astype(np.float32)
        got = autogemm.gemm(a, b, alpha=alpha, device=device)
        assert np.allclose(got, alpha * (a.astype(np.float64) @ b), rtol=1e-4, atol=1e-5)
    assert len(resolved) == 1
    with pytest.raises(ArgumentError, match="alpha must be a number"):
        autogemm.gemm(a, b, alpha="two", device=device)          # the scalars are checked on every call


def test_routes_are_kept_least_recently_used_first_out():
    class Fresh:
        def __init__(self, current=True):
            self.is_current = current

        def current(self):
            return self.is_current

    kept = Resolved()
    routes = [kept.keep((i,), Fresh()) for i in range(CAPACITY + 1)]
    assert kept.get((0,)) is None and kept.get((CAPACITY,)) is routes[-1]
    kept.keep(("stale",), Fresh(False))
    assert kept.get(("stale",)) is None and kept.get(None) is None
    kept.keep(None, Fresh())
    kept.clear()
    assert kept.get((CAPACITY,)) is None


@pytest.mark.parametrize("streamed", [False, True])
def test_a_product_the_cuda_path_fails_goes_on_as_opencl_takes_it(device, monkeypatch, streamed):
    """Where the CUDA path fails a call (its memory full, say: its route's run gives None), OpenCL takes
    the product as it would have with backend='opencl', streamed where it is that large; every repeat too."""
    from limits import set_thresholds

    from autogemm.engine.routes import cuda_host

    class Failing:
        def current(self):
            return True

        def run(self, a, b, c, options):
            failed.append(options.backend)

    failed, shared = [], []
    monkeypatch.setattr(cuda_host, "cuda_host_route",
                        lambda call: Failing() if call.options.backend == "auto" else None)
    real = dispatch.run_on_targets
    monkeypatch.setattr(dispatch, "run_on_targets", lambda call, *rest: shared.append(1) or real(call, *rest))
    if streamed:
        set_thresholds(monkeypatch, stream_bytes=1024)
    rng = np.random.default_rng(5)
    a, b = rng.random((40, 30)), rng.random((30, 20))
    for _ in range(2):
        assert np.allclose(autogemm.gemm(a, b, device=device), a @ b, rtol=1e-12, atol=1e-12)
    assert failed == ["auto", "auto"] and len(shared) == (2 if streamed else 0)


@pytest.mark.parametrize("trans_a", ["N", "T"])
def test_a_numpy_product_past_32_bit_indexing_runs_as_a_share_tile_by_tile(host_memory, ctx, monkeypatch, trans_a):
    """Issue 57 D17: a product of numpy operands whose C spans more elements than the kernels index
    (`ones(47000, 4) @ ones(4, 47000)` in float32) was refused although a share of the device streams it
    tile by tile (a discrete device) or runs it in place in blocks of rows (one sharing the host's
    memory). (The limit is lowered here to what a test can hold.)"""
    from autogemm.blas import index_blocks
    from autogemm.engine import dispatch
    from autogemm.shares import mapped

    blocks = []
    real_run = mapped.MappedShare.run
    monkeypatch.setattr(mapped.MappedShare, "run", lambda self: (blocks.append(len(self.blocks)), real_run(self))[1])

    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", 4096)
    shared = []
    real = dispatch.run_on_targets
    monkeypatch.setattr(dispatch, "run_on_targets", lambda call, *rest: shared.append(call.m) or real(call, *rest))
    rng = np.random.default_rng(17)
    a, b = rng.random((100, 4)).astype(np.float32), rng.random((4, 100)).astype(np.float32)
    a = np.ascontiguousarray(a.T) if trans_a == "T" else a
    want = (a.T if trans_a == "T" else a).astype(np.float64) @ b
    np.testing.assert_allclose(autogemm.gemm(a, b, trans_a=trans_a, device=ctx.device), want, rtol=1e-5)
    assert shared == [100]
    assert blocks == ([3] if ctx.device.shares_host_memory else [])      # in place: 40 rows of 100 within 4096


def test_a_product_the_hosts_memory_cannot_hold_is_refused_before_it_runs(host_memory, ctx, monkeypatch):
    """Issue 57 D18: a product streamed through its device (numpy operands, large) whose new result and
    copies exceed the host's available memory raises ``HostMemoryError`` naming what it needs and what
    is available, before anything runs, where it ran 27 s into a MemoryError from inside; written into a
    c of its own, it takes no new result and computes. (The amounts are lowered to what a test holds.)"""
    from autogemm.runtime import free_memory
    from autogemm.shares import dispatch as shares_dispatch
    from autogemm.shares.mapped import address_aligned

    set_thresholds(monkeypatch, stream_bytes=1)           # every numpy product streams as a share
    monkeypatch.setattr(free_memory, "CHECKED_BYTES", 0)
    checked = []
    real_check = shares_dispatch.check_host_memory
    monkeypatch.setattr(shares_dispatch, "check_host_memory", lambda parts: checked.append(parts) or real_check(parts))
    rng = np.random.default_rng(3)
    a, b = rng.random((64, 32)).astype(np.float32), rng.random((32, 48)).astype(np.float32)
    # (C at an address any device aligns to: written in place, never copied, so the call with c counts
    # every copy the call without it makes but its new result's own)
    c = address_aligned(np.full((64, 48), np.nan, np.float32), 4096)
    assert autogemm.gemm(a, b, c, device=ctx.device) is c          # as much memory as the host has
    in_place = checked[-1]
    assert in_place["the result"] == 0
    monkeypatch.setattr(free_memory, "available_bytes", lambda: sum(in_place.values()) + c.nbytes - 1)
    with pytest.raises(autogemm.HostMemoryError, match=r"\(the result 0\.0 GiB.*is available: free memory, pass c="):
        autogemm.gemm(a, b, device=ctx.device)
    assert checked[-1]["the result"] == c.nbytes
    c[...] = np.nan
    monkeypatch.setattr(free_memory, "available_bytes", lambda: sum(in_place.values()))
    assert autogemm.gemm(a, b, c, device=ctx.device) is c
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)


def test_numpy_products_below_the_hosts_bound_run_on_the_hosts_blas(ctx, monkeypatch):
    """Where the device's thresholds say the host's BLAS finished such products sooner (measured by tune),
    a call from numpy to numpy of fewer multiply-adds runs there: with alpha and beta, transposes, a
    Fortran-ordered c and a complex conjugate, each right; a larger product, another dtype, device arrays
    and backend='opencl' stay on the device."""
    from autogemm.engine.routes import host_blas

    ran = []
    real = host_blas.HostRoute.run
    monkeypatch.setattr(host_blas.HostRoute, "run", lambda self, *args: ran.append(self.dt.key) or real(self, *args))
    set_thresholds(monkeypatch, host_multiply_adds=(("s", 40**3), ("z", 40**3)))
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((30, 20)).astype(np.float32), rng.standard_normal((30, 25)).astype(np.float32)
    c = np.asfortranarray(rng.standard_normal((20, 25)).astype(np.float32))
    want = 0.5 * (a.T.astype(np.float64) @ b) - 2.0 * c
    assert autogemm.gemm(a, b, c, alpha=0.5, beta=-2.0, trans_a="T", device=ctx.device) is c
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    z = (rng.standard_normal((20, 20)) + 1j * rng.standard_normal((20, 20)))
    np.testing.assert_allclose(autogemm.gemm(z, z, trans_b="C", out_dtype=np.complex128, device=ctx.device),
                               z @ z.conj().T, rtol=1e-12)                 # (out_dtype the operands' own)
    assert ran == ["s", "z"]
    poisoned = np.full((20, 30), np.nan, np.float32)          # alpha 0: BLAS's quick return, A never read
    kept = rng.standard_normal((20, 25)).astype(np.float32)
    np.testing.assert_array_equal(autogemm.gemm(poisoned, b, kept.copy(), alpha=0.0, beta=2.0, device=ctx.device),
                                  2.0 * kept)
    np.testing.assert_array_equal(autogemm.gemm(poisoned, b, alpha=0.0, device=ctx.device), np.zeros((20, 25)))
    assert ran == ["s", "z", "s", "s"]
    ran.clear()
    big = rng.standard_normal((50, 50)).astype(np.float32)
    autogemm.gemm(big, big, device=ctx.device)                                    # 50^3: past the bound
    autogemm.gemm(a.T.copy(), b, backend="opencl", device=ctx.device)
    autogemm.gemm(a.T.astype(np.float64), b.astype(np.float64), device=ctx.device)  # no bound for float64
    np.testing.assert_allclose(autogemm.gemm(cl_array.to_device(ctx.queue, a.T.copy()),
                                             cl_array.to_device(ctx.queue, b)).get(), a.T @ b, rtol=1e-5, atol=1e-5)
    assert ran == []


@pytest.fixture(params=["c", "python"])
def plain(request, monkeypatch) -> str:
    """Runs a test of the plain call twice: with ``plain_product`` in C (skipped where it was not built)
    and with its Python steps (``plain_product_py``), which ``gemm`` and ``matmul`` then call."""
    from autogemm.engine.routes import host_blas

    if request.param == "c" and host_blas.plain_product is host_blas.plain_product_py:
        pytest.skip("the plain call's C (_plain.c) was not built")
    if request.param == "python":
        for module in (importlib.import_module("autogemm.api.gemm"), importlib.import_module("autogemm.api.matmul"),
                       host_blas):
            monkeypatch.setattr(module, "plain_product", host_blas.plain_product_py)
    return request.param


def test_the_hosts_product_is_ndarray_dot_below_its_bound_and_matmul_from_it(ctx, monkeypatch, plain):
    """The host route multiplies with ``ndarray.dot`` below ``DOT_BELOW_MULTIPLY_ADDS`` (the shorter call
    where the product takes microseconds) and with matmul, the user's ``a @ b``, from it: a plain call,
    its kept route and a transposed call alike, each right (fresh random operands)."""
    import operator

    from autogemm.engine.routes import host_blas

    set_thresholds(monkeypatch, host_multiply_adds=(("d", 2**40),))
    monkeypatch.setattr(host_blas, "DOT_BELOW_MULTIPLY_ADDS", 24**3)
    used = []
    real = host_blas.HostRoute.run
    monkeypatch.setattr(host_blas.HostRoute, "run", lambda self, *args: used.append(self.product) or real(self, *args))
    rng = np.random.default_rng(11)
    for side, want in ((23, np.ndarray.dot), (24, operator.matmul)):
        a, b = rng.standard_normal((side, side)), rng.standard_normal((side, side))
        used.clear()
        for _ in range(2):          # the second through the kept plain route (not ``run``)
            np.testing.assert_allclose(autogemm.gemm(a, b), a @ b, rtol=1e-12)
        np.testing.assert_allclose(autogemm.gemm(a.T.copy(), b, trans_a="T", device=ctx.device), a @ b, rtol=1e-12)
        (kept,) = host_blas.PLAIN_ROUTES[a.shape + b.shape]
        assert used == [want, want] and kept.route.product is want
        kept.route.product = lambda x, y, product=want: used.append("kept") or product(x, y)   # the kept route's
        np.testing.assert_allclose(autogemm.gemm(a, b), a @ b, rtol=1e-12)
        assert used[-1] == "kept"


def test_a_plain_call_the_hosts_blas_took_skips_the_engine_next_time(ctx, monkeypatch, tmp_path, plain):
    """``gemm(a, b)`` and ``matmul(a, b)`` of numpy arrays, every option its default, that the host's BLAS
    took once take it again without the engine's checks and lookups (the host's route of such calls is
    kept by the operands' shapes and dtypes), the product right; a call with any option, other shapes,
    or while ``AUTOGEMM_RECORD`` records calls goes through the engine (and is recorded)."""

    from autogemm import workload

    gemm_api = importlib.import_module("autogemm.api.gemm")     # (the module, not the function it exports)
    engine = []
    real = gemm_api.run_gemm
    monkeypatch.setattr(gemm_api, "run_gemm", lambda *args: engine.append(args[0].shape) or real(*args))
    set_thresholds(monkeypatch, host_multiply_adds=(("s", 40**3),))
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((30, 20)).astype(np.float32), rng.standard_normal((20, 25)).astype(np.float32)
    want = a.astype(np.float64) @ b
    for _ in range(3):
        np.testing.assert_allclose(autogemm.gemm(a, b), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(autogemm.matmul(a, b), want, rtol=1e-5, atol=1e-5)
    assert engine == [(30, 20)]                          # the first call only
    np.testing.assert_allclose(autogemm.gemm(a, b, alpha=2.0), 2 * want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(autogemm.gemm(a[:, :10], b[:10]), a[:, :10].astype(np.float64) @ b[:10], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(autogemm.gemm(b.T, a.T), want.T, rtol=1e-5, atol=1e-5)
    assert engine == [(30, 20)] * 2 + [(30, 10), (25, 20)]
    monkeypatch.setattr(workload, "RECORDER", workload.Recorder(tmp_path / "calls.jsonl"))
    autogemm.gemm(a, b)
    workload.RECORDER.flush()
    assert len(engine) == 5 and "30" in (tmp_path / "calls.jsonl").read_text()
    monkeypatch.setattr(workload, "RECORDER", None)
    # what the engine refuses it still refuses: a bool or an array for a scalar, an out_dtype that
    # equals None (numpy's float64 does) but not the operands' dtype
    for bad in ({"alpha": True}, {"beta": np.zeros(2)}, {"out_dtype": np.dtype(np.float64)}):
        with pytest.raises(autogemm.AutogemmError):
            autogemm.gemm(a, b, **bad)
    # matmul's repeats take the host's route by themselves; a route no longer current goes to the engine
    matmul_module = importlib.import_module("autogemm.api.matmul")
    monkeypatch.setattr(matmul_module, "gemm", None)
    np.testing.assert_allclose(autogemm.matmul(a, b), want, rtol=1e-5, atol=1e-5)
    from autogemm.engine.routes import host_blas
    from autogemm.profiles import store

    monkeypatch.setattr(store, "RECHECK_SECONDS", 60.0)
    store.forget()
    autogemm.gemm(a, b)                     # asked again: current (or resolved anew), for a minute
    monkeypatch.setattr(host_blas, "current_until", lambda device, profile: 0.0)
    count = len(engine)
    autogemm.gemm(a, b)                     # known current for a while: not asked again
    assert len(engine) == count
    store.forget()                          # (as a save does): asked again, and no longer current
    autogemm.gemm(a, b)
    assert len(engine) == count + 1
    monkeypatch.undo()
    # operands of the same shapes in another dtype take the engine once, and keep their own route
    set_thresholds(monkeypatch, host_multiply_adds=(("s", 40**3), ("d", 40**3)))
    monkeypatch.setattr(gemm_api, "run_gemm", lambda *args: engine.append(args[0].dtype) or real(*args))
    engine.clear()
    gemm_api.clear_plans()
    wide = a.astype(np.float64), b.astype(np.float64)
    for x, y in ((a, b), wide, wide, (a, b), (a, b)):
        np.testing.assert_allclose(autogemm.gemm(x, y), want, rtol=1e-5, atol=1e-5)
    assert engine == [np.float32, np.float64]                 # each route kept beside the other


def test_a_plain_route_is_taken_by_matrices_of_its_shapes_and_dtypes_alone(ctx, monkeypatch, plain):
    """The plain routes are kept by ``a.shape + b.shape``: a 3-D and a 1-D operand whose shapes join into
    the same four numbers are still refused as the engine refuses them; operands whose dtypes equal the
    route's without being the same objects (unpickled, as a worker receives them) take it."""
    import pickle

    from autogemm.engine.routes import host_blas

    set_thresholds(monkeypatch, host_multiply_adds=(("s", 40**3),))
    a, b = np.ones((1, 16), np.float32), np.ones((16, 16), np.float32)
    autogemm.gemm(a, b)
    assert len(host_blas.PLAIN_ROUTES[(1, 16, 16, 16)]) == 1
    with pytest.raises(autogemm.ShapeError, match="2-D"):
        autogemm.gemm(np.ones((1, 16, 16), np.float32), np.ones(16, np.float32))
    x, y = pickle.loads(pickle.dumps((a, b)))
    assert x.dtype == a.dtype and host_blas.plain_product(x, y) is not None


def test_the_plain_calls_c_keeps_no_reference_and_refuses_what_python_refuses(ctx, monkeypatch, plain):
    """The plain call in C (and in Python) leaves every object's references as it found them over many
    calls, returns None for what is not a kept route's (no arrays, another dtype, a route no longer
    current), and raises the error of a call that fails inside it."""
    import sys
    import time

    from autogemm.engine.routes import host_blas

    set_thresholds(monkeypatch, host_multiply_adds=(("s", 40**3),))
    product = host_blas.plain_product if plain == "c" else host_blas.plain_product_py
    rng = np.random.default_rng(13)
    a, b = rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((6, 5)).astype(np.float32)
    autogemm.gemm(a, b)
    table = host_blas.PLAIN_ROUTES[a.shape + b.shape]
    (kept,) = table
    route = kept.route

    def held():
        return [sys.getrefcount(x) for x in (a, b, table, kept, route, route.product, route.until, a.dtype)]

    before = held()
    for _ in range(1000):
        np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-5)
    assert held() == before
    assert product(a.tolist(), b) is None and product(a.astype(np.float64), b.astype(np.float64)) is None
    # known current for a while: the quick test alone (its ``current`` not asked); past that, asked
    asked = []
    monkeypatch.setattr(route, "current", lambda: asked.append(1) or 1 / 0)
    monkeypatch.setattr(route, "until", time.monotonic() + 3600)
    assert product(a, b) is not None and not asked
    monkeypatch.setattr(route, "until", time.monotonic() - 1e-3)
    with pytest.raises(ZeroDivisionError):
        product(a, b)
    monkeypatch.setattr(route, "current", lambda: False)   # no longer current: the engine's to resolve
    before = held()
    for _ in range(1000):
        assert product(a, b) is None
    assert held() == before
    # a route whose ``current`` empties the table (its last reference there) is still there to multiply

    class Emptying:
        until, forgets = 0.0, -1

        def current(self):
            table.clear()
            return True

        def product(self, x, y):
            return "multiplied"

    table[:] = [host_blas.PlainRoute(a.dtype, b.dtype, Emptying())]
    assert product(a, b) == "multiplied" and table == []


def test_gemms_options_are_keywords_named_once():
    """``gemm(a, b, c, **options)``: the keywords' type names ``GemmOptions``' fields, in their order; a
    name that is none of them is the ``TypeError`` an unknown keyword is, naming ``gemm``, and so is an
    option given by position."""
    from autogemm.engine import GemmKeywords

    assert list(GemmKeywords.__annotations__) == list(GemmOptions._fields)
    a = np.ones((3, 2), np.float32)
    with pytest.raises(TypeError, match=r"gemm\(\) got an unexpected keyword argument 'alhpa'"):
        autogemm.gemm(a, a.T, alhpa=2.0)
    with pytest.raises(TypeError, match="positional"):
        autogemm.gemm(a, a.T, None, 2.0)
