"""Where the host time of ``gemm`` on device arrays goes: cProfile of calls made on an idle queue, beside
the bare plan's enqueue (for the call-overhead target of issue 6)."""

import cProfile
import pstats
import sys

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
