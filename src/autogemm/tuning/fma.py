"""FMA micro-benchmarks, as RaijinCL runs them: per real type and vector width, whether ``fma(a,b,c)``,
``mad(a,b,c)`` or ``a*b+c`` is fastest on this device (a fast-FMA macro is not a promise of speed, and
speed differs with type and width). The tuning space then uses the winner instead of searching it."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from ..cache_dir import cache_subdir, write_atomically
from ..errors import TuningError
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.device import Device
from ..runtime.opencl.timing import event_seconds

MACS = {"fma": "fma(a, b, c)", "mad": "mad(a, b, c)", "mul_add": "(a) * (b) + (c)"}
CHAINS = 16              # independent multiply-add chains per work-item (hides the latency: a CPU core
                         # keeps two units' pipelines full only with more than 8 vectors in flight)
#: A rival must beat fma() by this much to be chosen: fma() rounds once, the others may not.
PREFER_FMA = 0.03


@dataclass(frozen=True)
class FmaResult:
    real: str            # "s" (float) or "d" (double)
    vector_width: int
    gflops: dict[str, float]

    @property
    def best(self) -> str:
        fma = self.gflops.get("fma", 0.0)
        rival = max(self.gflops, key=self.gflops.__getitem__)
        return rival if self.gflops[rival] > fma * (1 + PREFER_FMA) else "fma"


def source(real_cl: str, width: int, iterations: int) -> str:
    """One program with a kernel per multiply-add form, for ``real_cl`` vectors of ``width``."""
    vec = real_cl if width == 1 else f"{real_cl}{width}"
    store = "out[gid] = s;" if width == 1 else f"vstore{width}(s, gid, out);"
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if real_cl == "double" else ""
    chains = range(CHAINS)
    kernels = []
    for name, expr in MACS.items():
        init = "\n".join(f"    {vec} x{i} = ({vec})(seed + ({real_cl}){i} * ({real_cl})0.01)"
                         f" + ({real_cl})gid * ({real_cl})1e-7;" for i in chains)
        step = "\n".join(f"        x{i} = MAC_{name}(x{i}, b, c);" for i in chains)
        total = " + ".join(f"x{i}" for i in chains)
        kernels.append(f"""#define MAC_{name}(a, b, c) {expr}
__kernel void bench_{name}(__global {real_cl}* out, const {real_cl} seed)
{{
    const size_t gid = get_global_id(0);
{init}
    const {vec} b = ({vec})(({real_cl})0.999), c = ({vec})(({real_cl})0.001);
    for (int i = 0; i < ITERATIONS; ++i) {{
{step}
    }}
    const {vec} s = {total};
    {store}
}}""")
    return f"{pragma}#define ITERATIONS {iterations}\n\n" + "\n\n".join(kernels) + "\n"


def benchmark(ctx: DeviceContext, reals: tuple[str, ...], widths: tuple[int, ...], runs: int = 5) -> list[FmaResult]:
    """Rates of the three multiply-add forms for each real type ("s", "d") and vector width, each from the
    fastest of ``runs`` runs: a peak, which whatever else the machine runs only lowers (on a shared CPU
    the median of a few short runs swung widely, and chose among the forms by that noise)."""
    device = ctx.device
    work_items = device.compute_units * (2048 if device.is_gpu else 64)
    iterations = 1024 if device.is_gpu else 8192     # (a CPU's launch costs more of a short run)
    # a CPU runs a work-group on one core: groups of 16 work-items keep every core busy (left to PoCL, all
    # of them made one group, and the peak read one core's)
    local = None if device.is_gpu else (16,)
    results = []
    for real in reals:
        real_cl, np_type = ("double", np.float64) if real == "d" else ("float", np.float32)
        if real == "d" and not device.fp64:
            continue
        for width in widths:
            program = ctx.program(source(real_cl, width, iterations))
            names = set(program.kernel_names.split(";"))
            if not all(f"bench_{name}" in names for name in MACS):
                continue    # the compiler dropped a kernel (PoCL 3.0's double8): the width keeps fma
            out = ocl.device_buffer(ctx.context, work_items * width * np.dtype(np_type).itemsize)
            rates = {}
            for name in MACS:
                kernel = ocl.Kernel(program, f"bench_{name}")
                kernel.set_args(out, np_type(1.0))
                launch = functools.partial(ocl.launch, ctx.queue, kernel, (work_items,), local)
                launch().wait()
                seconds = min(event_seconds(launch()) for _ in range(runs))
                rates[name] = 2.0 * CHAINS * width * iterations * work_items / seconds / 1e9
            out.release()
            results.append(FmaResult(real, width, rates))
    return results


def mac_table(results: list[FmaResult]) -> dict[str, str]:
    """The profile's ``fma`` section: "s4" -> the fastest form for float4."""
    return {f"{r.real}{r.vector_width}": r.best for r in results}


def measured(device: Device, measure: Callable[[tuple[str, ...], tuple[int, ...]], list[FmaResult]],
             reals: tuple[str, ...], widths: tuple[int, ...], fresh: bool = False) -> list[FmaResult]:
    """The results of ``measure(reals, widths)`` (``benchmark`` on ``device``, in the tuner's worker
    process), kept beside the device's tuning checkpoints: a run that resumes takes them from there
    (unless ``fresh``), so that its space has the multiply-add forms of the run it resumes and that run's
    measurements stand (the forms are part of each configuration, and a benchmark run again can choose
    another where two forms are close). Each type and width is measured on its own: one whose kernels
    crash the process (PoCL 3.0's double8, built afresh) is left out, and its width keeps ``fma()``."""
    path = cache_subdir("checkpoints") / f"{device.fingerprint}-fma.json"
    kept = {} if fresh else _read(path)
    wanted = [(real, width) for real in reals if real != "d" or device.fp64 for width in widths]
    if all(key in kept for key in wanted):
        return [kept[key] for key in wanted]
    results = []
    for real, width in wanted:
        try:
            results += measure((real,), (width,))
        except TuningError:
            continue
    if not results:
        raise TuningError(f"the FMA benchmark failed on {device.name.strip()} at every vector width")
    kept.update({(r.real, r.vector_width): r for r in results})
    write_atomically(path, json.dumps([asdict(r) for r in kept.values()], indent=1))
    return results


def _read(path) -> dict[tuple[str, int], FmaResult]:
    """The results kept at ``path``, validated (a file anyone could have edited); none when it is not
    there or not valid."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        results = {}
        for item in data:
            real, width, rates = item["real"], item["vector_width"], item["gflops"]
            valid = (real in ("s", "d") and isinstance(width, int) and not isinstance(width, bool) and 1 <= width <= 16
                     and isinstance(rates, dict) and set(rates) == set(MACS)
                     and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                             for v in rates.values()))
            if not valid:
                return {}
            results[(real, width)] = FmaResult(real, width, {k: float(v) for k, v in rates.items()})
        return results
    except (OSError, ValueError, TypeError, KeyError):
        return {}
