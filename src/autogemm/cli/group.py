"""The ``autogemm`` command group, which every ``commands_*`` module adds its commands to."""

from __future__ import annotations

import click

from ..version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autogemm")
def main() -> None:
    """Auto-tuned GEMM for any OpenCL device."""
