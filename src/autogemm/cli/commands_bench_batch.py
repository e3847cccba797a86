"""``autogemm bench-batch``: batches of small products (strided batch, a loop of calls, cuBLAS's batched
GEMM), the high-level call's overhead and the four-step plan's saving, as a table and JSON."""

from __future__ import annotations

import dataclasses
import sys

import click
import numpy as np
from rich.table import Table

from ..bench.api_costs import BMM, LOOP, STRIDED, Reuse, call_overhead, plan_reuse, run_batch
from ..dtypes import get_dtype
from ..tables import plain_table
from .common import bench_inputs, cell, console, dimensions, json_file, write_results
from .group import main


@main.command("bench-batch")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--dtype", "dtypes", default="s,d", show_default=True, help="Comma-separated dtypes.")
@click.option("--batches", default="1024x64,256x256", show_default=True,
              help="Batches as COUNTxSIZE: COUNT products of SIZE x SIZE x SIZE.")
@click.option("--runs", type=click.IntRange(1, 1000), default=10, show_default=True, help="Timed runs (median).")
@click.option("--overhead-size", type=click.IntRange(0, 8192), default=256, show_default=True,
              help="Size of the float32 product whose call overhead is measured (0: skip).")
@click.option("--reuse", "reuse_shapes", default="4096x4096x4096,8192x256x8192", show_default=True,
              help="Products MxNxK timed with A copied once by GemmPlan and whole ('': skip).")
@click.option("--reuse-products", type=click.IntRange(2, 64), default=4, show_default=True,
              help="Products sharing A in each --reuse timing.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@json_file()
def bench_batch_command(device, dtypes, batches, runs, overhead_size, reuse_shapes, reuse_products, seed,
                        json_path) -> None:
    """Time a strided batch (one launch) against the same products as a Python loop of gemm calls and
    against cuBLAS's batched GEMM (torch.bmm, where CUDA is there), all checked against float64; then the
    host time a gemm call on device arrays costs beyond the bare plan, and the time the four-step
    GemmPlan saves by copying A once for several products. Rates are TFLOP/s."""
    dev, letters, cases_wanted, ctx = bench_inputs(device, dtypes, batches)
    reuse_wanted = dimensions(reuse_shapes, 3)
    rng = np.random.default_rng(seed)
    cases = []
    with console.status("timing batches") as status:
        for dt in letters:
            for batch, n in cases_wanted:
                status.update(f"{dt.routine}: {batch} x {n}^3")
                cases.append(run_batch(ctx, dt, batch, n, runs, rng))
        overhead = None
        if overhead_size:
            status.update(f"call overhead, {overhead_size}^3 SGEMM")
            overhead = call_overhead(ctx, get_dtype("s"), overhead_size, rng=rng)
        reuses = []
        for dt in letters:
            for m, n, k in reuse_wanted:
                status.update(f"{dt.routine}: {reuse_products} products {m}x{n}x{k} sharing A, copying it once or "
                              f"each time")
                reuses.append(plan_reuse(ctx, dt, m, n, k, reuse_products, runs, rng=rng))
    columns = ("batch", "size", "strided", "loop", "bmm", "strided / loop", "strided / bmm")
    table = plain_table(f"Batched GEMM, TFLOP/s on {dev.name.strip()} (median of {runs})", ("dtype", *columns),
                        right=columns)
    for case in cases:
        table.add_row(case.dtype, str(case.batch), str(case.n), *(cell(case.rate(x)) for x in (STRIDED, LOOP, BMM)),
                      *(f"{r:.1f}x" if r else "-" for r in (case.ratio(LOOP), case.ratio(BMM))))
    console.print(table)
    console.print(f"strided: {STRIDED} (one launch); loop: {LOOP} (a gemm call per product); bmm: {BMM} (cuBLAS)",
                  highlight=False)
    for case in cases:
        notes = [f"{m.name}: {m.note}" for m in case.measurements if m.note]
        console.print(f"{case.dtype} {case.batch}x{case.n}: {case.config}" + "".join(f"; {x}" for x in notes),
                      highlight=False)
    if overhead:
        us = 1e6
        console.print(f"{overhead.n}^3 SGEMM on device arrays: kernel {overhead.kernel_seconds * us:.1f} us; host "
                      f"time per call: gemm {overhead.call_seconds * us:.1f} us, bare plan.enqueue "
                      f"{overhead.plan_seconds * us:.1f} us "
                      f"(overhead {overhead.overhead_seconds * us:.1f} us); to the result: gemm "
                      f"{overhead.call_done_seconds * us:.1f} us, bare plan {overhead.plan_done_seconds * us:.1f} us "
                      f"(overhead {overhead.latency_overhead_seconds * us:.1f} us)", highlight=False)
    if reuses:
        console.print(_reuse_table(reuses, reuse_products, runs))
        for reuse in reuses:
            console.print(f"{reuse.dtype} {reuse.m}x{reuse.n}x{reuse.k}: {reuse.launches}", highlight=False)
    data = {"device": dev.name.strip(), "runs": runs, "cases": [dataclasses.asdict(c) for c in cases],
            "overhead": dataclasses.asdict(overhead) if overhead else None,
            "reuse": [dataclasses.asdict(r) for r in reuses]}
    write_results(json_path, data)
    if any(not m.correct and m.note == "wrong result" for c in cases for m in c.measurements):
        sys.exit(1)


def _reuse_table(reuses: list[Reuse], products: int, runs: int) -> Table:
    """The four-step plan's saving: milliseconds for all products, device busy share in brackets."""
    columns = ("m x n x k", "A stored", "whole", "A copied once", "saved")
    table = plain_table(f"{products} products sharing A: whole, or with GemmPlan copying A once "
                        f"(ms, median of {runs}; device busy share)", ("dtype", *columns), right=columns)
    for r in reuses:
        stored = ("transposed" if r.trans_a == "T" else "as is") + ("" if r.a_packed else ", read in place")
        table.add_row(r.dtype, f"{r.m}x{r.n}x{r.k}", stored, f"{r.whole_seconds * 1e3:.3f} ({r.whole_busy:.0%})",
                      f"{r.reused_seconds * 1e3:.3f} ({r.reused_busy:.0%})", f"{r.saved:.0%}")
    return table
