"""An out-of-core product (issue 7): a GEMM of numpy operands larger in all than the GPU's memory, through
``autogemm.gemm`` (which streams numpy operands of 256 MiB or more), checked against float64 on sampled
rows (including each side of every tile boundary they cross) and for no element left unwritten (C is
poisoned with NaN first; beta = 0 must not read it).

    python scripts/out_of_core.py MxNxK [dtype letter s|d] [device]"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import autogemm
from autogemm.blas.hybrid import HostGemm
from autogemm.blas.stream import DeviceStream
from autogemm.dtypes import get_dtype

GIB = 2**30
m, n, k = map(int, sys.argv[1].split("x"))
dt = get_dtype(sys.argv[2] if len(sys.argv) > 2 else "d")
device = autogemm.find_device(sys.argv[3] if len(sys.argv) > 3 else "gpu")
ctx = autogemm.context_for(device)
pool = ThreadPoolExecutor(16)


def filled(shape: tuple[int, int], seed: int | None) -> np.ndarray:
    """A new array of random values in [-0.5, 0.5) (``seed``), or of NaN (None), filled by 16 threads."""
    out = np.empty(shape, dt.numpy)
    bounds = np.linspace(0, shape[0], 17).astype(int)

    def fill(i: int) -> None:
        part = out[bounds[i]:bounds[i + 1]]
        if seed is None:
            part.fill(np.nan)
        else:
            np.random.default_rng([seed, i]).random(dtype=dt.numpy, out=part)
            part -= 0.5
    list(pool.map(fill, range(16)))
    return out


start = time.perf_counter()
a, b, c = filled((m, k), 1), filled((k, n), 2), filled((m, n), None)
operands = a.nbytes + b.nbytes + c.nbytes
print(f"{m}x{n}x{k} {dt.key}: A {a.nbytes / GIB:.1f} GiB, B {b.nbytes / GIB:.1f} GiB, C {c.nbytes / GIB:.1f} GiB; "
      f"operands {operands / GIB:.1f} GiB against {device.global_mem_bytes / GIB:.1f} GiB on {device.name.strip()} "
      f"(made in {time.perf_counter() - start:.1f} s)", flush=True)
layout = DeviceStream(ctx, HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0), (0, m), None, "auto").layout
print(f"planned: {layout}", flush=True)
start = time.perf_counter()
autogemm.gemm(a, b, c, device=device)
wall = time.perf_counter() - start
print(f"gemm: {wall:.2f} s, {2 * m * n * k / wall / 1e12:.2f} TFLOP/s end to end (numpy in, numpy out)", flush=True)
tile = layout.tile
rows = sorted({0, 1, m - 1, m // 2, *(r for t in range(tile, m, tile) for r in (t - 1, t))}
              | set(np.random.default_rng(3).integers(0, m, 8).tolist()))
expected = np.stack([a[r].astype(np.float64) @ b for r in rows])
error = np.abs(c[rows] - expected).max() / np.abs(expected).max()
unwritten = sum(pool.map(lambda r: int(np.isnan(c[r:r + 1024]).sum()), range(0, m, 1024)))
print(f"check: {len(rows)} rows, max error {error:.2e} relative to the largest element; {unwritten} elements "
      f"of C left NaN -> {'right' if error < 1e-10 * k and unwritten == 0 else 'WRONG'}")
