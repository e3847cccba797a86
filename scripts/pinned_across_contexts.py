"""Whether page-locked memory of one device's OpenCL context copies at the pinned rate to another
device's context (two GPUs, one context each), for sharing one staged copy of B between devices."""

import time

import numpy as np
import pyopencl as cl

import autogemm

gpus = [d for d in autogemm.list_devices() if d.is_gpu]
contexts = [autogemm.context_for(d) for d in gpus[:2]]
size = 512 * 2**20
mf = cl.mem_flags
owner = contexts[0]
pinned = cl.Buffer(owner.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, size)
staged, _ = cl.enqueue_map_buffer(owner.queue, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0, (size,), np.uint8)
staged[:] = 1
pageable = np.ones(size, np.uint8)
for i, ctx in enumerate(contexts):
    target = cl.Buffer(ctx.context, mf.READ_WRITE, size)
    for name, host in (("pinned of context 0", staged), ("pageable", pageable)):
        cl.enqueue_copy(ctx.queue, target, host).wait()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            cl.enqueue_copy(ctx.queue, target, host).wait()
            times.append(time.perf_counter() - start)
        print(f"to device {i} from {name:20s}: {size / np.median(times) / 1e9:6.1f} GB/s", flush=True)
