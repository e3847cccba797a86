"""The ``autogemm`` command line: ``devices``, ``show-kernel``, ``run``, ``tune``, ``profile``, ``bench``,
``bench-batch``, ``bench-routines`` and ``bench-hybrid``."""

from __future__ import annotations

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autogemm")
def main() -> None:
    """Auto-tuned GEMM for any OpenCL device."""


from . import (  # noqa: E402,F401  (registers them)
    commands_bench,
    commands_bench_batch,
    commands_bench_dask,
    commands_bench_hybrid,
    commands_bench_routines,
    commands_devices,
    commands_gemm,
    commands_profile,
    commands_tune,
)

__all__ = ["main"]
