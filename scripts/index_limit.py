"""Products of device arrays past the kernels' 32-bit indices (issue 8), on a GPU with the memory for them:
one array X of more than 2^31 reals serves as A stored as it is (blocks of C's and A's rows), A stored
transposed (parts of K added into C) and B stored transposed (blocks of C's columns); a complex A of
between 2^30 and 2^31 elements (2^31 reals) is cut too. Rows of X past element 2^31 (a 64-bit offset),
and X as a batch of matrices that each fit, run in one launch. Each C is poisoned with NaN first (beta
= 0 must not read it, and no element may stay unwritten) and checked against float64 on sampled rows or
columns, including each side of every block boundary.

    python scripts/index_limit.py [rows of X] [cols of X] [device]

``--unblocked`` runs the complex case as if complex elements reached 2^31 too (the limit before it
counted reals), to show what the cut prevents: run it last, since a fault may poison the context."""

from __future__ import annotations

import sys
import time

import numpy as np
import pyopencl.array as cl_array

import autogemm
from autogemm.blas import blocks, problem
from autogemm.dtypes import get_dtype

GIB = 2**30
args = [a for a in sys.argv[1:] if not a.startswith("--")]
rows, cols = (int(args[0]), int(args[1])) if len(args) >= 2 else (65536, 40000)
device = autogemm.find_device(args[2] if len(args) > 2 else "gpu")
ctx = autogemm.context_for(device)
queue = ctx.queue
rng = np.random.default_rng(8)


def random(shape: tuple[int, int], letter: str) -> np.ndarray:
    """Values with real and imaginary parts in [-0.5, 0.5)."""
    dt = get_dtype(letter)
    out = np.empty(shape, dt.numpy)
    for part in (out.real, out.imag) if dt.is_complex else (out,):
        part[...] = rng.random(shape, dtype=dt.real_numpy)
        part -= 0.5
    return out


def boundaries(extent: int, block: int, samples: int) -> list[int]:
    """Random indices below ``extent`` and each side of every multiple of ``block``."""
    edges = {i for b in range(block, extent, block) for i in (b - 1, b)}
    return sorted(edges | {0, extent - 1} | set(rng.integers(0, extent, samples).tolist()))


def blocked(call) -> list:
    """Run ``call``, and the blocks of the last product it cut into blocks (empty when none was)."""
    seen = []
    real_blocks = blocks.blocks
    blocks.blocks = lambda pr, limit=None: seen.append(real_blocks(pr, limit)) or seen[-1]
    try:
        call()
        queue.finish()
    finally:
        blocks.blocks = real_blocks
    return seen[-1] if seen else []


def check(name: str, dx, x: np.ndarray, letter: str, trans_a: str, trans_b: str, narrow: int) -> None:
    """C = X-based product of one layout (``narrow`` the small dimension), its time and its error."""
    dt = get_dtype(letter)
    if trans_b == "T":                           # B = X stored transposed: C is narrow x rows
        other = random((narrow, x.shape[1]), letter)
        m, n, k = narrow, x.shape[0], x.shape[1]
    elif trans_a == "T":                         # A = X stored transposed: C is cols x narrow, K = rows
        other = random((x.shape[0], narrow), letter)
        m, n, k = x.shape[1], narrow, x.shape[0]
    else:                                        # A = X as stored: C is rows x narrow
        other = random((x.shape[1], narrow), letter)
        m, n, k = x.shape[0], narrow, x.shape[1]
    dother = cl_array.to_device(queue, other)
    dc = cl_array.to_device(queue, np.full((m, n), np.nan, dt.numpy))
    a, b = (dother, dx) if trans_b == "T" else (dx, dother)
    start = time.perf_counter()
    cut = blocked(lambda: autogemm.gemm(a, b, dc, trans_a=trans_a, trans_b=trans_b, beta=0.0))
    wall = time.perf_counter() - start
    c = dc.get()
    unwritten = int(np.isnan(c).sum())
    ref = np.float64 if not dt.is_complex else np.complex128
    if trans_b == "T":
        block_cols = cut[0].problem.n if cut else n
        picked = boundaries(n, block_cols, 64)
        want = other.astype(ref) @ x[picked].astype(ref).T
        got = c[:, picked]
    elif trans_a == "T":
        picked = boundaries(m, m, 64)
        want = x[:, picked].astype(ref).T @ other.astype(ref)
        got = c[picked]
    else:
        block_rows = cut[0].problem.m if cut else m
        picked = boundaries(m, block_rows, 64)
        want = x[picked].astype(ref) @ other.astype(ref)
        got = c[picked]
    error = float(np.abs(got - want).max() / np.abs(want).max())
    parts = sorted({(b.problem.m, b.problem.n, b.problem.k) for b in cut})
    print(f"{name:<38} {m}x{n}x{k} {letter}: {len(cut)} blocks {parts}, {wall:.2f} s "
          f"({2 * m * n * k * (4 if dt.is_complex else 1) / wall / 1e12:.2f} TFLOP/s with the first call's "
          f"builds), max relative error {error:.2e} over {len(picked)} sampled lines, unwritten {unwritten}",
          flush=True)


print(f"{device.name.strip()}: {device.global_mem_bytes / GIB:.1f} GiB, one allocation at most "
      f"{device.max_mem_alloc_bytes / GIB:.1f} GiB", flush=True)
if "--unblocked" not in sys.argv:
    x = random((rows, cols), "s")
    print(f"X: {rows}x{cols} float32, {x.size / blocks.INDEX_LIMIT:.2f} x the limit, {x.nbytes / GIB:.1f} GiB", flush=True)
    dx = cl_array.to_device(queue, x)
    check("A = X (rows of C and A)", dx, x, "s", "N", "N", 256)
    check("A = X stored transposed (parts of K)", dx, x, "s", "T", "N", 256)
    check("B = X stored transposed (columns of C)", dx, x, "s", "N", "T", 256)
    far = rows - 256                                     # 256 rows of X starting past element 2^31
    b = random((cols, 256), "s")
    dc = cl_array.to_device(queue, np.full((256, 256), np.nan, np.float32))
    cut = blocked(lambda: autogemm.gemm(dx[far:], cl_array.to_device(queue, b), dc))
    c = dc.get()
    error = float(np.abs(c - x[far:].astype(np.float64) @ b).max() / np.abs(c).max())
    print(f"{'rows of X from element ' + str(far * cols):<38} 256x256x{cols} s: {len(cut)} blocks, max relative error "
          f"{error:.2e}, unwritten {int(np.isnan(c).sum())}", flush=True)
    layers = 4
    stack = dx.reshape(layers, rows // layers, cols)
    b = random((cols, 64), "s")
    out = []
    cut = blocked(lambda: out.append(autogemm.gemm_batched(stack, cl_array.to_device(queue, b))))
    c = out[0].get()
    picked = boundaries(rows // layers, rows // layers, 16)
    want = np.stack([x[i * (rows // layers):][picked].astype(np.float64) @ b for i in range(layers)])
    error = float(np.abs(c[:, picked] - want).max() / np.abs(want).max())
    print(f"{'X as a batch of ' + str(layers):<38} {layers} x {rows // layers}x64x{cols} s: {len(cut)} blocks, max relative "
          f"error {error:.2e} over {len(picked)} rows of each", flush=True)
    del dx, x, stack
else:
    def elements(dt, limit=problem.INT32_MAX):
        return limit
    blocks.addressable = problem.addressable = elements
crows = (blocks.INDEX_LIMIT // 2 + blocks.INDEX_LIMIT // 8) // cols + 1     # 5/8 of the limit in elements
xc = random((crows, cols), "c")
print(f"X: {crows}x{cols} complex64, {xc.size * 2 / blocks.INDEX_LIMIT:.2f} x the limit in reals, {xc.nbytes / GIB:.1f} GiB", flush=True)
check("complex A = X (2^30 < elements < 2^31)", cl_array.to_device(queue, xc), xc, "c", "N", "N", 128)
