"""Issue 3 on the GPU machine, one phase per call (the first argument):

  default               `autogemm tune` on the GPU with the default strategy and budget, all dtypes, timed
  exhaustive L BUDGET   the exhaustive strategy on the large class of dtype L (resumes from the checkpoint)
  peers                 the profile's best of each dtype at its large shape, next to cuBLAS, CLBlast and
                        numpy in the same process, every result checked against a float64 reference

The cache (profiles, checkpoints) is $AUTOGEMM_CACHE_DIR; logs, the profile and the checkpoints are copied
to $OUT. Run from the repository root with src/ on PYTHONPATH."""

from __future__ import annotations

import json
import os
import shutil
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
    cache = Path(os.environ["AUTOGEMM_CACHE_DIR"])
    for sub in ("profiles", "checkpoints"):
        if (cache / sub).is_dir():
            shutil.copytree(cache / sub, OUT / sub, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.lock", "*.tmp"))


def peers() -> None:
    import autogemm
    from autogemm.bench.peers import clblast_gemm, cublas_gemm, numpy_gemm
    from autogemm.checking import gemm_flops, random_matrix, relative_error, tolerance
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
        for name, call in (("cuBLAS", lambda: cublas_gemm(a, b)), ("CLBlast", lambda: clblast_gemm(ctx, dt, a, b)),
                           ("numpy", lambda: numpy_gemm(a, b))):
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
    say("\n| dtype n | autogemm tuned | cuBLAS | CLBlast | numpy | / cuBLAS | / CLBlast |")
    say("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        cub, clb = r.get("cuBLAS", 0.0), r.get("CLBlast", 0.0)
        say(f"| {r['dtype']} {r['n']} | {r['autogemm']:.2f} | {cub:.2f} | {clb:.2f} | {r.get('numpy', 0.0):.2f} | "
            f"{r['autogemm'] / cub if cub else 0:.2f} | {r['autogemm'] / clb if clb else 0:.2f} |")


def main() -> None:
    phase = sys.argv[1]
    device = os.environ.get("TUNE_DEVICE", "gpu")
    try:
        if phase == "default":
            cli("tune", "-d", device)
        elif phase == "exhaustive":
            letter, budget = sys.argv[2], sys.argv[3]
            cli("tune", "-d", device, "--dtype", letter, "--strategy", "exhaustive", "--budget", budget,
                "--size-class", "large")
        elif phase == "peers":
            peers()
        else:
            raise SystemExit(f"unknown phase {phase}")
    finally:
        copy_cache()


if __name__ == "__main__":
    main()
