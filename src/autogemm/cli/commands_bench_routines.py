"""``autogemm bench-routines``: GEMV (both layouts) and transpose against cuBLAS, torch and numpy, in GB/s."""

from __future__ import annotations

import dataclasses
import sys

import click
import numpy as np

from ..bench.routines import CUBLAS_GEMV, NUMPY, TORCH_COPY, run_gemv, run_transpose
from ..bench.runner import AUTOGEMM
from ..tables import plain_table
from .common import bench_inputs, cell, console, json_file, write_results
from .group import main


@main.command("bench-routines")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--dtype", "dtypes", default="s,d,c,z,h", show_default=True, help="Comma-separated dtypes.")
@click.option("--sizes", default="8192x8192,1024x65536,65536x1024", show_default=True,
              help="Matrices as ROWSxCOLS.")
@click.option("--runs", type=click.IntRange(1, 1000), default=10, show_default=True, help="Timed runs (median).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@json_file()
def bench_routines_command(device, dtypes, sizes, runs, seed, json_path) -> None:
    """Time GEMV (y = A x and y = A^T x) against cuBLAS's (torch.mv, where CUDA is there) and numpy's, and
    the transpose against torch's transposing copy and numpy's, on the same random data, every result
    checked against float64. Rates are GB/s of the bytes each must move."""
    dev, letters, shapes, ctx = bench_inputs(device, dtypes, sizes)
    rng = np.random.default_rng(seed)
    cases = []
    with console.status("timing") as status:
        for dt in letters:
            for rows, cols in shapes:
                for trans in "NT":
                    status.update(f"{dt.letter}gemv {trans} {rows}x{cols}")
                    cases.append(run_gemv(ctx, dt, rows, cols, trans, runs, rng))
                status.update(f"transpose {dt.key} {rows}x{cols}")
                cases.append(run_transpose(ctx, dt, rows, cols, runs, rng))
    columns = ("autogemm", "peer", "numpy", "/ peer", "/ numpy")
    table = plain_table(f"GEMV and transpose, GB/s on {dev.name.strip()} (median of {runs}; peer: cuBLAS's "
                        f"GEMV, torch's transposing copy)", ("routine", "dtype", "shape", *columns), right=columns)
    for case in cases:
        peer = TORCH_COPY if case.routine == "transpose" else CUBLAS_GEMV
        ratios = [case.ratio(peer), case.ratio(NUMPY)]
        table.add_row(case.routine, case.dtype, f"{case.rows}x{case.cols}",
                      *(cell(case.gbs(name), ".0f") for name in (AUTOGEMM, peer, NUMPY)),
                      *(f"{r:.2f}x" if r else "-" for r in ratios))
    console.print(table)
    for case in cases:
        notes = [f"{t.name}: {t.note}" for t in case.timings if t.note]
        console.print(f"{case.routine} {case.dtype} {case.rows}x{case.cols}: {case.config}"
                      + "".join(f"; {x}" for x in notes), highlight=False)
    data = {"device": dev.name.strip(), "runs": runs, "cases": [dataclasses.asdict(c) for c in cases]}
    write_results(json_path, data)
    if any(t.note == "wrong result" for c in cases for t in c.timings):
        sys.exit(1)
