"""Where the time of a streamed product goes: an n^3 product from numpy operands through one device's
``DeviceStream`` with a trace, run a few times (the first warms up), each summarised: wall time and
rate; from the first copy in to the first kernel (device clock); the kernels' busy time and the gaps
between them; the time the device's copy engines and the host's copying threads spent each way, and
the host's rate. Then the median rate into a C written before and into a new C (whose pages the host
must fault in first).

    python tools/stream_timeline.py [--n 16384] [--dtype s] [--device D] [--runs 3]"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import numpy as np

import autogemm
from autogemm.dtypes import get_dtype
from autogemm.shares import HostGemm
from autogemm.shares.streaming import DeviceStream


def summary(trace: list, wall: float, flops: float) -> str:
    """One line of what ``DeviceStream.run`` traced: device commands as (what, event), host copies as
    (what, start, end, bytes)."""
    device = [(what, item[0]) for what, *item in trace if len(item) == 1]
    busy: dict[str, float] = defaultdict(float)
    moved: dict[str, int] = defaultdict(int)
    for what, event in device:
        busy[what] += (event.profile.end - event.profile.start) * 1e-9
    for what, *item in trace:
        if len(item) == 3:
            busy[what] += item[1] - item[0]
            moved[what] += item[2]
    kernels = sorted((e.profile.start, e.profile.end) for what, e in device if what == "kernel")
    zero = min(e.profile.start for _, e in device)
    gaps = sum(max(0, start - end) for (start, _), (_, end) in zip(kernels[1:], kernels))
    host = ", ".join(f"{w} {busy[w] * 1e3:.0f} ms ({moved[w] / max(busy[w], 1e-9) / 1e9:.1f} GB/s)"
                     for w in sorted(moved))
    return (f"wall {wall * 1e3:.1f} ms ({flops / wall / 1e12:.2f} TFLOP/s); first kernel at "
            f"{(kernels[0][0] - zero) * 1e-6:.1f} ms; kernels busy {busy['kernel'] * 1e3:.1f} ms, gaps "
            f"{gaps * 1e-6:.1f} ms; copies in {busy['copy in'] * 1e3:.0f} ms, out {busy['copy out'] * 1e3:.0f} ms; "
            f"host: {host}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--dtype", default="s")
    parser.add_argument("--device", default=None, help="as autogemm's -d (default: the default device)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs into each kind of C, after a warm-up")
    args = parser.parse_args()
    n, dt = args.n, get_dtype(args.dtype)
    ctx = autogemm.context_for(autogemm.find_device(args.device))
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)).astype(dt.numpy), rng.random((n, n)).astype(dt.numpy)
    written = np.zeros((n, n), dt.output.numpy)
    flops = (8 if dt.is_complex else 2) * n**3
    expected = a[0].astype(np.float64) @ b
    walls: dict[str, list[float]] = {"written": [], "new": []}
    for run, output in enumerate(["written"] + ["written", "new"] * args.runs):
        c = written if output == "written" else np.empty((n, n), dt.output.numpy)
        stream = DeviceStream(ctx, HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0), (0, n), None, "auto")
        trace: list = []
        start = time.perf_counter()
        stream.run(trace)
        wall = time.perf_counter() - start
        error = np.abs(c[0] - expected).max() / np.abs(expected).max()
        print(f"{'warm-up' if not run else 'C ' + output}, tiles of {stream.layout.tile}: "
              f"{summary(trace, wall, flops)}; error {error:.1e}", flush=True)
        if run:
            walls[output].append(wall)
    print(f"{n}^3 {dt.key} on {ctx.device.name.strip()}, TFLOP/s (median of {args.runs}): C written before "
          f"{flops / statistics.median(walls['written']) / 1e12:.2f}, new C "
          f"{flops / statistics.median(walls['new']) / 1e12:.2f}")


if __name__ == "__main__":
    main()
