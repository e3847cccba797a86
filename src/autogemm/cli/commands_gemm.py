"""``autogemm show-kernel`` and ``autogemm run``: one configuration's source, one GEMM timed."""

from __future__ import annotations

import sys

import click
import numpy as np

from ..accuracy import apply_op, gemm_flops, random_matrix, relative_error_where_finite
from ..blas import EDGES, GemmProblem, Op
from ..blas.cuda_gemm import kernel_for, reading
from ..blas.defaults import CUDA_DEFAULTS
from ..blas.plans import gemm_plan
from ..blas.selection import choose_params
from ..codelets.dmma import DmmaParams
from ..codelets.registry import GEMM, check, families, family_named, render, writes_16bit
from ..codelets.wgmma import WgmmaParams
from ..dtypes import DTYPES, Dtype, get_dtype
from ..errors import AutogemmError, ConfigError
from ..runtime import context_for, hold, median, time_enqueue
from ..runtime.backend import CUDA
from ..runtime.opencl import commands as ocl
from .common import console, fail, json_file, parse_config, select_device, write_results
from .group import main

config_options = [
    click.option("--dtype", "dtype_letter", type=click.Choice(list(DTYPES)), default="s", show_default=True,
                 help="s, d, c or z; s.tf32, s.3xtf32, c.tf32, c.3xtf32 for the tensor-core precision modes; "
                      "h (float16) or b (bfloat16), hs or bs for a float32 C."),
    click.option("--config", help="A configuration as JSON text or a JSON file (a family's fields, with its "
                                  "\"family\"; simt's where it names none)."),
    click.option("--set", "settings", multiple=True, metavar="NAME=VALUE",
                 help="Override one parameter, e.g. --set tile_rows=8 (repeatable)."),
    click.option("-p", "--platform", help="Platform number or name."),
    click.option("-d", "--device", help="Device: number or name on --platform, or P:D, gpu, cpu, a name."),
]


def _with_options(options):
    def wrap(func):
        for option in reversed(options):
            func = option(func)
        return func
    return wrap


#: The CUDA path's families' configurations, by the family's name.
CUDA_FAMILIES = {WgmmaParams.family: WgmmaParams, DmmaParams.family: DmmaParams}


@main.command("show-kernel")
@_with_options(config_options)
@click.option("--whole/--guarded", "whole", default=False,
              help="The whole-tile kernel (aligned, no edge guards) or the guarded one (default).")
@click.option("--family", type=click.Choice([f.name for f in families(GEMM)] + list(CUDA_FAMILIES)),
              help="The kernel family (from its default configuration where the profile has none of it) "
                   "[default: the device's choice's]; wgmma, dmma: the CUDA C++ of an sm_90a family, no device "
                   "needed.")
@click.option("--trans-a", type=click.Choice(["N", "T", "C"], case_sensitive=False), default="N",
              help="wgmma, dmma: op(A) of the product, A a dense row-major array: the kernel the CUDA path "
                   "runs for it.")
@click.option("--trans-b", type=click.Choice(["N", "T", "C"], case_sensitive=False), default="T",
              show_default=True, help="wgmma, dmma: op(B), likewise (T: x @ W.T, the kernels' own layout).")
def show_kernel(dtype_letter, config, settings, platform, device, whole, family, trans_a, trans_b) -> None:
    """Print the OpenCL source of one configuration: the device's for large problems of the family (from
    its profile, else the family's default), changed by --config/--set."""
    try:
        dt = get_dtype(dtype_letter)
        if family in CUDA_FAMILIES:
            ops = Op.from_letter(trans_a, "trans-a"), Op.from_letter(trans_b, "trans-b")
            click.echo(_cuda_source(family, dt, config, settings, ops))
            return
        dev = select_device(platform, device)
        chosen = choose_params(dev, GemmProblem.dense(dt, 4096, 4096, 4096)).params
        family = family or chosen.family
        chosen_family = family_named(family)
        base = chosen_family.fit(chosen, dt) if chosen.family == family else chosen_family.default(dt)
        params = parse_config(config, settings, base)
        reason = check(params, dev, dt)
        if reason:
            console.print(f"[yellow]warning:[/yellow] {dev.name.strip()} would reject this configuration: "
                          f"{reason}", highlight=False)
        # (a 16-bit C written by the kernel, as a plan runs it where it needs no float32 temporary)
        click.echo(render(params, dt, guarded=not whole, stored_c=writes_16bit(params, dt)).source)
    except (AutogemmError, OSError) as exc:
        fail(str(exc))


def _cuda_source(family: str, dt: Dtype, config: str | None, settings: tuple[str, ...], ops: tuple[Op, Op]
                 ) -> str:
    """The CUDA C++ of the CUDA path's default configuration of ``family`` for ``dt`` (``CUDA_DEFAULTS``),
    changed by ``config`` and ``settings`` as an OpenCL family's is (``ConfigError`` for a malformed
    result): the kernel it runs for op(A) op(B) (``ops``) of dense row-major A and B."""
    kind = CUDA_FAMILIES[family]
    base = CUDA_DEFAULTS.get(dt.key)
    if not isinstance(base, kind):
        keys = ", ".join(key for key, default in CUDA_DEFAULTS.items() if isinstance(default, kind))
        raise ConfigError(f"the {family} family multiplies {keys}, not {dt.key}")
    params = parse_config(config, settings, base, backend=CUDA)      # (a --config may name the other family)
    why = params.dtype_problem(dt)
    if why:
        raise ConfigError(f"the configuration does not compute {dt.key}: {why}")
    # A lies K-major unless transposed; B (the kernels' N x K) unless not; a conjugate is laid out
    lying = tuple((stored_transposed and not op.conjugated, not stored_transposed and not op.conjugated)
                  for op, stored_transposed in zip(ops, (ops[0].transposed, not ops[1].transposed)))
    return kernel_for(params, *reading(params, lying)).source


@main.command()
@click.option("-M", "m", type=click.IntRange(0), default=1024, show_default=True, help="Rows of C.")
@click.option("-N", "n", type=click.IntRange(0), default=1024, show_default=True, help="Columns of C.")
@click.option("-K", "k", type=click.IntRange(0), default=1024, show_default=True, help="Inner dimension.")
@click.option("--trans-a", type=click.Choice(["N", "T", "C"], case_sensitive=False), default="N")
@click.option("--trans-b", type=click.Choice(["N", "T", "C"], case_sensitive=False), default="N")
@click.option("--alpha", type=float, default=1.0, show_default=True)
@click.option("--beta", type=float, default=0.0, show_default=True)
@click.option("-i", "--iterations", type=click.IntRange(1), default=10, show_default=True)
@click.option("--edge", type=click.Choice(EDGES), default="auto", show_default=True,
              help="Edge handling: pad to whole tiles, guard the kernel's edges, or choose by shape.")
@click.option("-v", "--validate", is_flag=True, help="Check the result against a float64 numpy reference.")
@click.option("--timeline", is_flag=True, help="Show when each launch of one more iteration ran on the device.")
@json_file("Write the problem, the plan, each iteration's seconds and the validation as JSON.")
@_with_options(config_options)
def run(m, n, k, trans_a, trans_b, alpha, beta, iterations, edge, validate, timeline, json_path, dtype_letter,
        config, settings, platform, device) -> None:
    """Run one GEMM several times, printing each iteration's device time and rate (with the device
    profile's configuration for the shape, or the default, unless --config/--set)."""
    dt = get_dtype(dtype_letter)
    dev = select_device(platform, device)
    ctx = context_for(dev)
    op_a, op_b = Op.from_letter(trans_a, "trans-a"), Op.from_letter(trans_b, "trans-b")
    problem = GemmProblem.dense(dt, m, n, k, op_a, op_b)
    params = None
    if config or settings:
        params = parse_config(config, settings, choose_params(dev, problem).params)
    plan = gemm_plan(ctx, problem, params, edge)
    console.print(f"device: {dev.label}", highlight=False)
    console.print(f"{dt.routine} {trans_a.upper()}{trans_b.upper()} M={m} N={n} K={k}  "
                  f"alpha={alpha} beta={beta}", highlight=False)
    console.print(f"plan: {plan.describe()}", highlight=False, markup=False)
    rng = np.random.default_rng()
    hosts = {name: random_matrix(rng, dt.output if name == "C" else dt, problem.stored_shape(name)) for name in "ABC"}
    bufs = {name: ocl.buffer_of(ctx.context, h if h.size else np.zeros(1, dt.numpy)) for name, h in hosts.items()}
    flops = gemm_flops(dt, m, n, k)
    times = time_enqueue(ctx.queue, lambda: plan.enqueue(bufs["A"], bufs["B"], bufs["C"], alpha, beta)
                         or [_marker(ctx)], warmup=1, runs=iterations)
    for i, t in enumerate(times):
        console.print(f"  iteration {i + 1:3d}: {t * 1e3:9.3f} ms  {flops / t / 1e9 if t else 0:9.1f} GFLOP/s",
                      highlight=False)
    t = median(times)
    console.print(f"median: {t * 1e3:.3f} ms, {flops / t / 1e9 if t else 0:.1f} GFLOP/s", highlight=False)
    facts = {"device": dev.label, "dtype": dt.key, "m": m, "n": n, "k": k,
             "layout": f"{trans_a.upper()}{trans_b.upper()}", "alpha": alpha, "beta": beta, "plan": plan.describe(),
             "seconds": list(times), "median_seconds": t, "gflops": flops / t / 1e9 if t else None}
    write_results(json_path, facts)
    if timeline and m and n:
        hold(ctx.queue)
        events = plan.enqueue(bufs["A"], bufs["B"], bufs["C"], alpha, beta)
        events[-1].wait()
        names = plan.launches() if len(events) == len(plan.launches()) else ["scale C"]
        origin = events[0].profile.start
        for name, event in zip(names, events):
            start, end = (event.profile.start - origin) / 1e3, (event.profile.end - origin) / 1e3
            console.print(f"  {start:10.1f} .. {end:10.1f} us  ({end - start:9.1f} us)  {name}", highlight=False,
                          markup=False)
    if validate:
        # C was overwritten by each iteration: recompute once from the original C.
        ocl.copy(ctx.queue, bufs["C"], hosts["C"] if hosts["C"].size else np.zeros(1, dt.numpy))
        plan.enqueue(bufs["A"], bufs["B"], bufs["C"], alpha, beta)
        got = np.empty_like(hosts["C"])
        if got.size:
            ocl.copy(ctx.queue, got, bufs["C"])
        ref_type = dt.reference_numpy
        ref = alpha * (apply_op(hosts["A"].astype(ref_type), trans_a) @ apply_op(hosts["B"].astype(ref_type), trans_b))
        ref = ref + (beta * hosts["C"].astype(ref_type) if beta else 0)
        err = relative_error_where_finite(got, ref)       # (NaN and inf where numpy has them: alpha nan, say)
        ok = err < dt.tolerance
        console.print(f"validation: relative error {err:.2e} (bound {dt.tolerance:.0e}): "
                      f"{'[green]PASS[/green]' if ok else '[red]FAIL[/red]'}")
        write_results(json_path, {**facts, "error": err, "correct": bool(ok)})
        if not ok:
            sys.exit(1)
    plan.release()


def _marker(ctx) -> ocl.Event:
    """An event for iterations with nothing to launch (m or n is 0)."""
    return ocl.marker(ctx.queue)


