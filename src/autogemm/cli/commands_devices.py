"""``autogemm devices``."""

from __future__ import annotations

import json

import click
from rich.markup import escape
from rich.padding import Padding
from rich.text import Text

from ..profiles import profile_for, profile_origin
from ..runtime import Device
from ..runtime.backend import backends
from ..runtime.opencl import discovery
from ..shares.copying import copy_threads
from ..tables import plain_table
from .common import console, fail, gib
from .group import main


def _compiler(device: Device) -> str:
    """Whether the device's compiler builds a minimal kernel, as rich markup."""
    fault = discovery.compiler_fault(device)
    return "[green]builds kernels[/green]" if fault is None else f"[red]cannot build:[/red] {escape(fault)}"


def _check(found: tuple[Device, ...]) -> None:
    """Each device, and below it whether its compiler builds (a line of its own, so that a long device
    name does not fold the verdict in a log of 80 columns); fails when none does. Where another device
    builds, one that does not is only said to be left unused: what to install matters only when none
    builds."""
    some_build = any(discovery.compiler_fault(d) is None for d in found)
    for d in found:
        console.print(escape(d.label), highlight=False)
        verdict = _compiler(d)
        if some_build and discovery.compiler_fault(d) is not None:
            verdict = "not used: its compiler fails here (another device's builds)"
        console.print(Padding(Text.from_markup(verdict), (0, 0, 0, 2), expand=False), highlight=False)
    if not some_build:
        fail("no OpenCL device here builds kernels")


@main.command("devices")
@click.option("--json", "as_json", is_flag=True, help="Print the devices' facts as JSON.")
@click.option("--check", is_flag=True,
              help="Only build a minimal kernel on each device and say which compilers work; fail when none "
                   "does.")
def devices_command(as_json: bool, check: bool) -> None:
    """List every OpenCL device, its facts and whether its compiler builds kernels."""
    found = discovery.devices()
    if as_json:
        click.echo(json.dumps([dict(d.facts(), slot=d.slot, architecture=d.architecture, backends=backends(d),
                                    fingerprint=d.fingerprint, compiler_fault=discovery.compiler_fault(d),
                                    profile=profile_origin(d, profile_for(d)),
                                    host_copies=None if d.shares_host_memory else copy_threads())
                               for d in found], indent=2))
        return
    if discovery.icd_note:
        console.print(f"[yellow]note:[/yellow] {discovery.icd_note}", highlight=False)
    if not found:
        fail("no OpenCL device found; for the CPU install PoCL: pip install 'autogemm[pocl]'")
    if check:
        _check(found)
        return
    default = discovery.default_device()
    for d in found:
        table = plain_table(f"{d.label}{'  (default)' if d == default else ''}", ("fact", "value"),
                            fold=("value",), header=False)
        rows = [
            ("type", d.device_type), ("vendor", d.vendor.strip()), ("driver", d.driver_version),
            ("OpenCL", d.opencl_version), ("compute units", str(d.compute_units)),
            ("clock", f"{d.clock_mhz} MHz"), ("global memory", gib(d.global_mem_bytes)),
            ("local memory", gib(d.local_mem_bytes)), ("max work-group", str(d.max_work_group_size)),
            ("fp64", "yes" if d.fp64 else "no"), ("images", "yes" if d.image_support else "no"),
            *((k.replace("_", " "), v) for k, v in d.vendor_facts.items()),
            ("architecture", d.architecture), ("backends", ", ".join(backends(d))), ("fingerprint", d.fingerprint),
            ("compiler", _compiler(d)), ("profile", profile_origin(d, profile_for(d))),
            *(() if d.shares_host_memory else (("host copies", _copies()),)),
        ]
        for key, value in rows:
            table.add_row(key, value)
        console.print(table)


def _copies() -> str:
    """Which threads copy numpy operands to and from a device of memory of its own, and where they are
    Python's, why that may be (their copies are slower, most where several devices copy at once)."""
    threads = copy_threads()
    if threads == "native threads":
        return threads
    return f"{threads} (the native copier was not built, is turned off or the host has few cores: docs/install.md)"
