"""What the commands share: the console, failing with a message, choosing a device and a configuration,
reading a bench command's device, dtypes and dimensions."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from ..codelets.registry import KernelParams, params_from_dict
from ..dtypes import Dtype, get_dtype
from ..errors import ArgumentError, ConfigError, DeviceError
from ..runtime import Device, DeviceContext, context_for, devices
from ..runtime.backend import OPENCL
from ..runtime.opencl import discovery


class _Output:
    """Standard output as the console writes to it: where it is not a terminal (a log, a pipe), each line
    without the trailing spaces rich pads tables and titles with to the console's width. Standard output
    is looked up at each write (a test's runner replaces it)."""

    def __init__(self) -> None:
        self._partial = ""

    def write(self, text: str) -> int:
        out = sys.stdout
        if out.isatty():
            return out.write(text)
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if lines:
            out.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._partial:
            sys.stdout.write(self._partial)
            self._partial = ""
        sys.stdout.flush()

    def isatty(self) -> bool:
        return sys.stdout.isatty()

    def __getattr__(self, name: str):
        return getattr(sys.stdout, name)


console = Console(file=_Output(), emoji=False)    # text such as ':x:' in a name or a message is printed as it is


def fail(message: str) -> None:
    """Print ``message`` as one error line, as written (no markup read in it), and exit with status 2."""
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(2)


def select_device(platform: str | None, device: str | None) -> Device:
    """A device by ``--platform`` (number or name) and ``--device`` (number or name within it), or by
    ``--device`` alone (anything ``find_device`` accepts); neither means the default device."""
    if platform is None:
        return discovery.find_device(device)
    listed = devices()
    on_platform = [d for d in listed if str(d.platform_index) == platform
                   or platform.lower() in d.platform_name.lower()]
    if not on_platform:
        raise DeviceError(f"no platform matches {platform!r}")
    if device is None:
        return on_platform[0]
    for d in on_platform:
        if str(d.device_index) == device or device.lower() in d.name.lower():
            return d
    raise DeviceError(f"no device {device!r} on platform {platform!r}")


def parse_config(config: str | None, settings: tuple[str, ...], base: KernelParams,
                 backend: str = OPENCL) -> KernelParams:
    """A configuration from JSON text or a JSON file (of ``base``'s family, its fields over ``base``'s, or
    of the family it names, whole), then ``key=value`` overrides; of a family of ``backend``."""
    data = base.to_dict()
    if config:
        try:
            text = Path(config).read_text() if not config.lstrip().startswith("{") else config
        except OSError as exc:
            raise ConfigError(f"--config {config!r} is neither a JSON object nor a file that can be read "
                              f"({exc.strerror}); e.g. --config '{{\"tile_rows\": 8}}' or --set tile_rows=8") from None
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--config is not valid JSON: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError("--config must hold a JSON object")
        # a configuration naming no family is simt's on OpenCL (simt's name none), else of ``base``'s family
        named = loaded.get("family", "simt" if backend == OPENCL else data["family"])
        if named != data.get("family", "simt"):
            data = {}
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
    return params_from_dict(data, backend=backend)


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**10:.0f} KiB"


def dimensions(text: str, parts: int = 2) -> list[tuple[int, ...]]:
    """'1024x64,256x256' -> [(1024, 64), (256, 256)] (a batch's count x size, a matrix's rows x columns);
    with ``parts`` 3, 'MxNxK' products."""
    example = "x".join(("1024", "64", "256")[:parts])   # parts 1: sizes alone
    found = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        numbers = part.split("x")
        if len(numbers) != parts or not all(x.isascii() and x.isdigit() and int(x) > 0 for x in numbers):
            wanted = "a positive number" if parts == 1 else f"{parts} positive numbers joined by x"
            raise ArgumentError(f"{part!r} is not {wanted}, e.g. {example}")
        found.append(tuple(int(x) for x in numbers))
    return found


def bench_inputs(device: str | None, dtypes: str, sizes: str, parts: int = 2
                 ) -> tuple[Device, list[Dtype], list[tuple[int, ...]], DeviceContext]:
    """A bench command's device, its comma-separated ``dtypes`` and ``sizes`` (``dimensions`` of ``parts``) and the
    device's context (an error ends the command in one line, ``group.Group``)."""
    dev = select_device(None, device)
    letters = [get_dtype(x.strip()) for x in dtypes.split(",") if x.strip()]
    return dev, letters, dimensions(sizes, parts), context_for(dev)


def cell(value: float | None, spec: str = ".3g") -> str:
    """A rate for a bench table: formatted by ``spec``, or '-' where there is none."""
    return format(value, spec) if value else "-"


def json_file(what: str = "Write the results as JSON.") -> Callable:
    """The ``--json FILE`` option of a command that times or tunes (``json_path``; see ``write_results``)."""
    return click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help=what)


def write_results(path: Path | None, data: dict) -> None:
    """Write a command's results as JSON to ``path`` (when given), with what made them (the command line
    and autogemm's commit: ``bench.report.provenance``); a clear error and exit if it cannot be written."""
    if not path:
        return
    from ..bench.report import provenance

    try:
        path.write_text(json.dumps({**provenance(), **data}, indent=1))
    except OSError as exc:
        fail(str(exc))
