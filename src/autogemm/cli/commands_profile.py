"""``autogemm profile list | show | export | import | verify``: the device profiles on this machine."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import click
from rich.table import Table

from ..codelets.registry import GEMV
from ..codelets.stream_k import split_name
from ..dtypes import Dtype, get_dtype
from ..errors import ProfileError
from ..profiles import (
    Profile,
    Thresholds,
    bundled,
    path_for,
    profile_at,
    profile_for,
    profile_origin,
    read,
    save,
    user_profiles,
)
from ..profiles.profile import CLASSES, GEMV_CLASSES, SHAPES, routine_of
from ..profiles.thresholds import DEFAULTS, device_class
from ..runtime import Device, devices
from ..tables import plain_table
from ..tuning.evaluation import IsolatedEvaluator, WorkerProcess
from ..tuning.imported import entry_spec, faster_over, same_classes, timed_here
from ..tuning.scope import bandwidth
from .common import console, fail, select_device
from .group import main


@main.group()
def profile() -> None:
    """Device profiles: list, show, export, import, verify."""


def _device_profile(target: str | None) -> tuple[Profile, str]:
    """The profile named by ``target``: a profile file, else a device specification (default: the
    default device), whose user or bundled profile is taken."""
    if target and Path(target).is_file():
        return read(target), target
    dev = select_device(None, target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = profile_for(dev)
    for w in caught:
        console.print(f"[yellow]warning:[/yellow] {w.message}", highlight=False)
    if found is None:
        raise ProfileError(f"no profile for {dev.label}; make one with `autogemm tune`")
    return found, f"{dev.label} uses it: {profile_origin(dev, found)}"


def _device_named(fingerprint: str, listed: list[Device]) -> str:
    return next((d.slot for d in listed if d.fingerprint == fingerprint), "no")


@profile.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_command(as_json: bool) -> None:
    """Every profile in the cache and bundled with autogemm, and whether it is valid."""
    listed = devices()
    found = []
    for source, item in user_profiles() + bundled():
        if isinstance(item, ProfileError):
            found.append({"file": source, "error": str(item).split(": ", 1)[-1]})
            continue
        # (no spaces within an item, so that a folded cell breaks between items only)
        tuned = ([f"{key}{'gemv' if section == GEMV_CLASSES else ''}:{'/'.join(e.name for e in entries)}"
                  for section in (CLASSES, GEMV_CLASSES) for key, entries in item.table(section).items()]
                 + [f"{key}:{len(entries)}-shapes" for key, entries in item.shapes.items()]
                 + [f"hybrid-{key}:{'/'.join(str(e.shape[0]) for e in entries)}"
                    for key, entries in item.hybrid.items()]
                 + [f"{key}:predictor" for key in item.predictors]
                 + [f"cuda-{key}:{'/'.join(e.name for e in entries)}" for key, entries in item.cuda.items()])
        found.append({"device": item.device_name, "fingerprint": item.device_fingerprint,
                      "here": _device_named(item.device_fingerprint, listed), "created": item.created,
                      "tuned": tuned, "file": source})
    if as_json:
        click.echo(json.dumps(found, indent=1))
        return
    for entry in found:
        if "error" in entry:
            console.print(f"[red]invalid profile[/red] {entry['file']}: {entry['error']}", highlight=False)
            continue
        table = plain_table(f"{entry['device']}, {entry['fingerprint']}", ("fact", "value"), fold=("value",),
                            header=False)
        table.add_row("here", "no" if entry["here"] == "no" else f"device {entry['here']}")
        for fact in ("created", "file"):
            table.add_row(fact, entry[fact])
        table.add_row("tuned", ", ".join(entry["tuned"]))
        console.print(table)


@profile.command("show")
@click.argument("target", required=False)
@click.option("-d", "--device", help="Device whose profile to show, as the other commands take it (or TARGET).")
@click.option("--json", "as_json", is_flag=True, help="Print the profile's JSON.")
def show_command(target, device, as_json) -> None:
    """A profile's ranked configurations: of a device (TARGET or --device; default: the default device) or
    a file (TARGET)."""
    if target and device:
        fail(f"give the device once: TARGET {target!r} or --device {device!r}")
    prof, source = _device_profile(target or device)
    if as_json:
        click.echo(prof.to_json(), nl=False)
        return
    console.print(f"{prof.device_name} ({prof.device_vendor}, driver {prof.driver_version}), fingerprint "
                  f"{prof.device_fingerprint}; tuned {prof.created} by autogemm {prof.autogemm_version}, "
                  f"budget {prof.budget}; {source}", highlight=False)
    if prof.fma:
        console.print("multiply-add forms: " + ", ".join(f"{k}:{v}" for k, v in prof.fma.items()), highlight=False)
    for section, key, entry in prof.every_entry():
        if section == SHAPES:
            continue
        dt = get_dtype(key)
        gemv = section == GEMV_CLASSES
        shape = entry.shape[:2] if gemv else entry.shape
        rates = ("GFLOP/s", "GB/s") if gemv else ("GFLOP/s",)
        batch = f"{entry.batch} x " if entry.batch > 1 else ""
        table = plain_table(f"{entry_label(section, dt, entry.name)} {batch}{'x'.join(map(str, shape))}: "
                            f"{entry.strategy}, "
                            f"{entry.evaluations} evaluations, {entry.seconds:.0f} s",
                            ("rank", *rates, "configuration"), right=("rank", *rates), fold=("configuration",))
        for i, ranked in enumerate(entry.ranked, 1):
            rates = [f"{ranked.gflops:.1f}"] + ([f"{bandwidth(dt, shape, ranked.gflops):.0f}"] if gemv else [])
            table.add_row(str(i), *rates, ranked.config.describe())
        console.print(table)
    if prof.shapes:
        table = plain_table("tuned for these shapes (tune --shapes): their best",
                            ("dtype", "layout", "m x n x k", "GFLOP/s", "split", "configuration"),
                            right=("GFLOP/s", "split"), fold=("configuration",))
        for key, entries in prof.shapes.items():
            for e in entries:
                best = e.ranked[0]
                table.add_row(key, e.name, "x".join(map(str, e.shape)), f"{best.gflops:.1f}",
                              split_name(best.split), best.config.describe())
        console.print(table)
    if prof.hybrid:
        table = plain_table("shared with the host (tune --hybrid): numpy in, numpy out",
                            ("dtype", "shape", "host share", "GFLOP/s", "kernel", "evals"),
                            right=("shape", "host share", "GFLOP/s", "evals"), fold=("kernel",))
        for key, hybrids in prof.hybrid.items():
            for e in hybrids:
                table.add_row(key, "x".join(map(str, e.shape)), f"{e.host_parts}/{e.parts}", f"{e.gflops:.1f}",
                              e.config.describe(), str(e.evaluations))
        console.print(table)
    if prof.cuda:
        table = plain_table("the CUDA path against OpenCL (GFLOP/s); products nearest a class run on the faster",
                            ("dtype", "class", "shape", "CUDA", "OpenCL", "runs on", "CUDA kernel"),
                            right=("shape", "CUDA", "OpenCL"), fold=("CUDA kernel",))
        for key, cudas in prof.cuda.items():
            for e in cudas:
                table.add_row(key, e.name, "x".join(map(str, e.shape)), f"{e.gflops:.1f}",
                              f"{e.opencl_gflops:.1f}" if e.opencl_gflops else "-", e.backend, e.config.describe())
        console.print(table)
    console.print(_thresholds_table(prof))


def _thresholds_table(prof: Profile) -> Table:
    """The thresholds that route and shape a call on the profile's device: the fields the profile names
    over its device class's defaults (``profiles.thresholds.DEFAULTS``; autogemm's own where the device
    is not here), each field beside its default."""
    here = next((d for d in devices() if d.fingerprint == prof.device_fingerprint), None)
    row = DEFAULTS[device_class(here)] if here is not None else Thresholds()
    own = prof.thresholds
    shown = own.over(row) if own is not None else row
    whose = "its device class's" if here is not None else "autogemm's (its device is not here)"
    title = (f"routes and their thresholds: the profile's own over {whose} defaults" if own is not None else
             f"routes and their thresholds: {whose} defaults (the profile holds none)")
    table = plain_table(title, ("threshold", "value", "default"), right=(), fold=("value", "default"))
    default = row.to_dict()
    for name, value in shown.to_dict().items():
        table.add_row(name, _threshold(name, value), _threshold(name, default[name]))
    return table


def _threshold(name: str, value: object) -> str:
    """A threshold as a table shows it: bytes in KiB, MiB or GiB, powers of two as such, dtypes' figures
    by dtype."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {_threshold('', count)}" for key, count in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(value) or "-"
    if name.endswith("_bytes") and value >= 1024:
        unit = max(u for u in (1, 2, 3) if value >= 1024**u)
        return f"{value / 1024**unit:g} {('KiB', 'MiB', 'GiB')[unit - 1]}"
    if isinstance(value, int) and value >= 1024 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return str(value)


def entry_label(section: str, dt: Dtype, name: str) -> str:
    """How tables name an entry: 'sgemm large', 'sgemv N square', 'sgemm NT' and 'sgemv N' (exact shapes)."""
    if section == GEMV_CLASSES:
        layout, kind = name.split("-")
        return f"{dt.letter}gemv {layout.upper()} {kind}"
    return f"{dt.letter}gemv {name}" if routine_of(section, name) == GEMV else f"{dt.routine} {name}"


@profile.command("export")
@click.argument("destination", type=click.Path(dir_okay=False, writable=True))
@click.option("-d", "--device", help="Device whose profile to export (default: the default device).")
def export_command(destination, device) -> None:
    """Write a device's profile to a file, to share it."""
    prof, _ = _device_profile(device)
    Path(destination).write_text(prof.to_json(), encoding="utf-8")
    console.print(f"wrote {destination}: {prof.device_name} {prof.device_fingerprint}", highlight=False)


@profile.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("--replace", is_flag=True,
              help="Let the file's entries replace the profile's own of the same class and dtype, "
                   "faster or not.")
@click.option("--runs", type=click.IntRange(1), default=3, show_default=True,
              help="Timed runs of each configuration, where the device is here.")
def import_command(source, replace, runs) -> None:
    """Validate a profile file and add it to the cache (it is used only on the device it was made for).
    Where that device is here, every configuration of its entries is first built, checked and timed on
    it (one that fails is left out), and an entry replaces the profile's own of its class where it was
    measured faster; where the device is not here, its entries only fill the classes the profile lacks.
    With --replace they replace those it has, faster or not. The file replaced is kept beside it, as
    .json.bak."""
    prof = read(source)
    path = path_for(prof.device_fingerprint)
    existing = profile_at(path)           # (a file there that cannot be read is an error, and kept)
    device = next((d for d in devices() if d.fingerprint == prof.device_fingerprint), None)
    def say(line: str) -> None:
        console.print(line, highlight=False, soft_wrap=True)

    mine_now = None
    if device is not None:
        console.print(f"timing the file's configurations on {device.label}", highlight=False)
        with WorkerProcess(device) as worker:
            prof = timed_here(prof, worker, runs, say)
            if existing is not None and not replace:
                console.print("timing the profile's own entries of the same classes, to compare", highlight=False)
                mine_now = timed_here(same_classes(existing, prof), worker, runs, say)
    if existing is not None:
        shutil.copyfile(path, path.with_name(path.name + ".bak"))
        if replace:
            prof = prof.merged_into(existing)
        else:
            prof = faster_over(existing, prof, mine_now) if mine_now is not None else existing.merged_into(prof)
    path = save(prof)
    here = _device_named(prof.device_fingerprint, devices())
    kept = f"; the file before it kept as {path.name}.bak" if existing is not None else ""
    console.print(f"imported {prof.device_name} ({prof.device_fingerprint}) into {path}{kept}; device here: {here}",
                  highlight=False)


@profile.command("verify")
@click.option("-d", "--device", help="Device (default: the default device).")
@click.option("--dtype", "dtypes", default=None, help="Comma-separated dtypes (default: all in the profile).")
@click.option("--runs", type=click.IntRange(1), default=5, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table.")
def verify_command(device, dtypes, runs, as_json) -> None:
    """Check and re-time the best stored configuration of each dtype and size class, and report how far
    the rate has drifted from the stored one (of a profile borrowed from a related device: how this
    device compares)."""
    dev = select_device(None, device)
    prof, _ = _device_profile(device)      # its own, or one borrowed from a related device
    letters = {get_dtype(x.strip()).key for x in dtypes.split(",")} if dtypes else None
    measured_on = "" if prof.device_fingerprint == dev.fingerprint else f" (measured on {prof.device_name})"
    table = plain_table(f"{dev.label}: stored best{measured_on}, checked and timed again (GFLOP/s)",
                        ("entry", "shape", "stored", "now", "drift", "check"), right=("stored", "now", "drift"),
                        fold=("check",))
    results = []
    with WorkerProcess(dev) as worker:   # a stored kernel that crashes costs that process, not this one
        for section, letter, entry in prof.every_entry():
            if letters is not None and letter not in letters:
                continue
            dt = get_dtype(letter)
            best = entry.ranked[0]
            gemv = routine_of(section, entry.name) == GEMV
            evaluator = IsolatedEvaluator(worker, entry_spec(section, dt, entry), runs=runs)
            evaluator.evaluate(best.config)      # a warm-up: a worker's first runs of a kernel read slow
            record = evaluator.evaluate(best.config)
            problem = worker.verify(best.config, dt) if record.ok else record.message
            drift = (record.gflops / best.gflops - 1) * 100 if record.ok and best.gflops else None
            shape = entry.shape[:2] if gemv else entry.shape
            results.append({"entry": entry_label(section, dt, entry.name), "shape": list(shape), "batch": entry.batch,
                            "config": best.config.describe(), "stored_gflops": best.gflops,
                            "gflops": record.gflops if record.ok else None, "outcome": record.outcome.value,
                            "drift_percent": drift, "problem": problem or None})
            table.add_row(results[-1]["entry"], f"{entry.batch} x " * (entry.batch > 1) + "x".join(map(str, shape)),
                          f"{best.gflops:.1f}",
                          f"{record.gflops:.1f}" if record.ok else record.outcome.value,
                          f"{drift:+.1f}%" if drift is not None else "-",
                          "[green]ok[/green]" if not problem else f"[red]{problem}[/red]")
    if as_json:
        click.echo(json.dumps(results, indent=1))
    else:
        console.print(table)
    if any(r["problem"] for r in results):
        sys.exit(1)
