"""Issue 4 kernel probe on the H100: what holds the tuned simt kernels below the FMA peak.

For each variant of the bundled profile's winners (warp arrangements, 16-wide tiles, register caps,
smaller work-groups): the rate at 4096^3 from profiling events (checked against float64 on the device, as
the tuner measures), the registers and spills ptxas reports (-cl-nv-verbose), and the PTX (to read here).
Then the SM clock, power and temperature nvidia-smi reports while the best SGEMM and DGEMM kernels and the
FMA micro-benchmark run for a few seconds each: is the card power-limited under a GEMM?

Outputs in $OUT: probe.log (the table), probe.json, ptx.tgz. Run from the repository root with src/ on
PYTHONPATH, after `source .gpu/prelude.sh`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyopencl as cl

import autogemm
from autogemm.codelets.families import KernelParams, render
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES
from autogemm.runtime import context_for
from autogemm.tuning import Evaluator
from autogemm.tuning.fma import source as fma_source

OUT = Path(os.environ.get("OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)
SIZE = int(os.environ.get("PROBE_SIZE", "4096"))
R255, R168, R128 = (("-cl-nv-maxrregcount=%d" % n,) for n in (255, 168, 128))

BASE = {
    "s": SimtParams("NN", "offset", 16, 16, 8, 8, 8, 4, True, True, double_buffer=True, build_options=R255),
    "d": SimtParams("NN", "offset", 16, 16, 8, 8, 8, 2, True, True, double_buffer=True, build_options=R255),
    "c": SimtParams("NN", "offset", 16, 8, 8, 8, 4, 2, True, True, double_buffer=True, build_options=R255),
    "z": SimtParams("TN", "offset", 8, 16, 8, 4, 8, 1, True, True, double_buffer=True, build_options=R255),
}


def variants() -> list[tuple[str, str, SimtParams]]:
    out = []
    for letter, base in BASE.items():
        out.append((f"{letter} tuned", letter, base))
        out += [(f"{letter} warp 4x8", letter, replace(base, warp_cols=8)),
                (f"{letter} warp 8x4", letter, replace(base, warp_cols=4))]
    s, d = BASE["s"], BASE["d"]
    out += [
        ("s r128", "s", replace(s, build_options=R128)),
        ("s warp 4x8 r128", "s", replace(s, warp_cols=8, build_options=R128)),
        ("s tile 8x16", "s", replace(s, tile_cols=16)),
        ("s tile 16x8", "s", replace(s, tile_rows=16)),
        ("s tile 8x16 warp 4x8", "s", replace(s, tile_cols=16, warp_cols=8)),
        ("s tile 16x8 warp 4x8", "s", replace(s, tile_rows=16, warp_cols=8)),
        ("s tile 16x8 wg 8x16", "s", replace(s, tile_rows=16, wg_rows=8)),
        ("s tk16 tile 8x8", "s", replace(s, tile_k=16)),
        ("d wg 8x16", "d", replace(d, wg_rows=8)),
        ("d wg 8x16 warp 4x8", "d", replace(d, wg_rows=8, warp_cols=8)),
        ("d wg 16x8 warp 8x4", "d", replace(d, wg_cols=8, warp_cols=4)),
        ("d r168", "d", replace(d, build_options=R168)),
        ("d tile 8x4 warp 4x8", "d", replace(d, tile_cols=4, warp_cols=8)),
        ("d tile 4x8 warp 4x8", "d", replace(d, tile_rows=4, warp_cols=8)),
        ("d tk4 warp 4x8", "d", replace(d, tile_k=4, warp_cols=8)),
        ("d no dbuf tk16 warp 4x8", "d", replace(d, tile_k=16, double_buffer=False, warp_cols=8)),
    ]
    return out


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    with open(OUT / "probe.log", "a") as f:
        f.write(line + "\n")


def ptxas_report(ctx, params: KernelParams, letter: str, label: str, ptx_dir: Path) -> dict:
    """Registers, spills and shared memory from ptxas, and the PTX written to ``ptx_dir``."""
    src = render(params, letter, guarded=False)
    program = cl.Program(ctx.context, src.source).build(options=list(src.options) + ["-cl-nv-verbose"],
                                                       devices=[ctx.device.cl_device])
    log = program.get_build_info(ctx.device.cl_device, cl.program_build_info.LOG)
    (ptx_dir / (re.sub(r"\W+", "_", label) + ".ptx")).write_bytes(program.binaries[0])
    info = {}
    for key, pattern in (("registers", r"Used (\d+) registers"), ("spill_stores", r"(\d+) bytes spill stores"),
                         ("spill_loads", r"(\d+) bytes spill loads"), ("stack", r"(\d+) bytes stack frame")):
        match = re.search(pattern, log)
        info[key] = int(match[1]) if match else None
    return info


def sample_power(seconds: float, work) -> dict:
    """Median SM clock (MHz), power (W) and temperature while ``work()`` is called for ``seconds``."""
    query = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
             "-lms", "50"]
    try:
        smi = subprocess.Popen(query, stdout=subprocess.PIPE, text=True)
    except FileNotFoundError:
        return {}
    until = time.time() + seconds
    while time.time() < until:
        work()
    smi.terminate()
    rows = [[float(x) for x in line.split(",")] for line in smi.communicate()[0].splitlines()
            if line.count(",") == 2 and "N/A" not in line]
    rows = rows[len(rows) // 4:]            # after the clock settles
    if not rows:
        return {}
    clock, power, temp = np.median(np.array(rows), axis=0)
    return {"sm_mhz": clock, "watts": power, "celsius": temp, "samples": len(rows)}


def main() -> None:
    gpu = autogemm.find_device(os.environ.get("TUNE_DEVICE", "gpu"))
    ctx = context_for(gpu)
    ptx_dir = OUT / "ptx"
    ptx_dir.mkdir(exist_ok=True)
    evaluators = {}
    rows = []
    say(f"| variant | {SIZE}^3 TFLOP/s | registers | spill bytes | configuration |")
    say("| --- | --- | --- | --- | --- |")
    for label, letter, params in variants():
        if not gpu.is_nvidia:          # a dry run elsewhere: no NVIDIA options
            params = replace(params, build_options=())
        if letter not in evaluators:
            evaluators[letter] = Evaluator(ctx, DTYPES[letter], SIZE, SIZE, SIZE, runs=10, slow_factor=float("inf"))
        try:
            info = ptxas_report(ctx, params, letter, label, ptx_dir)
        except Exception as exc:   # noqa: BLE001 - a variant that fails is reported, the probe goes on
            info = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        record = evaluators[letter].evaluate(params)
        rate = record.gflops / 1e3 if record.ok else 0.0
        row = {"label": label, "dtype": letter, "tflops": rate, "outcome": record.outcome.value,
               "message": record.message, "config": params.to_dict(), **info}
        rows.append(row)
        spills = (info.get("spill_stores") or 0) + (info.get("spill_loads") or 0)
        say(f"| {label} | {rate:.2f} | {info.get('registers')} | {spills} | {params.describe()} |"
            + ("" if record.ok else f" {record.outcome.value}: {record.message}"))
    power = {}
    for letter in ("s", "d"):
        best = max((r for r in rows if r["dtype"] == letter), key=lambda r: r["tflops"])
        if not best["tflops"]:
            continue
        ev = evaluators[letter]
        plan = ev.prepare(SimtParams.from_dict(best["config"]))
        power[f"{letter}gemm {best['label']}"] = sample_power(4.0, lambda: ev._enqueue(plan, 20)[1].wait())
        plan.release()
    for real, width in (("float", 4), ("double", 2)):
        program = ctx.program(fma_source(real, width, 4096))
        kernel = cl.Kernel(program, "bench_fma")
        items = gpu.compute_units * 2048
        out = cl.Buffer(ctx.context, cl.mem_flags.WRITE_ONLY, items * width * 8)
        kernel.set_args(out, np.float32(1) if real == "float" else np.float64(1))
        power[f"fma {real}{width}"] = sample_power(
            4.0, lambda: cl.enqueue_nd_range_kernel(ctx.queue, kernel, (items,), None).wait())
    for name, values in power.items():
        say(f"power during {name}: " + ", ".join(f"{k} {v:.0f}" for k, v in values.items()))
    (OUT / "probe.json").write_text(json.dumps({"rows": rows, "power": power}, indent=1))
    archive_ptx(ptx_dir)


def archive_ptx(ptx_dir: Path) -> None:
    """Pack the PTX files of ``ptx_dir`` into ptx.tgz beside it, and remove the folder."""
    with tarfile.open(ptx_dir.parent / "ptx.tgz", "w:gz") as tar:
        tar.add(ptx_dir, arcname="ptx")
    shutil.rmtree(ptx_dir)


if __name__ == "__main__":
    sys.exit(main())
