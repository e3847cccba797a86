"""Many threads calling ``gemm`` on one device at once (issue 8): each gets the right answer. The threads
share the device's queue, its program cache and, all of them at each step, the plan of one problem: its
kernels carry arguments, and in the padding edge mode its temporary buffers hold the padded operands,
so one thread's launches must not interleave with another's. And products in threads of other processes
while a process tunes the same cache and saves the profile they read (issue 57)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES
from autogemm.profiles import store

THREADS, CALLS = 8, 12
#: (dtype, m, n, k, trans_a, trans_b): shapes repeat across threads, so that threads share plans.
PROBLEMS = [("s", 64, 48, 33, "N", "N"), ("d", 37, 70, 19, "T", "N"), ("c", 20, 21, 22, "N", "C"),
            ("s", 129, 65, 7, "T", "T"), ("z", 9, 30, 41, "C", "N"), ("d", 64, 48, 33, "N", "T")]


def test_many_threads_calling_gemm_at_once_each_get_the_right_answer(ctx):
    problems = [p for p in PROBLEMS if ctx.device.fp64 or not DTYPES[p[0]].needs_fp64]
    start = threading.Barrier(THREADS)
    failures: list[str] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        start.wait()
        for call in range(CALLS):
            letter, m, n, k, ta, tb = problems[call % len(problems)]     # all threads on one plan at once
            dt = DTYPES[letter]
            a = random_matrix(rng, dt, (k, m) if ta != "N" else (m, k))
            b = random_matrix(rng, dt, (n, k) if tb != "N" else (k, n))
            c = random_matrix(rng, dt, (m, n))
            before = (a.copy(), b.copy(), c.copy())
            alpha, beta = 1.5, (0.0 if call % 2 else -0.5)
            try:
                autogemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, device=ctx.device,
                              edge="pad" if call % 2 else "guard")
            except Exception as exc:    # noqa: BLE001 - reported with the others below
                failures.append(f"thread {seed} call {call}: {exc!r}")
                continue
            ref = dt.reference_numpy
            want = alpha * apply_op(before[0].astype(ref), ta) @ apply_op(before[1].astype(ref), tb) \
                + beta * before[2].astype(ref)
            error = relative_error(c, want)
            if not error < tolerance(dt, k) or not (np.array_equal(a, before[0]) and np.array_equal(b, before[1])):
                failures.append(f"thread {seed} call {call} ({letter} {m}x{n}x{k} {ta}{tb}): error {error:.1e}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, "\n".join(failures)


#: A short tuning run of one size class, saving the device's profile while the products run.
TUNE = ["-m", "autogemm.cli", "tune", "--quick", "--dtype", "s", "--size-class", "small", "--budget", "20s,12",
        "--strategy", "random", "--top", "1"]
#: A process of products beside the tuner: threads of checked calls until told to stop.
PRODUCTS = """
import os, sys, threading, numpy as np, autogemm
stop, failures = sys.argv[1], []
def loop(seed):
    rng = np.random.default_rng(seed)
    for _ in range(400):
        m, n, k = (int(x) for x in rng.integers(1, 90, 3))
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        got = autogemm.gemm(a, b)
        want = a.astype(np.float64) @ b
        if np.abs(got - want).max() > 1e-4 * max(np.abs(want).max(), 1) * k:
            failures.append((m, n, k))
        if os.path.exists(stop):
            break
threads = [threading.Thread(target=loop, args=(seed,)) for seed in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
print("wrong", len(failures))
sys.exit(1 if failures else 0)
"""


def test_products_in_threads_and_processes_stay_right_while_another_process_tunes_the_same_cache(cache):
    """Issue 57: a process tunes the device and saves its profile into a cache that two other processes of
    two threads each are calling ``gemm`` from (each call checked against float64): every product is
    right while the profile appears and changes under them, and the profile left is whole."""
    env = {**os.environ, "AUTOGEMM_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    stop = cache / "stop"
    tuner = subprocess.Popen([sys.executable, *TUNE], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    callers = [subprocess.Popen([sys.executable, "-c", PRODUCTS, str(stop)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        _, error = tuner.communicate(timeout=300)
        assert tuner.returncode == 0, error[-3000:]
    finally:
        stop.touch()
        outcomes = [caller.communicate(timeout=300) for caller in callers]
    for caller, (out, error) in zip(callers, outcomes):
        assert caller.returncode == 0, out + error[-3000:]
    (path,) = (cache / "profiles").glob("*.json")
    assert "s" in store.read(path).dtypes
