"""Issue 2 on the GPU machine: device discovery (with and without an ICD file for NVIDIA), the codelet
sample of the test suite run on every GPU, and SGEMM/DGEMM at n=4096 for the default configuration and a
small set of GPU-shaped ones, next to cuBLAS, CLBlast and numpy in the same run.

Run from the repository root with src/ and tests/ on PYTHONPATH; writes logs to $OUT (or ./out)."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import numpy as np
from codelet_sample import build_sample
from gemm_check import run_and_check

import autogemm
from autogemm.bench.peers import clblast_gemm, cublas_gemm, numpy_gemm
from autogemm.blas import GemmProblem, LaunchPlan, default_params
from autogemm.accuracy import random_matrix, relative_error
from autogemm.codelets.simt import SimtParams, check
from autogemm.dtypes import DTYPES
from autogemm.runtime import context_for, median, time_enqueue

OUT = os.environ.get("OUT", "out")
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "h100_core_check.log"), "w")


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    LOG.write(line + "\n")
    LOG.flush()


def sample_on(device) -> dict:
    ctx = context_for(device)
    cases = build_sample(device)
    failures = []
    start = time.time()
    for i, case in enumerate(cases):
        rng = np.random.default_rng(i)
        try:
            run_and_check(ctx, case.params, DTYPES[case.dtype], case.m, case.n, case.k, case.trans[0],
                          case.trans[1], case.alpha, case.beta, case.edge, rng, case.extra_ld, case.offset)
        except Exception as exc:  # every failure is recorded with its configuration, the run goes on
            failures.append({"index": i, "case": case.id, "params": case.params.to_dict(),
                             "error": f"{type(exc).__name__}: {str(exc)[:2000]}"})
            say(f"  FAIL {i} {case.id} {case.params.describe()}: {type(exc).__name__}: {str(exc)[:300]}")
    say(f"sample on {device.label}: {len(cases)} cases, {len(failures)} failures, {time.time() - start:.0f} s")
    return {"device": device.label, "cases": len(cases), "failures": failures}


GPU_CANDIDATES = {
    "s": [dict(tile_rows=8, tile_cols=8, tile_k=tk, vector_width=4, wg_rows=16, wg_cols=16, double_buffer=db,
               local_pad=pad, build_options=opt)
          for tk in (8, 16) for db in (True, False) for pad in (False, True) for opt in ((), ("-cl-nv-maxrregcount=255",))]
         + [dict(tile_rows=8, tile_cols=4, tile_k=16, vector_width=4, wg_rows=16, wg_cols=16, double_buffer=True),
            dict(tile_rows=4, tile_cols=8, tile_k=16, vector_width=4, wg_rows=32, wg_cols=8, double_buffer=True),
            dict(tile_rows=8, tile_cols=8, tile_k=8, vector_width=4, wg_rows=8, wg_cols=32, double_buffer=True),
            dict(layout="NN", tile_rows=8, tile_cols=8, tile_k=16, vector_width=4, double_buffer=True),
            dict(layout="NT", tile_rows=8, tile_cols=8, tile_k=16, vector_width=4, double_buffer=True),
            dict(assignment="consecutive", tile_rows=8, tile_cols=8, tile_k=16, vector_width=4, double_buffer=True)],
    "d": [dict(tile_rows=tr, tile_cols=tc, tile_k=tk, vector_width=vw, wg_rows=16, wg_cols=16, double_buffer=True,
               build_options=("-cl-nv-maxrregcount=255",))
          for tr, tc in ((4, 4), (8, 4), (4, 8), (8, 8)) for tk in (8, 16) for vw in (2, 4)],
}


def bench_gemm(device, letter: str, n: int) -> list[dict]:
    ctx = context_for(device)
    dt = DTYPES[letter]
    rng = np.random.default_rng(7)
    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    flops = 2.0 * n**3
    rows = []
    base = default_params(device, dt)
    configs = [("default", base)] + [(f"cand{i}", SimtParams(**{**base.to_dict(), **c, "build_options": tuple(c.get("build_options", ()))}))
                                     for i, c in enumerate(GPU_CANDIDATES[letter])]
    import pyopencl as cl
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, np.full((n, n), np.nan, dt.numpy))]
    problem = GemmProblem.dense(dt, n, n, n)
    for name, params in configs:
        reason = check(params, device, dt)
        if reason:
            rows.append({"name": name, "config": params.describe(), "error": reason})
            continue
        try:
            plan = LaunchPlan(ctx, problem, params, "auto")
            cl.enqueue_fill_buffer(ctx.queue, bufs[2], np.array(np.nan, dt.numpy), 0, n * n * dt.itemsize)
            times = time_enqueue(lambda: plan.enqueue(*bufs, 1.0, 0.0), warmup=2, runs=5)
            got = np.empty((n, n), dt.numpy)
            cl.enqueue_copy(ctx.queue, got, bufs[2])
            err = relative_error(got, ref)
            t = median(times)
            rows.append({"name": name, "config": params.describe(), "plan": plan.describe(), "seconds": t,
                         "tflops": flops / t / 1e12, "error": f"{err:.1e}", "ok": bool(err < dt.tolerance)})
            plan.release()
        except Exception as exc:
            rows.append({"name": name, "config": params.describe(), "error": f"{type(exc).__name__}: {str(exc)[:500]}"})
        say(f"  {letter} {name}: {rows[-1]}")
    for peer in (lambda: cublas_gemm(a, b), lambda: clblast_gemm(ctx, dt, a, b), lambda: numpy_gemm(a, b)):
        try:
            res = peer()
        except Exception as exc:
            say(f"  peer failed: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        if res is None:
            continue
        err = relative_error(res.result, ref)
        rows.append({"name": res.name, "seconds": res.seconds, "tflops": flops / res.seconds / 1e12,
                     "error": f"{err:.1e}", "ok": bool(err < dt.tolerance)})
        say(f"  {letter} {res.name}: {rows[-1]}")
    return rows


def main() -> None:
    from autogemm.runtime import discovery
    devices = autogemm.list_devices()
    say("icd note:", discovery.icd_note)
    for d in devices:
        say("device", d.label, d.device_type, d.fingerprint, json.dumps(d.vendor_facts))
    report = {"devices": [d.label for d in devices], "icd_note": discovery.icd_note, "sample": [], "bench": {}}
    gpus = [d for d in devices if d.is_gpu]
    for d in gpus:
        report["sample"].append(sample_on(d))
    n = int(os.environ.get("BENCH_N", "4096"))
    for d in gpus:
        for letter in "sd":
            report["bench"][f"{d.label} {letter}"] = bench_gemm(d, letter, n)
    with open(os.path.join(OUT, "h100_core_check.json"), "w") as f:
        json.dump(report, f, indent=1)
    say("\n=== summary ===")
    for s in report["sample"]:
        say(f"sample {s['device']}: {s['cases']} cases, {len(s['failures'])} failures")
    for key, rows in report["bench"].items():
        say(f"-- {key} n={n}")
        best = max((r for r in rows if r.get("ok") and r["name"] not in ("cuBLAS", "CLBlast", "numpy")),
                   key=lambda r: r["tflops"], default=None)
        for r in rows:
            if "tflops" in r and (r["name"] in ("default", "cuBLAS", "CLBlast", "numpy") or r is best):
                say(f"   {r['name']:8s} {r['tflops']:7.2f} TFLOP/s  err {r['error']}  {r.get('config', '')}")


if __name__ == "__main__":
    sys.exit(main())
