"""Which ``mma.sync`` instruction shapes a device runs: the family is offered only where ``check`` allows
the PTX (an NVIDIA device of a recent enough architecture), and then only with the shapes a one-warp
kernel built and computed exactly on this very device and driver. The probe runs once per device and
its answer is kept in the cache."""

from __future__ import annotations

import json
from collections.abc import Callable

from ...cache_dir import cache_subdir, write_atomically
from ...dtypes import DTYPES, Dtype
from ...runtime.opencl.device import Device
from .check import ptx_problem
from .params import OPERANDS, MmaParams

#: The probe: the smallest configuration of a shape, on a problem no tile divides.
PROBE_SHAPE = (40, 24, 36)


def _probe_params(shape: str, dt: Dtype) -> MmaParams:
    return MmaParams(layout="NT", shape=shape, warps_m=1, warps_n=1, tiles_m=1, tiles_n=1, tile_k=8, stages=1,
                     vector_width=1, mma="ptx").fitted(dt)


def _probe_dtype(operand: str) -> Dtype:
    """The real dtype the probe of ``operand``'s instructions multiplies."""
    return next(dt for dt in DTYPES.values() if dt.mma_operand == operand and not dt.is_complex)


def _prepared(evaluator, params: MmaParams) -> object:
    """``evaluator.prepare(params)``, or the exception it raised (which ``evaluate`` turns into a record)."""
    try:
        return evaluator.prepare(params)
    except Exception as exc:   # noqa: BLE001 - the evaluation reports it
        return exc


def instructions_available(device: Device, evaluator: Callable[[Dtype, tuple[int, int, int]], object]
                           ) -> dict[str, tuple[str, ...]]:
    """For each operand type, the mma shapes whose PTX this device's compiler accepts and whose products
    come out right: measured once per device (fingerprint), then read from the cache. ``evaluator(dtype,
    shape)`` makes what runs the probes of one operand type (an ``Evaluator``: the tuner's worker process,
    where a probe that crashes costs only that process)."""
    candidates = [f"{operand} {shape}" for operand, facts in OPERANDS.items() for shape in facts.shapes
                  if ptx_problem(device, operand, shape) is None]
    if not candidates:
        return {}
    path = cache_subdir("capabilities") / f"{device.fingerprint}-mma.json"
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        known = {k: v for k, v in known.items() if k in candidates and isinstance(v, bool)}
    except (OSError, ValueError, AttributeError):
        known = {}
    missing = [name for name in candidates if name not in known]
    for operand in dict.fromkeys(name.split()[0] for name in missing):
        dt = _probe_dtype(operand)
        probe = evaluator(dt, PROBE_SHAPE)
        try:
            # every probe of the operand type is built at once (a worker builds them in parallel)
            params = {name: _probe_params(name.split()[1], dt) for name in missing if name.split()[0] == operand}
            plans = {name: _prepared(probe, config) for name, config in params.items()}
            for name, config in params.items():
                known[name] = probe.evaluate(config, plans[name]).ok
        finally:
            probe.release()
    if missing:
        write_atomically(path, json.dumps(known, indent=1, sort_keys=True))
    available: dict[str, tuple[str, ...]] = {}
    for name in candidates:
        operand, shape = name.split()
        if known[name]:
            available[operand] = available.get(operand, ()) + (shape,)
    return available
