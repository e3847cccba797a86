"""The tuning space of the ``nvidia_mma`` codelets on one device, and the probe that says which
instruction shapes it runs.

The family is offered only where ``check`` allows the PTX (an NVIDIA device of a recent enough
architecture), and then only with the shapes a one-warp kernel built and computed exactly on this very
device and driver: the probe runs once per device and its answer is kept in the cache."""

from __future__ import annotations

import json
from typing import Callable

from ..cache import cache_subdir, write_atomically
from ..codelets.mma import OPERANDS, MmaParams, check, ptx_problem
from ..dtypes import DTYPES, Dtype
from ..runtime.device import Device
from .space import Knob, SearchSpace

#: The register cap every configuration asks NVIDIA's compiler for (its default is lower than the
#: accumulators of a 64 x 32 warp tile need).
REGISTER_CAP = "-cl-nv-maxrregcount=255"
#: The probe: the smallest configuration of a shape, on a problem no tile divides.
PROBE_SHAPE = (40, 24, 36)


def _probe_params(shape: str, dt: Dtype) -> MmaParams:
    return MmaParams(layout="NT", shape=shape, warps_m=1, warps_n=1, tiles_m=1, tiles_n=1, tile_k=8, stages=1,
                     vector_width=1, mma="ptx").fitted(dt)


def _probe_dtype(operand: str) -> Dtype:
    """The real dtype the probe of ``operand``'s instructions multiplies."""
    return next(dt for dt in DTYPES.values() if dt.mma_operand == operand and not dt.is_complex)


def instructions_available(device: Device, evaluator: Callable[[Dtype, tuple[int, int, int]], object]
                           ) -> dict[str, tuple[str, ...]]:
    """For each operand type, the mma shapes whose PTX this device's compiler accepts and whose products
    come out right: measured once per device (fingerprint), then read from the cache. ``evaluator(dtype,
    shape)`` makes what runs the probes of one operand type (``evaluate`` and ``release``: the tuner's
    worker process, where a probe that crashes costs only that process)."""
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
            for name in missing:
                if name.split()[0] == operand:
                    known[name] = probe.evaluate(_probe_params(name.split()[1], dt)).ok
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


def mma_space(device: Device, dtype: Dtype, available: dict[str, tuple[str, ...]]
              ) -> SearchSpace[MmaParams] | None:
    """The pruned space for ``dtype`` on ``device`` over the instruction shapes it runs (see
    ``instructions_available``); None when none of them multiplies ``dtype``."""
    shapes = available.get(dtype.mma_operand or "", ())
    if not shapes:
        return None
    knobs = [Knob("shape", shapes), Knob("layout", ("NT", "TT", "NN", "TN")),
             Knob("warps", ((2, 4), (4, 2), (2, 2), (1, 4), (4, 1), (2, 1), (1, 2), (4, 4))),
             Knob("tiles", ((4, 4), (2, 4), (4, 2), (2, 2), (2, 8), (1, 4), (4, 1))),
             Knob("tile_k", (32, 64) if dtype.half else (8, 16, 32), ordered=True), Knob("stages", (1, 2, 3)),
             Knob("copy", ("registers", "async")),
             Knob("vector_width", (1, 2, 4, 8) if dtype.half else (1, 2, 4) if dtype.real_bytes == 4 else (1, 2),
                  ordered=True),
             Knob("read_width", (16, 8) if dtype.real_bytes < 8 else (16,)), Knob("fragment_sets", (1, 2)),
             Knob("loads", ("ldmatrix", "lanes") if dtype.half else ("lanes",)),
             Knob("complex_method", ("4m", "3m") if dtype.is_complex else ("4m",))]

    def make(values: dict) -> MmaParams:
        (warps_m, warps_n), (tiles_m, tiles_n) = values["warps"], values["tiles"]
        return MmaParams(layout=values["layout"], shape=values["shape"], warps_m=warps_m, warps_n=warps_n,
                         tiles_m=tiles_m, tiles_n=tiles_n, tile_k=values["tile_k"], stages=values["stages"],
                         vector_width=values["vector_width"], mma="ptx", build_options=(REGISTER_CAP,),
                         copy=values["copy"], complex_method=values["complex_method"],
                         read_width=values["read_width"], fragment_sets=values["fragment_sets"],
                         loads=values["loads"])

    return SearchSpace(knobs, make, lambda params: check(params, device, dtype), family="nvidia_mma")
