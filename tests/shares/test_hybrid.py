"""One product shared by rows of C among devices and the host's BLAS (issue 7): the split's rows for every P
and p_g, the assembled C against float64 for every share, several devices at once, streamed shares in
many tiles and chunks and out of core, the co-tuner, and the errors, all raised before anything runs."""

from __future__ import annotations

import numpy as np
import pytest
from limits import set_thresholds

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES
from autogemm.runtime.opencl.context import DeviceContext
from autogemm.shares import HOST, HostGemm, Split, copying, run_split, staging

RNG = np.random.default_rng()


@pytest.fixture
def streamed(monkeypatch):
    """Devices treated as not sharing the host's memory, so their shares stream through staging buffers
    (PoCL's CPU device shares it, and would compute in the host's arrays in place)."""
    monkeypatch.setattr(autogemm.Device, "shares_host_memory", property(lambda self: False))


@pytest.fixture(params=["in place", "streamed"])
def either_path(request, monkeypatch):
    """Each test twice: the device's share in the host's memory (where the device shares it), and streamed."""
    if request.param == "streamed":
        monkeypatch.setattr(autogemm.Device, "shares_host_memory", property(lambda self: False))
    return request.param


@pytest.mark.parametrize("m", [0, 1, 5, 63, 64, 517, 1024, 4099])
def test_the_split_covers_every_row_once_for_every_p_and_p_g(m):
    for parts in range(1, 17):
        for gpu in range(parts + 1):
            split = Split(parts, (gpu, parts - gpu))
            (g0, g1), (h0, h1) = split.rows(m)
            assert (g0, g1, h1) == (0, h0, m)                 # contiguous, in order, all of C
            if gpu in (0, parts):
                assert (g1 - g0) == (m if gpu else 0)          # all to one side: nothing to the other
            if m >= 64 * parts and 0 < gpu < parts:
                assert g1 % 64 == 0 and abs(g1 - m * gpu / parts) <= 32   # whole tiles, near m p_g / P
            elif 0 < gpu < parts:
                assert abs(g1 - m * gpu / parts) <= 0.5


def test_even_and_single_splits_and_their_errors():
    assert Split.even(3).shares == (3, 3, 2) and Split.even(3, 2).shares == (1, 1, 1)
    assert Split.only(1, 3, 4) == Split(4, (0, 4, 0))
    assert [r[1] - r[0] for r in Split.even(4).rows(1000, align=1)] == [250, 250, 250, 250]
    assert Split(8, (5, 3)).describe(["gpu", "host"]) == "gpu 5/8, host 3/8"
    for parts, shares in ((0, (0,)), (8, (5, 2)), (8, (9, -1)), (8, ()), (True, (1,)), (4, (2.0, 2))):
        with pytest.raises(autogemm.ArgumentError):
            Split(parts, shares)


def _reference(a, b, c, alpha, beta, ta, tb, dt):
    wide = dt.reference_numpy
    product = alpha * (apply_op(a.astype(wide), ta) @ apply_op(b.astype(wide), tb))
    return product + beta * c.astype(wide) if beta != 0 else product


@pytest.mark.parametrize("letter", "sdczh")
def test_every_share_of_a_device_and_the_host_gives_c(ctx, letter, either_path):
    """Every p_g of P = 4 and 8, transposes, alpha/beta; C poisoned where beta is 0 (never read)."""
    dt = DTYPES[letter]
    m, n, k = 75, 33, 41
    cases = [("N", "N", 1.0, 0.0), ("T", "C" if dt.is_complex else "T", -0.5, 0.0), ("N", "T", 2.0, 0.5)]
    for ta, tb, alpha, beta in cases:
        a = random_matrix(RNG, dt, (k, m) if ta != "N" else (m, k))
        b = random_matrix(RNG, dt, (n, k) if tb != "N" else (k, n))
        c0 = random_matrix(RNG, dt, (m, n)).astype(dt.output.numpy)
        want = _reference(a, b, c0, alpha, beta, ta, tb, dt)
        for parts in (4, 8):
            for gpu in range(parts + 1):
                c = c0.copy() if beta != 0 else np.full((m, n), np.nan, dt.output.numpy)
                run_split([ctx, HOST], Split(parts, (gpu, parts - gpu)), HostGemm(dt, a, b, c, ta, tb, alpha, beta))
                assert relative_error(c, want) < tolerance(dt, k), (ta, tb, parts, gpu)


def test_several_devices_and_the_host_at_once(device, either_path):
    """Three targets, each a share: two queues of their own (two contexts of this machine's device) and
    the host; C assembled from all three."""
    targets = [DeviceContext(device), DeviceContext(device), HOST]
    dt = DTYPES["d"]
    m, n, k = 301, 47, 130
    a, b = random_matrix(RNG, dt, (m, k)), random_matrix(RNG, dt, (k, n))
    for shares in ((3, 3, 2), (1, 6, 1), (0, 5, 3), (8, 0, 0)):
        c = np.full((m, n), np.nan)
        run_split(targets, Split(8, shares), HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0))
        assert relative_error(c, a @ b) < dt.tolerance, shares


def test_gemm_with_devices_takes_any_layout_of_c_and_the_default_split(ctx):
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (130, 60)), random_matrix(RNG, dt, (60, 40))
    want = a.astype(np.float64) @ b
    got = autogemm.gemm(a, b, devices=[ctx.device])               # all rows on the device
    assert got.flags.c_contiguous and relative_error(got, want) < dt.tolerance
    assert relative_error(autogemm.gemm(a, b, devices=[HOST]), want) < dt.tolerance
    c = np.asfortranarray(random_matrix(RNG, dt, (130, 40)))
    before = c.astype(np.float64)
    out = autogemm.gemm(a, b, c, beta=2.0, devices=[ctx.device, HOST], split=Split(8, (3, 5)))
    assert out is c and relative_error(c, want + 2 * before) < dt.tolerance
    assert autogemm.gemm(a[:0], b, devices="all").shape == (0, 40)


def test_errors_name_the_argument_and_change_nothing(ctx, monkeypatch, streamed):
    import pyopencl.array as cl_array

    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (130, 60)), random_matrix(RNG, dt, (60, 40))
    c = random_matrix(RNG, dt, (130, 40))
    before = c.copy()
    bad = [
        (dict(devices="gpus"), "devices must be"), (dict(devices=[]), "devices must be"),
        (dict(devices=[HOST, HOST]), "twice"), (dict(devices=[ctx.device, ctx.device]), "twice"),
        (dict(split=Split(2, (1, 1))), "give devices= too"),
        (dict(devices=[ctx.device], split=Split(2, (1, 1))), "2 shares for 1 targets"),
        (dict(devices=[ctx.device], split=(1, 1)), "split must be a Split"),
        (dict(devices=[HOST], device=ctx.device), "leave device"),
    ]
    for kwargs, message in bad:
        with pytest.raises(autogemm.ArgumentError, match=message):
            autogemm.gemm(a, b, c, beta=1.0, **kwargs)
    with pytest.raises(autogemm.ArgumentError, match="a is a device array"):
        autogemm.gemm(cl_array.to_device(ctx.queue, a), b, devices=[HOST])
    with pytest.raises(autogemm.ShapeError):
        autogemm.gemm(a, a, c, devices=[HOST])
    # a share that does not fit its device stops the call before any share runs
    from autogemm.shares import streaming
    targets = [ctx, DeviceContext(ctx.device), HOST]
    planned = []
    real = streaming.DeviceStream._layout

    def layout(self, tile):
        planned.append(self)
        if len(planned) == 2:
            raise autogemm.DeviceError("this call needs more than the device has")
        return real(self, tile)

    monkeypatch.setattr(streaming.DeviceStream, "_layout", layout)
    with pytest.raises(autogemm.DeviceError):
        run_split(targets, Split(3, (1, 1, 1)), HostGemm(dt, a, b, c, "N", "N", 1.0, 1.0))
    assert np.array_equal(c, before)


def test_the_tuner_tries_every_host_share_and_checks_every_point(ctx, monkeypatch):
    from autogemm.blas import GemmProblem
    from autogemm.blas.selection import candidates
    from autogemm.tuning import cotune as tuner

    assert [s.shares for s in tuner.splits([ctx, HOST], 4)] == [(4, 0), (3, 1), (2, 2), (1, 3), (0, 4)]
    other = DeviceContext(ctx.device)
    assert [s.shares for s in tuner.splits([ctx, other, HOST], 3)] == [(2, 1, 0), (1, 1, 1), (1, 0, 2), (0, 0, 3)]
    assert [s.shares for s in tuner.splits([ctx, other], 3)] == [(2, 1)]
    dt = DTYPES["s"]
    kernels = candidates(ctx.device, GemmProblem.dense(dt, 150, 40, 30), 2)
    seen = []
    monkeypatch.setattr(tuner, "PRUNE", float("inf"))             # every split, however slow
    points = tuner.co_tune([ctx, HOST], dt, 150, 40, 30, kernels, parts=4, runs=1, progress=seen.append)
    assert len(points) == len(seen) == 5 * len(kernels)
    assert all(p.seconds > 0 for p in points) and points == sorted(points, key=lambda p: p.seconds)
    # a point whose host leaves a row unwritten is recorded as wrong, and the others still run
    real = HostGemm.on_host
    monkeypatch.setattr(HostGemm, "on_host", lambda self, start, stop: real(self, start, stop - (stop > start)))
    points = tuner.co_tune([HOST, ctx], dt, 150, 40, 30, kernels[:1], parts=4, runs=1)
    wrong = [p for p in points if p.seconds is None]
    assert wrong and all("wrong result" in p.note for p in wrong) and any(p.seconds for p in points)


def test_the_host_share_stops_growing_once_calls_get_slower(ctx, monkeypatch):
    from autogemm.tuning import cotune as tuner

    by_host_share = {0: 5.0, 1: 3.0, 2: 4.0, 3: 6.0, 4: 9.0}
    monkeypatch.setattr(tuner, "_measure", lambda targets, split, gemm, configs, config, reference, runs:
                        tuner.HybridPoint(config, split, by_host_share[split.shares[1]]))
    points = tuner.co_tune([ctx, HOST], DTYPES["s"], 150, 40, 30, ["k1", "k2"], parts=4, runs=1)
    # per kernel: 5, 3, then 4 (over 1.25 x 3 and climbing) ends its sweep
    assert [p.seconds for p in points] == [3.0, 3.0, 4.0, 4.0, 5.0, 5.0]
    assert [p.split.shares for p in points if p.config == "k1"] == [(3, 1), (2, 2), (4, 0)]


@pytest.fixture
def small_chunks(monkeypatch):
    """Streams in 128-wide tiles through 4 KiB staging chunks: many tiles, many chunks per block."""
    from autogemm.shares import streaming
    monkeypatch.setattr(staging, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(copying, "THREADED_BYTES", 1024)      # the threaded copies too
    return streaming


@pytest.mark.parametrize("letter, ta, tb, beta", [("s", "N", "N", 0.0), ("d", "T", "N", 0.5), ("z", "N", "C", 1.0),
                                                  ("h", "T", "T", 0.0)])
@pytest.mark.parametrize("page_locked_c", [False, True])
def test_a_streamed_share_in_many_tiles_and_chunks_gives_c(ctx, small_chunks, monkeypatch, letter, ta, tb, beta,
                                                           page_locked_c):
    """A C in ordinary memory gets its tiles through staging and the retiring thread's copies; a C in a
    page-locked result gets them straight from the device (the retiring thread copies nothing)."""
    dt = DTYPES[letter]
    m, n, k = 300, 270, 90
    a = random_matrix(RNG, dt, (k, m) if ta != "N" else (m, k))
    b = random_matrix(RNG, dt, (n, k) if tb != "N" else (k, n))
    c0 = random_matrix(RNG, dt, (m, n)).astype(dt.output.numpy)
    c = staging.result_pool(ctx).take((m, n), dt.output.numpy) if page_locked_c else np.empty((m, n), dt.output.numpy)
    c[...] = c0 if beta else np.nan
    if page_locked_c:
        monkeypatch.setattr(small_chunks._StreamRun, "_retire", lambda self, item: pytest.fail("copied by the host"))
    gemm = HostGemm(dt, a, b, c, ta, tb, -1.5, beta)
    share = small_chunks.DeviceStream(ctx, gemm, (20, 290), None, "auto")
    assert share.layout == small_chunks.Layout(128, True, True) and len(share.tiles()) == 9
    share.run()
    want = _reference(a, b, c0, -1.5, beta, ta, tb, dt)
    assert relative_error(gemm.c[20:290], want[20:290]) < tolerance(dt, k)
    if beta == 0:
        assert np.isnan(gemm.c[:20]).all() and np.isnan(gemm.c[290:]).all()     # other rows untouched


def test_a_new_c_is_touched_ahead_of_the_copies_that_write_it(ctx, small_chunks, monkeypatch):
    """With beta = 0 a thread writes one element per page of the share's rows ahead of the copies out
    (``FirstTouch``: a new C's pages are faulted in off the copies' path); each copy waits for it, so a
    slow toucher never overwrites a tile already written."""
    import time
    real = staging.FirstTouch._touch
    monkeypatch.setattr(staging.FirstTouch, "_touch", lambda self: (time.sleep(0.3), real(self)))
    monkeypatch.setattr(staging.FirstTouch, "stop", lambda self: [t.join() for t in self._threads])    # touches it all
    monkeypatch.setattr(staging, "PAGE_BYTES", 64)             # sixteen touched elements per row
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (300, 90)), random_matrix(RNG, dt, (90, 270))
    gemm = HostGemm(dt, a, b, np.full((300, 270), np.nan, np.float32), "N", "N", 1.0, 0.0)
    small_chunks.DeviceStream(ctx, gemm, (10, 300), None, "auto").run()
    assert relative_error(gemm.c[10:], a[10:].astype(np.float64) @ b) < dt.tolerance
    assert np.isnan(gemm.c[:10]).all()


def test_first_touch_writes_one_element_per_page_in_order_and_stops():
    from autogemm.shares.staging import PAGE_BYTES, FirstTouch
    rows = np.full((64, 1500), np.nan, np.float32)
    touch = FirstTouch(rows, 8)
    touch.wait(64)
    step = PAGE_BYTES // 4                        # float32 elements in a page; a block of 8 rows at a time
    touched = np.concatenate([r0 * 1500 + np.arange(0, 8 * 1500, step) for r0 in range(0, 64, 8)])
    flat = rows.reshape(-1)
    assert (flat[touched] == 0).all() and np.isnan(np.delete(flat, touched)).all()
    assert np.diff(touched).max() <= step         # so every page has one
    touch.stop()
    touch = FirstTouch(np.full((4096, 1024), np.nan, np.float32), 1)
    touch.stop()                                  # stops after at most the block it is in,
    touch.wait(4096)                              # and nothing waits for the rest


def test_a_product_larger_than_the_device_streams_b_or_says_what_it_needs(ctx, small_chunks, monkeypatch):
    """Where A and B do not both fit beside the rest, A's blocks pass through two slots, and where B does
    not fit either, B's blocks come again for every tile (out of core); where not even 128-wide tiles
    fit, DeviceError before anything runs."""
    dt = DTYPES["s"]
    m, n, k = 300, 270, 90
    a, b = random_matrix(RNG, dt, (m, k)), random_matrix(RNG, dt, (k, n))
    gemm = HostGemm(dt, a, b, np.full((m, n), np.nan, np.float32), "N", "N", 1.0, 0.0)
    whole = small_chunks.DeviceStream(ctx, gemm, (0, m), None, "guard")
    Layout = small_chunks.Layout
    streamed, b_resident = (whole._needs(Layout(128, False, False))[0], whole._needs(Layout(128, False, True))[0])
    assert streamed < b_resident < whole._needs(Layout(128, True, True))[0]
    for budget, layout in ((streamed, Layout(128, False, False)), (b_resident, Layout(128, False, True))):
        monkeypatch.setattr(small_chunks, "MEMORY_SHARE", (budget + 1) / ctx.device.global_mem_bytes)
        share = small_chunks.DeviceStream(ctx, gemm, (0, m), None, "guard")
        assert share.layout == layout
        gemm.c.fill(np.nan)
        share.run()
        assert relative_error(gemm.c, a.astype(np.float64) @ b) < dt.tolerance
    monkeypatch.setattr(small_chunks, "MEMORY_SHARE", 1000 / ctx.device.global_mem_bytes)
    with pytest.raises(autogemm.DeviceError, match="even in tiles of 128"):
        small_chunks.DeviceStream(ctx, gemm, (0, m), None, "guard")


def test_tiles_are_taken_in_growing_squares_where_both_operands_stay():
    from autogemm.shares.streaming import tile_order
    assert tile_order(2, 3, False) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert tile_order(3, 3, True) == [(0, 0), (1, 0), (1, 1), (0, 1), (2, 0), (2, 1), (2, 2), (0, 2), (1, 2)]
    for rows, cols in ((1, 5), (5, 1), (4, 7), (7, 4), (6, 6)):
        order = tile_order(rows, cols, True)
        assert sorted(order) == [(i, j) for i in range(rows) for j in range(cols)]


def test_a_product_one_device_computes_whole_is_a_plain_call_on_it(ctx, monkeypatch, streamed):
    """devices= with every row on one device (the host given none, by default or by the split) runs as
    gemm on that device, not as a share of it; a product large enough to stream, or a split with the host
    in it, still runs as shares."""
    from autogemm.engine.routes import targets

    shared = []
    real = targets.run_split
    monkeypatch.setattr(targets, "run_split", lambda *args: shared.append(args[1]) or real(*args))
    dt = DTYPES["d"]
    a, b = random_matrix(RNG, dt, (70, 50)), random_matrix(RNG, dt, (50, 90))
    c = np.asfortranarray(random_matrix(RNG, dt, (70, 90)))
    want = 2 * (a @ b) - c
    for devices, split in (([ctx.device, HOST], None), ([HOST, ctx.device], Split(3, (0, 3))), ([ctx.device], None)):
        assert relative_error(autogemm.gemm(a, b, devices=devices, split=split), a @ b) < dt.tolerance
    assert autogemm.gemm(a, b, c, alpha=2, beta=-1, devices=[ctx.device, HOST]) is c
    assert relative_error(c, want) < dt.tolerance and not shared
    autogemm.gemm(a, b, devices=[ctx.device, HOST], split=Split(3, (2, 1)))
    set_thresholds(monkeypatch, stream_bytes=a.nbytes)
    assert relative_error(autogemm.gemm(a, b, devices=[ctx.device, HOST]), a @ b) < dt.tolerance
    assert shared == [Split(3, (2, 1)), Split(8, (8, 0))]


def test_a_device_given_every_row_takes_the_host_s_blas_where_a_call_on_it_would(ctx, monkeypatch):
    """devices= with the host given no rows (no hybrid entry) and a product the device's thresholds give the
    host's BLAS (``host_multiply_adds``): computed there, as ``gemm(device=...)`` computes it, not by the
    device's kernels (on a CPU device, many times slower)."""
    import dataclasses

    from autogemm.engine.routes import host_blas, targets

    monkeypatch.setattr(targets, "profile_for", lambda device: None)                      # (no hybrid entry)
    ran, host_below = [], {"s": 40 * 30 * 20 + 1}
    real_run, real_thresholds = host_blas.HostRoute.run, host_blas.thresholds_for
    monkeypatch.setattr(host_blas.HostRoute, "run", lambda self, *args: ran.append(self) or real_run(self, *args))
    monkeypatch.setattr(host_blas, "thresholds_for", lambda device: dataclasses.replace(
        real_thresholds(device), host_multiply_adds=tuple(host_below.items())))
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (40, 30)), random_matrix(RNG, dt, (30, 20))
    assert relative_error(autogemm.gemm(a, b, devices=[ctx.device, HOST]), a @ b) < dt.tolerance and len(ran) == 1
    host_below.clear()
    a = random_matrix(RNG, dt, (41, 30))                    # (a call of another signature: no route kept)
    assert relative_error(autogemm.gemm(a, b, devices=[ctx.device, HOST]), a @ b) < dt.tolerance and len(ran) == 1


def test_large_host_calls_stream_through_the_device(ctx, monkeypatch, streamed):
    """gemm on numpy arrays of at least ``stream_bytes`` goes through the device's stream (any layout of c,
    alpha and beta as ever); smaller ones and device arrays do not."""
    from autogemm.shares import streaming
    streamed = []
    real = streaming.DeviceStream.run
    monkeypatch.setattr(streaming.DeviceStream, "run",
                        lambda self, trace=None: streamed.append(self) or real(self, trace))
    dt = DTYPES["c"]
    a, b = random_matrix(RNG, dt, (70, 50)), random_matrix(RNG, dt, (90, 50))
    c = np.asfortranarray(random_matrix(RNG, dt, (70, 90)))
    want = 2j * (a.astype(np.complex128) @ b.T.conj()) - c
    autogemm.gemm(a, b, c.copy(), alpha=2j, beta=-1, trans_b="C", device=ctx.device)
    assert not streamed
    set_thresholds(monkeypatch, stream_bytes=a.nbytes)
    got = autogemm.gemm(a, b, c, alpha=2j, beta=-1, trans_b="C", device=ctx.device)
    assert len(streamed) == 1 and got is c and relative_error(c, want) < dt.tolerance
    # a new result is page-locked memory (the pool's, poisoned by its last user), written by the device
    set_thresholds(monkeypatch, result_min_bytes=1)
    staging.result_pool(ctx).take((70, 90), dt.numpy)[...] = np.nan
    got = autogemm.gemm(a, b, trans_b="C", device=ctx.device)
    assert len(streamed) == 2 and staging.in_result_pool(got)
    assert relative_error(got, a.astype(np.complex128) @ b.T.conj()) < dt.tolerance


def test_devices_sharing_a_product_copy_b_through_the_host_once(device, small_chunks, monkeypatch, streamed):
    """Two device streams (each needing all of B) take B's blocks from one page-locked copy: every block
    crosses the host's memory once, and both shares come out right."""
    dt = DTYPES["d"]
    m, n, k = 300, 270, 90
    copied = []
    real = copying.parallel_copy
    monkeypatch.setattr(copying, "parallel_copy", lambda dst, src: (copied.append(src), real(dst, src))[1])
    for tb in ("N", "T"):
        a = random_matrix(RNG, dt, (m, k))
        b = random_matrix(RNG, dt, (n, k) if tb == "T" else (k, n))
        copied.clear()
        c = np.full((m, n), np.nan)
        run_split([DeviceContext(device), DeviceContext(device)], Split(2, (1, 1)),
                  HostGemm(dt, a, b, c, "N", tb, 1.0, 0.0))
        assert relative_error(c, a @ apply_op(b, tb)) < dt.tolerance
        from_b = [x for x in copied if np.shares_memory(x, b)]
        assert len(from_b) == 3 and sum(x.size for x in from_b) == b.size     # three 128-wide blocks, once


def test_page_locked_memory_is_kept_and_grown_only_when_too_small(device):
    from autogemm.shares.staging import page_locked
    ctx = DeviceContext(device)
    with page_locked(ctx, 4096) as first:
        pass
    with page_locked(ctx, 1000) as again:
        assert again is first
    with page_locked(ctx, 10_000) as larger:
        assert larger is not first and larger.nbytes >= 10_000
    with page_locked(ctx, 4096) as again:
        assert again is larger


def test_page_locked_memory_is_not_grown_under_its_user(device):
    """A caller that needs more waits until the one using the memory is done, and only then is it made
    anew (memory given back under a user's copies corrupts them)."""
    import threading
    import time

    from autogemm.shares.staging import page_locked
    ctx = DeviceContext(device)
    grown = []
    with page_locked(ctx, 4096) as first:
        first[:] = 7
        other = threading.Thread(target=lambda: grown.extend(page_locked(ctx, 100_000).__enter__().shape))
        other.start()
        time.sleep(0.2)
        assert not grown and np.all(first == 7)
    other.join(10)
    assert grown and grown[0] >= 100_000


def test_a_device_sharing_the_hosts_memory_computes_in_place(ctx, monkeypatch):
    """On a device that shares the host's memory (PoCL's CPU device) the share runs on buffers over the
    numpy arrays: nothing goes through staging, and beta and transposes hold as ever."""
    from autogemm.shares import mapped
    if not ctx.device.shares_host_memory:
        pytest.skip("this device has memory of its own")
    monkeypatch.setattr(copying, "parallel_copy", lambda dst, src: pytest.fail("copied through staging"))
    ran = []
    real = mapped.MappedShare.run
    monkeypatch.setattr(mapped.MappedShare, "run", lambda self: (ran.append(self), real(self))[1])
    dt = DTYPES["z"]
    a, b = random_matrix(RNG, dt, (40, 90)), random_matrix(RNG, dt, (70, 40))
    c = random_matrix(RNG, dt, (90, 70))
    want = 0.5 * (a.T @ b.T) + 2 * c
    run_split([ctx, HOST], Split(4, (3, 1)), HostGemm(dt, a, b, c, "T", "T", 0.5, 2.0))
    assert len(ran) == 1 and relative_error(c, want) < dt.tolerance


def _off_alignment(dt, shape, offset: int) -> np.ndarray:
    """Random values of ``dt`` in an array whose address is ``offset`` bytes past a multiple of 128."""
    count = int(np.prod(shape)) * dt.numpy.itemsize
    memory = np.empty(count + 256, np.uint8)
    start = -memory.ctypes.data % 128 + offset
    placed = memory[start:start + count].view(dt.numpy).reshape(shape)
    placed[...] = random_matrix(RNG, dt, shape)
    return placed


@pytest.mark.parametrize("letter", ["s", "d", "z"])
@pytest.mark.parametrize("beta", [0.0, 1.5])
def test_a_share_in_place_is_right_on_arrays_at_any_address(ctx, letter, beta):
    """Buffers over host arrays are read and written in place, and a CPU's kernels may use aligned vector
    instructions on them (PoCL on an AVX-512 CPU faulted on a C 16 bytes off a multiple of 32): arrays
    off the device's alignment are computed through aligned copies, and C, poisoned where beta is 0, gets
    every row."""
    if not ctx.device.shares_host_memory:
        pytest.skip("this device has memory of its own")
    dt = DTYPES[letter]
    for offset in (16, 8):
        a, b = _off_alignment(dt, (128, 128), offset), _off_alignment(dt, (128, 128), offset)
        c = _off_alignment(dt, (128, 128), offset)
        if beta == 0:
            c[...] = np.nan
        want = _reference(a, b, c, 1.0, beta, "N", "N", dt)
        run_split([ctx, HOST], Split(8, (8, 0)), HostGemm(dt, a, b, c, "N", "N", 1.0, beta))
        assert relative_error(c, want) < tolerance(dt, 128)


def test_address_aligned_keeps_an_aligned_array_and_places_any_other():
    from autogemm.shares.mapped import address_aligned

    x = _off_alignment(DTYPES["d"], (5, 7), 0)
    assert address_aligned(x, 128) is x
    off = _off_alignment(DTYPES["d"], (5, 7), 8)
    placed = address_aligned(off, 128)
    assert placed.ctypes.data % 128 == 0 and np.array_equal(placed, off) and placed.dtype == off.dtype
    assert address_aligned(off, 128, copy=False).shape == off.shape
