"""Host-device transfer rates and overlap on the device machine, for the streaming design of issue 7:
pageable and pinned (ALLOC_HOST_PTR, mapped) copies both ways, host copies into pinned memory by 1-16
threads, buffer allocation, and whether a copy on a second queue overlaps a kernel on the first."""

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

import autogemm
from autogemm.bench.peers import wall_median
from autogemm.blas import GemmProblem, LaunchPlan
from autogemm.dtypes import get_dtype

MB = 2**20
ctx = autogemm.context_for("gpu" if any(d.is_gpu for d in autogemm.list_devices()) else None)
context, queue = ctx.context, ctx.queue
copy_queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
size = 256 * MB
host = np.random.rand(size // 8)
back = np.empty_like(host)
mf = cl.mem_flags


def rate(seconds: float, nbytes: int = size) -> str:
    return f"{nbytes / seconds / 1e9:6.1f} GB/s ({seconds * 1e3:7.2f} ms)"


def wall(call) -> float:
    """Median wall seconds of 5 calls after a warm-up."""
    return wall_median(call, 5)[0]


start = time.perf_counter()
device = cl.Buffer(context, mf.READ_WRITE, size)
cl.enqueue_fill_buffer(queue, device, np.zeros(1, np.uint8), 0, size).wait()
print(f"allocate + first fill of 256 MiB: {(time.perf_counter() - start) * 1e3:.2f} ms")
print("pageable -> device  ", rate(wall(lambda: cl.enqueue_copy(queue, device, host).wait())))
print("device -> pageable  ", rate(wall(lambda: cl.enqueue_copy(queue, back, device).wait())))
pinned = cl.Buffer(context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, size)
staged, _ = cl.enqueue_map_buffer(queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0, host.shape, host.dtype)
print("pinned -> device    ", rate(wall(lambda: cl.enqueue_copy(queue, device, pinned).wait())))
print("device -> pinned    ", rate(wall(lambda: cl.enqueue_copy(queue, pinned, device).wait())))
print("mapped host array -> device", rate(wall(lambda: cl.enqueue_copy(queue, device, staged).wait())))
print("device -> mapped host array", rate(wall(lambda: cl.enqueue_copy(queue, staged, device).wait())))
for threads in (1, 2, 4, 8, 16):
    chunks = np.array_split(np.arange(host.size), threads)
    with ThreadPoolExecutor(threads) as pool:
        def copy() -> None:
            list(pool.map(lambda c: np.copyto(staged[c[0]:c[-1] + 1], host[c[0]:c[-1] + 1]), chunks))
        print(f"numpy -> pinned, {threads:2d} threads", rate(wall(copy)))

# overlap: a long SGEMM on the main queue with a 256 MiB copy on a second queue
n = 8192 if ctx.device.is_gpu else 256
dt = get_dtype("s")
plan = LaunchPlan(ctx, GemmProblem.dense(dt, n, n, n))
a, b, c = (cl.Buffer(context, mf.READ_WRITE, n * n * 4) for _ in range(3))
plan.enqueue(a, b, c)[-1].wait()
gemm_alone = wall(lambda: plan.enqueue(a, b, c)[-1].wait())
copy_alone = wall(lambda: cl.enqueue_copy(copy_queue, device, pinned).wait())


def both() -> None:
    events = plan.enqueue(a, b, c)
    queue.flush()
    copy = cl.enqueue_copy(copy_queue, device, pinned)
    copy_queue.flush()
    events[-1].wait()
    copy.wait()


print(f"overlap: gemm {gemm_alone * 1e3:.2f} ms, pinned copy {copy_alone * 1e3:.2f} ms, both {wall(both) * 1e3:.2f} ms")


def both_pageable() -> None:
    events = plan.enqueue(a, b, c)
    queue.flush()
    copy = cl.enqueue_copy(copy_queue, device, host, is_blocking=False)
    copy_queue.flush()
    events[-1].wait()
    copy.wait()


print(f"overlap, pageable copy: both {wall(both_pageable) * 1e3:.2f} ms")
