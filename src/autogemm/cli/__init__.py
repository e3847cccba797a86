"""The ``autogemm`` command line: ``devices``, ``show-kernel``, ``run``, ``tune``, ``profile``, ``bench``,
``bench-accuracy``, ``bench-batch``, ``bench-calls``, ``bench-routines``, ``bench-hybrid``, ``bench-dask`` and
``explain``."""

from . import (  # noqa: F401  (each adds its commands to ``main``)
    commands_bench,
    commands_bench_accuracy,
    commands_bench_batch,
    commands_bench_calls,
    commands_bench_dask,
    commands_bench_hybrid,
    commands_bench_routines,
    commands_devices,
    commands_explain,
    commands_gemm,
    commands_profile,
    commands_tune,
)
from .group import main

__all__ = ["main"]
