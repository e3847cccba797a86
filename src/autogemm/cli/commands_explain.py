"""``autogemm explain``: why one product runs as fast as it does, launch by launch, beside cuBLAS."""

from __future__ import annotations

import dataclasses
import textwrap

import click

from ..bench.explain import describe, explain
from ..bench.shapes import LAYOUTS, Shape
from ..dtypes import get_dtype
from ..errors import ArgumentError
from ..runtime import context_for
from .common import console, json_file, select_device, write_results
from .group import main


@main.command("explain")
@click.argument("m", type=click.IntRange(1))
@click.argument("n", type=click.IntRange(1))
@click.argument("k", type=click.IntRange(1))
@click.option("--layout", type=click.Choice(LAYOUTS, case_sensitive=False), default="NN", show_default=True,
              help="Transposes of A and B.")
@click.option("--dtype", "letter", default="s", show_default=True, help="s, d, c, z, h, b, s.tf32, ...")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--batch", type=click.IntRange(1), default=1, show_default=True,
              help="A strided batch of this many products, as gemm_batched runs it (cuBLAS: torch.bmm).")
@click.option("--runs", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Timed runs (medians are shown).")
@click.option("--alternatives", type=click.IntRange(0, 32), default=0, show_default=True,
              help="Also build, check and time this many of the plans the profile's predictor ranks next.")
@json_file("Also write what was found as JSON.")
def explain_command(m, n, k, layout, letter, device, batch, runs, alternatives, json_path) -> None:
    """Explain the product C (M x N) = op(A) op(B) over K: where a call of numpy operands runs (the host's
    BLAS, the CUDA path, streamed, or the device's OpenCL plan), the configuration chosen and where it came
    from (the profile's entry for this shape, its predictor or its size class), each launch of the plan
    with its device time and the idle time before it, the host's time to enqueue them, and how many
    work-groups the product's kernel gives each compute unit. With --alternatives, the plans the
    profile's predictor ranks next for it follow, each timed (where one is faster, `tune --shapes` of
    the product searches for the fastest and keeps it). Where torch has CUDA, cuBLAS's time and kernels
    (name, grid, block) for the same product follow. Every result is checked against float64. With
    --batch, the same for a strided batch of such products (each its own A, B and C)."""
    dt = get_dtype(letter)
    dev = select_device(None, device)
    if dt.needs_fp64 and not dev.fp64:
        raise ArgumentError(f"{dt.routine} needs double precision, which {dev.name.strip()} lacks")
    with console.status(f"timing {dt.routine} {f'{batch} x ' if batch > 1 else ''}{m} x {n} x {k} {layout.upper()}"):
        found = explain(context_for(dev), dt, Shape(m, n, k, layout.upper()), runs, batch=batch,
                        alternatives=alternatives)
    for line in describe(found):
        console.print(line, highlight=False, markup=False)
    if alternatives and found.on_cuda:
        why = ("no other plan to time: the predictor ranks OpenCL's kernels, and numpy operands of this product "
               "run on the CUDA path (`autogemm tune` measures its configurations beside OpenCL's)")
        for line in textwrap.wrap(why, 80):
            console.print(line, highlight=False, markup=False)
    elif alternatives and not found.alternatives:
        why = (f"no other plan to time: the profile's predictor ranks none for this product but the plan's own "
               f"(it has none of {dt.routine} until `autogemm tune --size-class predictor`; it ranks GEMM "
               "kernels for one product, not a batch, a product run as a GEMV or one past its samples' reach)")
        for line in textwrap.wrap(why, 80):
            console.print(line, highlight=False, markup=False)
    if json_path:
        write_results(json_path, {**dataclasses.asdict(found), "dt": dt.key, "shape": found.shape.label})
