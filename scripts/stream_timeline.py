"""Where the time of a streamed GPU-only product from numpy operands goes (issue 7's 0.85x target): one
n^3 product through ``DeviceStream`` with a trace, summarised per kind of step (device busy time from
profiling events, host copy time) beside the wall time and the first kernel's start."""

import sys
import time
from collections import defaultdict

import numpy as np

import autogemm
from autogemm.blas.hybrid import HostGemm
from autogemm.blas.stream import DeviceStream
from autogemm.dtypes import get_dtype

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
letter = sys.argv[2] if len(sys.argv) > 2 else "s"
dt = get_dtype(letter)
ctx = autogemm.context_for("gpu" if any(d.is_gpu for d in autogemm.list_devices()) else None)
rng = np.random.default_rng(0)
a, b = rng.random((n, n)).astype(dt.numpy), rng.random((n, n)).astype(dt.numpy)
c = np.empty((n, n), dt.output.numpy)
gemm = HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0)
for run in range(3):
    stream = DeviceStream(ctx, gemm, (0, n), None, "auto")
    trace: list = []
    start = time.perf_counter()
    stream.run(trace)
    wall = time.perf_counter() - start
    device = [(what, item[0]) for what, *item in trace if len(item) == 1]
    host = [(what, item[1] - item[0]) for what, *item in trace if len(item) == 2]
    busy: dict[str, float] = defaultdict(float)
    seen = set()
    for what, event in device:
        if id(event) not in seen:
            seen.add(id(event))
            busy[what] += (event.profile.end - event.profile.start) * 1e-9
    for what, seconds in host:
        busy[what] += seconds
    kernels = [e for w, e in device if w == "kernel"]
    first = min(e.profile.start for e in kernels)
    last = max(e.profile.end for e in kernels)
    print(f"run {run}: {n}^3 {letter}, {stream.layout}: wall "
          f"{wall * 1e3:.1f} ms, kernels from first start to last end {(last - first) * 1e-6:.1f} ms; "
          + ", ".join(f"{w} {s * 1e3:.1f} ms" for w, s in sorted(busy.items())))
print(f"check: max error on row 0 {np.abs(c[0] - a[0].astype(np.float64) @ b).max():.2e}")
