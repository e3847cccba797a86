"""RaijinCL's hybrid tuner: the GPU kernel and the split of C's rows between the devices and the host's BLAS,
tuned together for the time of the whole call (host operands in, host result out), because the kernel best
alone is not always best beside the host.

The space is every candidate kernel times every host share h of P parts (the devices sharing the other
P - h parts evenly), h growing from 0 until the calls get slower (``PRUNE``). Each point is a whole
``shares.run_split`` call, timed by wall clock after a warm-up (the median of ``runs``) and checked
against float64 on sampled rows, including the rows on both sides of each share's boundary. With one
candidate, the GPU-only best, this is the seed's "CPU+GPU with a tuned split" strategy; with several it is
its full co-tuning."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..accuracy import Reference, gemm_flops, random_matrix
from ..blas import GemmProblem
from ..blas.selection import candidates
from ..codelets.registry import KernelParams
from ..dtypes import Dtype
from ..errors import TuningError
from ..profiles import HybridEntry, own_profile, save
from ..runtime.opencl.context import DeviceContext
from ..shares import HOST, HostGemm, Target, run_split
from ..shares.split import DEFAULT_PARTS, Split
from .tuner import new_profile

#: The host's share stops growing once a call takes this many times the kernel's best so far and longer
#: than the share before: the whole call's time over the host's share falls, then rises (one device or
#: the host finishing last), as Jiang and Snir's one-dimensional search assumes of a unimodal parameter.
PRUNE = 1.25


@dataclass(frozen=True)
class HybridPoint:
    """One (kernel, split) of the co-tuning and its whole call's median wall seconds (None: it failed,
    ``note`` says how)."""

    config: KernelParams
    split: Split
    seconds: float | None
    note: str = ""


def splits(targets: Sequence[Target], parts: int = DEFAULT_PARTS) -> list[Split]:
    """Every split the tuner tries: the host's share from none to all of ``parts`` (where the host is a
    target), the devices sharing the rest as evenly as it goes (none left: the host alone)."""
    devices = [i for i, t in enumerate(targets) if t != HOST]
    host = [i for i, t in enumerate(targets) if t == HOST]
    found = []
    for host_parts in range(parts + 1) if host else (0,):
        shares = [0] * len(targets)
        if host:
            shares[host[0]] = host_parts
        rest = parts - host_parts
        if rest and not devices:
            continue
        for i, index in enumerate(devices):
            shares[index] = rest // len(devices) + (i < rest % len(devices))
        found.append(Split(parts, tuple(shares)))
    return found


def co_tune(targets: Sequence[Target], dt: Dtype, m: int, n: int, k: int, kernels: Sequence[KernelParams],
            parts: int = DEFAULT_PARTS, runs: int = 3, rng: np.random.Generator | None = None,
            progress: Callable[[HybridPoint], None] | None = None) -> list[HybridPoint]:
    """Time every kernel of ``kernels`` (used on every device) with every split of ``splits`` on an
    m x n x k product of fresh random operands; all points, fastest first (failed ones last)."""
    rng = rng or np.random.default_rng()
    a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
    c = np.empty((m, n), dtype=dt.output.numpy)
    tried = splits(targets, parts)
    boundaries = {row for split in tried for start, _ in split.rows(m) for row in (start - 1, start)}
    reference = Reference(dt, a, b, rng, boundaries)
    gemm = HostGemm(dt, a, b, c, "N", "N", 1.0, 0.0)
    points = []
    for config in kernels:
        configs = [None if t == HOST else config for t in targets]
        best = previous = None
        for split in tried:
            point = _measure(targets, split, gemm, configs, config, reference, runs)
            points.append(point)
            if progress:
                progress(point)
            seconds = point.seconds
            if seconds is not None and best is not None and seconds > PRUNE * best and seconds > previous:
                break     # past the best share and climbing: more for the host only gets slower
            if seconds is not None:
                best, previous = (seconds if best is None else min(best, seconds)), seconds
    return sorted(points, key=lambda p: (p.seconds is None, p.seconds or 0.0))


def _measure(targets: Sequence[Target], split: Split, gemm: HostGemm, configs: list, config: KernelParams,
             reference: Reference, runs: int) -> HybridPoint:
    """One point: a warm-up call (kernels built, buffers touched), ``runs`` timed ones, the result checked."""
    times = []
    try:
        for i in range(runs + 1):
            gemm.c.fill(np.nan)
            start = time.perf_counter()
            run_split(targets, split, gemm, configs)
            if i:
                times.append(time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a failing point is recorded, the tuning goes on
        return HybridPoint(config, split, None, f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
    error, ok = reference.check(gemm.c)
    if not ok:
        return HybridPoint(config, split, None, f"wrong result (relative error {error:.1e})")
    return HybridPoint(config, split, statistics.median(times))



def tune_hybrid(ctx: DeviceContext, dt: Dtype, n: int, parts: int = DEFAULT_PARTS, kernels: int = 3, runs: int = 3,
                rng: np.random.Generator | None = None, progress: Callable[[HybridPoint], None] | None = None,
                write: bool = True) -> HybridEntry:
    """Co-tune ``ctx``'s device and the host on an n^3 product of ``dt``: ``kernels`` candidates (the
    profile's, best first) with every host share; the best as the profile's hybrid entry for ``dt`` at
    that shape, saved to the device's profile unless ``write`` is False. ``TuningError`` when no point
    ran correctly."""
    started = time.monotonic()
    configs = candidates(ctx.device, GemmProblem.dense(dt, n, n, n), kernels)
    points = co_tune([ctx, HOST], dt, n, n, n, configs, parts, runs, rng, progress)
    best = points[0]
    if best.seconds is None:
        raise TuningError(f"no hybrid {dt.routine} call of {n}^3 ran correctly: {best.note}")
    entry = HybridEntry((n, n, n), parts, best.split.shares[1], best.config,
                        gemm_flops(dt, n, n, n) / best.seconds / 1e9, len(points), time.monotonic() - started)
    if write:
        save((own_profile(ctx.device) or new_profile(ctx.device, "hybrid")).with_hybrid(dt.key, entry))
    return entry
