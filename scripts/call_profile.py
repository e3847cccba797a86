"""Where the host time of ``gemm`` on device arrays goes (for the call-overhead target of issue 6): one
call on an idle queue beside the bare plan's enqueue, a cProfile of such calls, and a loop over views of
device stacks (as ``bench-batch``'s loop) taken apart: the bare plan, view creation, recording events."""

import cProfile
import pstats
import sys
import time

import numpy as np
import pyopencl.array as cl_array

import autogemm
from autogemm.bench.api_costs import idle_host_seconds
from autogemm.blas import GemmProblem
from autogemm.dtypes import get_dtype

n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
ctx = autogemm.context_for("gpu" if any(d.is_gpu for d in autogemm.list_devices()) else None)
a, b, c = (cl_array.to_device(ctx.queue, np.random.rand(n, n).astype(np.float32)) for _ in range(3))
plan = autogemm.LaunchPlan(ctx, GemmProblem.dense(get_dtype("s"), n, n, n))


for name, call in (("bare enqueue", lambda: plan.enqueue(a.data, b.data, c.data)),
                   ("gemm", lambda: autogemm.gemm(a, b, c)),
                   ("view a[0:n]", lambda: a[0:n]),
                   ("c.add_event", lambda: c.add_event(c.events[-1]) if c.events else None)):
    print(f"{name:14s} {idle_host_seconds(ctx.queue, call, 300) * 1e6:8.1f} us")
profiler = cProfile.Profile()
for _ in range(300):
    ctx.queue.finish()
    profiler.enable()
    autogemm.gemm(a, b, c)
    profiler.disable()
pstats.Stats(profiler).sort_stats("tottime").print_stats(18)

count, size = 1024, 64
stacks = [cl_array.to_device(ctx.queue, np.random.rand(count, size, size).astype(np.float32)) for _ in range(3)]
small = autogemm.LaunchPlan(ctx, GemmProblem.dense(get_dtype("s"), size, size, size))
print(small.describe())
step = size * size


def views_bare(with_views: bool, record: bool, keep: list | None = None) -> None:
    for i in range(count):
        if with_views:
            views = [x[i] for x in stacks]
        events = small.enqueue(*(x.data for x in stacks), offsets=(i * step,) * 3)
        if record:
            views[2].add_event(events[-1])
        if keep is not None:
            keep.append(events)


loops = {"bare plan on offsets": lambda: views_bare(False, False),
         "bare, events kept": lambda: views_bare(False, False, []),
         "bare, one offset": lambda: [small.enqueue(*(x.data for x in stacks)) for _ in range(count)],
         "+ views": lambda: views_bare(True, False),
         "+ views, add_event": lambda: views_bare(True, True),
         "gemm on views": lambda: [autogemm.gemm(stacks[0][i], stacks[1][i], stacks[2][i]) for i in range(count)]}
plans = [small] + [autogemm.LaunchPlan(ctx, GemmProblem.dense(get_dtype("s"), size, size, size)) for _ in range(7)]
for ring in (2, 4, 8):
    loops[f"bare, {ring} plans in turn"] = (lambda ring: lambda: [
        plans[i % ring].enqueue(*(x.data for x in stacks), offsets=(i * step,) * 3) for i in range(count)])(ring)
for name, loop in loops.items():
    loop()
    ctx.queue.finish()
    start = time.perf_counter()
    loop()
    ctx.queue.finish()
    print(f"loop of {count} {size}^3, {name:22s} {(time.perf_counter() - start) / count * 1e6:8.1f} us per product")
