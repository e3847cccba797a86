"""Where the time of a streamed GPU-only product from numpy operands goes (issue 7's 0.85x target): an
n^3 product through ``DeviceStream`` with a trace, summarised: wall time; from the first copy in to the
first kernel (device clock); the kernels' span, busy time and the gaps between them; the time the host
spent copying each way and its rate. Variants of the host's copying are swapped in for comparison:
the library's (one pool of ``COPY_THREADS`` threads for both directions), pools of 2 to 16, a pool of
their own for each direction, and larger tiles; each into a C written before and into a new C.

    python scripts/stream_timeline.py [n] [dtype letter] [variant,...]"""

import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import autogemm
from autogemm.blas import stream
from autogemm.blas.hybrid import HostGemm
from autogemm.blas.stream import DeviceStream
from autogemm.dtypes import get_dtype


def pooled_copy(threads: int, split: bool):
    """A parallel_copy with ``threads`` per pool: one pool, or (``split``) one for copies out (made by the
    stream's retiring thread) and one for copies in."""
    pools = {"in": ThreadPoolExecutor(threads), "out": ThreadPoolExecutor(threads) if split else None}
    pools["out"] = pools["out"] or pools["in"]

    def copy(dst: np.ndarray, src: np.ndarray) -> None:
        pool = pools["out" if threading.current_thread().name == "autogemm-retire" else "in"]
        bounds = np.linspace(0, len(src), min(threads, len(src)) + 1).astype(int)
        for future in [pool.submit(np.copyto, dst[a:b], src[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]:
            future.result()
    return copy


VARIANTS = {                 # the stream module's settings each variant sets
    "library": lambda: {},
    "shared2": lambda: {"parallel_copy": pooled_copy(2, False)},
    "shared4": lambda: {"parallel_copy": pooled_copy(4, False)},
    "shared6": lambda: {"parallel_copy": pooled_copy(6, False)},
    "shared16": lambda: {"parallel_copy": pooled_copy(16, False)},
    "split8": lambda: {"parallel_copy": pooled_copy(8, True)},
    "split16": lambda: {"parallel_copy": pooled_copy(16, True)},
    "split8-tile4096": lambda: {"parallel_copy": pooled_copy(8, True), "MIN_TILE": 4096},
}
LIBRARY = {name: getattr(stream, name) for name in ("parallel_copy", "MIN_TILE")}


def summary(trace: list, wall: float, cpu: float, flops: float) -> str:
    device = {id(item[0]): (what, item[0]) for what, *item in trace if len(item) == 1}.values()
    busy: dict[str, float] = defaultdict(float)
    moved: dict[str, int] = defaultdict(int)
    for what, event in device:
        busy[what] += (event.profile.end - event.profile.start) * 1e-9
    for what, *item in trace:
        if len(item) == 3:
            busy[what] += item[1] - item[0]
            moved[what] += item[2]
    kernels = sorted((e.profile.start, e.profile.end) for w, e in device if w == "kernel")
    zero = min(e.profile.start for _, e in device)
    gaps = sum(max(0, s - previous_end) for (s, _), (_, previous_end) in zip(kernels[1:], kernels))
    host = ", ".join(f"{w} {busy[w] * 1e3:.0f} ms ({moved[w] / busy[w] / 1e9:.1f} GB/s)" for w in sorted(moved))
    return (f"wall {wall * 1e3:.1f} ms ({flops / wall / 1e12:.1f} TFLOP/s), {cpu / wall:.1f} cores busy; first kernel at "
            f"{(kernels[0][0] - zero) * 1e-6:.1f} ms; kernels busy {busy['kernel'] * 1e3:.1f}, gaps {gaps * 1e-6:.1f} ms; "
            f"DMA in {busy['copy in'] * 1e3:.0f} ms, out {busy['copy out'] * 1e3:.0f} ms; {host}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
    letter = sys.argv[2] if len(sys.argv) > 2 else "s"
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(VARIANTS)
    dt = get_dtype(letter)
    ctx = autogemm.context_for("gpu" if any(d.is_gpu for d in autogemm.list_devices()) else None)
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)).astype(dt.numpy), rng.random((n, n)).astype(dt.numpy)
    reused = np.zeros((n, n), dt.output.numpy)
    flops = 2 * n**3 * (4 if dt.is_complex else 1)
    expected_row = a[0].astype(np.float64) @ b
    table = []
    for name in names:
        for setting, value in {**LIBRARY, **VARIANTS[name]()}.items():
            setattr(stream, setting, value)
        walls = {"reused": [], "new": []}
        for run, output in enumerate(("reused", "reused", "new", "reused", "new", "reused", "new")):
            c = reused if output == "reused" else np.empty((n, n), dt.output.numpy)
            stream_ = DeviceStream(ctx, HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0), (0, n), None, "auto")
            trace: list = []
            start, cpu_start = time.perf_counter(), time.process_time()
            stream_.run(trace)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            error = np.abs(c[0] - expected_row).max() / np.abs(expected_row).max()
            print(f"{name}, {stream_.layout.tile}, C {output}: {summary(trace, wall, cpu, flops)}; error {error:.1e}",
                  flush=True)
            if run:                                          # the first run warms up
                walls[output].append(wall)
        table.append((name, *(flops / np.median(walls[o]) / 1e12 for o in ("reused", "new"))))
    print(f"\n{n}^3 {letter}, TFLOP/s (median of 3 after a warm-up)\n| variant | C written before | new C |\n| --- | --- | --- |")
    for name, reused_rate, new_rate in table:
        print(f"| {name} | {reused_rate:.1f} | {new_rate:.1f} |")


if __name__ == "__main__":
    main()
