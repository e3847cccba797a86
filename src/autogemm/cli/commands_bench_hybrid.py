"""``autogemm bench-hybrid``: RaijinCL's hybrid strategies (CPU only, GPU only, CPU+GPU with a tuned split,
CPU+GPU co-tuned) from numpy operands to a numpy result, beside the device-resident rate and cuBLAS."""

from __future__ import annotations

import dataclasses
import sys

import click
import numpy as np

from ..bench.sharing import CO_TUNED, CPU_ONLY, GPU_ONLY, SIMPLE, run_hybrid
from ..shares.split import DEFAULT_PARTS
from ..tables import plain_table
from .common import bench_inputs, cell, console, json_file, write_results
from .group import main


@main.command("bench-hybrid")
@click.option("-d", "--device", default="gpu", show_default=True,
              help="The device beside the host: P:D, index, gpu, cpu or part of its name.")
@click.option("--dtype", "dtypes", default="s,d", show_default=True, help="Comma-separated dtypes.")
@click.option("--sizes", default="4096,8192", show_default=True, help="Comma-separated n of n x n x n products.")
@click.option("--parts", type=click.IntRange(1, 256), default=DEFAULT_PARTS, show_default=True,
              help="P: the parts of C's rows the split deals out.")
@click.option("--kernels", type=click.IntRange(1, 16), default=3, show_default=True,
              help="Candidate kernels the co-tuning tries (the profile's, best first).")
@click.option("--runs", type=click.IntRange(1, 100), default=3, show_default=True, help="Timed runs (median).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@json_file()
def bench_hybrid_command(device, dtypes, sizes, parts, kernels, runs, seed, json_path) -> None:
    """Time n x n x n products from numpy operands to a numpy result on the host's BLAS alone, on the
    device alone, and shared by rows between them with the device's best kernel and a tuned split and
    with kernel and split co-tuned (every kernel with every split of P parts, each call checked against
    float64); beside the same kernel on device-resident operands and cuBLAS end to end (torch). TFLOP/s."""
    dev, letters, wanted, ctx = bench_inputs(device, dtypes, sizes, parts=1)
    rng = np.random.default_rng(seed)
    cases = []
    with console.status("co-tuning") as status:
        for dt in letters:
            for (n,) in wanted:
                status.update(f"{dt.routine} {n}^3: {kernels} kernels x {parts + 1} splits")
                cases.append(run_hybrid(ctx, dt, n, parts, kernels, runs, rng))
    columns = ("n", CPU_ONLY, GPU_ONLY, SIMPLE, CO_TUNED, "resident", "cuBLAS e2e", "co-tuned / resident",
               "co-tuned / cuBLAS e2e")
    table = plain_table(f"Hybrid GEMM, numpy in and out, TFLOP/s: {dev.name.strip()} and the host "
                        f"(median of {runs}; P = {parts})", ("dtype", *columns), right=columns)
    for case in cases:
        best = case.tflops(CO_TUNED)
        ratios = [best / peer if best and peer else None for peer in (case.resident_tflops, case.cublas_e2e_tflops)]
        strategies = (CPU_ONLY, GPU_ONLY, SIMPLE, CO_TUNED)
        table.add_row(case.dtype, str(case.n), *(cell(case.tflops(name)) for name in strategies),
                      cell(case.resident_tflops), cell(case.cublas_e2e_tflops),
                      *(f"{r:.2f}x" if r else "-" for r in ratios))
    console.print(table)
    for case in cases:
        for s in case.strategies:
            console.print(f"{case.dtype} {case.n} {s.name}: {s.split or 'failed'}; {s.config}", highlight=False)
    data = {"device": dev.name.strip(), "runs": runs, "cases": [dataclasses.asdict(c) for c in cases]}
    write_results(json_path, data)
    if any(s.seconds is None for c in cases for s in c.strategies):
        sys.exit(1)
