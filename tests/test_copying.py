"""The host's copy threads: tasks run at once and hand their results back in order, errors reach the
caller only once every task has ended, and callers in several threads share the helpers."""

import threading
import time

import numpy as np
import pytest

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


def test_in_order_hands_results_over_as_each_ends_while_later_ones_still_run(threads):
    release = threading.Event()
    started = []

    def slow(i):
        def run():
            started.append(i)
            if i == 3:
                assert release.wait(10)
            return i
        return run

    results = copying.in_order([slow(i) for i in range(4)])
    assert [next(results) for _ in range(3)] == [0, 1, 2]        # the fourth is still blocked
    release.set()
    assert list(results) == [3] and sorted(started) == [0, 1, 2, 3]


def test_an_error_is_raised_where_its_result_would_come_once_every_task_has_ended(threads):
    ended = []

    def task(i):
        def run():
            time.sleep(0.05 * (i == 3))
            ended.append(i)
            if i == 1:
                raise ValueError("part 1 failed")
            return i
        return run

    with pytest.raises(ValueError, match="part 1"):
        copying.in_parallel([task(i) for i in range(4)])
    assert sorted(ended) == [0, 1, 2, 3]
    ended.clear()
    results = copying.in_order([task(i) for i in range(4)])
    assert next(results) == 0
    with pytest.raises(ValueError, match="part 1"):
        next(results)
    assert sorted(ended) == [0, 1, 2, 3]                          # closing waited for the others


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
                got = list(copying.in_order([lambda r=r: r for r in range(8)]))
                assert got == list(range(8))
        except BaseException as error:      # reported by the main thread
            errors.append(error)

    callers = [threading.Thread(target=caller, args=(out,)) for out in outs]
    for t in callers:
        t.start()
    for t in callers:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in callers)


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
