"""The host side of streamed products: transparent huge pages, NUMA, and the rates of the host copies a
streamed product makes, by 1 to 16 threads: numpy -> page-locked staging, staging -> a numpy array already
written, and staging -> a new numpy array (whose pages the kernel faults in and zeroes on first touch, as
for a new C). End-to-end rates of streamed products follow these (they varied with the machine's start).

    python tools/host_memory.py [--mib 1024] [--device D]"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

import autogemm

THREADS = (1, 2, 4, 8, 16)


def threaded_copy(threads: int, dst: np.ndarray, src: np.ndarray) -> float:
    """Seconds to copy ``src`` into ``dst`` by ``threads`` threads over equal ranges."""
    bounds = np.linspace(0, len(src), threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        list(pool.map(lambda ab: np.copyto(dst[ab[0]:ab[1]], src[ab[0]:ab[1]]), zip(bounds, bounds[1:])))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="bytes copied each time, in MiB")
    parser.add_argument("--device", default=None, help="as autogemm's -d (default: the default device)")
    args = parser.parse_args()
    for path in ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag"):
        try:
            with open(path) as f:
                print(path, f.read().strip())
        except OSError as exc:
            print(path, exc)
    print(subprocess.run(["bash", "-c", "lscpu | grep -E 'Model name|NUMA|^CPU\\(s\\)|L3'; free -g | head -2; "
                          "uname -r"], capture_output=True, text=True).stdout)
    ctx = autogemm.context_for(autogemm.find_device(args.device))
    size = args.mib * 2**20
    pinned = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, size)
    staged = cl.enqueue_map_buffer(ctx.queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0, (size // 4,),
                                   np.float32)[0]
    source = np.random.default_rng(0).random(size // 4, dtype=np.float32)
    touched = np.ones_like(source)

    def rate(seconds: list[float]) -> str:
        return f"{size / np.median(seconds) / 1e9:5.1f}"

    print(f"page-locked memory of {ctx.device.name.strip()}, {args.mib} MiB a copy, GB/s (median)")
    print(f"{'threads':>7} | numpy->pinned | pinned->written numpy | pinned->new numpy (first touch)")
    for threads in THREADS:
        into_pinned = [threaded_copy(threads, staged, source) for _ in range(5)]
        into_written = [threaded_copy(threads, touched, staged) for _ in range(5)]
        into_new = [threaded_copy(threads, np.empty_like(source), staged) for _ in range(3)]
        print(f"{threads:>7} | {rate(into_pinned):>13} | {rate(into_written):>20} | {rate(into_new):>10}")
    print(f"os.cpu_count() {os.cpu_count()}, sched_getaffinity {len(os.sched_getaffinity(0))}")
    staged.base.release(ctx.queue)
    pinned.release()


if __name__ == "__main__":
    main()
