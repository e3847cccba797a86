"""The host's copy threads: tasks run at once, or in the background in order, errors reach the caller
only once every task has ended, and callers in several threads share the helpers."""

import functools
import threading
import time

import numpy as np
import pytest
from limits import set_thresholds

from autogemm.shares import copying


@pytest.fixture
def threads(monkeypatch):
    """Four copy threads, whatever this machine has (a fresh set of helpers)."""
    monkeypatch.setattr(copying, "COPY_THREADS", 4)
    monkeypatch.setattr(copying, "_helpers", copying._Helpers())


def test_in_parallel_runs_tasks_on_several_threads_and_returns_their_results_in_order(threads):
    seen, lock = set(), threading.Lock()
    barrier = threading.Barrier(4, timeout=10)       # only passes if four tasks run at the same time

    def task(i):
        def run():
            barrier.wait()
            with lock:
                seen.add(threading.get_ident())
            return i * i
        return run

    assert copying.in_parallel([task(i) for i in range(4)]) == [0, 1, 4, 9]
    assert len(seen) == 4 and threading.get_ident() in seen       # the caller took one


def test_background_tasks_run_in_order_while_the_caller_goes_on_and_join_takes_the_rest(threads):
    release, started, lock = threading.Event(), [], threading.Lock()

    def task(i):
        def run():
            with lock:
                started.append((i, threading.get_ident()))
            if i < 3:                                # the three helpers hold the first three
                assert release.wait(10)
        return run

    work = copying.Background([task(i) for i in range(8)])
    deadline = time.monotonic() + 10
    while len(started) < 3 and time.monotonic() < deadline:     # running before join, on other threads
        time.sleep(0.001)
    assert sorted(i for i, _ in started) == [0, 1, 2]
    assert threading.get_ident() not in {thread for _, thread in started}
    release.set()
    work.join()
    assert sorted(i for i, _ in started[3:]) == list(range(3, 8))


def test_an_error_reaches_the_caller_once_every_task_under_way_has_ended(threads):
    started, ended = [], []

    def task(i):
        def run():
            started.append(i)
            time.sleep(0.05 * (i == 3))
            ended.append(i)
            if i == 1:
                raise ValueError("part 1 failed")
            return i
        return run

    with pytest.raises(ValueError, match="part 1"):
        copying.in_parallel([task(i) for i in range(4)])
    assert sorted(ended) == [0, 1, 2, 3]
    started.clear()
    ended.clear()
    work = copying.Background([task(i) for i in range(4)])
    with pytest.raises(ValueError, match="part 1"):
        work.join()
    assert 1 in ended and sorted(started) == sorted(ended)


def test_once_a_background_task_fails_or_it_is_closed_no_other_starts(threads):
    ran, taken, gate = [], [], threading.Event()

    def task(i):
        def run():
            taken.append(i)
            if i == 0:
                raise ValueError("stop")
            assert gate.wait(10)
            ran.append(i)
        return run

    work = copying.Background([task(i) for i in range(100)])
    threading.Timer(0.05, gate.set).start()
    with pytest.raises(ValueError, match="stop"):
        work.join()
    assert 0 in taken and len(ran) <= 3        # those under way when it failed, none after
    ran.clear()
    gate.clear()
    taken.clear()
    work = copying.Background([task(i) for i in range(1, 101)])
    deadline = time.monotonic() + 10
    while len(taken) < 3 and time.monotonic() < deadline:     # each helper has taken one
        time.sleep(0.001)
    threading.Timer(0.05, gate.set).start()
    work.close()                               # waits for the three under way, starts no other
    assert sorted(ran) == [1, 2, 3]


def test_callers_in_several_threads_share_the_helpers(threads):
    """More callers than helpers: each takes the idle ones and runs the rest itself; all results right."""
    src = np.random.default_rng(0).random((8, 2**16))
    outs = [np.zeros_like(src) for _ in range(6)]
    errors = []

    def caller(out):
        try:
            for _ in range(20):
                out[...] = 0
                copying.in_parallel([lambda r=r: copying.copy_into(out[r], src[r]) for r in range(8)])
                assert np.array_equal(out, src)
                got: list[int] = []
                copying.Background([functools.partial(got.append, r) for r in range(8)]).join()
                assert sorted(got) == list(range(8))
        except BaseException as error:      # reported by the main thread
            errors.append(error)

    callers = [threading.Thread(target=caller, args=(out,)) for out in outs]
    for t in callers:
        t.start()
    for t in callers:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in callers)


def test_a_caller_that_found_every_helper_busy_is_joined_by_them_as_they_come_free(threads):
    gate = threading.Event()
    busy = copying.Background([functools.partial(gate.wait, 10) for _ in range(3)])    # all three helpers
    pair = threading.Barrier(2, timeout=10)     # only passes while two threads run the caller's tasks

    def free_the_helpers():
        gate.set()
        deadline = time.monotonic() + 10
        while len(copying._helpers._idle) < 3 and time.monotonic() < deadline:
            time.sleep(0.001)

    ran = copying.in_parallel([free_the_helpers] + [lambda i=i: (pair.wait(), i)[1] for i in range(8)])
    assert ran[1:] == list(range(8))
    busy.join()


def test_parallel_copy_copies_contiguous_and_strided_arrays(threads, monkeypatch):
    monkeypatch.setattr(copying, "THREADED_BYTES", 0)
    monkeypatch.setattr(copying, "PART_BYTES", 1)
    rng = np.random.default_rng(1)
    src = rng.random((301, 77))
    dense = np.full_like(src, np.nan)
    copying.parallel_copy(dense, src)
    assert np.array_equal(dense, src)
    wide = np.full((301, 90), np.nan)
    copying.parallel_copy(wide[:, 5:82], src)                   # rows of a strided destination
    assert np.array_equal(wide[:, 5:82], src) and np.isnan(wide[:, :5]).all() and np.isnan(wide[:, 82:]).all()


@pytest.mark.parametrize("threaded_bytes", [0, 2**40])
def test_copy_all_copies_every_pair_on_helpers_or_alone_by_size(threads, monkeypatch, threaded_bytes):
    """Without native threads, ``copy_all`` shares its pairs among the helper threads from
    ``THREADED_BYTES`` and copies them in the calling thread under it: each pair right either way."""
    monkeypatch.setattr(copying, "native_copier", lambda: None)
    monkeypatch.setattr(copying, "THREADED_BYTES", threaded_bytes)
    shared = []
    real_in_parallel = copying.in_parallel
    monkeypatch.setattr(copying, "in_parallel", lambda tasks: shared.append(len(tasks)) or real_in_parallel(tasks))
    rng = np.random.default_rng(3)
    sources = [rng.random(n) for n in (1, 1000, 4097)]
    places = [np.full_like(x, np.nan) for x in sources]
    copying.copy_all(list(zip(places, sources)))
    assert all(np.array_equal(place, x) for place, x in zip(places, sources))
    assert shared == ([3] if threaded_bytes == 0 else [])


def test_copy_all_and_parallel_copy_take_the_native_threads(native, monkeypatch):
    """With native threads, ``copy_all`` hands them every pair in one batch, and ``parallel_copy`` its
    copy from ``NATIVE_THREADED_BYTES`` (smaller ones the caller copies alone)."""
    monkeypatch.setattr(copying, "native_copier", lambda: native)
    monkeypatch.setattr(copying, "COPY_THREADS", 3)
    batches, real_start = [], type(native).start
    monkeypatch.setattr(type(native), "start", lambda self, pieces: (batches.append(len(pieces)),
                                                                     real_start(self, pieces))[1])
    rng = np.random.default_rng(4)
    sources = [rng.random(n) for n in (7, 2**17 + 3)]
    places = [np.full_like(x, np.nan) for x in sources]
    copying.copy_all(list(zip(places, sources)))
    assert batches == [2] and all(np.array_equal(place, x) for place, x in zip(places, sources))
    for size, taken in ((copying.NATIVE_THREADED_BYTES // 8 - 1, [2]), (copying.NATIVE_THREADED_BYTES // 8, [2, 1])):
        src = rng.random((size, 1))
        dst = np.full_like(src, np.nan)
        copying.parallel_copy(dst, src)
        assert np.array_equal(dst, src) and batches == taken


@pytest.fixture
def native(monkeypatch):
    """This process's native copier, of pools of two threads, three pools at most as on a host of nine
    cores (skipped where the library was not built)."""
    from autogemm.shares import native as native_module

    monkeypatch.setattr(native_module, "_copier", [])
    monkeypatch.setattr(native_module, "usable_cores", lambda: 9)
    made = native_module.copier(2)
    if made is None:
        pytest.skip("the native copier was not built (no C compiler when the package was installed)")
    return made


def test_native_threads_copy_every_piece_and_mark_its_event_complete(native, device):
    import pyopencl as cl

    context = cl.Context([device.cl_device])
    src = np.random.default_rng(1).random(3 * 2**18 + 17)
    dst = np.full_like(src, np.nan)
    events = [cl.UserEvent(context) for _ in range(4)]
    bounds = [0, 1000, 2**18, 2**19 + 5, src.size]                # parts of one and several pieces
    pieces = [(dst.ctypes.data + lo * 8, src.ctypes.data + lo * 8, (hi - lo) * 8, event.int_ptr)
              for lo, hi, event in zip(bounds, bounds[1:], events)]
    batch = native.start(pieces)
    assert native.pools == 3
    others = [native.start([]) for _ in range(native.pools - 1)]        # a batch per pool at a time
    assert None not in others and native.start(pieces) is None          # every pool busy: the caller copies
    for other in others:
        native.wait(other)
    native.wait(batch)
    assert np.array_equal(dst, src)
    with pytest.raises(TypeError):
        native.start([("not an address", 0, 8, None)])                  # nothing started: no pool kept busy
    assert None not in (started := [native.start([]) for _ in range(native.pools)])
    for other in started:
        native.wait(other)
    assert all(e.command_execution_status == cl.command_execution_status.COMPLETE for e in events)
    again = native.start([(dst.ctypes.data, src.ctypes.data, 0, None)])          # free again; empty pieces
    native.wait(again)


def test_native_threads_copy_bytes_at_any_alignment(native):
    """Pieces whose ends fall anywhere within the 16 and 64 bytes the streaming stores move at once, and
    across the 256 KiB parts: every byte copied, none beside them written."""
    rng = np.random.default_rng(3)
    src = rng.integers(0, 256, 2**20 + 300, dtype=np.uint8)
    for to_at, from_at, size in [(3, 0, 1), (1, 5, 15), (7, 2, 63), (0, 0, 64), (9, 13, 65), (5, 1, 2**19 + 77),
                                 (15, 3, 2**20 + 101)]:
        dst = np.zeros(src.size + 32, np.uint8)
        batch = native.start([(dst.ctypes.data + to_at, src.ctypes.data + from_at, size, None)])
        native.wait(batch)
        assert np.array_equal(dst[to_at:to_at + size], src[from_at:from_at + size]), (to_at, from_at, size)
        assert not dst[:to_at].any() and not dst[to_at + size:].any()


def test_numpy_in_numpy_out_copies_its_pieces_on_native_threads(native, ctx, discrete, monkeypatch):
    """A staged product (PoCL made to look as if it had memory of its own) with its pieces copied by
    the native threads, each upload waiting for the event they mark, or, in a call of one block under
    ``overlap_min_bytes`` (a whole call), copied at once, a piece an array, before the first upload:
    right, and no Python copy made."""
    import autogemm
    from autogemm.accuracy import random_matrix, relative_error
    from autogemm.dtypes import DTYPES
    from autogemm.engine import transfer

    monkeypatch.setattr(transfer, "PIECE_BYTES", 4096)
    monkeypatch.setattr(copying, "COPY_THREADS", 3)
    monkeypatch.setattr(transfer, "memmove", lambda *args: pytest.fail("copied by a Python thread"))
    started, real_start = [], type(native).start
    monkeypatch.setattr(type(native), "start", lambda self, pieces: (started.append([p[3] for p in pieces]),
                                                                     real_start(self, pieces))[1])
    dt = DTYPES["d"]
    rng = np.random.default_rng(5)
    for m, overlap_min_bytes in ((90, 0), (91, 2**40)):      # (a route keeps the thresholds it was made under)
        # (the second in one block of rows, whatever the plan's tiles)
        set_thresholds(monkeypatch, overlap_min_bytes=overlap_min_bytes,
                       **({"pipelined_elements": 2**40} if overlap_min_bytes else {}))
        a, b = random_matrix(rng, dt, (m, 70)), random_matrix(rng, dt, (70, 50))
        for _ in range(3):
            assert relative_error(autogemm.gemm(a, b, device=ctx.device), a @ b) < dt.tolerance
    assert len(started) == 6 and min(map(len, started[:3])) > 2   # every call, the first three in several pieces
    assert all(None not in events for events in started[:3])     # an event a piece, marked by the threads
    assert started[3:] == [[None, None]] * 3                      # a whole call: A and B, no event


def test_native_batches_in_quick_succession_from_several_threads_each_copy_right(native):
    """Batches one after the other, from four threads at once (a batch per pool at a time, three pools; a
    caller turned away copies its own way), sizes from nothing to several parts: every copy right."""
    rng = np.random.default_rng(2)
    src = rng.random(2**19)
    errors = []

    def caller(seed):
        sizes = np.random.default_rng(seed).integers(0, src.size, 100)
        dst = np.empty_like(src)
        try:
            for size in sizes:
                dst[:size] = np.nan
                batch = native.start([(dst.ctypes.data, src.ctypes.data, int(size) * 8, None)])
                if batch is None:
                    copying.copy_into(dst[:size], src[:size])
                else:
                    native.wait(batch)
                assert np.array_equal(dst[:size], src[:size])
        except BaseException as error:      # reported by the main thread
            errors.append(error)

    callers = [threading.Thread(target=caller, args=(seed,)) for seed in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in callers)


def test_the_native_copies_are_off_where_the_environment_says_0(native, monkeypatch):
    from autogemm.shares import native as native_module

    monkeypatch.setattr(native_module, "_copier", [])
    monkeypatch.setenv(native_module.NATIVE_ENV, "0")
    assert native_module.copier(2) is None


def test_which_threads_copy_is_said_as_the_copier_stands(native, monkeypatch):
    """Where the native copier is missing (no compiler at install, turned off, or too few cores) the
    copies run on Python threads, which the benchmarks and `autogemm devices` say."""
    monkeypatch.setattr(copying, "native_copier", lambda: native)
    assert copying.copy_threads() == "native threads"
    monkeypatch.setattr(copying, "native_copier", lambda: None)
    assert copying.copy_threads() == "Python threads"


@pytest.mark.gpu
def test_on_a_gpu_numpy_products_copy_their_operands_on_native_threads(native, ctx, monkeypatch):
    """A GPU with memory of its own: numpy in, numpy out, each staged piece copied by the native
    threads (no Python copy), right for every dtype, as large as row blocks and pipelined pieces make
    it."""
    import autogemm
    from autogemm.accuracy import random_matrix, relative_error
    from autogemm.dtypes import DTYPES
    from autogemm.engine import transfer

    monkeypatch.setattr(transfer, "memmove", lambda *args: pytest.fail("copied by a Python thread"))
    rng = np.random.default_rng(7)
    for key, n in (("s", 1500), ("d", 1024), ("c", 700), ("z", 513)):
        dt = DTYPES[key]
        a, b = random_matrix(rng, dt, (n, n + 3)), random_matrix(rng, dt, (n + 3, n - 5))
        got = autogemm.gemm(a, b, device=ctx.device, backend="opencl")
        assert relative_error(got, a.astype(dt.reference_numpy) @ b) < dt.tolerance


def test_native_threads_copy_the_rows_of_a_block_into_its_place_in_a_matrix(native, monkeypatch):
    """Pieces of rows (a block of C into a larger C): rows shorter than a part (several per part), longer
    than one (a part each), at odd offsets; every element of the block copied, none beside it written.
    ``parallel_copy`` gives such a copy to the native threads, not to Python's."""
    rng = np.random.default_rng(4)
    for rows, cols, at in [(3, 5, (1, 1)), (700, 300, (3, 7)), (5, 70_001, (1, 3)), (1, 9, (0, 2))]:
        src = rng.random((rows, cols))
        dst = np.zeros((rows + 5, cols + 11))
        place = dst[at[0]:at[0] + rows, at[1]:at[1] + cols]
        batch = native.start([(place.ctypes.data, src.ctypes.data, cols * 8, None, rows, dst.strides[0], cols * 8)])
        native.wait(batch)
        assert np.array_equal(place, src), (rows, cols)
        place[...] = 0
        assert not dst.any()
    monkeypatch.setattr(copying, "COPY_THREADS", 3)
    monkeypatch.setattr(copying, "native_copier", lambda: native)
    monkeypatch.setattr(copying, "in_parallel", lambda tasks: pytest.fail("copied by Python threads"))
    src = rng.random((600, 1000))
    dst = np.zeros((700, 1200))
    copying.parallel_copy(dst[50:650, 100:1100], src)
    assert np.array_equal(dst[50:650, 100:1100], src)
    dst[50:650, 100:1100] = 0
    assert not dst.any()
