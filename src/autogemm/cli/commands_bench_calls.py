"""``autogemm bench-calls``: what a call costs the host, for each kind of operand, beside the bare work and
``torch.matmul``, as a table and JSON."""

from __future__ import annotations

import dataclasses

import click
import numpy as np

from ..bench.call_path import on_cuda_tensors, on_device_arrays, on_host_arrays
from ..dtypes import get_dtype
from ..tables import plain_table
from .common import bench_inputs, console, json_file, write_results
from .group import main


@main.command("bench-calls")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--dtype", "dtypes", default="s", show_default=True,
              help="Comma-separated dtypes of the numpy and pyopencl products.")
@click.option("--tensor-dtype", default="h", show_default=True,
              help="The dtype of the CUDA tensors' products (one the CUDA path takes: h, b, s.tf32, s.3xtf32, d, z).")
@click.option("--sizes", default="32,64,256", show_default=True, help="Comma-separated n of n x n x n products.")
@click.option("--calls", type=click.IntRange(10, 100000), default=1000, show_default=True,
              help="Calls queued back to back for each measure.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@json_file()
def bench_calls_command(device, dtypes, tensor_dtype, sizes, calls, seed, json_path) -> None:
    """Queue CALLS repeated products back to back and report the host's microseconds per call: gemm on
    pyopencl arrays (it only enqueues) against its plan's bare enqueue, gemm from numpy to numpy against
    the same copies and launches made by hand (the difference is what the call adds), and, where torch
    has CUDA, gemm on CUDA tensors against torch.matmul; every result checked against float64."""
    dev, letters, shapes, ctx = bench_inputs(device, dtypes, sizes, parts=1)
    tensor_dt = get_dtype(tensor_dtype)
    rng = np.random.default_rng(seed)
    costs = []
    with console.status("timing calls") as status:
        for (n,) in shapes:
            for dt in letters:
                status.update(f"{dt.key} {n}^3 on pyopencl arrays")
                costs.append(on_device_arrays(ctx, dt, n, calls, rng))
                status.update(f"{dt.key} {n}^3 from numpy to numpy")
                costs.append(on_host_arrays(ctx, dt, n, calls, rng))
            status.update(f"{tensor_dt.key} {n}^3 on CUDA tensors")
            found = on_cuda_tensors(tensor_dt, n, calls, rng)
            costs.extend([found] if found else [])
    columns = ("gemm", "bare", "added", "torch")
    table = plain_table(f"Host microseconds per call on {dev.name.strip()} ({calls} calls back to back; bare: the "
                        f"plan's own launches, or its copies and launches by hand; torch: torch.matmul)",
                        ("operands", "dtype", "n", *columns), right=("n", *columns))
    for cost in costs:
        table.add_row(cost.kind, cost.dtype, str(cost.n), *(_us(x) for x in (
            cost.call_seconds, cost.bare_seconds, cost.added_seconds, cost.torch_seconds)))
    console.print(table)
    write_results(json_path, {"device": dev.name.strip(), "calls": calls,
                              "cases": [dataclasses.asdict(c) for c in costs]})


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f}"
