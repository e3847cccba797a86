"""``autogemm bench-dask``: one product through Dask on clusters of several sizes, ``autogemm.dask``
beside dask's own matmul on numpy chunks and on cupy chunks, from host arrays to a host result."""

from __future__ import annotations

import dataclasses
import sys

import click
import numpy as np

from ..dtypes import get_dtype
from ..errors import AutogemmError
from ..shares.copying import copy_threads
from ..tables import plain_table
from .common import cell, console, fail, json_file, write_results
from .group import main

#: ``--paths`` names of ``bench.dask_products.PATHS``.
PATH_NAMES = {"dask": "autogemm.dask", "gemm": "autogemm.gemm", "numpy": "dask numpy", "cupy": "dask cupy"}


@main.command("bench-dask")
@click.option("--dtype", default="s", show_default=True, help="The dtype: s, d, c or z.")
@click.option("--size", type=click.IntRange(1), default=4096, show_default=True, help="n of the n x n x n product.")
@click.option("--chunk", type=click.IntRange(1), default=2048, show_default=True,
              help="Rows and columns of the dask arrays' chunks.")
@click.option("--workers", default="1,2", show_default=True,
              help="Comma-separated numbers of workers (one cluster each).")
@click.option("--runs", type=click.IntRange(1, 100), default=3, show_default=True, help="Timed runs (median).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@click.option("--paths", default=",".join(PATH_NAMES), show_default=True,
              help="Comma-separated paths to time: dask (autogemm.dask), gemm (autogemm.gemm without Dask), "
                   "numpy (dask on numpy chunks), cupy (dask on cupy chunks).")
@json_file("Write the results as JSON, after each one: a run stopped early keeps what it measured.")
def bench_dask_command(dtype, size, chunk, workers, runs, seed, paths, json_path) -> None:
    """Time an n x n x n product of dask arrays made from numpy arrays, computed to a numpy array, on
    local clusters of each number of --workers: autogemm.dask (workers on autogemm's devices), dask's
    da.matmul on numpy chunks (the same workers, numpy's BLAS) and on cupy chunks (a worker process per
    GPU, where cupy is installed); beside them autogemm.gemm on the same numpy arrays without Dask. Wall
    clock, median of --runs after a warm-up; each result checked on sampled rows."""
    from ..bench.dask_products import AUTOGEMM, run_dask
    try:
        dt = get_dtype(dtype)
        counts = [int(x) for x in workers.split(",") if x.strip()]
    except (AutogemmError, ValueError) as exc:
        fail(f"{exc}")
    if not counts or min(counts) < 1:
        fail("--workers takes numbers of workers of at least 1, e.g. 1,2")
    chosen = [name.strip() for name in paths.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(PATH_NAMES))
    if unknown or not chosen:
        fail(f"--paths takes {', '.join(PATH_NAMES)}, not {', '.join(unknown) or 'nothing'}")
    facts = {"dtype": dt.key, "n": size, "chunk": chunk, "runs": runs, "host_copies": copy_threads()}
    so_far: list = []

    def measured(result) -> None:       # a line and the JSON as each comes: a run cut short keeps them
        so_far.append(result)
        console.print(f"{result.workers} worker{'s' * (result.workers > 1)}, {result.path}: "
                      f"{cell(result.seconds)} s", highlight=False)
        write_results(json_path, {**facts, "results": [dataclasses.asdict(r) for r in so_far]})

    with console.status("starting") as status:
        results = run_dask(dt, size, chunk, counts, runs, np.random.default_rng(seed),
                           lambda what: status.update(f"{dt.routine} {size}^3 on {what}"),
                           tuple(PATH_NAMES[name] for name in chosen), measured)
    single = {r.path: r.seconds for r in results if r.workers == min(counts) and r.seconds}
    ours = {r.workers: r.seconds for r in results if r.path == AUTOGEMM and r.seconds}
    columns = ("workers", "path", "seconds", "TFLOP/s", f"/ {min(counts)} worker", "autogemm / it", "busy", "copy")
    table = plain_table(f"{dt.routine} {size}^3 through Dask, numpy in and out, chunks of {chunk} "
                        f"(median of {runs})", columns, right=columns[2:] + ("workers",))
    for r in results:
        speedup = single.get(r.path) / r.seconds if r.seconds and single.get(r.path) else None
        ratio = r.seconds / ours[r.workers] if r.seconds and ours.get(r.workers) else None
        table.add_row(str(r.workers), r.path, cell(r.seconds), cell(r.tflops), cell(speedup, ".2f"),
                      cell(ratio, ".2f"), *("-" if share is None else f"{share:.0%}" for share in (r.busy, r.copying)))
    console.print(table)
    console.print(f"host copies: {facts['host_copies']}", highlight=False)
    if any(r.busy is not None for r in results):
        console.print("busy: the share of the wall time autogemm.dask's devices computed blocks", highlight=False)
        console.print("copy: the share they brought blocks back to the host (beside others' turns)",
                      highlight=False)
    for r in results:
        if r.note:
            console.print(f"{r.workers} {r.path}: {r.note}", highlight=False)
    if any(r.note.startswith("wrong") for r in results):
        sys.exit(1)
