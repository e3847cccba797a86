"""What a caller sees when the device's memory is full (issue 8): device arrays are made first, then
the rest of the memory is taken (1 GiB, then 64 MiB, then 1 MiB buffers, each written so that the
driver really allocates it); then a product that needs padded copies, a GEMV and a product of numpy
operands are called. Each must raise an AutogemmError or compute right, never crash; once the memory
is given back, the same calls must compute right.

    python scripts/memory_full.py [device]"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import autogemm

device = autogemm.find_device(sys.argv[1] if len(sys.argv) > 1 else "gpu")
ctx = autogemm.context_for(device)
queue = ctx.queue
rng = np.random.default_rng(5)
n = 4095                                         # no tile divides it: the padded edge mode packs copies
a = rng.random((n, n), np.float32) - 0.5
x = rng.random(n, np.float32) - 0.5
da, dx = cl_array.to_device(queue, a), cl_array.to_device(queue, x)
want = a.astype(np.float64) @ a
want_y = a.astype(np.float64) @ x


dc = cl_array.to_device(queue, np.full((n, n), np.nan, np.float32))    # allocated now, before the memory is full
dy = cl_array.to_device(queue, np.full(n, np.nan, np.float32))


def calls() -> None:
    """The three calls, each reported as right, wrong or the error it raised."""
    for out in (dc, dy):                           # poisoned again, without allocating anything
        cl.enqueue_fill_buffer(queue, out.data, np.float32(np.nan), 0, out.nbytes).wait()
    for name, call, check in (
            ("gemm of device arrays, padded", lambda: autogemm.gemm(da, da, dc, edge="pad"),
             lambda: np.abs(dc.get() - want).max() / np.abs(want).max()),
            ("gemv of device arrays", lambda: autogemm.gemv(da, dx, dy),
             lambda: np.abs(dy.get() - want_y).max() / np.abs(want_y).max()),
            ("gemm of numpy operands", lambda: out.append(autogemm.gemm(a, a)),
             lambda: np.abs(out[-1] - want).max() / np.abs(want).max())):
        out: list = []
        try:
            call()
            queue.finish()
            print(f"  {name}: ran, relative error {check():.1e}", flush=True)
        except autogemm.AutogemmError as exc:
            print(f"  {name}: {type(exc).__name__}: {exc}", flush=True)
        except Exception as exc:   # noqa: BLE001 - what this script is here to find
            print(f"  {name}: NOT AN AUTOGEMM ERROR: {type(exc).__name__}: {exc}", flush=True)


hog: list[cl.Buffer] = []
for size in (1 << 30, 1 << 26, 1 << 20):
    while True:
        try:
            buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, size)
            cl.enqueue_fill_buffer(queue, buf, np.uint8(1), 0, size).wait()
            hog.append(buf)
        except cl.Error:
            break
print(f"{device.name.strip()}: took {sum(b.size for b in hog) / 2**30:.2f} GiB of "
      f"{device.global_mem_bytes / 2**30:.1f} GiB in {len(hog)} buffers; with the memory full:", flush=True)
calls()
hog.clear()
print("memory given back:", flush=True)
calls()
