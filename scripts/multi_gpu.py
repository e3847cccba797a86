"""Issue 7 on a machine with several GPUs: an n^3 SGEMM from numpy operands to a numpy result on one GPU
and shared by rows over all of them (each streaming its share), checked on sampled rows; then a product
made to run out of core (the planning budget shrunk below what its operands need) on the first GPU."""

import sys
import time

import numpy as np

import autogemm
from autogemm.bench.peers import wall_median
from autogemm.blas import stream
from autogemm.blas.hybrid import HostGemm
from autogemm.accuracy import Reference
from autogemm.dtypes import get_dtype

n = int(sys.argv[1]) if len(sys.argv) > 1 else 32768
dt = get_dtype("s")
gpus = [d for d in autogemm.list_devices() if d.is_gpu] or [autogemm.default_device()]
print(f"{len(gpus)} devices: {', '.join(d.label for d in gpus)}", flush=True)
rng = np.random.default_rng(0)
a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
reference = Reference(dt, a, b, rng, rows=[n // len(gpus) * i + d for i in range(1, len(gpus)) for d in (-1, 0)])


def timed(devices: list, runs: int = 3) -> float:
    seconds, c = wall_median(lambda: autogemm.gemm(a, b, devices=devices), runs)   # after a warm-up call
    error, ok = reference.check(c)
    print(f"{len(devices)} device(s): {seconds * 1e3:8.1f} ms = {2 * n**3 / seconds / 1e12:6.2f} TFLOP/s end to end; "
          f"error {error:.1e}, {'right' if ok else 'WRONG'}", flush=True)
    return seconds


one = timed(gpus[:1])
if len(gpus) > 1:
    every = timed(gpus)
    print(f"{len(gpus)} GPUs over one: {one / every:.2f}x", flush=True)

m = min(16384, n // 2)
small_a, small_b = np.ascontiguousarray(a[:m, :m]), np.ascontiguousarray(b[:m, :m])
stream.MEMORY_SHARE = small_a.nbytes / 2 / gpus[0].global_mem_bytes    # less than B alone: out of core
c = np.empty((m, m), np.float32)
share = stream.DeviceStream(autogemm.context_for(gpus[0]), HostGemm(dt, small_a, small_b, c, "N", "N", 1.0, 0.0),
                            (0, m), None, "auto")
start = time.perf_counter()
share.run()
seconds = time.perf_counter() - start
error, ok = Reference(dt, small_a, small_b, rng).check(c)
print(f"out of core ({m}^3 planned within {small_a.nbytes / 2 / 2**30:.2f} GiB: {share.layout}): "
      f"{seconds * 1e3:.1f} ms, error {error:.1e}, {'right' if ok else 'WRONG'}", flush=True)
