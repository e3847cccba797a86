"""Issue 5: where an nvidia_mma kernel's time goes on the H100, for the speed work on the main loop.

1. (with --occupancy) mma.sync's ceiling (float16, m16n8k16) against the warps a multiprocessor holds and the independent
   accumulators each warp has: can 8 warps (two a scheduler) keep the tensor cores busy?
2. For each configuration of the dtype given (``--dtype hs``, the default: the kernel alone, no merge, at
   4096^3; ``--dtype d``: at 8192^3), the time of the kernel and of
   copies of it with one part of the main loop taken out: the barriers, the copies of later K blocks
   (or their sources: always the first block's, in L2; or the waits for them), the fragment reads (replaced by values from registers), or the instructions (replaced by two integer
   operations), or with 16-byte copies cached in L2 only (.cg) instead of in L1 too (.ca).
   The results of all but the last are wrong; only their times matter.
3. The SASS of each configuration (PTX from NVIDIA's OpenCL compiler, assembled for sm_90 by the ptxas
   that ships with Triton, disassembled by its nvdisasm or cuobjdump) and the count of each instruction.

Outputs in $OUT: anatomy.log, anatomy.json, sass.tgz. Run from the repository root with src/ on
PYTHONPATH, after `source .gpu/prelude.sh`."""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).parent))
from h100_mma_peak import kernel as peak_kernel  # noqa: E402

import autogemm  # noqa: E402
from autogemm.codelets.nvidia_mma import SHAPES, MmaParams  # noqa: E402
from autogemm.dtypes import DTYPES  # noqa: E402
from autogemm.runtime import context_for  # noqa: E402
from autogemm.runtime.timing import median, time_enqueue  # noqa: E402
from autogemm.tuning import Evaluator  # noqa: E402

OUT = Path(os.environ.get("OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)
N = 4096
R255 = ("-cl-nv-maxrregcount=255",)


def config(warps, tiles, tile_k, stages, vw=8, copy="async", read=8, sets=2, loads="ldmatrix", shape="m16n8k16"
           ) -> MmaParams:
    return MmaParams("NT", shape, warps[0], warps[1], tiles[0], tiles[1], tile_k, stages, vw, "ptx", R255, copy,
                     read_width=read, fragment_sets=sets, loads=loads)


#: The configurations taken apart, per dtype (``--dtype``; hs by default).
CONFIGS = {
    "hs": {
        "128x256 w2x4 t4x8 k32 s2 ldmatrix f2": config((2, 4), (4, 8), 32, 2),
        "256x128 w4x2 t4x8 k32 s2 ldmatrix f2": config((4, 2), (4, 8), 32, 2),
        "128x128 w2x4 t4x4 k32 s3 ldmatrix f1": config((2, 4), (4, 4), 32, 3, sets=1),
        "tuned 128x128 w2x4 t4x4 k32 s3 ldmatrix f1 v4": config((2, 4), (4, 4), 32, 3, vw=4, sets=1),
    },
    "d": {
        "tuned at 8192: m16n8k4 128x64 w4x1 t2x8 k8 s3": config((4, 1), (2, 8), 8, 3, 2, read=16, sets=1, loads="lanes",
                                                              shape="m16n8k4"),
        "tuned at 4096: m16n8k8 64x64 w2x2 t2x4 k16 s3 f2": config((2, 2), (2, 4), 16, 3, 2, read=16, loads="lanes",
                                                                  shape="m16n8k8"),
        "m16n8k8 128x128 w4x2 t2x8 k16 registers s1": config((4, 2), (2, 8), 16, 1, 2, "registers", 16, 1, "lanes",
                                                             "m16n8k8"),
        "m16n8k16 128x64 w4x1 t2x8 k16 s2": config((4, 1), (2, 8), 16, 2, 2, read=16, sets=1, loads="lanes",
                                                   shape="m16n8k16"),
        "m16n8k8 128x128 w4x2 t2x8 k8 s3": config((4, 2), (2, 8), 8, 3, 2, read=16, sets=1, loads="lanes",
                                                  shape="m16n8k8"),
        "m16n8k4 128x128 w4x2 t2x8 k8 s3": config((4, 2), (2, 8), 8, 3, 2, read=16, sets=1, loads="lanes",
                                                  shape="m16n8k4"),
        "m16n8k8 128x64 w4x1 t2x8 k8 s3": config((4, 1), (2, 8), 8, 3, 2, read=16, sets=1, loads="lanes",
                                                 shape="m16n8k8"),
    },
}
#: Per dtype: what the fragment reads become when they are taken out, and an instruction's stand-in.
STAND_INS = {
    "hs": ("(lane_read)(k0 + lane)", ("asm(\"mma.sync", "c[0] = as_float(as_uint(c[0]) ^ a0 ^ b0); if (0) asm(\"mma.sync")),
    "d": ("(double2)((double)(k0 + lane))", ("asm(\"mma.sync", "c[0] += a0 * b0; if (0) asm(\"mma.sync")),
}


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    with open(OUT / "anatomy.log", "a") as f:
        f.write(line + "\n")


def occupancy(ctx) -> list[dict]:
    """mma.sync f16 m16n8k16 from registers at several warps per multiprocessor and chains per warp."""
    rows = []
    say("| warps per SM | chains per warp | TFLOP/s |")
    say("| --- | --- | --- |")
    units = ctx.device.compute_units
    for warps, groups in ((4, 1), (8, 1), (4, 2), (4, 4), (8, 2)):
        for chains in (4, 8, 16):
            source = peak_kernel("f16", "m16n8k16", chains=chains)
            program = cl.Program(ctx.context, source).build(options=list(R255))
            knl = program.peak
            out = cl.Buffer(ctx.context, cl.mem_flags.WRITE_ONLY, units * groups * warps * 32 * 4)
            knl.set_args(out, np.float32(1e-3))
            size, local = units * groups * warps * 32, warps * 32
            times = time_enqueue(lambda: [cl.enqueue_nd_range_kernel(ctx.queue, knl, (size,), (local,))], runs=3)
            geometry = SHAPES["m16n8k16"]
            flops = 2 * geometry.m * geometry.n * geometry.k * chains * 4096 * units * groups * warps
            rate = flops / median(times) / 1e12
            rows.append({"warps_per_sm": warps * groups, "groups": groups, "chains": chains, "tflops": rate})
            say(f"| {warps * groups} ({groups} groups) | {chains} | {rate:.1f} |")
            out.release()
    return rows


def ablations(fragment: str) -> dict:
    """Edits of the main loop that take one part out; ``fragment`` stands in for a fragment read."""
    return {
        "no barriers in the loop": lambda loop: loop.replace("barrier(CLK_LOCAL_MEM_FENCE);", ""),
        "no copies of later blocks": lambda loop: loop.replace("if (k0 + STAGES * TILE_K < K)", "if (K < 0)")
        .replace("if (more) {", "if (K < 0) {"),
        "later copies of block 0 (L2 hits)": lambda loop: loop.replace("k0 + STAGES * TILE_K + kk", "kk")
        .replace("k0 + TILE_K + kk", "kk"),
        "no waits for copies": lambda loop: re.sub(r"copy_wait\(\d\);", "", loop),
        "no fragment reads": lambda loop: re.sub(
            r"load_matrices_x(\d)\([^;]*\)", r"(uint\1)(k0 + lane)",
            re.sub(r"\*\(const __local lane_(?:read|piece)\*\)\([^;]*?lane_in_chunk\)", fragment, loop)),
    }


def ablated(source: str, key: str) -> dict[str, str]:
    """The kernel with parts of its main loop (from ``for (int k0``) taken out."""
    fragment, no_mma = STAND_INS[key]
    head, loop = source.split("for (int k0", 1)
    variants = {name: head + "for (int k0" + edit(loop) for name, edit in ablations(fragment).items()}
    variants["no instructions"] = source.replace(*no_mma)
    variants["16-byte copies in L2 only (.cg)"] = source.replace("cp.async.ca.shared.global [%0], [%1], 16,",
                                                                  "cp.async.cg.shared.global [%0], [%1], 16,")
    return variants


def tool(name: str) -> str | None:
    """A CUDA binary tool: on PATH, or shipped inside Triton."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import triton
    except ImportError:
        return None
    for path in Path(triton.__file__).parent.rglob(name):
        if os.access(path, os.X_OK):
            return str(path)
    return None


def sass(ctx, source: str, options: list[str], label: str) -> dict:
    """Assemble the PTX NVIDIA's OpenCL compiler makes of ``source`` for sm_90; count the instructions."""
    program = cl.Program(ctx.context, source).build(options=options)
    directory = OUT / "sass"
    directory.mkdir(exist_ok=True)
    stem = directory / re.sub(r"\W+", "_", label)
    stem.with_suffix(".ptx").write_bytes(program.binaries[0].rstrip(b"\0"))
    ptxas, disassembler = tool("ptxas"), tool("nvdisasm") or tool("cuobjdump")
    if not ptxas or not disassembler:
        return {"error": f"ptxas {ptxas}, disassembler {disassembler}"}
    run = subprocess.run([ptxas, "-arch=sm_90", "-O3", "-v", str(stem.with_suffix(".ptx")), "-o",
                          str(stem.with_suffix(".cubin"))], capture_output=True, text=True)
    if run.returncode:
        return {"error": run.stderr[-500:]}
    args = [disassembler, "-c", str(stem.with_suffix(".cubin"))] if disassembler.endswith("nvdisasm") else \
        [disassembler, "-sass", str(stem.with_suffix(".cubin"))]
    text = subprocess.run(args, capture_output=True, text=True).stdout
    stem.with_suffix(".sass").write_text(text)
    opcodes = collections.Counter(m[1].split(".")[0] for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", text))
    return {"ptxas": run.stderr.strip()[-300:], "opcodes": dict(opcodes.most_common(20))}


def main() -> None:
    gpu = autogemm.find_device(os.environ.get("TUNE_DEVICE", "gpu"))
    ctx = context_for(gpu)
    say(f"device {gpu.name.strip()}")
    result = {"occupancy": occupancy(ctx) if "--occupancy" in sys.argv else [], "kernels": {}}
    key = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "hs"
    n = N * 2 if key == "d" else N
    evaluator = Evaluator(ctx, DTYPES[key], n, n, n, runs=5, slow_factor=float("inf"))
    flops = 2 * n ** 3
    names = list(ablations("")) + ["no instructions", "16-byte copies in L2 only (.cg)"]
    say(f"\n| configuration ({key}, {n}^3) | full kernel | " + " | ".join(names) + " |")
    say("| --- " * (2 + len(names)) + "|")
    for label, params in CONFIGS[key].items():
        record = evaluator.evaluate(params)
        plan = evaluator.prepare(params)
        src = plan.kernel_source
        rates = {"full kernel": record.gflops / 1e3 if record.ok else 0.0}
        for name, source in ablated(src.source, key).items():
            plan.gemm_kernel = ctx.kernel(source, src.name, src.options)
            plan._last_args.clear()
            seconds = median(time_enqueue(lambda: plan.enqueue(evaluator.a, evaluator.b, evaluator.c), runs=5))
            rates[name] = flops / seconds / 1e12
        plan.release()
        say(f"| {label} | " + " | ".join(f"{rate:.1f}" for rate in rates.values()) + " |")
        info = sass(ctx, src.source, list(src.options), label)
        say(f"  {label}: {json.dumps(info.get('opcodes') or info)}")
        result["kernels"][label] = {"config": params.to_dict(), "tflops": rates, **info}
    (OUT / "anatomy.json").write_text(json.dumps(result, indent=1))
    if (OUT / "sass").exists():       # one archive: the files that come back are few
        subprocess.run(["tar", "czf", str(OUT / "sass.tgz"), "-C", str(OUT), "sass"], check=True)
        shutil.rmtree(OUT / "sass")


if __name__ == "__main__":
    sys.exit(main())
