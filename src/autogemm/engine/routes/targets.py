"""``gemm(..., devices=...)``: one product on numpy arrays shared by rows of C among several GPUs and the
host's own BLAS (``shares``), each target's share given by a ``Split``; and a product of numpy operands
too large to cross in row blocks, streamed through its one device as a share of it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...codelets.registry import KernelParams
from ...dtypes import Dtype
from ...errors import ArgumentError
from ...profiles import profile_for, thresholds_for
from ...runtime import Device, context_for, find_device
from ...runtime.opencl import discovery
from ...shares import HOST, HostGemm, Target, run_split
from ...shares.split import DEFAULT_PARTS, Split
from ...shares.staging import host_result
from ..call import GemmCall
from ..operands import on_device
from ..transfer import large_on_host

Devices = str | list | tuple


def targets_for(devices: Devices) -> list[Target]:
    """The targets ``devices`` names: 'all' (every GPU, then the host) or a list of device specifications
    (as ``device`` takes) and 'host' (numpy's BLAS on this machine's CPU), in that order."""
    if devices == "all":
        return [context_for(d) for d in discovery.devices() if d.is_gpu] + [HOST]
    if isinstance(devices, str) or not isinstance(devices, (list, tuple)) or not devices:
        raise ArgumentError(f"devices must be 'all' or a non-empty list of devices and 'host', not {devices!r}")
    targets: list[Target] = []
    for spec in devices:
        target = HOST if spec == HOST else context_for(find_device(spec))
        if target in targets:
            raise ArgumentError(f"devices names {spec!r} twice")
        targets.append(target)
    return targets


def default_plan(targets: list[Target], dt: Dtype, shape: tuple[int, int, int]
                 ) -> tuple[Split, list[KernelParams | None]]:
    """The split and per-target kernels a call uses unless given a split: with the host among the
    targets, the host's share and the kernel co-tuned by ``autogemm tune --hybrid`` (the first device's
    profile entry nearest in shape; its kernel on the devices that profile is for), the devices sharing
    the rest evenly; without such an entry the host computes nothing unless it is the only target (its
    BLAS is far slower than a GPU). None: the device's profile kernel."""
    devices = [i for i, t in enumerate(targets) if t != HOST]
    configs: list[KernelParams | None] = [None] * len(targets)
    if not devices:
        return Split.only(0, len(targets)), configs
    entry = profile = None
    if HOST in targets:
        profile = profile_for(targets[devices[0]].device)
        entry = profile.hybrid_entry(dt.key, *shape) if profile else None
    parts = entry.parts if entry else DEFAULT_PARTS
    host_parts = entry.host_parts if entry else 0
    shares = [0] * len(targets)
    if host_parts:
        shares[targets.index(HOST)] = host_parts
    rest = parts - host_parts
    for n, i in enumerate(devices):
        shares[i] = rest // len(devices) + (n < rest % len(devices))
        if entry and targets[i].device.fingerprint == profile.device_fingerprint:
            configs[i] = entry.config
    return Split(parts, tuple(shares)), configs


def run_on_targets(call: GemmCall, devices: Devices, alone: Callable[[Device, KernelParams | None], np.ndarray]
                   ) -> np.ndarray:
    """The product of ``call`` (numpy operands only) with C's rows shared per its ``split`` (default
    ``default_plan``) with one share per target, in the order of ``devices``. Where one device gets every
    row and the operands are not large enough to stream, ``alone(device, kernel)`` runs the call on that
    device instead: a share has no row blocks overlapping its copies, and the host would wait for it."""
    a, b, c, o = call.a, call.b, call.c, call.options
    for name, x in (("a", a), ("b", b), ("c", c)):
        if on_device(x):
            raise ArgumentError(f"{name} is a device array; devices= shares a product of numpy arrays among "
                                f"several targets")
    dt, (m, n, k), shape, split = call.dt, (call.m, call.n, call.k), call.shape, o.split
    targets = targets_for(devices)
    if split is None:
        split, configs = default_plan(targets, dt, (m, n, k))
        if o.config is not None:
            configs = [None if t == HOST else o.config for t in targets]
    else:
        configs = [None if t == HOST else o.config for t in targets]
    if not isinstance(split, Split):
        raise ArgumentError(f"split must be a Split, not {type(split).__name__}")
    if len(split.shares) != len(targets):
        raise ArgumentError(f"split has {len(split.shares)} shares for {len(targets)} targets")
    computing = [i for i, share in enumerate(split.shares) if share]
    alone_target = targets[computing[0]] if len(computing) == 1 else HOST
    if alone_target != HOST and not large_on_host(call, thresholds_for(alone_target.device)):
        return alone(alone_target.device, configs[computing[0]])
    # the targets write rows of a row-major C: the caller's own where it is one, else a new one, in
    # page-locked memory where a device writes it (its tiles come back straight into it)
    if c is not None and c.flags.c_contiguous:
        out = c
    else:
        device_targets = [t for t in targets if t != HOST]
        out = (host_result(device_targets[0], shape, dt.output.numpy, thresholds_for(device_targets[0].device))
               if device_targets
               else np.empty(shape, dt.output.numpy))
        if c is not None and call.beta != 0:
            out[...] = c
    if m and n:
        # a new ordinary array none of whose memory is written yet (not C's values, not a pooled result's
        # page-locked memory, already the process's): it counts among what the product takes of the host
        fresh = out is not c and out.base is None and (c is None or call.beta == 0)
        run_split(targets, split, HostGemm(dt, a, b, out, o.trans_a.upper(), o.trans_b.upper(), call.alpha,
                                           call.beta, fresh), configs, o.edge)
    if c is not None and out is not c:
        c[...] = out
        return c
    return out
