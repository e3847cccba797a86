"""Why dependent launches leave the GPU idle: time back-to-back launches of a tiny kernel several ways.

    python tools/launch_gaps.py [DEVICE]        (default: the default device)

For each way, 20 launches are enqueued without waiting, then the queue is finished; printed: the host
time per enqueue call, and from the profiling events the median gap between one launch's end and the next
one's start, and the median of start - submit. Ways: arguments set once; arguments set before every
launch (as a plan does); a new kernel object per launch; and, for comparison, the wall time of the same
launches on a queue without profiling. Then a LaunchPlan of 1000^3 (packs, GEMM, merge) enqueued five times
back to back, with the gaps of its last iteration."""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import pyopencl as cl

import autogemm
from autogemm.blas import GemmProblem
from autogemm.blas.plans import gemm_plan
from autogemm.dtypes import DTYPES
from autogemm.runtime import context_for

SOURCE = "__kernel void bump(__global float* x, const int n) { int i = get_global_id(0); if (i < n) x[i] += 1.0f; }"
N, LAUNCHES = 1 << 20, 20


def report(name: str, events: list[cl.Event], host_seconds: float) -> None:
    gaps = [(b.profile.start - a.profile.end) / 1e3 for a, b in zip(events, events[1:])]
    waits = [(e.profile.start - e.profile.submit) / 1e3 for e in events]
    runs = [(e.profile.end - e.profile.start) / 1e3 for e in events]
    print(f"{name:34s} host {host_seconds / len(events) * 1e6:7.1f} us/enqueue   "
          f"kernel {statistics.median(runs):6.1f} us   gap {statistics.median(gaps):7.1f} us (max {max(gaps):7.1f})   "
          f"start-submit {statistics.median(waits):7.1f} us", flush=True)


def main() -> None:
    ctx = context_for(autogemm.find_device(sys.argv[1] if len(sys.argv) > 1 else None))
    print(f"device: {ctx.device.label}")
    program = cl.Program(ctx.context, SOURCE).build()
    buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, N * 4)
    kernel = cl.Kernel(program, "bump")
    kernel.set_args(buf, np.int32(N))

    def timed(name: str, launch) -> None:
        launch().wait()                                   # warm-up
        started = time.perf_counter()
        events = [launch() for _ in range(LAUNCHES)]
        host = time.perf_counter() - started
        ctx.queue.finish()
        report(name, events, host)

    timed("arguments set once", lambda: cl.enqueue_nd_range_kernel(ctx.queue, kernel, (N,), (256,)))

    def with_args() -> cl.Event:
        kernel.set_args(buf, np.int32(N))
        return cl.enqueue_nd_range_kernel(ctx.queue, kernel, (N,), (256,))

    timed("arguments set per launch", with_args)

    def new_kernel() -> cl.Event:
        k = cl.Kernel(program, "bump")
        k.set_args(buf, np.int32(N))
        return cl.enqueue_nd_range_kernel(ctx.queue, k, (N,), (256,))

    timed("new kernel object per launch", new_kernel)

    plain = cl.CommandQueue(ctx.context)
    for queue, label in ((ctx.queue, "profiling"), (plain, "no profiling")):
        queue.finish()
        started = time.perf_counter()
        for _ in range(LAUNCHES):
            cl.enqueue_nd_range_kernel(queue, kernel, (N,), (256,))
        queue.finish()
        print(f"wall, queue with {label:13s}: {(time.perf_counter() - started) / LAUNCHES * 1e6:7.1f} us per launch")

    dt = DTYPES["s"]
    problem = GemmProblem.dense(dt, 1000, 1000, 1000)
    plan = gemm_plan(ctx, problem)
    mats = [cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, 1000 * 1000 * 4) for _ in range(3)]
    plan.enqueue(*mats)[-1].wait()
    started = time.perf_counter()
    runs = [plan.enqueue(*mats) for _ in range(5)]
    host = time.perf_counter() - started
    ctx.queue.finish()
    print(f"plan {plan.describe()}")
    print(f"  host {host / 5 * 1e6:.0f} us per enqueue of {len(runs[0])} launches")
    last = runs[-1]
    origin = last[0].profile.start
    for name, event in zip(plan.launches(), last):
        print(f"  {(event.profile.start - origin) / 1e3:8.1f} .. {(event.profile.end - origin) / 1e3:8.1f} us"
              f"  (submit {(event.profile.submit - origin) / 1e3:8.1f})  {name}")
    whole = [(r[-1].profile.end - r[0].profile.start) / 1e3 for r in runs]
    print(f"  iterations first start to last end: {', '.join(f'{w:.0f}' for w in whole)} us")


if __name__ == "__main__":
    main()
