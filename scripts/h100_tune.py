"""Issue 3 on the GPU machine, one phase per call (the first argument):

  builds                compile throughput: one at a time, on 15 threads, and in 15 worker processes
  default               `autogemm tune` on the GPU with the default strategy and budget, all dtypes, timed
  exhaustive L BUDGET   the exhaustive strategy on the large class of dtype L (resumes from the checkpoint)
  clblast-tune L...      CLBlast's own tuner (clblast_tuner_xgemm) for each dtype L, results in $CLBLAST_TUNED
  peers                 the profile's best of each dtype at its large shape, next to cuBLAS, CLBlast and
                        numpy in the same process, every result checked against a float64 reference

The cache (profiles, checkpoints) is $AUTOGEMM_CACHE_DIR; logs, and the cache as cache.tgz, go to $OUT. Run from the repository root with src/ on PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(os.environ.get("OUT", "out"))
OUT.mkdir(parents=True, exist_ok=True)


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    with open(OUT / "h100_tune.log", "a") as f:
        f.write(line + "\n")


def cli(*args: str) -> float:
    """Run the autogemm command line, log its output, return its wall time."""
    started = time.time()
    with open(OUT / f"cli-{args[0]}-{int(started)}.log", "w") as log:
        proc = subprocess.run([sys.executable, "-m", "autogemm.cli", *args], stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "COLUMNS": "160"})
    seconds = time.time() - started
    say(f"autogemm {' '.join(args)}: exit {proc.returncode}, {seconds:.0f} s")
    return seconds


def copy_cache() -> None:
    """Profiles and checkpoints to $OUT as one archive (few files come back from the machine); the
    next call resumes from it, unpacked into its cache directory."""
    cache = Path(os.environ["AUTOGEMM_CACHE_DIR"])
    present = [sub for sub in ("profiles", "checkpoints") if (cache / sub).is_dir()]
    if present:
        subprocess.run(["tar", "czf", str(OUT / "cache.tgz"), "--exclude=*.lock", "--exclude=*.tmp", *present],
                       cwd=cache, check=True)


CLBLAST_TUNED = Path(os.environ.get("CLBLAST_TUNED", "clblast-tuned"))


def clblast_tune(letters: list[str], seconds: int, size: int = 2048, fraction: str | None = None) -> None:
    """Run clblast_tuner_xgemm per dtype, at most ``seconds`` each, in $CLBLAST_TUNED: with its default
    search (every variant in turn: the fixed sets in full, a random part of the large ones) unless
    ``fraction`` sets the part (1/fraction) of every variant. Each variant writes its JSON when done."""
    from autogemm.bench.peers import CLBLAST_PRECISION as precision

    CLBLAST_TUNED.mkdir(exist_ok=True)
    # CLBlast's tools number platforms in their loader's order, PoCL first on the H100 machine: NVIDIA is
    # platform 1 there ($CLBLAST_PLATFORM to change; a private ICD directory did not take, the tuner ran on
    # the CPU). Its log names the device: check it.
    platform = os.environ.get("CLBLAST_PLATFORM", "1")
    for letter in letters:
        args = ["timeout", str(seconds), "clblast_tuner_xgemm", "-platform", platform, "-device", "0",
                "-precision", str(precision[letter]), "-m", str(size), "-n", str(size), "-k", str(size)]
        if fraction:
            args += ["-fraction", fraction]
        started = time.time()
        with open(OUT / f"clblast-tuner-{letter}.log", "w") as log:
            proc = subprocess.run(args, cwd=CLBLAST_TUNED, stdout=log, stderr=subprocess.STDOUT)
        files = sorted(CLBLAST_TUNED.glob(f"clblast_xgemm_*_{precision[letter]}.json"))
        say(f"clblast_tuner_xgemm {letter}: exit {proc.returncode} after {time.time() - started:.0f} s, "
            f"{', '.join(f.name for f in files)}")


def peers() -> None:
    import autogemm
    from autogemm.bench.peers import clblast_gemm, clblast_override, clblast_tuned_from, cublas_gemm, numpy_gemm
    from autogemm.accuracy import gemm_flops, random_matrix, relative_error, tolerance
    from autogemm.dtypes import DTYPES
    from autogemm.profiles import profile_for
    from autogemm.runtime import context_for
    from autogemm.tuning import Evaluator

    gpu = autogemm.find_device(os.environ.get("TUNE_DEVICE", "gpu"))
    ctx = context_for(gpu)
    prof = profile_for(gpu)
    rows = []
    for letter, entries in prof.dtypes.items():
        dt = DTYPES[letter]
        entry = next(e for e in entries if e.name == "large")
        m, n, k = entry.shape
        flops = gemm_flops(dt, m, n, k)
        ev = Evaluator(ctx, dt, m, n, k, runs=10, slow_factor=float("inf"))
        record = ev.evaluate(entry.ranked[0].config)
        ev.release()
        ours = record.gflops / 1e3 if record.ok else 0.0
        row = {"dtype": letter, "n": n, "autogemm": ours, "autogemm_error": record.error,
               "config": entry.ranked[0].config.describe(), "tuned_rate": entry.ranked[0].gflops / 1e3}
        rng = np.random.default_rng(11)
        a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
        ref = a.astype(dt.reference_numpy) @ b.astype(dt.reference_numpy)
        def clblast_tuned():
            params = clblast_tuned_from(CLBLAST_TUNED, letter)
            if params is None:
                return None
            row["CLBlast_tuned_parameters"] = params
            clblast_override(ctx, dt, params)
            return clblast_gemm(ctx, dt, a, b)

        for name, call in (("cuBLAS", lambda: cublas_gemm(a, b)), ("CLBlast", lambda: clblast_gemm(ctx, dt, a, b)),
                           ("CLBlast_tuned", clblast_tuned), ("numpy", lambda: numpy_gemm(a, b))):
            try:
                res = call()
            except Exception as exc:  # a peer that fails is reported, the run goes on
                say(f"  {letter} {name} failed: {type(exc).__name__}: {exc}")
                continue
            if res is None:
                continue
            err = relative_error(res.result, ref)
            row[name] = flops / res.seconds / 1e12 if err < tolerance(dt, k) else 0.0
            row[f"{name}_error"] = err
        rows.append(row)
        say(json.dumps(row))
    (OUT / "peers.json").write_text(json.dumps(rows, indent=1))
    say("\n| dtype n | autogemm tuned | cuBLAS | CLBlast | CLBlast tuned | numpy | / cuBLAS | / CLBlast | "
        "/ CLBlast tuned |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        peer = {name: r.get(name, 0.0) for name in ("cuBLAS", "CLBlast", "CLBlast_tuned", "numpy")}
        ratios = " | ".join(f"{r['autogemm'] / v:.2f}" if v else "-" for v in
                            (peer["cuBLAS"], peer["CLBlast"], peer["CLBlast_tuned"]))
        say(f"| {r['dtype']} {r['n']} | {r['autogemm']:.2f} | " + " | ".join(f"{v:.2f}" for v in peer.values())
            + f" | {ratios} |")


def builds() -> None:
    """Kernels compiled per second in-process (serially, and on 15 threads) and in 15 worker processes
    (each distinct, so no cache answers), and what loading a worker's binary costs."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    import autogemm
    from autogemm.codelets.simt import render
    from autogemm.dtypes import DTYPES
    from autogemm.runtime.context import DeviceContext
    from autogemm.tuning.simt_space import simt_space

    gpu = autogemm.find_device(os.environ.get("TUNE_DEVICE", "gpu"))
    space = simt_space(gpu, DTYPES["s"])
    points = random.Random(5).sample(list(space.points()), 52)
    sources = [(src.source, src.options) for src in (render(space.config(p), "s", guarded=False) for p in points)]
    serial, threaded, pooled = sources[:4], sources[4:28], sources[28:]

    def build_all(ctx: DeviceContext, batch, workers: int) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda src: ctx.program(*src), batch))
        return time.perf_counter() - started

    ctx = DeviceContext(gpu)
    one = [build_all(ctx, [src], 1) for src in serial]
    say(f"builds: one at a time {np.median(one):.2f} s each ({', '.join(f'{t:.2f}' for t in one)})")
    seconds = build_all(ctx, threaded, 15)
    say(f"builds: {len(threaded)} on 15 threads in {seconds:.1f} s = {len(threaded) / seconds:.1f}/s")
    started = time.perf_counter()
    with ctx.building_in_processes(15):
        build_all(ctx, [(f"__kernel void k{i}(__global float* x) {{ x[0] = {i}; }}", ()) for i in range(15)], 15)
        say(f"builds: 15 worker processes started in {time.perf_counter() - started:.1f} s")
        seconds = build_all(ctx, pooled, 15)
        say(f"builds: {len(pooled)} in 15 processes in {seconds:.1f} s = {len(pooled) / seconds:.1f}/s")
        pool = ctx._build_pool
        binary = pool.compile(serial[0][0] + "\n// again", serial[0][1])
    import pyopencl as cl
    started = time.perf_counter()
    cl.Program(ctx.context, [gpu.cl_device], [binary]).build(options=list(serial[0][1]))
    say(f"builds: loading one worker's binary took {time.perf_counter() - started:.3f} s")


def main() -> None:
    phase = sys.argv[1]
    device = os.environ.get("TUNE_DEVICE", "gpu")
    try:
        if phase == "builds":
            builds()
        elif phase == "default":
            cli("tune", "-d", device)
        elif phase == "exhaustive":
            letter, budget = sys.argv[2], sys.argv[3]
            cli("tune", "-d", device, "--dtype", letter, "--strategy", "exhaustive", "--budget", budget,
                "--size-class", "large")
        elif phase == "clblast-tune":
            clblast_tune(sys.argv[2:], int(os.environ.get("CLBLAST_SECONDS", "150")),
                         fraction=os.environ.get("CLBLAST_FRACTION"))
        elif phase == "peers":
            peers()
        else:
            raise SystemExit(f"unknown phase {phase}")
    finally:
        copy_cache()


if __name__ == "__main__":
    main()
