"""Issue 5, tensor-core experiments on the H100 in the nvidia_mma family: `python3 scripts/h100_mma.py GROUP`
with GROUP fp64 (DGEMM and ZGEMM through mma.sync on the FP64 tensor cores: m8n8k4, and sm_90's m16n8k4,
m16n8k8, m16n8k16), tf32 (SGEMM and CGEMM in the TF32 and 3xTF32 modes: m16n8k4, m16n8k8 .tf32),
complex (the 3M method against four real products) or half (float16 and bfloat16: m16n8k8, m16n8k16).

For each hand-picked configuration: registers and spills from ptxas, the rate at 4096^3 from profiling
events (checked against float64 on the device, as the tuner measures). Then the best of each dtype at 4096
and 8192 beside cuBLAS (torch, same process; in its TF32 mode too for the reduced precisions). Outputs in
$OUT: mma.log (the tables), mma.json, ptx.tgz. Run from the repository root with src/ on PYTHONPATH,
after `source .gpu/prelude.sh`."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from h100_probe import archive_ptx, ptxas_report  # noqa: E402

import autogemm  # noqa: E402
from autogemm.bench.peers import cublas_gemm  # noqa: E402
from autogemm.accuracy import (
    gemm_flops,  # noqa: E402
    random_matrix,  # noqa: E402
)
from autogemm.codelets.families import check  # noqa: E402
from autogemm.codelets.nvidia_mma import MmaParams  # noqa: E402
from autogemm.dtypes import DTYPES  # noqa: E402
from autogemm.runtime import context_for  # noqa: E402
from autogemm.tuning import Evaluator  # noqa: E402

OUT = Path(os.environ.get("OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)
SIZES = (4096, 8192)
R255 = ("-cl-nv-maxrregcount=255",)


def mma(shape, layout, warps, tiles, tile_k, stages, vw, copy="registers") -> MmaParams:
    return MmaParams(layout, shape, warps[0], warps[1], tiles[0], tiles[1], tile_k, stages, vw, "ptx", R255, copy)


def fp64_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 1 (m8n8k4 only) found every geometry at 27 to 30 TFLOP/s; run 2 sm_90's larger shapes (d 46.9,
    z 49.5); run 3 asynchronous copies (cp.async) for d against run 2's best."""
    d = [("d m16n8k8 128x128 w2x4 t4x4 k16 s1 (run 2 best)", mma("m16n8k8", "NT", (2, 4), (4, 4), 16, 1, 2))]
    for shape in ("m16n8k8", "m16n8k4"):
        for stages in (2, 3):
            d.append((f"d {shape} 128x128 w2x4 t4x4 k8 s{stages} async",
                      mma(shape, "NT", (2, 4), (4, 4), 8, stages, 2, "async")))
    d += [("d m16n8k8 128x128 w4x2 t2x8 k8 s3 async", mma("m16n8k8", "NT", (4, 2), (2, 8), 8, 3, 2, "async")),
          ("d m16n8k8 64x128 w2x4 t2x4 k8 s3 async", mma("m16n8k8", "NT", (2, 4), (2, 4), 8, 3, 2, "async")),
          ("d m16n8k8 64x64 w2x2 t2x4 k16 s2 async", mma("m16n8k8", "NT", (2, 2), (2, 4), 16, 2, 2, "async")),
          ("d m16n8k16 64x64 w2x2 t2x4 k16 s2 async", mma("m16n8k16", "NT", (2, 2), (2, 4), 16, 2, 2, "async")),
          ("d m16n8k16 64x64 w2x2 t2x4 k16 s2 (run 2)", mma("m16n8k16", "NT", (2, 2), (2, 4), 16, 2, 2))]
    z = [("z m16n8k8 128x64 w4x2 t2x4 k8 s2 (run 2 best)", mma("m16n8k8", "NT", (4, 2), (2, 4), 8, 2, 1))]
    return [(label, "d", p) for label, p in d] + [(label, "z", p) for label, p in z]


def tf32_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 4: the TF32 modes. 48 KB of local memory holds two stages of 128 x 128 blocks at K 16 (or one
    of 128 x 256); the float staging reads 16 bytes a lane (LANE_K 4, two m16n8k8 per read)."""
    s = [("m16n8k8 128x128 w2x4 t4x4 k16 s2", mma("m16n8k8", "NT", (2, 4), (4, 4), 16, 2, 4)),
         ("m16n8k8 128x128 w2x4 t4x4 k16 s1", mma("m16n8k8", "NT", (2, 4), (4, 4), 16, 1, 4)),
         ("m16n8k8 128x128 w4x2 t2x8 k16 s2", mma("m16n8k8", "NT", (4, 2), (2, 8), 16, 2, 4)),
         ("m16n8k8 128x256 w2x4 t4x8 k16 s2", mma("m16n8k8", "NT", (2, 4), (4, 8), 16, 2, 4)),
         ("m16n8k8 256x128 w4x2 t4x8 k16 s1", mma("m16n8k8", "NT", (4, 2), (4, 8), 16, 1, 4)),
         ("m16n8k8 128x128 w2x4 t4x4 k16 s3 async", mma("m16n8k8", "NT", (2, 4), (4, 4), 16, 3, 4, "async")),
         ("m16n8k8 64x128 w2x4 t2x4 k16 s2", mma("m16n8k8", "NT", (2, 4), (2, 4), 16, 2, 4)),
         ("m16n8k4 128x128 w2x4 t4x4 k16 s2", mma("m16n8k4", "NT", (2, 4), (4, 4), 16, 2, 4)),
         ("m16n8k8 128x128 w2x4 t4x4 k16 s2 NN", mma("m16n8k8", "NN", (2, 4), (4, 4), 16, 2, 4))]
    c = [("m16n8k8 128x64 w4x2 t2x4 k16 s2", mma("m16n8k8", "NT", (4, 2), (2, 4), 16, 2, 2)),
         ("m16n8k8 64x64 w2x2 t2x4 k16 s2", mma("m16n8k8", "NT", (2, 2), (2, 4), 16, 2, 2)),
         ("m16n8k8 128x64 w4x2 t2x4 k16 s1", mma("m16n8k8", "NT", (4, 2), (2, 4), 16, 1, 2))]
    return [(f"{key} {label}", key, p) for key in ("s.tf32", "s.3xtf32") for label, p in s] + \
           [(f"{key} {label}", key, p) for key in ("c.tf32", "c.3xtf32") for label, p in c]


def complex_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 5: the 3M method (three real products per complex one) against four, for z on the FP64
    tensor cores and c in the TF32 modes, at the tuned profile's best geometries."""
    z = mma("m16n8k8", "NT", (4, 2), (2, 4), 8, 2, 1)
    c = mma("m16n8k8", "NT", (2, 2), (2, 4), 16, 1, 4)
    rows = []
    for key, base in (("z", z), ("z", replace(z, tiles_n=2)), ("z", replace(z, warps_m=2, warps_n=4, tiles_m=2, tiles_n=2)),
                      ("c.tf32", c), ("c.3xtf32", c), ("c.3xtf32", replace(c, tiles_n=2))):
        for method in ("4m", "3m"):
            params = replace(base, complex_method=method)
            rows.append((f"{key} {params.describe()}", key, params))
    return rows


def half_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 6: float16 and bfloat16, 16 bytes a lane (LANE_K 8: two m16n8k16 per read). Two stages of
    128 x 128 blocks at K 32 take 32 KB of local memory; K 64 fits one stage of them."""
    h = [("m16n8k16 128x128 w2x4 t4x4 k32 s2 v4", mma("m16n8k16", "NT", (2, 4), (4, 4), 32, 2, 4)),
         ("m16n8k16 128x128 w2x4 t4x4 k32 s2 v2", mma("m16n8k16", "NT", (2, 4), (4, 4), 32, 2, 2)),
         ("m16n8k16 128x128 w2x4 t4x4 k64 s1 v4", mma("m16n8k16", "NT", (2, 4), (4, 4), 64, 1, 4)),
         ("m16n8k16 128x256 w2x4 t4x8 k32 s2 v4", mma("m16n8k16", "NT", (2, 4), (4, 8), 32, 2, 4)),
         ("m16n8k16 128x128 w4x2 t2x8 k32 s2 v4", mma("m16n8k16", "NT", (4, 2), (2, 8), 32, 2, 4)),
         ("m16n8k16 64x128 w2x4 t2x4 k32 s2 v4", mma("m16n8k16", "NT", (2, 4), (2, 4), 32, 2, 4)),
         ("m16n8k8 128x128 w2x4 t4x4 k32 s2 v4", mma("m16n8k8", "NT", (2, 4), (4, 4), 32, 2, 4)),
         ("m16n8k16 128x128 w2x4 t4x4 k32 s2 v4 NN", mma("m16n8k16", "NN", (2, 4), (4, 4), 32, 2, 4))]
    return [(f"{key} {label}", key, p) for key in ("h", "b") for label, p in h]


def half_async_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 7: cp.async for 16-bit operands (16-byte copies, vector_width 8): no registers spent on the
    next blocks, so three stages fit 128 x 128 blocks at K 32 in 48 KB, and two work-groups a
    multiprocessor may fit; against run 6's best (registers, 128 x 256, K 32, two stages)."""
    h = [("128x256 w2x4 t4x8 k32 s2 v8 (run 6 best, v8)", mma("m16n8k16", "NT", (2, 4), (4, 8), 32, 2, 8)),
         ("128x128 w2x4 t4x4 k32 s3 v8 async", mma("m16n8k16", "NT", (2, 4), (4, 4), 32, 3, 8, "async")),
         ("128x128 w2x4 t4x4 k32 s2 v8 async", mma("m16n8k16", "NT", (2, 4), (4, 4), 32, 2, 8, "async")),
         ("128x128 w2x4 t4x4 k32 s3 v4 async", mma("m16n8k16", "NT", (2, 4), (4, 4), 32, 3, 4, "async")),
         ("128x256 w2x4 t4x8 k32 s2 v8 async", mma("m16n8k16", "NT", (2, 4), (4, 8), 32, 2, 8, "async")),
         ("256x128 w4x2 t4x8 k32 s2 v8 async", mma("m16n8k16", "NT", (4, 2), (4, 8), 32, 2, 8, "async")),
         ("64x128 w2x4 t2x4 k32 s3 v8 async", mma("m16n8k16", "NT", (2, 4), (2, 4), 32, 3, 8, "async")),
         ("128x64 w4x2 t2x4 k32 s3 v8 async", mma("m16n8k16", "NT", (4, 2), (2, 4), 32, 3, 8, "async")),
         ("64x64 w2x2 t2x4 k64 s2 v8 async", mma("m16n8k16", "NT", (2, 2), (2, 4), 64, 2, 8, "async")),
         ("128x128 w4x4 t2x2 k32 s3 v8 async", mma("m16n8k16", "NT", (4, 4), (2, 2), 32, 3, 8, "async"))]
    return [(f"h {label}", "h", p) for label, p in h]


def pipeline_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 8: swizzled rows (no padding), 8-byte fragment reads, two fragment sets (the next chunk's read
    while this one multiplies, the next block's first across the barrier), against each dtype's tuned best.
    Keys: r8 = read_width 8, f2 = fragment_sets 2."""
    def v(shape, warps, tiles, tile_k, stages, vw, copy="async", read=16, sets=1):
        return replace(mma(shape, "NT", warps, tiles, tile_k, stages, vw, copy), read_width=read, fragment_sets=sets)

    h = [("tuned 128x64 w4x1 t2x8 k32 s3 v4", v("m16n8k16", (4, 1), (2, 8), 32, 3, 4)),
         ("128x64 w4x1 t2x8 k32 s3 v8 r8 f2", v("m16n8k16", (4, 1), (2, 8), 32, 3, 8, read=8, sets=2)),
         ("128x128 w2x4 t4x4 k32 s3 v8", v("m16n8k16", (2, 4), (4, 4), 32, 3, 8)),
         ("128x128 w2x4 t4x4 k32 s3 v8 r8 f2", v("m16n8k16", (2, 4), (4, 4), 32, 3, 8, read=8, sets=2)),
         ("128x128 w2x2 t4x8 k32 s3 v8 r8 f2", v("m16n8k16", (2, 2), (4, 8), 32, 3, 8, read=8, sets=2)),
         ("128x128 w2x2 t4x8 k32 s3 v8", v("m16n8k16", (2, 2), (4, 8), 32, 3, 8)),
         ("128x256 w2x4 t4x8 k32 s2 v8 r8 f2", v("m16n8k16", (2, 4), (4, 8), 32, 2, 8, read=8, sets=2)),
         ("256x128 w4x2 t4x8 k32 s2 v8 r8 f2", v("m16n8k16", (4, 2), (4, 8), 32, 2, 8, read=8, sets=2)),
         ("64x256 w1x4 t4x8 k32 s2 v8 r8 f2", v("m16n8k16", (1, 4), (4, 8), 32, 2, 8, read=8, sets=2)),
         ("128x64 w2x2 t4x4 k64 s2 v8 f2", v("m16n8k16", (2, 2), (4, 4), 64, 2, 8, sets=2)),
         ("128x64 w2x2 t4x4 k64 s2 v8 r8 f2", v("m16n8k16", (2, 2), (4, 4), 64, 2, 8, read=8, sets=2)),
         ("128x128 w2x4 t4x4 k64 s1 v8 regs f2", v("m16n8k16", (2, 4), (4, 4), 64, 1, 8, "registers", sets=2))]
    d = [("tuned 128x128 w2x4 t4x4 k16 s1 v2 regs", v("m16n8k8", (2, 4), (4, 4), 16, 1, 2, "registers")),
         ("128x64 w2x4 t4x2 k16 s2 v2 regs f2", v("m16n8k8", (2, 4), (4, 2), 16, 2, 2, "registers", sets=2)),
         ("128x128 w2x4 t4x4 k8 s3 v2", v("m16n8k8", (2, 4), (4, 4), 8, 3, 2)),
         ("128x64 w2x2 t4x4 k16 s2 v2 f2", v("m16n8k8", (2, 2), (4, 4), 16, 2, 2, sets=2)),
         ("64x128 w2x4 t2x4 k16 s2 v2 f2", v("m16n8k8", (2, 4), (2, 4), 16, 2, 2, sets=2))]
    s = [("tuned 128x64 w4x2 t2x8 k32 s1 v4 regs", v("m16n8k8", (4, 2), (2, 8), 32, 1, 4, "registers")),
         ("128x64 w4x2 t2x8 k32 s1 v4 regs f2", v("m16n8k8", (4, 2), (2, 8), 32, 1, 4, "registers", sets=2)),
         ("128x128 w2x4 t4x4 k16 s3 v4 r8 f2", v("m16n8k8", (2, 4), (4, 4), 16, 3, 4, read=8, sets=2)),
         ("128x128 w2x2 t4x8 k16 s3 v4 r8 f2", v("m16n8k8", (2, 2), (4, 8), 16, 3, 4, read=8, sets=2)),
         ("128x128 w2x4 t4x4 k32 s1 v4 regs f2", v("m16n8k8", (2, 4), (4, 4), 32, 1, 4, "registers", sets=2))]
    return ([(f"h {label}", "h", p) for label, p in h] + [(f"d {label}", "d", p) for label, p in d]
            + [(f"s.tf32 {label}", "s.tf32", p) for label, p in s])


def stash_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 9: the register-staged winners of the bundled profile after the swizzle (their stores to local
    memory one vector each), and the largest float16 tiles read 16 bytes a lane."""
    def v(shape, warps, tiles, tile_k, stages, vw, copy="registers", read=16, sets=1):
        return replace(mma(shape, "NT", warps, tiles, tile_k, stages, vw, copy), read_width=read, fragment_sets=sets)

    return [("d tuned 128x128 w2x4 t4x4 k16 s1 v2", "d", v("m16n8k8", (2, 4), (4, 4), 16, 1, 2)),
            ("z tuned 128x64 w4x2 t2x4 k8 s2 v2", "z", v("m16n8k8", (4, 2), (2, 4), 8, 2, 1)),
            ("s.tf32 tuned 128x64 w4x2 t2x8 k32 s1 v4", "s.tf32", v("m16n8k8", (4, 2), (2, 8), 32, 1, 4)),
            ("s.3xtf32 tuned 128x128 w2x4 t4x4 k32 s1 v4", "s.3xtf32", v("m16n8k8", (2, 4), (4, 4), 32, 1, 4)),
            ("c.tf32 tuned 128x64 w4x2 t2x4 k16 s2 v2", "c.tf32", v("m16n8k8", (4, 2), (2, 4), 16, 2, 2)),
            ("h 128x256 w2x4 t4x8 k32 s2 v8 async", "h", v("m16n8k16", (2, 4), (4, 8), 32, 2, 8, "async")),
            ("h 128x256 w2x4 t4x8 k32 s2 v8 async r8 f2", "h",
             v("m16n8k16", (2, 4), (4, 8), 32, 2, 8, "async", read=8, sets=2))]


def ldmatrix_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 10: float16 fragments read by ldmatrix (no register moves before the instructions), async copies."""
    def v(warps, tiles, tile_k, stages, sets=2, loads="ldmatrix", shape="m16n8k16"):
        return replace(mma(shape, "NT", warps, tiles, tile_k, stages, 8, "async"), read_width=8, fragment_sets=sets,
                       loads=loads)

    h = [("128x256 w2x4 t4x8 k32 s2 f2 lanes", v((2, 4), (4, 8), 32, 2, loads="lanes")),
         ("128x256 w2x4 t4x8 k32 s2 f2", v((2, 4), (4, 8), 32, 2)),
         ("128x256 w2x4 t4x8 k32 s2 f1", v((2, 4), (4, 8), 32, 2, sets=1)),
         ("256x128 w4x2 t4x8 k32 s2 f2", v((4, 2), (4, 8), 32, 2)),
         ("128x256 w2x4 t4x8 k16 s3 f1", v((2, 4), (4, 8), 16, 3, sets=1)),
         ("128x128 w2x4 t4x4 k32 s3 f2", v((2, 4), (4, 4), 32, 3)),
         ("128x128 w2x4 t4x4 k32 s3 f1", v((2, 4), (4, 4), 32, 3, sets=1)),
         ("128x128 w2x2 t4x8 k32 s3 f2", v((2, 2), (4, 8), 32, 3)),
         ("128x64 w4x1 t2x8 k32 s3 f2", v((4, 1), (2, 8), 32, 3)),
         ("128x64 w2x2 t4x4 k64 s2 f2", v((2, 2), (4, 4), 64, 2)),
         ("128x128 w2x4 t4x4 k32 s3 f2 m16n8k8", v((2, 4), (4, 4), 32, 3, shape="m16n8k8"))]
    return [(f"h {label}", "h", p) for label, p in h] + [(f"b {label}", "b", p) for label, p in h[1:2]]


def registers_ldmatrix_variants() -> list[tuple[str, str, MmaParams]]:
    """Run 11: ldmatrix with the next block fetched through registers (global loads through L1, then stores
    to local memory) instead of cp.async."""
    def v(warps, tiles, stages, sets):
        return replace(mma("m16n8k16", "NT", warps, tiles, 32, stages, 8), read_width=8, fragment_sets=sets,
                       loads="ldmatrix")

    h = [("128x256 w2x4 t4x8 k32 s2 regs f2", v((2, 4), (4, 8), 2, 2)),
         ("128x256 w2x4 t4x8 k32 s2 regs f1", v((2, 4), (4, 8), 2, 1)),
         ("256x128 w4x2 t4x8 k32 s2 regs f2", v((4, 2), (4, 8), 2, 2)),
         ("128x128 w2x4 t4x4 k32 s2 regs f2", v((2, 4), (4, 4), 2, 2))]
    return [(f"h {label}", "h", p) for label, p in h]


GROUPS = {"fp64": fp64_variants, "tf32": tf32_variants, "complex": complex_variants, "half": half_variants,
          "half-async": half_async_variants, "pipeline": pipeline_variants,
          "stash": stash_variants, "ldmatrix": ldmatrix_variants,
          "registers-ldmatrix": registers_ldmatrix_variants}


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    with open(OUT / "mma.log", "a") as f:
        f.write(line + "\n")


def cublas_rate(key: str, n: int, tf32: bool = False) -> float | None:
    dt = DTYPES[key]
    rng = np.random.default_rng(0)
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    result = cublas_gemm(a, b, runs=5, tf32=tf32)
    return None if result is None else gemm_flops(dt, n, n, n) / result.seconds / 1e12


def main() -> None:
    group = sys.argv[1] if len(sys.argv) > 1 else "fp64"
    gpu = autogemm.find_device(os.environ.get("TUNE_DEVICE", "gpu"))
    ctx = context_for(gpu)
    say(f"device {gpu.name.strip()}, local memory {gpu.local_mem_bytes} bytes, facts {gpu.vendor_facts}")
    ptx_dir = OUT / "ptx"
    ptx_dir.mkdir(exist_ok=True)
    evaluators: dict[tuple[str, int], Evaluator] = {}

    def evaluator(letter: str, n: int) -> Evaluator:
        if (letter, n) not in evaluators:
            evaluators[(letter, n)] = Evaluator(ctx, DTYPES[letter], n, n, n, runs=5, slow_factor=float("inf"))
        return evaluators[(letter, n)]

    rows = []
    say(f"| variant | {SIZES[0]}^3 TFLOP/s | registers | spill bytes | configuration |")
    say("| --- | --- | --- | --- | --- |")
    for label, letter, params in GROUPS[group]():
        reason = check(params, gpu, letter)
        if reason:
            say(f"| {label} | skipped: {reason} | | | |")
            continue
        try:
            info = ptxas_report(ctx, params, letter, label, ptx_dir)
        except Exception as exc:   # noqa: BLE001 - a variant that fails is reported, the run goes on
            info = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        record = evaluator(letter, SIZES[0]).evaluate(params)
        rate = record.gflops / 1e3 if record.ok else 0.0
        rows.append({"label": label, "dtype": letter, "tflops": rate, "outcome": record.outcome.value,
                     "message": record.message, "error": record.error, "config": params.to_dict(), **info})
        spills = (info.get("spill_stores") or 0) + (info.get("spill_loads") or 0)
        say(f"| {label} | {rate:.2f} | {info.get('registers')} | {spills} | {params.describe()} |"
            + ("" if record.ok else f" {record.outcome.value}: {record.message} {info.get('error', '')}"))
    say("")
    say("| dtype | n | autogemm mma | error | cuBLAS | ratio | cuBLAS TF32 | ratio | best variant |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    summary = []
    for letter in dict.fromkeys(r["dtype"] for r in rows):
        candidates = [r for r in rows if r["dtype"] == letter and r["tflops"]]
        if not candidates:
            continue
        best = max(candidates, key=lambda r: r["tflops"])
        params = MmaParams.from_dict({k: v for k, v in best["config"].items() if k != "family"})
        for n in SIZES:
            record = evaluator(letter, n).evaluate(params)
            ours = record.gflops / 1e3 if record.ok else 0.0
            theirs = cublas_rate(letter, n)
            fast = cublas_rate(letter, n, tf32=True) if DTYPES[letter].precision else None
            ratio = ours / theirs if theirs else float("nan")
            fast_ratio = ours / fast if fast else float("nan")
            summary.append({"dtype": letter, "n": n, "autogemm": ours, "error": record.error, "cublas": theirs,
                            "cublas_tf32": fast, "label": best["label"]})
            say(f"| {letter} | {n} | {ours:.2f} | {record.error or float('nan'):.1e} | {theirs or float('nan'):.2f} | "
                f"{ratio:.2f} | {fast or float('nan'):.2f} | {fast_ratio:.2f} | {best['label']} |")
            if n != SIZES[0]:
                evaluators.pop((letter, n)).release()
    (OUT / "mma.json").write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    archive_ptx(ptx_dir)


if __name__ == "__main__":
    sys.exit(main())
