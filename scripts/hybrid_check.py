"""gemm(devices=[gpu, "host"]) with the profile's hybrid entry against gemm on the GPU alone (streamed), 16384 SGEMM,
numpy in and numpy out: median wall time of 3 calls after a warm-up, each result checked on sampled rows."""
import time

import numpy as np

import autogemm
from autogemm.accuracy import Reference
from autogemm.dtypes import get_dtype

n, dt = 16384, get_dtype("s")
rng = np.random.default_rng(0)
a, b = rng.uniform(-1, 1, (n, n)).astype(np.float32), rng.uniform(-1, 1, (n, n)).astype(np.float32)
ref = Reference(dt, a, b, rng)
for name, kwargs in (("gpu alone (streamed)", dict(device="gpu")), ("gpu + host (profile entry)", dict(devices=["gpu", "host"]))):
    times = []
    for _ in range(4):
        start = time.perf_counter()
        c = autogemm.gemm(a, b, **kwargs)
        times.append(time.perf_counter() - start)
    error, ok = ref.check(c)
    print(f"{name:28s} median of 3 after a warm-up {np.median(times[1:]) * 1e3:7.1f} ms = "
          f"{2 * n**3 / np.median(times[1:]) / 1e12:5.1f} TFLOP/s; error {error:.1e} ok {ok}")
