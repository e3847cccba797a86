"""What ``tune`` measures of how a device's calls are routed (the ``Thresholds`` it can measure, kept in the
profile), each way timed as a program's loop of products runs it, host and device together, on squares
of growing size:

- below how many multiply-adds a product runs its configuration in the layout A and B are stored in,
  reading them where they lie, rather than packing them first (``in_place_multiply_adds``);
- below how many a product from numpy to numpy runs on the host's BLAS (numpy's), which finishes it
  sooner than the device with its copies (``host_multiply_adds``, per dtype)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..blas import default_params
from ..codelets.registry import KernelParams
from ..dtypes import Dtype
from ..profiles import Profile
from ..profiles.thresholds import DEFAULTS, EVERY_PRODUCT, Thresholds, device_class
from ..runtime.opencl.device import Device
from .evaluation import WorkerProcess

#: The sides of the squares timed: a GPU's up to where its launches no longer count, a CPU's fewer.
GPU_SIDES = (32, 64, 128, 256, 512, 1024, 2048)
CPU_SIDES = (32, 64, 128, 256, 512, 1024)
#: Packing must run faster than reading in place by this factor to count as faster (timing noise).
MARGIN = 1.05
#: The stored layouts of the squares timed: row-major A and B, as a program's arrays, or A transposed
#: where the configuration chosen reads them so.
STORED, OTHER = "NN", "TN"


class InPlace(NamedTuple):
    """One square timed both ways: its side, the layout A and B were stored in, the configuration chosen
    for it (whose layout is another, so it packs), and the wall seconds per product packed and read in
    place (None where that way failed)."""

    side: int
    layout: str
    config: KernelParams
    packed: float | None
    in_place: float | None


def measure_in_place(worker: WorkerProcess, profile: Profile, dt: Dtype, sides: tuple[int, ...],
                     seconds: float = 0.1) -> list[InPlace]:
    """Each square of ``sides`` timed with the configuration ``profile`` ranks best for the class
    nearest it (the device's default where it has none), on A and B stored as ``STORED`` (``OTHER``
    where the configuration reads that): packed as its layout asks, and in the stored layout. Squares
    whose configuration reads through images (packed whatever the size) are left out."""
    timed = []
    for side in sides:
        nearest = profile.nearest((dt.key,), side, side, side)
        config = nearest[0].ranked[0].config if nearest else default_params(worker.device, dt)
        if config.image_a or config.image_b:
            continue
        stored, shape = OTHER if config.layout == STORED else STORED, (side, side, side)
        twin = config.in_layout(stored, dt)
        timed.append(InPlace(side, stored, config, worker.time_calls(config, dt, shape, stored, seconds),
                             worker.time_calls(twin, dt, shape, stored, seconds)))
    return timed


def in_place_bound(timed: list[InPlace]) -> int | None:
    """The multiply-adds below which a product reads its operands in place: those of the first square
    from which packing ran faster (by ``MARGIN``) on it and on the next square too (one square alone may
    be noise), else just past the largest square's (in place ran no slower there: nothing larger was
    measured); None where nothing was timed both ways."""
    both = [t for t in timed if t.packed is not None and t.in_place is not None]
    wins = [t.packed * MARGIN < t.in_place for t in both]
    for i, t in enumerate(both):
        if wins[i] and (i + 1 == len(both) or wins[i + 1]):
            return t.side ** 3
    return both[-1].side ** 3 + 1 if both else None


#: The sides of the squares timed from numpy to numpy on the device and by the host's BLAS (the dtypes
#: those numpy's BLAS computes in their own precision): on a device of memory of its own, up to where
#: its copies and launches no longer count (a host of many cores finishes mid-sized squares first),
#: finer past 256 where the two cross; on one that shares the host's memory, fewer (its products run on
#: the host's own cores).
OWN_MEMORY_HOST_SIDES = (32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048)
SHARED_HOST_SIDES = (32, 64, 128, 256, 512)


class HostOrDevice(NamedTuple):
    """One square from numpy to numpy: its side and the wall seconds per product on the device (None where
    it failed) and by the host's BLAS."""

    side: int
    device: float | None
    host: float | None


def host_sides(device: Device) -> tuple[int, ...]:
    """The squares ``measure_host`` times on ``device``."""
    return SHARED_HOST_SIDES if device.shares_host_memory else OWN_MEMORY_HOST_SIDES


def measure_host(worker: WorkerProcess, dt: Dtype, sides: tuple[int, ...], seconds: float = 0.1
                 ) -> list[HostOrDevice]:
    """Each square of ``sides`` of ``dt`` timed from numpy to numpy on the device and by the host's BLAS."""
    return [HostOrDevice(side, *worker.time_host_calls(dt, side, seconds)) for side in sides]


def host_bound(timed: list[HostOrDevice], shares_memory: bool) -> int | None:
    """The multiply-adds below which a product from numpy to numpy runs on the host: those of the first
    square from which the device ran faster (by ``MARGIN``) on it and on the next too; where it never did,
    every product on a device that ``shares_memory`` with the host (its products run on the host's own
    cores), else those up to the largest square (nothing larger was measured, and a device of memory of
    its own gains on the host as products grow); None where the host's BLAS was not timed."""
    timed = [t for t in timed if t.host is not None]
    wins = [t.device is not None and t.device * MARGIN < t.host for t in timed]
    for i, t in enumerate(timed):
        if wins[i] and (i + 1 == len(timed) or wins[i + 1]):
            return t.side ** 3
    if not timed:
        return None
    return EVERY_PRODUCT if shares_memory else timed[-1].side ** 3 + 1


def with_host_bound(profile: Profile, device: Device, dt: Dtype, bound: int) -> Profile:
    """``profile`` whose thresholds (its own, else ``device``'s class's defaults) run ``dt``'s products
    from numpy to numpy of fewer than ``bound`` multiply-adds on the host (none where ``bound`` is 0)."""
    base = _thresholds(profile, device)
    kept = tuple((key, count) for key, count in base.host_multiply_adds if key != dt.key)
    return _with(profile, base, host_multiply_adds=kept + (((dt.key, bound),) if bound else ()))


def with_in_place_bound(profile: Profile, device: Device, bound: int) -> Profile:
    """``profile`` whose thresholds (its own, else ``device``'s class's defaults) read in place below
    ``bound`` multiply-adds."""
    return _with(profile, _thresholds(profile, device), in_place_multiply_adds=bound)


def _thresholds(profile: Profile, device: Device) -> Thresholds:
    """The thresholds ``profile``'s device follows: its own, else ``device``'s class's defaults."""
    return profile.thresholds if profile.thresholds is not None else DEFAULTS[device_class(device)]


def _with(profile: Profile, base: Thresholds, **fields: object) -> Profile:
    return dataclasses.replace(profile, thresholds=base.measured(**fields))
