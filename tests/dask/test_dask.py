"""``autogemm.dask`` on a ``LocalCluster`` of two worker processes (both on this machine's device), and on
one of worker threads:
products of several chunkings, dtypes and transposes agree with numpy, a worker killed after computing
part of a product leaves the result right, and bad inputs fail before anything is computed."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from limits import set_thresholds  # noqa: E402

import autogemm.dask as ad  # noqa: E402
from autogemm.accuracy import apply_op, random_matrix, relative_error  # noqa: E402
from autogemm.dask import products, tasks  # noqa: E402
from autogemm.dtypes import DTYPES  # noqa: E402
from autogemm.errors import ArgumentError, DtypeError, ShapeError  # noqa: E402
from autogemm.shares import copying  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def client():
    cluster = ad.local_cluster(n_workers=2, processes=True, dashboard_address=":0")
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few dozen rows stay as they are (they are merged up to ``MIN_BLOCK`` otherwise)."""
    monkeypatch.setattr(products, "MIN_BLOCK", 16)


CASES = [  # (dtype, m, n, k, chunks of A's rows, of K, of B's columns, trans_a, trans_b)
    ("s", 97, 61, 130, 40, 27, 25, "N", "N"),     # uneven last chunks, K in 5 chunks
    ("d", 64, 80, 33, 64, 33, 80, "T", "N"),      # one chunk each
    ("c", 50, 41, 90, 17, 45, 41, "N", "C"),      # K in 2 chunks
    ("z", 33, 70, 57, 33, 20, 30, "C", "T"),      # K in 3 chunks
]


@pytest.mark.parametrize("cut_k", [False, True], ids=["whole-k", "cut-k"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] + c[7] + c[8] for c in CASES])
def test_products_of_several_chunkings_agree_with_numpy(client, small_blocks, monkeypatch, case, cut_k):
    """With K whole (one product per block of C) and cut (partial blocks summed in a tree)."""
    if cut_k:
        monkeypatch.setattr(products, "PANEL_BYTES", 4096)
    key, m, n, k, cm, ck, cn, ta, tb = case
    dt = DTYPES[key]
    a = random_matrix(RNG, dt, (k, m) if ta != "N" else (m, k))
    b = random_matrix(RNG, dt, (n, k) if tb != "N" else (k, n))
    c = random_matrix(RNG, dt, (m, n))
    A = da.from_array(a, chunks=(ck, cm) if ta != "N" else (cm, ck))
    B = da.from_array(b, chunks=(cn, ck) if tb != "N" else (ck, cn))
    C = da.from_array(c, chunks=(cm, 2 * cn))
    got = ad.gemm(A, B, C, alpha=0.5, beta=-2.0, trans_a=ta, trans_b=tb, split_every=2)
    assert isinstance(got, da.Array) and got.shape == (m, n) and got.dtype == dt.numpy
    assert any(name.startswith("sum") for name in got.dask.layers) == cut_k
    want = 0.5 * (apply_op(a.astype(dt.reference_numpy), ta) @ apply_op(b, tb)) - 2.0 * c
    result = got.compute()
    assert result.shape == (m, n) and relative_error(result, want) < dt.tolerance
    assert relative_error(ad.matmul(A if ta == "N" else A.T, B if tb == "N" else B.T).compute(),
                          apply_op(a, "N" if ta == "N" else "T") @ apply_op(b, "N" if tb == "N" else "T")
                          ) < dt.tolerance


def test_small_blocks_are_merged_before_they_are_multiplied():
    A = da.ones((9000, 100), chunks=(100, 50), dtype=np.float32)
    product = ad.matmul(A, A.T)
    assert product.chunks[0] == (products.MIN_BLOCK, products.MIN_BLOCK, 9000 - 2 * products.MIN_BLOCK)
    assert product.numblocks == (3, 3)


def test_worker_threads_each_keep_their_device_and_multiply_right():
    """``local_cluster``'s default: workers that are threads of this process, each pinned to a device."""
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (300, 200)), random_matrix(RNG, dt, (200, 250))
    with ad.local_cluster(n_workers=2, dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2 and all(address in tasks._slots for address in workers)
        got = ad.matmul(da.from_array(a, chunks=100), da.from_array(b, chunks=100)).compute()
    assert relative_error(got, a.astype(np.float64) @ b) < dt.tolerance


@pytest.mark.parametrize("page_locked", [False, True], ids=["ordinary", "page-locked"])
def test_worker_threads_write_each_block_into_the_result_that_compute_hands_over(monkeypatch, small_blocks,
                                                                                 page_locked):
    """Workers that are threads of this process write each block at its place in one result array
    (poisoned here: a block left unwritten fails), which ``compute()`` returns as it is (dask's
    concatenation fails the test); a page-locked one is written by the device, an ordinary one by the
    host's copies. A second ``compute()`` gets an array of its own and leaves the first as it was."""
    from autogemm import Device
    from autogemm.dask import assembly
    if page_locked:
        monkeypatch.setattr(Device, "shares_host_memory", property(lambda self: False))
        set_thresholds(monkeypatch, result_min_bytes=1)             # a small result is page-locked too
    real_result, writes = tasks.host_result, {"device": 0, "host": 0}

    def poisoned(ctx, shape, dtype, limits):
        out = real_result(ctx, shape, dtype, limits)
        out[...] = np.nan
        return out

    def counted(name, call):
        return lambda *args, **kw: (writes.__setitem__(name, writes[name] + 1), call(*args, **kw))[1]

    monkeypatch.setattr(tasks, "host_result", poisoned)
    monkeypatch.setattr(tasks, "read_into", counted("device", tasks.read_into))
    monkeypatch.setattr(tasks, "parallel_copy", counted("host", tasks.parallel_copy))
    def concatenated(results):
        raise AssertionError("concatenated")    # (pytest.fail's exception would leave the worker hanging)

    monkeypatch.setattr(assembly.da.core, "finalize", concatenated)
    dt = DTYPES["z" if page_locked else "s"]
    a, b = random_matrix(RNG, dt, (130, 97)), random_matrix(RNG, dt, (130, 61))
    product = ad.gemm(da.from_array(a, chunks=(27, 40)), da.from_array(b, chunks=(27, 25)), alpha=-2.0, trans_a="T")
    want = -2.0 * (a.T.astype(dt.reference_numpy) @ b)
    with ad.local_cluster(n_workers=2, dashboard_address=":0") as cluster, distributed.Client(cluster):
        first = product.compute()
        kept = first.copy()
        second = product.compute()
    assert relative_error(first, want) < dt.tolerance and relative_error(second, want) < dt.tolerance
    assert not np.shares_memory(first, second) and np.array_equal(first, kept)
    assert tasks.in_result_pool(first) == page_locked            # the very array the blocks were written in
    assert writes == ({"device": 18, "host": 0} if page_locked else {"device": 0, "host": 18})


def test_worker_threads_take_even_contiguous_shares_of_the_blocks_of_c(monkeypatch, small_blocks):
    """16 blocks of C on two worker threads: the first worker (by address) the first two rows of blocks,
    the other the last two, whatever Dask would choose by where the inputs lie; the graph is built before
    the cluster exists, as a user may."""
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (100, 30)), random_matrix(RNG, dt, (30, 100))
    ran, real = [], tasks.block_product

    def recorded(panel_a, panel_b, **kw):
        row = int(np.flatnonzero(a[::25, 0] == panel_a[0][0, 0])[0])      # (the panels are copies of a's)
        ran.append((distributed.get_worker().address, row))
        return real(panel_a, panel_b, **kw)

    monkeypatch.setattr(tasks, "block_product", recorded)
    product = ad.matmul(da.from_array(a, chunks=(25, 30)), da.from_array(b, chunks=(30, 25)))
    with ad.local_cluster(n_workers=2, dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        first, second = sorted(client.scheduler_info()["workers"])
        for _ in range(2):
            ran.clear()
            got = product.compute()
            assert relative_error(got, a.astype(np.float64) @ b) < dt.tolerance
            assert sorted(ran) == sorted([(first, 0)] * 4 + [(first, 1)] * 4 + [(second, 2)] * 4
                                         + [(second, 3)] * 4)


def test_blocks_away_from_their_places_are_concatenated():
    """``assemble`` hands a result array over only where every block lies at its place in it."""
    from autogemm.dask import assembly
    chunks = ((3, 2), (4,))

    def same(x, y):
        return x.__array_interface__ == y.__array_interface__

    def blocks_of(key):
        whole = assembly.claim(key, (5, 4), np.float64, 0, 0, lambda shape, dtype: np.arange(20.0).reshape(shape))
        assert same(assembly.claim(key, (5, 4), np.float64, 3, 0, pytest.fail), whole)
        return whole, [[whole[:3]], [whole[3:]]]

    whole, parts = blocks_of("in place")
    assert same(assembly.assemble(parts, "in place", chunks), whole)
    assert "in place" not in assembly._results            # handed over: never written again
    whole, parts = blocks_of("moved")
    parts[1][0] = parts[1][0].copy()
    got = assembly.assemble(parts, "moved", chunks)
    assert not np.shares_memory(got, whole) and np.array_equal(got, whole)
    again = assembly.claim("moved", (5, 4), np.float64, 0, 0, lambda shape, dtype: np.zeros(shape))
    assert not np.shares_memory(again, whole)              # its place there is taken: a new array


def test_a_worker_killed_with_blocks_of_a_product_leaves_it_right(client, small_blocks):
    """The product's blocks are computed and held on both workers; one is killed (SIGKILL) and Dask
    computes again what it held."""
    dt = DTYPES["d"]
    a, b = random_matrix(RNG, dt, (160, 90)), random_matrix(RNG, dt, (90, 150))
    product = ad.matmul(da.from_array(a, chunks=40), da.from_array(b, chunks=(30, 50))).persist()
    distributed.wait(product)
    holders = client.who_has(product)
    victim = next(iter(holders.values()))[0]
    assert sum(victim in where for where in holders.values()) >= 1
    # killed just after it answers (a worker killed while it answers fails the call)
    client.run(lambda: threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGKILL)).start(), workers=[victim])
    deadline = time.monotonic() + 30
    while victim in client.scheduler_info()["workers"]:
        assert time.monotonic() < deadline, "the worker was not killed"
        time.sleep(0.05)
    assert relative_error(product.compute(), a @ b) < dt.tolerance


@pytest.mark.parametrize("call,error,words", [
    (lambda A, B: ad.matmul(A, B[:50]), ShapeError, "inner dimensions differ"),
    (lambda A, B: ad.matmul(A, B.astype(np.float32)), DtypeError, "one dtype"),
    (lambda A, B: ad.matmul(A.astype(np.int64), B.astype(np.int64)), DtypeError, "float32"),
    (lambda A, B: ad.matmul(da.ma.masked_array(A), B), ArgumentError, "numpy chunks"),
    (lambda A, B: ad.matmul(A[A[:, 0] > 0], B), ShapeError, "compute_chunk_sizes"),
    (lambda A, B: ad.matmul(A[None], B), ShapeError, "2-D"),
    (lambda A, B: ad.matmul([[1.0, 2.0]], B), ArgumentError, "dask array"),
    (lambda A, B: ad.gemm(A, B, beta=1.0), ArgumentError, "no c"),
    (lambda A, B: ad.gemm(A, B, A, beta=1.0), ShapeError, "c has shape"),
    (lambda A, B: ad.gemm(A, B, (A @ B).astype(np.float32), beta=1.0), DtypeError, "operands' dtype"),
    (lambda A, B: ad.gemm(A, B, trans_a="X"), ArgumentError, "'N', 'T' or 'C'"),
])
def test_bad_inputs_fail_before_anything_is_computed(monkeypatch, call, error, words):
    monkeypatch.setattr(tasks, "block_product", lambda *args, **kw: pytest.fail("computed"))
    A = da.from_array(RNG.standard_normal((60, 70)), chunks=30)
    B = da.from_array(RNG.standard_normal((70, 40)), chunks=30)
    with pytest.raises(error, match=words):
        call(A, B)


def test_a_worker_without_a_device_multiplies_on_numpy_and_says_so_once(monkeypatch, caplog):
    monkeypatch.setenv("AUTOGEMM_DEVICE", "no such device")
    tasks.slot_device.cache_clear()
    try:
        a, b = RNG.standard_normal((20, 30)), RNG.standard_normal((30, 10))
        with caplog.at_level(logging.WARNING, logger="autogemm.dask"):
            first = tasks.partial_product(a, b, trans_a="N", trans_b="N", alpha=2.0)
            panels = tasks.block_product([a[:, :12], a[:, 12:]], [b[:12], b[12:]], trans_a="N", trans_b="N",
                                          alpha=2.0)
        assert first.shape == (20, 1, 10) and np.allclose(first[:, 0], 2 * a @ b) and np.allclose(panels, 2 * a @ b)
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
        assert "numpy's BLAS" in caplog.records[0].message
    finally:
        tasks.slot_device.cache_clear()


def test_each_worker_is_pinned_to_a_device_and_warmed(client):
    from autogemm.runtime.opencl.discovery import devices

    slots = {f"{d.platform_index}:{d.device_index}" for d in devices()}
    client.wait_for_workers(2, timeout=60)        # a worker killed by another test comes back, pinned too
    deadline = time.monotonic() + 60
    while True:
        pinned = client.run(lambda dask_worker: (tasks._slots.get(dask_worker.address),
                                                 tasks.slot_device(tasks._slots.get(dask_worker.address))
                                                 is not None))
        if all(slot in slots and found for slot, found in pinned.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(pinned) == 2 and all(slot in slots and found for slot, found in pinned.values()), pinned


def test_bench_dask_times_every_path_and_checks_it(tmp_path):
    import json

    from click.testing import CliRunner

    from autogemm.cli import main

    path = tmp_path / "dask.json"
    out = CliRunner().invoke(main, ["bench-dask", "--dtype", "d", "--size", "192", "--chunk", "64",
                                    "--workers", "1", "--runs", "1", "--json", str(path)])
    assert out.exit_code == 0, out.output
    assert all(name in out.output for name in ("autogemm.dask", "autogemm.gemm", "dask numpy", "dask cupy"))
    written = json.loads(path.read_text())
    assert written["command"].startswith("autogemm") and "commit" in written      # what made it
    rows = {r["path"]: r for r in written["results"]}
    for name in ("autogemm.dask", "autogemm.gemm", "dask numpy"):
        assert rows[name]["seconds"] > 0 and rows[name]["error"] < 1e-12 and not rows[name]["note"]
    assert 0 < rows["autogemm.dask"]["busy"] <= 1 and rows["dask numpy"]["busy"] is None      # its devices' share
    assert 0 < rows["autogemm.dask"]["copying"] <= 1 and rows["dask numpy"]["copying"] is None
    assert "busy" in out.output
    assert written["host_copies"] == copying.copy_threads() and f"host copies: {written['host_copies']}" in out.output
    assert rows["dask cupy"]["seconds"] or rows["dask cupy"]["note"].startswith("not installed")
    out = CliRunner().invoke(main, ["bench-dask", "--workers", "0"])
    assert out.exit_code != 0 and "at least 1" in out.output
    out = CliRunner().invoke(main, ["bench-dask", "--paths", "dask,blas"])
    assert out.exit_code != 0 and "not blas" in out.output
    out = CliRunner().invoke(main, ["bench-dask", "--size", "96", "--chunk", "32", "--workers", "1", "--runs", "1",
                                    "--paths", "gemm"])
    assert out.exit_code == 0 and "autogemm.gemm" in out.output and "dask numpy" not in out.output


def test_bench_dask_keeps_what_it_measured_when_a_run_is_cut_short(tmp_path, monkeypatch):
    """Each result is printed and written to --json as it comes: a run stopped in the middle (here by an
    interrupt in the Dask path, after autogemm.gemm was timed) leaves them behind."""
    import json

    from click.testing import CliRunner

    import autogemm.dask
    from autogemm.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(autogemm.dask, "matmul", interrupted)
    path = tmp_path / "dask.json"
    out = CliRunner().invoke(main, ["bench-dask", "--size", "96", "--chunk", "32", "--workers", "1", "--runs", "1",
                                    "--paths", "gemm,dask", "--json", str(path)])
    assert out.exit_code != 0
    assert "1 worker, autogemm.gemm:" in out.output
    written = json.loads(path.read_text())
    assert [r["path"] for r in written["results"]] == ["autogemm.gemm"] and written["results"][0]["seconds"] > 0


def test_each_thread_multiplies_on_a_queue_of_its_own(ctx):
    """A worker's threads: one's copies can overlap another's kernels; one thread keeps its queue."""
    from concurrent.futures import ThreadPoolExecutor

    mine = tasks.thread_queue(ctx.device)
    with ThreadPoolExecutor(1) as other:
        theirs = other.submit(tasks.thread_queue, ctx.device).result()
    assert tasks.thread_queue(ctx.device) is mine and theirs is not mine and theirs.context == mine.context


def test_a_block_is_uploaded_once_while_its_owner_lives(ctx, monkeypatch):
    kept = tasks.KeptBlocks(capacity=3 * 64 * 64 * 4)
    uploads = []
    original = np.ascontiguousarray
    monkeypatch.setattr(tasks.np, "ascontiguousarray", lambda x: uploads.append(x.shape) or original(x))
    block = RNG.standard_normal((64, 128), dtype=np.float32)
    left, again = kept.on_device(ctx.queue, block[:, :64]), kept.on_device(ctx.queue, block[:, :64])
    assert again is left and len(uploads) == 1 and np.array_equal(left.get(), block[:, :64])
    assert np.array_equal(kept.on_device(ctx.queue, block.T).get(), block.T)          # another view: its own
    address = block.ctypes.data
    del block, left, again
    fresh = np.full((64, 128), 2.0, np.float32)        # maybe at the same address: never the old copy
    assert np.array_equal(kept.on_device(ctx.queue, fresh[:, :64]).get(), fresh[:, :64]), address
    for i in range(4):                                 # past the capacity the oldest go
        kept.on_device(ctx.queue, np.full((64, 64), float(i), np.float32))
    assert kept._bytes <= kept.capacity


def test_block_products_take_c_from_the_device_pool_and_give_it_back(ctx, monkeypatch):
    """A block of C lives in device memory of the context's pool, given back once the block is out (also
    when the product fails), so the next block takes the same memory rather than a new allocation."""
    from autogemm.runtime import context_for

    monkeypatch.setattr(tasks, "worker_device", lambda: ctx.device)
    pool = context_for(ctx.device).buffers
    taken, given = [], []
    real_take, real_give = pool.take, pool.give
    monkeypatch.setattr(pool, "take", lambda nbytes: taken.append(real_take(nbytes)) or taken[-1])
    monkeypatch.setattr(pool, "give", lambda buffer, nbytes: (given.append(buffer), real_give(buffer, nbytes)))
    a, b = RNG.standard_normal((40, 24)), RNG.standard_normal((24, 30))
    for _ in range(2):
        got = tasks.block_product([a[:, :10], a[:, 10:]], [b[:10], b[10:]], trans_a="N", trans_b="N", alpha=2.0)
        assert relative_error(got, 2 * a @ b) < DTYPES["d"].tolerance
    assert len(taken) == 2 and taken[1] is taken[0] and given == taken
    monkeypatch.setattr(tasks, "gemm", lambda *args, **kw: (_ for _ in ()).throw(RuntimeError("failed")))
    with pytest.raises(RuntimeError):
        tasks.block_product(a, b, trans_a="N", trans_b="N", alpha=1.0)
    assert given[-1] is taken[-1] and len(given) == 3


def test_a_worker_threads_take_turns_with_their_kernels_on_one_device(ctx, monkeypatch):
    """Two threads' block products on one device: each one's kernels (its pairs of blocks) are enqueued and
    run in a turn of its own, never between the other's; both right."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(tasks, "worker_device", lambda: ctx.device)
    calls, real = [], tasks.gemm

    def gemm(*args, **kw):
        calls.append(threading.get_ident())
        time.sleep(0.02)                    # the other thread runs meanwhile
        return real(*args, **kw)

    monkeypatch.setattr(tasks, "gemm", gemm)
    a, b = RNG.standard_normal((30, 36)), RNG.standard_normal((36, 20))

    def product():
        return tasks.block_product([a[:, :12], a[:, 12:24], a[:, 24:]], [b[:12], b[12:24], b[24:]], trans_a="N",
                                    trans_b="N", alpha=1.0)

    with ThreadPoolExecutor(2) as pool:
        results = [f.result() for f in [pool.submit(product) for _ in range(2)]]
    assert all(relative_error(r, a @ b) < DTYPES["d"].tolerance for r in results)
    assert len(calls) == 6 and len(set(calls[:3])) == 1 and len(set(calls[3:])) == 1 and calls[0] != calls[3]


def test_each_block_product_records_its_turn_on_the_device_and_its_way_back(ctx, monkeypatch):
    """While spans are recorded, each block product on a device adds its turn (the device, when its kernels
    were enqueued and when they ended) and then its block's way back to the host; their shares of a wall
    time are how busy the devices were and how long blocks took to come back."""
    monkeypatch.setattr(tasks, "worker_device", lambda: ctx.device)
    a, b = RNG.standard_normal((40, 24)), RNG.standard_normal((24, 30))
    tasks.block_product(a, b, trans_a="N", trans_b="N", alpha=1.0)              # not recorded
    with tasks.recorded_spans() as spans:
        started = time.perf_counter()
        for _ in range(3):
            tasks.block_product([a[:, :12], a[:, 12:]], [b[:12], b[12:]], trans_a="N", trans_b="N", alpha=1.0)
        wall = time.perf_counter() - started
    assert [s[0] for s in spans] == [tasks.TURN, tasks.COPY] * 3
    assert all(s[1] == ctx.device and started <= s[2] <= s[3] <= started + wall for s in spans)
    assert all(turn[3] == back[2] for turn, back in zip(spans[::2], spans[1::2]))     # back once computed
    assert 0 < tasks.spans_share(spans, wall) <= 1 and 0 < tasks.spans_share(spans, wall, tasks.COPY) <= 1
    other = object()                                       # another device, busy half the time
    assert tasks.spans_share([(tasks.TURN, ctx.device, 0.0, 1.0), (tasks.TURN, other, 0.0, 0.5)], 1.0) == 0.75
    assert tasks.spans_share([(tasks.COPY, ctx.device, 0.0, 0.5)], 1.0) == 0.0
    assert tasks.spans_share([], 1.0) is None
