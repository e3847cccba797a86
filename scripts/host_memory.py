"""The host side of streamed products on the device machine (issue 7's end-to-end target varied with the
machine's start): transparent huge pages, NUMA, and the rates of the host copies a streamed product makes,
by 1-16 threads: numpy -> page-locked staging, staging -> a numpy array already written, and staging -> a
new numpy array (whose pages the kernel faults in and zeroes on first touch, as for a fresh C)."""

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

import autogemm

GIB = 2**30
for path in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag"):
    try:
        print(path, open(path).read().strip())
    except OSError as exc:
        print(path, exc)
print(subprocess.run(["bash", "-c", "lscpu | grep -E 'Model name|NUMA|^CPU\\(s\\)|L3'; free -g | head -2; "
                      "uname -r"], capture_output=True, text=True).stdout)
ctx = autogemm.context_for("gpu" if any(d.is_gpu for d in autogemm.list_devices()) else None)
size = GIB
pinned = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, size)
staged = cl.enqueue_map_buffer(ctx.queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0, (size // 4,),
                               np.float32)[0]
source = np.random.default_rng(0).random(size // 4, dtype=np.float32)
touched = np.ones_like(source)


def threaded_copy(threads: int, dst: np.ndarray, src: np.ndarray) -> float:
    bounds = np.linspace(0, len(src), threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        list(pool.map(lambda ab: np.copyto(dst[ab[0]:ab[1]], src[ab[0]:ab[1]]), zip(bounds, bounds[1:])))
        return time.perf_counter() - start


def rate(seconds: list[float]) -> str:
    return f"{size / np.median(seconds) / 1e9:5.1f}"


print(f"{'threads':>7} | numpy->pinned GB/s | pinned->written numpy | pinned->new numpy (first touch)")
for threads in (1, 2, 4, 8, 16):
    into_pinned = [threaded_copy(threads, staged, source) for _ in range(5)]
    into_written = [threaded_copy(threads, touched, staged) for _ in range(5)]
    into_new = [threaded_copy(threads, np.empty_like(source), staged) for _ in range(3)]
    print(f"{threads:>7} | {rate(into_pinned):>18} | {rate(into_written):>20} | {rate(into_new):>10}")
print(f"os.cpu_count() {os.cpu_count()}, sched_getaffinity {len(os.sched_getaffinity(0))}")
