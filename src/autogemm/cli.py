"""The ``autogemm`` command line: ``devices``, ``show-kernel`` and ``run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np
import pyopencl as cl
from rich.console import Console
from rich.table import Table

from . import __version__
from .blas import EDGES, GemmPlan, GemmProblem, Op, default_params
from .codelets.simt import SimtParams, check, render
from .dtypes import DTYPES, get_dtype
from .errors import AutogemmError, ConfigError, DeviceError
from .runtime import Device, context_for, discovery, list_devices, median, time_enqueue

console = Console()


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}", highlight=False)
    sys.exit(2)


def _select_device(platform: str | None, device: str | None) -> Device:
    """A device by ``--platform`` (number or name) and ``--device`` (number or name within it), or by
    ``--device`` alone (anything ``find_device`` accepts); neither means the default device."""
    if platform is None:
        return discovery.find_device(device)
    devices = list_devices()
    on_platform = [d for d in devices if str(d.platform_index) == platform
                   or platform.lower() in d.platform_name.lower()]
    if not on_platform:
        raise DeviceError(f"no platform matches {platform!r}")
    if device is None:
        return on_platform[0]
    for d in on_platform:
        if str(d.device_index) == device or device.lower() in d.name.lower():
            return d
    raise DeviceError(f"no device {device!r} on platform {platform!r}")


def _parse_config(config: str | None, settings: tuple[str, ...], base: SimtParams) -> SimtParams:
    """A configuration from JSON text or a JSON file, then ``key=value`` overrides."""
    data = base.to_dict()
    if config:
        text = Path(config).read_text() if not config.lstrip().startswith("{") else config
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--config is not valid JSON: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError("--config must hold a JSON object")
        data.update(loaded)
    for item in settings:
        key, sep, raw = item.partition("=")
        if not sep or key not in data:
            raise ConfigError(f"--set {item!r}: expected NAME=VALUE with NAME one of {', '.join(data)}")
        if key == "build_options":
            data[key] = [o for o in raw.split(",") if o]
        elif isinstance(data[key], bool):
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ConfigError(f"--set {key}: expected true or false, not {raw!r}")
            data[key] = raw.lower() in ("true", "1", "yes")
        elif isinstance(data[key], int):
            try:
                data[key] = int(raw)
            except ValueError as exc:
                raise ConfigError(f"--set {key}: expected an integer, not {raw!r}") from exc
        else:
            data[key] = raw
    return SimtParams.from_dict(data)


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**10:.0f} KiB"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autogemm")
def main() -> None:
    """Auto-tuned GEMM for any OpenCL device."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the devices' facts as JSON.")
def devices(as_json: bool) -> None:
    """List every OpenCL device and its facts."""
    found = list_devices()
    if as_json:
        click.echo(json.dumps([dict(d.facts(), slot=f"{d.platform_index}:{d.device_index}",
                                    fingerprint=d.fingerprint) for d in found], indent=2))
        return
    if discovery.icd_note:
        console.print(f"[yellow]note:[/yellow] {discovery.icd_note}", highlight=False)
    if not found:
        _fail("no OpenCL device found; for the CPU install PoCL: pip install 'autogemm[pocl]'")
    default = discovery.default_device()
    for d in found:
        table = Table(title=f"{d.label}{'  (default)' if d == default else ''}", show_header=False,
                      title_justify="left")
        table.add_column("fact", style="bold")
        table.add_column("value")
        rows = [
            ("type", d.device_type), ("vendor", d.vendor.strip()), ("driver", d.driver_version),
            ("OpenCL", d.opencl_version), ("compute units", str(d.compute_units)),
            ("clock", f"{d.clock_mhz} MHz"), ("global memory", _gib(d.global_mem_bytes)),
            ("local memory", _gib(d.local_mem_bytes)), ("max work-group", str(d.max_work_group_size)),
            ("fp64", "yes" if d.fp64 else "no"), ("images", "yes" if d.image_support else "no"),
            *((k.replace("_", " "), v) for k, v in d.vendor_facts.items()),
            ("fingerprint", d.fingerprint),
        ]
        for key, value in rows:
            table.add_row(key, value)
        console.print(table)


config_options = [
    click.option("--dtype", "dtype_letter", type=click.Choice(list(DTYPES)), default="s", show_default=True,
                 help="s, d, c or z."),
    click.option("--config", help="A configuration as JSON text or a JSON file (fields of SimtParams)."),
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


@main.command("show-kernel")
@_with_options(config_options)
@click.option("--whole/--guarded", "whole", default=False,
              help="The whole-tile kernel (aligned, no edge guards) or the guarded one (default).")
def show_kernel(dtype_letter, config, settings, platform, device, whole) -> None:
    """Print the OpenCL source of one configuration (the device's default unless --config/--set)."""
    try:
        dt = get_dtype(dtype_letter)
        dev = _select_device(platform, device)
        params = _parse_config(config, settings, default_params(dev, dt))
        reason = check(params, dev, dt)
        if reason:
            console.print(f"[yellow]warning:[/yellow] {dev.name.strip()} would reject this configuration: "
                          f"{reason}", highlight=False)
        click.echo(render(params, dt, guarded=not whole).source)
    except (AutogemmError, OSError) as exc:
        _fail(str(exc))


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
@_with_options(config_options)
def run(m, n, k, trans_a, trans_b, alpha, beta, iterations, edge, validate, dtype_letter, config, settings,
        platform, device) -> None:
    """Run one GEMM several times, printing each iteration's device time and rate."""
    try:
        dt = get_dtype(dtype_letter)
        dev = _select_device(platform, device)
        ctx = context_for(dev)
        params = _parse_config(config, settings, default_params(dev, dt))
        op_a, op_b = Op.from_letter(trans_a, "trans-a"), Op.from_letter(trans_b, "trans-b")
        problem = GemmProblem(dt, m, n, k, op_a, op_b, lda=max(1, k if not op_a.transposed else m),
                              ldb=max(1, n if not op_b.transposed else k), ldc=max(1, n))
        plan = GemmPlan(ctx, problem, params, edge)
    except AutogemmError as exc:
        _fail(str(exc))
    console.print(f"device: {dev.label}", highlight=False)
    console.print(f"{dt.letter}gemm {trans_a.upper()}{trans_b.upper()} M={m} N={n} K={k}  "
                  f"alpha={alpha} beta={beta}", highlight=False)
    console.print(f"plan: {plan.describe()}", highlight=False)
    rng = np.random.default_rng()
    hosts = {}
    for name in "ABC":
        rows, cols = problem.stored_shape(name)
        data = rng.uniform(-1, 1, (rows, cols))
        if dt.is_complex:
            data = data + 1j * rng.uniform(-1, 1, (rows, cols))
        hosts[name] = data.astype(dt.numpy)
    mf = cl.mem_flags
    bufs = {name: cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=h if h.size else np.zeros(1, dt.numpy))
            for name, h in hosts.items()}
    flops = (8 if dt.is_complex else 2) * m * n * k
    times = time_enqueue(lambda: plan.enqueue(bufs["A"], bufs["B"], bufs["C"], alpha, beta) or [_marker(ctx)],
                         warmup=1, runs=iterations)
    for i, t in enumerate(times):
        console.print(f"  iteration {i + 1:3d}: {t * 1e3:9.3f} ms  {flops / t / 1e9 if t else 0:9.1f} GFLOP/s",
                      highlight=False)
    t = median(times)
    console.print(f"median: {t * 1e3:.3f} ms, {flops / t / 1e9 if t else 0:.1f} GFLOP/s", highlight=False)
    if validate:
        # C was overwritten by each iteration: recompute once from the original C.
        cl.enqueue_copy(ctx.queue, bufs["C"], hosts["C"] if hosts["C"].size else np.zeros(1, dt.numpy))
        plan.enqueue(bufs["A"], bufs["B"], bufs["C"], alpha, beta)
        got = np.empty_like(hosts["C"])
        if got.size:
            cl.enqueue_copy(ctx.queue, got, bufs["C"])
        ref_type = dt.reference_numpy
        a = hosts["A"].astype(ref_type)
        b = hosts["B"].astype(ref_type)
        a = {"N": a, "T": a.T, "C": a.conj().T}[trans_a.upper()]
        b = {"N": b, "T": b.T, "C": b.conj().T}[trans_b.upper()]
        ref = alpha * (a @ b) + (beta * hosts["C"].astype(ref_type) if beta else 0)
        norm = np.linalg.norm(ref)
        err = float(np.linalg.norm(got - ref) / norm) if norm else float(np.linalg.norm(got))
        ok = err < dt.tolerance and np.all(np.isfinite(got))
        console.print(f"validation: relative error {err:.2e} (bound {dt.tolerance:.0e}): "
                      f"{'[green]PASS[/green]' if ok else '[red]FAIL[/red]'}")
        if not ok:
            sys.exit(1)
    plan.release()


def _marker(ctx) -> cl.Event:
    """An event for iterations with nothing to launch (m or n is 0)."""
    return cl.enqueue_marker(ctx.queue)


if __name__ == "__main__":
    main()
