"""A product of numpy operands streamed through a device, checked: ``autogemm.gemm`` on A (m x k) and B
(k x n) of random values into a C poisoned with NaN (beta = 0 must not read it), then C checked against
float64 on sampled rows (each side of every tile boundary the stream crosses among them) and for no
element left unwritten. Made to show products larger in all than the device's memory run right (out of
core), it runs any size: the stream's plan (tile side, which operands stay resident) is printed first.

    python tools/out_of_core.py MxNxK [--dtype s|d|c|z] [--device D]

Exits 1 when the result is wrong."""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import autogemm
from autogemm.accuracy import tolerance
from autogemm.dtypes import get_dtype
from autogemm.shares import HostGemm
from autogemm.shares.streaming import DeviceStream

GIB = 2**30
THREADS = 16


def filled(pool: ThreadPoolExecutor, dtype: np.dtype, shape: tuple[int, int], seed: int | None) -> np.ndarray:
    """A new array of random values in [-0.5, 0.5) from ``seed`` (both parts where complex), or of NaN
    (None), filled by the pool's threads (products out of core have operands of tens of GiB)."""
    out = np.empty(shape, dtype)
    bounds = np.linspace(0, shape[0], THREADS + 1).astype(int)

    def fill(i: int) -> None:
        part = out[bounds[i]:bounds[i + 1]]
        if seed is None:
            part.fill(np.nan)
            return
        rng = np.random.default_rng([seed, i])
        for values in (part.real, part.imag) if np.iscomplexobj(part) else (part,):
            values[...] = rng.random(values.shape, dtype=values.dtype) - 0.5
    list(pool.map(fill, range(THREADS)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", help="MxNxK")
    parser.add_argument("--dtype", default="d")
    parser.add_argument("--device", default=None, help="as autogemm's -d (default: the default device)")
    args = parser.parse_args()
    m, n, k = map(int, args.shape.split("x"))
    dt = get_dtype(args.dtype)
    device = autogemm.find_device(args.device)
    pool = ThreadPoolExecutor(THREADS)
    start = time.perf_counter()
    a, b = filled(pool, dt.numpy, (m, k), 1), filled(pool, dt.numpy, (k, n), 2)
    c = filled(pool, dt.numpy, (m, n), None)
    print(f"{m}x{n}x{k} {dt.key}: A {a.nbytes / GIB:.1f} GiB, B {b.nbytes / GIB:.1f} GiB, C {c.nbytes / GIB:.1f} GiB "
          f"against {device.global_mem_bytes / GIB:.1f} GiB on {device.name.strip()} "
          f"(made in {time.perf_counter() - start:.1f} s)", flush=True)
    layout = DeviceStream(autogemm.context_for(device), HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0), (0, m), None,
                          "auto").layout
    print(f"planned: tiles of {layout.tile}, A {'resident' if layout.a_resident else 'streamed'}, "
          f"B {'resident' if layout.b_resident else 'streamed'}", flush=True)
    start = time.perf_counter()
    autogemm.gemm(a, b, c, device=device)
    wall = time.perf_counter() - start
    flops = (8 if dt.is_complex else 2) * m * n * k
    print(f"gemm: {wall:.2f} s, {flops / wall / 1e12:.3f} TFLOP/s end to end (numpy in, numpy out)", flush=True)
    rows = sorted({0, m - 1, m // 2, *(r for t in range(layout.tile, m, layout.tile) for r in (t - 1, t))}
                  | set(np.random.default_rng(3).integers(0, m, 8).tolist()))
    wide = dt.reference_numpy
    expected = a[rows].astype(wide) @ b.astype(wide)
    error = float(np.linalg.norm(c[rows] - expected) / np.linalg.norm(expected))
    unwritten = sum(pool.map(lambda r: int(np.isnan(c[r:r + 1024]).sum()), range(0, m, 1024)))
    right = error < tolerance(dt, k) and unwritten == 0
    print(f"check: {len(rows)} rows, relative error {error:.2e}; {unwritten} elements of C left NaN -> "
          f"{'right' if right else 'WRONG'}")
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
