"""``autogemm bench-accuracy``: how accurate float32 products are, FP32 against 3xTF32, by input
distribution and depth (``bench.accuracy_harness``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import click
import numpy as np

from ..api import gemm
from ..bench import peers
from ..bench.accuracy_harness import NAMES, AccuracyCase, emulated_3xtf32, emulated_6xtf32, measure, worst
from ..bench.report import save_figure
from ..blas.cuda_gemm import cuda_unreachable
from ..dtypes import DTYPES
from ..errors import ArgumentError
from ..tables import plain_table
from .common import console, json_file, select_device, write_results
from .group import main


def _depths(text: str) -> list[int]:
    try:
        depths = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ArgumentError(f"--depths: expected comma-separated integers, not {text!r}") from None
    if not depths or min(depths) < 1 or max(depths) > 2**20:
        raise ArgumentError("--depths: each K from 1 to 2^20")
    return depths


@main.command("bench-accuracy")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--size", type=click.IntRange(1, 4096), default=64, show_default=True, help="C is SIZE x SIZE.")
@click.option("--depths", default="1,16,256,4096,65536", show_default=True, help="Comma-separated depths K.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@json_file()
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a PNG of each implementation's largest error against K, per distribution.")
def bench_accuracy_command(device, size, depths, seed, json_path, plot_path) -> None:
    """Errors of float32 products against float64 on inputs that matter (uniform, normal, spread over
    2^-30..2^30, cancelling, half zeros, subnormal, products and operands near float32's largest, with
    inf and NaN) at each
    depth K: numpy's SGEMM, 3xTF32 emulated as the CUDA path computes it, a split into three TF32 parts
    and six products emulated (what a split closing 3xTF32's short-K error takes), autogemm on the device in
    float32 and with precision '3xtf32' (on OpenCL, and on the CUDA path where the device has one), and
    cuBLAS's SGEMM where torch has CUDA. An element's error is
    |c - exact| / (|A| |B|); 'mismatches' counts elements whose non-finite value differs from the exact
    product's (or that are not finite where it is)."""
    dev = select_device(None, device)
    Implementation = Callable[[np.ndarray, np.ndarray], np.ndarray]
    reference: dict[str, Implementation] = {"numpy fp32": lambda a, b: a @ b}
    emulated: dict[str, Implementation] = {"3xtf32 emulated": emulated_3xtf32, "6xtf32 emulated": emulated_6xtf32}
    computed: dict[str, Implementation] = {
        "autogemm": lambda a, b: gemm(a, b, device=dev),
        "autogemm 3xtf32": lambda a, b: gemm(a, b, device=dev, precision="3xtf32", backend="opencl"),
    }
    if cuda_unreachable(dev, DTYPES["s.3xtf32"]) is None:
        computed["autogemm 3xtf32 cuda"] = lambda a, b: gemm(a, b, device=dev, precision="3xtf32", backend="cuda")
    torch = peers.torch_cuda(tf32=False)
    if torch is not None:
        computed["cuBLAS fp32"] = lambda a, b: peers.to_numpy(
            torch, torch.matmul(peers.to_cuda(torch, a), peers.to_cuda(torch, b)))
    implementations = {**reference, **emulated, **computed}
    rng = np.random.default_rng(seed)
    cases: list[AccuracyCase] = []
    names = list(NAMES)
    with console.status("measuring") as status:
        for name in names:
            for k in _depths(depths):
                status.update(f"{name}, K = {k}")
                cases.append(measure(name, size, k, implementations, rng))
    labels = list(implementations)
    groups = (("emulated on the host", [*reference, *emulated]),         # (80 columns hold either alone)
              ("computed by the device", [*reference, *computed]))
    for what, pick in (("largest", lambda e: e.largest), ("median", lambda e: e.median)):
        for where, group in groups:
            headers = [label.replace(" ", "\n") for label in group]     # (a word a line)
            table = plain_table(f"{what} error |c - exact| / (|A||B|), {where}, C {size} x {size}, K {depths}",
                                ("distribution", *headers), right=headers)
            for name in names:
                table.add_row(name, *(f"{pick(worst(cases, label, name)):.1e}" for label in group))
            console.print(table)
    for name in names:
        found = {label: worst(cases, label, name).mismatches for label in labels}
        if any(found.values()):
            console.print(f"{name}: elements not as the exact product's non-finite values: "
                          + ", ".join(f"{label} {count}" for label, count in found.items()), highlight=False)
    write_results(json_path, {"device": dev.name.strip(), "size": size,
                              "cases": [dataclasses.asdict(case) for case in cases]})
    if plot_path:
        _plot(cases, labels, names, plot_path)
        console.print(f"wrote {plot_path}", highlight=False)


def _plot(cases: list[AccuracyCase], labels: list[str], names: list[str], path: Path) -> None:
    """Each implementation's largest error against K, a panel per distribution."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ArgumentError("--plot needs matplotlib: pip install 'autogemm[plot]'") from exc
    columns = 3
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(10, 2.4 * rows), squeeze=False, layout="constrained")
    for ax, name in zip(axes.flat, names):
        mine = [c for c in cases if c.distribution == name]
        for label in labels:
            ax.plot([c.k for c in mine], [max(c.errors[label].largest, 1e-20) for c in mine], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.supxlabel("K")
    fig.supylabel("largest |c - exact| / (|A||B|)")
    save_figure(fig, path)
